#include "launcher/run/relay_launch.h"

#include <signal.h>
#include <sys/wait.h>

#include <chrono>
#include <filesystem>
#include <thread>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "common/escalation_driver.h"
#include "common/file_io.h"
#include "common/process.h"

namespace dlaunch {
namespace {

std::string LogTail(const std::string& path) {
  absl::StatusOr<std::string> text = ReadFile(path);
  if (!text.ok() || text->empty()) return "(its log is empty)";
  std::string tail = text->size() > 600 ? text->substr(text->size() - 600) : *text;
  return std::string(absl::StripTrailingAsciiWhitespace(tail));
}

}  // namespace

int RelayCount(int agents, int fanout) {
  if (fanout <= 0 || agents < 2) return 0;
  return (agents + fanout - 1) / fanout;
}

absl::StatusOr<std::vector<std::string>> RelayGroup::Start(const RelayLaunch& launch) {
  std::error_code ec;
  std::filesystem::create_directories(launch.dir, ec);
  if (ec) return absl::UnavailableError(absl::StrCat("cannot make ", launch.dir, ": ", ec.message()));
  std::vector<std::string> port_files, logs;
  for (int i = 0; i < launch.count; ++i) {
    port_files.push_back(absl::StrCat(launch.dir, "/relay-", i, ".port"));
    logs.push_back(absl::StrCat(launch.dir, "/relay-", i, ".log"));
    std::filesystem::remove(port_files.back(), ec);
    SpawnOptions o;
    o.argv = {launch.program, "--upstream", launch.upstream, "--token-file", launch.token_file,
              "--listen", absl::StrCat(launch.listen_all ? "0.0.0.0" : launch.listen_host, ":0"),
              "--port-file", port_files.back(), "--log", logs.back(),
              "--name", absl::StrCat("relay ", i)};
    o.capture_output = false;
    o.parent_death_signal = SIGTERM;
    absl::StatusOr<PendingProcess> pending = ForkProcess(o);
    if (!pending.ok()) {
      Stop(0);
      return pending.status();
    }
    absl::StatusOr<SpawnedProcess> spawned = AwaitExec(*std::move(pending));
    if (!spawned.ok()) {
      Stop(0);
      return spawned.status();
    }
    pids_.push_back(spawned->pid);
  }
  logs_ = logs;
  std::vector<std::string> addrs(launch.count);
  const auto deadline = std::chrono::steady_clock::now() +
                        std::chrono::milliseconds(static_cast<int64_t>(launch.timeout_s * 1000));
  int ready = 0;
  while (ready < launch.count) {
    for (int i = 0; i < launch.count; ++i) {
      if (!addrs[i].empty()) continue;
      int port = 0;
      if (absl::StatusOr<std::string> text = ReadFile(port_files[i]);
          text.ok() && absl::SimpleAtoi(absl::StripAsciiWhitespace(*text), &port) && port > 0) {
        addrs[i] = absl::StrCat(launch.listen_host, ":", port);
        ++ready;
        continue;
      }
      int status = 0;
      if (WaitChild(pids_[i], &status, WNOHANG) == pids_[i]) {
        pids_[i] = -1;
        Stop(0);
        return absl::UnavailableError(absl::StrCat("relay ", i, " exited (", DescribeWaitStatus(status),
                                                   ") before it listened: ", LogTail(logs[i])));
      }
    }
    if (ready == launch.count) break;
    if (std::chrono::steady_clock::now() > deadline) {
      Stop(0);
      return absl::DeadlineExceededError(absl::StrCat(
          ready, " of ", launch.count, " relays listened within ", launch.timeout_s, " s"));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return addrs;
}

std::vector<std::string> RelayGroup::ReapExited() {
  std::vector<std::string> lines;
  for (size_t i = 0; i < pids_.size(); ++i) {
    int status = 0;
    if (pids_[i] <= 0 || WaitChild(pids_[i], &status, WNOHANG) != pids_[i]) continue;
    pids_[i] = -1;
    lines.push_back(absl::StrCat("relay ", i, " exited (", DescribeWaitStatus(status),
                                 ") while the job ran: its agents move their sessions to the launcher; ",
                                 i < logs_.size() ? LogTail(logs_[i]) : std::string()));
  }
  return lines;
}

void RelayGroup::Stop(double grace_s) {
  // The one TERM -> grace -> KILL rule (common/escalation.h), blocking: the launcher is on its
  // way out, or its start failed.
  Escalation escalation(std::chrono::steady_clock::now(),
                        std::chrono::milliseconds(static_cast<int64_t>(grace_s * 1000)));
  EscalateBlocking(escalation,
                   {[this] {
                      std::vector<pid_t> left;
                      for (pid_t& pid : pids_) {
                        int status = 0;
                        if (pid <= 0) continue;
                        if (WaitChild(pid, &status, WNOHANG) != 0) {
                          pid = -1;  // reaped now (or not this process's child)
                          continue;
                        }
                        left.push_back(pid);
                      }
                      return left;
                    },
                    [](const std::vector<pid_t>& pids, int sig) {
                      for (pid_t pid : pids) kill(pid, sig);
                    },
                    /*found=*/nullptr});
  pids_.clear();
}

}  // namespace dlaunch
