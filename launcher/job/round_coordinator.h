// RoundCoordinator: a job's restart rounds. A failed round is stopped with its agents kept; the
// coordinator waits for every member's RoundEnded (or the stop's deadline), asks RestartPolicy
// whether and when to restart, plans the next round from the survivors and the spares, holds it
// until the back-off has passed and every lost node's workers are surely stopped (no two rounds
// at once), and builds it with the one round assignment rendezvous uses (AssignRound). Pure:
// it reads the NodeTable and returns plans; JobState turns them into actions. See
// docs/restarts.md.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "launcher/job/failure.h"
#include "launcher/job/node_table.h"
#include "launcher/job/restart_policy.h"
#include "rendezvous/rendezvous_state.h"

namespace dlaunch {

// What to do after a stopped round, decided in one step.
struct RestartPlan {
  RestartDecision decision;
  std::vector<int> excluded;        // failed too often: dismissed before the next round
  std::vector<int> exclusion_kept;  // would be excluded, but fewer than nodes.min would remain
  std::vector<int> next;            // the next round's members, in node-rank order
  std::vector<int> promoted;        // the spares among them
  std::string give_up;              // not empty: no next round, and why
};

class RoundCoordinator {
 public:
  // `target_nodes`: the first round's size, which spares fill up to; `min_nodes`: nodes.min.
  RoundCoordinator(RestartSettings settings, int target_nodes, int min_nodes);

  // A failed round stops at `now_s`; its members have `wait_s` to end it.
  void BeginStop(double now_s, double wait_s);
  // A member ended the stopping round at `now_s`: while members keep ending it, the others are
  // waited for `slack_s` past the last one, up to 30 s past the first deadline. A stop reaches
  // thousands of agents over seconds, and their ends arrive as long again, longer than the
  // grace on a loaded launcher.
  void NoteMemberEnded(double now_s, double slack_s);
  // The job ends: no round stop or restart is pending any more.
  void Cancel();
  bool restarting() const { return stop_deadline_s_.has_value() || restart_at_s_.has_value(); }
  bool stopping() const { return stop_deadline_s_.has_value(); }
  std::optional<double> stop_deadline_s() const { return stop_deadline_s_; }
  // When the failure that began the current restart was detected.
  std::optional<double> detected_at_s() const { return detected_at_s_; }

  // Every worker of the round started then (a round that runs long enough resets the back-off).
  void NoteRoundRunning(double now_s) { running_since_s_ = now_s; }
  // A rank reported a complete checkpoint at `step`.
  void NoteCheckpoint(long step) { checkpoint_step_ = std::max(checkpoint_step_, step); }

  // The stop is over: every member of `round` ended it or left, or the deadline passed. Clears
  // the stop when it returns true.
  bool TakeStopOver(const NodeTable& nodes, int round, double now_s);
  // Members of `round` that did not end it, each with why they leave the job.
  static std::vector<std::pair<int, std::string>> MembersThatDidNotEnd(const NodeTable& nodes,
                                                                       int round);
  // Moves workers_gone_by_s() to cover the members of `round` that did not end it: whether they
  // hear the launcher or not, their agents stop their workers `cut_off_s` after the last message
  // the launcher heard (LivenessPolicy::workers_gone_after); one whose session ended is gone a
  // grace after that, if sooner.
  void NoteWorkersMayRun(const NodeTable& nodes, int round, double closed_at_s, double cut_off_s,
                         double grace_s);
  double workers_gone_by_s() const { return workers_gone_by_s_; }

  // Decides after the stop: restart or not, who is excluded, and the next round's members.
  // Call it once the members that did not end are gone from `nodes`.
  RestartPlan Decide(const NodeTable& nodes, const Failure& root, int round, double now_s);
  // Holds `next` until the back-off and workers_gone_by_s() have passed; returns when its
  // workers may start.
  double Schedule(std::vector<int> next, double restart_at_s);
  // How long before its workers may start a round is sent: the agents hold the start until
  // then (StartRound.start_after_ms), and the fan-out to every agent overlaps the wait.
  static constexpr double kStartLeadS = 1.0;
  // When the scheduled round is to be sent (kStartLeadS before its start); nullopt: none.
  std::optional<double> send_at_s() const;
  // The next round once it is due to be sent: its members (dropping those gone meanwhile) and
  // when their workers may start, or why there is none (fewer than nodes.min left); nullopt
  // while it is not due.
  struct DueRound {
    std::vector<int> ids;
    std::string give_up;
    double workers_start_at_s = 0;
  };
  std::optional<DueRound> TakeDue(const NodeTable& nodes, double now_s);
  // Round `round` of `ids`: each node's slots and freshest port; MASTER_PORT is node 0's fresh
  // port (a fixed rendezvous.master_port serves round 0 only: the failure restarted from may be
  // that very port).
  static RoundResult BuildRound(const NodeTable& nodes, const std::vector<int>& ids, int round);

  int restarts_used() const { return policy_.restarts_used(); }
  const std::string& gave_up() const { return gave_up_; }
  void NoteGaveUp(std::string reason) { gave_up_ = std::move(reason); }

 private:
  RestartPolicy policy_;
  const RestartSettings settings_;
  const int target_nodes_;
  const int min_nodes_;
  std::optional<double> stop_deadline_s_;  // members not ended by then are lost
  double stop_latest_s_ = 0;               // how far members ending the round may move it
  size_t stop_cursor_ = 0;                 // members before it were seen ending the round
  std::optional<double> restart_at_s_;     // back-off: the next round starts then
  std::vector<int> next_;                  // decided, waiting for the back-off
  double workers_gone_by_s_ = 0;
  std::optional<double> detected_at_s_;
  std::optional<double> running_since_s_;
  long checkpoint_step_ = -1;              // newest complete checkpoint any rank reported
  std::string gave_up_;                    // why the job was not restarted
};

}  // namespace dlaunch
