#include "launcher/jobdir/job_index.h"

#include <sys/stat.h>

#include <cstdlib>
#include <filesystem>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "common/file_io.h"

namespace dlaunch {
namespace fs = std::filesystem;
namespace {

// A job id names a file here: one path component, none of the special ones.
bool IsPlainName(const std::string& id) {
  return !id.empty() && id != "." && id != ".." && id.find('/') == std::string::npos &&
         id.find('\0') == std::string::npos && id[0] != '.';
}

// The entry's directory: its one line, when that names a directory that exists.
absl::StatusOr<std::string> ReadEntry(const std::string& path) {
  absl::StatusOr<std::string> text = ReadFile(path);
  if (!text.ok()) return text.status();
  std::string dir(absl::StripAsciiWhitespace(*text));
  std::error_code ec;
  if (dir.empty() || dir[0] != '/' || !fs::is_directory(dir, ec)) {
    return absl::NotFoundError(absl::StrCat("the job directory recorded in ", path, " is gone"));
  }
  return dir;
}

}  // namespace

std::string JobIndex::DefaultRoot() {
  const char* state = std::getenv("XDG_STATE_HOME");
  // The XDG spec ignores a relative value.
  if (state != nullptr && state[0] == '/') return absl::StrCat(state, "/dlaunch/jobs");
  const char* home = std::getenv("HOME");
  if (home != nullptr && home[0] == '/') return absl::StrCat(home, "/.local/state/dlaunch/jobs");
  return "";
}

absl::Status JobIndex::Record(const std::string& job_id, const std::string& job_dir) const {
  if (root_.empty()) {
    return absl::FailedPreconditionError("no job index: neither XDG_STATE_HOME nor HOME is set");
  }
  if (!IsPlainName(job_id)) {
    return absl::InvalidArgumentError(
        absl::StrCat("job id '", job_id, "' cannot name an index entry (it is not a file name)"));
  }
  std::error_code ec;
  fs::create_directories(root_, ec);
  if (ec) {
    return absl::Status(ErrnoToStatusCode(ec.value()),
                        absl::StrCat("cannot create the job index ", root_, ": ", ec.message()));
  }
  // Which jobs a user ran, and where, is theirs alone; the folders above are the XDG
  // state folders, left as they are.
  if (::chmod(root_.c_str(), 0700) != 0) return ErrnoStatus(errno, "cannot chmod", root_);
  const std::string dir = fs::absolute(job_dir, ec).lexically_normal().string();
  return WriteFileAtomically(absl::StrCat(root_, "/", job_id), dir + "\n", {0600, false});
}

absl::StatusOr<std::string> JobIndex::Find(const std::string& job_id) const {
  if (root_.empty() || !IsPlainName(job_id)) {
    return absl::NotFoundError(absl::StrCat("no job '", job_id, "' in the job index"));
  }
  return ReadEntry(absl::StrCat(root_, "/", job_id));
}

std::vector<std::string> JobIndex::List() const {
  std::vector<std::string> dirs;
  if (root_.empty()) return dirs;
  std::error_code ec;
  for (fs::directory_iterator it(root_, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    // Half-written entries (WriteFileAtomically's temporaries) are skipped.
    if (!IsPlainName(name) || name.find(".tmp.") != std::string::npos) continue;
    absl::StatusOr<std::string> dir = ReadEntry(it->path().string());
    if (dir.ok()) dirs.push_back(*std::move(dir));
  }
  return dirs;
}

}  // namespace dlaunch
