#include "worker/restart_resume.h"

#include "absl/strings/str_cat.h"

namespace dlaunch::worker {

ResumePlan PlanResume(const WorkerOptions& options, int restart_count) {
  if (options.resume) return {true, ""};  // asked for: the resume itself says what it found
  if (restart_count <= 0) return {false, ""};
  if (options.checkpoint_dir.empty()) {
    return {false, absl::StrCat("restart ", restart_count,
                                " without --checkpoint-dir: training starts again from step 0")};
  }
  return {true, absl::StrCat("restart ", restart_count,
                             ": resuming from the newest complete checkpoint in ",
                             options.checkpoint_dir)};
}

}  // namespace dlaunch::worker
