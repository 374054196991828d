#include "agent/orphan_sweeper.h"

#include <dirent.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <thread>

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

std::vector<std::string> EndAdopted(std::chrono::milliseconds grace, int passes) {
  std::vector<std::string> ended;
  for (int pass = 0; pass < passes; ++pass) {
    std::vector<pid_t> live;
    for (const Adoptee& a : Adopted()) {
      if (a.state == 'Z') {
        Reaped(a.pid);
        continue;
      }
      ended.push_back(absl::StrCat(a.pid, " (", a.comm, ")"));
      if (getpgid(a.pid) == a.pid) kill(-a.pid, SIGTERM);
      kill(a.pid, SIGTERM);
      live.push_back(a.pid);
    }
    if (live.empty()) break;
    const auto deadline = std::chrono::steady_clock::now() + grace;
    while (!live.empty() && std::chrono::steady_clock::now() < deadline) {
      live.erase(std::remove_if(live.begin(), live.end(), Reaped), live.end());
      if (!live.empty()) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    for (pid_t pid : live) {
      if (getpgid(pid) == pid) kill(-pid, SIGKILL);
      kill(pid, SIGKILL);
      int status = 0;
      waitpid(pid, &status, 0);
    }
  }
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

}  // namespace dlaunch
