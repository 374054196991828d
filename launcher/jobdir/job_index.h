// JobIndex: the user's own record of where each job directory is (job id -> absolute path), so
// that `dlaunch status`, `logs`, `watch` and `trace` find a job from any directory. One small
// file per job, written atomically, so two jobs starting at once never touch the same file; the
// folder is its user's alone (0700, files 0600).
#pragma once

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace dlaunch {

class JobIndex {
 public:
  // $XDG_STATE_HOME/dlaunch/jobs, else $HOME/.local/state/dlaunch/jobs; "" without either.
  static std::string DefaultRoot();

  explicit JobIndex(std::string root) : root_(std::move(root)) {}
  const std::string& root() const { return root_; }

  // Records `job_dir` (made absolute) for `job_id`, replacing an older entry of that id.
  // InvalidArgument for an id that is not a plain file name; FailedPrecondition without a root.
  absl::Status Record(const std::string& job_id, const std::string& job_dir) const;
  // The directory recorded for `job_id`, while it still exists; NotFound otherwise (a stale
  // entry, whose directory is gone, is skipped).
  absl::StatusOr<std::string> Find(const std::string& job_id) const;
  // Every recorded directory that still exists, in no particular order.
  std::vector<std::string> List() const;

 private:
  std::string root_;
};

}  // namespace dlaunch
