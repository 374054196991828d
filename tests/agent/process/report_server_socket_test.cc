// The ReportServer on a real Unix socket, with a writer thread: its bound on a line.
#include "agent/workers/report_server.h"

#include <stdlib.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"

namespace dlaunch {
namespace {

// Connects to the Unix socket at `path`; -1 on failure.
int ConnectTo(const std::string& path) {
  const int fd = socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  path.copy(addr.sun_path, sizeof(addr.sun_path) - 1);
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

TEST(ReportServerTest, ALineWithoutANewlineIsRefusedOnceItPassesTheBound) {
  // A worker writing 8 MiB without a newline: the agent holds at most the bound, says why the
  // connection ends, and closes it; the reports before it were read.
  char dir[] = "/tmp/dlaunch-report-XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  const std::string path = std::string(dir) + "/report.sock";
  boost::asio::io_context io;
  std::vector<v1::WorkerReport> reports;
  std::vector<std::string> bad;
  ReportServer server(io, [](pid_t) { return 3; },
                      [&](const v1::WorkerReport& r) { reports.push_back(r); },
                      [&](int rank, const std::string& error) {
                        bad.push_back(std::to_string(rank) + ": " + error);
                      });
  ASSERT_TRUE(server.Listen(path).ok());
  const int fd = ConnectTo(path);
  ASSERT_GE(fd, 0);
  std::thread writer([fd] {
    const std::string first = "{\"step\": 1}\n";
    ssize_t ignored = write(fd, first.data(), first.size());
    const std::string chunk(64 << 10, 'x');
    for (int i = 0; i < 128; ++i) {
      // Closed by the agent: EPIPE, without the SIGPIPE that would end the test.
      if (send(fd, chunk.data(), chunk.size(), MSG_NOSIGNAL) < 0) break;
    }
    (void)ignored;
    close(fd);
  });
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (bad.empty() && std::chrono::steady_clock::now() < deadline) {
    io.run_for(std::chrono::milliseconds(50));
  }
  writer.join();
  unlink(path.c_str());
  rmdir(dir);
  ASSERT_EQ(reports.size(), 1u);
  EXPECT_EQ(reports[0].step(), 1);
  ASSERT_EQ(bad.size(), 1u);
  EXPECT_EQ(bad[0], "3: a report line longer than 1048576 bytes without a newline; connection "
                    "closed");
  EXPECT_EQ(server.open_connections(), 0);
}

}  // namespace
}  // namespace dlaunch
