// StallInquiry: which ranks stopped outside a collective, which wait in one, which gave no
// stacks, and the clauses that name them.
#include "launcher/job/stall_inquiry.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace dlaunch {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

v1::RankStacks Taken(int rank, const std::string& waits_in = "") {
  v1::RankStacks s;
  s.set_rank(rank);
  s.set_source("py-spy");
  if (!waits_in.empty()) {
    s.mutable_waiting_in()->set_function(waits_in);
    s.mutable_waiting_in()->set_file(
        "/venv/lib/python3.11/site-packages/torch/distributed/distributed_c10d.py");
    s.mutable_waiting_in()->set_line(2050);
  }
  return s;
}

v1::RankStacks NoneTaken(int rank) {
  v1::RankStacks s;
  s.set_rank(rank);
  s.set_why_none("py-spy: not found");
  return s;
}

v1::RankStacks WithRecorder(v1::RankStacks s, int64_t last_seq) {
  s.mutable_flight_record()->set_entries(static_cast<int32_t>(last_seq));
  s.mutable_flight_record()->set_last_seq(last_seq);
  s.mutable_flight_record()->set_last_collective("gloo:all_reduce");
  return s;
}

TEST(StallInquiryTest, SortsTheRanksByWhatTheirStacksShow) {
  StallInquiry q;
  q.Begin({3, 0, 2, 1}, 0, {{0, 9.5}, {3, 4}}, 10, 22);
  EXPECT_TRUE(q.open());
  EXPECT_FALSE(q.complete());
  EXPECT_THAT(q.Unknown(), ElementsAre(0, 1, 2, 3)) << "no answer yet";
  q.Note(Taken(0, "all_reduce"));
  q.Note(Taken(1, "all_reduce"));
  q.Note(Taken(3));
  EXPECT_FALSE(q.complete());
  q.Note(NoneTaken(2));
  EXPECT_TRUE(q.complete());
  EXPECT_THAT(q.Outside(), ElementsAre(3));
  EXPECT_THAT(q.Waiting(), ElementsAre(0, 1));
  EXPECT_THAT(q.Unknown(), ElementsAre(2));
  EXPECT_DOUBLE_EQ(q.SilentFor(0), 9.5);
  EXPECT_DOUBLE_EQ(q.SilentFor(2), 0) << "not running when it was found";
  EXPECT_DOUBLE_EQ(q.detected_at_s(), 10);
  EXPECT_DOUBLE_EQ(q.due_s(), 22);
}

TEST(StallInquiryTest, StacksOfRanksNotAskedForOrTwiceOrAfterItClosedChangeNothing) {
  StallInquiry q;
  q.Note(Taken(0));  // nothing asked yet
  EXPECT_FALSE(q.open());
  q.Begin({0, 1}, 0, {}, 0, 1);
  q.Note(Taken(7));
  q.Note(Taken(0));
  q.Note(Taken(0, "barrier"));  // the first answer stands
  EXPECT_THAT(q.Outside(), ElementsAre(0));
  EXPECT_FALSE(q.complete());
  q.Close();
  q.Note(Taken(1, "barrier"));
  EXPECT_THAT(q.Waiting(), IsEmpty());
  EXPECT_FALSE(q.complete()) << "a closed inquiry is never complete again";
}

TEST(StallInquiryTest, TheWaitingClauseNamesTheFrameMostWaitIn) {
  StallInquiry q;
  q.Begin({0, 1, 2, 3}, 0, {}, 0, 1);
  EXPECT_EQ(q.WaitingClause(), "");
  q.Note(Taken(0, "barrier"));
  EXPECT_EQ(q.WaitingClause(), "rank 0 waits in barrier (torch/distributed/distributed_c10d.py:2050)");
  q.Note(Taken(1, "all_reduce"));
  q.Note(Taken(2, "all_reduce"));
  EXPECT_EQ(q.WaitingClause(), "ranks 0, 1 and 2 wait in all_reduce "
                               "(torch/distributed/distributed_c10d.py:2050) and elsewhere");
}

// The recorders' sequence numbers tell the ranks apart where the frames cannot: the rank behind
// never entered the collective the others wait in.
TEST(StallInquiryTest, TheFlightRecordersNameTheRanksBehindTheirPeers) {
  StallInquiry q;
  q.Begin({0, 1, 2, 3}, 0, {}, 10, 22);
  q.Note(WithRecorder(Taken(0), 14));
  q.Note(WithRecorder(Taken(1), 14));
  q.Note(WithRecorder(NoneTaken(2), 13));
  q.Note(Taken(3));
  std::optional<StallInquiry::RecorderVerdict> v = q.Recorder();
  ASSERT_TRUE(v.has_value());
  EXPECT_EQ(v->seq, 14);
  EXPECT_EQ(v->collective, "gloo:all_reduce");
  EXPECT_THAT(v->ahead, ElementsAre(0, 1));
  EXPECT_THAT(v->behind, ElementsAre(2));
  EXPECT_THAT(v->unread, ElementsAre(3));
  EXPECT_EQ(RecorderLine(*v, q),
            "flight recorder: ranks 0 and 1 entered collective 14 (gloo:all_reduce); rank 2 at "
            "13: it never entered it (rank 3: not read)");
  // Those in it without a frame of their own are said by the recorder's collective.
  EXPECT_EQ(q.WaitingClause(v->ahead), "ranks 0 and 1 wait in collective 14 (gloo:all_reduce)");
  EXPECT_THAT(StacksLine(q.StacksOf(0)[0], true),
              ::testing::EndsWith("; flight recorder: newest collective 14 (gloo:all_reduce)"));
}

TEST(StallInquiryTest, RecordersThatAgreeOrOnlyOneTellNothing) {
  StallInquiry q;
  q.Begin({0, 1, 2}, 0, {}, 10, 22);
  q.Note(WithRecorder(Taken(0), 14));
  q.Note(WithRecorder(Taken(1), 14));
  q.Note(WithRecorder(Taken(2), 0));  // the recorder is off there
  EXPECT_FALSE(q.Recorder().has_value()) << "every rank read is in the same collective";
  StallInquiry one;
  one.Begin({0, 1}, 0, {}, 10, 22);
  one.Note(WithRecorder(Taken(0), 14));
  one.Note(Taken(1));
  EXPECT_FALSE(one.Recorder().has_value());
}

TEST(StallInquiryTest, RankListsAreCutPastTheirMost) {
  EXPECT_EQ(RankList({4}), "rank 4");
  EXPECT_EQ(RankList({1, 2}), "ranks 1 and 2");
  EXPECT_EQ(RankList({0, 1, 2, 3, 4}, 3), "ranks 0, 1, 2, ... (5 in all)");
}

TEST(StallInquiryTest, WaitFramesAreNamedByTheirPackagesPath) {
  v1::StackFrame native;
  native.set_function("c10d::Work::wait");
  native.set_file("/lib/x86_64-linux-gnu/libtorch_cpu.so.1.13");
  EXPECT_EQ(DescribeWaitFrame(native), "c10d::Work::wait (/lib/x86_64-linux-gnu/libtorch_cpu.so.1.13)");
  v1::StackFrame py = Taken(0, "all_reduce").waiting_in();
  EXPECT_EQ(DescribeWaitFrame(py), "all_reduce (torch/distributed/distributed_c10d.py:2050)");
  v1::StackFrame bare;
  bare.set_function("main");
  EXPECT_EQ(DescribeWaitFrame(bare), "main");
}

}  // namespace
}  // namespace dlaunch

namespace dlaunch {
namespace {

TEST(StallInquiryTest, AtThousandsOfRanksOnlyTheFirstFewWaitingOnesAreSaid) {
  StallInquiry q;
  std::vector<int> ranks;
  for (int r = 0; r < 1000; ++r) ranks.push_back(r);
  q.Begin(ranks, 0, {}, 0, 1);
  int said_waiting = 0, said_outside = 0;
  for (int r = 0; r < 1000; ++r) {
    const bool waits = r % 100 != 7;  // ranks 7, 107, ... stopped outside
    if (q.Note(Taken(r, waits ? "all_reduce" : ""))) ++(waits ? said_waiting : said_outside);
  }
  EXPECT_EQ(said_waiting, StallInquiry::kSayWaiting);
  EXPECT_EQ(said_outside, 10) << "every one outside, up to kSayOthers";
  EXPECT_FALSE(q.Note(Taken(7))) << "an answer again is not said again";
  EXPECT_EQ(q.Outside().size(), 10u);
  EXPECT_EQ(q.WaitingClause(), "ranks 0, 1, 2, 3, 4, 5, 6, 8, ... (990 in all) wait in all_reduce "
                               "(torch/distributed/distributed_c10d.py:2050)");
}

}  // namespace
}  // namespace dlaunch
