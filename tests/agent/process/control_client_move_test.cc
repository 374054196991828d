// ControlClient across a move (docs/relays.md, "When a relay is lost"), against a real gRPC
// server on loopback: every message is numbered, what the launcher acknowledged (heard_seq) is
// forgotten, and what it did not, except heartbeats and log lines, goes first on the next session
// with its own number, the numbering going on from there.
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <grpcpp/grpcpp.h>

#include "absl/strings/str_cat.h"
#include "agent/control_client.h"
#include "dlaunch/control.grpc.pb.h"
#include "gtest/gtest.h"
#include "proto/grpc_status.h"

namespace dlaunch {
namespace {

using std::chrono::seconds;

// A launcher's Session that records each message as "<seq> <kind>" and acknowledges every
// message up to seq 2 once it has read seq 2.
class RecordingLauncher final : public v1::Control::Service {
 public:
  grpc::Status Session(grpc::ServerContext*,
                       grpc::ServerReaderWriter<v1::LauncherCommand, v1::AgentMessage>* stream) override {
    v1::AgentMessage m;
    while (stream->Read(&m)) {
      if (m.has_batch()) {
        for (const v1::AgentMessage& inner : m.batch().messages()) Note(inner);
      } else {
        Note(m);
      }
      if (Seen(2)) {
        v1::LauncherCommand ack;
        ack.set_heard_seq(2);
        stream->Write(ack);
      }
    }
    return grpc::Status::OK;
  }

  // Waits up to 10 s until `seq` was read.
  bool WaitFor(uint64_t seq) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, seconds(10), [&] { return newest_ >= seq; });
  }
  std::vector<std::string> Take() {
    std::lock_guard<std::mutex> lock(mu_);
    std::vector<std::string> out = std::move(seen_);
    seen_.clear();
    return out;
  }

 private:
  void Note(const v1::AgentMessage& m) {
    std::string kind = m.has_worker()      ? absl::StrCat("worker ", m.worker().rank())
                       : m.has_heartbeat() ? "heartbeat"
                       : m.has_log()       ? "log"
                                           : "other";
    {
      std::lock_guard<std::mutex> lock(mu_);
      seen_.push_back(absl::StrCat(m.seq(), " ", kind));
      newest_ = std::max(newest_, m.seq());
    }
    cv_.notify_all();
  }
  bool Seen(uint64_t seq) {
    std::lock_guard<std::mutex> lock(mu_);
    return newest_ >= seq;
  }

  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::string> seen_;
  uint64_t newest_ = 0;
};

v1::AgentMessage Worker(int rank) {
  v1::AgentMessage m;
  m.set_node_id(3);
  m.mutable_worker()->set_rank(rank);
  m.mutable_worker()->set_state(v1::WorkerEvent::STARTED);
  return m;
}

v1::AgentMessage Heartbeat() {
  v1::AgentMessage m;
  m.set_node_id(3);
  m.mutable_heartbeat()->set_workers_running(2);
  return m;
}

v1::AgentMessage Log() {
  v1::AgentMessage m;
  m.set_node_id(3);
  m.mutable_log()->add_lines("a line");
  return m;
}

// A RecordingLauncher served on a loopback port for each test.
class ControlClientMoveTest : public ::testing::Test {
 protected:
  void SetUp() override {
    grpc::ServerBuilder builder;
    int port = 0;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
    builder.RegisterService(&launcher);
    server_ = builder.BuildAndStart();
    ASSERT_GT(port, 0);
    target = absl::StrCat("127.0.0.1:", port);
  }
  void TearDown() override {
    if (server_) server_->Shutdown(std::chrono::system_clock::now() + seconds(1));
  }

  RecordingLauncher launcher;
  std::string target;
  const JobCredentials creds{"token", "", ""};

 private:
  std::unique_ptr<grpc::Server> server_;
};

TEST_F(ControlClientMoveTest, WhatWasNotAcknowledgedGoesFirstOnTheNextSession) {

  std::mutex mu;
  std::condition_variable cv;
  uint64_t acked = 0;
  ControlClient first(target, creds);
  ASSERT_TRUE(first.OpenSession(
                       [&](const v1::LauncherCommand& c) {
                         first.Ack(c.heard_seq());
                         std::lock_guard<std::mutex> lock(mu);
                         acked = std::max(acked, c.heard_seq());
                         cv.notify_all();
                       },
                       [](const std::string&, bool) {})
                  .ok());
  first.Send(Worker(0));  // seq 1
  first.Send(Worker(1));  // seq 2: acknowledged
  {
    std::unique_lock<std::mutex> lock(mu);
    ASSERT_TRUE(cv.wait_for(lock, seconds(10), [&] { return acked >= 2; }));
  }
  first.Send(Worker(2));     // seq 3: written, not acknowledged
  first.Send(Heartbeat());   // seq 4: not kept
  first.Send(Log());         // seq 5: not kept
  ASSERT_TRUE(launcher.WaitFor(5));
  first.Close(std::chrono::milliseconds(2000));
  EXPECT_EQ(launcher.Take(),
            (std::vector<std::string>{"1 worker 0", "2 worker 1", "3 worker 2", "4 heartbeat", "5 log"}));

  ControlClient::Unsent unsent = first.TakeUnsent();
  EXPECT_EQ(unsent.last_seq, 5u);
  ASSERT_EQ(unsent.messages.size(), 1u);
  EXPECT_EQ(unsent.messages[0].worker().rank(), 2);

  ControlClient second(target, creds);
  second.Resume(std::move(unsent));
  ASSERT_TRUE(second.OpenSession([](const v1::LauncherCommand&) {}, [](const std::string&, bool) {}).ok());
  second.Send(Heartbeat());  // seq 6
  ASSERT_TRUE(launcher.WaitFor(6));
  second.Close(std::chrono::milliseconds(2000));
  EXPECT_EQ(launcher.Take(), (std::vector<std::string>{"3 worker 2", "6 heartbeat"}));
}

TEST_F(ControlClientMoveTest, LogLinesGoUpAfterHundredsOfNumberedMessages) {
  // The bound on queued log bytes counts each log message as it is written, its number included:
  // counted without it, every written message left the count a few bytes short, and once the
  // shortfall passed a message's size every log line was refused (from the 8th of these).
  ControlClient client(target, creds);
  ASSERT_TRUE(client.OpenSession([](const v1::LauncherCommand&) {}, [](const std::string&, bool) {}).ok());
  for (uint64_t seq = 1; seq <= 500; ++seq) {
    ASSERT_TRUE(client.Queue(Log())) << "log message " << seq << " refused";
    client.Wake();
    ASSERT_TRUE(launcher.WaitFor(seq)) << seq;  // written before the next is queued
  }
  client.Close(std::chrono::milliseconds(2000));
  EXPECT_EQ(launcher.Take().size(), 500u);
}

}  // namespace
}  // namespace dlaunch
