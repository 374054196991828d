// WorkerSocketDir (a private directory, removed with its sockets) and WorkerServerSocketPath.
#include "agent/workers/worker_server_socket.h"

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <fstream>
#include <string>

#include "gtest/gtest.h"
#include "tests/testing/test_files.h"

namespace dlaunch {
namespace {

bool Exists(const std::string& path) {
  struct stat st;
  return lstat(path.c_str(), &st) == 0;
}

TEST(WorkerSocketDirTest, OnlyItsOwnerMayEnterIt) {
  ScratchDir parent;
  const mode_t old = umask(0);  // mkdtemp's 0700 does not depend on the umask
  auto dir = WorkerSocketDir::Create(parent.path());
  umask(old);
  ASSERT_TRUE(dir.ok()) << dir.status();
  struct stat st;
  ASSERT_EQ(stat((*dir)->path().c_str(), &st), 0);
  EXPECT_TRUE(S_ISDIR(st.st_mode));
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  EXPECT_EQ(st.st_uid, getuid());
  EXPECT_EQ((*dir)->path().rfind(parent.path() + "/dlaunch-" + std::to_string(getpid()) + "-", 0),
            0u)
      << (*dir)->path();
}

TEST(WorkerSocketDirTest, TwoAgentsOnANodeGetTwoDirectories) {
  ScratchDir parent;
  auto a = WorkerSocketDir::Create(parent.path());
  auto b = WorkerSocketDir::Create(parent.path());
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_NE((*a)->path(), (*b)->path());
}

TEST(WorkerSocketDirTest, IsRemovedWithTheSocketsLeftInIt) {
  ScratchDir parent;
  std::string path;
  {
    auto dir = WorkerSocketDir::Create(parent.path());
    ASSERT_TRUE(dir.ok());
    path = (*dir)->path();
    // A socket a rank left (torch does not remove its own) and a stray file.
    const std::string sock = WorkerServerSocketPath(path, 0);
    int fd = socket(AF_UNIX, SOCK_STREAM, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    sock.copy(addr.sun_path, sizeof addr.sun_path - 1);
    ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
    close(fd);
    std::ofstream(WorkerServerSocketPath(path, 1)) << "x";
    ASSERT_TRUE(Exists(sock));
  }
  EXPECT_FALSE(Exists(path));
}

TEST(WorkerSocketDirTest, AFailureSaysWhere) {
  auto dir = WorkerSocketDir::Create("/nonexistent-dlaunch-parent");
  ASSERT_FALSE(dir.ok());
  EXPECT_NE(dir.status().ToString().find("/nonexistent-dlaunch-parent"), std::string::npos)
      << dir.status();
}

TEST(WorkerServerSocketPathTest, FitsASocketAddressForAnyRank) {
  // The agent's own directory under /tmp, with the longest pid and the largest rank.
  const std::string path = WorkerServerSocketPath("/tmp/dlaunch-4194304-AbCdEf", 2147483647);
  EXPECT_EQ(path, "/tmp/dlaunch-4194304-AbCdEf/rank-2147483647.sock");
  EXPECT_LT(path.size(), sizeof(sockaddr_un{}.sun_path));
}

}  // namespace
}  // namespace dlaunch
