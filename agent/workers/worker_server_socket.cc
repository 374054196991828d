#include "agent/workers/worker_server_socket.h"

#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/file_io.h"

namespace dlaunch {

std::string WorkerServerSocketPath(const std::string& socket_dir, int rank) {
  return absl::StrCat(socket_dir, "/rank-", rank, ".sock");
}

absl::StatusOr<std::unique_ptr<WorkerSocketDir>> WorkerSocketDir::Create(
    const std::string& parent) {
  std::string tmpl = absl::StrCat(parent, "/dlaunch-", getpid(), "-XXXXXX");
  std::vector<char> buf(tmpl.begin(), tmpl.end());
  buf.push_back('\0');
  // mkdtemp makes the directory 0700 whatever the umask.
  if (mkdtemp(buf.data()) == nullptr) {
    return ErrnoStatus(errno, "cannot create the workers' socket directory in", parent);
  }
  return std::unique_ptr<WorkerSocketDir>(new WorkerSocketDir(buf.data()));
}

WorkerSocketDir::~WorkerSocketDir() {
  // Only sockets and leftovers of this agent's ranks are inside: nothing to recurse into.
  if (DIR* dir = opendir(path_.c_str())) {
    while (dirent* e = readdir(dir)) {
      const std::string name = e->d_name;
      if (name != "." && name != "..") unlink(absl::StrCat(path_, "/", name).c_str());
    }
    closedir(dir);
  }
  rmdir(path_.c_str());
}

}  // namespace dlaunch
