// JobDirectory: the layout of one job's directory (runs/<job-id>/) as `dlaunch run` writes it,
// and its writers in one place: token (0600), job.yaml, hostfile, launcher.json, summary.json,
// and the append-only events.jsonl and metrics.jsonl. Every write reports its error.
#pragma once

#include <fstream>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "dlaunch/journal.pb.h"
#include "launcher/jobdir/job_record.h"

namespace dlaunch {

class JobDirectory {
 public:
  // Creates `path` and its logs/ folder; the directory is then named by its absolute path.
  static absl::StatusOr<JobDirectory> Create(const std::string& path);

  const std::string& path() const { return path_; }
  std::string logs_dir() const { return path_ + "/logs"; }
  std::string token_path() const { return path_ + "/token"; }
  std::string hostfile_path() const { return path_ + "/hostfile"; }

  // The job's secret, readable by its owner only.
  absl::Status WriteToken(const std::string& token) const;
  // The resolved spec, unless `dlaunch submit` already put one there.
  absl::Status WriteJobYamlIfAbsent(const std::string& yaml) const;
  // One host per line, for node launchers that take a hostfile (mpiexec).
  absl::Status WriteHostfile(const std::vector<std::string>& hosts) const;
  // Where `dlaunch cancel` finds the running launcher.
  absl::Status WriteLauncherInfo(const LauncherInfo& info) const;
  // The job's result; `dlaunch logs --follow` stops when it appears.
  absl::Status WriteSummary(const std::string& json) const;

 private:
  explicit JobDirectory(std::string path) : path_(std::move(path)) {}
  std::string path_;
};

// events.jsonl and metrics.jsonl, opened for appending; each line is flushed as written, so
// `dlaunch status` and `logs --follow` see it at once.
class JobJournal {
 public:
  absl::Status Open(const JobDirectory& dir);
  // One line each, as journal.h writes them.
  absl::Status AppendEvent(const v1::JobEvent& event);
  absl::Status AppendMetric(const v1::MetricLine& metric);

 private:
  std::string events_path_, metrics_path_;
  std::ofstream events_, metrics_;
};

}  // namespace dlaunch
