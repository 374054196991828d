#include "common/file_io.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"

namespace dlaunch {
namespace {

absl::Status WriteAll(int fd, const std::string& bytes, const std::string& path) {
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t n = write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return ErrnoStatus(errno, "cannot write", path);
    done += static_cast<size_t>(n);
  }
  return absl::OkStatus();
}

void SyncDirectoryOf(const std::string& path) {
  auto slash = path.rfind('/');
  std::string dir = slash == std::string::npos ? "." : (slash == 0 ? "/" : path.substr(0, slash));
  int fd = open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return;
  fsync(fd);
  close(fd);
}

}  // namespace

absl::StatusCode ErrnoToStatusCode(int err) {
  switch (err) {
    case ENOENT:
    case ENOTDIR:
      return absl::StatusCode::kNotFound;
    case EACCES:
    case EPERM:
    case EROFS:
      return absl::StatusCode::kPermissionDenied;
    case ENOSPC:
    case EDQUOT:
    case EMFILE:
    case ENFILE:
    case ENOMEM:
      return absl::StatusCode::kResourceExhausted;
    case EEXIST:
      return absl::StatusCode::kAlreadyExists;
    case EINVAL:
    case ENAMETOOLONG:
    case EISDIR:
    case ELOOP:
      return absl::StatusCode::kInvalidArgument;
    case EAGAIN:
    case EINTR:
    case EIO:
      return absl::StatusCode::kUnavailable;
    default:
      return absl::StatusCode::kInternal;
  }
}

absl::Status ErrnoStatus(int err, const std::string& what, const std::string& path) {
  return absl::Status(ErrnoToStatusCode(err), absl::StrCat(what, " ", path, ": ", std::strerror(err)));
}

absl::StatusOr<std::string> ReadFile(const std::string& path) {
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return ErrnoStatus(errno, "cannot read", path);
  std::string out;
  char buf[1 << 16];
  while (true) {
    ssize_t n = read(fd, buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      int err = errno;
      close(fd);
      return ErrnoStatus(err, "cannot read", path);
    }
    if (n == 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  close(fd);
  return out;
}

absl::Status WriteFileAtomically(const std::string& path, const std::string& bytes,
                                 WriteOptions options) {
  std::string tmp = absl::StrCat(path, ".tmp.", getpid());
  int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, options.mode);
  if (fd < 0) return ErrnoStatus(errno, "cannot create", tmp);
  // open() applies the umask; a secret (0600) or script (0755) needs exactly its mode.
  absl::Status st = fchmod(fd, options.mode) == 0 ? absl::OkStatus()
                                                  : ErrnoStatus(errno, "cannot chmod", tmp);
  if (st.ok()) st = WriteAll(fd, bytes, tmp);
  if (st.ok() && options.fsync && fsync(fd) != 0) st = ErrnoStatus(errno, "cannot fsync", tmp);
  if (close(fd) != 0 && st.ok()) st = ErrnoStatus(errno, "cannot close", tmp);
  if (st.ok() && rename(tmp.c_str(), path.c_str()) != 0) st = ErrnoStatus(errno, "cannot rename to", path);
  if (!st.ok()) {
    unlink(tmp.c_str());
    return st;
  }
  if (options.fsync) SyncDirectoryOf(path);
  return absl::OkStatus();
}

}  // namespace dlaunch
