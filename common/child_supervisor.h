// ChildSupervisor: runs this node's worker processes. Spawns each in its own process group,
// copies its stdout/stderr to logs/rank-N.log and to a line callback, reaps it, and stops the
// set with SIGTERM -> grace -> SIGKILL. All methods run on the io_context's thread.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <boost/asio.hpp>

#include "absl/status/statusor.h"
#include "common/process.h"

namespace dlaunch {

struct ChildExit {
  int rank = -1;
  int local_rank = -1;
  pid_t pid = -1;
  int wait_status = 0;
  bool stopped = false;                 // ended after we asked it to stop
  std::vector<std::string> tail;        // last lines of its output
};

class ChildSupervisor {
 public:
  struct Callbacks {
    std::function<void(int rank, bool is_stderr, std::vector<std::string> lines)> on_output;
    std::function<void(const ChildExit&)> on_exit;
  };

  // Each process's output goes to <log_dir>/<log_prefix><rank>.log ("" log_dir: no file).
  ChildSupervisor(boost::asio::io_context& io, std::string log_dir, int tail_lines,
                   Callbacks callbacks, std::string log_prefix = "rank-");
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
  // SIGTERM to every running worker's group now, SIGKILL to what is left after `grace`.
  void StopAll(std::chrono::milliseconds grace);
  void KillAll();
  int running() const { return static_cast<int>(workers_.size()); }
  std::vector<pid_t> pids() const;

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
    std::unique_ptr<boost::asio::steady_timer> linger;  // bounds the wait for output after exit
    Stream out, err;
    std::deque<std::string> tail;
  };

  void ReadMore(pid_t pid, Stream& s);
  void Consume(Worker& w, Stream& s, const char* data, size_t n, bool flush);
  void Drain(Worker& w, Stream& s);
  void WaitForSignal();
  void Reap();
  // A worker is done once it has been reaped and both its pipes reached end of file (or the
  // linger timer gave up on them), so no output it wrote is lost.
  void MaybeComplete(pid_t pid, bool force);

  boost::asio::io_context& io_;
  std::string log_dir_;
  std::string log_prefix_;
  int tail_lines_;
  Callbacks callbacks_;
  boost::asio::signal_set sigchld_;
  boost::asio::steady_timer kill_timer_;
  std::map<pid_t, std::unique_ptr<Worker>> workers_;
};

}  // namespace dlaunch
