#include "common/child_setup.h"

#include <signal.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <initializer_list>

namespace dlaunch {

bool TieChildToParent(pid_t parent, int death_signal, bool traceable) {
  if (death_signal != 0) {
    prctl(PR_SET_PDEATHSIG, death_signal);
    if (getppid() != parent) return false;  // the parent died before prctl took effect
  }
  // Kept across exec; fails harmlessly (EINVAL) on a kernel without Yama.
  if (traceable) prctl(PR_SET_PTRACER, parent, 0, 0, 0);
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
  for (int s : {SIGINT, SIGTERM, SIGCHLD, SIGPIPE, SIGHUP, SIGQUIT}) signal(s, SIG_DFL);
  return true;
}

}  // namespace dlaunch
