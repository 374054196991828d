#include "fault_cluster.h"

#include <dirent.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <iostream>
#include <regex>
#include <set>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"

namespace dlaunch {
namespace testing {
namespace {

std::string Printable(std::string text) {
  for (char& c : text) {
    if (c == '\0') c = ' ';
  }
  return text;
}

std::string CmdLine(pid_t pid) {
  return Printable(ReadFileOrEmpty(absl::StrCat("/proc/", pid, "/cmdline")));
}

bool HasEnv(pid_t pid, const std::string& entry) {
  for (absl::string_view var :
       absl::StrSplit(ReadFileOrEmpty(absl::StrCat("/proc/", pid, "/environ")), '\0')) {
    if (var == entry) return true;
  }
  return false;
}

std::string Exe(pid_t pid) {
  char buf[4096];
  ssize_t n = readlink(absl::StrCat("/proc/", pid, "/exe").c_str(), buf, sizeof(buf) - 1);
  return n > 0 ? std::string(buf, static_cast<size_t>(n)) : "";
}

std::vector<pid_t> NamespacePids(const NetnsCluster& cluster, const std::string& host) {
  std::vector<pid_t> pids;
  RunResult r = RunCommand({"/usr/sbin/ip", "netns", "pids", cluster.Namespace(host)},
                           absl::Seconds(10));
  for (absl::string_view pid : absl::StrSplit(r.output, '\n', absl::SkipEmpty())) {
    pids.push_back(static_cast<pid_t>(strtol(std::string(pid).c_str(), nullptr, 10)));
  }
  return pids;
}

bool IsJobProcess(pid_t pid, const std::string& job_id) {
  std::string cmd = CmdLine(pid);
  if (cmd.empty()) return false;
  return absl::StrContains(cmd, "dlaunch-agent") || absl::StrContains(cmd, "dlaunch-worker") ||
         absl::StrContains(cmd, "fault_worker") ||
         (!job_id.empty() && HasEnv(pid, "DLAUNCH_JOB_ID=" + job_id));
}

// events.jsonl's "time" of the first <event> record (`"<event>":{` in the typed journal).
absl::Time EventTime(const std::string& events, const std::string& event) {
  for (absl::string_view line : absl::StrSplit(events, '\n', absl::SkipEmpty())) {
    if (!absl::StrContains(line, absl::StrCat("\"", event, "\":{"))) continue;
    std::smatch m;
    std::string text(line);
    if (!std::regex_search(text, m, std::regex("\"time\":\"([^\"]+)\""))) break;
    absl::Time t;
    std::string err;
    if (absl::ParseTime(absl::RFC3339_full, m[1].str(), &t, &err)) return t;
    break;
  }
  return absl::InfinitePast();
}

std::string HostOfNode(int node) { return absl::StrCat("h", node + 1); }

}  // namespace

bool FullFaultSuite() {
  const char* suite = getenv("DLAUNCH_FAULT_SUITE");
  return suite != nullptr && std::string(suite) == "full";
}

std::string FaultWorkerPath() {
  return std::string(DLAUNCH_SOURCE_DIR) + "/tests/cluster/fault_worker.py";
}

ScopedTmpfs::ScopedTmpfs(const std::string& size) {
  char tmpl[] = "/tmp/dlaunch-tmpfs.XXXXXX";
  if (mkdtemp(tmpl) == nullptr) {
    error_ = absl::StrCat("mkdtemp: ", strerror(errno));
    return;
  }
  path_ = tmpl;
  std::string opts = absl::StrCat("size=", size, ",mode=0777");
  if (mount("tmpfs", path_.c_str(), "tmpfs", 0, opts.c_str()) != 0) {
    error_ = absl::StrCat("mount tmpfs on ", path_, ": ", strerror(errno));
    return;
  }
  mounted_ = true;
}

ScopedTmpfs::~ScopedTmpfs() {
  if (mounted_) umount2(path_.c_str(), MNT_DETACH);
  if (!path_.empty()) rmdir(path_.c_str());
}

namespace {

// The suite's stop grace, 2 s; DLAUNCH_FAULT_STOP_GRACE sets another (a bench that measures
// what the grace costs a lost node's next round).
std::string StopGrace() {
  const char* grace = getenv("DLAUNCH_FAULT_STOP_GRACE");
  return grace != nullptr && *grace != '\0' ? grace : "2s";
}

}  // namespace

pid_t FaultClusterTest::StartJob(const std::string& name,
                                 const std::vector<std::string>& worker_args,
                                 const FaultJobOptions& options) {
  std::string command = options.command;
  if (command.empty()) {
    std::vector<std::string> words = {"/usr/bin/python3", FaultWorkerPath()};
    words.insert(words.end(), worker_args.begin(), worker_args.end());
    std::vector<std::string> quoted;
    for (const std::string& w : words) quoted.push_back("\"" + w + "\"");
    command = absl::StrCat("[", absl::StrJoin(quoted, ", "), "]");
  }
  std::string yaml = absl::StrCat(
      "name: fault-", name, "\nnodes: ",
      options.nodes.empty() ? absl::StrCat(kNodes) : absl::StrCat("\"", options.nodes, "\""), "\nnproc_per_node: ", kProcs,
      "\nhosts: [h1, h2, h3]\nlauncher: ssh\ncommand: ", command,
      "\nmax_restarts: ", options.max_restarts,
      "\nheartbeat:\n  interval: 1s\n  misses: 3\nstop:\n  grace: ", StopGrace(), "\n");
  if (!options.exit_timeout.empty()) absl::StrAppend(&yaml, "  exit_timeout: ", options.exit_timeout, "\n");
  if (!options.stall_timeout.empty()) {
    absl::StrAppend(&yaml, "health:\n  stall_timeout: ", options.stall_timeout, "\n");
  }
  absl::StrAppend(&yaml, "rendezvous:\n  join_timeout: 60s\n");
  if (options.master_port > 0) absl::StrAppend(&yaml, "  master_port: ", options.master_port, "\n");
  if (options.relay_fanout > 0) absl::StrAppend(&yaml, "  relay_fanout: ", options.relay_fanout, "\n");
  // The collective check is slow_node_test.cc's to test: on the 2-core test machine its figures
  // spread with the load, and a node it named would change these scenarios' node counts.
  absl::StrAppend(&yaml, "preflight: ",
                  options.preflight.empty() ? "{collective: off}" : options.preflight, "\n");
  absl::StrAppend(&yaml, options.extra);
  job_yaml_ = cluster_->dir() + "/job.yaml";
  WriteFileOrDie(job_yaml_, yaml);
  launcher_log_ = cluster_->dir() + "/dlaunch.out";
  const char* path = getenv("PATH");
  EnvOverrides env = {{"DLAUNCH_SSH", cluster_->RshPath()},
                      {"DLAUNCH_JOB_ROOT", job_root_},
                      {"PATH", absl::StrCat(DlaunchBinDir(), ":", path ? path : "/usr/bin:/bin")}};
  return cluster_->SpawnOn(
      "head", absl::StrCat("cd ", cluster_->dir(), " && exec ", DlaunchPath(), " run ", job_yaml_),
      launcher_log_, env);
}

int FaultClusterTest::WaitJobEnd(pid_t launcher, absl::Duration timeout) {
  absl::StatusOr<int> code = cluster_->WaitSpawned(launcher, timeout);
  return code.ok() ? *code : -1;
}

bool FaultClusterTest::WaitAllRanksAtStep(int step, absl::Duration timeout) {
  absl::Time deadline = absl::Now() + timeout;
  while (absl::Now() < deadline) {
    int at = 0;
    for (int r = 0; !job_dir().empty() && r < kNodes * kProcs; ++r) {
      std::string log = ReadJobFile(absl::StrCat("logs/rank-", r, ".log"));
      std::regex line(absl::StrCat("rank ", r, " step ([0-9]+)"));
      for (auto it = std::sregex_iterator(log.begin(), log.end(), line);
           it != std::sregex_iterator(); ++it) {
        if (std::stoi((*it)[1]) >= step) {
          ++at;
          break;
        }
      }
    }
    if (at == kNodes * kProcs) return true;
    usleep(50000);
  }
  return false;
}

std::string FaultClusterTest::LauncherOutput() const { return ReadFileOrEmpty(launcher_log_); }

std::string FaultClusterTest::FirstErrorLine() const {
  std::string out = LauncherOutput();
  std::smatch m;
  return std::regex_search(out, m, std::regex("\\[dlaunch\\] error: [^\n]*")) ? m[0].str() : "";
}

std::string FaultClusterTest::job_dir() {
  return OnlyJobDir(job_root_);
}

std::string FaultClusterTest::job_id() {
  std::string dir = job_dir();
  return dir.empty() ? "" : dir.substr(dir.rfind('/') + 1);
}

std::string FaultClusterTest::ReadJobFile(const std::string& relative) {
  std::string dir = job_dir();
  return dir.empty() ? "" : ReadFileOrEmpty(dir + "/" + relative);
}

pid_t FaultClusterTest::RankPid(int rank) {
  const std::string id = job_id();
  for (const std::string& host : cluster_->hosts()) {
    for (pid_t pid : NamespacePids(*cluster_, host)) {
      if (absl::StrContains(CmdLine(pid), "fault_worker") &&
          HasEnv(pid, "DLAUNCH_JOB_ID=" + id) && HasEnv(pid, absl::StrCat("RANK=", rank))) {
        return pid;
      }
    }
  }
  return -1;
}

pid_t FaultClusterTest::AgentPid(const std::string& host) {
  for (pid_t pid : NamespacePids(*cluster_, host)) {
    if (absl::EndsWith(Exe(pid), "/dlaunch-agent")) return pid;
  }
  return -1;
}

std::vector<pid_t> FaultClusterTest::HostJobPids(const std::string& host) {
  std::vector<pid_t> out;
  const std::string id = job_id();
  for (pid_t pid : NamespacePids(*cluster_, host)) {
    if (IsJobProcess(pid, id)) out.push_back(pid);
  }
  return out;
}

std::vector<std::string> FaultClusterTest::WaitHostEmpty(const std::string& host,
                                                         absl::Duration timeout) {
  absl::Time deadline = absl::Now() + timeout;
  while (true) {
    std::vector<std::string> left;
    for (pid_t pid : HostJobPids(host)) left.push_back(absl::StrCat(pid, ": ", CmdLine(pid)));
    if (left.empty() || absl::Now() >= deadline) return left;
    usleep(100000);
  }
}

absl::Time FaultClusterTest::WaitHostWorkersGone(const std::string& host,
                                                absl::Duration timeout) {
  // The host's workers as they are now (none starts there once it is cut off), then each one's
  // /proc entry every 5 ms: scanning the namespace (`ip netns pids`) takes tens of ms, and the
  // time returned is compared with the next round's first start, which may be that close.
  std::vector<pid_t> workers;
  for (pid_t pid : HostJobPids(host)) {
    if (!absl::StrContains(CmdLine(pid), "dlaunch-agent")) workers.push_back(pid);
  }
  const absl::Time deadline = absl::Now() + timeout;
  while (absl::Now() < deadline) {
    bool running = false;
    for (pid_t pid : workers) {
      const std::string stat = ReadFileOrEmpty(absl::StrCat("/proc/", pid, "/stat"));
      // Gone once reaped, or a zombie: it runs no code of its own any more.
      if (stat.empty()) continue;
      const size_t close = stat.rfind(')');
      if (close != std::string::npos && close + 2 < stat.size() && stat[close + 2] == 'Z') continue;
      running = true;
    }
    if (!running) return absl::Now();
    usleep(5000);
  }
  return absl::InfiniteFuture();
}

std::string FaultClusterTest::StampFile() const {
  // The cluster, and its folder, outlive a test: the last test's stamps must not count.
  const std::string path = cluster_->dir() + "/stamps";
  unlink(path.c_str());
  return path;
}

absl::Time FaultClusterTest::FirstStamp(const std::string& path, const std::string& event,
                                        int round) {
  absl::Time first = absl::InfiniteFuture();
  for (absl::string_view line : absl::StrSplit(ReadFileOrEmpty(path), '\n', absl::SkipEmpty())) {
    std::vector<std::string> w = absl::StrSplit(line, ' ', absl::SkipEmpty());
    int r = -1;
    double t = 0;
    if (w.size() != 4 || w[0] != event || !absl::SimpleAtoi(w[2], &r) || r != round ||
        !absl::SimpleAtod(w[3], &t)) {
      continue;
    }
    first = std::min(first, absl::FromUnixMicros(static_cast<int64_t>(t * 1e6)));
  }
  return first;
}

absl::Time FaultClusterTest::FirstEventTime(const std::string& event) {
  return EventTime(ReadJobFile("events.jsonl"), event);
}

bool FaultClusterTest::WaitListening(const std::string& host, int port) {
  absl::Time deadline = absl::Now() + absl::Seconds(10);
  while (absl::Now() < deadline) {
    RunResult r = RunCommand({"/usr/bin/nsenter", "--net=/run/netns/" + cluster_->Namespace(host),
                              "/usr/bin/ss", "-Hltn", absl::StrCat("sport = :", port)},
                             absl::Seconds(10));
    if (r.ok() && absl::StrContains(r.output, absl::StrCat(":", port))) return true;
    usleep(50000);
  }
  return false;
}

absl::Time FaultClusterTest::WorkerFaultTime(int rank, const std::string& what) {
  std::string log = ReadJobFile(absl::StrCat("logs/rank-", rank, ".log"));
  std::smatch m;
  if (!std::regex_search(log, m, std::regex(absl::StrCat("fault-worker: rank ", rank, " ", what,
                                                         " at ([0-9.]+)")))) {
    ADD_FAILURE() << "rank " << rank << "'s log does not time its " << what << ":\n" << log;
    return absl::InfiniteFuture();
  }
  return absl::FromUnixMicros(static_cast<int64_t>(std::stod(m[1]) * 1e6));
}

absl::Time FaultClusterTest::FirstFailureTime() {
  absl::Time t = EventTime(ReadJobFile("events.jsonl"), "failure_detected");
  EXPECT_NE(t, absl::InfinitePast()) << "no failure_detected event:\n" << ReadJobFile("events.jsonl");
  return t;
}

void FaultClusterTest::ExpectCause(const std::string& cls, const std::string& where_line,
                                   const std::string& where_json, const std::string& how) {
  std::string events = ReadJobFile("events.jsonl");
  EXPECT_TRUE(absl::StrContains(events, "\"node_order\":[\"h1\",\"h2\",\"h3\"]")) << events;
  const std::string first = FirstErrorLine();
  EXPECT_TRUE(absl::StrContains(first, absl::StrCat("error: ", cls, ": ", where_line)))
      << "first error line: " << first << "\n" << LauncherOutput();
  // The journal names the node by id and by rank (the same in these runs' round 0).
  const std::string where = std::regex_replace(where_json, std::regex("\"node\":(-?[0-9]+)"),
                                               "\"node_id\":$1,\"node_rank\":$1");
  const std::string json = absl::StrCat("\"failure\":{\"failure_class\":\"", cls, "\",", where);
  std::string root_event;
  for (absl::string_view line : absl::StrSplit(events, '\n')) {
    if (absl::StrContains(line, "\"root_cause\":{")) {
      root_event = std::string(line);
      break;
    }
  }
  EXPECT_TRUE(absl::StrContains(root_event, json)) << "first root_cause event: " << root_event;
  EXPECT_TRUE(absl::StrContains(root_event, how)) << root_event;
  std::string summary = ReadJobFile("summary.json");
  if (absl::StrContains(summary, "\"result\":\"failed\"")) {
    EXPECT_TRUE(absl::StrContains(
        summary, absl::StrCat("\"root_cause\":{\"failure_class\":\"", cls, "\",", where)))
        << summary;
    EXPECT_TRUE(absl::StrContains(summary, how)) << summary;
  }
}

void FaultClusterTest::ExpectRootCause(const std::string& cls, int rank, const std::string& how) {
  const int node = rank / kProcs;
  const std::string host = HostOfNode(node);
  ExpectCause(cls,
              absl::StrCat("rank ", rank, " (local ", rank % kProcs, ", node ", node, ", host ",
                           host, ")"),
              absl::StrCat("\"rank\":", rank, ",\"local_rank\":", rank % kProcs, ",\"node\":",
                           node, ",\"host\":\"", host, "\""),
              how);
}

void FaultClusterTest::ExpectNodeRootCause(const std::string& cls, int node,
                                           const std::string& how) {
  const std::string host = HostOfNode(node);
  ExpectCause(cls, absl::StrCat("node ", node, " (host ", host, ")"),
              absl::StrCat("\"rank\":-1,\"local_rank\":-1,\"node\":", node, ",\"host\":\"",
                           host, "\""),
              how);
}

void FaultClusterTest::ExpectRestartedAndSucceeded(int world, absl::Duration bound) {
  std::string events = ReadJobFile("events.jsonl");
  EXPECT_TRUE(absl::StrContains(events, "\"restart\":{")) << events;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(
      events, m,
      std::regex("\"round\":1,\"workers_started\":\\{[^\n]*\"restart_s\":([-0-9.e]+)")))
      << events;
  absl::Duration took = absl::Seconds(std::stod(m[1]));
  EXPECT_LE(took, bound) << "restart took " << absl::FormatDuration(took) << "\n" << events;
  std::cout << "restarted in " << absl::FormatDuration(took) << " from the detection\n";
  std::string summary = ReadJobFile("summary.json");
  EXPECT_TRUE(absl::StrContains(summary, "\"result\":\"succeeded\"")) << summary;
  EXPECT_TRUE(absl::StrContains(summary, "\"restarts\":1")) << summary;
  for (int r = 0; r < world; ++r) {
    std::string log = ReadJobFile(absl::StrCat("logs/rank-", r, ".log"));
    EXPECT_TRUE(std::regex_search(log, std::regex(absl::StrCat("rank ", r, "/", world,
                                                               " on h[0-9]+ round 1: running"))))
        << "rank " << r << " did not run in round 1:\n" << log;
    EXPECT_TRUE(absl::StrContains(log, absl::StrCat("rank ", r, " done at step")))
        << "rank " << r << " did not finish round 1:\n" << log;
  }
}

void FaultClusterTest::ExpectDetectedWithin(absl::Time fault, absl::Duration bound) {
  absl::Duration took = FirstFailureTime() - fault;
  // events.jsonl keeps milliseconds; the worker's stamp may be up to one later.
  EXPECT_GE(took, absl::Milliseconds(-2)) << "detected before the fault?";
  EXPECT_LE(took, bound) << "detection took " << absl::FormatDuration(took) << "\n"
                         << ReadJobFile("events.jsonl");
  std::cout << "detected " << absl::FormatDuration(took) << " after the fault\n";
}

void FaultClusterTest::ExpectNothingLeft() {
  std::vector<std::string> left = WaitNoJobProcesses(*cluster_, job_id(), absl::Seconds(15));
  EXPECT_TRUE(left.empty()) << "left on the hosts:\n" << absl::StrJoin(left, "\n");
  std::vector<std::string> hosts = cluster_->hosts();
  hosts.push_back("head");
  for (const std::string& host : hosts) {
    RunResult r = RunCommand({"/usr/bin/nsenter", "--net=/run/netns/" + cluster_->Namespace(host),
                              "/usr/bin/ss", "-Hltnp"},
                             absl::Seconds(10));
    EXPECT_TRUE(r.ok()) << r.output;
    EXPECT_EQ(r.output, "") << "still listening on " << host;
  }
}

}  // namespace testing
}  // namespace dlaunch
