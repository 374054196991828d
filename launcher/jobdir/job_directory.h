// JobDirectory: the layout of one job's directory (runs/<job-id>/) as `dlaunch run` writes it,
// and its writers in one place: token and control.crt (0600), job.yaml, hostfile, launcher.json, summary.json,
// and the append-only events.jsonl and metrics.jsonl. Every write reports its error.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <fstream>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "dlaunch/journal.pb.h"
#include "launcher/jobdir/job_record.h"
#include "proto/control_tls.h"

namespace dlaunch {

// The `kind` file of a job directory that `dlaunch doctor` wrote.
inline constexpr char kJobKindFile[] = "kind";
inline constexpr char kDoctorKind[] = "doctor";

class JobDirectory {
 public:
  // Creates `path` and its logs/ folder; the directory is then named by its absolute path. It
  // is recorded in the user's job index (job_index.h) under its name, so its id works from any
  // directory; that record is a convenience: a home that cannot take it fails nothing, and the
  // job is still found by its path or under the job root.
  static absl::StatusOr<JobDirectory> Create(const std::string& path);

  const std::string& path() const { return path_; }
  std::string logs_dir() const { return path_ + "/logs"; }
  std::string token_path() const { return path_ + "/token"; }
  std::string hostfile_path() const { return path_ + "/hostfile"; }

  // The job's secret, readable by its owner only. With `tls`, the launcher's certificate is
  // written beside it first (control.crt), and its fingerprint follows the token
  // (proto/control_tls.h); the key itself is never written.
  absl::Status WriteCredentials(const std::string& token, const ControlIdentity* tls) const;
  // The resolved spec, unless `dlaunch submit` already put one there.
  absl::Status WriteJobYamlIfAbsent(const std::string& yaml) const;
  // One host per line, for node launchers that take a hostfile (mpiexec).
  absl::Status WriteHostfile(const std::vector<std::string>& hosts) const;
  // Where `dlaunch cancel` finds the running launcher.
  absl::Status WriteLauncherInfo(const LauncherInfo& info) const;
  // The job's result (summary.json, as journal.h writes it); `dlaunch logs --follow` stops when
  // it appears.
  absl::Status WriteSummary(const v1::JobSummary& summary) const;
  // What started the job when it is not a training run (kDoctorKind): `dlaunch status` leaves
  // such jobs out of its list.
  absl::Status WriteKind(const std::string& kind) const;

 private:
  explicit JobDirectory(std::string path) : path_(std::move(path)) {}
  std::string path_;
};

// events.jsonl and metrics.jsonl, opened for appending. An event line is written and flushed
// at once, so `dlaunch status` and `logs --follow` see it. Metric lines (one per rank report,
// tens of thousands a second at 10,000 nodes) are turned into JSON and written by a writer
// thread in batches, each batch flushed, so the launcher's loop never waits for them; past
// kMaxPendingMetrics waiting lines the newest are dropped and counted.
class JobJournal {
 public:
  static constexpr size_t kMaxPendingMetrics = 200000;

  JobJournal() = default;
  ~JobJournal();
  JobJournal(const JobJournal&) = delete;
  JobJournal& operator=(const JobJournal&) = delete;

  absl::Status Open(const JobDirectory& dir);
  // One line each, as journal.h writes them.
  absl::Status AppendEvent(const v1::JobEvent& event);
  // Queued for the writer; the status of the latest write that failed, if any.
  absl::Status AppendMetric(v1::MetricLine metric);
  // Returns once every queued metric line is written.
  void FlushMetrics();
  // Metric lines dropped because the writer fell behind.
  int64_t dropped_metrics() const;

 private:
  void WriteMetrics();

  std::string events_path_, metrics_path_;
  std::ofstream events_, metrics_;
  mutable std::mutex mu_;
  std::condition_variable wake_, drained_;
  std::vector<v1::MetricLine> pending_;  // guarded by mu_
  bool writing_ = false;                 // a batch is being written
  bool closing_ = false;
  int64_t dropped_ = 0;
  absl::Status write_error_;
  std::thread writer_;
};

}  // namespace dlaunch
