// Reading whole files and writing them atomically (temp file, fsync, rename), with errors that
// name the path and carry a code chosen from errno (NotFound, PermissionDenied,
// ResourceExhausted for a full disk, ...).
#pragma once

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace dlaunch {

// The whole file as bytes.
absl::StatusOr<std::string> ReadFile(const std::string& path);

struct WriteOptions {
  int mode = 0644;
  // fsync the data (and the directory after the rename) before returning, so the file survives
  // a crash of the machine, not just of the process. Job-directory files that a later reader
  // polls for (summary.json) and checkpoints want it; scratch files do not.
  bool fsync = true;
};

// Writes `bytes` to `path` so that readers see either the old file or the whole new one, never a
// part: a temporary file in the same directory, then rename(2).
absl::Status WriteFileAtomically(const std::string& path, const std::string& bytes,
                                 WriteOptions options = {});

// The canonical code for an errno, and a status "<what> <path>: <strerror>".
absl::StatusCode ErrnoToStatusCode(int err);
absl::Status ErrnoStatus(int err, const std::string& what, const std::string& path);

}  // namespace dlaunch
