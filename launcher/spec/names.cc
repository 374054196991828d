#include "launcher/spec/names.h"

#include <algorithm>

namespace dlaunch {
namespace {

bool Contains(const std::vector<std::string>& names, std::string_view name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

}  // namespace

const std::vector<std::string>& SchedulerTypeNames() {
  static const auto* names = new std::vector<std::string>{"pbs", "cobalt", "slurm", "local"};
  return *names;
}

const std::vector<std::string>& ConcreteNodeLauncherNames() {
  static const auto* names =
      new std::vector<std::string>{"local", "ssh", "mpiexec", "mpirun", "srun"};
  return *names;
}

const std::vector<std::string>& NodeLauncherNames() {
  static const auto* names = [] {
    auto* all = new std::vector<std::string>{"auto"};
    all->insert(all->end(), ConcreteNodeLauncherNames().begin(),
                ConcreteNodeLauncherNames().end());
    return all;
  }();
  return *names;
}

bool IsSchedulerTypeName(std::string_view name) { return Contains(SchedulerTypeNames(), name); }
bool IsNodeLauncherName(std::string_view name) { return Contains(NodeLauncherNames(), name); }
bool IsConcreteNodeLauncherName(std::string_view name) {
  return Contains(ConcreteNodeLauncherNames(), name);
}

}  // namespace dlaunch
