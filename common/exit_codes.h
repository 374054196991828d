// The exit codes of dlaunch's programs (DESIGN.md "Exit codes"), in one place.
#pragma once

namespace dlaunch {

inline constexpr int kExitOk = 0;
inline constexpr int kExitJobFailed = 1;     // the job ran and failed (a rank, a node, a hang)
inline constexpr int kExitUsage = 2;         // bad flags or an invalid job.yaml
inline constexpr int kExitLaunchError = 3;   // the scheduler or the node launcher failed
inline constexpr int kExitInterrupted = 130; // stopped by Ctrl-C / SIGTERM (128 + SIGINT)

}  // namespace dlaunch
