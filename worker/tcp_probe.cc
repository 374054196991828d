#include "worker/tcp_probe.h"

#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>

#include <thread>

#include "absl/strings/str_cat.h"

namespace dlaunch::worker {

absl::Status WaitForTcpListener(const std::string& host, int port, std::chrono::milliseconds timeout,
                                std::chrono::milliseconds interval) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* addrs = nullptr;
  const std::string service = std::to_string(port);
  if (const int rc = getaddrinfo(host.c_str(), service.c_str(), &hints, &addrs); rc != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("MASTER_ADDR \"", host, "\" does not resolve: ", gai_strerror(rc)));
  }
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  absl::Status result;
  while (true) {
    for (addrinfo* a = addrs; a != nullptr; a = a->ai_next) {
      const int fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
      if (fd < 0) continue;
      const bool ok = connect(fd, a->ai_addr, a->ai_addrlen) == 0;
      close(fd);
      if (ok) {
        freeaddrinfo(addrs);
        return absl::OkStatus();
      }
    }
    if (std::chrono::steady_clock::now() >= deadline) break;
    std::this_thread::sleep_for(interval);
  }
  freeaddrinfo(addrs);
  return absl::DeadlineExceededError(absl::StrCat("nothing accepted connections at ", host, ":",
                                                  port, " within ", timeout.count() / 1000.0, " s"));
}

}  // namespace dlaunch::worker
