// The job.yaml schema as tables: the keys each mapping accepts and the names people bring from
// other tools. The reader checks keys against them; docs/job-spec.md documents the same keys.
#pragma once

#include <map>
#include <string>
#include <vector>

namespace dlaunch {

// Keys valid in each mapping of the schema, "" being the top level.
const std::map<std::string, std::vector<std::string>>& SchemaKeys();

// Names people bring from torchrun, mpiexec or batch scripts, mapped to the key they meant.
const std::map<std::string, std::string>& KnownAliases();

}  // namespace dlaunch
