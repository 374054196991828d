// The events JobState writes to events.jsonl, as typed journal records (proto/journal.proto)
// built from its own figures. Every event carries the round it belongs to, and names nodes by
// node id and, where it has one in that round, node rank. Pure.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "dlaunch/control.pb.h"
#include "dlaunch/journal.pb.h"
#include "launcher/job/failure.h"
#include "launcher/job/progress_monitor.h"
#include "rendezvous/rendezvous_state.h"

namespace dlaunch {

// Where a node is: its id for the whole job, its rank in the round (-1: none) and its host.
struct NodePlace {
  int node_id = -1;
  int node_rank = -1;
  std::string host;
};

v1::FailureRecord FailureRecordOf(const Failure& failure);
// A metrics.jsonl record: `report` from node `node_id` in `round`, received at `time`.
// A host line of metrics.jsonl: the node's health as its heartbeat carried it.
v1::MetricLine HostLineOf(const std::string& time, int node_id, int round,
                          const v1::HostSample& host, const std::vector<v1::GpuSample>& gpus);
v1::MetricLine MetricLineOf(const std::string& time, int node_id, int round,
                            const v1::WorkerReport& report);

v1::JobEvent JournalOpenedEvent(const std::string& job_id);
v1::JobEvent JobStartedEvent(const std::string& job_id, const std::vector<std::string>& hosts,
                             const std::string& node_launcher, const std::string& job_dir);
// The `joined`-th of the `expected` agents joined.
v1::JobEvent NodeJoinedEvent(const Participant& p, int joined, int expected);
v1::JobEvent SpareJoinedEvent(int round, int node_id, const Participant& p);
v1::JobEvent NodeUnfitEvent(const Participant& p);
// `node_ids[i]` has node rank i; the round closed `elapsed_s` after the job started.
v1::JobEvent RendezvousClosedEvent(const RoundResult& result, const std::vector<int>& node_ids,
                                   double elapsed_s);
v1::JobEvent RoundStartedEvent(const RoundResult& result, const std::vector<int>& node_ids);
// A worker's start or end (the spans of the timeline); nothing for other states.
std::optional<v1::JobEvent> WorkerLifecycleEvent(int round, const NodePlace& node,
                                                 const v1::WorkerEvent& ev);
v1::JobEvent WorkersStartedEvent(int round, int nodes, int workers, double elapsed_s,
                                 double restart_s);
v1::JobEvent WorkerFailedEvent(int round, const NodePlace& node, const v1::WorkerEvent& ev);
v1::JobEvent StacksRecordedEvent(int round, const NodePlace& node, const v1::RankStacks& stacks);
v1::JobEvent RelayLostEvent(int round, const std::string& relay, const std::vector<int>& nodes);
// `relay`: the lost relay it came back from ("" when none was seen); `relay_back`: it was the
// last of that relay's nodes.
v1::JobEvent SessionResumedEvent(int round, const NodePlace& node, double after_s,
                                 const std::string& relay = "", bool relay_back = false);
v1::JobEvent NodeLostEvent(int round, const NodePlace& node, const std::string& reason);
v1::JobEvent FailureDetectedEvent(int round, const Failure& failure);
// `revises`: it replaces a root cause announced before.
v1::JobEvent RootCauseEvent(int round, const Failure& root, int consequences, bool revises);
// `f` is the hang's failure (its rank, node and host); `hung`: every hung rank.
v1::JobEvent HangDetectedEvent(int round, const Failure& f, const Hang& h, double now_s,
                               const std::vector<int>& hung);
v1::JobEvent StopRequestedEvent(int round, const std::string& reason);
v1::JobEvent JobFinishedEvent(int round, const std::string& result, int exit_code,
                              double wall_time_s);
// `refused`: calls refused so far, this one included.
v1::JobEvent CallRefusedEvent(int round, const std::string& peer, const std::string& method,
                              int64_t refused);
v1::JobEvent RoundStoppingEvent(int round, double detected_at_s);
// `event`: node_excluded, node_dropped or spare_lost.
v1::JobEvent NodeDismissedEvent(int round, const std::string& event, int node_id,
                                const std::string& host, const std::string& reason);
v1::JobEvent ExclusionSkippedEvent(int round, int node_id, const std::string& reason);
v1::JobEvent RestartDecisionEvent(int round, const std::string& decision,
                                  const std::string& reason, int restarts_used,
                                  const Failure& root);
v1::JobEvent SparePromotedEvent(int round, int node_id, const std::string& host);
// Round `round` will start on `node_ids`, for `reason`: its workers after `starts_in_s` (the
// back-off, or longer when the lost nodes' workers must be surely stopped first).
struct RestartPlanned {
  int restarts_used = 0;
  int max_restarts = 0;
  double backoff_s = 0;
  std::vector<int> node_ids;
  std::string reason;
  double starts_in_s = 0;
  bool waits_for_lost_workers = false;
};
v1::JobEvent RestartEvent(int round, const RestartPlanned& restart);

}  // namespace dlaunch
