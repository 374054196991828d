// summary.json as the journal's code writes and reads it (v1::JobSummary), and the untyped
// summary.json of an earlier dlaunch read into the same message.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include <google/protobuf/util/json_util.h>

#include "common/file_io.h"
#include "launcher/jobdir/journal.h"

namespace dlaunch {
namespace {

using ::testing::ElementsAre;
using ::testing::EndsWith;
using ::testing::HasSubstr;
using ::testing::Not;

// A failed job ended by a stall (the frame its stacks named), after one restart.
v1::JobSummary FailedSummary() {
  v1::JobSummary s;
  s.set_job_id("j");
  s.set_result("failed");
  s.set_exit_code(1);
  s.set_wall_time_s(12.5);
  s.set_nodes(2);
  s.set_world_size(4);
  s.set_samples(1280);
  s.set_samples_per_sec(40);
  s.set_samples_per_sec_per_rank(10);
  s.set_restarts(1);
  s.set_max_restarts(1);
  s.set_rounds(2);
  s.set_not_restarted("restart budget spent (1 of 1 used)");
  s.mutable_final_loss()->set_value(0.5);
  s.set_failure("stall: rank 3 ...");
  v1::FailureRecord* root = s.mutable_root_cause();
  root->set_failure_class("stall");
  root->set_rank(3);
  root->set_local_rank(1);
  root->set_node_id(2);    // a spare that took node rank 1's place
  root->set_node_rank(1);
  root->set_host("n2");
  root->set_description("stall: rank 3 ...");
  root->mutable_stuck_at()->set_function("train_step");
  root->mutable_stuck_at()->set_file("/home/u/train.py");
  root->mutable_stuck_at()->set_line(42);
  v1::FailureRecord* c = s.add_consequences();
  c->set_failure_class("worker crash");
  c->set_rank(0);
  c->set_exit_code(1);
  c->add_log_tail("Connection reset by peer");
  s.mutable_ranks_succeeded()->set_value(0);
  return s;
}

TEST(JobSummaryTest, RoundTripsThroughTheJournalsMapping) {
  const v1::JobSummary s = FailedSummary();
  absl::StatusOr<std::string> json = JobSummaryJson(s);
  ASSERT_TRUE(json.ok()) << json.status();
  // Nodes named twice, the class spelled out, the frame inside the failure, 64-bit counts as
  // strings (as every journal line has them).
  EXPECT_THAT(*json, HasSubstr("\"root_cause\":{\"failure_class\":\"stall\",\"rank\":3,"
                               "\"local_rank\":1,\"node_id\":2,\"node_rank\":1,\"host\":\"n2\""));
  EXPECT_THAT(*json, HasSubstr("\"stuck_at\":{\"function\":\"train_step\",\"file\":"
                               "\"/home/u/train.py\",\"line\":42,"));
  EXPECT_THAT(*json, HasSubstr("\"samples\":\"1280\""));
  EXPECT_THAT(*json, HasSubstr("\"final_loss\":0.5"));
  EXPECT_THAT(*json, Not(HasSubstr("test_accuracy")));
  EXPECT_THAT(*json, Not(HasSubstr("goodput")));
  absl::StatusOr<JobSummaryFile> read = ParseJobSummary(*json);
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_EQ(read->summary.SerializeAsString(), s.SerializeAsString());
  EXPECT_EQ(read->goodput_error, "");
}

TEST(JobSummaryTest, TheGoodputAccountIsTheLastKey) {
  // `dlaunch trace` replaces an account written before by cutting the object at its key.
  v1::JobSummary s = FailedSummary();
  s.mutable_goodput()->set_wall_s(12.5);
  s.mutable_goodput()->set_goodput(0.75);
  absl::StatusOr<std::string> json = JobSummaryJson(s);
  ASSERT_TRUE(json.ok());
  const size_t at = json->find(",\"goodput\":{");
  ASSERT_NE(at, std::string::npos) << *json;
  ASSERT_THAT(*json, EndsWith("}"));
  // What follows the key is the account alone: no key of the summary comes after it.
  const std::string tail = json->substr(at + 11, json->size() - at - 12);
  v1::GoodputAccount account;
  EXPECT_TRUE(google::protobuf::util::JsonStringToMessage(tail, &account).ok()) << tail;
  EXPECT_DOUBLE_EQ(account.wall_s(), 12.5);
  absl::StatusOr<JobSummaryFile> read = ParseJobSummary(*json);
  ASSERT_TRUE(read.ok());
  EXPECT_DOUBLE_EQ(read->summary.goodput().goodput(), 0.75);
}

// summary.json as the dlaunch before the typed summary wrote it: a failure's node rank under
// "node", its class under "class" (tests/launcher/testdata/untyped-summary, from a real run).
TEST(JobSummaryTest, TheUntypedSummaryOfTheDlaunchBeforeIsRead) {
  absl::StatusOr<std::string> text =
      ReadFile(DLAUNCH_SOURCE_DIR "/tests/launcher/testdata/untyped-summary/summary.json");
  ASSERT_TRUE(text.ok()) << text.status();
  absl::StatusOr<JobSummaryFile> read = ParseJobSummary(*text);
  ASSERT_TRUE(read.ok()) << read.status();
  const v1::JobSummary& s = read->summary;
  EXPECT_EQ(s.result(), "failed");
  EXPECT_EQ(s.exit_code(), 1);
  EXPECT_EQ(s.world_size(), 2);
  EXPECT_EQ(s.restarts(), 1);
  EXPECT_EQ(s.not_restarted(), "restart budget spent (1 of 1 used)");
  EXPECT_FALSE(s.has_final_loss());
  EXPECT_EQ(s.ranks_succeeded().value(), 0);
  const v1::FailureRecord& root = s.root_cause();
  EXPECT_EQ(root.failure_class(), "worker crash");
  EXPECT_EQ(root.rank(), 1);
  EXPECT_EQ(root.node_rank(), 1);
  EXPECT_EQ(root.node_id(), 1);
  EXPECT_EQ(root.exit_code(), 3);
  EXPECT_EQ(root.description(),
            "worker crash: rank 1 (local 0, node 1, host vm) exited with code 3");
  EXPECT_THAT(root.log_tail(), ElementsAre("Traceback (most recent call last):",
                                           "RuntimeError: batch 3 is corrupt"));
  EXPECT_EQ(s.consequences_size(), 0);
  EXPECT_EQ(s.goodput().rounds_size(), 2);
  EXPECT_EQ(read->goodput_error, "");
}

TEST(JobSummaryTest, AnOlderSummaryWithoutNodeIdsAndAStuckFrameIsRead) {
  absl::StatusOr<JobSummaryFile> read = ParseJobSummary(
      R"({"job_id":"j","result":"failed","exit_code":1,"wall_time_s":3,"samples":128,)"
      R"("final_loss":0.25,"root_cause":{"class":"stall","rank":1,"local_rank":1,"node":0,)"
      R"("host":"n0","detected_at_s":5,"after_stop":false,"stuck_at":{"function":"f",)"
      R"("file":"t.py","line":7,"source":"py-spy","stacks":"stacks/rank-1.txt"},)"
      R"("description":"stall: rank 1","log_tail":[]},"consequences":[{"class":"worker crash",)"
      R"("rank":0,"node":1,"exit_code":1}],"ranks_succeeded":1,"some_later_field":true})");
  ASSERT_TRUE(read.ok()) << read.status();
  const v1::JobSummary& s = read->summary;
  EXPECT_EQ(s.samples(), 128);
  EXPECT_DOUBLE_EQ(s.final_loss().value(), 0.25);
  EXPECT_EQ(s.root_cause().failure_class(), "stall");
  EXPECT_EQ(s.root_cause().node_rank(), 0);
  EXPECT_EQ(s.root_cause().node_id(), -1) << "not written: unknown, not node 0";
  EXPECT_FALSE(s.root_cause().has_exit_code());
  EXPECT_EQ(s.root_cause().stuck_at().function(), "f");
  EXPECT_EQ(s.root_cause().stuck_at().stacks(), "stacks/rank-1.txt");
  ASSERT_EQ(s.consequences_size(), 1);
  EXPECT_EQ(s.consequences(0).failure_class(), "worker crash");
  EXPECT_EQ(s.consequences(0).node_rank(), 1);
  EXPECT_EQ(s.consequences(0).node_id(), -1);
  EXPECT_EQ(s.ranks_succeeded().value(), 1);
}

TEST(JobSummaryTest, AnUnreadableAccountLeavesTheRestReadable) {
  absl::StatusOr<JobSummaryFile> read =
      ParseJobSummary(R"({"result":"succeeded","wall_time_s":2,"goodput":{"wall_s":"x"}})");
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_EQ(read->summary.result(), "succeeded");
  EXPECT_FALSE(read->summary.has_goodput());
  EXPECT_NE(read->goodput_error, "");
}

TEST(JobSummaryTest, WhatIsNotASummaryIsDataLoss) {
  for (const char* text : {"{\"world_size\": 2", "[1,2]", "{\"world_size\":\"many\"}"}) {
    absl::StatusOr<JobSummaryFile> read = ParseJobSummary(text);
    ASSERT_FALSE(read.ok()) << text;
    EXPECT_EQ(read.status().code(), absl::StatusCode::kDataLoss) << text;
  }
  EXPECT_TRUE(absl::IsNotFound(ReadJobSummary("/nonexistent/job").status()));
}

}  // namespace
}  // namespace dlaunch
