// The straggler score's "gpu clock" with real local nodes whose ranks send no reports: the agents
// read a stand-in NVML (fake_nvml.cc, found on LD_LIBRARY_PATH as libnvidia-ml.so.1) in which one
// agent's GPU runs at 60% of the others' clock, held down by heat; that node is named with
// measure "gpu clock" and the reasons, and its samples reach metrics.jsonl with their clocks. All
// GPUs at the same clock name nobody. dlaunch, its agents and the ranks (sleep) are real
// processes; only NVML is not. docs/stragglers.md.
#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <sstream>
#include <string>

#include "absl/strings/match.h"
#include "launcher/jobdir/journal.h"
#include "tests/integration/test_process.h"

namespace dlaunch::testing {
namespace {

using std::chrono::seconds;

const std::string kBin = DLAUNCH_BIN_DIR;
const std::string kFakeNvml = DLAUNCH_FAKE_NVML_DIR;

class StragglerGpuClockTest : public ::testing::Test {
 protected:
  void SetUp() override {
    tmp_ = MakeTempDir();
    job_dir_ = tmp_ + "/" + tmp_.substr(tmp_.rfind('/') + 1);
    // Scored every 2 s, named after 3 slow intervals.
    std::ofstream(tmp_ + "/job.yaml")
        << "command: [/bin/sleep, \"14\"]\n"
        << "stragglers:\n  interval: 2s\n  intervals: 3\n";
  }
  // 3 nodes x 1 rank, each agent seeing GPU 0 of the stand-in NVML; its exit code.
  int Run(const std::vector<std::string>& env) {
    std::vector<std::string> full = env;
    full.push_back("LD_LIBRARY_PATH=" + kFakeNvml);
    full.push_back("CUDA_VISIBLE_DEVICES=0");
    full.push_back("FAKE_NVML_CLAIM=" + tmp_);
    run_ = std::make_unique<ChildProcess>(
        std::vector<std::string>{kBin + "/dlaunch", "run", tmp_ + "/job.yaml", "--nnodes", "3",
                                 "--nproc-per-node", "1", "--job-dir", job_dir_, "--heartbeat",
                                 "1", "--grace", "2", "--no-preflight"},
        tmp_, full);
    std::optional<int> code = run_->Wait(seconds(120));
    return code.value_or(-1);
  }
  std::vector<v1::Straggler> Detected() const {
    std::vector<v1::Straggler> out;
    absl::StatusOr<EventJournal> j = ReadEventJournal(job_dir_);
    if (!j.ok()) return out;
    for (const v1::JobEvent& e : j->events) {
      if (e.has_straggler_detected()) out.push_back(e.straggler_detected());
    }
    return out;
  }
  // The node ids of metrics.jsonl's host lines whose GPU reads `text`.
  std::set<int> NodesWhoseGpuReads(const std::string& text) const {
    std::set<int> nodes;
    std::istringstream lines(ReadFile(job_dir_ + "/metrics.jsonl"));
    for (std::string line; std::getline(lines, line);) {
      const size_t at = line.find("\"node_id\":");
      if (!absl::StrContains(line, text) || at == std::string::npos) continue;
      nodes.insert(std::atoi(line.c_str() + at + 10));
    }
    return nodes;
  }
  std::string tmp_, job_dir_;
  std::unique_ptr<ChildProcess> run_;
};

TEST_F(StragglerGpuClockTest, TheNodeWhoseGpuClocksDownIsNamedByItsClockAndWhy) {
  ASSERT_EQ(Run({"FAKE_NVML_SLOW_MHZ=1188"}), 0) << run_->Stderr();
  ASSERT_FALSE(ReadFile(tmp_ + "/slow-agent").empty()) << "no agent read the stand-in NVML";
  const std::set<int> slow = NodesWhoseGpuReads("\"sm_clock_mhz\":1188");
  ASSERT_EQ(slow.size(), 1u) << ReadFile(job_dir_ + "/metrics.jsonl");
  std::vector<v1::Straggler> detected = Detected();
  ASSERT_FALSE(detected.empty()) << run_->Stderr();
  for (const v1::Straggler& d : detected) EXPECT_EQ(d.node_id(), *slow.begin()) << d.DebugString();
  const v1::Straggler& d = detected[0];
  EXPECT_EQ(d.measure(), "gpu clock");
  EXPECT_NEAR(d.ratio(), 1980.0 / 1188, 1e-6);   // the median clock over its own
  EXPECT_DOUBLE_EQ(d.gpu_clock_max_mhz(), 1980);
  EXPECT_EQ(std::vector<std::string>(d.gpu_clock_reasons().begin(), d.gpu_clock_reasons().end()),
            (std::vector<std::string>{"hw slowdown", "hw thermal"}));
  EXPECT_TRUE(absl::StrContains(run_->Stderr(), "its GPU's SM clock ran at 1188 MHz (of 1980)"))
      << run_->Stderr();
  // The clock and why, on the host lines too.
  EXPECT_EQ(NodesWhoseGpuReads("\"clock_event_reasons\":\"72\""), slow);
}

TEST_F(StragglerGpuClockTest, GpusAtTheSameClockNameNobody) {
  ASSERT_EQ(Run({}), 0) << run_->Stderr();
  EXPECT_EQ(NodesWhoseGpuReads("\"sm_clock_mhz\":1980").size(), 3u)
      << ReadFile(job_dir_ + "/metrics.jsonl");
  EXPECT_TRUE(Detected().empty()) << run_->Stderr();
  EXPECT_FALSE(absl::StrContains(run_->Stderr(), "straggler:")) << run_->Stderr();
}

}  // namespace
}  // namespace dlaunch::testing
