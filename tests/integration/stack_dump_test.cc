// Stacks recorded for a stall while the job restarts: the agent records them beside its loop,
// so a dump slower than the heartbeat limit does not get the node declared lost, and the stall
// stays the job's root cause. gdb is a stand-in on PATH that takes longer than that limit.
#include <stdlib.h>
#include <sys/stat.h>

#include <fstream>
#include <iostream>
#include <string>

#include <gtest/gtest.h>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "tests/integration/test_process.h"

namespace dlaunch::testing {
namespace {

using std::chrono::seconds;

const std::string kBin = DLAUNCH_BIN_DIR;

// PATH with `dir` first for the processes started while it lives (the launcher passes its
// environment to the agents, which look gdb up on PATH).
class PathPrepended {
 public:
  explicit PathPrepended(const std::string& dir) : old_(getenv("PATH") ? getenv("PATH") : "") {
    setenv("PATH", (dir + ":" + old_).c_str(), 1);
  }
  ~PathPrepended() { setenv("PATH", old_.c_str(), 1); }

 private:
  std::string old_;
};

TEST(StackDumpTest, ADumpSlowerThanTheHeartbeatLimitKeepsTheNodeAndTheStallAsTheCause) {
  const std::string tmp = MakeTempDir();
  const std::string job_id = tmp.substr(tmp.rfind('/') + 1);
  const std::string job_dir = tmp + "/" + job_id;
  // The limit is 1 s x 3 misses; this gdb answers after 5 s.
  const std::string bin = tmp + "/bin";
  mkdir(bin.c_str(), 0755);
  {
    std::ofstream gdb(bin + "/gdb");
    gdb << "#!/bin/sh\nsleep 5\necho \"Thread 1 (stand-in gdb for pid $4)\"\n";
  }
  chmod((bin + "/gdb").c_str(), 0755);
  PathPrepended path(bin);

  // Rank 1 stops itself (SIGSTOP) after 3 reports, in every round: round 0 stalls, is restarted
  // once, round 1 stalls, and the job gives up with the stall as its cause.
  ChildProcess run({kBin + "/dlaunch", "run", "--nnodes", "1", "--nproc-per-node", "2",
                    "--job-dir", job_dir, "--heartbeat", "1", "--grace", "2", "--stall-timeout",
                    "3", "--max-restarts", "1", "--", kBin + "/dlaunch-test-probe", "--report",
                    "--report-every", "0.2", "--stop-rank", "1", "--sleep", "120"},
                   tmp);
  auto code = run.Wait(seconds(120));
  ASSERT_TRUE(code.has_value()) << run.Stderr();
  EXPECT_EQ(*code, 1) << run.Stderr();
  const std::string events = ReadFile(job_dir + "/events.jsonl");
  EXPECT_FALSE(absl::StrContains(events, "\"node_lost\"")) << "lost while dumping stacks:\n" << events;
  EXPECT_FALSE(absl::StrContains(events, "\"node_dropped\"")) << events;
  EXPECT_TRUE(absl::StrContains(events, "\"round_started\"")) << "the node had no place in round 1:\n"
                                                              << events;
  const std::string summary = ReadFile(job_dir + "/summary.json");
  EXPECT_TRUE(absl::StrContains(summary, "\"root_cause\":{\"failure_class\":\"stall\",\"rank\":1"))
      << summary << "\n" << run.Stderr();
  EXPECT_TRUE(absl::StrContains(ReadFile(job_dir + "/stacks/rank-1.txt"), "stand-in gdb"))
      << run.Stderr();
  EXPECT_TRUE(WaitFor(
      [&] { return FindProcesses("DLAUNCH_JOB_ID=" + job_id, job_dir + "/token").empty(); },
      seconds(10)));
}

}  // namespace
}  // namespace dlaunch::testing
