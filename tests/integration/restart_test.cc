// Restart rounds end to end: the real dlaunch and dlaunch-agents on loopback, and a shell worker
// that fails on purpose in chosen rounds. Each test checks the job's exit code, what its first
// lines and summary say, events.jsonl, and that nothing of the job is left running.
#include <sys/stat.h>

#include <map>
#include <set>

#include <gtest/gtest.h>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/liveness_policy.h"
#include "tests/integration/test_process.h"

namespace dlaunch::testing {
namespace {

using std::chrono::seconds;

const std::string kBin = DLAUNCH_BIN_DIR;

// Every rank writes "RESTART_COUNT MASTER_PORT DLAUNCH_ROUND" to out/rank-R.round-N, then runs
// `action` (shell), then sleeps `linger` seconds and exits 0. `action` sees $RANK and
// $DLAUNCH_ROUND.
std::string Worker(const std::string& out, const std::string& action, const std::string& linger) {
  return absl::StrCat(
      "echo \"$TORCHELASTIC_RESTART_COUNT $MASTER_PORT $DLAUNCH_ROUND $TORCHELASTIC_MAX_RESTARTS\" "
      "> ", out, "/rank-$RANK.round-$DLAUNCH_ROUND; ", action, "; sleep ", linger);
}

// Shell: waits (up to 20 s) until `n` ranks wrote their file of round 0, so a failure injected
// after it cannot stop a rank before that rank has recorded what it saw.
std::string AfterRoundZeroWritten(const std::string& out, int n) {
  return absl::StrCat("i=0; while [ $(ls ", out, " | grep -c round-0) -lt ", n,
                      " ] && [ $i -lt 400 ]; do sleep 0.05; i=$((i+1)); done");
}

class RestartTest : public ::testing::Test {
 protected:
  void SetUp() override {
    tmp_ = MakeTempDir();
    job_id_ = tmp_.substr(tmp_.rfind('/') + 1);
    job_dir_ = tmp_ + "/" + job_id_;
    out_ = tmp_ + "/out";
    mkdir(out_.c_str(), 0755);
  }
  void TearDown() override {
    // Nothing of the job is left, whatever the test saw.
    EXPECT_TRUE(WaitFor([&] { return JobProcesses().empty(); }, seconds(10)))
        << JobProcesses().size() << " process(es) of the job left";
  }

  std::unique_ptr<ChildProcess> Start(int nodes, int nproc, const std::string& script,
                                      const std::vector<std::string>& flags) {
    std::vector<std::string> argv = {kBin + "/dlaunch", "run", "--nnodes", std::to_string(nodes),
                                     "--nproc-per-node", std::to_string(nproc), "--job-dir", job_dir_,
                                     "--heartbeat", "1", "--grace", "2"};
    argv.insert(argv.end(), flags.begin(), flags.end());
    argv.insert(argv.end(), {"--", "/bin/sh", "-c", script});
    return std::make_unique<ChildProcess>(argv, tmp_);
  }

  std::vector<pid_t> JobProcesses() const {
    return FindProcesses("DLAUNCH_JOB_ID=" + job_id_, job_dir_ + "/token");
  }
  std::string Events() const { return ReadFile(job_dir_ + "/events.jsonl"); }
  std::string Summary() const { return ReadFile(job_dir_ + "/summary.json"); }
  // "RESTART_COUNT MASTER_PORT ROUND MAX_RESTARTS" as rank `rank` saw it in `round`.
  std::vector<std::string> Seen(int rank, int round) const {
    std::string text = ReadFile(absl::StrCat(out_, "/rank-", rank, ".round-", round));
    return absl::StrSplit(absl::StripTrailingAsciiWhitespace(text), ' ', absl::SkipEmpty());
  }

  // When rank `rank` wrote its file of `round` (Unix seconds), or -1.
  double WrittenAt(int rank, int round) const {
    struct stat st {};
    if (stat(absl::StrCat(out_, "/rank-", rank, ".round-", round).c_str(), &st) != 0) return -1;
    return static_cast<double>(st.st_mtim.tv_sec) + st.st_mtim.tv_nsec / 1e9;
  }

  std::string tmp_, job_id_, job_dir_, out_;
};

TEST_F(RestartTest, AWorkerKilledInRoundZeroIsRestartedAndTheJobSucceeds) {
  // Rank 1 kills itself in round 0; the others would outlive it, so they are stopped.
  auto run = Start(2, 2,
                   Worker(out_,
                          absl::StrCat("if [ $DLAUNCH_ROUND = 0 ] && [ $RANK = 1 ]; then ",
                                       AfterRoundZeroWritten(out_, 4), "; kill -9 $$; fi"),
                          "$((3 - 3 * DLAUNCH_ROUND)).5"),
                   {"--max-restarts", "2"});
  auto code = run->Wait(seconds(60));
  ASSERT_TRUE(code.has_value()) << "dlaunch run did not finish\n" << run->Stderr();
  ASSERT_EQ(*code, 0) << run->Stdout() << run->Stderr();
  const std::string err = run->Stderr() + run->Stdout();
  EXPECT_NE(err.find("error: worker crash: rank 1 (local 1, node 0"), std::string::npos) << err;
  EXPECT_NE(err.find("restarting: round 1 (restart 1 of 2)"), std::string::npos) << err;
  EXPECT_NE(err.find("round 1 running: 2 nodes, 4 workers; restart took"), std::string::npos) << err;
  EXPECT_NE(err.find("1 of 2 restart(s) used"), std::string::npos) << err;
  for (int rank = 0; rank < 4; ++rank) {
    SCOPED_TRACE(absl::StrCat("rank ", rank));
    std::vector<std::string> r0 = Seen(rank, 0), r1 = Seen(rank, 1);
    ASSERT_EQ(r0.size(), 4u);
    ASSERT_EQ(r1.size(), 4u);
    EXPECT_EQ(r0[0], "0");
    EXPECT_EQ(r1[0], "1") << "TORCHELASTIC_RESTART_COUNT in the new round";
    EXPECT_EQ(r1[2], "1") << "DLAUNCH_ROUND";
    EXPECT_EQ(r1[3], "2") << "TORCHELASTIC_MAX_RESTARTS";
    EXPECT_NE(r0[1], r1[1]) << "a new MASTER_PORT each round";
  }
  EXPECT_NE(Summary().find("\"restarts\":1"), std::string::npos) << Summary();
  const std::string events = Events();
  EXPECT_NE(events.find("\"decision\":\"restart\""), std::string::npos) << events;
  EXPECT_NE(events.find("\"round\":1,\"round_started\":{"), std::string::npos) << events;
  EXPECT_NE(events.find("\"restart_s\":"), std::string::npos) << events;
}

TEST_F(RestartTest, ASpentBudgetEndsTheJobNamingTheRootCause) {
  auto run = Start(2, 1,
                   Worker(out_, "if [ $RANK = 1 ]; then echo 'bad batch' >&2; exit 3; fi", "30"),
                   {"--max-restarts", "1"});
  auto code = run->Wait(seconds(60));
  ASSERT_TRUE(code.has_value()) << "dlaunch run did not finish\n" << run->Stderr();
  EXPECT_EQ(*code, 1) << run->Stdout() << run->Stderr();
  const std::string err = run->Stderr();
  EXPECT_NE(err.find("not restarting: restart budget spent (1 of 1 used)"), std::string::npos) << err;
  EXPECT_NE(err.find("root cause: worker crash: rank 1 (local 0, node 1"), std::string::npos) << err;
  EXPECT_NE(err.find("exited with code 3"), std::string::npos) << err;
  EXPECT_EQ(Seen(1, 1).size(), 4u) << "round 1 ran";
  EXPECT_TRUE(Seen(1, 2).empty()) << "no round 2";
  EXPECT_NE(Summary().find("\"not_restarted\":\"restart budget spent (1 of 1 used)\""),
            std::string::npos) << Summary();
}

TEST_F(RestartTest, ACrashLoopEndsTheJobBeforeTheBudget) {
  // restarts.crash_loop defaults to 3: the third identical failure with no checkpoint ends it.
  auto run = Start(1, 2, Worker(out_, "if [ $RANK = 0 ]; then exit 4; fi", "30"),
                   {"--max-restarts", "10"});
  auto code = run->Wait(seconds(90));
  ASSERT_TRUE(code.has_value()) << "dlaunch run did not finish\n" << run->Stderr();
  EXPECT_EQ(*code, 1) << run->Stdout() << run->Stderr();
  const std::string err = run->Stderr();
  EXPECT_NE(err.find("not restarting: crash loop: the same failure 3 times in a row with no new "
                     "checkpoint"), std::string::npos) << err;
  EXPECT_NE(err.find("2 of 10 restart(s) used"), std::string::npos) << err;
  EXPECT_NE(Events().find("\"decision\":\"crash loop\""), std::string::npos) << Events();
}

TEST_F(RestartTest, ASpareTakesTheKilledAgentsPlace) {
  // Rank 2 (node 1) kills its own agent in round 0 once the spare is in the job (a spare that
  // joins after the decision is too late for it), noting when; the spare replaces node 1.
  const std::string spare_in = absl::StrCat(
      "i=0; while ! grep -q spare_joined ", job_dir_, "/events.jsonl 2>/dev/null && [ $i -lt 400 ];"
      " do sleep 0.05; i=$((i+1)); done");
  auto run = Start(2, 2,
                   Worker(out_,
                          absl::StrCat("if [ $DLAUNCH_ROUND = 0 ] && [ $RANK = 2 ]; then ",
                                       AfterRoundZeroWritten(out_, 4), "; ", spare_in,
                                       "; date +%s.%N > ", out_, "/killed-at; kill -9 $PPID; fi"),
                          "$((3 - 3 * DLAUNCH_ROUND)).5"),
                   {"--max-restarts", "1", "--spares", "1"});
  auto code = run->Wait(seconds(60));
  ASSERT_TRUE(code.has_value()) << "dlaunch run did not finish\n" << run->Stderr();
  ASSERT_EQ(*code, 0) << run->Stdout() << run->Stderr();
  const std::string all = run->Stdout() + run->Stderr();
  EXPECT_NE(all.find("spare joined"), std::string::npos) << all;
  EXPECT_NE(all.find("agent lost: node 1"), std::string::npos) << all;
  EXPECT_NE(all.find("takes a lost node's place"), std::string::npos) << all;
  EXPECT_NE(all.find("round 1 running: 2 nodes, 4 workers"), std::string::npos) << all;
  EXPECT_NE(Events().find("\"spare_promoted\":{"), std::string::npos) << Events();
  for (int rank = 0; rank < 4; ++rank) EXPECT_EQ(Seen(rank, 1).size(), 4u) << "rank " << rank;
  // The killed agent's workers are surely gone a grace (2 s) and the kill slack after its
  // session ended, which was after the kill; round 1 was sent up to 1 s ahead of that, and none
  // of its workers started before it.
  const double gone_after_s =
      2 + std::chrono::duration<double>(LivenessPolicy::kKillSlack).count();
  double killed_s = 0;
  ASSERT_TRUE(absl::SimpleAtod(
      absl::StripAsciiWhitespace(ReadFile(out_ + "/killed-at")), &killed_s));
  for (int rank = 0; rank < 4; ++rank) {
    EXPECT_GE(WrittenAt(rank, 1), killed_s + gone_after_s - 0.02)
        << "rank " << rank << " of round 1 started " << WrittenAt(rank, 1) - killed_s
        << " s after the kill\n" << Events() << all;
  }
}

}  // namespace
}  // namespace dlaunch::testing
