#include "launcher/submit/submitted_job_directory.h"

#include <sys/stat.h>

#include <cerrno>
#include <filesystem>

#include "absl/strings/str_cat.h"
#include "common/file_io.h"

namespace dlaunch {
namespace {

constexpr int kOwnerOnlyDir = 0700;
constexpr WriteOptions kOwnerOnlyFile{0600, true};
constexpr WriteOptions kOwnerOnlyScript{0700, true};

// mkdir with the final mode, then chmod: the umask may only have narrowed it, and no moment
// passes in which another user could open the directory.
absl::Status MakeOwnerOnlyDirectory(const std::string& path) {
  if (::mkdir(path.c_str(), kOwnerOnlyDir) != 0) {
    if (errno == EEXIST) {
      return absl::AlreadyExistsError(absl::StrCat(
          "job directory ", path, " already exists; dlaunch submit makes a new one for each job"));
    }
    return ErrnoStatus(errno, "cannot create job directory", path);
  }
  if (::chmod(path.c_str(), kOwnerOnlyDir) != 0) {
    return ErrnoStatus(errno, "cannot chmod job directory", path);
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<SubmittedJobDirectory> SubmittedJobDirectory::Create(const std::string& path) {
  namespace fs = std::filesystem;
  fs::path dir = fs::path(path).lexically_normal();
  if (!dir.has_filename()) dir = dir.parent_path();  // "runs/x/" names runs/x
  std::error_code ec;
  if (dir.has_parent_path()) {
    fs::create_directories(dir.parent_path(), ec);
    if (ec) {
      return absl::Status(ErrnoToStatusCode(ec.value()),
                          absl::StrCat("cannot create job root ", dir.parent_path().string(),
                                       ": ", ec.message()));
    }
  }
  if (absl::Status st = MakeOwnerOnlyDirectory(dir.string()); !st.ok()) return st;
  if (absl::Status st = MakeOwnerOnlyDirectory((dir / "logs").string()); !st.ok()) return st;
  return SubmittedJobDirectory(dir.string());
}

absl::Status SubmittedJobDirectory::WriteJob(const std::string& resolved_yaml,
                                             const std::string& script) const {
  if (absl::Status st = WriteFileAtomically(spec_path(), resolved_yaml, kOwnerOnlyFile);
      !st.ok()) {
    return st;
  }
  return WriteFileAtomically(script_path(), script, kOwnerOnlyScript);
}

absl::Status SubmittedJobDirectory::WriteSubmitRecord(const std::string& json) const {
  return WriteFileAtomically(path_ + "/submit.json", json, kOwnerOnlyFile);
}

}  // namespace dlaunch
