// SubmittedJobDirectory: what `dlaunch submit` leaves in runs/<job-id>/ for the batch script and
// for `dlaunch status`, made owner-only as `dlaunch run`'s job directory is (docs/security.md):
// the directory and logs/ 0700, job.yaml and submit.json 0600, job.sh 0700.
#pragma once

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace dlaunch {

class SubmittedJobDirectory {
 public:
  // Makes `path` (mode 0700 from the start, whatever the umask) and its logs/; its parent, the
  // job root, is made as needed. A `path` that already exists is refused (AlreadyExists), so
  // two submits never share a directory and a planted link or directory is never written into.
  static absl::StatusOr<SubmittedJobDirectory> Create(const std::string& path);

  const std::string& path() const { return path_; }
  std::string spec_path() const { return path_ + "/job.yaml"; }
  std::string script_path() const { return path_ + "/job.sh"; }

  // The resolved job.yaml (0600) and the batch script (0700: the owner runs it).
  absl::Status WriteJob(const std::string& resolved_yaml, const std::string& script) const;
  // submit.json (0600).
  absl::Status WriteSubmitRecord(const std::string& json) const;

 private:
  explicit SubmittedJobDirectory(std::string path) : path_(std::move(path)) {}
  std::string path_;
};

}  // namespace dlaunch
