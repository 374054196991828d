// Helpers for JobState tests: a job's config, the actions an event returned, by type, and what
// they print, journal and exit with. Header-only.
#pragma once

#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "launcher/jobdir/journal.h"
#include "launcher/job/job_state.h"

namespace dlaunch {
inline namespace job_actions {

template <typename T>
std::vector<T> All(const JobActions& actions) {
  std::vector<T> out;
  for (const auto& a : actions) {
    if (const T* t = std::get_if<T>(&a)) out.push_back(*t);
  }
  return out;
}

template <typename T>
bool Has(const JobActions& actions) {
  return !All<T>(actions).empty();
}

// Every printed line, one per line, from both streams.
inline std::string Printed(const JobActions& actions) {
  std::string text;
  for (const auto& p : All<PrintLine>(actions)) text += p.text + "\n";
  return text;
}

// The printed lines of one stream.
inline std::string Printed(const JobActions& actions, bool to_stderr) {
  std::string text;
  for (const auto& p : All<PrintLine>(actions)) {
    if (p.to_stderr == to_stderr) text += p.text + "\n";
  }
  return text;
}

// The events.jsonl records, one per line, as the journal writes them (without the time).
inline std::string Events(const JobActions& actions) {
  std::string text;
  for (const auto& e : All<AppendEvent>(actions)) text += EventJournalLine(e.event).value() + "\n";
  return text;
}

// The exit code of the last FinishJob, if any.
inline std::optional<int> ExitCode(const JobActions& actions) {
  auto f = All<FinishJob>(actions);
  if (f.empty()) return std::nullopt;
  return f.back().exit_code;
}

// Node i as it joins: host n<i>, address 10.0.0.<i>, `slots` slots, worker port 29500 + i.
inline Participant TestNode(int i, int slots = 1) {
  Participant p;
  p.agent_id = "a" + std::to_string(i);
  p.host = "n" + std::to_string(i);
  p.addr = "10.0.0." + std::to_string(i);
  p.slots = slots;
  p.worker_port = 29500 + i;
  return p;
}

// A round of node 0 alone (TestNode(0)) with `slots` ranks.
inline RoundResult OneNodeRound(int slots) {
  RoundResult r;
  r.nodes.push_back(TestNode(0, slots));
  r.assignments.push_back({0, 0, slots});
  r.world_size = slots;
  return r;
}

// A worker event of `round` from an agent.
inline v1::AgentMessage WorkerMessage(int round, int rank, v1::WorkerEvent::State state,
                                      int exit_code = 0, int sig = 0) {
  v1::AgentMessage m;
  m.set_round(round);
  m.mutable_worker()->set_rank(rank);
  m.mutable_worker()->set_state(state);
  m.mutable_worker()->set_exit_code(exit_code);
  m.mutable_worker()->set_signal(sig);
  return m;
}

// An agent ended `round`; `port` is its fresh free port for the next.
inline v1::AgentMessage RoundEndedMessage(int round, int port) {
  v1::AgentMessage m;
  m.set_round(round);
  m.mutable_round_ended()->set_round(round);
  m.mutable_round_ended()->set_worker_port(port);
  return m;
}

inline void Append(JobActions& to, const JobActions& more) {
  to.insert(to.end(), more.begin(), more.end());
}

// A job of `nodes` local nodes n0..n<nodes-1>: heartbeat 1 s x 3, stop grace 2 s, a summary
// line every 5 s.
inline JobConfig TestJobConfig(int nodes) {
  JobConfig c;
  c.job_id = "job-1";
  c.job_dir = "/runs/job-1";
  for (int i = 0; i < nodes; ++i) c.hosts.push_back("n" + std::to_string(i));
  c.node_launcher = "local";
  c.heartbeat_s = 1;
  c.heartbeat_misses = 3;
  c.stop_grace_s = 2;
  c.summary_interval_s = 5;
  return c;
}

}  // namespace job_actions
}  // namespace dlaunch
