// Helpers for JobState tests: a job's config, the actions an event returned, by type, and what
// they print, journal and exit with. Header-only.
#pragma once

#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "launcher/jobdir/journal.h"
#include "launcher/run/job_state.h"

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
