// The stacks of a hung plain Python rank (no PyTorch): dlaunch takes them with py-spy before it
// stops the rank, and the root-cause line and summary.json name the function and file:line it
// is stuck in, for a stall and for a hang at exit. py-spy is the build tree's (scripts/py-spy.sh,
// DLAUNCH_PY_SPY set by ctest); without it these tests are skipped.
#include <stdlib.h>
#include <unistd.h>

#include <string>

#include <gtest/gtest.h>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "tests/integration/test_process.h"

namespace dlaunch::testing {
namespace {

using std::chrono::seconds;

const std::string kBin = DLAUNCH_BIN_DIR;
const std::string kScript = std::string(DLAUNCH_SOURCE_DIR) + "/tests/integration/stuck_rank.py";

// The line of the script that carries `marker`: where the rank is stuck.
int LineOf(const std::string& marker) {
  int n = 0;
  for (absl::string_view line : absl::StrSplit(ReadFile(kScript), '\n')) {
    ++n;
    if (absl::StrContains(line, marker)) return n;
  }
  return -1;
}

class PythonStacksTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const char* py_spy = getenv("DLAUNCH_PY_SPY");
    if (py_spy == nullptr || access(py_spy, X_OK) != 0) {
      GTEST_SKIP() << "no py-spy at DLAUNCH_PY_SPY (" << (py_spy ? py_spy : "unset")
                   << "); scripts/py-spy.sh installs it";
    }
  }

  // Runs stuck_rank.py `mode` under dlaunch and checks that the job failed with `cls` on rank 0,
  // stuck in `function` at the line marked "stuck here (`mode`)".
  void RunAndCheck(const std::string& mode, const std::vector<std::string>& flags,
                   const std::string& cls, const std::string& function) {
    const std::string tmp = MakeTempDir();
    const std::string job_id = tmp.substr(tmp.rfind('/') + 1);
    const std::string job_dir = tmp + "/" + job_id;
    std::vector<std::string> argv = {kBin + "/dlaunch", "run", "--nnodes", "1", "--job-dir",
                                     job_dir, "--heartbeat", "1", "--grace", "2"};
    argv.insert(argv.end(), flags.begin(), flags.end());
    for (const std::string& a : {std::string("--"), std::string("/usr/bin/python3"), kScript, mode}) {
      argv.push_back(a);
    }
    ChildProcess run(argv, tmp);
    auto code = run.Wait(seconds(120));
    ASSERT_TRUE(code.has_value()) << run.Stderr();
    EXPECT_EQ(*code, 1) << run.Stderr();

    const int line = LineOf(absl::StrCat("stuck here (", mode, ")"));
    ASSERT_GT(line, 0);
    const std::string where = absl::StrCat(function, " (", kScript, ":", line, ")");
    EXPECT_TRUE(absl::StrContains(run.Stderr(), absl::StrCat("[dlaunch] root cause: ", cls, ": rank 0 ")))
        << run.Stderr();
    EXPECT_TRUE(absl::StrContains(run.Stderr(), absl::StrCat(", in ", where, "\n"))) << run.Stderr();

    const std::string summary = ReadFile(job_dir + "/summary.json");
    EXPECT_TRUE(absl::StrContains(summary, absl::StrCat("\"root_cause\":{\"class\":\"", cls, "\",\"rank\":0")))
        << summary;
    EXPECT_TRUE(absl::StrContains(
        summary, absl::StrCat("\"stuck_at\":{\"function\":\"", function, "\",\"file\":\"", kScript,
                              "\",\"line\":", line, ",\"source\":\"py-spy\",\"stacks\":\"stacks/rank-0.txt\"}")))
        << summary;
    const std::string stacks = ReadFile(job_dir + "/stacks/rank-0.txt");
    EXPECT_TRUE(absl::StrContains(stacks, "Python stacks of every thread, from py-spy")) << stacks;
    EXPECT_TRUE(absl::StrContains(stacks, "# stuck in " + where)) << stacks;
    EXPECT_TRUE(WaitFor(
        [&] { return FindProcesses("DLAUNCH_JOB_ID=" + job_id, job_dir + "/token").empty(); },
        seconds(10)));
  }
};

TEST_F(PythonStacksTest, AStalledPlainPythonRankIsNamedWithTheFunctionItIsStuckIn) {
  RunAndCheck("stall", {"--nproc-per-node", "1", "--stall-timeout", "3"}, "stall", "wait_for_data");
}

TEST_F(PythonStacksTest, ARankHungAtExitIsNamedWithTheThreadThatHoldsItUp) {
  RunAndCheck("exit-hang", {"--nproc-per-node", "2", "--exit-timeout", "3"}, "hang at exit",
              "drain_queue");
}

}  // namespace
}  // namespace dlaunch::testing
