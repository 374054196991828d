// The `dlaunch` command line: parses the subcommand and dispatches to it.
#pragma once

#include <string>
#include <vector>

namespace dlaunch {

// Returns the process exit code (see DESIGN.md: 0, 1, 2, 3, 130).
int RunCli(int argc, char** argv);

// Every subcommand's first name, in the order `dlaunch help` lists them.
std::vector<std::string> CommandNames();

// What `dlaunch --version` prints, one line: the version, the commit it was built from and the
// LibTorch dlaunch-worker was built on.
std::string VersionText();

}  // namespace dlaunch
