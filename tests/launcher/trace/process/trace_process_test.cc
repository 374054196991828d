// A real job's timeline: `dlaunch run` of 2 local nodes x 1 rank of dlaunch-worker, then its
// trace.json parsed, and `dlaunch trace` on the job directory.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <map>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "launcher/jobdir/job_record.h"
#include "launcher/trace/goodput_view.h"
#include "launcher/trace/trace_builder.h"
#include "tests/integration/test_process.h"
#include "tests/launcher/trace/trace_checks.h"

namespace dlaunch::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;
using ::testing::SizeIs;

const std::string kBin = DLAUNCH_BIN_DIR;
constexpr int kSteps = 6;

size_t Count(const ParsedTrace& t, int pid, int tid, const std::string& name,
             const std::string& cat = "") {
  size_t n = 0;
  for (const ParsedEvent& e : t.events) {
    n += e.pid == pid && e.tid == tid && e.ph == "X" && absl::StartsWith(e.name, name) &&
         (cat.empty() || e.cat == cat);
  }
  return n;
}

// Runs argv to its end (bounded generously for a loaded 2-core machine); the exit code.
int RunToEnd(const std::vector<std::string>& argv, const std::string& dir, std::string* out) {
  ChildProcess p(argv, dir);
  std::optional<int> code = p.Wait(std::chrono::seconds(240));
  if (!code) {
    p.Signal(SIGKILL);
    code = p.Wait(std::chrono::seconds(10));
  }
  *out = p.Stdout() + p.Stderr();
  return code.value_or(-1);
}

TEST(TraceProcessTest, ARealJobWritesItsTimeline) {
  const std::string tmp = MakeTempDir();
  const std::string job_dir = tmp + "/traced-job";
  std::string output;
  const int code = RunToEnd({kBin + "/dlaunch",
                             "run",
                             "--nnodes",
                             "2",
                             "--nproc-per-node",
                             "1",
                             "--job-dir",
                             job_dir,
                             "--heartbeat",
                             "1",
                             "--grace",
                             "5",
                             "--",
                             kBin + "/dlaunch-worker",
                             "--model",
                             "mlp",
                             "--dataset",
                             "synthetic",
                             "--image-shape",
                             "1,8,8",
                             "--synthetic-samples",
                             "512",
                             "--steps",
                             std::to_string(kSteps),
                             "--batch-size",
                             "16",
                             "--report-every",
                             "1",
                             "--checkpoint-dir",
                             tmp + "/ckpt",
                             "--checkpoint-every",
                             "3",
                             "--store-timeout",
                             "120"},
                            tmp, &output);
  ASSERT_EQ(code, 0) << output;
  EXPECT_THAT(output, HasSubstr("[dlaunch] timeline: " + job_dir + "/trace.json"));

  ParsedTrace t = ParseTrace(ReadFile(job_dir + "/trace.json"));
  ASSERT_TRUE(t.ok) << t.error;
  EXPECT_THAT(StructureProblems(t), IsEmpty());
  EXPECT_FALSE(t.metadata.fields().at("sampled").bool_value());

  // Tracks: the launcher, each node, each rank (rank r runs on node r here).
  EXPECT_EQ(t.TrackName(kLauncherPid, -1), "launcher");
  for (int r = 0; r < 2; ++r) {
    SCOPED_TRACE(absl::StrCat("rank ", r));
    const int pid = NodePid(r);
    EXPECT_THAT(t.TrackName(pid, -1), HasSubstr(absl::StrCat("node ", r)));
    EXPECT_EQ(t.TrackName(pid, RankTid(r)), absl::StrCat("rank ", r));
    EXPECT_EQ(t.TrackName(pid, ReportTid(r)), absl::StrCat("rank ", r, " reports"));
    // The rank's process, its steps and their phases, and its reports.
    EXPECT_EQ(Count(t, pid, RankTid(r), absl::StrCat("rank ", r, ": succeeded, exit code 0")), 1u);
    EXPECT_EQ(Count(t, pid, RankTid(r), "step ", "step"), static_cast<size_t>(kSteps));
    for (const char* phase : {"data", "forward", "backward + allreduce", "optimizer"}) {
      EXPECT_EQ(Count(t, pid, RankTid(r), phase), static_cast<size_t>(kSteps)) << phase;
    }
    EXPECT_EQ(Count(t, pid, RankTid(r), "evaluate"), 1u);
    // The agent sends what its ranks reported since its last heartbeat as one report.
    std::vector<const ParsedEvent*> reports;
    for (const ParsedEvent& e : t.events) {
      if (e.pid == pid && e.tid == ReportTid(r) && e.cat == "report") reports.push_back(&e);
    }
    ASSERT_FALSE(reports.empty());
    EXPECT_EQ(reports.back()->args.fields().at("last_step").number_value(), kSteps);
  }
  EXPECT_EQ(Count(t, NodePid(0), RankTid(0), "checkpoint"), 2u);  // steps 3 and 6, rank 0 writes

  // Launcher events.
  EXPECT_THAT(t.Named("job succeeded", "X"), SizeIs(1));
  EXPECT_THAT(t.Named("rendezvous", "X"), SizeIs(1));
  EXPECT_THAT(t.Named("stop", "X"), SizeIs(1));
  EXPECT_THAT(t.Named("all workers started", "i"), SizeIs(1));
  EXPECT_THAT(t.Named("job finished: succeeded", "i"), SizeIs(1));
  EXPECT_THAT(t.Named("node joined", "i"), SizeIs(2));

  // `dlaunch trace` prints where it is and the time per rank, and rebuilds a missing trace.
  std::string summary;
  ASSERT_EQ(RunToEnd({kBin + "/dlaunch", "trace", job_dir}, tmp, &summary), 0) << summary;
  EXPECT_THAT(summary, HasSubstr("trace: " + job_dir + "/trace.json"));
  EXPECT_THAT(summary, HasSubstr("slowest rank: "));
  EXPECT_THAT(summary, Not(HasSubstr("built ")));
  ASSERT_EQ(::unlink((job_dir + "/trace.json").c_str()), 0);
  ASSERT_EQ(RunToEnd({kBin + "/dlaunch", "trace", job_dir}, tmp, &summary), 0) << summary;
  EXPECT_THAT(summary, HasSubstr("built " + job_dir + "/trace.json"));
  EXPECT_THAT(StructureProblems(ParseTrace(ReadFile(job_dir + "/trace.json"))), IsEmpty());
  if (!HasFailure()) std::filesystem::remove_all(tmp);  // kept for a look when it failed
}

// The goodput account of a real job with one crash and a restart from a checkpoint: 2 local
// nodes x 2 ranks of dlaunch-worker, rank 1 killing itself after step 8 in round 0 only. The
// account is printed, is in summary.json, adds up, and is drawn on the trace's goodput track.
TEST(TraceProcessTest, ACrashAndRestartIsAccountedInSummaryJson) {
  const std::string tmp = MakeTempDir();
  const std::string job_dir = tmp + "/goodput-job";
  const std::string worker = absl::StrCat(
      kBin, "/dlaunch-worker --model mlp --dataset synthetic --image-shape 1,8,8 ",
      "--synthetic-samples 512 --steps 12 --batch-size 16 --report-every 1 --checkpoint-dir ",
      tmp, "/ckpt --checkpoint-every 5 --store-timeout 120");
  const std::string script = absl::StrCat(
      "if [ \"$RANK\" = 1 ] && [ \"$DLAUNCH_ROUND\" = 0 ]; then exec ", worker,
      " --fail-at-step 8; else exec ", worker, "; fi");
  std::string output;
  const int code = RunToEnd({kBin + "/dlaunch", "run", "--nnodes", "2", "--nproc-per-node", "2",
                             "--job-dir", job_dir, "--heartbeat", "1", "--grace", "5",
                             "--max-restarts", "1", "--", "sh", "-c", script},
                            tmp, &output);
  ASSERT_EQ(code, 0) << output;
  EXPECT_THAT(output, HasSubstr("[dlaunch] goodput "));
  EXPECT_THAT(output, HasSubstr("[dlaunch]   round 1: "));

  absl::StatusOr<std::map<std::string, std::string>> summary =
      ParseJsonObjectFields(ReadFile(job_dir + "/summary.json"));
  ASSERT_TRUE(summary.ok()) << summary.status();
  ASSERT_TRUE(summary->count("goodput")) << ReadFile(job_dir + "/summary.json");
  absl::StatusOr<v1::GoodputAccount> a = ParseGoodputJson(summary->at("goodput"));
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_TRUE(a->finished());
  EXPECT_NEAR(GoodputSum(a->split()), a->wall_s(), 1e-6);
  ASSERT_EQ(a->rounds_size(), 2) << summary->at("goodput");
  for (const v1::RoundGoodput& r : a->rounds()) {
    EXPECT_NEAR(GoodputSum(r.split()), r.wall_s(), 1e-6) << "round " << r.round();
  }
  EXPECT_THAT(a->rounds(0).ended_by(), HasSubstr("failure"));
  EXPECT_EQ(a->rounds(1).ended_by(), "finished");
  EXPECT_EQ(a->rounds(1).resumed_at_step(), 5);  // the checkpoint of step 5
  EXPECT_GE(a->rounds(1).redone_steps(), 1);     // some of steps 6..8 ran twice
  EXPECT_LE(a->rounds(1).redone_steps(), 3);
  EXPECT_GT(a->split().productive().seconds(), 0);
  EXPECT_GT(a->split().startup().seconds(), 0);
  EXPECT_GT(a->split().failure().seconds(), 0);
  EXPECT_EQ(a->split().checkpoint().basis(), v1::MEASURED);  // from the step trace
  EXPECT_GT(a->split().checkpoint().seconds(), 0);
  EXPECT_GT(a->goodput(), 0);
  EXPECT_LT(a->goodput(), 1);

  ParsedTrace t = ParseTrace(ReadFile(job_dir + "/trace.json"));
  ASSERT_TRUE(t.ok) << t.error;
  EXPECT_THAT(StructureProblems(t), IsEmpty());
  EXPECT_EQ(Count(t, kLauncherPid, kGoodputTid, "restart start-up", "goodput"), 1u);
  EXPECT_EQ(Count(t, kLauncherPid, kGoodputTid, "training", "goodput"), 2u);
  if (!HasFailure()) std::filesystem::remove_all(tmp);
}

// Past DLAUNCH_TRACE_AT_EXIT_MB of journal (32 MB by default, 0 here) the launcher exits without
// reading it and says how to build the timeline; `dlaunch trace` then does.
TEST(TraceProcessTest, ABigJournalIsLeftToDlaunchTrace) {
  const std::string tmp = MakeTempDir();
  const std::string job_dir = tmp + "/big-job";
  ASSERT_EQ(::setenv("DLAUNCH_TRACE_AT_EXIT_MB", "0", 1), 0);
  std::string output;
  const int code = RunToEnd({kBin + "/dlaunch", "run", "--nnodes", "2", "--job-dir", job_dir,
                             "--heartbeat", "1", "--", "true"},
                            tmp, &output);
  ::unsetenv("DLAUNCH_TRACE_AT_EXIT_MB");
  ASSERT_EQ(code, 0) << output;
  EXPECT_THAT(output, HasSubstr("[dlaunch] timeline: not built at exit, the journal holds "));
  EXPECT_THAT(output, HasSubstr("(more than 0 MB); `dlaunch trace " + job_dir + "` builds it"));
  EXPECT_FALSE(std::filesystem::exists(job_dir + "/trace.json"));

  std::string summary;
  ASSERT_EQ(RunToEnd({kBin + "/dlaunch", "trace", job_dir}, tmp, &summary), 0) << summary;
  EXPECT_THAT(summary, HasSubstr("built " + job_dir + "/trace.json"));
  EXPECT_THAT(StructureProblems(ParseTrace(ReadFile(job_dir + "/trace.json"))), IsEmpty());
  if (!HasFailure()) std::filesystem::remove_all(tmp);
}

}  // namespace
}  // namespace dlaunch::testing
