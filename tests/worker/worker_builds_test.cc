// One source, two LibTorch builds of dlaunch-worker: Debian's 1.13 (CPU) and PyTorch 2.x's
// (CUDA + NCCL, run here on the CPU with Gloo). These tests run this build beside the other one,
// named by DLAUNCH_OTHER_WORKER_BIN (scripts/test-torch2.sh sets it), and check that
//  - both follow the same loss curve on the CNN and real Fashion-MNIST, step by step;
//  - a checkpoint written by either build is resumed by the other (or refused with a clear
//    message);
//  - --device cuda on a machine without a usable GPU fails before training, in one line that
//    names the node and the cause, exit 2, for whichever build this is.
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

#include "dlaunch/report.pb.h"
#include "google/protobuf/util/json_util.h"
#include "gtest/gtest.h"
#include "tests/worker/worker_process_fixture.h"

namespace dlaunch::worker {
namespace {

using process_testing::MlpArgs;
using process_testing::RankResult;
using process_testing::ReadFloats;
using process_testing::With;
using process_testing::WorkerProcessTest;

// The other build, or empty.
std::string OtherWorker() {
  const char* other = std::getenv("DLAUNCH_OTHER_WORKER_BIN");
  return other != nullptr && access(other, X_OK) == 0 ? other : "";
}

// The STEP and FINAL reports a rank printed on stdout (no report socket), by step; the PHASE
// lines carry no loss.
std::vector<v1::WorkerReport> StepReports(const std::string& log) {
  std::vector<v1::WorkerReport> out;
  std::istringstream in(log);
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] != '{') continue;
    v1::WorkerReport r;
    if (google::protobuf::util::JsonStringToMessage(line, &r).ok() &&
        (r.kind() == v1::WorkerReport::STEP || r.kind() == v1::WorkerReport::FINAL)) {
      out.push_back(r);
    }
  }
  return out;
}

// The pids and command lines of processes other than this one whose command line contains
// `text`, one per line.
std::string ProcessesNaming(const std::string& text) {
  std::string found;
  for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
    const std::string pid = entry.path().filename();
    if (pid.find_first_not_of("0123456789") != std::string::npos) continue;
    if (pid == std::to_string(getpid())) continue;
    std::string cmdline = process_testing::ReadText(entry.path().string() + "/cmdline");
    for (char& c : cmdline) c = c == '\0' ? ' ' : c;
    if (cmdline.find(text) != std::string::npos) found += pid + ": " + cmdline + "\n";
  }
  return found;
}

class WorkerBuildsTest : public WorkerProcessTest {
 protected:
  void SetUp() override {
    WorkerProcessTest::SetUp();
    other_ = OtherWorker();
  }
  // Runs `world` ranks of the given build.
  std::vector<RankResult> RunWith(const std::string& bin, int world,
                                  const std::vector<std::string>& args) {
    const std::string mine = worker_bin_;
    worker_bin_ = bin;
    std::vector<RankResult> r = RunRanks(world, args);
    worker_bin_ = mine;
    return r;
  }
  std::string other_;
};

#define SKIP_WITHOUT_OTHER_BUILD()                                                      \
  if (other_.empty()) {                                                                 \
    GTEST_SKIP() << "DLAUNCH_OTHER_WORKER_BIN names no second dlaunch-worker build "     \
                    "(scripts/test-torch2.sh runs these)";                              \
  }

TEST_F(WorkerBuildsTest, BothBuildsFollowTheSameCnnLossCurve) {
  SKIP_WITHOUT_OTHER_BUILD();
  if (access("/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz", R_OK) != 0) {
    GTEST_SKIP() << "dataset-fashion-mnist is not installed";
  }
  const std::vector<std::string> args = {"--model", "cnn", "--steps", "40", "--batch-size", "32",
                                         "--report-every", "1", "--no-eval", "--seed", "5"};
  const std::vector<RankResult> mine = RunWith(worker_bin_, 2, args);
  const std::vector<RankResult> other = RunWith(other_, 2, args);
  ExpectAllSucceeded(mine);
  ExpectAllSucceeded(other);
  const std::vector<v1::WorkerReport> a = StepReports(mine[0].log), b = StepReports(other[0].log);
  ASSERT_EQ(a.size(), 40u) << mine[0].log;
  ASSERT_EQ(b.size(), 40u) << other[0].log;
  double worst = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    ASSERT_EQ(a[i].step(), b[i].step());
    const double rel = std::fabs(a[i].loss() - b[i].loss()) / std::max(1e-12, std::fabs(b[i].loss()));
    worst = std::max(worst, rel);
    EXPECT_LT(rel, 1e-3) << "step " << a[i].step() << ": " << a[i].loss() << " vs " << b[i].loss();
  }
  // The curve must have moved by far more than the tolerance, or the check would prove nothing.
  EXPECT_LT(a.back().loss(), 0.8 * a.front().loss());
  std::printf("largest relative loss difference over 40 steps: %.3g\n", worst);
}

// A checkpoint at step 6 by one build (killed after step 7), resumed by the other, ends within
// float rounding of the resuming build's uninterrupted run.
TEST_F(WorkerBuildsTest, ACheckpointOfEitherBuildIsResumedByTheOther) {
  SKIP_WITHOUT_OTHER_BUILD();
  const auto base = MlpArgs(32, "0.05", 12);
  for (const auto& [writer, reader] : {std::pair{other_, worker_bin_}, std::pair{worker_bin_, other_}}) {
    SCOPED_TRACE("written by " + writer + ", resumed by " + reader);
    const std::string tag = std::to_string(run_counter_);
    auto straight = RunWith(reader, 2, With(base, {"--save-params", dir_ + "/straight" + tag + "-{rank}"}));
    ExpectAllSucceeded(straight);
    const std::string ckpt = dir_ + "/ckpt" + tag;
    auto killed = RunWith(writer, 2, With(base, {"--checkpoint-dir", ckpt, "--checkpoint-every", "3",
                                                 "--fail-at-step", "7"}));
    for (const RankResult& r : killed) EXPECT_EQ(r.signal, SIGKILL) << r.log;
    auto resumed = RunWith(reader, 2, With(base, {"--checkpoint-dir", ckpt, "--resume", "--save-params",
                                                  dir_ + "/resumed" + tag + "-{rank}"}));
    ExpectAllSucceeded(resumed);
    EXPECT_NE(resumed[0].log.find("resumed from step 6"), std::string::npos) << resumed[0].log;
    // Different LibTorch versions may order a sum differently: equal within float rounding.
    const std::vector<float> s = ReadFloats(dir_ + "/straight" + tag + "-0");
    const std::vector<float> r = ReadFloats(dir_ + "/resumed" + tag + "-0");
    ASSERT_EQ(s.size(), r.size());
    ASSERT_FALSE(s.empty());
    double max_diff = 0;
    for (size_t i = 0; i < s.size(); ++i) max_diff = std::max(max_diff, double(std::fabs(s[i] - r[i])));
    EXPECT_LT(max_diff, 1e-5);
  }
}

TEST_F(WorkerBuildsTest, DeviceCudaWithoutAGpuFailsBeforeTrainingNamingNodeAndCause) {
  if (access("/proc/driver/nvidia/version", F_OK) == 0) GTEST_SKIP() << "this machine has a GPU driver";
  const std::vector<RankResult> results =
      RunRanks(2, With(MlpArgs(16, "0.05", 4), {"--device", "cuda"}));
  for (const RankResult& r : results) {
    EXPECT_EQ(r.exit_code, 2) << r.log;
    EXPECT_NE(r.log.find("--device cuda, but "), std::string::npos) << r.log;
    EXPECT_NE(r.log.find("node "), std::string::npos) << r.log;
    // Before training: no step was taken, no process group was made.
    EXPECT_EQ(r.log.find("\"step\""), std::string::npos) << r.log;
  }
}

TEST_F(WorkerBuildsTest, ADlaunchJobOfDeviceCudaWithoutAGpuFailsNamingTheNode) {
  if (access("/proc/driver/nvidia/version", F_OK) == 0) GTEST_SKIP() << "this machine has a GPU driver";
  std::vector<std::string> args = {"--nnodes", "2", "--nproc-per-node", "1", "--job-dir",
                                   dir_ + "/job", "--", worker_bin_};
  for (const std::string& a : With(MlpArgs(16, "0.05", 4), {"--device", "cuda", "--summary-json",
                                                            dir_ + "/job-summary.json"})) {
    args.push_back(a);
  }
  const auto start = std::chrono::steady_clock::now();
  RankResult run = RunDlaunch(args, std::chrono::seconds(120));
  EXPECT_EQ(run.exit_code, 1) << run.log;  // the job failed
  // The root cause, on the launcher's terminal: the rank's own line with node and cause.
  EXPECT_NE(run.log.find("--device cuda, but "), std::string::npos) << run.log;
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(60)) << run.log;
  // Nothing left behind: no agent or worker of the job (their command lines name dir_).
  EXPECT_EQ(ProcessesNaming(dir_), "") << run.log;
}

}  // namespace
}  // namespace dlaunch::worker
