// WorkerStoreServer over real sockets: PyTorch's own TCPStore clients (Debian's 1.13, and 2.x
// when Torch2Python() exists) run every Store call against it; a connection that breaks the
// protocol is closed and counted while the others go on.
#include "agent/store/worker_store.h"

#include <unistd.h>

#include <future>
#include <mutex>
#include <optional>
#include <thread>

#include <boost/asio.hpp>
#include <gtest/gtest.h>

#include "absl/strings/str_cat.h"
#include "agent/core/worker_store_wire.h"
#include "tests/integration/test_process.h"

namespace dlaunch {
namespace {

using boost::asio::ip::tcp;
using std::chrono::seconds;
using testing::ChildProcess;

// The server on its own io_context thread, as the agent runs it on its loop.
class StoreFixture : public ::testing::Test {
 protected:
  void SetUp() override {
    auto server = WorkerStoreServer::Listen(io_, 0, [this](const std::string& l) {
      std::lock_guard<std::mutex> lock(mu_);
      log_ += l + "\n";
    });
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = *std::move(server);
    port_ = server_->port();
    thread_ = std::thread([this] { io_.run(); });
  }
  void TearDown() override {
    boost::asio::post(io_, [this] { server_.reset(); });
    work_.reset();
    thread_.join();
  }
  WorkerStoreServer::Stats Stats() {
    std::promise<WorkerStoreServer::Stats> p;
    boost::asio::post(io_, [&] { p.set_value(server_->stats()); });
    return p.get_future().get();
  }
  std::string Log() {
    std::lock_guard<std::mutex> lock(mu_);
    return log_;
  }
  void RunClient(const std::string& python) {
    const std::string tmp = testing::MakeTempDir();
    if (std::string why = testing::WhyPythonCannotImport(python, "torch.distributed", tmp);
        !why.empty()) {
      GTEST_SKIP() << why;
    }
    ChildProcess client({python, std::string(DLAUNCH_SOURCE_DIR) +
                                     "/tests/agent/process/worker_store_client.py",
                         "127.0.0.1", std::to_string(port_)},
                        tmp);
    auto code = client.Wait(seconds(170));
    ASSERT_TRUE(code.has_value()) << "the client did not finish: " << client.Stderr();
    EXPECT_EQ(*code, 0) << client.Stdout() << client.Stderr() << Log();
    EXPECT_NE(client.Stdout().find("ok "), std::string::npos) << client.Stdout();
    EXPECT_EQ(Stats().errors, 0u) << Log();
  }

  boost::asio::io_context io_;
  std::optional<boost::asio::executor_work_guard<boost::asio::io_context::executor_type>> work_{
      boost::asio::make_work_guard(io_)};
  std::unique_ptr<WorkerStoreServer> server_;
  int port_ = 0;
  std::thread thread_;
  std::mutex mu_;
  std::string log_;
};

TEST_F(StoreFixture, Torch113ClientUsesEveryStoreCall) { RunClient("/usr/bin/python3"); }

TEST_F(StoreFixture, Torch2ClientUsesEveryStoreCall) {
  RunClient(testing::Torch2Python());
}

std::string Str(const std::string& s) {
  std::string out;
  AppendStoreI64(&out, static_cast<int64_t>(s.size()));
  return out + s;
}

TEST_F(StoreFixture, ABadClientIsClosedAndCountedWhileOthersGoOn) {
  boost::asio::io_context client_io;
  tcp::socket good(client_io), bad(client_io);
  good.connect(tcp::endpoint(boost::asio::ip::address_v4::loopback(), port_));
  bad.connect(tcp::endpoint(boost::asio::ip::address_v4::loopback(), port_));
  // PyTorch 2.x: VALIDATE, then SET k=v and GET k.
  std::string hello(1, '\0');
  AppendStoreU32(&hello, kStoreValidationMagic);
  boost::asio::write(good, boost::asio::buffer(hello + std::string(1, '\1') + Str("k") + Str("v")));
  boost::asio::write(bad, boost::asio::buffer(std::string("GET / HTTP/1.1\r\n\r\n")));
  char byte = 0;
  boost::system::error_code ec;
  boost::asio::read(bad, boost::asio::buffer(&byte, 1), ec);
  EXPECT_EQ(ec, boost::asio::error::eof);  // closed by the server
  boost::asio::write(good, boost::asio::buffer(std::string(1, '\3') + Str("k")));
  std::string reply(9, '\0');
  boost::asio::read(good, boost::asio::buffer(reply.data(), reply.size()));
  EXPECT_EQ(reply, Str("v"));
  ASSERT_TRUE(testing::WaitFor([&] { return Stats().errors == 1; }, std::chrono::seconds(10)));
  EXPECT_EQ(Stats().open, 1u);
  EXPECT_NE(Log().find("worker store: closed the connection from 127.0.0.1:"), std::string::npos)
      << Log();
  EXPECT_NE(Log().find("not a c10d TCPStore client"), std::string::npos) << Log();
}

}  // namespace
}  // namespace dlaunch
