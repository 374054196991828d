#include "launcher/trace/trace_bound.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "absl/strings/str_cat.h"
#include "tests/launcher/trace/trace_checks.h"

namespace dlaunch {
namespace {

using ::testing::Contains;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Lt;

// A long job as parts: `ranks` ranks of `steps` recorded steps each, a report per step, and a
// launcher event per 100 steps.
TraceParts LongJob(int ranks, int steps) {
  TraceParts p;
  p.job_id = "long";
  p.fixed.push_back(ProcessName(kLauncherPid, "launcher"));
  p.fixed.push_back(ThreadName(kLauncherPid, kLauncherTid, "launcher"));
  const int64_t end = (int64_t{steps} + 1) * 10000;
  p.fixed.push_back(Span("job succeeded", "launcher", kLauncherPid, kLauncherTid, 0, end));
  p.fixed.push_back(ProcessName(NodePid(0), "node 0"));
  for (int r = 0; r < ranks; ++r) {
    p.fixed.push_back(ThreadName(NodePid(0), RankTid(r), absl::StrCat("rank ", r)));
    p.fixed.push_back(ThreadName(NodePid(0), ReportTid(r), absl::StrCat("rank ", r, " reports")));
    p.fixed.push_back(Span(absl::StrCat("rank ", r, ": succeeded, exit code 0"), "worker",
                           NodePid(0), RankTid(r), 0, end));
    for (int s = 1; s <= steps; ++s) {
      const int64_t t = int64_t{s} * 10000;
      StepSpan step;
      step.pid = NodePid(0);
      step.tid = RankTid(r);
      step.begin_us = t;
      step.end_us = t + 9000;
      step.row.step = s;
      step.row.data_us = 1000;
      step.row.forward_us = 8000;
      p.steps[r].push_back(step);
      ReportSpan rep;
      rep.pid = NodePid(0);
      rep.tid = ReportTid(r);
      rep.begin_us = t;
      rep.end_us = t + 10000;
      rep.first_step = rep.last_step = s;
      rep.samples = 32;
      p.reports[r].push_back(rep);
    }
  }
  for (int i = 0; i < steps / 100; ++i) {
    p.instants.push_back(
        Instant("round_tick", "launcher", kLauncherPid, kLauncherTid, int64_t{i} * 1000000));
  }
  return p;
}

TEST(TraceBoundTest, ASmallJobIsWhole) {
  RenderedTrace r = RenderTrace(LongJob(2, 50));
  EXPECT_EQ(r.keep_one_in, 1);
  testing::ParsedTrace t = testing::ParseTrace(r.json);
  EXPECT_THAT(testing::StructureProblems(t), IsEmpty());
  EXPECT_EQ(t.metadata.fields().at("sampled").bool_value(), false);
  EXPECT_EQ(t.Named("step ", "X").size(), 2u * 50);
  EXPECT_EQ(t.Named("report: step ", "X").size(), 2u * 50);
}

TEST(TraceBoundTest, ALongJobStaysBelowTheLimitAndSaysWhatWasThinned) {
  const size_t limit = 512 << 10;
  TraceParts parts = LongJob(8, 5000);
  RenderedTrace r = RenderTrace(parts, limit);
  EXPECT_THAT(r.json.size(), Lt(limit));
  EXPECT_GT(r.keep_one_in, 1);
  testing::ParsedTrace t = testing::ParseTrace(r.json);
  EXPECT_THAT(testing::StructureProblems(t), IsEmpty());
  EXPECT_TRUE(t.metadata.fields().at("sampled").bool_value());
  EXPECT_EQ(t.metadata.fields().at("size_limit_bytes").number_value(), limit);
  ASSERT_FALSE(t.Notes().empty());
  EXPECT_THAT(t.Notes().back(),
              HasSubstr(absl::StrCat("1 recorded worker step in ", r.keep_one_in)));
  // The note is also on the timeline itself, for whoever opens it in the UI.
  EXPECT_EQ(t.Named("trace notes", "i").size(), 1u);
  // The lifecycle is whole, and every rank keeps steps and (merged) reports.
  for (int rank = 0; rank < 8; ++rank) {
    EXPECT_EQ(t.Named(absl::StrCat("rank ", rank, ": succeeded"), "X").size(), 1u);
    std::set<std::string> cats;
    for (const auto& e : t.events) {
      if (e.tid == RankTid(rank) || e.tid == ReportTid(rank)) cats.insert(e.cat);
    }
    EXPECT_THAT(cats, Contains("step"));
    EXPECT_THAT(cats, Contains("report"));
  }
  bool merged = false;
  for (const auto& e : t.events) {
    if (e.cat == "report" && e.args.fields().count("reports_merged")) merged = true;
  }
  EXPECT_TRUE(merged);
}

TEST(TraceBoundTest, ThinningKeepsWholeStepsAndMergesReportsInOrder) {
  RenderedTrace r = RenderTrace(LongJob(1, 4000), 256 << 10);
  ASSERT_GT(r.keep_one_in, 1);
  testing::ParsedTrace t = testing::ParseTrace(r.json);
  size_t steps = 0, data = 0;
  double last_report_end = -1;
  for (const auto& e : t.events) {
    steps += e.cat == "step";
    data += e.name == "data";
    if (e.cat == "report") {
      EXPECT_GE(e.ts, last_report_end) << e.name;
      last_report_end = e.ts + e.dur;
    }
  }
  EXPECT_EQ(steps, data) << "a kept step keeps its phases";
  EXPECT_EQ(steps, (4000 + r.keep_one_in - 1) / r.keep_one_in);
}

}  // namespace
}  // namespace dlaunch
