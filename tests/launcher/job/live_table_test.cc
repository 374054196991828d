#include "launcher/job/live_table.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace dlaunch {
namespace {

using ::testing::AllOf;
using ::testing::Contains;
using ::testing::HasSubstr;
using ::testing::Not;

v1::NodeSnapshot* AddNode(v1::JobSnapshot* s, int id, const std::string& state, double rate,
                          int64_t step, double since_heartbeat_s = 0.5) {
  v1::NodeSnapshot* n = s->add_nodes();
  n->set_node(id);
  n->set_host(absl::StrCat("host", id));
  n->set_state(state);
  n->set_workers_running(state == "running" ? 4 : 0);
  n->set_slots(4);
  n->set_samples_per_sec(rate);
  n->set_step(step);
  n->set_since_heartbeat_s(since_heartbeat_s);
  return n;
}

v1::JobSnapshot TwoNodes() {
  v1::JobSnapshot s;
  s.set_job_id("train-1");
  s.set_elapsed_s(75);
  s.set_nodes_expected(2);
  s.set_world_size(8);
  s.set_step(40);
  s.set_samples_per_sec(512);
  AddNode(&s, 0, "running", 256, 40);
  AddNode(&s, 1, "running", 256, 39, 1.25);
  return s;
}

std::string Text(const std::vector<std::string>& lines) { return absl::StrJoin(lines, "\n"); }

TEST(LiveTableTest, OneRowPerNodeUnderTheJobLine) {
  std::vector<std::string> lines = RenderLiveTable(TwoNodes(), 120, 40);
  ASSERT_EQ(lines.size(), 4u);  // job line, header, two nodes
  EXPECT_THAT(lines[0], AllOf(HasSubstr("job train-1"), HasSubstr("1m15s"),
                              HasSubstr("nodes 2/2 up"), HasSubstr("workers 8/8"),
                              HasSubstr("step 40"), HasSubstr("512.0 samples/s")));
  EXPECT_THAT(lines[1], AllOf(HasSubstr("HOST"), HasSubstr("STATE"), HasSubstr("SAMPLES/S"),
                              HasSubstr("HEARTBEAT"), Not(HasSubstr("GPU"))));
  EXPECT_THAT(lines[2], AllOf(HasSubstr("host0"), HasSubstr("running"), HasSubstr("4/4"),
                              HasSubstr("40"), HasSubstr("256.0"), HasSubstr("0.5s")));
  EXPECT_THAT(lines[3], AllOf(HasSubstr("host1"), HasSubstr("39"), HasSubstr("1.2s")));
}

// A node none of whose ranks reported (a script that sends no reports) shows "-" for its step
// and rate, and the job line shows neither; a reported 0 stays 0.
TEST(LiveTableTest, NothingReportedShowsDashesAReportedZeroShowsZero) {
  v1::JobSnapshot s;
  s.set_job_id("script-1");
  s.set_nodes_expected(2);
  s.set_world_size(8);
  AddNode(&s, 0, "running", 0, 0)->clear_step();
  s.mutable_nodes(0)->clear_samples_per_sec();
  AddNode(&s, 1, "running", 0, 0);
  std::vector<std::string> lines = RenderLiveTable(s, 120, 40);
  ASSERT_EQ(lines.size(), 4u);
  EXPECT_THAT(lines[0], AllOf(Not(HasSubstr("step")), Not(HasSubstr("samples/s"))));
  EXPECT_THAT(lines[2], AllOf(HasSubstr("host0"), HasSubstr(" 4/4        -          - ")));
  EXPECT_THAT(lines[3], AllOf(HasSubstr("host1"), HasSubstr(" 4/4        0        0.0 ")));
  s.set_step(0);
  s.set_samples_per_sec(0);
  EXPECT_THAT(RenderLiveTable(s, 120, 40)[0],
              AllOf(HasSubstr("step 0"), HasSubstr("0.0 samples/s")));
  // Collapsed, nodes without reports are named apart, not as the slowest at 0.0/s.
  v1::JobSnapshot wide;
  for (int i = 0; i < 40; ++i) {
    AddNode(&wide, i, "running", 0, 0)->clear_step();
    wide.mutable_nodes(i)->clear_samples_per_sec();
  }
  std::string text = Text(RenderLiveTable(wide, 200, 20));
  EXPECT_THAT(text, AllOf(HasSubstr("no reports yet: host0 (n0), host1 (n1)"),
                          Not(HasSubstr("slowest:")), Not(HasSubstr("0.0/s"))));
}

TEST(LiveTableTest, GpuColumnsOnlyWhenANodeHasGpus) {
  v1::JobSnapshot s = TwoNodes();
  for (int i = 0; i < 2; ++i) {
    v1::GpuSample* g = s.mutable_nodes(0)->add_gpus();
    g->set_utilization_pct(i == 0 ? 80 : 90);
    g->set_memory_used_mib(10 * 1024);
    g->set_memory_total_mib(40 * 1024);
  }
  std::vector<std::string> lines = RenderLiveTable(s, 120, 40);
  EXPECT_THAT(lines[1], AllOf(HasSubstr("GPU%"), HasSubstr("GPU MEM")));
  // The mean utilisation and the summed memory of the node's two GPUs.
  EXPECT_THAT(lines[2], AllOf(HasSubstr("85%"), HasSubstr("20.0/80.0")));
  EXPECT_THAT(lines[3], Not(HasSubstr("%")));
}

TEST(LiveTableTest, HostColumnsOnlyWhenANodeSentItsHealth) {
  v1::JobSnapshot s = TwoNodes();
  EXPECT_THAT(RenderLiveTable(s, 160, 40)[1], Not(HasSubstr("LOAD")));
  v1::HostSample* h = s.mutable_nodes(0)->mutable_health();
  h->set_load1(2.14);
  h->set_cpus(16);
  h->set_mem_total_kb(24 * 1048576L);
  h->set_mem_available_kb(3 * 1048576L / 2);
  h->set_mem_pressure_pct(12);
  std::vector<std::string> lines = RenderLiveTable(s, 160, 40);
  EXPECT_THAT(lines[1], AllOf(HasSubstr("LOAD"), HasSubstr("MEM FREE GiB"), HasSubstr("PSI")));
  EXPECT_THAT(lines[2], AllOf(HasSubstr("2.1/16"), HasSubstr("1.5/24.0"), HasSubstr("12%")));
  EXPECT_THAT(lines[3], Not(HasSubstr("/24.0")));  // node 1 sent none yet
  h->set_mem_pressure_pct(-1);                     // no PSI on this kernel
  EXPECT_THAT(RenderLiveTable(s, 160, 40)[2], Not(HasSubstr("%")));
}

TEST(LiveTableTest, ProgressBarAndEtaWhenTheTotalIsKnown) {
  v1::JobSnapshot s = TwoNodes();
  s.set_total_steps(100);
  s.set_eta_s(90);
  std::vector<std::string> lines = RenderLiveTable(s, 80, 40);
  ASSERT_GE(lines.size(), 2u);
  EXPECT_THAT(lines[1], AllOf(HasSubstr("40.0%"), HasSubstr("step 40/100"), HasSubstr("ETA 1m30s")));
  size_t open = lines[1].find('['), close = lines[1].find(']');
  ASSERT_NE(close, std::string::npos);
  std::string bar = lines[1].substr(open + 1, close - open - 1);
  size_t filled = std::count(bar.begin(), bar.end(), '#');
  EXPECT_EQ(filled, static_cast<size_t>(bar.size() * 0.4));

  s.set_ended(true);  // an ended job has no ETA
  EXPECT_THAT(RenderLiveTable(s, 80, 40)[1], AllOf(HasSubstr("40.0%"), Not(HasSubstr("ETA"))));
  s.set_ended(false);
  s.set_eta_s(-1);  // no step rate yet
  EXPECT_THAT(RenderLiveTable(s, 80, 40)[1], Not(HasSubstr("ETA")));
  s.set_total_steps(0);
  EXPECT_THAT(Text(RenderLiveTable(s, 80, 40)), Not(HasSubstr("step 40/")));
}

TEST(LiveTableTest, APhaseAwayFromTrainingAndTheRoundAreShown) {
  v1::JobSnapshot s = TwoNodes();
  s.set_total_steps(40);
  s.set_eta_s(0);
  s.set_phase("evaluating");
  s.set_round(2);
  s.mutable_nodes(0)->set_phase("evaluating");
  s.mutable_nodes(1)->set_phase("training");
  std::vector<std::string> lines = RenderLiveTable(s, 120, 40);
  ASSERT_EQ(lines.size(), 5u);
  EXPECT_THAT(lines[0], AllOf(HasSubstr("evaluating"), HasSubstr("round 2")));
  EXPECT_THAT(lines[1], AllOf(HasSubstr("step 40/40"), HasSubstr("evaluating")));
  EXPECT_THAT(lines[3], AllOf(HasSubstr("host0"), HasSubstr("evaluating")));
  EXPECT_THAT(lines[4], AllOf(HasSubstr("host1"), HasSubstr("running")));
  s.set_round(0);
  EXPECT_THAT(RenderLiveTable(s, 120, 40)[0], Not(HasSubstr("round")));
}

TEST(LiveTableTest, EveryLineFitsTheWidth) {
  v1::JobSnapshot s = TwoNodes();
  s.set_total_steps(100);
  for (int width : {20, 40, 80}) {
    for (const std::string& line : RenderLiveTable(s, width, 40)) {
      EXPECT_LE(static_cast<int>(line.size()), width) << line;
    }
  }
}

TEST(LiveTableTest, EndedJobSaysSoWithItsExitCode) {
  v1::JobSnapshot s = TwoNodes();
  s.set_ended(true);
  s.set_exit_code(1);
  EXPECT_THAT(RenderLiveTable(s, 120, 40)[0], HasSubstr("ended (exit 1)"));
}

// 200 nodes: most running, two silent, one failed, one waiting.
v1::JobSnapshot WideJob() {
  v1::JobSnapshot s;
  s.set_job_id("wide");
  s.set_nodes_expected(200);
  s.set_world_size(800);
  for (int i = 0; i < 200; ++i) {
    std::string state = i == 7 || i == 9 ? "silent" : i == 11 ? "failed" : i == 13 ? "waiting" : "running";
    // Node 42 is the slowest, then 150, then the rest by id.
    double rate = i == 42 ? 10 : i == 150 ? 20 : 100 + i;
    AddNode(&s, i, state, rate, 500, i == 7 ? 9.5 : i == 9 ? 30 : 0.5);
  }
  return s;
}

TEST(LiveTableTest, WideJobCollapsesIntoCountsSlowestAndSilent) {
  std::vector<std::string> lines = RenderLiveTable(WideJob(), 200, 50);
  EXPECT_LE(lines.size(), 25u);
  std::string text = Text(lines);
  EXPECT_THAT(text, Not(HasSubstr("HEARTBEAT")));  // no per-node rows
  EXPECT_THAT(lines, Contains(AllOf(HasSubstr("196 running"), HasSubstr("2 silent"),
                                    HasSubstr("1 failed"), HasSubstr("1 waiting"))));
  std::string slowest, silent;
  for (const auto& l : lines) {
    if (l.rfind("slowest:", 0) == 0) slowest = l;
    if (l.rfind("silent:", 0) == 0) silent = l;
  }
  // The two slowest running nodes first, then the next by rate; the list is bounded.
  EXPECT_EQ(slowest.find("host42 (n42) 10.0/s"), std::string("slowest: ").size()) << slowest;
  EXPECT_LT(slowest.find("host42"), slowest.find("host150"));
  EXPECT_LT(slowest.find("host150"), slowest.find("host0 "));
  EXPECT_THAT(slowest, HasSubstr(absl::StrCat("+", 196 - kNamedNodes, " more")));
  EXPECT_THAT(slowest, Not(HasSubstr("host7 ")));  // silent nodes are not "running"
  // The longest silent first.
  EXPECT_THAT(silent, HasSubstr("host9 (n9) 30.0s, host7 (n7) 9.5s"));
}

TEST(LiveTableTest, RowsCollapseWhenTheScreenIsTooShortOrBeyondTheLimit) {
  v1::JobSnapshot s;
  s.set_job_id("j");
  for (int i = 0; i < 10; ++i) AddNode(&s, i, "running", 1, 1);
  EXPECT_EQ(RenderLiveTable(s, 120, 60).size(), 12u);   // ten rows fit in half of 60 lines
  EXPECT_LT(RenderLiveTable(s, 120, 16).size(), 8u);    // they do not fit in 8
  for (int i = 10; i < kMaxNodeRows + 1; ++i) AddNode(&s, i, "running", 1, 1);
  EXPECT_THAT(Text(RenderLiveTable(s, 120, 1000)), HasSubstr("nodes: 33 running"));
}

TEST(LiveTableTest, CollapsedGpusAreSummed) {
  v1::JobSnapshot s = WideJob();
  for (int i = 0; i < 200; ++i) {
    v1::GpuSample* g = s.mutable_nodes(i)->add_gpus();
    g->set_utilization_pct(50);
    g->set_memory_used_mib(1024);
    g->set_memory_total_mib(2048);
  }
  EXPECT_THAT(Text(RenderLiveTable(s, 200, 50)),
              HasSubstr("GPUs: 200, mean utilisation 50%, memory 200.0/400.0 GiB"));
}

TEST(LiveTableTest, CollapsedRowsNameTheNodesWithTheLeastMemoryFree) {
  v1::JobSnapshot s = WideJob();
  EXPECT_THAT(Text(RenderLiveTable(s, 200, 50)), Not(HasSubstr("least memory")));
  for (int i = 0; i < 200; ++i) {
    v1::HostSample* h = s.mutable_nodes(i)->mutable_health();
    h->set_mem_total_kb(64 * 1048576L);
    h->set_mem_available_kb((i == 17 ? 1 : 40) * 1048576L);
  }
  EXPECT_THAT(Text(RenderLiveTable(s, 200, 50)), HasSubstr("least memory free: host17 (n17) 1.0 GiB"));
}

TEST(LiveTableTest, Durations) {
  EXPECT_EQ(FormatClock(0), "0s");
  EXPECT_EQ(FormatClock(59.4), "59s");
  EXPECT_EQ(FormatClock(185), "3m05s");
  EXPECT_EQ(FormatClock(7380), "2h03m");
  EXPECT_EQ(FormatClock(-3), "0s");
}

}  // namespace
}  // namespace dlaunch
