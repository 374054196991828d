// The launcher's control endpoint over a real gRPC stream on loopback: an agent's AgentBatch
// reaches the handler as the messages it holds, in order, as if each had come alone. Served as
// the launcher serves it (proto/callback_server.h): by gRPC's own polling where it has it, and
// by the polling threads that gRPC before 1.37 needs, proven on any gRPC.
#include "launcher/control/control_service.h"

#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "proto/callback_server.h"
#include "proto/grpc_status.h"

namespace dlaunch {
namespace {

// Writes down what the service hands it, as "opened 7", "worker 4", "ended 7".
class RecordingHandler final : public ControlHandler {
 public:
  void HandleJoin(const Participant&, JoinReply reply) override {
    reply(absl::UnimplementedError("not in this test"));
  }
  void HandleJoinCancelled(const std::string&, uint64_t) override {}
  void HandleSessionOpened(int, int node, std::shared_ptr<AgentSession>) override {
    Note(absl::StrCat("opened ", node));
  }
  void HandleAgentMessage(int, int node, const v1::AgentMessage& m) override {
    if (m.has_worker()) Note(absl::StrCat("worker ", m.worker().rank(), " node ", node));
    if (m.has_round_ended()) Note(absl::StrCat("round_ended ", m.round_ended().round()));
    if (m.has_heartbeat()) Note(absl::StrCat("heartbeat sent ", m.sent_ms()));
    if (m.has_batch()) Note("batch");
  }
  void HandleSessionEnded(int, int node) override { Note(absl::StrCat("ended ", node)); }
  void HandleRefused(const std::string&, const std::string&) override { Note("refused"); }

  // What was handled once the session has ended (or after 30 s).
  std::vector<std::string> WaitForEnd() {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait_for(lock, std::chrono::seconds(30), [&] {
      return !seen_.empty() && seen_.back().rfind("ended", 0) == 0;
    });
    return seen_;
  }

 private:
  void Note(std::string what) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      seen_.push_back(std::move(what));
    }
    cv_.notify_all();
  }
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::string> seen_;
};

v1::AgentMessage Message(int64_t sent_ms) {
  v1::AgentMessage m;
  m.set_node_id(7);
  m.set_agent_id("h7:1:abc");
  m.set_sent_ms(sent_ms);
  return m;
}

v1::AgentMessage Started(int rank) {
  v1::AgentMessage m = Message(10 + rank);
  m.mutable_worker()->set_rank(rank);
  m.mutable_worker()->set_state(v1::WorkerEvent::STARTED);
  return m;
}

class ControlServiceTest : public ::testing::TestWithParam<bool> {};

TEST_P(ControlServiceTest, ABatchIsHandledMessageByMessageInOrder) {
  const bool own_polling = GetParam();
  if (!own_polling && !CallbackServer::GrpcPollsCallbacks()) {
    GTEST_SKIP() << "this gRPC serves callback services only with polling threads";
  }
  boost::asio::io_context io;
  auto work = boost::asio::make_work_guard(io);
  std::thread loop([&] { io.run(); });
  RecordingHandler handler;
  ControlService service("token", io, &handler);
  grpc::ServerBuilder builder;
  int port = 0;
  builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
  builder.RegisterService(&service);
  std::unique_ptr<CallbackServer> server = CallbackServer::BuildAndStart(builder, own_polling);
  ASSERT_TRUE(server);
  ASSERT_GT(port, 0);
  EXPECT_EQ(server->polling_threads() > 0, own_polling);

  {
    auto stub = v1::Control::NewStub(grpc::CreateChannel(
        absl::StrCat("127.0.0.1:", port), grpc::InsecureChannelCredentials()));
    grpc::ClientContext ctx;
    ctx.AddMetadata(kTokenMetadataKey, "token");
    auto stream = stub->Session(&ctx);

    v1::AgentMessage batch = Message(13);
    auto* messages = batch.mutable_batch()->mutable_messages();
    *messages->Add() = Started(4);
    *messages->Add() = Started(5);
    v1::AgentMessage nested = Message(12);  // a batch in a batch is not unpacked
    *nested.mutable_batch()->add_messages() = Started(99);
    *messages->Add() = nested;
    v1::AgentMessage ended = Message(13);
    ended.mutable_round_ended()->set_round(0);
    *messages->Add() = ended;
    ASSERT_TRUE(stream->Write(batch));

    v1::AgentMessage heartbeat = Message(20);
    heartbeat.mutable_heartbeat()->set_workers_running(0);
    ASSERT_TRUE(stream->Write(heartbeat));
    stream->WritesDone();
    v1::LauncherCommand ignored;
    while (stream->Read(&ignored)) {
    }
    EXPECT_TRUE(stream->Finish().ok());
  }

  const std::vector<std::string> seen = handler.WaitForEnd();
  EXPECT_EQ(seen, (std::vector<std::string>{"opened 7", "worker 4 node 7", "worker 5 node 7",
                                            "round_ended 0", "heartbeat sent 20", "ended 7"}));
  service.StopPosting();
  server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(1));
  EXPECT_EQ(server->polling_threads(), 0);  // joined
  work.reset();
  io.stop();
  loop.join();
}

INSTANTIATE_TEST_SUITE_P(Polling, ControlServiceTest, ::testing::Values(false, true),
                         [](const ::testing::TestParamInfo<bool>& p) {
                           return p.param ? "OwnThreads" : "GrpcOwn";
                         });

}  // namespace
}  // namespace dlaunch
