// The preflight end to end on this machine: real agents check their node before they join, a
// job whose nodes fail stops before any worker starts, and `dlaunch doctor` prints the table.
// (A node left out while the rest run needs nodes that differ: tests/cluster/fault_test.cc.)
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "tests/integration/test_process.h"

namespace dlaunch::testing {
namespace {

using std::chrono::seconds;

const std::string kBin = DLAUNCH_BIN_DIR;

class PreflightTest : public ::testing::Test {
 protected:
  void SetUp() override { tmp_ = MakeTempDir(); }
  void TearDown() override { std::filesystem::remove_all(tmp_); }

  std::string WriteJob(const std::string& name, const std::string& yaml) {
    const std::string path = tmp_ + "/" + name;
    std::ofstream(path) << yaml;
    return path;
  }

  // Runs `dlaunch <args>` in the temporary directory to its end; its exit code.
  int Dlaunch(const std::vector<std::string>& args) {
    std::vector<std::string> argv = {kBin + "/dlaunch"};
    argv.insert(argv.end(), args.begin(), args.end());
    ChildProcess p(argv, tmp_);
    std::optional<int> code = p.Wait(seconds(120));
    out_ = p.Stdout() + p.Stderr();
    return code.value_or(-1);
  }

  std::string tmp_;
  std::string out_;
};

TEST_F(PreflightTest, AJobWhosePythonLacksAModuleStopsBeforeAnyWorkerStarts) {
  const std::string marker = tmp_ + "/worker-ran";
  const std::string job = WriteJob("job.yaml", absl::StrCat(
      "name: pf\nnodes: 2\ncommand: [python3, -c, \"open('", marker, "', 'w')\"]\n",
      "logs: {dir: ", tmp_, "/runs}\n",
      "preflight: {imports: [dlaunch_no_such_module]}\n"));
  EXPECT_EQ(Dlaunch({"run", job}), 3) << out_;
  EXPECT_TRUE(absl::StrContains(out_, "preflight: 0 fit node(s) of 2 needed; no worker was started"))
      << out_;
  EXPECT_TRUE(absl::StrContains(
      out_, "python3 looking for dlaunch_no_such_module (without importing) failed (exit 1): "
            "ModuleNotFoundError: No module named 'dlaunch_no_such_module'"))
      << out_;
  // The interpreter as the node found it on PATH, not as the spec spelled it.
  EXPECT_TRUE(absl::StrContains(out_, "command: /")) << out_;
  EXPECT_TRUE(absl::StrContains(out_, "[dlaunch] preflight: 2 node(s) check themselves and look for "
                                    "dlaunch_no_such_module before they join"))
      << out_;
  EXPECT_FALSE(std::filesystem::exists(marker));
  // The journal names both nodes, with their checks.
  int unfit = 0;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(tmp_ + "/runs")) {
    if (entry.path().filename() == "events.jsonl") {
      const std::string events = ReadFile(entry.path().string());
      for (absl::string_view line : absl::StrSplit(events, '\n')) {
        if (absl::StrContains(line, "\"node_unfit\"")) ++unfit;
      }
      EXPECT_FALSE(absl::StrContains(events, "worker_started"));
    }
  }
  EXPECT_EQ(unfit, 2);
}

TEST_F(PreflightTest, APassingPreflightIsSummedUpAndTheJobRuns) {
  const std::string job = WriteJob("job.yaml", absl::StrCat(
      "name: pf\nnodes: 2\ncommand: [python3, -c, \"print('ran')\"]\n",
      "logs: {dir: ", tmp_, "/runs}\n"));
  EXPECT_EQ(Dlaunch({"run", job}), 0) << out_;
  EXPECT_TRUE(absl::StrContains(out_, "preflight: 2 node(s) passed; slowest check")) << out_;
  EXPECT_TRUE(absl::StrContains(out_, "[rank 1] ran")) << out_;
}

TEST_F(PreflightTest, PreflightOffChecksNothing) {
  const std::string job = WriteJob("job.yaml", absl::StrCat(
      "name: pf\nnodes: 1\ncommand: [python3, -c, \"print('ran')\"]\n",
      "logs: {dir: ", tmp_, "/runs}\npreflight: off\n"));
  EXPECT_EQ(Dlaunch({"run", job}), 0) << out_;
  EXPECT_FALSE(absl::StrContains(out_, "preflight")) << out_;
}

TEST_F(PreflightTest, DoctorPrintsOneRowPerNodeAndExitsZeroWhenAllPass) {
  EXPECT_EQ(Dlaunch({"doctor", "--nnodes", "3", "--job-root", tmp_ + "/runs", "--", "python3",
                     "-c", "pass"}),
            0)
      << out_;
  EXPECT_TRUE(absl::StrContains(out_, "HOST")) << out_;
  EXPECT_TRUE(absl::StrContains(out_, "gpu processes  disk  command  ports  clock  link  compute  TIME")) << out_;
  EXPECT_TRUE(absl::StrContains(out_, "3 of 3 node(s) checked: 3 fit, 0 unfit")) << out_;
  int rows = 0;
  for (absl::string_view line : absl::StrSplit(out_, '\n')) {
    if (absl::StrContains(line, "  ok  ") && absl::EndsWith(line, " s")) ++rows;
  }
  EXPECT_EQ(rows, 3) << out_;
  EXPECT_TRUE(FindProcesses("", tmp_ + "/runs").empty());
}

TEST_F(PreflightTest, DoctorNamesEachFailedCheckAndExitsOne) {
  const std::string job = WriteJob("job.yaml", absl::StrCat(
      "name: pf\nnodes: 2\ncommand: [dlaunch-no-such-program]\n",
      "logs: {dir: ", tmp_, "/runs}\npreflight: {min_free: 1000000TiB}\n"));
  EXPECT_EQ(Dlaunch({"doctor", job}), 1) << out_;
  EXPECT_TRUE(absl::StrContains(out_, "2 of 2 node(s) checked: 0 fit, 2 unfit")) << out_;
  EXPECT_TRUE(absl::StrContains(out_, "command: dlaunch-no-such-program: not found or not executable on PATH"))
      << out_;
  EXPECT_TRUE(absl::StrContains(out_, "(preflight.min_free)")) << out_;
}

}  // namespace
}  // namespace dlaunch::testing
