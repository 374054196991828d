// Unmodified PyTorch 2.x programs under `dlaunch run`, 2 nodes x 2 ranks on loopback: programs
// that check what torchrun 2.x gives a rank (tests/integration/torch2/), the whole environment
// of each rank beside torchrun's own, and a @record error file in the root cause. They need a
// PyTorch 2.x python (Torch2Python(): scripts/test-torch2.sh passes its venv's) and skip without.
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "tests/integration/test_process.h"

extern char** environ;

namespace dlaunch::testing {
namespace {

using std::chrono::seconds;
using Env = std::map<std::string, std::string>;

const std::string kBin = DLAUNCH_BIN_DIR;
const std::string kScripts = std::string(DLAUNCH_SOURCE_DIR) + "/tests/integration/torch2/";
constexpr int kRanks = 4;  // 2 nodes x 2

std::string YamlQuoted(const std::string& s) {
  return absl::StrCat("'", absl::StrReplaceAll(s, {{"'", "''"}}), "'");
}

// An environment as env_dump.py writes it (and as /proc/PID/environ holds it): KEY=VALUE\0...
Env ReadEnviron(const std::string& path) {
  Env env;
  for (absl::string_view entry : absl::StrSplit(ReadFile(path), '\0', absl::SkipEmpty())) {
    const size_t eq = entry.find('=');
    if (eq == absl::string_view::npos) continue;
    env[std::string(entry.substr(0, eq))] = std::string(entry.substr(eq + 1));
  }
  return env;
}

// What a launcher added to the environment it was started with (the test's own).
std::set<std::string> AddedNames(const Env& rank_env) {
  std::set<std::string> inherited;
  for (char** e = environ; *e != nullptr; ++e) {
    inherited.insert(std::string(*e, strchrnul(*e, '=')));
  }
  std::set<std::string> added;
  for (const auto& [name, value] : rank_env) {
    if (!inherited.count(name)) added.insert(name);
  }
  return added;
}

int FreeLoopbackPort() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  close(fd);
  return ntohs(addr.sin_port);
}

class Torch2LauncherTest : public ::testing::Test {
 protected:
  void SetUp() override {
    tmp_ = MakeTempDir();
    job_id_ = tmp_.substr(tmp_.rfind('/') + 1);
    job_dir_ = tmp_ + "/" + job_id_;
    python_ = Torch2Python();
    if (std::string why = WhyPythonCannotImport(python_, "torch.distributed.elastic.control_plane",
                                                tmp_);
        !why.empty()) {
      GTEST_SKIP() << why << ": no PyTorch 2.x to test against (scripts/test-torch2.sh sets "
                   << "DLAUNCH_TORCH2_PYTHON; scripts/torch-venv.sh makes build-torch2/venv)";
    }
  }

  // `dlaunch run` of a job.yaml of 2 nodes x 2 ranks whose command is `command` (a YAML flow
  // sequence) plus `extra` keys; returns its exit code (nullopt: it did not end in 420 s, and
  // was interrupted so that Output() says how far it got).
  std::optional<int> RunJob(const std::string& command, const std::string& extra = "",
                            const std::vector<std::string>& env = {}) {
    const std::string yaml = tmp_ + "/job.yaml";
    // Beside another suite on a 2-core machine the preflight's `import torch` can pass its
    // default 30 s, and a rank importing torch can be silent past the stall timeout.
    std::ofstream(yaml) << "nodes: 2\nnproc_per_node: 2\nlauncher: local\n"
                        << "heartbeat: {interval: 1s}\npreflight: {timeout: 3m}\n"
                        << "health: {stall_timeout: 'off'}\nlogs: {ranks: all}\n"
                        << "command: " << command << "\n"
                        << extra;
    run_ = std::make_unique<ChildProcess>(
        std::vector<std::string>{kBin + "/dlaunch", "run", yaml, "--job-dir", job_dir_}, tmp_,
        env);
    // Four Python ranks each importing torch several times on a loaded 2-core machine: two
    // minutes alone, more beside another suite.
    std::optional<int> code = run_->Wait(seconds(420));
    if (!code.has_value()) {
      run_->Signal(SIGINT);
      run_->Wait(seconds(60));
    }
    return code;
  }

  std::string Output() const { return run_->Stdout() + run_->Stderr(); }
  std::string RankLog(int rank) const {
    return ReadFile(absl::StrCat(job_dir_, "/logs/rank-", rank, ".log"));
  }
  bool JobIsGone() const {
    return FindProcesses("DLAUNCH_JOB_ID=" + job_id_, job_dir_ + "/token").empty();
  }

  std::string tmp_, job_id_, job_dir_, python_;
  std::unique_ptr<ChildProcess> run_;
};

TEST_F(Torch2LauncherTest, TorchrunProgramsPassUnderDlaunch) {
  const std::string touched = tmp_ + "/touched";
  ASSERT_EQ(mkdir(touched.c_str(), 0700), 0);
  // Each rank runs the programs one after the other, each a fresh interpreter with the rank's
  // environment. ${local_rank} is torchrun's macro, filled in by the agent before sh sees it.
  const std::vector<std::string> programs = {
      absl::StrCat("env_contract.py ", touched, " ", job_id_),
      "local_rank_arg.py --local_rank=${local_rank}",
      "is_torchelastic_launched.py",
      "worker_server.py",
      // env://, the usual torchrun program's; tcp:// is TcpInitMethodUnderDlaunch's.
      "init_method.py env",
  };
  std::vector<std::string> steps;
  for (const std::string& p : programs) steps.push_back(absl::StrCat(python_, " ", kScripts, p));
  auto code = RunJob(absl::StrCat("[/bin/sh, -c, ", YamlQuoted(absl::StrJoin(steps, " && ")), "]"),
                     "", {"TEST_SENTINEL_PARENT=" + job_id_});
  ASSERT_TRUE(code.has_value()) << "dlaunch run did not finish:\n" << Output();
  ASSERT_EQ(*code, 0) << Output();
  for (int rank = 0; rank < kRanks; ++rank) {
    const std::string log = RankLog(rank);
    for (const std::string& ok :
         {absl::StrCat("env_contract: rank ", rank, " ok"),
          absl::StrCat("local_rank_arg: rank ", rank, " ok"),
          absl::StrCat("is_torchelastic_launched: rank ", rank, " ok"),
          absl::StrCat("worker_server: rank ", rank, " ok at "),
          absl::StrCat("init_method env: rank ", rank, " of 4 ok")}) {
      EXPECT_TRUE(absl::StrContains(log, ok)) << "rank " << rank << " lacks '" << ok << "':\n"
                                              << log;
    }
    EXPECT_EQ(access(absl::StrCat(touched, "/", rank).c_str(), F_OK), 0) << rank;
    // The agent removed its socket directory with the sockets torch leaves behind.
    const size_t at = log.find(" ok at ");
    if (at == std::string::npos) continue;
    std::string socket = log.substr(at + 7, log.find('\n', at) - at - 7);
    const std::string dir = socket.substr(0, socket.rfind('/'));
    EXPECT_TRUE(absl::EndsWith(socket, absl::StrCat("/rank-", rank, ".sock"))) << socket;
    EXPECT_NE(access(dir.c_str(), F_OK), 0) << dir << " outlived the job";
  }
  EXPECT_TRUE(JobIsGone());
}

TEST_F(Torch2LauncherTest, TcpInitMethodUnderDlaunch) {
  // tcp://MASTER_ADDR:MASTER_PORT with RANK and WORLD_SIZE given explicitly, in a job of its own.
  auto code = RunJob(absl::StrCat("[", python_, ", ", kScripts, "init_method.py, tcp]"));
  ASSERT_TRUE(code.has_value()) << "dlaunch run did not finish:\n" << Output();
  ASSERT_EQ(*code, 0) << Output();
  for (int rank = 0; rank < kRanks; ++rank) {
    const std::string ok = absl::StrCat("init_method tcp: rank ", rank, " of 4 ok");
    EXPECT_TRUE(absl::StrContains(RankLog(rank), ok)) << RankLog(rank);
  }
  EXPECT_TRUE(JobIsGone());
}

// Runs env_dump.py under torchrun 2.x as 2 nodes (two torchrun agents, c10d rendezvous on
// loopback) x 2 ranks; the ranks' environments are in `dir`.
void RunUnderTorchrun(const std::string& python, const std::string& dir, const std::string& tmp) {
  const std::string endpoint = absl::StrCat("127.0.0.1:", FreeLoopbackPort());
  std::vector<std::unique_ptr<ChildProcess>> agents;
  for (int node = 0; node < 2; ++node) {
    agents.push_back(std::make_unique<ChildProcess>(
        std::vector<std::string>{python, "-m", "torch.distributed.run", "--nnodes", "2",
                                 "--nproc-per-node", "2", "--rdzv-backend", "c10d",
                                 "--rdzv-endpoint", endpoint, "--rdzv-id", "envcmp",
                                 kScripts + "env_dump.py", dir},
        tmp));
  }
  for (auto& agent : agents) {
    auto code = agent->Wait(seconds(240));
    ASSERT_TRUE(code.has_value()) << "torchrun did not finish:\n"
                                  << agent->Stdout() << agent->Stderr();
    ASSERT_EQ(*code, 0) << agent->Stdout() << agent->Stderr();
  }
}

TEST_F(Torch2LauncherTest, EachRankGetsWhatTorchrunGivesIt) {
  const std::string torchrun_dir = tmp_ + "/torchrun", dlaunch_dir = tmp_ + "/dlaunch";
  ASSERT_EQ(mkdir(torchrun_dir.c_str(), 0700), 0);
  ASSERT_EQ(mkdir(dlaunch_dir.c_str(), 0700), 0);
  ASSERT_NO_FATAL_FAILURE(RunUnderTorchrun(python_, torchrun_dir, tmp_));
  // torchrun's c10d rendezvous serves the workers' store from its agent: so does dlaunch's, asked.
  auto code = RunJob(absl::StrCat("[", python_, ", ", kScripts, "env_dump.py, ", dlaunch_dir, "]"),
                     "rendezvous: {worker_store: agent}\n");
  ASSERT_TRUE(code.has_value()) << "dlaunch run did not finish:\n" << Output();
  ASSERT_EQ(*code, 0) << Output();

  // Values that differ by design (ports, run ids, paths, the signals each agent handles, OMP
  // threads from the rank's cores) are compared by presence only.
  const std::vector<std::string> must_agree = {
      "RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "GROUP_RANK", "GROUP_WORLD_SIZE",
      "ROLE_RANK", "ROLE_NAME", "ROLE_WORLD_SIZE", "TORCHELASTIC_RESTART_COUNT",
      "TORCHELASTIC_MAX_RESTARTS", "TORCHELASTIC_USE_AGENT_STORE",
      "TORCH_NCCL_ASYNC_ERROR_HANDLING"};
  for (int rank = 0; rank < kRanks; ++rank) {
    SCOPED_TRACE(absl::StrCat("rank ", rank));
    const Env torchrun = ReadEnviron(absl::StrCat(torchrun_dir, "/rank-", rank, ".env"));
    const Env dlaunch = ReadEnviron(absl::StrCat(dlaunch_dir, "/rank-", rank, ".env"));
    ASSERT_FALSE(torchrun.empty() || dlaunch.empty());
    const std::set<std::string> by_torchrun = AddedNames(torchrun);
    const std::set<std::string> by_dlaunch = AddedNames(dlaunch);
    for (const std::string& name : by_torchrun) {
      EXPECT_TRUE(by_dlaunch.count(name)) << "torchrun gives " << name << ", dlaunch does not";
    }
    for (const std::string& name : by_dlaunch) {
      const bool own = absl::StartsWith(name, "DLAUNCH_") || name == "PYTHONFAULTHANDLER" ||
                       name == "TORCH_WORKER_SERVER_SOCKET";
      EXPECT_TRUE(by_torchrun.count(name) || own)
          << "dlaunch gives " << name << ", torchrun does not";
    }
    for (const std::string& name : must_agree) {
      ASSERT_TRUE(torchrun.count(name) && dlaunch.count(name)) << name;
      EXPECT_EQ(dlaunch.at(name), torchrun.at(name)) << name;
    }
  }
  EXPECT_TRUE(JobIsGone());
}

TEST_F(Torch2LauncherTest, ARecordedExceptionIsNamedInTheRootCause) {
  // torch 2.x's @record writes the error file in its own layout; the agent reads it the same.
  const std::string script =
      std::string(DLAUNCH_SOURCE_DIR) + "/tests/integration/torch_record_fail.py";
  auto code = RunJob(absl::StrCat("[", python_, ", ", script, "]"));
  ASSERT_TRUE(code.has_value()) << "dlaunch run did not finish:\n" << Output();
  EXPECT_EQ(*code, 1) << Output();
  EXPECT_TRUE(absl::StrContains(run_->Stderr(), "root cause: worker crash: rank 1 ")) << Output();
  EXPECT_TRUE(absl::StrContains(
      run_->Stderr(),
      absl::StrCat("exited with code 1: RuntimeError: batch 3 is corrupt (at ", script,
                   ":11, in load_batch)")))
      << Output();
  EXPECT_TRUE(JobIsGone());
}

}  // namespace
}  // namespace dlaunch::testing
