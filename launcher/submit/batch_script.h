// RenderBatchScript: the pure half of `dlaunch submit` (spec + site profile -> batch script text),
// so `dlaunch script` and tests show exactly what would be submitted without any scheduler.
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "launcher/spec/job_spec.h"
#include "launcher/spec/spec_scalars.h"
#include "launcher/submit/site_profile.h"

namespace dlaunch {

// Where the job lives; all paths absolute (the script runs on another node, from another cwd).
struct RenderContext {
  std::string job_id;              // e.g. "fmnist-20261121-101530-a3f9"
  std::string job_dir;             // runs/<job-id>, absolute
  std::string dlaunch_binary;      // the dlaunch executable the compute node runs
  std::string resolved_spec_path;  // <job_dir>/job.yaml
  std::string submit_cwd;          // the script cds here before anything else
};

// The job's scheduler settings with the profile's defaults filled in and every value checked.
struct ResolvedSchedulerSettings {
  std::string queue;
  std::string account;
  int walltime_s = 0;
  std::vector<std::string> filesystems;
};

// Fills scheduler defaults from the profile (queue, account, walltime, filesystems) and checks
// that each value can appear in a directive. Pure.
absl::StatusOr<ResolvedSchedulerSettings> ResolveSchedulerSettings(const JobSpec& spec,
                                                                   const SiteProfile& profile);

// GPUs per node the batch job asks the scheduler for (the `gpus_per_node` value of directive
// templates): `gpus.per_node`, else `gpus.per_proc` times a numeric `nproc_per_node`, else the
// site's `defaults.gpus_per_node`; 0 = no GPU request (a CPU job, or a count nobody gave).
int RequestedGpusPerNode(const JobSpec& spec, const SiteProfile& profile);

// Whether the worker program is a Python interpreter (python, python3, python3.11, a path to
// one): the site's `python_setup` lines run for such jobs.
bool IsPythonCommand(const JobSpec& spec);

// Renders profile.template_text with the job's values. Every spec value that reaches the
// script is either checked against a directive-safe character set (name, queue, account,
// filesystems, modules, extra directives, the job directory when a directive names it) or
// single-quoted (paths on the `dlaunch run` line); a value that cannot be made safe is refused
// with InvalidArgument naming the field. The spec's `scheduler.setup` lines are the one
// exception: they are shell code by purpose and are emitted verbatim.
// The job's command, arguments and environment never appear in the script: they reach the
// launcher through the resolved job.yaml.
absl::StatusOr<std::string> RenderBatchScript(const JobSpec& spec, const SiteProfile& profile,
                                              const RenderContext& ctx);

}  // namespace dlaunch
