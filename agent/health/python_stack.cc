#include "agent/health/python_stack.h"

#include <cctype>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace dlaunch {
namespace {

// py-spy's frame line: "    train_step (/home/u/train.py:42)"; a function name may hold spaces
// and parentheses of its own ("ContextDecorator.__call__.<locals>.inner"), the place is the
// last parenthesis.
std::optional<PyFrame> PySpyFrame(absl::string_view line) {
  line = absl::StripTrailingAsciiWhitespace(line);
  if (!absl::ConsumeSuffix(&line, ")")) return std::nullopt;
  const size_t open = line.rfind(" (");
  if (open == absl::string_view::npos) return std::nullopt;
  PyFrame f;
  f.function = std::string(absl::StripAsciiWhitespace(line.substr(0, open)));
  absl::string_view place = line.substr(open + 2);
  const size_t colon = place.rfind(':');
  if (colon != absl::string_view::npos && absl::SimpleAtoi(place.substr(colon + 1), &f.line)) {
    place = place.substr(0, colon);
  }
  f.file = std::string(place);
  return f;
}

// "Thread 4242 (idle): \"MainThread\"" -> id, name.
PyThread PySpyThread(absl::string_view line) {
  PyThread t;
  absl::ConsumePrefix(&line, "Thread ");
  t.id = std::string(line.substr(0, line.find(' ')));
  const size_t quote = line.find('"');
  if (quote != absl::string_view::npos) {
    absl::string_view name = line.substr(quote + 1);
    t.name = std::string(name.substr(0, name.rfind('"')));
  }
  return t;
}

// faulthandler's frame line: "  File \"/home/u/train.py\", line 42 in train_step".
std::optional<PyFrame> FaultHandlerFrame(absl::string_view line) {
  line = absl::StripAsciiWhitespace(line);
  if (!absl::ConsumePrefix(&line, "File \"")) return std::nullopt;
  const size_t end = line.find("\", line ");
  if (end == absl::string_view::npos) return std::nullopt;
  PyFrame f;
  f.file = std::string(line.substr(0, end));
  absl::string_view rest = line.substr(end + 8);
  const size_t in = rest.find(" in ");
  if (in == absl::string_view::npos) return std::nullopt;
  if (!absl::SimpleAtoi(rest.substr(0, in), &f.line)) f.line = 0;
  f.function = std::string(absl::StripAsciiWhitespace(rest.substr(in + 4)));
  return f;
}

bool HasUserFrame(const PyThread& t, PyFrame* out) {
  for (const PyFrame& f : t.frames) {
    if (IsLibraryFile(f.file)) continue;
    *out = f;
    return true;
  }
  return false;
}

// A frame of PyTorch that waits on the other ranks.
bool WaitsOnPeers(const PyFrame& f) {
  if (absl::StrContains(f.file, "/torch/distributed/") ||
      absl::StrContains(f.file, "/torch/nn/parallel/distributed.py")) {
    return true;
  }
  return absl::StrContains(f.file, "/torch/autograd/") &&
         (f.function == "backward" || f.function == "grad");
}

// A native frame of the collective libraries: "c10d::Work::wait(...) () from libtorch_cpu.so".
bool NativeWaitsOnPeers(absl::string_view function) {
  for (absl::string_view lib : {"gloo::", "c10d::", "nccl", "ProcessGroup"}) {
    if (absl::StrContains(function, lib)) return true;
  }
  return false;
}

// gdb's frame line: "#5  0x00007f in c10d::Work::wait(std::chrono::...) () from /lib/libt.so"
// or "#3  __pthread_cond_wait_common (abstime=0x0, ...) at ./nptl/pthread_cond_wait.c:503".
std::optional<PyFrame> GdbFrame(absl::string_view line) {
  if (!absl::ConsumePrefix(&line, "#")) return std::nullopt;
  const size_t space = line.find(' ');
  if (space == absl::string_view::npos) return std::nullopt;
  line = absl::StripLeadingAsciiWhitespace(line.substr(space));
  if (absl::StartsWith(line, "0x")) {
    const size_t in = line.find(" in ");
    if (in == absl::string_view::npos) return std::nullopt;
    line = line.substr(in + 4);
  }
  PyFrame f;
  f.function = std::string(line.substr(0, line.find(" (")));
  // The name up to its argument list: "c10d::Work::wait(std::chrono::...)" -> c10d::Work::wait.
  f.function = f.function.substr(0, f.function.find('('));
  for (absl::string_view where : {" from ", " at "}) {
    const size_t at = line.rfind(where);
    if (at != absl::string_view::npos) {
      f.file = std::string(line.substr(at + where.size()));
      break;
    }
  }
  return f;
}

}  // namespace

std::vector<PyThread> ParsePySpyDump(absl::string_view text) {
  std::vector<PyThread> threads;
  std::string pid;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    if (absl::StartsWith(line, "Process ")) {
      absl::string_view rest = line.substr(8);
      pid = std::string(rest.substr(0, rest.find(':')));
    } else if (absl::StartsWith(line, "Thread ")) {
      threads.push_back(PySpyThread(line));
      threads.back().main = threads.back().id == pid || threads.back().name == "MainThread";
    } else if (!threads.empty() && absl::StartsWith(line, "    ") &&
               !absl::StartsWith(line, "        ")) {  // deeper: locals (py-spy --locals)
      if (auto f = PySpyFrame(line)) threads.back().frames.push_back(*std::move(f));
    }
  }
  return threads;
}

std::vector<PyThread> ParseFaultHandlerDump(absl::string_view text) {
  std::vector<PyThread> threads;
  bool current = false;  // the thread that asked: not one of the rank's own
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    const bool is_current = absl::StartsWith(line, "Current thread ");
    if (is_current || absl::StartsWith(line, "Thread ")) {
      current = is_current;
      if (current) continue;
      absl::string_view id = line.substr(7);
      threads.push_back(PyThread{std::string(id.substr(0, id.find(' '))), "", false, {}});
    } else if (!current && !threads.empty()) {
      if (auto f = FaultHandlerFrame(line)) threads.back().frames.push_back(*std::move(f));
    }
  }
  if (!threads.empty()) threads.back().main = true;
  return threads;
}

bool IsLibraryFile(absl::string_view file) {
  // Python's own frozen modules; "<string>" and "<stdin>" are the user's (python -c, exec).
  if (file.empty() || absl::StartsWith(file, "<frozen")) return true;
  if (absl::StrContains(file, "/site-packages/") || absl::StrContains(file, "/dist-packages/")) {
    return true;
  }
  // .../lib/python3.11/..., .../lib64/python3/...: the standard library of an installation.
  for (absl::string_view lib : {"/lib/python", "/lib64/python"}) {
    for (size_t at = file.find(lib); at != absl::string_view::npos; at = file.find(lib, at + 1)) {
      size_t i = at + lib.size();
      while (i < file.size() && (std::isdigit(static_cast<unsigned char>(file[i])) || file[i] == '.')) ++i;
      if (i > at + lib.size() && i < file.size() && file[i] == '/') return true;
    }
  }
  return false;
}

std::optional<PyFrame> StuckFrame(const std::vector<PyThread>& threads) {
  PyFrame f;
  for (const PyThread& t : threads) {
    if (t.main && HasUserFrame(t, &f)) return f;
  }
  for (const PyThread& t : threads) {
    if (!t.main && HasUserFrame(t, &f)) return f;
  }
  return std::nullopt;
}

std::optional<PyFrame> CollectiveWait(const std::vector<PyThread>& threads) {
  const PyThread* judged = nullptr;
  for (const PyThread& t : threads) {
    if (t.main) {
      judged = &t;
      break;
    }
  }
  PyFrame user;
  for (size_t i = 0; judged == nullptr && i < threads.size(); ++i) {
    if (HasUserFrame(threads[i], &user)) judged = &threads[i];
  }
  if (judged == nullptr) return std::nullopt;
  for (const PyFrame& f : judged->frames) {
    if (WaitsOnPeers(f)) return f;
    if (!IsLibraryFile(f.file)) break;  // the user's own code: stopped there, not in a wait
  }
  return std::nullopt;
}

std::optional<PyFrame> NativeCollectiveWait(absl::string_view gdb_text, int pid) {
  const std::string lwp = absl::StrCat("(LWP ", pid, ")");
  bool main = false;
  for (absl::string_view line : absl::StrSplit(gdb_text, '\n')) {
    if (absl::StartsWith(line, "Thread ")) {
      if (main) break;  // the main thread's frames are over
      main = absl::StrContains(line, lwp);
    } else if (main) {
      std::optional<PyFrame> f = GdbFrame(line);
      if (f && NativeWaitsOnPeers(f->function)) return f;
    }
  }
  return std::nullopt;
}

std::string DescribeFrame(const PyFrame& frame) {
  if (frame.line <= 0) return absl::StrCat(frame.function, " (", frame.file, ")");
  return absl::StrCat(frame.function, " (", frame.file, ":", frame.line, ")");
}

}  // namespace dlaunch
