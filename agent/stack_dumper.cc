#include "agent/stack_dumper.h"

#include <sys/stat.h>

#include <cerrno>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/file_io.h"
#include "common/process.h"

namespace dlaunch {

StackDumper::StackDumper(boost::asio::io_context& io, TimerClock& clock, LogFn log,
                         SupervisorSeams seams)
    : io_(io), clock_(clock), log_(std::move(log)) {
  // The child's "rank" is its gdb's key; no log file: the text goes to stacks/rank-N.txt.
  gdbs_ = std::make_unique<ChildSupervisor>(
      io_, "", 0,
      ChildSupervisor::Callbacks{
          [this](int key, bool, std::vector<std::string> lines) {
            OnOutput(static_cast<pid_t>(key), std::move(lines));
          },
          [this](const ChildExit& e) { OnExit(e); }},
      "gdb-", seams);
}

StackDumper::~StackDumper() {
  if (budget_timer_) clock_.Cancel(*budget_timer_);
  if (gdbs_) gdbs_->KillAll();
}

void StackDumper::Start(const std::vector<Target>& targets, const std::string& stacks_dir,
                        std::chrono::milliseconds budget, std::function<void()> done) {
  if (busy()) {
    // A dump of a round that has moved on: its stop no longer waits for it.
    gdbs_->KillAll();
    running_.clear();
    if (budget_timer_) clock_.Cancel(*budget_timer_);
    budget_timer_.reset();
  }
  done_ = std::move(done);
  dir_ = stacks_dir;
  if (mkdir(dir_.c_str(), 0755) != 0 && errno != EEXIST) {
    log_(absl::StrCat("cannot record stacks: ", ErrnoStatus(errno, "cannot create directory", dir_).message()));
  }
  std::vector<ChildSupervisor::StartRequest> requests;
  for (const Target& t : targets) {
    ChildSupervisor::StartRequest r;
    // Keyed by the target's pid until gdb's own is known.
    r.rank = t.pid;
    r.options.argv = {"gdb", "-batch", "-nx", "-p", std::to_string(t.pid), "-ex",
                      "thread apply all bt"};
    requests.push_back(std::move(r));
  }
  std::vector<absl::StatusOr<pid_t>> started = gdbs_->StartAll(requests);
  for (size_t i = 0; i < targets.size(); ++i) {
    const Dump d{targets[i].rank, targets[i].pid, ""};
    if (!started[i].ok()) {
      Record(d, absl::StrCat("gdb -p ", d.target, ": ", started[i].status().message(), "\n"));
      continue;
    }
    running_[*started[i]] = d;
  }
  budget_timer_ = clock_.RunAfter(budget, [this] {
    budget_timer_.reset();
    OnBudgetSpent();
  });
  // `done` never runs inside Start: the caller's state may not expect it yet.
  if (running_.empty()) {
    clock_.Cancel(*budget_timer_);
    budget_timer_ = clock_.RunAfter(std::chrono::milliseconds(0), [this] {
      budget_timer_.reset();
      Finish();
    });
  }
}

void StackDumper::OnOutput(pid_t key, std::vector<std::string> lines) {
  // Output is keyed by the target's pid (the request's "rank").
  for (auto& [gdb, d] : running_) {
    if (d.target != key) continue;
    for (const std::string& l : lines) absl::StrAppend(&d.text, l, "\n");
  }
}

void StackDumper::OnExit(const ChildExit& e) {
  auto it = running_.find(e.pid);
  if (it == running_.end()) return;  // a gdb of a dropped dump
  Record(it->second, it->second.text);
  running_.erase(it);
  if (running_.empty() && busy()) Finish();
}

void StackDumper::Record(const Dump& d, const std::string& text) {
  const std::string path = absl::StrCat(dir_, "/rank-", d.rank, ".txt");
  absl::Status written = WriteFileAtomically(path, text);
  log_(written.ok() ? absl::StrCat("stacks of rank ", d.rank, " (pid ", d.target, ") in ", path)
                    : absl::StrCat("cannot record the stacks of rank ", d.rank, ": ",
                                   written.message()));
}

void StackDumper::OnBudgetSpent() {
  for (const auto& [gdb, d] : running_) {
    Record(d, absl::StrCat(d.text, "gdb -p ", d.target, ": no time left (killed)\n"));
  }
  running_.clear();
  gdbs_->KillAll();
  if (busy()) Finish();
}

void StackDumper::Finish() {
  if (budget_timer_) clock_.Cancel(*budget_timer_);
  budget_timer_.reset();
  std::function<void()> done = std::move(done_);
  done_ = nullptr;
  if (done) done();
}

}  // namespace dlaunch
