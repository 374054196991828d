#include "agent/health/stack_dumper.h"

#include <sys/stat.h>
#include <sys/wait.h>

#include <algorithm>
#include <cerrno>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/match.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "agent/health/flight_record.h"
#include "agent/health/python_process.h"
#include "common/file_io.h"
#include "common/process.h"

namespace dlaunch {
namespace {

using std::chrono::milliseconds;

// A failed tool's error: py-spy's "Error: ..." line (a backtrace may follow it), else its last.
std::string ErrorLine(const std::string& text) {
  std::vector<absl::string_view> lines = absl::StrSplit(text, '\n', absl::SkipWhitespace());
  for (absl::string_view l : lines) {
    if (absl::StartsWith(l, "Error")) return std::string(l);
  }
  return lines.empty() ? "no output" : std::string(lines.back());
}

}  // namespace

StackDumper::Probe StackDumper::SystemProbe() {
  return Probe{IsPythonProcess, WorkerServerSocket, FindPySpy, IsStoppedProcess};
}

const char* StackDumper::SourceName(Source s) {
  switch (s) {
    case Source::kWorkerServer: return "worker server";
    case Source::kPySpy: return "py-spy";
    case Source::kGdb: return "gdb";
  }
  return "?";
}

StackDumper::StackDumper(boost::asio::io_context& io, TimerClock& clock, LogFn log,
                         SupervisorSeams seams, Probe probe)
    : io_(io), clock_(clock), log_(std::move(log)), probe_(std::move(probe)) {
  // A child's "rank" is its key; no log file: the text goes to stacks/rank-N.txt.
  children_ = std::make_unique<ChildSupervisor>(
      io_, "", 0,
      ChildSupervisor::Callbacks{
          [this](int key, bool, std::vector<std::string> lines) { OnOutput(key, std::move(lines)); },
          [this](const ChildExit& e) { OnExit(e); }},
      "stacks-", seams);
}

StackDumper::~StackDumper() {
  for (auto& [pid, d] : running_) Halt(d);
  if (budget_timer_) clock_.Cancel(*budget_timer_);
  if (children_) children_->KillAll();
}

void StackDumper::Start(const std::vector<Target>& targets, const std::string& stacks_dir,
                        milliseconds budget, DoneFn done) {
  if (busy()) {
    // A dump of a round that has moved on: its stop no longer waits for it.
    for (auto& [pid, d] : running_) Halt(d);
    children_->KillAll();
    running_.clear();
    if (budget_timer_) clock_.Cancel(*budget_timer_);
    budget_timer_.reset();
  }
  results_.clear();
  done_ = std::move(done);
  dir_ = stacks_dir;
  budget_ = budget;
  deadline_ = clock_.Now() + budget;
  if (mkdir(dir_.c_str(), 0755) != 0 && errno != EEXIST) {
    log_(absl::StrCat("cannot record stacks: ",
                      ErrnoStatus(errno, "cannot create directory", dir_).message()));
  }
  py_spy_why_.clear();
  bool any_python = false;
  for (const Target& t : targets) {
    Dump d;
    d.rank = t.rank;
    d.target = t.pid;
    if (probe_.is_python(t.pid)) {
      if (!any_python) py_spy_ = probe_.find_py_spy(&py_spy_why_);
      any_python = true;
      d.socket = probe_.worker_server_socket(t.pid);
      if (!d.socket.empty()) d.next.push_back(Source::kWorkerServer);
      if (!py_spy_.empty()) {
        d.next.push_back(Source::kPySpy);
      } else {
        absl::StrAppend(&d.notes, "py-spy: ", py_spy_why_, "\n");
      }
    }
    d.next.push_back(Source::kGdb);
    running_[t.pid] = std::move(d);
  }
  budget_timer_ = clock_.RunAfter(budget, [this] {
    budget_timer_.reset();
    OnBudgetSpent();
  });
  for (const Target& t : targets) Advance(t.pid);
  // `done` never runs inside Start: the caller's state may not expect it yet.
  if (running_.empty()) {
    clock_.Cancel(*budget_timer_);
    budget_timer_ = clock_.RunAfter(milliseconds(0), [this] {
      budget_timer_.reset();
      Finish();
    });
  }
}

void StackDumper::Advance(pid_t target) {
  auto it = running_.find(target);
  if (it == running_.end()) return;
  Dump& d = it->second;
  while (!d.next.empty()) {
    const Source s = d.next.front();
    d.next.erase(d.next.begin());
    if (StartSource(d, s)) return;
  }
  Record(d, std::nullopt, "");
  running_.erase(it);
}

bool StackDumper::StartSource(Dump& d, Source s) {
  d.current = s;
  d.text.clear();
  if (s == Source::kWorkerServer) {
    const pid_t target = d.target;
    d.request = WorkerServerRequest::Start(
        io_, d.socket, "dump_traceback",
        [this, target](absl::StatusOr<std::string> body) { OnAnswer(target, std::move(body)); });
    ArmSlice(d, kWorkerServerShare);
    return true;
  }
  ChildSupervisor::StartRequest r;
  r.rank = d.key = next_key_++;
  const std::string pid = std::to_string(d.target);
  r.options.argv = s == Source::kPySpy
                       ? std::vector<std::string>{py_spy_, "dump", "--pid", pid, "--full-filenames"}
                       : std::vector<std::string>{"gdb", "-batch", "-nx", "-p", pid, "-ex",
                                                  "thread apply all bt"};
  if (s == Source::kPySpy && probe_.is_stopped(d.target)) r.options.argv.push_back("--nonblocking");
  std::vector<absl::StatusOr<pid_t>> started = children_->StartAll({std::move(r)});
  if (!started.front().ok()) {
    absl::StrAppend(&d.notes, SourceName(s), " -p ", pid, ": ", started.front().status().message(),
                    "\n");
    d.key = -1;
    return false;
  }
  d.child = started.front().value();
  // gdb, the last source, has what is left of the budget.
  if (s == Source::kPySpy) ArmSlice(d, kPySpyShare);
  return true;
}

void StackDumper::ArmSlice(Dump& d, double share) {
  const auto left = std::chrono::duration_cast<milliseconds>(deadline_ - clock_.Now());
  const auto slice = std::max(milliseconds(0),
                              std::min(left, milliseconds(static_cast<int64_t>(budget_.count() * share))));
  const pid_t target = d.target;
  d.slice = clock_.RunAfter(slice, [this, target] { OnSliceSpent(target); });
}

void StackDumper::Halt(Dump& d) {
  if (d.slice) clock_.Cancel(*d.slice);
  d.slice.reset();
  if (d.request) d.request->Cancel();
  d.request.reset();
  d.key = -1;  // a killed child's late output and exit belong to no dump
  d.child = -1;
}

void StackDumper::MaybeFinish() {
  if (running_.empty() && busy()) Finish();
}

StackDumper::Dump* StackDumper::ByKey(int key) {
  for (auto& [pid, d] : running_) {
    if (d.key == key && key >= 0) return &d;
  }
  return nullptr;
}

void StackDumper::OnSliceSpent(pid_t target) {
  auto it = running_.find(target);
  if (it == running_.end()) return;
  Dump& d = it->second;
  d.slice.reset();
  if (d.recorder) {
    OnRecorder(target, absl::DeadlineExceededError("did not answer in time"));
    return;
  }
  const double share = d.current == Source::kPySpy ? kPySpyShare : kWorkerServerShare;
  absl::StrAppendFormat(&d.notes, "%s: no answer within %.1f s (%.0f%% of the budget), given up\n",
                        SourceName(d.current), budget_.count() * share / 1000, share * 100);
  const pid_t child = d.child;
  Halt(d);
  if (child > 0) children_->Kill(child);
  Advance(target);
  MaybeFinish();
}

void StackDumper::OnAnswer(pid_t target, absl::StatusOr<std::string> body) {
  auto it = running_.find(target);
  if (it == running_.end()) return;
  Dump& d = it->second;
  d.request.reset();
  Halt(d);
  if (body.ok() && !ParseFaultHandlerDump(*body).empty()) {
    Record(d, Source::kWorkerServer, *body);
    AskRecorder(d, "fr_trace_json");
  } else {
    absl::StrAppend(&d.notes, "worker server ", d.socket, ": ",
                    body.ok() ? "an answer without Python threads" : body.status().message(), "\n");
    Advance(target);
  }
  MaybeFinish();
}

void StackDumper::AskRecorder(Dump& d, const std::string& handler) {
  const pid_t target = d.target;
  d.recorder = true;
  d.recorder_handler = handler;
  d.request = WorkerServerRequest::Start(
      io_, d.socket, handler,
      [this, target](absl::StatusOr<std::string> body) { OnRecorder(target, std::move(body)); });
  ArmSlice(d, kWorkerServerShare);
}

void StackDumper::OnRecorder(pid_t target, absl::StatusOr<std::string> body) {
  auto it = running_.find(target);
  if (it == running_.end()) return;
  Dump& d = it->second;
  Halt(d);  // a request given up on is cancelled: its late answer finds no dump
  absl::StatusOr<v1::FlightRecord> read =
      body.ok() ? FlightRecordOf(*body) : absl::StatusOr<v1::FlightRecord>(body.status());
  const bool empty = !read.ok() || read->entries() == 0;
  if (empty) {
    absl::StrAppend(&d.recorder_notes, d.recorder_handler, ": ",
                    read.ok() ? "no entries" : read.status().message(), "; ");
  }
  // Gloo's (and any CPU group's) entries are in one recorder, NCCL's in its own: that one is
  // asked for when the first holds nothing, in a share of its own (the budget still bounds it).
  if (empty && d.recorder_handler == "fr_trace_json" && !absl::IsDeadlineExceeded(read.status())) {
    AskRecorder(d, "dump_nccl_trace_json");
    return;
  }
  if (Result* r = ResultOf(d.rank)) {
    v1::FlightRecord record;
    if (read.ok()) record = *std::move(read);
    if (empty) record.set_why_none(std::string(absl::StripSuffix(d.recorder_notes, "; ")));
    // torch's own dump, for its analyzer (python -m torch.distributed.flight_recorder.fr_trace).
    if (!empty) {
      const std::string path = absl::StrCat(dir_, "/rank-", d.rank, ".fr.json");
      absl::Status written = WriteFileAtomically(path, *body);
      if (written.ok()) record.set_path(path);
      if (!written.ok()) record.set_why_none(std::string(written.message()));
    }
    log_(absl::StrCat("flight recorder of rank ", d.rank, ": ",
                      empty ? record.why_none()
                            : absl::StrCat(record.entries(), " entries (", d.recorder_handler,
                                           "), newest collective ", record.last_seq(), " ",
                                           record.last_collective())));
    r->flight_record = std::move(record);
  }
  running_.erase(it);
  MaybeFinish();
}

StackDumper::Result* StackDumper::ResultOf(int rank) {
  for (Result& r : results_) {
    if (r.rank == rank) return &r;
  }
  return nullptr;
}

void StackDumper::OnOutput(int key, std::vector<std::string> lines) {
  Dump* d = ByKey(key);
  if (d == nullptr) return;
  for (const std::string& l : lines) absl::StrAppend(&d->text, l, "\n");
}

void StackDumper::OnExit(const ChildExit& e) {
  Dump* d = ByKey(e.rank);
  if (d == nullptr) return;  // a child of a dropped dump, or one given up on
  const pid_t target = d->target;
  Halt(*d);
  const bool python_ok = WIFEXITED(e.wait_status) && WEXITSTATUS(e.wait_status) == 0 &&
                         !ParsePySpyDump(d->text).empty();
  if (d->current == Source::kPySpy && !python_ok) {
    absl::StrAppend(&d->notes, "py-spy dump --pid ", target, ": ",
                    DescribeWaitStatus(e.wait_status), ": ", ErrorLine(d->text), "\n");
    Advance(target);
  } else {
    Record(*d, d->current, d->text);
    running_.erase(target);
  }
  MaybeFinish();
}

void StackDumper::Record(const Dump& d, std::optional<Source> source, const std::string& text) {
  Result r;
  r.rank = d.rank;
  r.source = source ? SourceName(*source) : "";
  r.path = absl::StrCat(dir_, "/rank-", d.rank, ".txt");
  std::string head = absl::StrCat("# rank ", d.rank, ", pid ", d.target, ": ");
  if (!source) {
    absl::StrAppend(&head, "no stacks taken\n");
    r.why_none = std::string(absl::StripTrailingAsciiWhitespace(d.notes));
    absl::StrReplaceAll({{"\n", "; "}}, &r.why_none);
  } else if (*source == Source::kGdb) {
    absl::StrAppend(&head, "native stacks of every thread, from gdb\n");
    r.waiting_in = NativeCollectiveWait(text, d.target);
  } else {
    absl::StrAppend(&head, "Python stacks of every thread, from ", SourceName(*source), "\n");
    const std::vector<PyThread> threads =
        *source == Source::kPySpy ? ParsePySpyDump(text) : ParseFaultHandlerDump(text);
    r.stuck_at = StuckFrame(threads);
    r.waiting_in = CollectiveWait(threads);
    if (r.stuck_at) absl::StrAppend(&head, "# stuck in ", DescribeFrame(*r.stuck_at), "\n");
  }
  if (r.waiting_in) {
    absl::StrAppend(&head, "# waits on its peers in ", DescribeFrame(*r.waiting_in), "\n");
  } else if (source) {
    absl::StrAppend(&head, "# not in a collective\n");
  }
  for (absl::string_view note : absl::StrSplit(d.notes, '\n', absl::SkipEmpty())) {
    absl::StrAppend(&head, "# ", note, "\n");
  }
  absl::Status written = WriteFileAtomically(r.path, absl::StrCat(head, "\n", text));
  log_(written.ok() ? absl::StrCat("stacks of rank ", d.rank, " (pid ", d.target, ") in ", r.path,
                                   source ? absl::StrCat(", from ", SourceName(*source)) : "",
                                   r.stuck_at ? ", stuck in " + DescribeFrame(*r.stuck_at) : "")
                    : absl::StrCat("cannot record the stacks of rank ", d.rank, ": ",
                                   written.message()));
  results_.push_back(std::move(r));
}

void StackDumper::OnBudgetSpent() {
  for (auto& [pid, d] : running_) {
    Halt(d);
    if (d.recorder) {  // its stacks are recorded already
      if (Result* r = ResultOf(d.rank)) {
        r->flight_record.emplace().set_why_none(
            absl::StrCat(d.recorder_notes, d.recorder_handler, ": no time left"));
      }
      continue;
    }
    absl::StrAppend(&d.notes, SourceName(d.current), " -p ", d.target, ": no time left (killed)\n");
    // gdb's partial frames are worth keeping; a Python source's partial text is not a dump.
    if (d.current == Source::kGdb) {
      Record(d, Source::kGdb, d.text);
    } else {
      Record(d, std::nullopt, "");
    }
  }
  running_.clear();
  children_->KillAll();
  if (busy()) Finish();
}

void StackDumper::Finish() {
  if (budget_timer_) clock_.Cancel(*budget_timer_);
  budget_timer_.reset();
  DoneFn done = std::move(done_);
  done_ = nullptr;
  std::vector<Result> results = std::move(results_);
  results_.clear();
  if (done) done(std::move(results));
}

v1::RankStacks RankStacksOf(const StackDumper::Result& result, const std::string& job_dir) {
  v1::RankStacks m;
  m.set_rank(result.rank);
  absl::string_view path = result.path;
  if (absl::ConsumePrefix(&path, job_dir)) absl::ConsumePrefix(&path, "/");
  m.set_path(std::string(path));
  m.set_source(result.source);
  auto set = [](v1::StackFrame* to, const PyFrame& from) {
    to->set_function(from.function);
    to->set_file(from.file);
    to->set_line(from.line);
  };
  if (result.stuck_at) set(m.mutable_stuck_at(), *result.stuck_at);
  if (result.waiting_in) set(m.mutable_waiting_in(), *result.waiting_in);
  m.set_why_none(result.why_none);
  if (result.flight_record) {
    v1::FlightRecord* fr = m.mutable_flight_record();
    *fr = *result.flight_record;
    absl::string_view fr_path = fr->path();
    if (absl::ConsumePrefix(&fr_path, job_dir)) absl::ConsumePrefix(&fr_path, "/");
    fr->set_path(std::string(fr_path));
  }
  return m;
}

}  // namespace dlaunch
