// restarts.warm_start end to end: `dlaunch run` with real agents and a torch script in Debian's
// Python (torch 1.13). A rank killed in round 0 is replaced in round 1 by ranks forked from each
// node's warm process; their exit code reaches the launcher, and nothing of the job is left after it.
// Skipped where /usr/bin/python3 cannot import torch.
#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/integration/test_process.h"

namespace dlaunch::testing {
namespace {

using std::chrono::seconds;
using ::testing::HasSubstr;

const std::string kBin = DLAUNCH_BIN_DIR;

// Round 0: rank 1 waits until both nodes' warm processes serve (their line in the agents'
// logs), then SIGKILLs itself. Round 1: every rank records its arguments and exits 4.
constexpr char kScript[] = R"(import os, signal, sys, time
import torch
import torch.distributed
rank, round_ = int(os.environ["RANK"]), int(os.environ["DLAUNCH_ROUND"])
logs = os.path.join(os.environ["DLAUNCH_JOB_DIR"], "logs")
if round_ == 0:
    if rank != 1:
        time.sleep(120)
    def warm(node):
        try:
            return "serving" in open(os.path.join(logs, f"agent-{node}.log")).read()
        except OSError:
            return False
    while not (warm(0) and warm(1)):
        time.sleep(0.05)
    os.kill(os.getpid(), signal.SIGKILL)
with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "round1"), "a") as f:
    f.write(f"{rank} {sys.argv[1:]}\n")
sys.exit(4)
)";

TEST(WarmRestartProcessTest, AKilledRankIsReplacedByWarmRanksAndNothingIsLeft) {
  if (!WhyPythonCannotImport("/usr/bin/python3", "torch", "/").empty()) {
    GTEST_SKIP() << "/usr/bin/python3 cannot import torch";
  }
  const std::string tmp = MakeTempDir();
  const std::string job_id = tmp.substr(tmp.rfind('/') + 1);
  const std::string job_dir = tmp + "/" + job_id;
  std::ofstream(tmp + "/train.py") << kScript;
  std::ofstream(tmp + "/job.yaml")
      << "name: warm\nnodes: 2\nnproc_per_node: 1\n"
      << "command: [/usr/bin/python3, -u, train.py, --flag, \"a b\"]\n"
      << "workdir: " << tmp << "\nmax_restarts: 1\n"
      << "restarts:\n  warm_start: on\n"
      << "heartbeat:\n  interval: 1s\nstop:\n  grace: 2s\ncpus:\n  binding: none\n";
  ChildProcess run({kBin + "/dlaunch", "run", tmp + "/job.yaml", "--job-dir", job_dir,
                    "--no-preflight"},
                   tmp);
  auto code = run.Wait(seconds(300));
  ASSERT_TRUE(code.has_value()) << "dlaunch run did not finish\n" << run.Stderr();
  // The warm ranks' exit code reaches the launcher, which names it.
  EXPECT_EQ(*code, 1) << run.Stdout() << run.Stderr();
  EXPECT_THAT(run.Stdout() + run.Stderr(), HasSubstr("exited with code 4"));
  const std::string logs = ReadFile(job_dir + "/logs/agent-0.log") +
                           ReadFile(job_dir + "/logs/agent-1.log") + run.Stdout() + run.Stderr();
  // Round 0 started cold (the warm processes were importing), round 1 warm on both nodes.
  EXPECT_THAT(logs, HasSubstr("cold: the warm process is not warm yet start"));
  EXPECT_THAT(logs, HasSubstr("round 1] rank 0 (local 0) pid"));
  int warm = 0;
  for (size_t at = logs.find("; warm start"); at != std::string::npos;
       at = logs.find("; warm start", at + 1)) {
    ++warm;
  }
  EXPECT_EQ(warm, 2) << logs;
  // The journal says the same on each started event: round 0's two cold, round 1's two warm.
  const std::string journal = ReadFile(job_dir + "/events.jsonl");
  auto count = [&journal](const std::string& text) {
    int n = 0;
    for (size_t at = journal.find(text); at != std::string::npos; at = journal.find(text, at + 1)) {
      ++n;
    }
    return n;
  };
  EXPECT_EQ(count(R"("start_path":"warm")"), 2) << journal;
  EXPECT_EQ(count(R"("start_path":"cold: the warm process is not warm yet")"), 2) << journal;
  const std::string round1 = ReadFile(tmp + "/round1");
  EXPECT_THAT(round1, HasSubstr("['--flag', 'a b']")) << round1;
  // Nothing of the job is left: no rank, no warm process (it has the ranks' DLAUNCH_JOB_ID).
  EXPECT_TRUE(FindProcesses("DLAUNCH_JOB_ID=" + job_id, "").empty());
}

}  // namespace
}  // namespace dlaunch::testing
