#include "agent/collective_engine.h"

#include <fstream>

#include "absl/strings/match.h"
#include "gtest/gtest.h"

namespace dlaunch {
namespace {

// all_reduce_perf's output, in the format nccl-tests prints (its header, one size on 8 GPUs, its
// two closing lines); not recorded on this project's machines, which have no GPU.
constexpr char kAllReducePerf[] = R"(# nThread 1 nGpus 8 minBytes 67108864 maxBytes 67108864 step: 1048576(bytes) warmup iters: 5 iters: 20 agg iters: 1 validation: 1 graph: 0
#
# Using devices
#  Rank  0 Group  0 Pid   4242 on     node7 device  0 [0000:18:00] NVIDIA H100 80GB HBM3
#
#                                                              out-of-place                       in-place
#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong
#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)
    67108864      16777216     float     sum      -1    512.4  130.97  229.20      0    509.8  131.64  230.37      0
# Out of bounds values : 0 OK
# Avg bus bandwidth    : 229.785 
#
)";

TEST(ParseAllReducePerfTest, ReadsTheAverageBusBandwidthInBytesPerSecond) {
  absl::StatusOr<double> busbw = ParseAllReducePerf(kAllReducePerf);
  ASSERT_TRUE(busbw.ok()) << busbw.status();
  EXPECT_DOUBLE_EQ(*busbw, 229.785e9);
}

TEST(ParseAllReducePerfTest, WrongValuesAndMissingFiguresAreErrors) {
  std::string wrong = kAllReducePerf;
  wrong.replace(wrong.find("values : 0 OK"), 13, "values : 3 FAILED");
  EXPECT_TRUE(absl::StrContains(ParseAllReducePerf(wrong).status().message(), "3 wrong values"));
  EXPECT_FALSE(ParseAllReducePerf("# nThread 1 nGpus 8\n").ok());
  EXPECT_FALSE(ParseAllReducePerf("# Avg bus bandwidth    : lots\n").ok());
}

std::vector<v1::CollectivePeer> Ring(int n) {
  std::vector<v1::CollectivePeer> ring(n);
  for (int i = 0; i < n; ++i) {
    ring[i].set_addr("10.0.0." + std::to_string(i));
    ring[i].set_port(7000 + i);
  }
  return ring;
}

TEST(TorchCheckInputTest, NamesOnlyTheNodesNeighboursAndItsGroupsFirst) {
  v1::CollectivePlan plan;
  plan.set_bytes(4 << 20);
  plan.set_group(64);
  plan.set_budget_ms(20000);
  // Node 130 of 1000: neighbours 129 and 131, its group (128..191) begins at 128.
  const std::string in = TorchCheckInput("gloo", Ring(1000), 130, "10.9.9.9", plan);
  EXPECT_TRUE(absl::StrContains(in, "\"backend\": \"gloo\", \"n\": 1000, \"index\": 130")) << in;
  EXPECT_TRUE(absl::StrContains(in, "\"addr\": \"10.9.9.9\", \"bytes\": 4194304, \"group\": 64, "
                                    "\"timeout_s\": 18.000")) << in;
  for (int i : {128, 129, 130, 131}) {
    EXPECT_TRUE(absl::StrContains(in, "\"" + std::to_string(i) + "\": {\"addr\"")) << in;
  }
  EXPECT_FALSE(absl::StrContains(in, "\"127\":")) << in;
  EXPECT_LT(in.size(), 600u);
}

TEST(ParseTorchCheckOutputTest, ReadsTheFiguresOrSaysWhyNot) {
  absl::StatusOr<v1::CollectiveFigures> f = ParseTorchCheckOutput(
      "a warning of torch's\n{\"to_right_bps\": 1.5e9, \"to_left_bps\": 1.25e9, "
      "\"allreduce_bps\": 9e8, \"allreduce_s\": 0.0046, \"later_field\": 1}\n");
  ASSERT_TRUE(f.ok()) << f.status();
  EXPECT_DOUBLE_EQ(f->to_right_bps(), 1.5e9);
  EXPECT_DOUBLE_EQ(f->to_left_bps(), 1.25e9);
  EXPECT_DOUBLE_EQ(f->allreduce_s(), 0.0046);
  EXPECT_FALSE(ParseTorchCheckOutput("Traceback (most recent call last):\n").ok());
  EXPECT_FALSE(ParseTorchCheckOutput("{\"to_right_bps\": \"fast\"}").ok());
}

v1::PreflightPlan PlanFor(std::vector<std::string> argv, const std::string& engine = "auto") {
  v1::PreflightPlan plan;
  for (const std::string& a : argv) plan.mutable_worker()->add_argv(a);
  plan.mutable_collective()->set_engine(engine);
  return plan;
}

TEST(ChooseCollectiveEngineTest, TorchWhereTheJobsPythonHasItAndTheScriptUsesIt) {
  const std::string dir = ::testing::TempDir();
  const std::string uses = dir + "/uses_torch.py", plain = dir + "/plain.py";
  std::ofstream(uses) << "import torch\n";
  std::ofstream(plain) << "print('hi')\n";
  int probes = 0;
  auto has_torch = [&](SpawnOptions o) -> absl::StatusOr<CommandResult> {
    ++probes;
    EXPECT_TRUE(absl::StrContains(o.argv.back(), "find_spec('torch')"));
    return CommandResult{0, "", ""};
  };
  auto no_torch = [](SpawnOptions) -> absl::StatusOr<CommandResult> { return CommandResult{1, "", ""}; };
  EnvMap env = {{"PATH", "/usr/bin:/bin"}};
  EXPECT_EQ(ChooseCollectiveEngine(PlanFor({"python3", uses}), env, 0, has_torch).backend, "gloo");
  EXPECT_EQ(ChooseCollectiveEngine(PlanFor({"python3", uses}), env, 8, has_torch).backend, "nccl");
  EXPECT_EQ(probes, 2);
  CollectiveEngine none = ChooseCollectiveEngine(PlanFor({"python3", uses}), env, 0, no_torch);
  EXPECT_EQ(none.backend, "");
  EXPECT_TRUE(absl::StrContains(none.why, "has no torch")) << none.why;
  EXPECT_EQ(ChooseCollectiveEngine(PlanFor({"python3", plain}), env, 0, has_torch).why,
            "the job's script does not use torch");
  EXPECT_EQ(ChooseCollectiveEngine(PlanFor({"true"}), env, 0, has_torch).why,
            "the job's command is not Python");
  EXPECT_EQ(ChooseCollectiveEngine(PlanFor({"python3", uses}, "tcp"), env, 0, has_torch).backend, "");
  EXPECT_EQ(probes, 2);
}

}  // namespace
}  // namespace dlaunch
