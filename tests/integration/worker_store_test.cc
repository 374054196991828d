// The workers' store served by node 0's agent (rendezvous.worker_store: agent) against real
// PyTorch workers: Debian's 1.13 and, when Torch2Python() exists (scripts/torch-venv.sh),
// PyTorch 2.x, each 2 nodes x 2 ranks under `dlaunch run` doing init_process_group over Gloo,
// an all_reduce and a barrier; and the rank-0 store (rank0) for comparison.
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <string>

#include <gtest/gtest.h>

#include "absl/strings/str_cat.h"
#include "tests/integration/test_process.h"

namespace dlaunch::testing {
namespace {

using std::chrono::seconds;

const std::string kBin = DLAUNCH_BIN_DIR;
const std::string kSource = DLAUNCH_SOURCE_DIR;

class WorkerStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    tmp_ = MakeTempDir();
    job_id_ = tmp_.substr(tmp_.rfind('/') + 1);
    job_dir_ = tmp_ + "/" + job_id_;
  }

  // Empty when `python` imports torch.distributed, else why the test skips.
  static std::string Unusable(const std::string& python, const std::string& tmp) {
    return WhyPythonCannotImport(python, "torch.distributed", tmp);
  }

  // 2 nodes x 2 ranks of torch_store_job.py with the store `mode`; returns dlaunch's output.
  void RunJob(const std::string& python, const std::string& mode) {
    const std::string yaml = tmp_ + "/job.yaml";
    std::ofstream(yaml) << "nodes: 2\nnproc_per_node: 2\n"
                        << "command: [" << python << ", " << kSource
                        << "/tests/integration/torch_store_job.py, " << mode << "]\n"
                        << "rendezvous: {worker_store: " << mode << "}\n"
                        << "heartbeat: {interval: 1s}\n";
    ChildProcess run({kBin + "/dlaunch", "run", yaml, "--job-dir", job_dir_}, tmp_);
    // Four Python ranks importing torch on a loaded 2-core machine take a while; ctest gives
    // each integration test 180 s.
    auto code = run.Wait(seconds(170));
    ASSERT_TRUE(code.has_value()) << "dlaunch run did not finish";
    ASSERT_EQ(*code, 0) << run.Stdout() << run.Stderr();
    for (int rank = 0; rank < 4; ++rank) {
      EXPECT_NE(run.Stdout().find(absl::StrCat("rank ", rank, " of 4: torch ")), std::string::npos)
          << run.Stdout();
    }
    EXPECT_NE(run.Stdout().find(absl::StrCat(mode, " store, all_reduce 6, barrier passed")),
              std::string::npos)
        << run.Stdout();
    const std::string agent0 = ReadFile(job_dir_ + "/logs/agent-0.log") +
                               ReadFile(job_dir_ + "/logs/agent-1.log") + run.Stderr();
    EXPECT_EQ(agent0.find("serving the workers' store") != std::string::npos, mode == "agent")
        << agent0;
    EXPECT_TRUE(FindProcesses("DLAUNCH_JOB_ID=" + job_id_, job_dir_ + "/token").empty());
  }

  std::string tmp_, job_id_, job_dir_;
};

TEST_F(WorkerStoreTest, Torch113RanksRendezvousThroughTheAgentStore) {
  // Debian's python3-torch is importable by /usr/bin/python3 (the python3 first on PATH may be
  // another interpreter).
  if (std::string why = Unusable("/usr/bin/python3", tmp_); !why.empty()) {
    GTEST_SKIP() << why << " (scripts/install-deps.sh test installs python3-torch)";
  }
  RunJob("/usr/bin/python3", "agent");
}

TEST_F(WorkerStoreTest, Torch2RanksRendezvousThroughTheAgentStore) {
  const std::string python = Torch2Python();
  if (std::string why = Unusable(python, tmp_); !why.empty()) {
    GTEST_SKIP() << why << ": no PyTorch 2.x to test against (scripts/torch-venv.sh makes it)";
  }
  RunJob(python, "agent");
}

TEST_F(WorkerStoreTest, Torch113RanksRendezvousThroughRank0) {
  if (std::string why = Unusable("/usr/bin/python3", tmp_); !why.empty()) {
    GTEST_SKIP() << why << " (scripts/install-deps.sh test installs python3-torch)";
  }
  RunJob("/usr/bin/python3", "rank0");
}

TEST_F(WorkerStoreTest, ATakenPortFailsTheRoundAtOnceNamingIt) {
  // Something else listens on the job's MASTER_PORT (the preflight, which would find it, is off).
  int blocker = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(bind(blocker, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  ASSERT_EQ(listen(blocker, 1), 0);
  socklen_t len = sizeof addr;
  getsockname(blocker, reinterpret_cast<sockaddr*>(&addr), &len);
  const int port = ntohs(addr.sin_port);
  const std::string yaml = tmp_ + "/job.yaml";
  std::ofstream(yaml) << "nodes: 2\nnproc_per_node: 1\ncommand: [/bin/sleep, '30']\n"
                      << "rendezvous: {worker_store: agent, master_port: " << port << "}\n"
                      << "heartbeat: {interval: 1s}\n";
  ChildProcess run({kBin + "/dlaunch", "run", yaml, "--job-dir", job_dir_, "--no-preflight"}, tmp_);
  auto code = run.Wait(seconds(120));
  close(blocker);
  ASSERT_TRUE(code.has_value()) << "dlaunch run did not finish";
  EXPECT_EQ(*code, 1) << run.Stdout() << run.Stderr();
  EXPECT_NE((run.Stdout() + run.Stderr()).find("the agent cannot serve round 0's workers' store"),
            std::string::npos)
      << run.Stdout() << run.Stderr();
  EXPECT_TRUE(FindProcesses("DLAUNCH_JOB_ID=" + job_id_, job_dir_ + "/token").empty());
}

}  // namespace
}  // namespace dlaunch::testing
