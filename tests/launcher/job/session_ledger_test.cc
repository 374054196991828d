// SessionLedger: the launcher's session rules without sockets or a clock. A node's messages are
// deduplicated by seq across its sessions, only the current session is echoed and resumed, and
// a resumed agent behind the last StartRound gets it again. The relay moves are played as the
// launcher sees them: the old session stays open (its relay went), the new one opens, the
// agent sends again what it was not sure arrived, and the old session's end comes late.
#include "launcher/job/session_ledger.h"

#include <gtest/gtest.h>

namespace dlaunch {
namespace {

v1::AgentMessage Heartbeat(uint64_t seq, int64_t sent_ms, int round = 0) {
  v1::AgentMessage m;
  m.set_seq(seq);
  m.set_sent_ms(sent_ms);
  m.set_round(round);
  m.mutable_heartbeat();
  return m;
}

v1::AgentMessage Worker(uint64_t seq, int64_t sent_ms, int round = 0) {
  v1::AgentMessage m;
  m.set_seq(seq);
  m.set_sent_ms(sent_ms);
  m.set_round(round);
  m.mutable_worker()->set_rank(0);
  return m;
}

// Round `round` for nodes `ids`, in that order.
SendStartRound Start(int round, std::vector<int> ids) {
  SendStartRound s;
  s.round.round = round;
  s.round.assignments.resize(ids.size());
  s.node_ids = std::move(ids);
  return s;
}

TEST(SessionLedgerTest, AFirstSessionIsNotResumedAndIsEchoedWithWhatWasHeardOnIt) {
  SessionLedger ledger;
  EXPECT_FALSE(ledger.EchoFor(3).has_value()) << "no session: nothing to send to";
  EXPECT_FALSE(ledger.Open(10, 3));
  ASSERT_TRUE(ledger.EchoFor(3).has_value());
  EXPECT_EQ(ledger.EchoFor(3)->heard_ms, 0);
  EXPECT_FALSE(ledger.EchoFor(3)->heard_seq.has_value()) << "no numbered message heard yet";
  MessagePlan plan = ledger.OnMessage(10, 3, Heartbeat(1, 5000));
  EXPECT_FALSE(plan.drop);
  EXPECT_FALSE(plan.answer) << "only a resumed session's first heartbeat is answered";
  EXPECT_FALSE(plan.resend_start);
  EXPECT_EQ(ledger.EchoFor(3)->heard_ms, 5000);
  EXPECT_EQ(ledger.EchoFor(3)->heard_seq, std::optional<uint64_t>(1));
}

TEST(SessionLedgerTest, TheEchoNeverGoesBackInTime) {
  SessionLedger ledger;
  ledger.Open(10, 0);
  ledger.OnMessage(10, 0, Heartbeat(1, 9000));
  // A later seq sent earlier by the agent's clock (two messages queued in one batch).
  ledger.OnMessage(10, 0, Worker(2, 8000));
  EXPECT_EQ(ledger.EchoFor(0)->heard_ms, 9000);
  EXPECT_EQ(ledger.EchoFor(0)->heard_seq, std::optional<uint64_t>(2));
}

TEST(SessionLedgerTest, MessagesSentAgainAreDroppedAndCountedButUnnumberedOnesPass) {
  SessionLedger ledger;
  ledger.Open(10, 0);
  EXPECT_FALSE(ledger.OnMessage(10, 0, Worker(1, 100)).drop);
  EXPECT_FALSE(ledger.OnMessage(10, 0, Worker(2, 200)).drop);
  EXPECT_TRUE(ledger.OnMessage(10, 0, Worker(2, 200)).drop);
  EXPECT_TRUE(ledger.OnMessage(10, 0, Worker(1, 100)).drop);
  EXPECT_FALSE(ledger.OnMessage(10, 0, Worker(0, 300)).drop) << "seq 0: not numbered";
  EXPECT_FALSE(ledger.OnMessage(10, 0, Worker(0, 300)).drop);
  EXPECT_EQ(ledger.messages_again(), 2);
  EXPECT_EQ(ledger.EchoFor(0)->heard_ms, 300);
}

TEST(SessionLedgerTest, SeqIsCountedPerNode) {
  SessionLedger ledger;
  ledger.Open(10, 0);
  ledger.Open(11, 1);
  EXPECT_FALSE(ledger.OnMessage(10, 0, Worker(5, 100)).drop);
  EXPECT_FALSE(ledger.OnMessage(11, 1, Worker(1, 100)).drop) << "node 0's seq is not node 1's";
  EXPECT_EQ(ledger.EchoFor(0)->heard_seq, std::optional<uint64_t>(5));
  EXPECT_EQ(ledger.EchoFor(1)->heard_seq, std::optional<uint64_t>(1));
}

TEST(SessionLedgerTest, ANodeMovingToTheLauncherResumesItsSessionAndItsResentMessagesAreDropped) {
  SessionLedger ledger;
  ledger.Open(10, 2);  // through a relay
  ledger.OnMessage(10, 2, Worker(1, 1000));
  ledger.OnMessage(10, 2, Heartbeat(2, 2000));
  // The relay goes; its session is not seen to end. The agent opens its own session and sends
  // again the messages whose echo it had not seen (seq 2), then new ones.
  EXPECT_TRUE(ledger.Open(20, 2)) << "replaces a session that did not end: resumed";
  EXPECT_TRUE(ledger.IsCurrent(20, 2));
  EXPECT_FALSE(ledger.IsCurrent(10, 2));
  EXPECT_EQ(ledger.EchoFor(2)->heard_ms, 0) << "the new session's echo starts afresh";
  EXPECT_EQ(ledger.EchoFor(2)->heard_seq, std::optional<uint64_t>(2)) << "the node's seq stays";
  EXPECT_TRUE(ledger.OnMessage(20, 2, Heartbeat(2, 2000)).drop);
  MessagePlan plan = ledger.OnMessage(20, 2, Heartbeat(3, 3000));
  EXPECT_FALSE(plan.drop);
  EXPECT_TRUE(plan.answer) << "its first new heartbeat is answered: the echo confirms the move";
  EXPECT_EQ(ledger.EchoFor(2)->heard_ms, 3000);
  EXPECT_FALSE(ledger.OnMessage(20, 2, Heartbeat(4, 4000)).answer) << "answered once";
  EXPECT_EQ(ledger.messages_again(), 1);
}

TEST(SessionLedgerTest, ResumedSessionAnswersItsFirstHeartbeatEvenAfterOtherMessages) {
  SessionLedger ledger;
  ledger.Open(10, 0);
  ledger.Open(11, 0);
  EXPECT_FALSE(ledger.OnMessage(11, 0, Worker(1, 100)).answer);
  EXPECT_TRUE(ledger.OnMessage(11, 0, Heartbeat(2, 200)).answer);
}

TEST(SessionLedgerTest, TheOldSessionsLateEndOrMessagesDoNotTouchTheNewOne) {
  SessionLedger ledger;
  ledger.Open(10, 1);
  ledger.Open(20, 1);  // moved
  ledger.OnMessage(20, 1, Heartbeat(1, 5000));
  // A message of the old session still in the loop's queue: handled, but not echoed.
  MessagePlan plan = ledger.OnMessage(10, 1, Worker(2, 9000));
  EXPECT_FALSE(plan.drop);
  EXPECT_FALSE(plan.answer);
  EXPECT_EQ(ledger.EchoFor(1)->heard_ms, 5000);
  EXPECT_FALSE(ledger.End(10, 1)) << "not the current session";
  EXPECT_TRUE(ledger.IsCurrent(20, 1));
  EXPECT_TRUE(ledger.End(20, 1));
  EXPECT_FALSE(ledger.EchoFor(1).has_value());
  // The agent comes back once more: a session after one that ended is not a resume.
  EXPECT_FALSE(ledger.Open(30, 1));
}

TEST(SessionLedgerTest, AResumedAgentBehindTheLastStartRoundGetsItsPlaceAgain) {
  SessionLedger ledger;
  for (int node : {0, 1, 2}) ledger.Open(10 + node, node);
  ledger.NoteStartRound(Start(1, {2, 0, 1}));
  // Node 0's relay went with the StartRound of round 1 in it: node 0 is still in round 0.
  ASSERT_TRUE(ledger.Open(20, 0));
  MessagePlan plan = ledger.OnMessage(20, 0, Heartbeat(1, 100, /*round=*/0));
  ASSERT_TRUE(plan.resend_start.has_value());
  EXPECT_EQ(*plan.resend_start, 1u) << "node 0's place is the second of the StartRound";
  EXPECT_EQ(ledger.last_start()->node_ids[*plan.resend_start], 0);
  // Only the first message of the resumed session is looked at.
  EXPECT_FALSE(ledger.OnMessage(20, 0, Heartbeat(2, 200, 0)).resend_start);
}

TEST(SessionLedgerTest, AResumedAgentThatHasTheRoundOrIsNotInItGetsNoStartRound) {
  SessionLedger ledger;
  for (int node : {0, 1, 5}) ledger.Open(10 + node, node);
  ledger.NoteStartRound(Start(1, {0, 1}));
  ledger.Open(20, 1);
  EXPECT_FALSE(ledger.OnMessage(20, 1, Heartbeat(1, 100, /*round=*/1)).resend_start)
      << "its StartRound arrived before the move";
  ledger.Open(25, 5);  // a spare, not in round 1
  EXPECT_FALSE(ledger.OnMessage(25, 5, Heartbeat(1, 100, 0)).resend_start);
  // A session that is not resumed never gets one: the StartRound reaches it as usual.
  SessionLedger fresh;
  fresh.NoteStartRound(Start(1, {0}));
  fresh.Open(10, 0);
  EXPECT_FALSE(fresh.OnMessage(10, 0, Heartbeat(1, 100, 0)).resend_start);
}

TEST(SessionLedgerTest, AResentMessageOnAResumedSessionLeavesTheResumeForTheNextOne) {
  SessionLedger ledger;
  ledger.Open(10, 0);
  ledger.OnMessage(10, 0, Heartbeat(1, 100, 0));
  ledger.NoteStartRound(Start(1, {0}));
  ledger.Open(20, 0);
  // The first message on the new session is one sent again: dropped before any rule.
  EXPECT_TRUE(ledger.OnMessage(20, 0, Heartbeat(1, 100, 0)).drop);
  MessagePlan plan = ledger.OnMessage(20, 0, Heartbeat(2, 200, 0));
  EXPECT_TRUE(plan.answer);
  EXPECT_EQ(plan.resend_start, std::optional<size_t>(0));
}

TEST(SessionLedgerTest, StartAfterIsWhatIsLeftRoundedUp) {
  EXPECT_EQ(StartAfterMs(10.0, 9.0), 1000);
  EXPECT_EQ(StartAfterMs(10.0, 9.9995), 1) << "rounded up: never early";
  EXPECT_EQ(StartAfterMs(10.0, 10.0), 0);
  EXPECT_EQ(StartAfterMs(10.0, 12.5), 0) << "past: at once";
}

Participant Agent(const std::string& id, bool fit = true) {
  Participant p;
  p.agent_id = id;
  p.host = "h9";
  if (!fit) {
    v1::CheckResult c;
    c.set_name("gpus");
    c.set_verdict(v1::CheckResult::FAILED);
    c.set_detail("0 of 8");
    p.checks.push_back(c);
  }
  return p;
}

TEST(SessionLedgerTest, JoinsBeforeTheCloseGoToTheRendezvous) {
  for (bool spares : {false, true}) {
    EXPECT_EQ(AdmitJoin(Agent("a"), false, spares, false, 4).route, JoinRoute::kRendezvous);
  }
}

TEST(SessionLedgerTest, AfterTheCloseAJobWithSparesTakesOneWhileItHasRoom) {
  EXPECT_EQ(AdmitJoin(Agent("a"), true, true, true, 4).route, JoinRoute::kRendezvous);
  JoinAdmission full = AdmitJoin(Agent("a:1"), true, true, false, 4);
  EXPECT_EQ(full.route, JoinRoute::kRefused);
  EXPECT_EQ(full.why,
            "the job started 4 agent(s) and all of them are in it: agent a:1 (host h9) is one "
            "too many");
}

TEST(SessionLedgerTest, AfterTheCloseWithoutSparesALateJoinIsCountedAndAnUnfitOneIsNot) {
  EXPECT_EQ(AdmitJoin(Agent("a"), true, false, true, 4).route, JoinRoute::kRendezvousLate);
  // Unfit: the rendezvous names it apart from the late ones.
  EXPECT_EQ(AdmitJoin(Agent("a", false), true, false, true, 4).route, JoinRoute::kRendezvous);
}

}  // namespace
}  // namespace dlaunch
