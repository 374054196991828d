// RendezvousHost on a ManualTimerClock: Joins are answered when the round closes (on a Join or
// at its deadline timer), fails, or the launcher stops. Time moves only when the test says, so
// a deadline is checked just before and just after it passes.
#include "launcher/run/rendezvous_host.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/testing/fake_agent_clock.h"

namespace dlaunch {
namespace {

using ::testing::HasSubstr;

Participant Agent(const std::string& id, const std::string& host, int slots = 1) {
  Participant p;
  p.agent_id = id;
  p.host = host;
  p.addr = host;
  p.slots = slots;
  p.worker_port = 29500;
  return p;
}

class RendezvousHostTest : public ::testing::Test {
 protected:
  std::unique_ptr<RendezvousHost> Make(RendezvousConfig config) {
    v1::JoinResponse tmpl;
    tmpl.set_job_id("job-1");
    return std::make_unique<RendezvousHost>(
        clock_, config, tmpl, clock_.Now(),
        RendezvousHost::Callbacks{[this](const Participant&, int joined, int) { joined_ = joined; },
                                  [this](const RoundResult& r) { closed_.push_back(r.world_size); },
                                  [this](const absl::Status& st) { failed_.push_back(st); },
                                  nullptr, nullptr});
  }
  JoinReply Into(absl::StatusOr<v1::JoinResponse>* out) {
    return [out](absl::StatusOr<v1::JoinResponse> r) { *out = std::move(r); };
  }

  ManualTimerClock clock_;
  int joined_ = 0;
  std::vector<int> closed_;
  std::vector<absl::Status> failed_;
};

TEST_F(RendezvousHostTest, LastJoinerClosesTheRoundAndEveryJoinIsAnswered) {
  RendezvousConfig c;
  c.min_nodes = c.max_nodes = 2;
  c.host_order = {"b", "a"};
  auto host = Make(c);
  host->Start();
  absl::StatusOr<v1::JoinResponse> ra = absl::UnknownError("unanswered");
  absl::StatusOr<v1::JoinResponse> rb = ra;
  host->Join(Agent("ida", "a", 2), Into(&ra));
  EXPECT_EQ(ra.status().code(), absl::StatusCode::kUnknown) << "waits for the second node";
  host->Join(Agent("idb", "b", 1), Into(&rb));
  ASSERT_TRUE(ra.ok()) << ra.status();
  ASSERT_TRUE(rb.ok()) << rb.status();
  EXPECT_EQ(ra->job_id(), "job-1");
  EXPECT_EQ(rb->node_rank(), 0);
  EXPECT_EQ(ra->node_rank(), 1);
  EXPECT_EQ(ra->rank_offset(), 1);
  EXPECT_EQ(ra->world_size(), 3);
  EXPECT_EQ(joined_, 2);
  EXPECT_THAT(closed_, ::testing::ElementsAre(3));
  EXPECT_EQ(clock_.pending(), 0) << "the deadline timer is cancelled once the round closed";
  clock_.Advance(std::chrono::seconds(600));
  EXPECT_EQ(closed_.size(), 1u);
}

TEST_F(RendezvousHostTest, LastCallDeadlineClosesAWaitingRound) {
  RendezvousConfig c;
  c.min_nodes = 1;
  c.max_nodes = 2;
  c.last_call_s = 5;
  auto host = Make(c);
  host->Start();
  absl::StatusOr<v1::JoinResponse> r = absl::UnknownError("unanswered");
  host->Join(Agent("id", "a"), Into(&r));
  clock_.Advance(std::chrono::milliseconds(4990));
  EXPECT_EQ(r.status().code(), absl::StatusCode::kUnknown) << "the last call is not over yet";
  clock_.Advance(std::chrono::milliseconds(20));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->nnodes(), 1);
  EXPECT_EQ(closed_.size(), 1u);
}

TEST_F(RendezvousHostTest, JoinDeadlineFailsTheRoundAndItsWaitingJoins) {
  RendezvousConfig c;
  c.min_nodes = c.max_nodes = 2;
  c.host_order = {"a", "b"};
  c.join_timeout_s = 30;
  auto host = Make(c);
  host->Start();
  absl::StatusOr<v1::JoinResponse> r = absl::UnknownError("unanswered");
  clock_.Advance(std::chrono::seconds(10));
  host->Join(Agent("id", "a"), Into(&r));
  clock_.Advance(std::chrono::milliseconds(19990));
  EXPECT_EQ(r.status().code(), absl::StatusCode::kUnknown) << "30 s from the start, not the join";
  clock_.Advance(std::chrono::milliseconds(20));
  EXPECT_EQ(r.status().code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_THAT(r.status().message(), HasSubstr("never arrived: b"));
  ASSERT_EQ(failed_.size(), 1u);
  EXPECT_EQ(failed_[0], r.status());
}

TEST_F(RendezvousHostTest, NobodyJoiningStillFailsOnTime) {
  RendezvousConfig c;
  c.join_timeout_s = 30;
  auto host = Make(c);
  host->Start();
  clock_.Advance(std::chrono::seconds(31));
  ASSERT_EQ(failed_.size(), 1u);
  EXPECT_EQ(failed_[0].code(), absl::StatusCode::kDeadlineExceeded);
}

TEST_F(RendezvousHostTest, CancelledJoinLeavesTheRound) {
  RendezvousConfig c;
  c.min_nodes = c.max_nodes = 2;
  auto host = Make(c);
  host->Start();
  absl::StatusOr<v1::JoinResponse> r = absl::UnknownError("unanswered");
  host->Join(Agent("id", "a"), Into(&r));
  host->Cancel("id");
  EXPECT_EQ(r.status().code(), absl::StatusCode::kCancelled);
  // Its place is free again: two more agents fill the round.
  absl::StatusOr<v1::JoinResponse> r1 = r, r2 = r;
  host->Join(Agent("id1", "a"), Into(&r1));
  host->Join(Agent("id2", "b"), Into(&r2));
  EXPECT_TRUE(r1.ok());
  EXPECT_TRUE(r2.ok());
}

// An agent whose Join through a relay broke joins the launcher again on a new call before the
// launcher has seen the old one go: the new call replaces the old (no "already joined"), and
// the old call's cancel, arriving after, leaves the new one in the round.
TEST_F(RendezvousHostTest, ANewerJoinOfTheSameAgentReplacesItsWaitingOne) {
  RendezvousConfig c;
  c.min_nodes = c.max_nodes = 2;
  auto host = Make(c);
  host->Start();
  Participant through_relay = Agent("id", "a");
  through_relay.join_call = 1;
  Participant direct = through_relay;
  direct.join_call = 7;
  absl::StatusOr<v1::JoinResponse> old_call = absl::UnknownError("unanswered");
  absl::StatusOr<v1::JoinResponse> new_call = old_call, other = old_call;
  host->Join(through_relay, Into(&old_call));
  host->Join(direct, Into(&new_call));
  EXPECT_EQ(old_call.status().code(), absl::StatusCode::kCancelled) << old_call.status();
  EXPECT_THAT(old_call.status().message(), HasSubstr("replaced"));
  EXPECT_EQ(new_call.status().code(), absl::StatusCode::kUnknown) << "waits for the round";
  EXPECT_EQ(joined_, 1) << "counted once";
  host->Cancel("id", 1);  // the relayed call's cancel, late
  EXPECT_EQ(new_call.status().code(), absl::StatusCode::kUnknown) << new_call.status();
  host->Join(Agent("id2", "b"), Into(&other));
  ASSERT_TRUE(new_call.ok()) << new_call.status();
  ASSERT_TRUE(other.ok()) << other.status();
  EXPECT_EQ(new_call->world_size(), 2);
}

// A cancel of the call that waits still takes it out.
TEST_F(RendezvousHostTest, TheWaitingCallsOwnCancelLeavesTheRound) {
  RendezvousConfig c;
  c.min_nodes = c.max_nodes = 2;
  auto host = Make(c);
  host->Start();
  Participant p = Agent("id", "a");
  p.join_call = 3;
  absl::StatusOr<v1::JoinResponse> r = absl::UnknownError("unanswered");
  host->Join(p, Into(&r));
  host->Cancel("id", 2);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kUnknown) << "another call's cancel";
  host->Cancel("id", 3);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kCancelled) << r.status();
}

TEST_F(RendezvousHostTest, JoinsBeforeStartAndAfterShutdownAreRefused) {
  RendezvousConfig c;
  c.min_nodes = c.max_nodes = 2;
  auto host = Make(c);
  absl::StatusOr<v1::JoinResponse> early = absl::UnknownError("unanswered");
  host->Join(Agent("id0", "a"), Into(&early));
  EXPECT_EQ(early.status().code(), absl::StatusCode::kCancelled);
  host->Start();
  absl::StatusOr<v1::JoinResponse> waiting = absl::UnknownError("unanswered");
  host->Join(Agent("id1", "a"), Into(&waiting));
  host->Shutdown();
  EXPECT_EQ(waiting.status().code(), absl::StatusCode::kCancelled);
  EXPECT_THAT(waiting.status().message(), HasSubstr("launcher is stopping"));
  absl::StatusOr<v1::JoinResponse> late = absl::UnknownError("unanswered");
  host->Join(Agent("id2", "b"), Into(&late));
  EXPECT_EQ(late.status().code(), absl::StatusCode::kCancelled);
  EXPECT_EQ(clock_.pending(), 0);
  clock_.Advance(std::chrono::seconds(600));
  EXPECT_TRUE(closed_.empty());
  EXPECT_TRUE(failed_.empty());
}

}  // namespace
}  // namespace dlaunch

namespace dlaunch {
namespace {

TEST(RendezvousHostSparesTest, LateJoinersAreSparesWithIdsAfterTheMembersWhenTheJobTakesThem) {
  ManualTimerClock clock;
  RendezvousConfig c;
  c.min_nodes = c.max_nodes = 1;
  v1::JoinResponse tmpl;
  tmpl.set_job_id("job-1");
  std::vector<std::pair<std::string, int>> spares;
  RendezvousHost host(clock, c, tmpl, clock.Now(),
                      RendezvousHost::Callbacks{[](const Participant&, int, int) {},
                                                [](const RoundResult&) {},
                                                [](const absl::Status&) {},
                                                [&](const Participant& p, int id) {
                                                  spares.emplace_back(p.agent_id, id);
                                                },
                                                nullptr});
  host.Start();
  absl::StatusOr<v1::JoinResponse> member, s1, s2;
  host.Join(Agent("m", "a"), [&](absl::StatusOr<v1::JoinResponse> r) { member = std::move(r); });
  host.Join(Agent("s1", "b"), [&](absl::StatusOr<v1::JoinResponse> r) { s1 = std::move(r); });
  host.Join(Agent("s2", "c"), [&](absl::StatusOr<v1::JoinResponse> r) { s2 = std::move(r); });
  ASSERT_TRUE(member.ok() && s1.ok() && s2.ok());
  EXPECT_FALSE(member->spare());
  EXPECT_EQ(member->node_id(), 0);
  EXPECT_TRUE(s1->spare());
  EXPECT_EQ(s1->node_id(), 1);
  EXPECT_EQ(s1->job_id(), "job-1");
  EXPECT_EQ(s2->node_id(), 2);
  EXPECT_THAT(spares, ::testing::ElementsAre(std::make_pair(std::string("s1"), 1),
                                             std::make_pair(std::string("s2"), 2)));
}

TEST_F(RendezvousHostTest, WithoutSparesALateJoinerIsRefused) {
  RendezvousConfig c;
  c.min_nodes = c.max_nodes = 1;
  auto host = Make(c);
  host->Start();
  absl::StatusOr<v1::JoinResponse> member, late;
  host->Join(Agent("m", "a"), Into(&member));
  host->Join(Agent("late", "b"), Into(&late));
  ASSERT_TRUE(member.ok());
  EXPECT_EQ(late.status().code(), absl::StatusCode::kFailedPrecondition);
}

}  // namespace
}  // namespace dlaunch
