#include "worker/tcp_probe.h"

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <thread>

#include "gtest/gtest.h"

namespace dlaunch::worker {
namespace {

// A bound but not yet listening socket reserves a port that refuses connections.
int BindLoopback(int* port) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
  socklen_t len = sizeof(addr);
  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  *port = ntohs(addr.sin_port);
  return fd;
}

TEST(TcpProbeTest, ReturnsOnceTheListenerAppears) {
  int port;
  const int fd = BindLoopback(&port);
  std::thread later([fd] {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    listen(fd, 4);
  });
  const auto start = std::chrono::steady_clock::now();
  absl::Status s = WaitForTcpListener("127.0.0.1", port, std::chrono::seconds(20));
  const auto waited = std::chrono::steady_clock::now() - start;
  later.join();
  close(fd);
  EXPECT_TRUE(s.ok()) << s;
  EXPECT_GE(waited, std::chrono::milliseconds(150));
  EXPECT_LT(waited, std::chrono::seconds(10));
}

TEST(TcpProbeTest, DeadlineWhenNobodyListens) {
  int port;
  const int fd = BindLoopback(&port);
  absl::Status s = WaitForTcpListener("127.0.0.1", port, std::chrono::milliseconds(100));
  close(fd);
  EXPECT_TRUE(absl::IsDeadlineExceeded(s)) << s;
}

TEST(TcpProbeTest, UnresolvableHostIsInvalidArgument) {
  EXPECT_TRUE(absl::IsInvalidArgument(
      WaitForTcpListener("no-such-host.invalid", 1, std::chrono::milliseconds(10))));
}

}  // namespace
}  // namespace dlaunch::worker
