// JobRecord: the job directory (runs/<job-id>/) as `dlaunch submit` writes it and `dlaunch
// status / logs / cancel` read it back: job ids, submit.json and launcher.json (events.jsonl,
// metrics.jsonl and summary.json: journal.h). The parsing is pure; the few file helpers are
// named as such.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <google/protobuf/struct.pb.h>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace dlaunch {

// What `dlaunch submit` knows about a job (submit.json).
struct SubmitRecord {
  std::string job_id;            // dlaunch's id, the job directory's name
  std::string scheduler;         // pbs, cobalt, slurm, local
  std::string scheduler_job_id;  // qsub / sbatch output; the pid for local; "" when dry run
  std::string submit_time;       // RFC 3339, UTC
  std::string site;              // profile name
  std::string cwd;               // where `dlaunch submit` ran
  std::string spec_source;       // the job.yaml it was given
  bool dry_run = false;
};

// launcher.json, written by a running `dlaunch run` so `dlaunch cancel` can reach it.
struct LauncherInfo {
  int pid = 0;
  std::string host;
  std::string address;  // control server host:port
};

// "<name>-YYYYMMDD-HHMMSS-<4 hex>" in UTC; characters of `name` outside [A-Za-z0-9_-] become
// '-', and it is cut to 40 characters, so the id is always a safe file and directive name.
std::string MakeJobId(const std::string& name, absl::Time now, uint32_t random);

std::string SubmitRecordToJson(const SubmitRecord& record);
absl::StatusOr<SubmitRecord> ParseSubmitRecord(const std::string& json);

// A JSON object's top-level fields rendered as text (a nested value of an event, for `status`).
absl::StatusOr<std::map<std::string, std::string>> ParseJsonObjectFields(const std::string& json);
// A JSON value as that text: strings unquoted, integral numbers without a fraction, the rest
// as JSON.
std::string JsonValueText(const google::protobuf::Value& value);

absl::StatusOr<LauncherInfo> ParseLauncherInfo(const std::string& json);

// $DLAUNCH_JOB_ROOT, else "runs".
std::string DefaultJobRoot();

// JOB on the command line: a path to an existing job directory (it holds submit.json or
// job.yaml), else a job id: under `job_root`, in the current directory, then in the user's job
// index (job_index.h), whose entries for directories since removed are skipped. NotFound says
// where it looked; PermissionDenied, that the job is there but this user may not read it.
absl::StatusOr<std::string> ResolveJobDir(const std::string& job, const std::string& job_root);

// Job directories under `job_root`, newest first (by submit.json time, else directory mtime).
std::vector<std::string> ListJobDirs(const std::string& job_root);


}  // namespace dlaunch
