// StackDumper asking a rank's PyTorch worker server for its stacks over a real Unix socket
// served on the test's loop, and falling back to py-spy when the socket is gone.
#include <sys/wait.h>

#include <map>
#include <memory>
#include <string>

#include "absl/strings/match.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/agent/stack_dumper_fixture.h"

namespace dlaunch {
namespace {

using stack_dumper_testing::Fixture;
using stack_dumper_testing::StackDumperTest;
using std::chrono::milliseconds;
using ::testing::HasSubstr;

// A worker server on a Unix socket of the test's loop: answers each request for a handler of
// `bodies` with its body, and any other with 404, as torch's does.
class FakeWorkerServer {
 public:
  FakeWorkerServer(boost::asio::io_context& io, const std::string& path,
                   std::map<std::string, std::string> bodies)
      : io_(io), acceptor_(io, boost::asio::local::stream_protocol::endpoint(path)),
        bodies_(std::move(bodies)) {
    Accept();
  }
  // All requests, one after the other.
  const std::string& asked() const { return asked_; }

 private:
  struct Connection {
    explicit Connection(boost::asio::io_context& io) : socket(io) {}
    boost::asio::local::stream_protocol::socket socket;
    boost::asio::streambuf request;
  };
  void Accept() {
    auto c = std::make_shared<Connection>(io_);
    acceptor_.async_accept(c->socket, [this, c](const boost::system::error_code& ec) {
      if (ec) return;
      Accept();
      boost::asio::async_read_until(c->socket, c->request, "\r\n\r\n",
                                    [this, c](const boost::system::error_code& rec, size_t) {
                                      if (!rec) Answer(*c);
                                    });
    });
  }
  void Answer(Connection& c) {
    const std::string request(boost::asio::buffer_cast<const char*>(c.request.data()), c.request.size());
    asked_ += request;
    std::string status = "404 Not Found", body = "handler not found";
    for (const auto& [handler, text] : bodies_) {
      if (absl::StrContains(request, "/handler/" + handler + " ")) {
        status = "200 OK";
        body = text;
      }
    }
    const std::string answer = "HTTP/1.1 " + status + "\r\nContent-Type: text/plain\r\nContent-Length: " +
                               std::to_string(body.size()) + "\r\n\r\n" + body;
    boost::asio::write(c.socket, boost::asio::buffer(answer));
    c.socket.close();
  }

  boost::asio::io_context& io_;
  boost::asio::local::stream_protocol::acceptor acceptor_;
  std::map<std::string, std::string> bodies_;
  std::string asked_;
};

TEST_F(StackDumperTest, ARankRunningPyTorchsWorkerServerIsAskedFirst) {
  python_ = {4242};
  servers_[4242] = dir_.path() + "/worker.sock";
  FakeWorkerServer server(io_, servers_[4242],
                          {{"dump_traceback", Fixture("torch_init.faulthandler.txt")}});
  Start({{0, 4242}});
  for (int i = 0; i < 100 && done_ == 0; ++i) {
    io_.restart();
    io_.run_one_for(milliseconds(50));
  }
  ASSERT_EQ(done_, 1);
  EXPECT_THAT(server.asked(), HasSubstr("POST /handler/dump_traceback HTTP/1.1\r\n"));
  EXPECT_THAT(server.asked(), HasSubstr("Content-Length: 0\r\n"));
  EXPECT_EQ(results_[0].source, "worker server");
  ASSERT_TRUE(results_[0].stuck_at.has_value());
  EXPECT_EQ(DescribeFrame(*results_[0].stuck_at), "setup (/home/user/project/train.py:11)");
  EXPECT_FALSE(launcher_.started(1000)) << "no py-spy, no gdb";
  EXPECT_THAT(Stacks(0), HasSubstr("from worker server"));
  // Its flight recorder was asked for too; a torch without the handler leaves why.
  EXPECT_THAT(server.asked(), HasSubstr("POST /handler/fr_trace_json HTTP/1.1\r\n"));
  ASSERT_TRUE(results_[0].flight_record.has_value());
  EXPECT_THAT(results_[0].flight_record->why_none(), HasSubstr("404"));
  EXPECT_EQ(results_[0].flight_record->last_seq(), 0);
}

// The recorder of a rank stopped before its peers' fourth all-reduce (PyTorch 2.11, Gloo):
// read after its stacks, kept as torch wrote it beside them, and summed up for the launcher.
TEST_F(StackDumperTest, AWorkerServersFlightRecorderIsReadAfterTheStacksAndKept) {
  python_ = {4242};
  servers_[4242] = dir_.path() + "/worker.sock";
  const std::string dump = Fixture("fr_gloo_rank1.json");
  FakeWorkerServer server(io_, servers_[4242],
                          {{"dump_traceback", Fixture("torch_init.faulthandler.txt")},
                           {"fr_trace_json", dump}});
  Start({{1, 4242}});
  for (int i = 0; i < 100 && done_ == 0; ++i) {
    io_.restart();
    io_.run_one_for(milliseconds(50));
  }
  ASSERT_EQ(done_, 1);
  ASSERT_TRUE(results_[0].flight_record.has_value());
  const v1::FlightRecord& fr = *results_[0].flight_record;
  EXPECT_EQ(fr.why_none(), "");
  EXPECT_EQ(fr.entries(), 3);
  EXPECT_EQ(fr.last_seq(), 3);
  EXPECT_EQ(fr.last_collective(), "gloo:all_reduce");
  EXPECT_EQ(ReadFile(stacks_ + "/rank-1.fr.json"), dump);
  const v1::RankStacks m = RankStacksOf(results_[0], dir_.path());
  EXPECT_EQ(m.flight_record().path(), "stacks/rank-1.fr.json");
  EXPECT_EQ(m.flight_record().last_seq(), 3);
}

// A CUDA build keeps NCCL's entries in a recorder of their own, served by dump_nccl_trace_json:
// asked for when fr_trace_json holds nothing. (The NCCL dump here is written by hand in the
// documented schema: no GPU took it.)
TEST_F(StackDumperTest, WhereTheCpuRecorderIsEmptyNcclsIsAskedFor) {
  python_ = {4242};
  servers_[4242] = dir_.path() + "/worker.sock";
  const std::string nccl = R"({"version": "2.10", "entries": [{"collective_seq_id": 41,
      "pg_id": 0, "process_group": ["0", "default_pg"], "profiling_name": "nccl:all_reduce",
      "state": "started", "is_p2p": false}], "pg_status": {"0": {"last_enqueued_collective": "41"}}})";
  FakeWorkerServer server(io_, servers_[4242],
                          {{"dump_traceback", Fixture("torch_init.faulthandler.txt")},
                           {"fr_trace_json", R"({"version": "2.10", "entries": []})"},
                           {"dump_nccl_trace_json", nccl}});
  Start({{0, 4242}});
  for (int i = 0; i < 100 && done_ == 0; ++i) {
    io_.restart();
    io_.run_one_for(milliseconds(50));
  }
  ASSERT_EQ(done_, 1);
  EXPECT_THAT(server.asked(), HasSubstr("POST /handler/dump_nccl_trace_json HTTP/1.1\r\n"));
  ASSERT_TRUE(results_[0].flight_record.has_value());
  EXPECT_EQ(results_[0].flight_record->last_seq(), 41);
  EXPECT_EQ(results_[0].flight_record->last_collective(), "nccl:all_reduce");
  EXPECT_EQ(results_[0].flight_record->why_none(), "");
  EXPECT_EQ(ReadFile(stacks_ + "/rank-0.fr.json"), nccl);
}

// A worker server that gives the stacks but never answers for its recorder costs the
// recorder's share of the budget, not the dump.
TEST_F(StackDumperTest, ARecorderThatDoesNotAnswerIsGivenUpOnItsShare) {
  python_ = {4242};
  servers_[4242] = dir_.path() + "/worker.sock";
  // Answers the stacks; the second connection is accepted and never answered.
  boost::asio::local::stream_protocol::acceptor acceptor(
      io_, boost::asio::local::stream_protocol::endpoint(servers_[4242]));
  boost::asio::local::stream_protocol::socket first(io_), second(io_);
  const std::string body = Fixture("torch_init.faulthandler.txt");
  const std::string answer = "HTTP/1.1 200 OK\r\nContent-Length: " + std::to_string(body.size()) +
                             "\r\n\r\n" + body;
  boost::asio::streambuf request;
  acceptor.async_accept(first, [&](const boost::system::error_code& ec) {
    if (ec) return;
    boost::asio::async_read_until(first, request, "\r\n\r\n",
                                  [&](const boost::system::error_code& rec, size_t) {
                                    if (rec) return;
                                    boost::asio::write(first, boost::asio::buffer(answer));
                                    first.close();
                                    acceptor.async_accept(second, [](const boost::system::error_code&) {});
                                  });
  });
  Start({{0, 4242}});
  for (int i = 0; i < 100 && log_.empty(); ++i) {
    io_.restart();
    io_.run_one_for(milliseconds(50));
  }
  for (int i = 0; i < 20; ++i) {  // the recorder's request reaches the server
    io_.restart();
    io_.run_one_for(milliseconds(10));
  }
  EXPECT_EQ(done_, 0);
  clock_.Advance(milliseconds(2500));  // the worker server's share: a quarter of 10 s
  Settle();
  ASSERT_EQ(done_, 1);
  EXPECT_EQ(results_[0].source, "worker server");
  ASSERT_TRUE(results_[0].flight_record.has_value());
  EXPECT_THAT(results_[0].flight_record->why_none(), HasSubstr("did not answer in time"));
}

TEST_F(StackDumperTest, AWorkerServerThatIsGoneFallsBackToPySpy) {
  python_ = {4242};
  servers_[4242] = dir_.path() + "/no-such.sock";
  Start({{0, 4242}});
  for (int i = 0; i < 100 && !launcher_.started(1000); ++i) {
    io_.restart();
    io_.run_one_for(milliseconds(50));
  }
  ASSERT_TRUE(launcher_.started(1000));
  EXPECT_EQ(launcher_.options(1000).argv[0], py_spy_);
  launcher_.Write(1000, Fixture("exit_thread.py-spy.txt"));
  launcher_.Exit(1000, W_EXITCODE(0, 0));
  Settle();
  ASSERT_EQ(done_, 1);
  EXPECT_EQ(DescribeFrame(*results_[0].stuck_at), "drain_queue (/home/user/project/exit_thread.py:4)");
  EXPECT_THAT(Stacks(0), HasSubstr("# worker server " + servers_[4242] + ": connect"));
}

}  // namespace
}  // namespace dlaunch
