#include "rendezvous/rendezvous_state.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace dlaunch {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

Participant P(const std::string& id, const std::string& host, int slots = 1, int port = 0,
              std::string addr = "") {
  Participant p;
  p.agent_id = id;
  p.host = host;
  p.addr = addr.empty() ? "addr-" + host : addr;
  p.slots = slots;
  p.worker_port = port;
  return p;
}

RendezvousConfig Cfg(int min, int max, std::vector<std::string> order = {},
                     double join_timeout = 300, double last_call = 10) {
  RendezvousConfig c;
  c.min_nodes = min;
  c.max_nodes = max;
  c.host_order = std::move(order);
  c.join_timeout_s = join_timeout;
  c.last_call_s = last_call;
  return c;
}

std::vector<std::string> Ids(const RoundResult& r) {
  std::vector<std::string> ids;
  for (const auto& n : r.nodes) ids.push_back(n.agent_id);
  return ids;
}

TEST(RendezvousStateTest, ClosesExactlyWhenMaxNodesJoined) {
  RendezvousState s(Cfg(3, 3, {"a", "b", "c"}), 0);
  EXPECT_EQ(s.phase(), RendezvousPhase::kWaiting);
  ASSERT_TRUE(s.Join(P("1", "a"), 1).ok());
  ASSERT_TRUE(s.Join(P("2", "b"), 2).ok());
  EXPECT_EQ(s.phase(), RendezvousPhase::kWaiting);
  EXPECT_EQ(s.result(), nullptr);
  EXPECT_EQ(s.AssignmentFor("1"), nullptr);
  EXPECT_EQ(s.joined(), 2);
  ASSERT_TRUE(s.Join(P("3", "c"), 3).ok());
  EXPECT_EQ(s.phase(), RendezvousPhase::kClosed);
  ASSERT_NE(s.result(), nullptr);
  EXPECT_EQ(s.result()->world_size, 3);
  EXPECT_EQ(s.result()->round, 0);
  EXPECT_EQ(s.NextDeadline(), std::nullopt);
  EXPECT_TRUE(s.failure().ok());
}

TEST(RendezvousStateTest, NoCloseBeforeMinWhileWaiting) {
  RendezvousState s(Cfg(2, 4), 0);
  ASSERT_TRUE(s.Join(P("1", "a"), 0).ok());
  EXPECT_EQ(s.Poll(299.9), RendezvousPhase::kWaiting);
  EXPECT_EQ(s.NextDeadline(), 300.0);
}

TEST(RendezvousStateTest, LastCallClosesWithMinNodesWhenItExpires) {
  RendezvousState s(Cfg(2, 4, {}, 300, 10), 0);
  ASSERT_TRUE(s.Join(P("1", "a"), 5).ok());
  EXPECT_EQ(s.phase(), RendezvousPhase::kWaiting);
  ASSERT_TRUE(s.Join(P("2", "b"), 20).ok());
  EXPECT_EQ(s.phase(), RendezvousPhase::kLastCall);
  EXPECT_EQ(s.NextDeadline(), 30.0);
  EXPECT_EQ(s.Poll(29.9), RendezvousPhase::kLastCall);
  // A third node arriving during last call is taken; the deadline does not move.
  ASSERT_TRUE(s.Join(P("3", "c"), 25).ok());
  EXPECT_EQ(s.NextDeadline(), 30.0);
  EXPECT_EQ(s.Poll(30), RendezvousPhase::kClosed);
  EXPECT_EQ(s.result()->world_size, 3);
  EXPECT_THAT(Ids(*s.result()), ElementsAre("1", "2", "3"));
}

TEST(RendezvousStateTest, LastCallEndsEarlyWhenMaxArrives) {
  RendezvousState s(Cfg(1, 2, {}, 300, 10), 0);
  ASSERT_TRUE(s.Join(P("1", "a"), 0).ok());
  EXPECT_EQ(s.phase(), RendezvousPhase::kLastCall);
  ASSERT_TRUE(s.Join(P("2", "b"), 1).ok());
  EXPECT_EQ(s.phase(), RendezvousPhase::kClosed);
}

TEST(RendezvousStateTest, ZeroLastCallClosesOnTheMinthJoin) {
  RendezvousState s(Cfg(2, 8, {}, 300, 0), 0);
  ASSERT_TRUE(s.Join(P("1", "a"), 0).ok());
  ASSERT_TRUE(s.Join(P("2", "b"), 0).ok());
  EXPECT_EQ(s.phase(), RendezvousPhase::kClosed);
  EXPECT_EQ(s.result()->nodes.size(), 2u);
}

TEST(RendezvousStateTest, LastCallIsCappedByJoinDeadline) {
  RendezvousState s(Cfg(1, 3, {}, 100, 50), 0);
  ASSERT_TRUE(s.Join(P("1", "a"), 80).ok());
  EXPECT_EQ(s.NextDeadline(), 100.0);
  EXPECT_EQ(s.Poll(100), RendezvousPhase::kClosed);  // quorum present: close, not fail
}

TEST(RendezvousStateTest, TimeoutNamesMissingHosts) {
  RendezvousState s(Cfg(3, 3, {"nodeA", "nodeB", "nodeC"}), 0);
  ASSERT_TRUE(s.Join(P("1", "nodeB"), 1).ok());
  ASSERT_TRUE(s.Join(P("2", "nodeA"), 2).ok());
  EXPECT_EQ(s.Poll(299), RendezvousPhase::kWaiting);
  EXPECT_EQ(s.Poll(300), RendezvousPhase::kFailed);
  EXPECT_EQ(s.failure().code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_EQ(s.failure().message(),
            "rendezvous timed out after 300 s: 2 of 3 nodes joined; never arrived: nodeC");
  EXPECT_EQ(s.result(), nullptr);
  EXPECT_EQ(s.NextDeadline(), std::nullopt);
}

TEST(RendezvousStateTest, TimeoutWithoutHostOrderCountsMissing) {
  RendezvousState s(Cfg(4, 6, {}, 60), 0);
  ASSERT_TRUE(s.Join(P("1", "x"), 1).ok());
  EXPECT_EQ(s.Poll(61), RendezvousPhase::kFailed);
  EXPECT_EQ(s.failure().message(),
            "rendezvous timed out after 60 s: 1 of at least 4 nodes joined; 3 more needed");
}

TEST(RendezvousStateTest, TimeoutInLocalModeCountsMissingAgentsOfOneHost) {
  RendezvousState s(Cfg(3, 3, {"h", "h", "h"}, 2.5), 0);
  ASSERT_TRUE(s.Join(P("1", "h"), 1).ok());
  EXPECT_EQ(s.Poll(3), RendezvousPhase::kFailed);
  EXPECT_EQ(s.failure().message(),
            "rendezvous timed out after 2.5 s: 1 of 3 nodes joined; never arrived: h (2 of 3 "
            "agents)");
}

TEST(RendezvousStateTest, TimeoutMatchesShortAndQualifiedNames) {
  RendezvousState s(Cfg(2, 2, {"x1.hsn.cm.polaris.alcf.anl.gov", "x2.hsn.cm.polaris.alcf.anl.gov"}),
                    0);
  ASSERT_TRUE(s.Join(P("1", "X2"), 1).ok());
  s.Poll(300);
  EXPECT_THAT(std::string(s.failure().message()),
              HasSubstr("never arrived: x1.hsn.cm.polaris.alcf.anl.gov"));
  EXPECT_THAT(std::string(s.failure().message()), ::testing::Not(HasSubstr("x2")));
}

TEST(RendezvousStateTest, DuplicateJoinIsRefused) {
  RendezvousState s(Cfg(2, 2), 0);
  ASSERT_TRUE(s.Join(P("1", "a"), 0).ok());
  absl::Status st = s.Join(P("1", "a"), 1);
  EXPECT_EQ(st.code(), absl::StatusCode::kAlreadyExists);
  EXPECT_THAT(std::string(st.message()), HasSubstr("agent 1"));
  EXPECT_EQ(s.joined(), 1);
}

TEST(RendezvousStateTest, JoinAfterCloseIsRefused) {
  RendezvousState s(Cfg(1, 1), 0);
  ASSERT_TRUE(s.Join(P("1", "a"), 0).ok());
  absl::Status st = s.Join(P("2", "b"), 1);
  EXPECT_EQ(st.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(st.message()), HasSubstr("closed"));
  EXPECT_EQ(s.result()->nodes.size(), 1u);
}

TEST(RendezvousStateTest, JoinAfterLastCallExpiredIsRefusedEvenWithoutPoll) {
  RendezvousState s(Cfg(1, 2, {}, 300, 10), 0);
  ASSERT_TRUE(s.Join(P("1", "a"), 0).ok());
  absl::Status st = s.Join(P("2", "b"), 11);  // nobody polled at 10
  EXPECT_EQ(st.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(s.phase(), RendezvousPhase::kClosed);
  EXPECT_EQ(s.result()->world_size, 1);
}

TEST(RendezvousStateTest, JoinAfterFailureIsRefused) {
  RendezvousState s(Cfg(2, 2, {}, 10), 0);
  absl::Status st = s.Join(P("1", "a"), 11);
  EXPECT_EQ(st.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(st.message()), HasSubstr("timed out"));
  EXPECT_EQ(s.phase(), RendezvousPhase::kFailed);
}

TEST(RendezvousStateTest, BadParticipantsAreInvalid) {
  RendezvousState s(Cfg(1, 1), 0);
  EXPECT_EQ(s.Join(P("1", "a", 0), 0).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(s.Join(P("1", "a", -2), 0).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(s.Join(P("", "a"), 0).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(s.joined(), 0);
  EXPECT_EQ(s.phase(), RendezvousPhase::kWaiting);
}

TEST(RendezvousStateTest, LeaveBeforeCloseFreesThePlaceAndDropsLastCall) {
  RendezvousState s(Cfg(2, 3, {}, 300, 10), 0);
  ASSERT_TRUE(s.Join(P("1", "a"), 0).ok());
  ASSERT_TRUE(s.Join(P("2", "b"), 1).ok());
  EXPECT_EQ(s.phase(), RendezvousPhase::kLastCall);
  s.Leave("1", 2);
  EXPECT_EQ(s.joined(), 1);
  EXPECT_EQ(s.phase(), RendezvousPhase::kWaiting);
  EXPECT_EQ(s.NextDeadline(), 300.0);
  EXPECT_EQ(s.Poll(12), RendezvousPhase::kWaiting);  // the old last call is gone
  // The same agent may join again after leaving, and a fresh last call starts.
  ASSERT_TRUE(s.Join(P("1", "a"), 50).ok());
  EXPECT_EQ(s.NextDeadline(), 60.0);
  EXPECT_EQ(s.Poll(60), RendezvousPhase::kClosed);
  EXPECT_THAT(Ids(*s.result()), ElementsAre("2", "1"));
}

TEST(RendezvousStateTest, LeaveOfUnknownOrAfterCloseIsIgnored) {
  RendezvousState s(Cfg(1, 1), 0);
  s.Leave("nobody", 0);
  ASSERT_TRUE(s.Join(P("1", "a"), 0).ok());
  s.Leave("1", 1);
  EXPECT_EQ(s.phase(), RendezvousPhase::kClosed);
  EXPECT_NE(s.AssignmentFor("1"), nullptr);
}

TEST(RendezvousStateTest, RanksFollowHostOrderNotJoinOrder) {
  RendezvousState s(Cfg(4, 4, {"n0", "n1", "n2", "n3"}), 0);
  ASSERT_TRUE(s.Join(P("c", "n2", 1, 2002), 0).ok());
  ASSERT_TRUE(s.Join(P("a", "n0", 1, 2000), 1).ok());
  ASSERT_TRUE(s.Join(P("d", "n3", 1, 2003), 2).ok());
  ASSERT_TRUE(s.Join(P("b", "n1", 1, 2001), 3).ok());
  const RoundResult* r = s.result();
  ASSERT_NE(r, nullptr);
  EXPECT_THAT(Ids(*r), ElementsAre("a", "b", "c", "d"));
  EXPECT_EQ(r->master_addr, "addr-n0");
  EXPECT_EQ(r->master_port, 2000);
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(r->assignments[i].node_rank, i);
    EXPECT_EQ(r->assignments[i].rank_offset, i);
  }
  EXPECT_EQ(s.AssignmentFor("c")->node_rank, 2);
}

TEST(RendezvousStateTest, UnlistedHostsComeLastInJoinOrder) {
  RendezvousState s(Cfg(4, 4, {"n1", "n0"}), 0);
  ASSERT_TRUE(s.Join(P("z", "extra2"), 0).ok());
  ASSERT_TRUE(s.Join(P("a", "n0"), 1).ok());
  ASSERT_TRUE(s.Join(P("y", "extra1"), 2).ok());
  ASSERT_TRUE(s.Join(P("b", "n1"), 3).ok());
  EXPECT_THAT(Ids(*s.result()), ElementsAre("b", "a", "z", "y"));
}

TEST(RendezvousStateTest, HostOrderMayNameAddresses) {
  RendezvousState s(Cfg(2, 2, {"10.0.0.2", "10.0.0.1"}), 0);
  ASSERT_TRUE(s.Join(P("a", "h1", 1, 0, "10.0.0.1"), 0).ok());
  ASSERT_TRUE(s.Join(P("b", "h2", 1, 0, "10.0.0.2"), 1).ok());
  EXPECT_THAT(Ids(*s.result()), ElementsAre("b", "a"));
  EXPECT_EQ(s.result()->master_addr, "10.0.0.2");
}

TEST(RendezvousStateTest, LocalModeRepeatedHostRanksByJoinOrder) {
  RendezvousState s(Cfg(3, 3, {"h", "h", "h"}), 0);
  ASSERT_TRUE(s.Join(P("second", "h", 1, 5001), 0).ok());
  ASSERT_TRUE(s.Join(P("first", "h", 1, 5002), 1).ok());
  ASSERT_TRUE(s.Join(P("third", "h", 1, 5003), 2).ok());
  EXPECT_THAT(Ids(*s.result()), ElementsAre("second", "first", "third"));
  EXPECT_EQ(s.result()->master_port, 5001);
}

TEST(RendezvousStateTest, MixedRepeatedHostsInterleaveByHostOrder) {
  // Two hosts with two agents each: order a, b, a, b in the host list.
  RendezvousState s(Cfg(4, 4, {"a", "b", "a", "b"}), 0);
  ASSERT_TRUE(s.Join(P("b1", "b"), 0).ok());
  ASSERT_TRUE(s.Join(P("b2", "b"), 1).ok());
  ASSERT_TRUE(s.Join(P("a1", "a"), 2).ok());
  ASSERT_TRUE(s.Join(P("a2", "a"), 3).ok());
  EXPECT_THAT(Ids(*s.result()), ElementsAre("a1", "b1", "a2", "b2"));
}

TEST(RendezvousStateTest, MoreAgentsOnAHostThanListedGoLast) {
  RendezvousState s(Cfg(3, 3, {"h", "g"}), 0);
  ASSERT_TRUE(s.Join(P("h1", "h"), 0).ok());
  ASSERT_TRUE(s.Join(P("h2", "h"), 1).ok());
  ASSERT_TRUE(s.Join(P("g1", "g"), 2).ok());
  EXPECT_THAT(Ids(*s.result()), ElementsAre("h1", "g1", "h2"));
}

TEST(RendezvousStateTest, HeterogeneousSlotsGivePrefixSumOffsets) {
  RendezvousState s(Cfg(3, 3, {"n0", "n1", "n2"}), 0);
  ASSERT_TRUE(s.Join(P("c", "n2", 2), 0).ok());
  ASSERT_TRUE(s.Join(P("a", "n0", 4), 0).ok());
  ASSERT_TRUE(s.Join(P("b", "n1", 1), 0).ok());
  const RoundResult* r = s.result();
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->world_size, 7);
  ASSERT_EQ(r->assignments.size(), 3u);
  EXPECT_EQ(r->assignments[0].rank_offset, 0);
  EXPECT_EQ(r->assignments[0].local_world_size, 4);
  EXPECT_EQ(r->assignments[1].rank_offset, 4);
  EXPECT_EQ(r->assignments[1].local_world_size, 1);
  EXPECT_EQ(r->assignments[2].rank_offset, 5);
  EXPECT_EQ(r->assignments[2].local_world_size, 2);
  EXPECT_EQ(s.AssignmentFor("c")->rank_offset, 5);
  EXPECT_EQ(s.AssignmentFor("nobody"), nullptr);
}

TEST(RendezvousStateTest, ConfiguredMasterPortWins) {
  RendezvousConfig c = Cfg(1, 1);
  c.master_port = 29500;
  RendezvousState s(c, 0);
  ASSERT_TRUE(s.Join(P("a", "n0", 1, 4242), 0).ok());
  EXPECT_EQ(s.result()->master_port, 29500);
}

TEST(AssignRoundTest, RanksFollowTheGivenOrderAndSlots) {
  RoundResult r = AssignRound(3, {P("a", "n0", 2, 4000), P("b", "n1", 1, 4001), P("c", "n2", 3, 4002)}, 0);
  EXPECT_EQ(r.round, 3);
  EXPECT_THAT(Ids(r), ElementsAre("a", "b", "c"));
  ASSERT_EQ(r.assignments.size(), 3u);
  EXPECT_EQ(r.assignments[1].node_rank, 1);
  EXPECT_EQ(r.assignments[1].rank_offset, 2);
  EXPECT_EQ(r.assignments[2].rank_offset, 3);
  EXPECT_EQ(r.assignments[2].local_world_size, 3);
  EXPECT_EQ(r.world_size, 6);
  // No fixed port: node 0's own free port.
  EXPECT_EQ(r.master_port, 4000);
  EXPECT_EQ(AssignRound(0, {P("a", "n0", 1, 4000)}, 29500).master_port, 29500);
}

TEST(AssignRoundTest, MasterAddrFallsBackToNode0sHost) {
  Participant p = P("a", "n0", 1, 4000);
  p.addr = "";
  EXPECT_EQ(AssignRound(1, {p}, 0).master_addr, "n0");
  p.addr = "10.0.0.7";
  EXPECT_EQ(AssignRound(1, {p}, 0).master_addr, "10.0.0.7");
  EXPECT_EQ(AssignRound(1, {}, 0).world_size, 0);
}

TEST(RendezvousStateTest, MaxBelowMinMeansExactlyMin) {
  RendezvousState s(Cfg(2, 1), 0);
  EXPECT_EQ(s.config().max_nodes, 2);
  ASSERT_TRUE(s.Join(P("a", "x"), 0).ok());
  EXPECT_EQ(s.phase(), RendezvousPhase::kWaiting);
}

TEST(RendezvousStateTest, PhaseNames) {
  EXPECT_STREQ(RendezvousPhaseName(RendezvousPhase::kWaiting), "waiting");
  EXPECT_STREQ(RendezvousPhaseName(RendezvousPhase::kLastCall), "last-call");
  EXPECT_STREQ(RendezvousPhaseName(RendezvousPhase::kClosed), "closed");
  EXPECT_STREQ(RendezvousPhaseName(RendezvousPhase::kFailed), "failed");
}

// --- preflight: nodes that failed a check are left out -------------------------------------

Participant Unfit(const std::string& id, const std::string& host, const std::string& check,
                  const std::string& detail) {
  Participant p = P(id, host);
  v1::CheckResult ok;
  ok.set_name("gpus");
  ok.set_verdict(v1::CheckResult::PASSED);
  p.checks.push_back(ok);
  v1::CheckResult bad;
  bad.set_name(check);
  bad.set_verdict(v1::CheckResult::FAILED);
  bad.set_detail(detail);
  p.checks.push_back(bad);
  return p;
}

TEST(RendezvousPreflightTest, AnUnfitNodeIsRefusedNamingItsFailedChecks) {
  RendezvousState s(Cfg(1, 2), 0);
  absl::Status st = s.Join(Unfit("a", "h1", "ports", "port 29500 is in use"), 1);
  EXPECT_EQ(st.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(st.message()), HasSubstr("h1 is left out"));
  EXPECT_THAT(std::string(st.message()), HasSubstr("ports: port 29500 is in use"));
  EXPECT_EQ(s.joined(), 0);
  ASSERT_EQ(s.unfit().size(), 1u);
  EXPECT_THAT(UnfitReasons(s.unfit()[0]), ElementsAre("ports: port 29500 is in use"));
}

TEST(RendezvousPreflightTest, OnceEveryAgentAnsweredTheRoundClosesWithTheFitOnesAtOnce) {
  RendezvousConfig c = Cfg(2, 3, {}, 300, /*last_call=*/60);
  c.expected_agents = 3;
  RendezvousState s(c, 0);
  ASSERT_TRUE(s.Join(P("a", "h1"), 1).ok());
  ASSERT_TRUE(s.Join(P("b", "h2"), 1).ok());
  EXPECT_EQ(s.phase(), RendezvousPhase::kLastCall);
  EXPECT_FALSE(s.Join(Unfit("c", "h3", "disk", "/tmp: 0.1 GiB free"), 2).ok());
  // No last call to wait out: nobody else is coming.
  EXPECT_EQ(s.phase(), RendezvousPhase::kClosed);
  EXPECT_THAT(Ids(*s.result()), ElementsAre("a", "b"));
}

TEST(RendezvousPreflightTest, WithoutAQuorumOfFitNodesTheRoundFailsNamingEachBadNode) {
  RendezvousConfig c = Cfg(3, 3, {"h1", "h2", "h3"});
  c.expected_agents = 3;
  RendezvousState s(c, 0);
  EXPECT_FALSE(s.Join(Unfit("a", "h1", "ports", "port 29500 is in use"), 1).ok());
  ASSERT_TRUE(s.Join(P("b", "h2"), 1).ok());
  EXPECT_EQ(s.phase(), RendezvousPhase::kWaiting);  // h3 has not answered yet
  EXPECT_FALSE(s.Join(Unfit("c", "h3", "gpus", "sees 2 GPU(s), the job needs 4"), 2).ok());
  EXPECT_EQ(s.phase(), RendezvousPhase::kFailed);
  const std::string why(s.failure().message());
  EXPECT_THAT(why, HasSubstr("preflight: 1 fit node(s) of 3 needed; no worker was started"));
  EXPECT_THAT(why, HasSubstr("\n  h1: ports: port 29500 is in use"));
  EXPECT_THAT(why, HasSubstr("\n  h3: gpus: sees 2 GPU(s), the job needs 4"));
}

TEST(RendezvousPreflightTest, ASpareTakesTheUnfitNodesPlace) {
  RendezvousConfig c = Cfg(2, 2);
  c.expected_agents = 3;  // two nodes and a spare
  RendezvousState s(c, 0);
  ASSERT_TRUE(s.Join(P("a", "h1"), 1).ok());
  EXPECT_FALSE(s.Join(Unfit("b", "h2", "command", "python3: not found on PATH"), 1).ok());
  EXPECT_EQ(s.phase(), RendezvousPhase::kWaiting);
  ASSERT_TRUE(s.Join(P("c", "h3"), 2).ok());
  EXPECT_EQ(s.phase(), RendezvousPhase::kClosed);
  EXPECT_THAT(Ids(*s.result()), ElementsAre("a", "c"));
}

TEST(RendezvousPreflightTest, ATimeoutNamesUnfitNodesWithTheirReasonsNotAsNeverArrived) {
  RendezvousConfig c = Cfg(2, 2, {"h1", "h2", "h3"}, /*join_timeout=*/30);
  c.expected_agents = 3;
  RendezvousState s(c, 0);
  ASSERT_TRUE(s.Join(P("a", "h1"), 1).ok());
  EXPECT_FALSE(s.Join(Unfit("b", "h2", "clock", "+12.000 s against the launcher"), 1).ok());
  EXPECT_EQ(s.Poll(31), RendezvousPhase::kFailed);
  const std::string why(s.failure().message());
  EXPECT_THAT(why, HasSubstr("never arrived: h3"));
  EXPECT_THAT(why, ::testing::Not(HasSubstr("never arrived: h2")));
  EXPECT_THAT(why, HasSubstr("h2: clock: +12.000 s against the launcher"));
}

TEST(RendezvousPreflightTest, WithoutAnExpectedCountAnUnfitNodeDoesNotEndTheWait) {
  RendezvousState s(Cfg(2, 2), 0);
  ASSERT_TRUE(s.Join(P("a", "h1"), 1).ok());
  EXPECT_FALSE(s.Join(Unfit("b", "h2", "disk", "full"), 1).ok());
  EXPECT_EQ(s.phase(), RendezvousPhase::kWaiting);
}

}  // namespace
}  // namespace dlaunch
