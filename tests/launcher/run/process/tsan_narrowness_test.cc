// The ThreadSanitizer build (scripts/sanitize.sh tsan, against abseil and gRPC built with TSan)
// must report a race in dlaunch's own code, and nothing else: its suppressions
// (scripts/sanitize/tsan.supp) must not hide one. This test runs real gRPC servers on loopback
// in a child process (this binary again, one disabled test) under the suppressions, with
// halt_on_error=0 so that every report is printed, in three modes:
//   clean     the real ControlService through Preflight, Join and a session with a batch and a
//             command written back: no report at all;
//   loop      the same, plus a handler whose HandleAgentMessage (on the event loop) writes a
//             plain int that a plain std::thread writes too, unsynchronised;
//   reaction  a reactor whose OnReadDone writes that int while a std::thread writes it: gRPC's
//             own synchronisation, which TSan now sees, must not order the two.
// Each planted race must be reported as one data race naming both functions that made it. The
// planting thread stays alive until the agent is done: TSan drops a report whose earlier access
// it can no longer trace back, and a finished thread's trace may be reused. Without
// ThreadSanitizer the test skips.
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <thread>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "launcher/control/control_service.h"
#include "proto/grpc_status.h"

namespace dlaunch {
namespace {

int planted = 0;                       // the racy int: plain, never locked
std::atomic<bool> thread_wrote{false};  // relaxed only: orders nothing for TSan
std::atomic<bool> agent_done{false};    // the same

__attribute__((noinline)) void PlantedWriteOnThread() { planted = planted + 1; }
__attribute__((noinline)) void PlantedWriteOnLoop() { planted = planted + 2; }
__attribute__((noinline)) void PlantedWriteInReaction() { planted = planted + 3; }

// Waits, without creating an order TSan sees, until `flag` is set.
void Await(const std::atomic<bool>& flag) {
  while (!flag.load(std::memory_order_relaxed)) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

class Handler final : public ControlHandler {
 public:
  explicit Handler(bool plant) : plant_(plant) {}
  void HandleJoin(const Participant& p, JoinReply reply) override {
    v1::JoinResponse resp;
    resp.set_node_rank(3);
    resp.set_job_id(p.agent_id);
    reply(std::move(resp));
  }
  void HandleJoinCancelled(const std::string&, uint64_t) override {}
  void HandleSessionOpened(int, int, std::shared_ptr<AgentSession> session) override {
    session->Send(v1::LauncherCommand());  // a ping: the write path and its OnWriteDone
  }
  void HandleAgentMessage(int, int, const v1::AgentMessage&) override {
    if (plant_) PlantedWriteOnLoop();
  }
  void HandleSessionEnded(int, int) override {}
  void HandleRefused(const std::string&, const std::string&) override {}

 private:
  const bool plant_;
};

// The pattern of the session reactor in launcher/run, around a planted write.
class PlantedReactor final : public grpc::ServerBidiReactor<v1::AgentMessage, v1::LauncherCommand> {
 public:
  PlantedReactor() { StartRead(&in_); }
  void OnReadDone(bool ok) override {
    if (!ok) {
      Finish(grpc::Status::OK);
      return;
    }
    PlantedWriteInReaction();
    in_.Clear();
    StartRead(&in_);
  }
  void OnDone() override { delete this; }

 private:
  v1::AgentMessage in_;
};

class PlantedService final : public v1::Control::CallbackService {
  grpc::ServerBidiReactor<v1::AgentMessage, v1::LauncherCommand>* Session(
      grpc::CallbackServerContext*) override {
    return new PlantedReactor();
  }
};

// One agent's calls: Preflight and Join (unless only a session is served), then a session with
// a batch and a heartbeat, reading what the launcher writes until it ends the stream.
void Agent(int port, bool unary, bool wait_for_thread) {
  auto stub = v1::Control::NewStub(grpc::CreateChannel(absl::StrCat("127.0.0.1:", port),
                                                       grpc::InsecureChannelCredentials()));
  if (unary) {
    grpc::ClientContext pctx;
    pctx.AddMetadata(kTokenMetadataKey, "token");
    v1::PreflightPlan plan;
    EXPECT_TRUE(stub->Preflight(&pctx, v1::PreflightRequest(), &plan).ok());
    grpc::ClientContext jctx;
    jctx.AddMetadata(kTokenMetadataKey, "token");
    v1::JoinRequest req;
    req.set_agent_id("h1:1:abc");
    v1::JoinResponse resp;
    EXPECT_TRUE(stub->Join(&jctx, req, &resp).ok());
    EXPECT_EQ(resp.node_rank(), 3);
  }
  grpc::ClientContext ctx;
  ctx.AddMetadata(kTokenMetadataKey, "token");
  auto stream = stub->Session(&ctx);
  if (wait_for_thread) Await(thread_wrote);
  v1::AgentMessage batch;
  batch.set_node_id(3);
  batch.mutable_batch()->add_messages()->mutable_worker()->set_rank(0);
  batch.mutable_batch()->add_messages()->mutable_heartbeat()->set_workers_running(1);
  EXPECT_TRUE(stream->Write(batch));
  v1::AgentMessage heartbeat;
  heartbeat.set_node_id(3);
  heartbeat.mutable_heartbeat()->set_workers_running(1);
  EXPECT_TRUE(stream->Write(heartbeat));
  stream->WritesDone();
  v1::LauncherCommand command;
  while (stream->Read(&command)) {
  }
  EXPECT_TRUE(stream->Finish().ok());
}

// The child: DLAUNCH_TSAN_NARROWNESS names the mode.
TEST(TsanNarrownessChild, DISABLED_Run) {
  const char* env = std::getenv("DLAUNCH_TSAN_NARROWNESS");
  if (env == nullptr) GTEST_SKIP() << "run by TsanNarrownessTest as a child";
  const std::string mode = env;
  const bool reaction = mode == "reaction";
  boost::asio::io_context io;
  auto work = boost::asio::make_work_guard(io);
  std::thread loop([&] { io.run(); });
  Handler handler(mode == "loop");
  ControlService service("token", io, &handler);
  PlantedService planted_service;
  grpc::ServerBuilder builder;
  int port = 0;
  builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
  if (reaction) {
    builder.RegisterService(&planted_service);
  } else {
    builder.RegisterService(&service);
  }
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  ASSERT_GT(port, 0);

  std::thread racer;
  if (mode != "clean") {
    racer = std::thread([] {
      PlantedWriteOnThread();
      thread_wrote.store(true, std::memory_order_relaxed);
      Await(agent_done);
    });
  }
  Agent(port, !reaction, racer.joinable());
  agent_done.store(true, std::memory_order_relaxed);
  if (racer.joinable()) racer.join();

  service.StopPosting();
  server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(1));
  work.reset();
  loop.join();
  io.restart();
  io.poll();
}

#if defined(__SANITIZE_THREAD__)
#define DLAUNCH_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define DLAUNCH_TSAN 1
#endif
#endif
#if !defined(DLAUNCH_TSAN)
#define DLAUNCH_TSAN 0
#endif
constexpr bool kTsanBuild = DLAUNCH_TSAN;
constexpr char kNeedsTsan[] = "needs a ThreadSanitizer build (scripts/sanitize.sh tsan)";

// Runs the child in `mode` under the repository's suppressions; its output and exit status.
std::string RunChild(const std::string& mode, int* status) {
  char self[4096];
  const ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
  if (n <= 0) return "readlink failed";
  self[n] = '\0';
  const std::string cmd = absl::StrCat(
      "DLAUNCH_TSAN_NARROWNESS=", mode, " TSAN_OPTIONS=halt_on_error=0:suppressions=",
      DLAUNCH_SOURCE_DIR, "/scripts/sanitize/tsan.supp '", self,
      "' --gtest_filter=TsanNarrownessChild.DISABLED_Run --gtest_also_run_disabled_tests 2>&1");
  FILE* p = ::popen(cmd.c_str(), "r");
  if (p == nullptr) return "popen failed";
  std::string out;
  char buf[4096];
  size_t got;
  while ((got = std::fread(buf, 1, sizeof(buf), p)) > 0) out.append(buf, got);
  *status = ::pclose(p);
  return out;
}

// Whether one of the data races in `out` names both `a` and `b`.
bool RaceBetween(const std::string& out, const std::string& a, const std::string& b) {
  const std::string sep = "==================";
  for (size_t at = out.find(sep); at != std::string::npos;) {
    const size_t next = out.find(sep, at + sep.size());
    const std::string report = out.substr(at, next == std::string::npos ? next : next - at);
    if (report.find("WARNING: ThreadSanitizer: data race") != std::string::npos &&
        report.find(a) != std::string::npos && report.find(b) != std::string::npos) {
      return true;
    }
    at = next;
  }
  return false;
}

const char kRan[] = "[       OK ] TsanNarrownessChild.DISABLED_Run";

// The child in `mode` runs to its end and reports the planted thread's write racing `planted`.
void ExpectPlantedRace(const std::string& mode, const std::string& planted) {
  int status = -1;
  const std::string out = RunChild(mode, &status);
  EXPECT_NE(out.find(kRan), std::string::npos) << out;
  EXPECT_TRUE(RaceBetween(out, "PlantedWriteOnThread", planted)) << out;
}

TEST(TsanNarrownessTest, TheRealServiceRunsWithoutAReport) {
  if (!kTsanBuild) GTEST_SKIP() << kNeedsTsan;
  int status = -1;
  const std::string out = RunChild("clean", &status);
  EXPECT_NE(out.find(kRan), std::string::npos) << out;
  EXPECT_EQ(out.find("ThreadSanitizer"), std::string::npos) << out;
  EXPECT_EQ(status, 0) << out;
}

TEST(TsanNarrownessTest, ARaceOnTheEventLoopIsReported) {
  if (!kTsanBuild) GTEST_SKIP() << kNeedsTsan;
  ExpectPlantedRace("loop", "PlantedWriteOnLoop");
}

TEST(TsanNarrownessTest, ARaceInAReactionIsReported) {
  if (!kTsanBuild) GTEST_SKIP() << kNeedsTsan;
  ExpectPlantedRace("reaction", "PlantedWriteInReaction");
}

}  // namespace
}  // namespace dlaunch
