// The control channel on the wire: a 2-node `dlaunch run` whose agents reach the launcher
// through a recording TCP relay. With TLS (the default) the job token, the job's name and the
// workers' log lines never appear in the bytes; with --no-tls they do, which shows the recording
// sees what a capture on the network would.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "absl/strings/str_cat.h"
#include "tests/integration/test_process.h"

namespace dlaunch::testing {
namespace {

using std::chrono::seconds;

const std::string kBin = DLAUNCH_BIN_DIR;

int ListenLoopback(int* port) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(a);
  if (fd < 0 || bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0 || listen(fd, 64) != 0 ||
      getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
    if (fd >= 0) close(fd);
    return -1;
  }
  *port = ntohs(a.sin_port);
  return fd;
}

// Accepts on a loopback port and relays each connection to `target_port`, keeping a copy of
// every byte either way.
class RecordingRelay {
 public:
  explicit RecordingRelay(int target_port) : target_port_(target_port) {
    listen_fd_ = ListenLoopback(&port_);
    acceptor_ = std::thread([this] { AcceptLoop(); });
  }
  ~RecordingRelay() {
    stop_ = true;
    shutdown(listen_fd_, SHUT_RDWR);
    acceptor_.join();
    for (std::thread& t : pumps_) t.join();
    close(listen_fd_);
  }
  int port() const { return port_; }
  std::string bytes() const {
    std::lock_guard<std::mutex> lock(mu_);
    return bytes_;
  }

 private:
  void AcceptLoop() {
    while (!stop_) {
      int client = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (client < 0) return;
      int server = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
      sockaddr_in a{};
      a.sin_family = AF_INET;
      a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
      a.sin_port = htons(target_port_);
      if (connect(server, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0) {
        close(client);
        close(server);
        continue;
      }
      pumps_.emplace_back([this, client, server] { Pump(client, server); });
    }
  }

  // Both directions of one connection until either side closes.
  void Pump(int a, int b) {
    char buf[65536];
    pollfd fds[2] = {{a, POLLIN, 0}, {b, POLLIN, 0}};
    while (!stop_) {
      if (poll(fds, 2, 200) < 0) break;
      bool closed = false;
      for (int i = 0; i < 2 && !closed; ++i) {
        if (!(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
        ssize_t n = read(fds[i].fd, buf, sizeof(buf));
        if (n <= 0) {
          closed = true;
          break;
        }
        {
          std::lock_guard<std::mutex> lock(mu_);
          bytes_.append(buf, n);
        }
        for (ssize_t off = 0; off < n;) {
          ssize_t w = write(fds[1 - i].fd, buf + off, n - off);
          if (w <= 0) {
            closed = true;
            break;
          }
          off += w;
        }
      }
      if (closed) break;
    }
    close(a);
    close(b);
  }

  int target_port_;
  int port_ = 0;
  int listen_fd_ = -1;
  std::atomic<bool> stop_{false};
  std::thread acceptor_;
  std::vector<std::thread> pumps_;  // touched by the acceptor thread only until the join
  mutable std::mutex mu_;
  std::string bytes_;
};

int FreePort() {
  int port = 0;
  int fd = ListenLoopback(&port);
  close(fd);
  return port;
}

struct RelayedRun {
  int exit_code = -1;
  std::string token;
  std::string wire;
  std::string output;
};

// A 2-node job of the probe (it reports, so log lines and metrics cross the wire too) whose
// agents reach the launcher through the relay.
RelayedRun RunThroughRelay(const std::vector<std::string>& extra_flags) {
  const std::string tmp = MakeTempDir();
  const std::string job_dir = tmp + "/secretjobname";
  const int launcher_port = FreePort();
  RecordingRelay relay(launcher_port);
  std::vector<std::string> argv = {kBin + "/dlaunch", "run", "--nnodes", "2", "--nproc-per-node",
                                   "1", "--job-dir", job_dir, "--port",
                                   std::to_string(launcher_port), "--control-addr",
                                   absl::StrCat("127.0.0.1:", relay.port()), "--heartbeat", "1"};
  argv.insert(argv.end(), extra_flags.begin(), extra_flags.end());
  argv.insert(argv.end(), {"--", kBin + "/dlaunch-test-probe", "--report", "--sleep", "2"});
  ChildProcess run(argv, tmp);
  RelayedRun out;
  std::optional<int> code = run.Wait(seconds(120));
  out.exit_code = code.value_or(-1);
  out.output = run.Stdout() + run.Stderr();
  out.token = ReadFile(job_dir + "/token");
  out.token = out.token.substr(0, out.token.find('\n'));
  out.wire = relay.bytes();
  return out;
}

TEST(ControlTlsWireTest, TheTokenAndTheJobNeverCrossTheWireInClear) {
  RelayedRun tls = RunThroughRelay({});
  ASSERT_EQ(tls.exit_code, 0) << tls.output;
  ASSERT_EQ(tls.token.size(), 32u);
  // The agents' whole conversation went through the relay: joins, sessions, reports.
  ASSERT_GT(tls.wire.size(), 2000u) << "the relay carried too little: " << tls.output;
  EXPECT_EQ(tls.wire.find(tls.token), std::string::npos) << "the token is readable on the wire";
  EXPECT_EQ(tls.wire.find("secretjobname"), std::string::npos);
  EXPECT_EQ(tls.wire.find("probe rank"), std::string::npos) << "a worker's log line is readable";
  EXPECT_EQ(tls.wire.find("x-dlaunch-token"), std::string::npos);

  // The same job over plain TCP: the recording sees all of it.
  RelayedRun plain = RunThroughRelay({"--no-tls"});
  ASSERT_EQ(plain.exit_code, 0) << plain.output;
  EXPECT_NE(plain.wire.find(plain.token), std::string::npos) << plain.wire.size() << " bytes";
  EXPECT_NE(plain.wire.find("secretjobname"), std::string::npos);
}

// An agent of job B sent to job A's launcher (a reused port, a stale address): A cannot prove it
// holds B's key, and the agent says so instead of only timing out.
TEST(ControlTlsWireTest, AnAgentRefusesALauncherThatIsNotItsJobs) {
  const std::string tmp = MakeTempDir();
  ChildProcess b({kBin + "/dlaunch", "run", "--nnodes", "1", "--job-dir", tmp + "/b", "--", "true"},
                 tmp);
  ASSERT_EQ(b.Wait(seconds(60)), 0) << b.Stderr();
  ChildProcess a({kBin + "/dlaunch", "run", "--nnodes", "1", "--job-dir", tmp + "/a", "--", "sleep",
                  "60"},
                 tmp);
  ASSERT_TRUE(WaitFor([&] { return ReadFile(tmp + "/a/launcher.json").find("address") !=
                                   std::string::npos; },
                      seconds(30)));
  const std::string info = ReadFile(tmp + "/a/launcher.json");
  const size_t at = info.find("\"address\":\"") + 11;
  const std::string address = info.substr(at, info.find('"', at) - at);
  ChildProcess agent({kBin + "/dlaunch-agent", "--control", address, "--token-file",
                      tmp + "/b/token", "--join-timeout", "3"},
                     tmp);
  std::optional<int> code = agent.Wait(seconds(60));
  a.Signal(SIGINT);
  ASSERT_TRUE(code.has_value());
  EXPECT_EQ(*code, 3) << agent.Stderr();
  EXPECT_NE(agent.Stderr().find("did not prove it holds the key of the certificate the token file "
                                "pins (sha256:"),
            std::string::npos)
      << agent.Stderr();
  EXPECT_EQ(agent.Stderr().find("Handshake failed"), std::string::npos) << agent.Stderr();
  EXPECT_TRUE(a.Wait(seconds(60)).has_value());
}

}  // namespace
}  // namespace dlaunch::testing
