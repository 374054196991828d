// The straggler score with real local nodes: a Python rank made slow by a longer sleep per step
// is named (straggler_detected, with its node, rank and ratio) and cleared once it is back at the
// others' pace; a run with no slow rank names nobody. dlaunch, its agents and the ranks are real
// processes; the ranks report through the dlaunch package (python/). docs/stragglers.md.
#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <string>

#include "absl/strings/match.h"
#include "launcher/jobdir/journal.h"
#include "tests/integration/test_process.h"

namespace dlaunch::testing {
namespace {

using std::chrono::seconds;

const std::string kBin = DLAUNCH_BIN_DIR;
const std::string kSrc = DLAUNCH_SOURCE_DIR;

class StragglerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    tmp_ = MakeTempDir();
    job_dir_ = tmp_ + "/" + tmp_.substr(tmp_.rfind('/') + 1);
    // Scored every 2 s, named after 3 slow intervals: the test takes seconds, not minutes. A
    // threshold of 1.5: on a machine shared with builds, a rank's steps can lag the others' by a
    // quarter for seconds.
    std::ofstream(tmp_ + "/job.yaml")
        << "command: [/usr/bin/python3, " << kSrc << "/tests/integration/slow_rank.py]\n"
        << "stragglers:\n  interval: 2s\n  intervals: 3\n  warmup_steps: 3\n  threshold: 1.5\n";
  }
  // 2 nodes x 2 ranks of slow_rank.py with `env`; its exit code.
  int Run(const std::vector<std::string>& env) {
    std::vector<std::string> full = env;
    full.push_back("PYTHONPATH=" + kSrc + "/python/src");
    run_ = std::make_unique<ChildProcess>(
        std::vector<std::string>{kBin + "/dlaunch", "run", tmp_ + "/job.yaml", "--nnodes", "2",
                                 "--nproc-per-node", "2", "--job-dir", job_dir_, "--heartbeat",
                                 "1", "--grace", "2", "--no-preflight"},
        tmp_, full);
    std::optional<int> code = run_->Wait(seconds(120));
    return code.value_or(-1);
  }
  std::vector<v1::JobEvent> Events() const {
    absl::StatusOr<EventJournal> j = ReadEventJournal(job_dir_);
    return j.ok() ? j->events : std::vector<v1::JobEvent>{};
  }
  std::string tmp_, job_dir_;
  std::unique_ptr<ChildProcess> run_;
};

TEST_F(StragglerTest, ASlowRankIsNamedWithItsFiguresAndClearedWhenItCatchesUp) {
  ASSERT_EQ(Run({"SLOW_RANK=3", "SLOW_FACTOR=3", "SLOW_S=14", "RUN_S=24"}), 0) << run_->Stderr();
  std::vector<v1::Straggler> detected, cleared;
  for (const v1::JobEvent& e : Events()) {
    if (e.has_straggler_detected()) detected.push_back(e.straggler_detected());
    if (e.has_straggler_cleared()) cleared.push_back(e.straggler_cleared());
  }
  ASSERT_FALSE(detected.empty()) << run_->Stderr();
  for (const v1::Straggler& d : detected) EXPECT_EQ(d.node_id(), 1) << run_->Stderr();
  const v1::Straggler& d = detected[0];
  EXPECT_EQ(d.node_id(), 1);
  EXPECT_EQ(d.rank(), 3);
  EXPECT_GT(d.ratio(), 1.8) << d.DebugString();   // slept 3x as long; Python's own time shared
  EXPECT_GT(d.step_s(), d.median_s());
  EXPECT_EQ(d.measure(), "wall time per step");
  EXPECT_EQ(d.policy(), "report");
  ASSERT_FALSE(cleared.empty()) << run_->Stderr();
  EXPECT_EQ(cleared[0].node_id(), 1);
  EXPECT_EQ(cleared[0].reason(), "back to the median's pace") << run_->Stderr();
  EXPECT_GT(cleared[0].waited_s(), 0);
  EXPECT_TRUE(absl::StrContains(run_->Stderr(), "straggler: node 1 (")) << run_->Stderr();
  // Counted in the goodput account as time waited.
  const std::string summary = ReadFile(job_dir_ + "/summary.json");
  EXPECT_TRUE(absl::StrContains(summary, "the straggler score")) << summary;
}

TEST_F(StragglerTest, ACleanRunNamesNobody) {
  ASSERT_EQ(Run({"RUN_S=14"}), 0) << run_->Stderr();
  for (const v1::JobEvent& e : Events()) {
    EXPECT_FALSE(e.has_straggler_detected()) << e.DebugString();
  }
  EXPECT_FALSE(absl::StrContains(run_->Stderr(), "straggler:")) << run_->Stderr();
}

}  // namespace
}  // namespace dlaunch::testing
