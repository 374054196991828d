// FailureLedger: every failure of the current round, the root cause among them and when it is
// announced, and the text the job's end reports. A failure that reads like a reaction to a
// peer's death is held back a moment (the rank that really died may be reported just after);
// a failure of its own is announced at once, and a later, better root cause is printed as
// such with the earlier one named a consequence. Pure: time comes in as seconds.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "launcher/job/failure.h"
#include "launcher/job/job_actions.h"
#include "launcher/job/root_cause.h"

namespace dlaunch {

class FailureLedger {
 public:
  // Adds a failure (a FailureDetected event). `first_of_job`: it is the first that stops the
  // job or its round, so a peer-like one holds the announcement back.
  void Record(Failure failure, bool first_of_job, double now_s, int round, JobActions& out);
  // Prints the root cause once settled (or at once with `force`), and again when a better one
  // arrives; each announcement is a RootCause event.
  void Announce(double now_s, bool force, int round, JobActions& out);
  // Announce right after Record: at once unless the root cause so far reads like a peer's.
  void AnnounceNew(double now_s, int round, JobActions& out);
  // Rank `rank`'s stacks named where it is stuck: its stall or hang at exit says so from now on
  // (the final report, summary.json). The line already printed stays as it was.
  void NoteStuckAt(int rank, const StuckAt& at);
  // Holds the root cause back until `until_s` (or Release): a stall's suspect is named only
  // once every rank's stacks show which rank stopped (stall_inquiry.h).
  void HoldFor(double until_s);
  // Ends a hold and announces the root cause now.
  void Release(double now_s, int round, JobActions& out);
  // Rank `rank`'s stall is a wait on its peers: it comes after a failure of its own.
  void MarkWaitsOnPeers(int rank);
  // A new round: its failures are its own.
  void Clear();

  bool empty() const { return failures_.empty(); }
  const Failure& last() const { return failures_.back(); }
  const std::vector<Failure>& all() const { return failures_; }
  RootCauseVerdict Verdict() const { return PickRootCause(failures_); }
  std::optional<double> announce_at_s() const { return announce_at_s_; }

  // What stopped the job, as its end reports it when no failure of a rank or node explains it
  // (a signal, a rendezvous that never closed, a restart given up).
  void SetJobFailure(std::string text, std::vector<std::string> detail);
  const std::string& job_failure() const { return job_failure_; }
  const std::vector<std::string>& job_failure_detail() const { return job_failure_detail_; }

  // Reads like the reaction to a peer's death rather than a fault of its own.
  static bool PeerLike(const Failure& f);

 private:
  std::vector<Failure> failures_;        // every failure of the round, in order
  std::optional<double> announce_at_s_;  // a root cause held back until then
  bool held_ = false;                    // HoldFor: nothing is announced before its time
  std::string announced_;                // the root cause as last printed
  std::string job_failure_;
  std::vector<std::string> job_failure_detail_;
};

}  // namespace dlaunch
