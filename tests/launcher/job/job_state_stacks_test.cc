// A hung rank's stacks (RankStacks from its agent) name where it is stuck in the job's final
// root-cause line and in summary.json; stacks of other ranks, or without a frame, change nothing.
// After a stall every rank's stacks are taken, and the rank outside a collective is named as
// the cause, not the peer that fell silent first while it waited for it.
#include <signal.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "launcher/job/job_state.h"
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
  v1::JobSummary summary;
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
  return {Events(recorded), Printed(recorded, true), Printed(end, true),
          summary.empty() ? v1::JobSummary() : summary[0].summary};
}

TEST(JobStateStacksTest, TheStalledRanksFrameIsInTheRootCauseAndTheSummary) {
  const Ending e = StallThen({Stacks(1, "train_step", 42)});
  EXPECT_EQ(e.said, "[dlaunch] rank 1: stopped in train_step (/home/u/train.py:42), outside any "
                    "collective (stacks/rank-1.txt, from py-spy)\n");
  // The same root cause, better said: not announced again as a new one.
  EXPECT_THAT(e.printed, Not(HasSubstr("is a consequence")));
  EXPECT_THAT(e.printed, HasSubstr("[dlaunch] root cause: stall: rank 1 (local 1, node 0, host n0): "
                                   "no progress for 3.0 s (limit 3.0 s), last step 1, in "
                                   "train_step (/home/u/train.py:42)\n"));
  ASSERT_TRUE(e.summary.root_cause().has_stuck_at());
  const v1::StuckAt& at = e.summary.root_cause().stuck_at();
  EXPECT_EQ(at.function(), "train_step");
  EXPECT_EQ(at.file(), "/home/u/train.py");
  EXPECT_EQ(at.line(), 42);
  EXPECT_EQ(at.source(), "py-spy");
  EXPECT_EQ(at.stacks(), "stacks/rank-1.txt");
  EXPECT_EQ(e.summary.root_cause().description(),
            "stall: rank 1 (local 1, node 0, host n0): no progress for 3.0 s (limit 3.0 s), last "
            "step 1, in train_step (/home/u/train.py:42)");
  EXPECT_THAT(e.events, HasSubstr("\"stacks_recorded\":{\"rank\":1,\"node_id\":0,\"host\":\"n0\","
                                  "\"path\":\"stacks/rank-1.txt\",\"source\":\"py-spy\","
                                  "\"stuck_function\":\"train_step\",\"stuck_file\":\"/home/u/train.py\","
                                  "\"stuck_line\":42,\"waiting_function\":\"\""));
}

TEST(JobStateStacksTest, StacksOfAnotherRankOrWithoutAFrameChangeNothing) {
  const Ending e = StallThen({Stacks(0, "train_step", 42), Stacks(1, "", 0)});
  EXPECT_THAT(e.printed, HasSubstr("[dlaunch] root cause: stall: rank 1 (local 1, node 0, host n0): "
                                   "no progress for 3.0 s (limit 3.0 s), last step 1\n"));
  EXPECT_EQ(e.summary.root_cause().rank(), 1);
  EXPECT_FALSE(e.summary.root_cause().has_stuck_at());
  EXPECT_THAT(e.summary.root_cause().description(), Not(HasSubstr("train_step")));
}

// Two nodes of two ranks. Rank 0 reports last at t=2, the others at t=3; at t=6 rank 0 is over
// the 3 s limit first and is the suspect, the others silent 3 s too.
class StallInquiryJobTest : public ::testing::Test {
 protected:
  StallInquiryJobTest() : s_(Config()) {
    s_.OnStarted({"a", "b"}, 0);
    RoundResult r;
    r.nodes = {TestNode(0, 2), TestNode(1, 2)};
    r.assignments = {{0, 0, 2}, {1, 2, 2}};
    r.world_size = 4;
    s_.OnRendezvousClosed(r, 1);
    s_.OnSessionOpened(0, 100, 1);
    s_.OnSessionOpened(1, 101, 1);
    s_.OnAgentMessage(0, Step(0, 1), 2);
    for (int rank : {1, 2, 3}) s_.OnAgentMessage(rank / 2, Step(rank, 1), 3);
    for (double t : {4.0, 5.0, 6.0}) {  // heartbeats without reports: both nodes alive
      for (int node : {0, 1}) {
        v1::AgentMessage beat;
        beat.mutable_heartbeat();
        s_.OnAgentMessage(node, beat, t);
      }
    }
    detected_ = s_.OnHealthCheck(6.1);
  }
  static JobConfig Config() {
    JobConfig c = TestJobConfig(2);
    c.progress.stall_timeout_s = 3;
    c.stack_dump_s = 4;
    return c;
  }
  static v1::AgentMessage Waits(int rank) {
    v1::AgentMessage m = Stacks(rank, "train", 18);
    v1::StackFrame* w = m.mutable_stacks()->mutable_waiting_in();
    w->set_function("backward");
    w->set_file("/usr/lib/python3/dist-packages/torch/autograd/__init__.py");
    w->set_line(197);
    return m;
  }
  // Every rank stops and both agents leave: the job's end.
  JobActions End(double at) {
    JobActions end;
    for (int rank : {0, 1, 2, 3}) {
      Append(end, s_.OnAgentMessage(rank / 2, WorkerMessage(0, rank, v1::WorkerEvent::STOPPED, 0, SIGTERM), at));
    }
    for (int node : {0, 1}) {
      Append(end, s_.OnSessionEnded(node, 100 + node, at));
      Append(end, s_.OnLauncherExited(node, 0, {}, at));
    }
    return end;
  }
  JobState s_;
  JobActions detected_;
};

TEST_F(StallInquiryJobTest, EveryRanksStacksAreAskedForAndTheSuspectIsNotNamedYet) {
  auto stops = All<SendStop>(detected_);
  ASSERT_EQ(stops.size(), 1u);
  EXPECT_THAT(stops[0].dump_ranks, ::testing::ElementsAre(0, 1, 2, 3));
  EXPECT_THAT(stops[0].nodes, ::testing::UnorderedElementsAre(0, 1));
  const std::string said = Printed(detected_, true);
  EXPECT_THAT(said, HasSubstr("[dlaunch] stall: rank 0: no progress for 4.1 s (limit 3.0 s), last "
                              "step 1; every other rank silent for at least 3.1 s; taking the "
                              "stacks of 4 rank(s) on 2 node(s) (up to 4 s)"));
  EXPECT_THAT(said, Not(HasSubstr("error:")));
  EXPECT_THAT(said, Not(HasSubstr("root cause")));
}

TEST_F(StallInquiryJobTest, TheRankOutsideACollectiveIsTheRootCauseNotTheFirstSilent) {
  JobActions got;
  for (int rank : {0, 1, 2}) Append(got, s_.OnAgentMessage(rank / 2, Waits(rank), 7));
  // Three of four: still held.
  EXPECT_THAT(Printed(got, true), Not(HasSubstr("error:")));
  EXPECT_THAT(Printed(got, true),
              HasSubstr("[dlaunch] rank 0: waits in backward (torch/autograd/__init__.py:197), "
                        "called from train (/home/u/train.py:18) (stacks/rank-0.txt, from py-spy)\n"));
  JobActions last = s_.OnAgentMessage(1, Stacks(3, "load_batch", 7), 7.5);
  const std::string said = Printed(last, true);
  EXPECT_THAT(said, HasSubstr("[dlaunch] rank 3: stopped in load_batch (/home/u/train.py:7), "
                              "outside any collective"));
  EXPECT_THAT(said, HasSubstr("[dlaunch] error: stall: rank 3 (local 1, node 1, host n1): no "
                              "progress for 3.1 s, outside any collective, in load_batch "
                              "(/home/u/train.py:7); stopping all workers\n[dlaunch] ranks 0, 1 "
                              "and 2 wait in backward (torch/autograd/__init__.py:197) for it\n"));
  EXPECT_THAT(Events(last),
              HasSubstr("\"root_cause\":{\"failure\":{\"failure_class\":\"stall\",\"rank\":3"));
  const v1::JobSummary summary = All<WriteSummary>(End(8))[0].summary;
  EXPECT_EQ(summary.root_cause().failure_class(), "stall");
  EXPECT_EQ(summary.root_cause().rank(), 3);
}

TEST_F(StallInquiryJobTest, WhenEveryRankWaitsTheSuspectStaysAndTheTerminalSaysWhy) {
  JobActions got;
  for (int rank : {0, 1, 2, 3}) Append(got, s_.OnAgentMessage(rank / 2, Waits(rank), 7));
  const std::string said = Printed(got, true);
  EXPECT_THAT(said, HasSubstr("every rank's stacks show it waiting in a collective"));
  EXPECT_THAT(said, HasSubstr("[dlaunch] error: stall: rank 0 (local 0, node 0, host n0)"));
}

TEST_F(StallInquiryJobTest, WhereNoRankWaitsInACollectiveTheStacksCannotTellAndTheSuspectStays) {
  // Ranks that meet some other way than a collective (their own barrier over TCP): every one is
  // outside a collective, so none is shown to wait for another.
  JobActions got;
  for (int rank : {0, 1, 2, 3}) Append(got, s_.OnAgentMessage(rank / 2, Stacks(rank, "barrier", 9), 7));
  const std::string said = Printed(got, true);
  EXPECT_THAT(said, HasSubstr("[dlaunch] error: stall: rank 0 (local 0, node 0, host n0)"));
  EXPECT_THAT(said, Not(HasSubstr("outside a collective too")));
  EXPECT_THAT(said, Not(HasSubstr(" for it")));
  EXPECT_EQ(All<WriteSummary>(End(8))[0].summary.consequences_size(), 0)
      << "no other rank was made a failure";
}

TEST_F(StallInquiryJobTest, ASuspectOutsideACollectiveStaysAndOthersOutsideAreSaid) {
  JobActions got = s_.OnAgentMessage(0, Stacks(0, "load_batch", 7), 7);
  Append(got, s_.OnAgentMessage(0, Waits(1), 7));
  Append(got, s_.OnAgentMessage(1, Waits(2), 7));
  Append(got, s_.OnAgentMessage(1, Stacks(3, "save", 30), 7));
  const std::string said = Printed(got, true);
  EXPECT_THAT(said, HasSubstr("[dlaunch] error: stall: rank 0 (local 0, node 0, host n0): no progress "
                              "for 4.1 s (limit 3.0 s), last step 1; ranks 1, 2 and 3 over the "
                              "limit too, in load_batch (/home/u/train.py:7)"));
  EXPECT_THAT(said, HasSubstr("[dlaunch] rank 3 stopped outside a collective too\n"
                              "[dlaunch] ranks 1 and 2 wait in backward "
                              "(torch/autograd/__init__.py:197) for them\n"));
}

TEST_F(StallInquiryJobTest, ARankWithoutStacksSaysWhyOnTheTerminal) {
  v1::AgentMessage none;
  none.mutable_stacks()->set_rank(3);
  none.mutable_stacks()->set_path("stacks/rank-3.txt");
  none.mutable_stacks()->set_why_none("py-spy: not found on PATH; gdb -p 42: no time left (killed)");
  JobActions got = s_.OnAgentMessage(1, none, 7);
  EXPECT_THAT(Printed(got, true),
              HasSubstr("[dlaunch] rank 3: no stacks could be taken (py-spy: not found on PATH; "
                        "gdb -p 42: no time left (killed))\n"));
  for (int rank : {0, 1, 2}) Append(got, s_.OnAgentMessage(rank / 2, Waits(rank), 7));
  EXPECT_THAT(Printed(got, true), HasSubstr("no rank's stacks show it outside a collective; rank 3 "
                                            "has no stacks to tell"));
}

TEST_F(StallInquiryJobTest, StacksThatNeverComeDoNotHoldTheRootCauseBeyondTheirTime) {
  auto armed = All<ArmHealthCheck>(detected_);
  ASSERT_FALSE(armed.empty());
  // The dump budget (4 s) and the slack (2 s) after the detection at 6.1.
  EXPECT_NEAR(armed.back().at_s, 12.1, 1e-9);
  EXPECT_THAT(Printed(s_.OnHealthCheck(12.0), true), Not(HasSubstr("error:")));
  EXPECT_THAT(Printed(s_.OnHealthCheck(12.1), true),
              HasSubstr("[dlaunch] error: stall: rank 0 (local 0, node 0, host n0)"));
}

// Where the flight recorders were read, their sequence numbers decide: here every rank's
// stacks name only its own code (a frame the stacks cannot place), yet rank 2 is the one that
// never entered the all-reduce its peers are in.
TEST_F(StallInquiryJobTest, TheFlightRecordersNameTheRankThatNeverEnteredTheCollective) {
  JobActions got;
  for (int rank : {0, 1, 2, 3}) {
    v1::AgentMessage m = Stacks(rank, rank == 2 ? "load_batch" : "train", rank == 2 ? 7 : 18);
    v1::FlightRecord* fr = m.mutable_stacks()->mutable_flight_record();
    fr->set_entries(rank == 2 ? 13 : 14);
    fr->set_last_seq(rank == 2 ? 13 : 14);
    fr->set_last_collective("gloo:all_reduce");
    fr->set_path("stacks/rank-" + std::to_string(rank) + ".fr.json");
    Append(got, s_.OnAgentMessage(rank / 2, m, 7));
  }
  const std::string said = Printed(got, true);
  EXPECT_THAT(said, HasSubstr("[dlaunch] flight recorder: ranks 0, 1 and 3 entered collective 14 "
                              "(gloo:all_reduce); rank 2 at 13: it never entered it\n"));
  EXPECT_THAT(said, HasSubstr("[dlaunch] error: stall: rank 2 (local 0, node 1, host n1): no "
                              "progress for 3.1 s, never entered collective 14 (gloo:all_reduce) "
                              "its peers are in (flight recorder), in load_batch "
                              "(/home/u/train.py:7)"));
  EXPECT_THAT(said, HasSubstr("[dlaunch] ranks 0, 1 and 3 wait in collective 14 (gloo:all_reduce) "
                              "for it\n"));
  // The journal has what each recorder said.
  EXPECT_THAT(Events(got), HasSubstr("\"recorder_path\":\"stacks/rank-2.fr.json\""));
  EXPECT_THAT(Events(got), HasSubstr("\"recorder_last_seq\":\"13\""));
}

}  // namespace
}  // namespace dlaunch
