// SiteProfile: what differs between machines (scheduler, directives, agent-launch line, modules,
// limits, defaults), loaded from YAML files in templates/sites/ or a user's own directory, so a
// new machine needs a file, not a recompile.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "launcher/submit/site_search_path.h"

namespace dlaunch {

// Per-queue or per-site limits; 0 / false = no limit.
struct SiteLimits {
  int min_nodes = 0;
  int max_nodes = 0;
  int max_walltime_s = 0;
};

struct SiteProfile {
  std::string name;                 // file stem, e.g. "polaris"
  std::string description;
  std::string scheduler;            // pbs, cobalt, slurm, local
  std::string template_name;        // "pbs.sh.mustache" unless the profile names its own
  std::string template_path;        // resolved absolute path of the template file
  std::string template_text;        // its contents (LoadSiteProfile reads it)
  std::string source_path;          // the profile file

  // Each entry is a mustache template for the text after the directive prefix ("#PBS "); an
  // entry that renders empty (e.g. "{{#queue}}-q {{queue}}{{/queue}}" with no queue) is dropped.
  std::vector<std::string> directives;
  std::string filesystems_separator = ":";  // PBS home:eagle, Cobalt home,grand

  std::string nodefile_var;         // PBS_NODEFILE, COBALT_NODEFILE; "" when there is none
  std::string launcher;             // dlaunch run --launcher: mpiexec, mpirun, srun, ssh, local
  // The exact command prefix that starts one agent per node, e.g.
  // "mpiexec -n ${NNODES} --ppn 1 --hostfile ${PBS_NODEFILE}". The batch script expands the
  // shell variables in it; words are split on whitespace by `dlaunch run`.
  std::string launch;

  std::vector<std::string> modules; // `module load` each, before the job's own modules
  std::vector<std::string> setup;   // site shell lines, verbatim, before the job's own setup
  // More site lines, after `setup`, only for jobs whose worker is Python (IsPythonCommand):
  // the environment that provides it, e.g. Polaris' conda PyTorch. An empty list turns it off.
  std::vector<std::string> python_setup;

  // Scheduler programs; "" = the scheduler's usual name. Environment variables
  // (DLAUNCH_QSUB, DLAUNCH_SBATCH, ...) override these.
  std::string submit_command;
  std::string status_command;
  std::string cancel_command;

  // Defaults for what job.yaml leaves out.
  std::string default_queue;
  std::string default_account;
  std::string default_walltime;     // as written, e.g. "01:00:00"
  std::vector<std::string> default_filesystems;
  int gpus_per_node = 0;            // 0 = unknown / CPU nodes
  std::string gpu_model;            // informational, e.g. "A100"
  std::string gpu_binding;          // "shared" or "isolate" for jobs whose job.yaml says neither

  SiteLimits limits;
  std::map<std::string, SiteLimits> queue_limits;  // queue name -> its own limits
  bool requires_account = false;
  bool requires_queue = false;
};

// Parses one profile (no file access; template_path stays empty). `name` is the profile name,
// `file_name` is used in error messages. Unknown keys are errors, so typos don't silently vanish.
absl::StatusOr<SiteProfile> ParseSiteProfile(const std::string& yaml_text,
                                             const std::string& name,
                                             const std::string& file_name);

// Finds <name>.yaml on the search path (or reads `name` itself when it is a path to a .yaml
// file), parses it and resolves its template: the profile file's own directory first, then the
// template dirs. NotFound lists every place that was searched.
absl::StatusOr<SiteProfile> LoadSiteProfile(const std::string& name, const SiteSearchPath& path);

// Names of all profiles on the search path (first occurrence of each), sorted.
std::vector<std::string> ListSiteProfiles(const SiteSearchPath& path);

// The profile a job uses when no --site is given: scheduler.site, else the scheduler adapter's
// default site (pbs -> generic-pbs, cobalt -> thetagpu, slurm -> generic-slurm), else "local".
std::string DefaultSiteName(const std::string& spec_site, const std::string& spec_type);

}  // namespace dlaunch
