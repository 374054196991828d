#include "agent/health/oom_detector.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "agent/health/host_monitor.h"
#include "common/file_io.h"

namespace dlaunch {
namespace {

// The value of `key` in "key value" lines (memory.events, memory.oom_control).
std::optional<int64_t> Field(const std::string& text, const std::string& key) {
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    std::vector<absl::string_view> parts = absl::StrSplit(line, ' ', absl::SkipWhitespace());
    if (parts.size() < 2) continue;
    int64_t v = 0;
    if (parts[0] == key && absl::SimpleAtoi(parts[1], &v)) return v;
  }
  return std::nullopt;
}

std::string Mib(int64_t bytes) { return absl::StrFormat("%.1f MiB", bytes / 1048576.0); }

// /dev/kmsg, every record the kernel still holds, without blocking.
absl::StatusOr<std::string> ReadKernelLog(const std::string& path) {
  int fd = open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return absl::PermissionDeniedError(path);
  std::string out;
  char buf[8192];
  for (;;) {
    ssize_t n = read(fd, buf, sizeof(buf));
    if (n > 0) {
      out.append(buf, static_cast<size_t>(n));
      out.push_back('\n');
    } else if (n < 0 && errno == EPIPE) {
      continue;  // a record was overwritten while we read: go on with the next
    } else {
      break;     // EAGAIN: the end; other errors: what we have
    }
  }
  close(fd);
  return out;
}

}  // namespace

std::optional<MemoryCgroup> ParseMemoryCgroup(const std::string& proc_cgroup, const std::string& root,
                                              const std::function<bool(const std::string&)>& exists) {
  std::optional<std::string> v2_path;
  for (absl::string_view line : absl::StrSplit(proc_cgroup, '\n', absl::SkipEmpty())) {
    std::vector<std::string> parts = absl::StrSplit(line, absl::MaxSplits(':', 2));
    if (parts.size() != 3) continue;
    if (parts[1].empty()) {
      v2_path = parts[2];
      continue;
    }
    for (absl::string_view c : absl::StrSplit(parts[1], ',')) {
      if (c == "memory") return MemoryCgroup{absl::StrCat(root, "/memory", parts[2]), false};
    }
  }
  if (!v2_path) return std::nullopt;
  for (const std::string& mount : {root, absl::StrCat(root, "/unified")}) {
    // The nearest cgroup up from the worker's that has the memory controller: the agent's job
    // cgroup (agent/workers/job_cgroup.h) has none of its own, its parent's limit applies.
    for (std::string path = *v2_path;;) {
      std::string dir = path == "/" ? mount : absl::StrCat(mount, path);
      if (exists(dir + "/memory.events")) return MemoryCgroup{dir, true};
      if (path == "/" || path.empty()) break;
      const size_t slash = path.rfind('/');
      path = slash == 0 || slash == std::string::npos ? "/" : path.substr(0, slash);
    }
  }
  return std::nullopt;
}

int64_t ParseOomKillCount(const std::string& text) { return Field(text, "oom_kill").value_or(-1); }

std::optional<std::string> FindOomKillRecord(const std::string& kmsg, pid_t pid) {
  const std::string mark = absl::StrCat("Killed process ", pid, " (");
  std::optional<std::string> found;
  for (absl::string_view line : absl::StrSplit(kmsg, '\n', absl::SkipEmpty())) {
    size_t at = line.find(mark);
    if (at == absl::string_view::npos) continue;
    size_t semi = line.find(';');
    found = std::string(semi != absl::string_view::npos && semi < at ? line.substr(semi + 1) : line);
  }
  return found;
}

OomDetector::OomDetector()
    : OomDetector([](const std::string& p) -> absl::StatusOr<std::string> {
                    if (p == "/dev/kmsg") return ReadKernelLog(p);
                    return ReadFile(p);
                  },
                  [](const std::string& p) { return access(p.c_str(), F_OK) == 0; },
                  "/sys/fs/cgroup") {}

OomDetector::OomDetector(ReadFn read, std::function<bool(const std::string&)> exists,
                         std::string cgroup_root)
    : read_(std::move(read)), exists_(std::move(exists)), cgroup_root_(std::move(cgroup_root)) {}

int64_t OomDetector::CountOf(const MemoryCgroup& cg) const {
  auto text = read_(cg.dir + (cg.v2 ? "/memory.events" : "/memory.oom_control"));
  return text.ok() ? ParseOomKillCount(*text) : -1;
}

void OomDetector::OnStarted(pid_t pid) {
  Watched w;
  if (auto text = read_(absl::StrCat("/proc/", pid, "/cgroup")); text.ok()) {
    w.cgroup = ParseMemoryCgroup(*text, cgroup_root_, exists_);
  }
  if (w.cgroup) w.oom_kills = CountOf(*w.cgroup);
  watched_[pid] = w;
}

void OomDetector::Forget(pid_t pid) { watched_.erase(pid); }

std::string OomDetector::Figures(const std::optional<MemoryCgroup>& cg) const {
  std::vector<std::string> parts;
  if (cg) {
    auto limit = read_(cg->dir + (cg->v2 ? "/memory.max" : "/memory.limit_in_bytes"));
    auto peak = read_(cg->dir + (cg->v2 ? "/memory.peak" : "/memory.max_usage_in_bytes"));
    int64_t v = 0;
    std::string text = "cgroup limit ";
    if (limit.ok() && absl::SimpleAtoi(absl::StripAsciiWhitespace(*limit), &v) && v < (int64_t{1} << 60)) {
      absl::StrAppend(&text, Mib(v));
    } else {
      absl::StrAppend(&text, "none");
    }
    if (peak.ok() && absl::SimpleAtoi(absl::StripAsciiWhitespace(*peak), &v)) {
      absl::StrAppend(&text, ", peak ", Mib(v));
    }
    parts.push_back(text);
  }
  if (auto meminfo = read_("/proc/meminfo"); meminfo.ok()) {
    v1::HostSample host;
    ParseMeminfo(*meminfo, &host);
    if (host.mem_total_kb() > 0) {
      parts.push_back(absl::StrFormat("node: %.1f of %.1f GiB available",
                                      host.mem_available_kb() / 1048576.0,
                                      host.mem_total_kb() / 1048576.0));
    }
  }
  return absl::StrJoin(parts, "; ");
}

std::optional<std::string> OomDetector::OnKilled(pid_t pid) {
  Watched w;
  if (auto it = watched_.find(pid); it != watched_.end()) {
    w = it->second;
    watched_.erase(it);
  }
  const bool by_cgroup = w.cgroup && w.oom_kills >= 0 && CountOf(*w.cgroup) > w.oom_kills;
  std::optional<std::string> record;
  if (auto kmsg = read_("/dev/kmsg"); kmsg.ok()) record = FindOomKillRecord(*kmsg, pid);
  if (!by_cgroup && !record) return std::nullopt;
  std::string why = Figures(w.cgroup);
  if (record) {
    // The kernel's line up to the process's own memory; the page-table and file figures after it
    // say little about why.
    std::string line = *record;
    if (size_t cut = line.find(", file-rss"); cut != std::string::npos) line.resize(cut);
    absl::StrAppend(&why, why.empty() ? "" : "; ", "kernel: ", line);
  }
  return why;
}

}  // namespace dlaunch
