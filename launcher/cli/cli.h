// The `dlaunch` command line: parses the subcommand and dispatches to it.
#pragma once

namespace dlaunch {

// Returns the process exit code (see DESIGN.md: 0, 1, 2, 3, 130).
int RunCli(int argc, char** argv);

}  // namespace dlaunch
