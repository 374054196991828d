#include "agent/workers/job_cgroup.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <optional>
#include <thread>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "common/file_io.h"

namespace dlaunch {
namespace {

using std::chrono::milliseconds;
using Clock = std::chrono::steady_clock;

// mountinfo escapes space, tab, newline and backslash as \ooo.
std::string Unescape(absl::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\' && i + 3 < s.size() && s[i + 1] >= '0' && s[i + 1] <= '3') {
      out.push_back(static_cast<char>((s[i + 1] - '0') * 64 + (s[i + 2] - '0') * 8 + (s[i + 3] - '0')));
      i += 3;
    } else {
      out.push_back(s[i]);
    }
  }
  return out;
}

struct Cgroup2Mount {
  std::string root;   // the hierarchy's path mounted there ("/" unless a subtree is bind-mounted)
  std::string point;  // where
};

std::vector<Cgroup2Mount> Cgroup2Mounts(const std::string& mountinfo) {
  std::vector<Cgroup2Mount> mounts;
  for (absl::string_view line : absl::StrSplit(mountinfo, '\n', absl::SkipEmpty())) {
    const size_t dash = line.find(" - ");
    if (dash == absl::string_view::npos) continue;
    std::vector<absl::string_view> after = absl::StrSplit(line.substr(dash + 3), ' ');
    if (after.empty() || after[0] != "cgroup2") continue;
    std::vector<absl::string_view> before = absl::StrSplit(line.substr(0, dash), ' ');
    if (before.size() < 5) continue;
    mounts.push_back({Unescape(before[3]), Unescape(before[4])});
  }
  return mounts;
}

std::string Comm(pid_t pid) {
  absl::StatusOr<std::string> comm = ReadFile(absl::StrCat("/proc/", pid, "/comm"));
  return comm.ok() ? std::string(absl::StripTrailingAsciiWhitespace(*comm)) : "?";
}

bool WriteString(const std::string& path, absl::string_view text) {
  const int fd = open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) return false;
  const bool ok = write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  close(fd);
  return ok;
}

// Forks a child that moves itself into the cgroup through `procs_fd` and exits: whether this
// process may put its children there (the kernel also wants write access to the common
// ancestor's cgroup.procs, and refuses some cgroup types). 0, or the errno of the refusal.
int ProbeMove(int procs_fd) {
  const pid_t pid = fork();
  if (pid < 0) return errno;
  if (pid == 0) _exit(write(procs_fd, "0", 1) == 1 ? 0 : (errno & 0xff));
  int status = 0;
  pid_t r;
  do r = waitpid(pid, &status, 0); while (r < 0 && errno == EINTR);
  if (r != pid || !WIFEXITED(status)) return ECHILD;
  return WEXITSTATUS(status);
}

// rmdir of each empty dlaunch cgroup in `parent_dir` whose agent is no longer alive. A live
// agent's, or a pid now someone else's, is left alone; a populated one cannot be removed.
void RemoveStaleJobCgroups(const std::string& parent_dir) {
  DIR* dir = opendir(parent_dir.c_str());
  if (dir == nullptr) return;
  while (const dirent* e = readdir(dir)) {
    std::optional<pid_t> owner = OwnerOfJobCgroup(e->d_name);
    if (!owner || kill(*owner, 0) == 0 || errno != ESRCH) continue;
    rmdir(absl::StrCat(parent_dir, "/", e->d_name).c_str());
  }
  closedir(dir);
}

}  // namespace

std::optional<pid_t> OwnerOfJobCgroup(const std::string& name) {
  if (!absl::StartsWith(name, "dlaunch-")) return std::nullopt;
  std::vector<absl::string_view> fields = absl::StrSplit(name, '-');
  pid_t pid = 0;
  if (fields.size() < 4 || !absl::SimpleAtoi(fields[fields.size() - 2], &pid) || pid <= 0) {
    return std::nullopt;
  }
  return pid;
}

absl::StatusOr<std::string> CgroupV2Dir(const std::string& proc_cgroup,
                                        const std::string& mountinfo) {
  std::optional<std::string> path;
  for (absl::string_view line : absl::StrSplit(proc_cgroup, '\n', absl::SkipEmpty())) {
    if (absl::ConsumePrefix(&line, "0::")) path = std::string(line);
  }
  if (!path) return absl::FailedPreconditionError("this process is in no cgroup v2 hierarchy");
  std::vector<Cgroup2Mount> mounts = Cgroup2Mounts(mountinfo);
  if (mounts.empty()) return absl::FailedPreconditionError("cgroup v2 is not mounted");
  for (const Cgroup2Mount& m : mounts) {
    if (m.root == "/") return *path == "/" ? m.point : absl::StrCat(m.point, *path);
    if (*path == m.root) return m.point;
    if (absl::StartsWith(*path, m.root + "/")) {
      return absl::StrCat(m.point, path->substr(m.root.size()));
    }
  }
  return absl::FailedPreconditionError(
      absl::StrCat("this process's cgroup ", *path, " is not under a cgroup v2 mount"));
}

std::string JobCgroupName(const std::string& job_id, const std::string& agent_id) {
  std::string name = absl::StrCat(absl::StartsWith(job_id, "dlaunch-") ? "" : "dlaunch-", job_id,
                                  "-", agent_id);
  for (char& c : name) {
    if (!absl::ascii_isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '_' && c != '-') {
      c = '-';
    }
  }
  if (name.size() > 200) name.resize(200);
  return name;
}

std::vector<pid_t> ParseCgroupProcs(const std::string& text) {
  std::vector<pid_t> pids;
  for (absl::string_view word : absl::StrSplit(text, absl::ByAnyChar(" \n"), absl::SkipEmpty())) {
    pid_t pid = 0;
    if (absl::SimpleAtoi(word, &pid) && pid > 0) pids.push_back(pid);
  }
  return pids;
}

absl::StatusOr<std::unique_ptr<JobCgroup>> JobCgroup::Create(const std::string& parent_dir,
                                                             const std::string& name) {
  const std::string parent_procs = parent_dir + "/cgroup.procs";
  if (access(parent_procs.c_str(), W_OK) != 0) {
    return ErrnoStatus(errno, "cannot write", parent_procs);
  }
  RemoveStaleJobCgroups(parent_dir);
  const std::string dir = absl::StrCat(parent_dir, "/", name);
  if (mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) {
    return ErrnoStatus(errno, "cannot make the cgroup", dir);
  }
  const std::string procs = dir + "/cgroup.procs";
  const int fd = open(procs.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) {
    const int e = errno;
    rmdir(dir.c_str());
    return ErrnoStatus(e, "cannot open", procs);
  }
  if (const int e = ProbeMove(fd); e != 0) {
    close(fd);
    rmdir(dir.c_str());
    return ErrnoStatus(e, "cannot move a process into the cgroup", dir);
  }
  return std::unique_ptr<JobCgroup>(new JobCgroup(dir, fd));
}

absl::StatusOr<std::unique_ptr<JobCgroup>> JobCgroup::CreateForThisProcess(
    const std::string& name) {
  absl::StatusOr<std::string> self = ReadFile("/proc/self/cgroup");
  absl::StatusOr<std::string> mounts = ReadFile("/proc/self/mountinfo");
  if (!self.ok()) return self.status();
  if (!mounts.ok()) return mounts.status();
  absl::StatusOr<std::string> parent = CgroupV2Dir(*self, *mounts);
  if (!parent.ok()) return parent.status();
  return Create(*parent, name);
}

JobCgroup::~JobCgroup() {
  if (!Pids().empty()) KillAll();
  if (procs_fd_ >= 0) close(procs_fd_);
  Remove(milliseconds(1000));
}

std::vector<pid_t> JobCgroup::Pids() const {
  absl::StatusOr<std::string> text = ReadFile(dir_ + "/cgroup.procs");
  return text.ok() ? ParseCgroupProcs(*text) : std::vector<pid_t>{};
}

void JobCgroup::Kill(const std::vector<pid_t>& pids) const {
  if (WriteString(dir_ + "/cgroup.kill", "1")) return;
  for (pid_t pid : pids) kill(pid, SIGKILL);
}

EscalationTarget JobCgroup::KillTarget(std::vector<std::string>* found) const {
  return {[this] { return Pids(); },
          [this](const std::vector<pid_t>& pids, int) { Kill(pids); },
          [found](pid_t pid) { found->push_back(absl::StrCat(pid, " (", Comm(pid), ")")); }};
}

std::vector<std::string> JobCgroup::KillAll(milliseconds limit) {
  std::vector<std::string> found;
  Escalation kill(Clock::now(), milliseconds(0), {milliseconds(10), limit});
  EscalateBlocking(kill, KillTarget(&found));
  return found;
}

std::string JobCgroup::DescribeKilled(const std::vector<std::string>& killed) const {
  return absl::StrCat("killed ", killed.size(), " process(es) left in cgroup ",
                      dir_.substr(dir_.rfind('/') + 1), ": ", absl::StrJoin(killed, ", "));
}

bool JobCgroup::Remove(milliseconds limit) {
  const Clock::time_point deadline = Clock::now() + limit;
  while (rmdir(dir_.c_str()) != 0) {
    if (errno == ENOENT) return true;
    if (errno != EBUSY || Clock::now() >= deadline) return false;
    std::this_thread::sleep_for(milliseconds(10));
  }
  return true;
}

}  // namespace dlaunch
