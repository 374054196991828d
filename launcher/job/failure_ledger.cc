#include "launcher/job/failure_ledger.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "launcher/job/job_events.h"
#include "launcher/job/job_view.h"

namespace dlaunch {
namespace {

// When the first failure reads like a reaction to a peer's death ("connection reset by peer"),
// the job is stopped at once but the root cause is printed only after this long, or as soon as
// a failure of its own arrives: the rank that really died may be reported a moment later.
constexpr double kPeerSettleS = 0.5;

}  // namespace

bool FailureLedger::PeerLike(const Failure& f) {
  return f.cls == FailureClass::kWorkerCrash && (f.signal == 0 || f.signal == 15) &&
         LooksLikePeerFailure(f.log_tail);
}

void FailureLedger::Record(Failure failure, bool first_of_job, double now_s, int round,
                           JobActions& out) {
  RecordEvent(FailureDetectedEvent(round, failure), out);
  failures_.push_back(std::move(failure));
  if (first_of_job && PeerLike(failures_.back())) announce_at_s_ = now_s + kPeerSettleS;
}

void FailureLedger::AnnounceNew(double now_s, int round, JobActions& out) {
  Announce(now_s, !held_ && !PeerLike(Verdict().root), round, out);
}

void FailureLedger::HoldFor(double until_s) {
  held_ = true;
  announce_at_s_ = until_s;
}

void FailureLedger::Release(double now_s, int round, JobActions& out) {
  held_ = false;
  Announce(now_s, true, round, out);
}

void FailureLedger::MarkWaitsOnPeers(int rank) {
  for (Failure& f : failures_) {
    if (f.global_rank == rank && f.cls == FailureClass::kStall) f.waits_on_peers = true;
  }
}

void FailureLedger::Announce(double now_s, bool force, int round, JobActions& out) {
  if (failures_.empty()) return;
  if (!force && announce_at_s_ && now_s < *announce_at_s_) return;
  announce_at_s_.reset();
  held_ = false;
  const RootCauseVerdict verdict = Verdict();
  const std::string text = DescribeFailure(verdict.root);
  if (text == announced_) return;
  // Said as the error the first time, then as the cause of what was said before it.
  RecordEvent(RootCauseEvent(round, verdict.root, static_cast<int>(verdict.consequences.size()),
                             !announced_.empty()),
              out);
  announced_ = text;
}

void FailureLedger::NoteStuckAt(int rank, const StuckAt& at) {
  for (Failure& f : failures_) {
    if (f.global_rank != rank || (f.cls != FailureClass::kStall && f.cls != FailureClass::kExitHang)) {
      continue;
    }
    // The same cause said better is not a new root cause to announce.
    const bool announced = DescribeFailure(f) == announced_;
    f.stuck_at = at;
    if (announced) announced_ = DescribeFailure(f);
  }
}

void FailureLedger::Clear() {
  failures_.clear();
  announced_.clear();
  held_ = false;
  announce_at_s_.reset();
}

void FailureLedger::SetJobFailure(std::string text, std::vector<std::string> detail) {
  job_failure_ = std::move(text);
  job_failure_detail_ = std::move(detail);
}

}  // namespace dlaunch
