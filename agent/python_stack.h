// A hung Python rank's stacks as text (py-spy's `dump`, or faulthandler's form that PyTorch's
// worker server answers its dump_traceback handler with), and the frame it is stuck in: the
// innermost frame of the user's own code (not the standard library, not site-packages) on its
// main thread, or on the first other thread that has one when the main thread has none (a
// non-daemon thread holding up the interpreter's exit). Pure: text in, frames out.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"

namespace dlaunch {

struct PyFrame {
  std::string function;
  std::string file;
  int line = 0;  // 0: not known
};

struct PyThread {
  std::string id;    // as the dump prints it: an OS thread id, or faulthandler's 0x... address
  std::string name;  // "MainThread", "prefetch"; "" when the dump has none
  bool main = false;
  std::vector<PyFrame> frames;  // innermost first
};

// `py-spy dump --pid PID --full-filenames`: the main thread is the one whose id is the process's
// pid, or that is named "MainThread".
std::vector<PyThread> ParsePySpyDump(absl::string_view text);

// faulthandler.dump_traceback(all_threads=True): threads newest first, so the main thread is the
// last; the "Current thread" is the one that asked (the worker server's own, without frames).
std::vector<PyThread> ParseFaultHandlerDump(absl::string_view text);

// A file of the Python installation (lib/pythonX.Y/, site-packages, dist-packages, its frozen
// modules "<frozen importlib._bootstrap>"). Code given as text ("<string>": python -c, exec) is
// the user's.
bool IsLibraryFile(absl::string_view file);

// Where the rank is stuck, as above; nullopt when no thread has a frame of the user's code.
std::optional<PyFrame> StuckFrame(const std::vector<PyThread>& threads);

// "train_step (/home/u/train.py:42)".
std::string DescribeFrame(const PyFrame& frame);

}  // namespace dlaunch
