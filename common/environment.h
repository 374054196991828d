// One type for reading environment variables, so that code which decides from the environment
// (allocation discovery, GPU discovery, scheduler commands) takes a lookup and is tested with a
// map instead of setenv.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>

namespace dlaunch {

// The value of a variable, or nullopt when it is not set.
using EnvLookup = std::function<std::optional<std::string>(const std::string& name)>;

// Reads this process's environment.
EnvLookup ProcessEnvironment();

// Reads a fixed map (tests, and environments built for a child).
EnvLookup MapEnvironment(std::map<std::string, std::string> vars);

}  // namespace dlaunch
