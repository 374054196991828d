// A hung rank's stacks (RankStacks from its agent) name where it is stuck in the job's final
// root-cause line and in summary.json; stacks of other ranks, or without a frame, change nothing.
#include <signal.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "launcher/run/job_state.h"
#include "tests/testing/job_actions.h"

namespace dlaunch {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

v1::AgentMessage Stacks(int rank, const std::string& function, int line) {
  v1::AgentMessage m;
  m.mutable_stacks()->set_rank(rank);
  m.mutable_stacks()->set_path("stacks/rank-" + std::to_string(rank) + ".txt");
  m.mutable_stacks()->set_source("py-spy");
  if (!function.empty()) {
    m.mutable_stacks()->mutable_stuck_at()->set_function(function);
    m.mutable_stacks()->mutable_stuck_at()->set_file("/home/u/train.py");
    m.mutable_stacks()->mutable_stuck_at()->set_line(line);
  }
  return m;
}

v1::AgentMessage Step(int rank, int step) {
  v1::AgentMessage m;
  v1::WorkerReport* r = m.mutable_heartbeat()->add_reports();
  r->set_rank(rank);
  r->set_step(step);
  return m;
}

// One node with two ranks; rank 1 stalls at t=5 (limit 3 s), then `stacks` arrive, the ranks
// stop and the job ends; what its end printed and wrote.
struct Ending {
  std::string events;  // what the stacks added to events.jsonl
  std::string said;    // and printed
  std::string printed;
  std::string summary;
};
Ending StallThen(const std::vector<v1::AgentMessage>& stacks) {
  JobConfig c = TestJobConfig(1);
  c.progress.stall_timeout_s = 3;
  JobState s(c);
  s.OnStarted({"a"}, 0);
  s.OnRendezvousClosed(OneNodeRound(2), 1);
  s.OnSessionOpened(0, 100, 1);
  s.OnAgentMessage(0, Step(0, 1), 2);
  s.OnAgentMessage(0, Step(1, 1), 2);
  s.OnAgentMessage(0, Step(0, 2), 3);
  EXPECT_TRUE(Has<SendStop>(s.OnHealthCheck(5)));
  JobActions recorded;
  for (const v1::AgentMessage& m : stacks) Append(recorded, s.OnAgentMessage(0, m, 6));
  JobActions end;
  for (int rank : {0, 1}) {
    Append(end, s.OnAgentMessage(0, WorkerMessage(0, rank, v1::WorkerEvent::STOPPED, 0, SIGTERM), 6.5));
  }
  Append(end, s.OnSessionEnded(0, 100, 7));
  Append(end, s.OnLauncherExited(0, 0, {}, 7));
  auto summary = All<WriteSummary>(end);
  return {Events(recorded), Printed(recorded, true), Printed(end, true), summary.empty() ? "" : summary[0].json};
}

TEST(JobStateStacksTest, TheStalledRanksFrameIsInTheRootCauseAndTheSummary) {
  const Ending e = StallThen({Stacks(1, "train_step", 42)});
  EXPECT_EQ(e.said, "[dlaunch] rank 1 is stuck in train_step (/home/u/train.py:42) "
                    "(stacks/rank-1.txt, from py-spy)\n");
  // The same root cause, better said: not announced again as a new one.
  EXPECT_THAT(e.printed, Not(HasSubstr("is a consequence")));
  EXPECT_THAT(e.printed, HasSubstr("[dlaunch] root cause: stall: rank 1 (local 1, node 0, host n0): "
                                   "no progress for 3.0 s (limit 3.0 s), last step 1, in "
                                   "train_step (/home/u/train.py:42)\n"));
  EXPECT_THAT(e.summary, HasSubstr("\"stuck_at\":{\"function\":\"train_step\",\"file\":"
                                   "\"/home/u/train.py\",\"line\":42,\"source\":\"py-spy\","
                                   "\"stacks\":\"stacks/rank-1.txt\"}"));
  EXPECT_THAT(e.summary, HasSubstr("\"description\":\"stall: rank 1 (local 1, node 0, host n0): no "
                                   "progress for 3.0 s (limit 3.0 s), last step 1, in train_step "
                                   "(/home/u/train.py:42)\""));
  EXPECT_THAT(e.events, HasSubstr("\"stacks_recorded\":{\"rank\":1,\"node_id\":0,\"host\":\"n0\","
                                  "\"path\":\"stacks/rank-1.txt\",\"source\":\"py-spy\","
                                  "\"stuck_function\":\"train_step\",\"stuck_file\":\"/home/u/train.py\","
                                  "\"stuck_line\":42}"));
}

TEST(JobStateStacksTest, StacksOfAnotherRankOrWithoutAFrameChangeNothing) {
  const Ending e = StallThen({Stacks(0, "train_step", 42), Stacks(1, "", 0)});
  EXPECT_THAT(e.printed, HasSubstr("[dlaunch] root cause: stall: rank 1 (local 1, node 0, host n0): "
                                   "no progress for 3.0 s (limit 3.0 s), last step 1\n"));
  EXPECT_THAT(e.summary, Not(HasSubstr("stuck_at")));
  EXPECT_THAT(e.summary, Not(HasSubstr("train_step")));
}

}  // namespace
}  // namespace dlaunch
