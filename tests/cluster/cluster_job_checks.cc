#include "cluster_job_checks.h"

#include <dirent.h>
#include <stdlib.h>
#include <sched.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <regex>
#include <set>
#include <sstream>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "gtest/gtest.h"

namespace dlaunch {
namespace testing {
namespace {

std::string ProcFile(pid_t pid, const char* name) {
  return ReadFileOrEmpty(absl::StrCat("/proc/", pid, "/", name));
}

std::vector<pid_t> AllPids() {
  std::vector<pid_t> pids;
  DIR* proc = opendir("/proc");
  if (proc == nullptr) return pids;
  while (struct dirent* e = readdir(proc)) {
    char* end = nullptr;
    long pid = strtol(e->d_name, &end, 10);
    if (*end == '\0' && pid > 0) pids.push_back(static_cast<pid_t>(pid));
  }
  closedir(proc);
  return pids;
}

// NUL-separated /proc data as one readable line.
std::string Printable(std::string text) {
  for (char& c : text) {
    if (c == '\0') c = ' ';
  }
  return text;
}

}  // namespace

std::string DlaunchBinDir() {
  const char* dir = getenv("DLAUNCH_TEST_BIN_DIR");
  return dir != nullptr && *dir != '\0' ? dir : DLAUNCH_BIN_DIR;
}
std::string DlaunchPath() { return DlaunchBinDir() + "/dlaunch"; }
std::string AgentPath() { return DlaunchBinDir() + "/dlaunch-agent"; }

std::string MissingDlaunchBinaries() {
  for (const std::string& path : {DlaunchPath(), AgentPath()}) {
    if (access(path.c_str(), X_OK) != 0) {
      return absl::StrCat(path, " is not built (cmake --build <build-dir> --target dlaunch ",
                          "dlaunch-agent); the cross-host dlaunch tests need it");
    }
  }
  return "";
}

std::string BarrierWorkerPath() {
  return std::string(DLAUNCH_SOURCE_DIR) + "/tests/cluster/tcp_barrier_worker.py";
}

std::string ReadFileOrEmpty(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void WriteFileOrDie(const std::string& path, const std::string& text, int mode) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  out.close();
  if (!out) {
    ADD_FAILURE() << "cannot write " << path;
    return;
  }
  chmod(path.c_str(), mode);
}

std::string OnlyJobDir(const std::string& job_root) {
  std::vector<std::string> dirs;
  DIR* d = opendir(job_root.c_str());
  if (d == nullptr) return "";
  while (struct dirent* e = readdir(d)) {
    std::string name = e->d_name;
    if (name == "." || name == "..") continue;
    struct stat st;
    std::string path = job_root + "/" + name;
    if (stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) dirs.push_back(path);
  }
  closedir(d);
  return dirs.size() == 1 ? dirs[0] : "";
}

std::vector<std::string> JobProcesses(const NetnsCluster& cluster, const std::string& job_id) {
  std::set<pid_t> in_cluster;
  std::vector<std::string> hosts = cluster.hosts();
  hosts.push_back("head");
  for (const std::string& host : hosts) {
    RunResult r = RunCommand({"/usr/sbin/ip", "netns", "pids", cluster.Namespace(host)},
                             absl::Seconds(10));
    for (absl::string_view pid : absl::StrSplit(r.output, '\n', absl::SkipEmpty())) {
      in_cluster.insert(static_cast<pid_t>(strtol(std::string(pid).c_str(), nullptr, 10)));
    }
  }
  const std::string marker = "DLAUNCH_JOB_ID=" + job_id;
  std::vector<std::string> found;
  for (pid_t pid : AllPids()) {
    if (pid == getpid()) continue;
    std::string cmdline = Printable(ProcFile(pid, "cmdline"));
    if (cmdline.empty()) continue;  // kernel thread or already gone
    bool match = false;
    if (!job_id.empty()) {
      for (absl::string_view var : absl::StrSplit(ProcFile(pid, "environ"), '\0')) {
        if (var == marker) match = true;
      }
    }
    if (!match && in_cluster.count(pid) != 0) {
      match = absl::StrContains(cmdline, "dlaunch-agent") ||
              absl::StrContains(cmdline, "dlaunch-worker") ||
              absl::StrContains(cmdline, "tcp_barrier_worker") ||
              absl::StrContains(cmdline, "fault_worker") ||
              absl::StrContains(cmdline, "dlaunch run");
    }
    if (match) found.push_back(absl::StrCat(pid, ": ", cmdline));
  }
  return found;
}

std::vector<std::string> WaitNoJobProcesses(const NetnsCluster& cluster,
                                            const std::string& job_id, absl::Duration timeout) {
  absl::Time deadline = absl::Now() + timeout;
  while (true) {
    std::vector<std::string> left = JobProcesses(cluster, job_id);
    if (left.empty() || absl::Now() >= deadline) return left;
    usleep(100000);
  }
}

void ExpectRanksPinnedApart(const std::string& job_dir, int nnodes, int nproc) {
  std::set<int> machine;
  cpu_set_t own;
  CPU_ZERO(&own);
  ASSERT_EQ(sched_getaffinity(0, sizeof(own), &own), 0);
  for (int c = 0; c < CPU_SETSIZE; ++c) {
    if (CPU_ISSET(c, &own)) machine.insert(c);
  }
  for (int node = 0; node < nnodes; ++node) {
    std::set<int> covered;
    for (int rank = node * nproc; rank < (node + 1) * nproc; ++rank) {
      std::string path = absl::StrCat(job_dir, "/logs/rank-", rank, ".log");
      std::string log = ReadFileOrEmpty(path);
      std::smatch m;
      if (!std::regex_search(log, m, std::regex(absl::StrCat("rank ", rank, " cpus ([0-9,]+)")))) {
        ADD_FAILURE() << path << " does not say which CPUs rank " << rank << " had:\n" << log;
        continue;
      }
      for (absl::string_view cpu : absl::StrSplit(std::string(m[1]), ',')) {
        int c = -1;
        ASSERT_TRUE(absl::SimpleAtoi(cpu, &c)) << path;
        EXPECT_TRUE(covered.insert(c).second)
            << "rank " << rank << " shares CPU " << c << " with another rank of node " << node;
      }
    }
    // The node launcher left the agent unbound, so its ranks together cover the machine.
    EXPECT_EQ(covered, machine) << "the ranks of node " << node << " do not cover its CPUs";
  }
}

void ExpectBarrierJobSucceeded(const std::string& job_dir, int nnodes, int nproc,
                               const std::vector<std::string>& hosts) {
  const int world = nnodes * nproc;
  const std::string all_hosts = absl::StrJoin(hosts, ",");
  std::set<std::string> rank_hosts;
  for (int rank = 0; rank < world; ++rank) {
    std::string path = absl::StrCat(job_dir, "/logs/rank-", rank, ".log");
    std::string log = ReadFileOrEmpty(path);
    std::smatch m;
    std::regex line(absl::StrCat("rank ", rank, "/", world, " on (\\S+): barrier passed, hosts (\\S+)"));
    if (!std::regex_search(log, m, line)) {
      ADD_FAILURE() << path << " does not show rank " << rank << " passing the barrier:\n" << log;
      continue;
    }
    rank_hosts.insert(m[1]);
    EXPECT_EQ(m[2], all_hosts) << path;
  }
  EXPECT_EQ(rank_hosts, std::set<std::string>(hosts.begin(), hosts.end()))
      << "ranks did not run on every host";
  ExpectRanksPinnedApart(job_dir, nnodes, nproc);
  std::string summary = ReadFileOrEmpty(job_dir + "/summary.json");
  EXPECT_TRUE(std::regex_search(summary, std::regex("\"result\"\\s*:\\s*\"succe(ss|eded)\"")))
      << job_dir << "/summary.json:\n" << summary;
}

std::string BarrierJobYaml(const std::string& name, int nnodes, int nproc,
                           const std::vector<std::string>& worker_args,
                           const std::string& scheduler_yaml) {
  std::vector<std::string> command = {"/usr/bin/python3", BarrierWorkerPath()};
  command.insert(command.end(), worker_args.begin(), worker_args.end());
  std::vector<std::string> quoted;
  for (const std::string& word : command) quoted.push_back("\"" + word + "\"");
  return absl::StrCat("name: ", name, "\n", "nodes: ", nnodes, "\n",
                      "nproc_per_node: ", nproc, "\n",
                      "command: [", absl::StrJoin(quoted, ", "), "]\n",
                      "stop:\n  grace: 2\n",
                      "rendezvous:\n  join_timeout: 60\n",
                      scheduler_yaml);
}

}  // namespace testing
}  // namespace dlaunch
