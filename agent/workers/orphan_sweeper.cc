#include "agent/workers/orphan_sweeper.h"

#include <dirent.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <memory>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "common/file_io.h"
#include "common/process.h"

namespace dlaunch {
namespace {

struct Adoptee {
  pid_t pid;
  char state;        // R, S, Z, ...
  std::string comm;  // its command name, for the log
};

// This process's direct children: /proc/self/task/*/children (each thread's, since an orphan
// is handed to one of the subreaper's threads), without reading every process's stat; a scan
// of /proc for ppid == self where the kernel lacks those files.
std::vector<pid_t> Children() {
  std::vector<pid_t> pids;
  bool listed = false;
  if (DIR* tasks = opendir("/proc/self/task")) {
    while (const dirent* t = readdir(tasks)) {
      if (t->d_name[0] == '.') continue;
      absl::StatusOr<std::string> children =
          ReadFile(absl::StrCat("/proc/self/task/", t->d_name, "/children"));
      if (!children.ok()) continue;
      listed = true;
      for (absl::string_view word : absl::StrSplit(*children, ' ', absl::SkipEmpty())) {
        pid_t pid = 0;
        if (absl::SimpleAtoi(word, &pid)) pids.push_back(pid);
      }
    }
    closedir(tasks);
  }
  if (listed) return pids;
  const pid_t self = getpid();
  if (DIR* proc = opendir("/proc")) {
    while (const dirent* e = readdir(proc)) {
      pid_t pid = 0;
      if (!absl::SimpleAtoi(e->d_name, &pid) || pid <= 0) continue;
      absl::StatusOr<std::string> stat = ReadFile(absl::StrCat("/proc/", pid, "/stat"));
      if (stat.ok() && ParentFromStat(*stat) == self) pids.push_back(pid);
    }
    closedir(proc);
  }
  return pids;
}

// Adopted children (not spawned by this process), with their state and name.
std::vector<Adoptee> Adopted() {
  std::vector<Adoptee> out;
  const pid_t self = getpid();
  for (pid_t pid : Children()) {
    if (IsSpawnedChild(pid)) continue;
    absl::StatusOr<std::string> stat = ReadFile(absl::StrCat("/proc/", pid, "/stat"));
    char state = 0;
    if (!stat.ok() || ParentFromStat(*stat, &state) != self) continue;
    const size_t open = stat->find('(');
    const size_t close = stat->rfind(')');
    out.push_back(Adoptee{pid, state, stat->substr(open + 1, close - open - 1)});
  }
  return out;
}

// Reaps `pid` if it has exited; true once it is gone.
bool Reaped(pid_t pid) {
  int status = 0;
  const pid_t r = waitpid(pid, &status, WNOHANG);
  return r == pid || (r < 0 && errno == ECHILD);
}

}  // namespace

bool BecomeSubreaper() { return prctl(PR_SET_CHILD_SUBREAPER, 1) == 0; }

pid_t ParentFromStat(const std::string& stat, char* state) {
  // "pid (comm) S ppid ...": the comm ends at the last ')'.
  const size_t close = stat.rfind(')');
  if (close == std::string::npos || close + 4 > stat.size()) return -1;
  if (state != nullptr) *state = stat[close + 2];
  const size_t start = close + 4;
  const size_t end = stat.find(' ', start);
  pid_t ppid = -1;
  if (!absl::SimpleAtoi(stat.substr(start, end - start), &ppid)) return -1;
  return ppid;
}

std::vector<pid_t> AdoptedChildren() {
  std::vector<pid_t> pids;
  for (const Adoptee& a : Adopted()) pids.push_back(a.pid);
  return pids;
}

EscalationTarget AdoptedTarget(std::vector<std::string>* found) {
  // The names of the last listing, for `found`.
  auto names = std::make_shared<std::map<pid_t, std::string>>();
  return {[names] {
            std::vector<pid_t> live;
            names->clear();
            for (const Adoptee& a : Adopted()) {
              if (a.state == 'Z' && Reaped(a.pid)) continue;
              live.push_back(a.pid);
              (*names)[a.pid] = a.comm;
            }
            return live;
          },
          [](const std::vector<pid_t>& pids, int sig) {
            for (pid_t pid : pids) {
              if (getpgid(pid) == pid) kill(-pid, sig);
              kill(pid, sig);
            }
          },
          [names, found](pid_t pid) {
            found->push_back(absl::StrCat(pid, " (", (*names)[pid], ")"));
          }};
}

std::vector<std::string> EndAdopted(std::chrono::milliseconds grace) {
  std::vector<std::string> ended;
  Escalation escalation(std::chrono::steady_clock::now(), grace,
                        {OrphanSweeper::kPoll, OrphanSweeper::kKillLimit});
  EscalateBlocking(escalation, AdoptedTarget(&ended));
  return ended;
}

std::string DescribeEnded(const std::vector<std::string>& ended) {
  return absl::StrCat("ended ", ended.size(), " process(es) the workers left behind: ",
                      absl::StrJoin(ended, ", "));
}

int ReapAdoptedZombies() {
  int reaped = 0;
  for (const Adoptee& a : Adopted()) {
    if (a.state == 'Z' && Reaped(a.pid)) ++reaped;
  }
  return reaped;
}

void OrphanSweeper::Sweep(std::chrono::milliseconds grace, JobCgroup* cgroup,
                          std::function<void()> done) {
  if (current_) {
    if (!next_) next_.emplace(Request{grace, cgroup, {}});
    next_->grace = std::min(next_->grace, grace);
    if (cgroup) next_->cgroup = cgroup;
    if (done) next_->done.push_back(std::move(done));
    // Fenced: no grace is left for anything, the running sweep's included.
    if (grace.count() <= 0 && escalation_ && current_->grace.count() > 0) escalation_->Hurry();
    return;
  }
  Request request{grace, cgroup, {}};
  if (done) request.done.push_back(std::move(done));
  Begin(std::move(request));
}

void OrphanSweeper::Begin(Request request) {
  current_ = std::move(request);
  ended_.clear();
  killed_.clear();
  escalation_ = std::make_unique<TimedEscalation>(clock_, AdoptedTarget(&ended_), current_->grace,
                                                  Escalation::Limits{kPoll, kKillLimit},
                                                  [this] { AdoptedSwept(); });
  escalation_->Start();
}

void OrphanSweeper::AdoptedSwept() {
  // Then what escaped it (a daemon forking away from each signal): no grace left.
  if (!current_->cgroup) {
    Finish();
    return;
  }
  escalation_ = std::make_unique<TimedEscalation>(
      clock_, current_->cgroup->KillTarget(&killed_), std::chrono::milliseconds(0),
      Escalation::Limits{kPoll, JobCgroup::kKillLimit}, [this] { Finish(); });
  escalation_->Start();
}

void OrphanSweeper::Finish() {
  if (!ended_.empty()) log_(DescribeEnded(ended_));
  if (!killed_.empty()) log_(current_->cgroup->DescribeKilled(killed_));
  // Called from the escalation's last step: it is destroyed here, and nothing of it runs after.
  escalation_.reset();
  std::vector<std::function<void()>> done = std::move(current_->done);
  current_.reset();
  for (auto& d : done) d();
  if (!current_ && next_) {
    Request request = std::move(*next_);
    next_.reset();
    Begin(std::move(request));
  }
}

}  // namespace dlaunch
