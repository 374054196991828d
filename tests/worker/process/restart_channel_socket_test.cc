// The worker's side of the in-process restart protocol on a real Unix socket, with a test
// standing in for the agent: hello on connect, leave and join read back, left/ready/cannot sent,
// an agent that goes away ends a wait for join at once, and a leave shuts the process's TCP
// connections down (what frees a Gloo collective blocked on a stuck peer).
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <string>

#include "gtest/gtest.h"
#include "worker/restart_channel.h"

namespace dlaunch::worker {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

class RestartChannelTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char dir[] = "/tmp/restart_channel_test_XXXXXX";
    ASSERT_NE(mkdtemp(dir), nullptr);
    dir_ = dir;
    path_ = dir_ + "/r.sock";
    listener_ = socket(AF_UNIX, SOCK_STREAM, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::strcpy(addr.sun_path, path_.c_str());
    ASSERT_EQ(bind(listener_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
    ASSERT_EQ(listen(listener_, 1), 0);
  }
  void TearDown() override {
    if (agent_ >= 0) close(agent_);
    close(listener_);
    unlink(path_.c_str());
    rmdir(dir_.c_str());
  }

  std::unique_ptr<RestartChannel> Connect() {
    absl::StatusOr<std::unique_ptr<RestartChannel>> channel = RestartChannel::Connect(path_);
    EXPECT_TRUE(channel.ok()) << channel.status();
    agent_ = accept(listener_, nullptr, nullptr);
    EXPECT_GE(agent_, 0);
    return channel.ok() ? *std::move(channel) : nullptr;
  }

  // The next line the worker sent.
  std::string ReadLine() {
    char c;
    std::string line;
    while (read(agent_, &c, 1) == 1 && c != '\n') line += c;
    return line;
  }
  void Say(const std::string& line) {
    const std::string text = line + "\n";
    ASSERT_EQ(write(agent_, text.data(), text.size()), static_cast<ssize_t>(text.size()));
  }

  std::string dir_, path_;
  int listener_ = -1, agent_ = -1;
};

TEST_F(RestartChannelTest, SaysHelloTakesLeaveAndJoinAndAnswers) {
  std::unique_ptr<RestartChannel> channel = Connect();
  ASSERT_NE(channel, nullptr);
  EXPECT_EQ(ReadLine(), R"({"restart":"hello","in_process":true})");
  EXPECT_FALSE(channel->leave_requested());
  EXPECT_FALSE(channel->WaitForLeave(milliseconds(0)).has_value());

  Say(R"({"restart":"leave","round":3})");
  std::optional<int> round = channel->WaitForLeave(seconds(10));
  ASSERT_TRUE(round.has_value());
  EXPECT_EQ(*round, 3);
  EXPECT_TRUE(channel->leave_requested());
  channel->TakeLeave();
  EXPECT_FALSE(channel->leave_requested());
  channel->Left(3);
  EXPECT_EQ(ReadLine(), R"({"restart":"left","round":3})");

  Say(R"({"restart":"join","round":4,"rank":5,"local_rank":1,"world_size":6,)"
      R"("local_world_size":2,"node_rank":2,"master_addr":"10.0.0.7","master_port":29511})");
  std::optional<RoundPlace> place = channel->WaitForJoin(seconds(10));
  ASSERT_TRUE(place.has_value());
  EXPECT_EQ(place->round, 4);
  EXPECT_EQ(place->rank, 5);
  EXPECT_EQ(place->local_rank, 1);
  EXPECT_EQ(place->world_size, 6);
  EXPECT_EQ(place->local_world_size, 2);
  EXPECT_EQ(place->node_rank, 2);
  EXPECT_EQ(place->master_addr, "10.0.0.7");
  EXPECT_EQ(place->master_port, 29511);
  channel->Ready(4);
  EXPECT_EQ(ReadLine(), R"({"restart":"ready","round":4})");
  channel->Cannot("a NaN");
  EXPECT_EQ(ReadLine(), R"({"restart":"cannot","why":"a NaN"})");
}

TEST_F(RestartChannelTest, AnAgentThatGoesAwayEndsTheWaitForJoin) {
  std::unique_ptr<RestartChannel> channel = Connect();
  ASSERT_NE(channel, nullptr);
  close(agent_);
  agent_ = -1;
  const auto start = std::chrono::steady_clock::now();
  EXPECT_FALSE(channel->WaitForJoin(seconds(30)).has_value());
  EXPECT_LT(std::chrono::steady_clock::now() - start, seconds(20)) << "waited for the timeout";
}

TEST_F(RestartChannelTest, ALeaveShutsTheProcesssTcpConnectionsDown) {
  // A connected loopback pair stands in for a Gloo pair; a blocked read on it must end.
  const int server = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(bind(server, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  ASSERT_EQ(listen(server, 1), 0);
  socklen_t len = sizeof(addr);
  getsockname(server, reinterpret_cast<sockaddr*>(&addr), &len);
  const int client = socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_EQ(connect(client, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  const int peer = accept(server, nullptr, nullptr);
  ASSERT_GE(peer, 0);

  std::unique_ptr<RestartChannel> channel = Connect();
  ASSERT_NE(channel, nullptr);
  Say(R"({"restart":"leave","round":0})");
  ASSERT_TRUE(channel->WaitForLeave(seconds(10)).has_value());
  char c;
  EXPECT_EQ(read(client, &c, 1), 0) << "the connection is shut down: end of stream";
  // The listening socket is left alone: it still accepts.
  const int again = socket(AF_INET, SOCK_STREAM, 0);
  EXPECT_EQ(connect(again, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  for (int fd : {again, peer, client, server}) close(fd);
}

}  // namespace
}  // namespace dlaunch::worker
