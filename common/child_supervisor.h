// ChildSupervisor: runs a set of child processes (the agent's workers, the launcher's node
// launchers). Spawns each in its own process group, copies its stdout/stderr to a log file and
// to a line callback, reaps it, and stops the set with SIGTERM -> grace -> SIGKILL (the one rule
// of common/escalation.h; exits come by SIGCHLD, so it looks again only at the deadline).
// Processes and time come through ProcessLauncher and TimerClock, so tests drive both by hand.
// All methods run on the io_context's thread.
#pragma once

#include <sys/types.h>

#include <array>
#include <chrono>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <boost/asio.hpp>

#include "absl/status/statusor.h"
#include "common/child_exit.h"
#include "common/clock.h"
#include "common/escalation.h"
#include "common/process.h"
#include "common/process_launcher.h"

namespace dlaunch {

// What a ChildSupervisor runs on. Null members get the real ones (SystemProcessLauncher,
// AsioTimerClock), owned by the supervisor; given ones must outlive it.
struct SupervisorSeams {
  ProcessLauncher* launcher = nullptr;
  TimerClock* clock = nullptr;
};

class ChildSupervisor {
 public:
  struct Callbacks {
    std::function<void(int rank, bool is_stderr, std::vector<std::string> lines)> on_output;
    std::function<void(const ChildExit&)> on_exit;
  };
  using Seams = SupervisorSeams;

  // How long a reaped child's output pipes may stay open (held by a stray grandchild) before
  // the exit is reported anyway.
  static constexpr std::chrono::milliseconds kOutputLinger{2000};

  // Each process's output goes to <log_dir>/<log_prefix><rank>.log ("" log_dir: no file).
  ChildSupervisor(boost::asio::io_context& io, std::string log_dir, int tail_lines,
                  Callbacks callbacks, std::string log_prefix = "rank-", Seams seams = {});
  ~ChildSupervisor();

  struct StartRequest {
    int rank = -1;
    int local_rank = -1;
    SpawnOptions options;
  };
  // Starts every process, forking all of them before waiting for any to exec, so N children
  // cost one scheduling delay rather than N. One result (the pid, or why it could not start)
  // per request, in order.
  std::vector<absl::StatusOr<pid_t>> StartAll(std::vector<StartRequest> requests);
  // StartAll of one child per argv, numbered 0.. in order (the node launchers). All or none:
  // when one cannot start the others are killed, and the error names it.
  absl::Status StartCommands(const std::vector<std::vector<std::string>>& commands);

  // A child's log file keeps its first `bytes` of output; what comes after is counted, and the
  // log ends with a line saying how much was not kept. A flood (100 MB/s) fills no disk.
  static constexpr int64_t kDefaultLogLimit = int64_t{2} << 30;
  void SetLogLimit(int64_t bytes) { log_limit_ = bytes; }
  // Output without a newline is cut into lines of at most this many bytes, so a child that
  // writes a gigabyte in one line costs the supervisor this much memory, not a gigabyte.
  static constexpr size_t kMaxLineBytes = 64 * 1024;
  // SIGTERM to every running child's group now, SIGKILL to what is left after `grace` (none:
  // SIGKILL now). Idempotent: a child gets one SIGTERM, and a later call can bring the SIGKILL
  // forward but never push it later.
  void StopAll(std::chrono::milliseconds grace);
  // StopAll for the children whose local rank `pick` returns true for; the others run on
  // (in-process restart: ranks kept for the next round, or one rank ended within its round).
  void StopWhere(const std::function<bool(int local_rank)>& pick, std::chrono::milliseconds grace);
  // The running child of `local_rank`, if any.
  std::optional<pid_t> PidOfLocalRank(int local_rank) const;
  // A kept child's new global rank (in-process restart): its output and exit are labelled with
  // it from now on (its log file stays the one it was started with).
  void SetRank(pid_t pid, int rank);
  // SIGKILL to every running child's group now (StopAll with no grace left).
  void KillAll();
  // SIGKILL to one child's group now (a no-op for one already reported through on_exit).
  void Kill(pid_t pid);
  // Children started and not yet reported through on_exit.
  int running() const { return static_cast<int>(workers_.size()); }

 private:
  struct Stream {
    std::unique_ptr<boost::asio::posix::stream_descriptor> fd;
    std::string partial;
    std::array<char, 8192> buf;
    bool is_stderr = false;
  };
  struct Worker {
    int rank = -1;
    int local_rank = -1;
    pid_t pid = -1;
    int log_fd = -1;
    bool stopping = false;
    bool reaped = false;
    int wait_status = 0;
    std::optional<TimerClock::TimerId> linger;  // bounds the wait for output after exit
    Stream out, err;
    std::deque<std::string> tail;
    int64_t log_bytes = 0;      // written to its log file
    int64_t dropped_bytes = 0;  // past the log's limit, not written
    int64_t unwritten_bytes = 0;  // within the limit, but the write failed (a full disk)
    int log_errno = 0;            // the first such failure
    bool log_mid_line = false;  // the last byte written to the log was not a newline
  };

  absl::StatusOr<int> OpenLog(int rank) const;
  // `sig` to an unreaped child's process group and to the child itself.
  void Signal(pid_t pid, int sig);
  void WriteLog(Worker& w, const char* data, size_t n);
  void Adopt(std::unique_ptr<Worker> w, const SpawnedProcess& spawned);
  void ReadMore(pid_t pid, Stream& s);
  void Consume(Worker& w, Stream& s, const char* data, size_t n, bool flush);
  void Drain(Worker& w, Stream& s);
  void Reap();
  // A child is done once it has been reaped and both its pipes reached end of file (or the
  // linger timer gave up on them), so no output it wrote is lost.
  void MaybeComplete(pid_t pid, bool force);
  // The stop's look: its signals to the unreaped stopping children, and a timer for its deadline.
  void Escalate();

  boost::asio::io_context& io_;
  std::string log_dir_;
  std::string log_prefix_;
  int tail_lines_;
  int64_t log_limit_ = kDefaultLogLimit;
  Callbacks callbacks_;
  std::unique_ptr<ProcessLauncher> own_launcher_;
  std::unique_ptr<TimerClock> own_clock_;
  ProcessLauncher& launcher_;
  TimerClock& clock_;
  std::optional<Escalation> stop_;  // from the first StopAll/KillAll until no child is left
  std::optional<TimerClock::TimerId> kill_timer_;  // the stop's deadline
  std::map<pid_t, std::unique_ptr<Worker>> workers_;
};

}  // namespace dlaunch
