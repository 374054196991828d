// FlightRecordOf: PyTorch 2.11's flight recorder dumps of a Gloo job (tests/agent/stacks/,
// taken from its worker server's fr_trace_json handler while rank 1 slept before the fourth
// all-reduce its peer had entered) and the cases the ring buffer and other versions make.
#include "agent/health/flight_record.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/test_files.h"

namespace dlaunch {
namespace {

using ::testing::HasSubstr;

std::string Fixture(const std::string& name) {
  std::string text = ReadFile(std::string(DLAUNCH_SOURCE_DIR) + "/tests/agent/stacks/" + name);
  EXPECT_FALSE(text.empty()) << name;
  return text;
}

TEST(FlightRecordTest, TheNewestCollectiveOfTheDefaultGroupTellsTheRankBehind) {
  absl::StatusOr<v1::FlightRecord> waiting = FlightRecordOf(Fixture("fr_gloo_rank0.json"));
  ASSERT_TRUE(waiting.ok()) << waiting.status();
  EXPECT_EQ(waiting->entries(), 4);
  EXPECT_EQ(waiting->last_seq(), 4);
  EXPECT_EQ(waiting->last_collective(), "gloo:all_reduce");
  absl::StatusOr<v1::FlightRecord> stopped = FlightRecordOf(Fixture("fr_gloo_rank1.json"));
  ASSERT_TRUE(stopped.ok()) << stopped.status();
  EXPECT_EQ(stopped->entries(), 3);
  EXPECT_EQ(stopped->last_seq(), 3);
}

TEST(FlightRecordTest, OtherGroupsAndPointToPointDoNotCountAndTheStatusOutlivesTheRing) {
  const std::string json = R"({"version": "2.10", "entries": [
      {"collective_seq_id": 7, "pg_id": 0, "process_group": ["0", "default_pg"],
       "profiling_name": "nccl:all_reduce", "is_p2p": false, "future_field": [[1, 2]]},
      {"collective_seq_id": 40, "pg_id": 1, "process_group": ["1", "tp"],
       "profiling_name": "nccl:all_gather", "is_p2p": false},
      {"collective_seq_id": 99, "pg_id": 0, "process_group": ["0", "default_pg"],
       "profiling_name": "nccl:send", "is_p2p": true}],
    "pg_status": {"0": {"last_enqueued_collective": "7"}}})";
  absl::StatusOr<v1::FlightRecord> r = FlightRecordOf(json);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->entries(), 3);
  EXPECT_EQ(r->last_seq(), 7);
  EXPECT_EQ(r->last_collective(), "nccl:all_reduce");
  // A ring of two entries that has dropped the newest's predecessors keeps counting in the
  // group's status; an entry the ring no longer holds has no name.
  absl::StatusOr<v1::FlightRecord> wrapped = FlightRecordOf(
      R"({"version": "2.10", "entries": [], "pg_status": {"0": {"last_enqueued_collective": "12"}}})");
  ASSERT_TRUE(wrapped.ok());
  EXPECT_EQ(wrapped->entries(), 0);
  EXPECT_EQ(wrapped->last_seq(), 12);
  EXPECT_EQ(wrapped->last_collective(), "");
}

TEST(FlightRecordTest, WhatIsNotADumpIsRefusedWithWhy) {
  EXPECT_THAT(FlightRecordOf("handler not found").status().message(),
              HasSubstr("not a flight recorder dump"));
  EXPECT_THAT(FlightRecordOf("{}").status().message(), HasSubstr("no version"));
  EXPECT_FALSE(FlightRecordOf(R"({"version": "2.10", "entries": 3})").ok());
}

}  // namespace
}  // namespace dlaunch
