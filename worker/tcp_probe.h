// Waits until something accepts TCP connections at host:port. Ranks other than 0 use it before
// creating their TCPStore client: LibTorch's client backs off for a whole second after a refused
// connect, which, when all ranks start together, costs up to a second of every start-up.
#pragma once

#include <chrono>
#include <string>

#include "absl/status/status.h"

namespace dlaunch::worker {

// Polls every `interval` until a connect succeeds (the probe connection is closed at once).
// DeadlineExceeded after `timeout`; InvalidArgument when the host does not resolve.
absl::Status WaitForTcpListener(const std::string& host, int port, std::chrono::milliseconds timeout,
                                std::chrono::milliseconds interval = std::chrono::milliseconds(10));

}  // namespace dlaunch::worker
