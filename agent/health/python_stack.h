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

// Where the rank waits on its peers: on its main thread (the thread StuckFrame judges by when
// there is none), the innermost frame of PyTorch's distributed package (a collective, a
// barrier, a store wait, init_process_group's rendezvous, DDP's forward), or of autograd's
// backward (a DDP rank's backward waits on the reducer's gradient all-reduce), found before
// the first frame of the user's own code. nullopt when that thread is stopped elsewhere: in
// the user's code, in a data loader, in the standard library.
std::optional<PyFrame> CollectiveWait(const std::vector<PyThread>& threads);

// The same from gdb's `thread apply all bt` of process `pid`: the innermost frame of its main
// thread (LWP `pid`) in Gloo, NCCL or c10d (Work::wait, the Reducer, the TCPStore), as
// function and library. nullopt when the main thread is elsewhere or is not in the text.
std::optional<PyFrame> NativeCollectiveWait(absl::string_view gdb_text, int pid);

// "train_step (/home/u/train.py:42)".
std::string DescribeFrame(const PyFrame& frame);

}  // namespace dlaunch
