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

v1::AgentMessage Heartbeat(uint64_t seq, int64_t sent_ms, int round = 0) {
  v1::AgentMessage m;
  m.set_round(round);
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
  void SetUp() override { Begin({}); }

  void Begin(RestartSettings restarts) {
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
    JobConfig config = job_actions::TestJobConfig(2);
    config.restarts = restarts;
    controller_ = std::make_unique<JobController>(
        io_, clock_, JobSettings{config, *dir, rendezvous, join_template, false, {}}, out_, err_);
    ASSERT_TRUE(controller_->Start({}).ok());
    clock_.Advance(milliseconds(1000));
    for (int i = 0; i < 2; ++i) {
      controller_->HandleJoin(Agent(i), [this, i](absl::StatusOr<v1::JoinResponse> r) {
        joined_[i] = r.ok() ? r->node_id() : -1;
      });
    }
    ASSERT_EQ(joined_[0], 0) << out_.str() << err_.str();
    ASSERT_EQ(joined_[1], 1);
    for (int i = 0; i < 2; ++i) first_[i] = Open(100 + i, i);
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
  std::shared_ptr<RecordingSession> first_[2];  // each node's first session
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

// One restart allowed, 3 s of back-off: round 1 is sent 1 s before its workers may start.
class JobControllerRestartTest : public JobControllerTest {
 protected:
  void SetUp() override { Begin({.max_restarts = 1, .backoff_initial_s = 3}); }
};

// The last command on `session` that starts a round; null when none did.
const v1::LauncherCommand* LastStart(const RecordingSession& session) {
  for (auto it = session.sent.rbegin(); it != session.sent.rend(); ++it) {
    if (it->has_start()) return &*it;
  }
  return nullptr;
}

TEST_F(JobControllerRestartTest, AStartRoundThatWentWithARelayIsSentAgainWithWhatIsLeftOfItsLead) {
  const RecordingSession& relayed = *first_[0];  // node 0's, through the relay
  uint64_t seq0 = 1, seq1 = 1;
  controller_->HandleAgentMessage(101, 1, job_actions::WorkerMessage(0, 1, v1::WorkerEvent::FAILED, 1));
  controller_->HandleAgentMessage(100, 0, job_actions::RoundEndedMessage(0, 40000));
  controller_->HandleAgentMessage(101, 1, job_actions::RoundEndedMessage(0, 40001));
  // Both wait for round 1, heartbeating, until node 0's relay carries its StartRound.
  for (int step = 0; step < 100 && LastStart(relayed) == nullptr; ++step) {
    if (step % 10 == 0) {
      controller_->HandleAgentMessage(100, 0, Heartbeat(seq0++, NowMs()));
      controller_->HandleAgentMessage(101, 1, Heartbeat(seq1++, NowMs()));
    }
    clock_.Advance(milliseconds(100));
  }
  const v1::LauncherCommand* sent = LastStart(relayed);
  ASSERT_NE(sent, nullptr) << out_.str();
  EXPECT_EQ(sent->start().place().round(), 1);
  EXPECT_GT(sent->start().start_after_ms(), 300) << "sent ahead of its workers' start";
  const int32_t lead_ms = sent->start().start_after_ms();

  // The relay goes with the StartRound still in it; 300 ms later the agent, still in round 0,
  // opens its own session and gets it again, with 300 ms less to wait.
  controller_->HandleSessionsMoving("relay-0", {{100, 0}});
  clock_.Advance(milliseconds(300));
  std::shared_ptr<RecordingSession> moved = Open(200, 0);
  controller_->HandleAgentMessage(200, 0, Heartbeat(seq0++, NowMs(), /*round=*/0));
  const v1::LauncherCommand* again = LastStart(*moved);
  ASSERT_NE(again, nullptr) << out_.str();
  EXPECT_EQ(again->start().place().round(), 1);
  EXPECT_EQ(again->start().place().node_id(), 0);
  EXPECT_EQ(again->start().place().node_rank(), sent->start().place().node_rank());
  EXPECT_NEAR(again->start().start_after_ms(), lead_ms - 300, 1);
  // An agent that has the round already gets nothing again.
  std::shared_ptr<RecordingSession> other = Open(201, 1);
  controller_->HandleAgentMessage(201, 1, Heartbeat(seq1++, NowMs(), /*round=*/1));
  EXPECT_EQ(LastStart(*other), nullptr);
}

}  // namespace
}  // namespace dlaunch
