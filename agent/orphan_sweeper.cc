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
#include "common/file_io.h"
#include "common/process.h"

namespace dlaunch {
namespace {

std::string Comm(pid_t pid) {
  absl::StatusOr<std::string> stat = ReadFile(absl::StrCat("/proc/", pid, "/stat"));
  if (!stat.ok()) return "?";
  const size_t open = stat->find('(');
  const size_t close = stat->rfind(')');
  if (open == std::string::npos || close == std::string::npos || close < open) return "?";
  return stat->substr(open + 1, close - open - 1);
}

// Adopted children with their state letter.
std::vector<std::pair<pid_t, char>> Adopted() {
  std::vector<std::pair<pid_t, char>> out;
  const pid_t self = getpid();
  DIR* proc = opendir("/proc");
  if (proc == nullptr) return out;
  while (const dirent* e = readdir(proc)) {
    pid_t pid = 0;
    if (!absl::SimpleAtoi(e->d_name, &pid) || pid <= 0) continue;
    absl::StatusOr<std::string> stat = ReadFile(absl::StrCat("/proc/", pid, "/stat"));
    char state = 0;
    if (!stat.ok() || ParentFromStat(*stat, &state) != self || IsSpawnedChild(pid)) continue;
    out.emplace_back(pid, state);
  }
  closedir(proc);
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
  for (const auto& [pid, state] : Adopted()) pids.push_back(pid);
  return pids;
}

std::vector<std::string> EndAdopted(std::chrono::milliseconds grace, int passes) {
  std::vector<std::string> ended;
  for (int pass = 0; pass < passes; ++pass) {
    std::vector<pid_t> live;
    for (const auto& [pid, state] : Adopted()) {
      if (state == 'Z') {
        Reaped(pid);
        continue;
      }
      ended.push_back(absl::StrCat(pid, " (", Comm(pid), ")"));
      if (getpgid(pid) == pid) kill(-pid, SIGTERM);
      kill(pid, SIGTERM);
      live.push_back(pid);
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
  for (const auto& [pid, state] : Adopted()) {
    if (state == 'Z' && Reaped(pid)) ++reaped;
  }
  return reaped;
}

}  // namespace dlaunch
