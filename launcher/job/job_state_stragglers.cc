// JobState's stragglers: every interval the StragglerScore of the round's reports names or
// clears nodes; each change is journaled (straggler_detected / straggler_cleared) and said, and
// under stragglers.policy: exclude a node named is marked to be left out at the next restart,
// through the same exclusion as a node that failed too often. The round goes on: a slow node
// is not a failure. See docs/stragglers.md.
#include "launcher/job/job_events.h"
#include "launcher/job/job_state.h"

namespace dlaunch {

void JobState::JournalStraggler(const StragglerChange& change, JobActions& out) {
  RecordEvent(StragglerEvent(current_round(), nodes_.PlaceOf(change.node), change,
                             config_.stragglers, config_.exclude_stragglers ? "exclude" : "report"),
              out);
}

void JobState::ScoreStragglers(double now_s, JobActions& out) {
  if (outcome_ != Outcome::kRunning || Restarting() || !stragglers_.Due(now_s)) return;
  for (const StragglerChange& change : stragglers_.Evaluate(now_s)) {
    JournalStraggler(change, out);
    if (change.detected && config_.exclude_stragglers) rounds_.ExcludeAtNextRestart(change.node);
  }
}

void JobState::ClearStragglers(double now_s, JobActions& out) {
  for (const StragglerChange& change : stragglers_.EndRound(now_s)) JournalStraggler(change, out);
}

}  // namespace dlaunch
