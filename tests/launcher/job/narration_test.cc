// The terminal's lines as functions of the journal's events (NarrateEvent): each narrated event
// says in words what its record holds, on stdout, or on stderr for a root cause, a node left
// out and a refused call; the others say nothing.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "launcher/job/failure.h"
#include "launcher/job/job_events.h"
#include "launcher/job/job_view.h"

namespace dlaunch {
namespace {

using ::testing::Optional;

MATCHER_P2(Line, to_stderr, text, "") {
  return arg.to_stderr == to_stderr && arg.text == text;
}

Participant Node(const std::string& host) {
  Participant p;
  p.host = host;
  p.addr = "10.0.0.7";
  p.slots = 4;
  return p;
}

TEST(NarrateEventTest, TheJobsStartAndItsRendezvous) {
  EXPECT_THAT(NarrateEvent(JobStartedEvent("j", {"a", "b"}, "ssh", "/runs/j")),
              Optional(Line(false, "[dlaunch] job j: 2 node(s) via ssh, job dir /runs/j")));
  EXPECT_THAT(NarrateEvent(NodeJoinedEvent(Node("a"), 1, 2)),
              Optional(Line(false, "[dlaunch] node joined: a (10.0.0.7), 4 slot(s) [1/2]")));
  Participant unfit = Node("b");
  v1::CheckResult check;
  check.set_name("gpus");
  check.set_verdict(v1::CheckResult::FAILED);
  check.set_detail("sees 0 of 4");
  unfit.checks.push_back(check);
  EXPECT_THAT(NarrateEvent(NodeUnfitEvent(unfit)),
              Optional(Line(true, "[dlaunch] node left out: b (10.0.0.7) failed its preflight: "
                                  "gpus: sees 0 of 4")));
  RoundResult round;
  round.nodes = {Node("a"), Node("b")};
  round.world_size = 8;
  round.master_addr = "10.0.0.7";
  round.master_port = 29500;
  EXPECT_THAT(NarrateEvent(RendezvousClosedEvent(round, {0, 1}, 1.234)),
              Optional(Line(false, "[dlaunch] rendezvous complete in 1.23 s: 2 node(s), world "
                                   "size 8, MASTER_ADDR=10.0.0.7 MASTER_PORT=29500")));
  EXPECT_THAT(NarrateEvent(WorkersStartedEvent(0, 2, 8, 2.5, 0)),
              Optional(Line(false, "[dlaunch] all 8 workers started in 2.50 s")));
  EXPECT_THAT(NarrateEvent(WorkersStartedEvent(1, 2, 8, 20, 3.25)),
              Optional(Line(false, "[dlaunch] round 1 running: 2 nodes, 8 workers; restart "
                                   "took 3.25 s")));
}

TEST(NarrateEventTest, ARootCauseIsTheErrorFirstThenTheCauseOfIt) {
  Failure f;
  f.cls = FailureClass::kWorkerCrash;
  f.global_rank = 3;
  f.local_rank = 1;
  f.node_rank = 1;
  f.node_id = 1;
  f.host = "b";
  f.exit_code = 2;
  const std::string text = DescribeFailure(f);
  EXPECT_THAT(NarrateEvent(RootCauseEvent(0, f, 0, false)),
              Optional(Line(true, "[dlaunch] error: " + text + "; stopping all workers")));
  EXPECT_THAT(NarrateEvent(RootCauseEvent(0, f, 1, true)),
              Optional(Line(true, "[dlaunch] root cause: " + text +
                                      " (the failure reported above is a consequence)")));
  // A failure is said once, as the root cause: its own event says nothing.
  EXPECT_EQ(NarrateEvent(FailureDetectedEvent(0, f)), std::nullopt);
}

TEST(NarrateEventTest, RestartsAndTheNodesTheyDismissOrPromote) {
  RestartPlanned next;
  next.node_ids = {0, 2};
  next.reason = "restart 1 of 3";
  next.starts_in_s = 1.5;
  EXPECT_THAT(NarrateEvent(RestartEvent(1, next)),
              Optional(Line(false, "[dlaunch] restarting: round 1 (restart 1 of 3) in 1.5 s, "
                                   "2 node(s)")));
  next.starts_in_s = 0;
  next.waits_for_lost_workers = true;
  EXPECT_THAT(NarrateEvent(RestartEvent(2, next)),
              Optional(Line(false, "[dlaunch] restarting: round 2 (restart 1 of 3), 2 node(s), "
                                   "once the lost nodes' workers are surely stopped")));
  EXPECT_THAT(NarrateEvent(NodeDismissedEvent(0, "node_excluded", 1, "b", "it failed 2 times")),
              Optional(Line(false, "[dlaunch] node 1 (b) excluded: it failed 2 times")));
  EXPECT_THAT(NarrateEvent(NodeDismissedEvent(0, "spare_lost", 4, "e", "its session ended")),
              Optional(Line(false, "[dlaunch] spare node 4 (e) lost: its session ended")));
  EXPECT_EQ(NarrateEvent(NodeDismissedEvent(0, "node_dropped", 1, "b", "lost")), std::nullopt);
  EXPECT_THAT(NarrateEvent(SparePromotedEvent(1, 4, "e")),
              Optional(Line(false, "[dlaunch] spare node 4 (e) takes a lost node's place")));
  EXPECT_THAT(NarrateEvent(SpareJoinedEvent(0, 4, Node("e"))),
              Optional(Line(false, "[dlaunch] spare joined: e (10.0.0.7), node 4, 4 slot(s)")));
}

TEST(NarrateEventTest, ARelaysNodesAreSaidGoneOnceAndBackOnce) {
  EXPECT_THAT(NarrateEvent(RelayLostEvent(0, "relay 10.0.0.9:7000", {3, 4})),
              Optional(Line(false, "[dlaunch] relay 10.0.0.9:7000 went with 2 node(s)' sessions: "
                                   "they keep their places while their agents reconnect to the "
                                   "launcher")));
  const NodePlace place{3, 3, "d"};
  EXPECT_EQ(NarrateEvent(SessionResumedEvent(0, place, 0.5, "relay 10.0.0.9:7000", false)),
            std::nullopt);
  EXPECT_THAT(NarrateEvent(SessionResumedEvent(0, place, 0.75, "relay 10.0.0.9:7000", true)),
              Optional(Line(false, "[dlaunch] every node of relay 10.0.0.9:7000 is back, the "
                                   "last after 0.75 s")));
}

TEST(NarrateEventTest, ARefusedCallSaysTheCountPastTheThird) {
  EXPECT_THAT(NarrateEvent(CallRefusedEvent(0, "ipv4:1.2.3.4:5", "Session", 1)),
              Optional(Line(true, "[dlaunch] refused Session from ipv4:1.2.3.4:5: missing or "
                                  "wrong job token")));
  EXPECT_THAT(NarrateEvent(CallRefusedEvent(0, "ipv4:1.2.3.4:5", "Session", 100)),
              Optional(Line(true, "[dlaunch] refused Session from ipv4:1.2.3.4:5: missing or "
                                  "wrong job token (100 refused so far; only every tenfold is "
                                  "said)")));
}

TEST(NarrateEventTest, RecordEventPutsTheLineBeforeTheRecord) {
  JobActions out;
  RecordEvent(WorkersStartedEvent(0, 1, 2, 1, 0), out);
  RecordEvent(StopRequestedEvent(0, "interrupted"), out);
  ASSERT_EQ(out.size(), 3u);
  ASSERT_TRUE(std::holds_alternative<PrintLine>(out[0]));
  EXPECT_EQ(std::get<PrintLine>(out[0]).text, "[dlaunch] all 2 workers started in 1.00 s");
  ASSERT_TRUE(std::holds_alternative<AppendEvent>(out[1]));
  EXPECT_TRUE(std::get<AppendEvent>(out[1]).event.has_workers_started());
  ASSERT_TRUE(std::holds_alternative<AppendEvent>(out[2]));
  EXPECT_TRUE(std::get<AppendEvent>(out[2]).event.has_stop_requested());
}

}  // namespace
}  // namespace dlaunch
