// A reaped child's wait status in words, for logs and the terminal. Pure: the launcher's job
// decisions use it without linking the process layer.
#pragma once

#include <string>

namespace dlaunch {

// Exit status of a reaped child in words: "exit code 3", "signal 9 (Killed)".
std::string DescribeWaitStatus(int wait_status);

}  // namespace dlaunch
