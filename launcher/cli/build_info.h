// What this dlaunch was built from, for `dlaunch --version`: written by CMake at configure time
// into one small generated file (build_info.cc.in), so a new commit recompiles that file alone.
#pragma once

namespace dlaunch {

extern const char kDlaunchVersion[];  // the project's version, "0.1.0"
extern const char kBuildCommit[];     // `git describe --always --dirty`, "unknown" outside git
extern const char kBuildLibTorch[];   // LibTorch dlaunch-worker was built on; "" = not built

}  // namespace dlaunch
