// WaitFor: polls a condition until it holds or a time limit passes, for tests that watch real
// processes or files. Header-only.
#pragma once

#include <chrono>
#include <functional>
#include <thread>

namespace dlaunch {

// True as soon as cond() is; false if it still is not after `limit` (checked once more then).
inline bool WaitFor(const std::function<bool()>& cond, std::chrono::milliseconds limit,
                    std::chrono::milliseconds poll = std::chrono::milliseconds(20)) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < deadline) {
    if (cond()) return true;
    std::this_thread::sleep_for(poll);
  }
  return cond();
}

}  // namespace dlaunch
