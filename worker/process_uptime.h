// Seconds since this process was started by the kernel (from /proc/self/stat), so "time to the
// first training step" includes loading the shared libraries before main().
#pragma once

namespace dlaunch::worker {

// -1 when /proc is unavailable.
double SecondsSinceProcessStart();

}  // namespace dlaunch::worker
