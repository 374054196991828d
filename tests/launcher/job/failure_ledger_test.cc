// FailureLedger: failures recorded as events, the root cause announced once settled, a better
// one announced as such, and a fresh ledger per round.
#include "launcher/job/failure_ledger.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/testing/job_actions.h"

namespace dlaunch {
namespace {

using ::testing::HasSubstr;
using ::testing::IsEmpty;

Failure Crash(int rank, int signal, std::vector<std::string> tail = {}) {
  Failure f;
  f.cls = FailureClass::kWorkerCrash;
  f.global_rank = rank;
  f.node_id = rank;
  f.node_rank = rank;
  f.host = "n" + std::to_string(rank);
  f.signal = signal;
  f.exit_code = signal ? -1 : 1;
  f.log_tail = std::move(tail);
  return f;
}

const std::vector<std::string> kPeerDied = {"RuntimeError: Connection reset by peer"};

TEST(FailureLedgerTest, AFailureOfItsOwnIsAnnouncedAtOnce) {
  FailureLedger ledger;
  JobActions out;
  ledger.Record(Crash(1, 9), true, 5, 0, out);
  ledger.AnnounceNew(5, 0, out);
  EXPECT_THAT(Printed(out, true), HasSubstr("error: worker crash: rank 1"));
  EXPECT_THAT(Events(out), HasSubstr("failure_detected"));
  EXPECT_THAT(Events(out), HasSubstr("root_cause"));
  JobActions again;
  ledger.Announce(6, true, 0, again);
  EXPECT_THAT(All<PrintLine>(again), IsEmpty());  // the same root cause is printed once
}

TEST(FailureLedgerTest, APeersDeathWaitsForTheRankThatReallyDied) {
  FailureLedger ledger;
  JobActions out;
  ledger.Record(Crash(0, 0, kPeerDied), true, 5, 0, out);
  ledger.AnnounceNew(5, 0, out);
  EXPECT_THAT(All<PrintLine>(out), IsEmpty());
  ASSERT_TRUE(ledger.announce_at_s().has_value());
  EXPECT_GT(*ledger.announce_at_s(), 5);
  // The real cause arrives a moment later and is the one announced.
  ledger.Record(Crash(1, 11), false, 5.2, 0, out);
  ledger.AnnounceNew(5.2, 0, out);
  EXPECT_THAT(Printed(out, true), HasSubstr("rank 1"));
  EXPECT_EQ(ledger.Verdict().root.global_rank, 1);
}

TEST(FailureLedgerTest, ALaterBetterRootCauseIsPrintedAsSuch) {
  FailureLedger ledger;
  JobActions out;
  ledger.Record(Crash(0, 0, kPeerDied), true, 5, 0, out);
  ledger.Announce(6, false, 0, out);  // settled: the peer's death is all there is
  EXPECT_THAT(Printed(out, true), HasSubstr("error: worker crash: rank 0"));
  JobActions later;
  ledger.Record(Crash(2, 9), false, 7, 0, later);
  ledger.AnnounceNew(7, 0, later);
  EXPECT_THAT(Printed(later, true), HasSubstr("root cause: worker crash: rank 2"));
  EXPECT_THAT(Printed(later, true), HasSubstr("consequence"));
}

TEST(FailureLedgerTest, ANewRoundStartsClean) {
  FailureLedger ledger;
  JobActions out;
  ledger.Record(Crash(1, 9), true, 5, 0, out);
  ledger.AnnounceNew(5, 0, out);
  ledger.Clear();
  EXPECT_TRUE(ledger.empty());
  JobActions next;
  ledger.Record(Crash(1, 9), true, 9, 1, next);
  ledger.AnnounceNew(9, 1, next);
  // The same failure in the next round is announced again, as an error of its own.
  EXPECT_THAT(Printed(next, true), HasSubstr("error: worker crash: rank 1"));
  for (const auto& e : All<AppendEvent>(next)) EXPECT_EQ(e.event.round(), 1);
}

}  // namespace
}  // namespace dlaunch
