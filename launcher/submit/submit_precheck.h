// Pre-submit checks: catch on the login node, in one listing, what would otherwise fail after
// hours in the queue (missing program, walltime or node count over the site's limits, no
// account). Pure apart from the injected file lookups.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "launcher/spec/job_spec.h"
#include "launcher/submit/site_profile.h"

namespace dlaunch {

// File-system questions the checks ask; tests answer them from a table.
struct FileLookup {
  std::function<bool(const std::string& path)> exists;
  std::function<bool(const std::string& path)> is_executable;  // regular file with an x bit
};

// The real file system.
FileLookup RealFileLookup();

struct PrecheckReport {
  std::vector<std::string> errors;    // the job must not be submitted
  std::vector<std::string> warnings;  // printed, submission goes on
  bool ok() const { return errors.empty(); }
};

// Checks `spec` against `profile`:
//  - the worker command resolves: a name containing '/' is a file relative to the job's workdir
//    (itself relative to `cwd`) and must be executable; a bare name must be found on `path_env`.
//    When the job or site loads modules or runs setup lines, an unfound bare name is only a
//    warning, since those lines may put it on PATH in the job. A script handed to an interpreter
//    (python train.py, bash run.sh) must exist.
//  - walltime parses and is within the site's and the queue's maximum;
//  - the node range is within the site's and the queue's limits;
//  - account and queue are present (after the profile's defaults) where the site requires them;
//  - a GPU job (nproc_per_node: gpu) on a site whose directives can ask for GPUs gives a GPU
//    count, else a warning: the job would ask for none.
// The site's python_setup lines count as lines that may put a Python worker on PATH.
PrecheckReport PrecheckSubmit(const JobSpec& spec, const SiteProfile& profile,
                              const std::string& cwd, const std::string& path_env,
                              const FileLookup& files);

}  // namespace dlaunch
