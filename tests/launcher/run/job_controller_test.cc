// JobController on a ManualTimerClock, with recording sessions in place of gRPC streams and no
// node-launcher process: the shell's wiring of SessionLedger and JobState. A node whose relay
// went keeps its place and resumes its session, with its messages sent again dropped and its
// move confirmed by an echo; a node that does not come back is lost on the job's clock, not
// before. The job directory is a scratch one (the journal is real).
#include "launcher/run/job_controller.h"

#include <stdlib.h>

#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "absl/strings/match.h"
#include "tests/testing/fake_agent_clock.h"
#include "tests/testing/job_actions.h"
#include "tests/testing/test_files.h"

namespace dlaunch {
namespace {

using std::chrono::milliseconds;

// Keeps every command the launcher sends on one session.
class RecordingSession final : public AgentSession {
 public:
  void Send(v1::LauncherCommand command) override { sent.push_back(std::move(command)); }
  std::vector<v1::LauncherCommand> sent;
};

v1::AgentMessage Heartbeat(uint64_t seq, int64_t sent_ms) {
  v1::AgentMessage m;
  m.set_seq(seq);
  m.set_sent_ms(sent_ms);
  m.mutable_heartbeat()->set_workers_running(1);
  return m;
}

Participant Agent(int i) {
  Participant p;
  p.agent_id = "a" + std::to_string(i);
  p.host = "n" + std::to_string(i);
  p.addr = "10.0.0." + std::to_string(i);
  p.slots = 1;
  p.worker_port = 29500;
  return p;
}

// Two nodes joined, each with a session open (100 + node id), at 1 s on the job's clock.
class JobControllerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // JobDirectory::Create records the job in the user's job index: keep it in the scratch.
    if (const char* state = getenv("XDG_STATE_HOME")) saved_state_home_ = state;
    setenv("XDG_STATE_HOME", scratch_.path().c_str(), 1);
    absl::StatusOr<JobDirectory> dir = JobDirectory::Create(scratch_.path() + "/job");
    ASSERT_TRUE(dir.ok()) << dir.status();
    RendezvousConfig rendezvous;
    rendezvous.min_nodes = rendezvous.max_nodes = 2;
    rendezvous.host_order = {"n0", "n1"};
    rendezvous.expected_agents = 2;
    v1::JoinResponse join_template;
    join_template.set_job_id("job-1");
    controller_ = std::make_unique<JobController>(
        io_, clock_,
        JobSettings{job_actions::TestJobConfig(2), *dir, rendezvous, join_template, false, {}},
        out_, err_);
    ASSERT_TRUE(controller_->Start({}).ok());
    clock_.Advance(milliseconds(1000));
    for (int i = 0; i < 2; ++i) {
      controller_->HandleJoin(Agent(i), [this, i](absl::StatusOr<v1::JoinResponse> r) {
        joined_[i] = r.ok() ? r->node_id() : -1;
      });
    }
    ASSERT_EQ(joined_[0], 0) << out_.str() << err_.str();
    ASSERT_EQ(joined_[1], 1);
    for (int i = 0; i < 2; ++i) Open(100 + i, i);
  }

  void TearDown() override {
    controller_.reset();
    if (saved_state_home_) {
      setenv("XDG_STATE_HOME", saved_state_home_->c_str(), 1);
    } else {
      unsetenv("XDG_STATE_HOME");
    }
  }

  std::shared_ptr<RecordingSession> Open(int session_id, int node) {
    auto session = std::make_shared<RecordingSession>();
    controller_->HandleSessionOpened(session_id, node, session);
    return session;
  }
  // The job's clock in ms, as the agents' sent_ms here.
  int64_t NowMs() const {
    return std::chrono::duration_cast<milliseconds>(clock_.Now().time_since_epoch()).count();
  }
  // `node` heartbeats on `session` every second for `seconds` seconds, seq from `seq` on.
  void KeepAlive(int session, int node, uint64_t& seq, int seconds) {
    for (int s = 0; s < seconds; ++s) {
      controller_->HandleAgentMessage(session, node, Heartbeat(seq++, NowMs()));
      clock_.Advance(milliseconds(1000));
    }
  }
  std::string Events() const { return ReadFile(scratch_.path() + "/job/events.jsonl"); }

  ScratchDir scratch_{"dlaunch-controller"};
  boost::asio::io_context io_;
  ManualTimerClock clock_;
  std::ostringstream out_, err_;
  std::unique_ptr<JobController> controller_;
  int joined_[2] = {-2, -2};
  std::optional<std::string> saved_state_home_;
};

TEST_F(JobControllerTest, ANodeWhoseRelayWentResumesItsSessionAndTheEchoConfirmsTheMove) {
  uint64_t seq1 = 1;
  controller_->HandleAgentMessage(100, 0, Heartbeat(1, NowMs()));
  controller_->HandleAgentMessage(100, 0, Heartbeat(2, NowMs()));
  KeepAlive(101, 1, seq1, 1);
  controller_->HandleSessionsMoving("relay-0", {{100, 0}});
  EXPECT_TRUE(absl::StrContains(Events(), "relay_lost")) << Events();

  std::shared_ptr<RecordingSession> moved = Open(200, 0);
  EXPECT_TRUE(absl::StrContains(Events(), "session_resumed")) << Events();
  // Sent again: seq 2 was handled on the relay's session.
  controller_->HandleAgentMessage(200, 0, Heartbeat(2, NowMs() - 1000));
  EXPECT_TRUE(moved->sent.empty()) << "a message handled already is not answered";
  const int64_t sent_ms = NowMs();
  controller_->HandleAgentMessage(200, 0, Heartbeat(3, sent_ms));
  ASSERT_EQ(moved->sent.size(), 1u) << "the first new heartbeat is answered at once";
  EXPECT_EQ(moved->sent[0].heard_ms(), sent_ms);
  EXPECT_EQ(moved->sent[0].heard_seq(), 3u);
  EXPECT_FALSE(moved->sent[0].has_stop());
  EXPECT_FALSE(moved->sent[0].has_start());

  // The relay's session is seen to end only now: node 0 stays, on its new session.
  controller_->HandleSessionEnded(100, 0);
  uint64_t seq0 = 4;
  for (int s = 0; s < 10; ++s) {
    controller_->HandleAgentMessage(200, 0, Heartbeat(seq0++, NowMs()));
    KeepAlive(101, 1, seq1, 1);
  }
  EXPECT_FALSE(absl::StrContains(Events(), "node_lost")) << Events();
  EXPECT_GT(moved->sent.size(), 5u) << "the pings reach the node on its new session";
  EXPECT_EQ(moved->sent.back().heard_seq(), seq0 - 1);
}

TEST_F(JobControllerTest, ANodeThatDoesNotComeBackIsLostAtTheLossLimitOnTheJobsClock) {
  uint64_t seq1 = 1;
  controller_->HandleAgentMessage(100, 0, Heartbeat(1, NowMs()));
  controller_->HandleSessionsMoving("relay-0", {{100, 0}});
  // Heard at t, lost after 3 s (a heartbeat of 1 s, 3 misses): not at 2 s ...
  KeepAlive(101, 1, seq1, 2);
  EXPECT_FALSE(absl::StrContains(Events(), "node_lost")) << Events();
  // ... and by 5 s, as the ticks run on the job's clock.
  KeepAlive(101, 1, seq1, 3);
  EXPECT_TRUE(absl::StrContains(Events(), "node_lost")) << Events() << out_.str();
}

}  // namespace
}  // namespace dlaunch
