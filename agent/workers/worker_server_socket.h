// TORCH_WORKER_SERVER_SOCKET: the Unix socket on which a rank that runs its main under PyTorch's
// torch.distributed.elastic.control_plane.worker_main() serves torch's debug handlers (ping,
// dump_traceback, the NCCL flight recorder). torchrun 2.x leaves the variable unset; dlaunch's
// agent gives every rank its own path in a directory of its own, so the stack dumper can ask a
// hung Python rank for its tracebacks (the path is in the rank's /proc/PID/environ).
#pragma once

#include <memory>
#include <string>

#include "absl/status/statusor.h"

namespace dlaunch {

inline constexpr char kWorkerServerSocketVar[] = "TORCH_WORKER_SERVER_SOCKET";

// <socket_dir>/rank-<rank>.sock: global rank `rank`'s TORCH_WORKER_SERVER_SOCKET.
std::string WorkerServerSocketPath(const std::string& socket_dir, int rank);

// The directory of one agent's worker sockets, removed with what is left in it when destroyed.
// Only its owner may enter it (0700): torch creates the socket with the umask's mode, and any
// local user who could connect would be served the rank's tracebacks.
class WorkerSocketDir {
 public:
  // A new <parent>/dlaunch-<pid>-XXXXXX. Under /tmp rather than the job directory: a Unix
  // socket's path holds at most 107 bytes, which a job directory on a shared file system can
  // use up on its own.
  static absl::StatusOr<std::unique_ptr<WorkerSocketDir>> Create(
      const std::string& parent = "/tmp");
  ~WorkerSocketDir();
  WorkerSocketDir(const WorkerSocketDir&) = delete;
  WorkerSocketDir& operator=(const WorkerSocketDir&) = delete;

  const std::string& path() const { return path_; }

 private:
  explicit WorkerSocketDir(std::string path) : path_(std::move(path)) {}
  std::string path_;
};

}  // namespace dlaunch
