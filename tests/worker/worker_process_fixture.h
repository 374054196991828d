// The worker process tests' fixture: starts real dlaunch-worker ranks with the torchrun
// environment (Gloo over loopback) and real `dlaunch run`s, and collects their logs. Shared by
// worker_process_test.cc and worker_builds_test.cc.
#pragma once

#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "tests/testing/wait_for.h"

extern char** environ;

namespace dlaunch::worker::process_testing {

using Clock = std::chrono::steady_clock;

inline int FreePort() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
  socklen_t len = sizeof(addr);
  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  close(fd);
  return ntohs(addr.sin_port);
}

inline std::string ReadText(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

inline std::vector<float> ReadFloats(const std::string& path) {
  const std::string bytes = ReadText(path);
  std::vector<float> v(bytes.size() / sizeof(float));
  std::memcpy(v.data(), bytes.data(), v.size() * sizeof(float));
  return v;
}

struct RankResult {
  int exit_code = -1;  // -1: killed by a signal
  int signal = 0;
  std::string log;     // stdout + stderr
};

class WorkerProcessTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/worker_process_test_XXXXXX";
    dir_ = mkdtemp(tmpl);
  }

  void TearDown() override {
    // Kept on failure: the rank logs are the evidence.
    if (!HasFailure()) std::filesystem::remove_all(dir_);
  }

  // "{rank}" in an argument or an extra_env value lets one list name per-rank files.
  static std::string WithRank(std::string s, int rank) {
    if (size_t at = s.find("{rank}"); at != std::string::npos) s.replace(at, 6, std::to_string(rank));
    return s;
  }

  // Starts `world` ranks with the torchrun environment and waits for all of them (deadline
  // `timeout`; on expiry every rank is killed and the test fails).
  std::vector<RankResult> RunRanks(int world, const std::vector<std::string>& args,
                                   const std::map<std::string, std::string>& extra_env = {},
                                   std::chrono::seconds timeout = std::chrono::seconds(240)) {
    const int port = FreePort();
    std::vector<pid_t> pids;
    std::vector<std::string> logs;
    for (int rank = 0; rank < world; ++rank) {
      std::map<std::string, std::string> env;
      for (char** e = environ; *e != nullptr; ++e) {
        const std::string kv = *e;
        const size_t eq = kv.find('=');
        env[kv.substr(0, eq)] = kv.substr(eq + 1);
      }
      if (world > 1 || extra_env.count("WORLD_SIZE")) {
        env["RANK"] = std::to_string(rank);
        env["LOCAL_RANK"] = std::to_string(rank);
        env["WORLD_SIZE"] = std::to_string(world);
        env["MASTER_ADDR"] = "127.0.0.1";
        env["MASTER_PORT"] = std::to_string(port);
      }
      env["OMP_NUM_THREADS"] = "1";
      env.erase("DLAUNCH_REPORT_SOCKET");
      for (const auto& [k, v] : extra_env) env[k] = WithRank(v, rank);
      std::vector<std::string> env_strings;
      for (const auto& [k, v] : env) env_strings.push_back(k + "=" + v);
      std::vector<char*> envp;
      for (std::string& s : env_strings) envp.push_back(s.data());
      envp.push_back(nullptr);

      std::vector<std::string> argv_strings = {worker_bin_};
      for (const std::string& a : args) argv_strings.push_back(WithRank(a, rank));
      std::vector<char*> argv;
      for (std::string& s : argv_strings) argv.push_back(s.data());
      argv.push_back(nullptr);

      const std::string log = dir_ + "/rank" + std::to_string(rank) + "." +
                              std::to_string(run_counter_) + ".log";
      posix_spawn_file_actions_t actions;
      posix_spawn_file_actions_init(&actions);
      posix_spawn_file_actions_addopen(&actions, 1, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      posix_spawn_file_actions_adddup2(&actions, 1, 2);
      pid_t pid;
      EXPECT_EQ(posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), envp.data()), 0);
      posix_spawn_file_actions_destroy(&actions);
      pids.push_back(pid);
      logs.push_back(log);
    }
    ++run_counter_;

    std::vector<RankResult> results(world);
    std::vector<bool> done(world, false);
    int remaining = world;
    const bool all_done = WaitFor(
        [&] {
          for (int r = 0; r < world; ++r) {
            int status = 0;
            if (done[r] || waitpid(pids[r], &status, WNOHANG) != pids[r]) continue;
            done[r] = true;
            --remaining;
            if (WIFEXITED(status)) results[r].exit_code = WEXITSTATUS(status);
            if (WIFSIGNALED(status)) results[r].signal = WTERMSIG(status);
          }
          return remaining == 0;
        },
        timeout);
    if (!all_done) {
      for (int r = 0; r < world; ++r) {
        if (!done[r]) kill(pids[r], SIGKILL), waitpid(pids[r], nullptr, 0);
      }
      ADD_FAILURE() << "ranks did not finish within " << timeout.count() << " s";
    }
    for (int r = 0; r < world; ++r) results[r].log = ReadText(logs[r]);
    return results;
  }

  // Runs `dlaunch run` with `args` and this process's environment, output to a log in dir_;
  // its exit code (-1 when killed, or at the deadline) and that log.
  RankResult RunDlaunch(const std::vector<std::string>& args, std::chrono::seconds timeout) {
    std::vector<std::string> argv_strings = {std::string(DLAUNCH_BIN_DIR) + "/dlaunch", "run"};
    argv_strings.insert(argv_strings.end(), args.begin(), args.end());
    std::vector<char*> argv;
    for (std::string& a : argv_strings) argv.push_back(a.data());
    argv.push_back(nullptr);
    const std::string log = dir_ + "/dlaunch." + std::to_string(run_counter_++) + ".log";
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 1, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_adddup2(&actions, 1, 2);
    pid_t pid;
    EXPECT_EQ(posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), environ), 0);
    posix_spawn_file_actions_destroy(&actions);
    RankResult result;
    int status = 0;
    if (!WaitFor([&] { return waitpid(pid, &status, WNOHANG) == pid; }, timeout)) {
      // SIGINT: dlaunch stops its agents and workers before it exits.
      kill(pid, SIGINT);
      waitpid(pid, &status, 0);
      ADD_FAILURE() << "dlaunch run did not finish within " << timeout.count() << " s";
    }
    if (WIFEXITED(status)) result.exit_code = WEXITSTATUS(status);
    result.log = ReadText(log);
    return result;
  }

  static void ExpectAllSucceeded(const std::vector<RankResult>& results) {
    for (size_t r = 0; r < results.size(); ++r) {
      EXPECT_EQ(results[r].exit_code, 0) << "rank " << r << " signal " << results[r].signal
                                         << "\n" << results[r].log;
    }
  }

  std::string dir_;
  int run_counter_ = 0;
  // The dlaunch-worker that RunRanks starts.
  std::string worker_bin_ = DLAUNCH_WORKER_BIN;
};

// Small, dropout-free and quick: the MLP on a synthetic 1x28x28 set of 256 samples.
inline std::vector<std::string> MlpArgs(int batch, const std::string& lr, int steps) {
  return {"--model", "mlp", "--dataset", "synthetic", "--synthetic-samples", "256",
          "--batch-size", std::to_string(batch), "--lr", lr, "--steps", std::to_string(steps),
          "--report-every", "1000", "--no-eval", "--seed", "3", "--store-timeout", "60"};
}

inline std::vector<std::string> With(std::vector<std::string> a, const std::vector<std::string>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

}  // namespace dlaunch::worker::process_testing
