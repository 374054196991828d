#include "common/wait_status.h"

#include <sys/wait.h>

#include <cstring>

#include "absl/strings/str_cat.h"

namespace dlaunch {

std::string DescribeWaitStatus(int st) {
  if (WIFEXITED(st)) return absl::StrCat("exit code ", WEXITSTATUS(st));
  if (WIFSIGNALED(st)) {
    const char* name = strsignal(WTERMSIG(st));
    return absl::StrCat("signal ", WTERMSIG(st), " (", name ? name : "?", ")");
  }
  return absl::StrCat("wait status ", st);
}

}  // namespace dlaunch
