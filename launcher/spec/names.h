// The one list of batch scheduler names and node-launcher names, for job.yaml checks, site
// profiles and the scheduler registry alike.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace dlaunch {

// `scheduler.type` in job.yaml and `scheduler` in a site profile: pbs, cobalt, slurm, local.
const std::vector<std::string>& SchedulerTypeNames();

// `launcher` in job.yaml and `dlaunch run --launcher`: "auto" (decided from the allocation),
// then every concrete launcher.
const std::vector<std::string>& NodeLauncherNames();

// The concrete launchers only (NodeLauncherNames without "auto"): a site profile names how its
// agents start, so "auto" means nothing there.
const std::vector<std::string>& ConcreteNodeLauncherNames();

bool IsSchedulerTypeName(std::string_view name);
bool IsNodeLauncherName(std::string_view name);
bool IsConcreteNodeLauncherName(std::string_view name);

}  // namespace dlaunch
