// The error file PyTorch's `@record` (torch.distributed.elastic.multiprocessing.errors) writes
// when a rank's entry point raises: TORCHELASTIC_ERROR_FILE, one per rank under the job
// directory. On a failed rank the agent reads it, so the launcher's root-cause line names the
// exception and where it was raised instead of only an exit code.
#pragma once

#include <string>

#include "absl/strings/string_view.h"

namespace dlaunch {

// <job_dir>/errors/rank-<rank>.json: the rank's TORCHELASTIC_ERROR_FILE.
std::string RankErrorFilePath(const std::string& job_dir, int rank);

// "RuntimeError: boom (at train.py:42, in step)" from the file's JSON: the exception and its
// message, and the innermost frame of its Python traceback; "" when the text is not such a file.
// Both forms torch writes are read: {"message": {"message": ..., "extraInfo": {"py_callstack":
// ...}}} and {"message": "..."}.
std::string SummarizeTorchErrorFile(absl::string_view json);

// The summary of rank `rank`'s error file, "" when there is none (bounded: 1 MiB is read).
std::string ReadTorchError(const std::string& job_dir, int rank);

}  // namespace dlaunch
