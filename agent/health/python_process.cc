#include "agent/health/python_process.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <regex>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "agent/workers/orphan_sweeper.h"
#include "common/file_io.h"
#include "common/process.h"

namespace dlaunch {

bool IsPythonProcess(pid_t pid) {
  std::error_code ec;
  const auto exe = std::filesystem::read_symlink(absl::StrCat("/proc/", pid, "/exe"), ec);
  if (!ec && IsPythonProgram(exe.string())) return true;
  absl::StatusOr<std::string> maps = ReadFile(absl::StrCat("/proc/", pid, "/maps"));
  return maps.ok() && absl::StrContains(*maps, "/libpython");
}

bool IsStoppedProcess(pid_t pid) {
  absl::StatusOr<std::string> stat = ReadFile(absl::StrCat("/proc/", pid, "/stat"));
  char state = 0;
  return stat.ok() && ParentFromStat(*stat, &state) >= 0 && (state == 'T' || state == 't');
}

std::string WorkerServerSocket(pid_t pid) {
  absl::StatusOr<std::string> environ = ReadFile(absl::StrCat("/proc/", pid, "/environ"));
  if (!environ.ok()) return "";
  for (absl::string_view entry : absl::StrSplit(*environ, '\0')) {
    if (!absl::ConsumePrefix(&entry, "TORCH_WORKER_SERVER_SOCKET=")) continue;
    struct stat st;
    const std::string path(entry);
    return !path.empty() && ::stat(path.c_str(), &st) == 0 && S_ISSOCK(st.st_mode) ? path : "";
  }
  return "";
}

std::string FindPySpy(std::string* why) {
  const char* path = std::getenv("PATH");
  if (const char* env = std::getenv("DLAUNCH_PY_SPY"); env != nullptr && *env != '\0') {
    std::string found = FindProgram(env, path ? path : "");
    if (!found.empty()) return found;
    *why = absl::StrCat("DLAUNCH_PY_SPY=", env, " is not an executable file");
    return "";
  }
  if (std::string found = FindProgram("py-spy", path ? path : ""); !found.empty()) return found;
  std::error_code ec;
  const auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
  const std::string beside =
      ec ? "" : (self.parent_path().parent_path() / "libexec/dlaunch/py-spy").string();
  if (!beside.empty() && !FindProgram(beside, "").empty()) return beside;
  *why = absl::StrCat("py-spy is not on PATH", beside.empty() ? "" : " nor at " + beside,
                      " (DLAUNCH_PY_SPY names it; deploy/install.sh installs it)");
  return "";
}

}  // namespace dlaunch
