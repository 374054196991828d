#include "launcher/jobdir/journal.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "absl/strings/str_cat.h"

namespace dlaunch {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Pair;

// A job directory as dlaunch wrote it before the typed journal: 2 nodes and a spare, rank 0
// fails in round 0, round 1 succeeds (tests/launcher/testdata/journal-v1, from a real run).
constexpr char kV1Dir[] = DLAUNCH_SOURCE_DIR "/tests/launcher/testdata/journal-v1";

TEST(JournalTest, EventsRoundTripAsOneTypedLineEach) {
  v1::JobEvent e;
  e.set_time("2026-11-25T10:00:00.000Z");
  e.set_round(1);
  auto* hang = e.mutable_hang_detected();
  hang->set_rank(3);
  hang->set_node_id(2);
  hang->set_node_rank(1);
  hang->add_hung_ranks(3);
  absl::StatusOr<std::string> line = EventJournalLine(e);
  ASSERT_TRUE(line.ok()) << line.status();
  EXPECT_EQ(line->find('\n'), std::string::npos);
  EXPECT_THAT(*line, HasSubstr("\"hang_detected\":{"));
  EXPECT_THAT(*line, HasSubstr("\"node_id\":2,\"node_rank\":1"));
  absl::StatusOr<EventJournal> j = ParseEventJournal(*line + "\n{\"torn\n");
  ASSERT_TRUE(j.ok()) << j.status();
  EXPECT_EQ(j->bad_lines, 1);
  ASSERT_EQ(j->events.size(), 1u);
  EXPECT_EQ(j->events[0].hang_detected().node_id(), 2);
  EXPECT_EQ(EventName(j->events[0]), "hang_detected");
  EXPECT_THAT(EventFields(j->events[0]),
              ::testing::IsSupersetOf({Pair("round", "1"), Pair("node_id", "2"),
                                       Pair("hung_ranks", "[3]")}));
}

TEST(JournalTest, MetricsCarryTheWholeReport) {
  v1::MetricLine m;
  m.set_node_id(2);
  m.set_round(1);
  m.mutable_report()->set_rank(5);
  m.mutable_report()->set_step(40);
  m.mutable_report()->mutable_timings()->set_backward_ms(7.5);
  absl::StatusOr<std::string> line = MetricJournalLine(m);
  ASSERT_TRUE(line.ok());
  MetricJournal j = ParseMetricJournal(*line + "\n");
  ASSERT_EQ(j.metrics.size(), 1u);
  EXPECT_EQ(j.metrics[0].node_id(), 2);
  EXPECT_EQ(j.metrics[0].report().step(), 40);
  EXPECT_EQ(j.metrics[0].report().timings().backward_ms(), 7.5);
}

TEST(JournalTest, ALongMetricsJournalIsReadInOrderPastTornAndOlderLines) {
  std::string text;
  for (int i = 0; i < 2500; ++i) {
    v1::MetricLine m;
    m.set_time("2026-11-25T10:00:00.000Z");
    m.mutable_report()->set_step(i);
    text += MetricJournalLine(m).value() + "\n";
    if (i == 1200) text += "{\"time\":\"2026-11-25T10:00:00.000Z\",\"report\":{\"st\n";  // torn
    if (i == 1700) text += "{\"time\":\"T\",\"node\":1,\"rank\":2,\"step\":1700}\n";  // version 1
  }
  MetricJournal j = ParseMetricJournal(text);
  EXPECT_EQ(j.bad_lines, 1);
  ASSERT_EQ(j.metrics.size(), 2501u);
  EXPECT_EQ(j.metrics[1700].report().step(), 1700);
  EXPECT_EQ(j.metrics[1701].report().rank(), 2) << "the version-1 line, in its place";
  EXPECT_EQ(j.metrics[2500].report().step(), 2499);
}

TEST(JournalTest, AJournalOfANewerSchemaIsRefusedInOneLine) {
  absl::StatusOr<EventJournal> j = ParseEventJournal(
      "{\"time\":\"T\",\"round\":0,\"journal_opened\":{\"schema_version\":3}}\n", "x/events.jsonl");
  ASSERT_FALSE(j.ok());
  EXPECT_EQ(j.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(j.status().message(), HasSubstr("x/events.jsonl"));
  EXPECT_THAT(j.status().message(), HasSubstr("schema version 3"));
}

TEST(JournalTest, AnUntypedJournalOfEarlierDlaunchIsReadAsVersion1) {
  absl::StatusOr<EventJournal> j = ReadEventJournal(kV1Dir);
  ASSERT_TRUE(j.ok()) << j.status();
  EXPECT_EQ(j->schema_version, 1);
  EXPECT_EQ(j->bad_lines, 0);
  ASSERT_EQ(j->events.size(), 25u);
  EXPECT_EQ(j->events.front().job_started().job_id(), "job");
  EXPECT_EQ(EventName(j->events.back()), "job_finished");
  for (const v1::JobEvent& e : j->events) {
    SCOPED_TRACE(e.DebugString());
    EXPECT_FALSE(e.time().empty());
    if (e.has_rendezvous_closed()) {
      EXPECT_THAT(e.rendezvous_closed().node_ids(), ElementsAre(0, 1));
    }
    if (e.has_worker_started()) {
      // Version 1 wrote the node id here and no node rank.
      EXPECT_EQ(e.worker_started().node_id(), e.worker_started().rank());
      EXPECT_EQ(e.worker_started().node_rank(), -1);
    }
    if (e.has_failure_detected()) {
      // ... but a failure's node *rank*, and no node id.
      EXPECT_EQ(e.failure_detected().failure().node_rank(), 0);
      EXPECT_EQ(e.failure_detected().failure().node_id(), -1);
      EXPECT_EQ(e.failure_detected().failure().failure_class(), "worker crash");
    }
    if (e.has_round_started()) {
      EXPECT_EQ(e.round(), 1);
      EXPECT_THAT(e.round_started().node_ids(), ElementsAre(0, 1));
    }
    if (e.has_spare_lost()) {
      EXPECT_EQ(e.spare_lost().node_id(), 2);
    }
  }
}

TEST(JournalTest, MetricsOfEarlierDlaunchAreReadIntoReports) {
  absl::StatusOr<MetricJournal> j = ReadMetricJournal(kV1Dir);
  ASSERT_TRUE(j.ok()) << j.status();
  EXPECT_EQ(j->bad_lines, 0);
  ASSERT_EQ(j->metrics.size(), 5u);
  const v1::MetricLine& first = j->metrics[0];
  EXPECT_EQ(first.time(), "2026-11-25T12:56:43.441Z");
  EXPECT_EQ(first.node_id(), 1);
  EXPECT_EQ(first.report().rank(), 1);
  EXPECT_EQ(first.report().step(), 2);
  EXPECT_EQ(first.report().samples(), 128);
  EXPECT_EQ(first.report().timings().backward_ms(), 6);
}

TEST(JournalTest, AMissingMetricsFileIsAnEmptyJournal) {
  absl::StatusOr<MetricJournal> j = ReadMetricJournal(absl::StrCat(kV1Dir, "/nothing-here"));
  ASSERT_TRUE(j.ok());
  EXPECT_TRUE(j->metrics.empty());
}

}  // namespace
}  // namespace dlaunch
