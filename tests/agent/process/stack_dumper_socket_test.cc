// StackDumper asking a rank's PyTorch worker server for its stacks over a real Unix socket
// served on the test's loop, and falling back to py-spy when the socket is gone.
#include <sys/wait.h>

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/agent/stack_dumper_fixture.h"

namespace dlaunch {
namespace {

using stack_dumper_testing::Fixture;
using stack_dumper_testing::StackDumperTest;
using std::chrono::milliseconds;
using ::testing::HasSubstr;

// A worker server on a Unix socket of the test's loop that answers one request with `body`.
class FakeWorkerServer {
 public:
  FakeWorkerServer(boost::asio::io_context& io, const std::string& path, std::string body)
      : acceptor_(io, boost::asio::local::stream_protocol::endpoint(path)), socket_(io),
        answer_("HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: " +
                std::to_string(body.size()) + "\r\n\r\n" + body) {
    acceptor_.async_accept(socket_, [this](const boost::system::error_code& ec) {
      if (ec) return;
      boost::asio::async_read_until(socket_, request_, "\r\n\r\n",
                                    [this](const boost::system::error_code& rec, size_t) {
                                      if (rec) return;
                                      asked_ = std::string(boost::asio::buffer_cast<const char*>(request_.data()),
                                                           request_.size());
                                      boost::asio::write(socket_, boost::asio::buffer(answer_));
                                      socket_.close();
                                    });
    });
  }
  const std::string& asked() const { return asked_; }

 private:
  boost::asio::local::stream_protocol::acceptor acceptor_;
  boost::asio::local::stream_protocol::socket socket_;
  boost::asio::streambuf request_;
  std::string answer_;
  std::string asked_;
};

TEST_F(StackDumperTest, ARankRunningPyTorchsWorkerServerIsAskedFirst) {
  python_ = {4242};
  servers_[4242] = dir_.path() + "/worker.sock";
  FakeWorkerServer server(io_, servers_[4242], Fixture("torch_init.faulthandler.txt"));
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
