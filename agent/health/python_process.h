// What the agent needs to know of a worker process to take its Python stacks: whether it is a
// Python interpreter, the PyTorch worker server it runs (TORCH_WORKER_SERVER_SOCKET in its
// environment), and where py-spy is. Reads /proc and the file system; no children.
#pragma once

#include <sys/types.h>

#include <string>

#include "common/python_command.h"

namespace dlaunch {

// /proc/PID/exe is a Python interpreter, or the process maps a libpython (an embedding program).
bool IsPythonProcess(pid_t pid);

// The process is stopped (SIGSTOP, a debugger): state T or t in /proc/PID/stat.
bool IsStoppedProcess(pid_t pid);

// The Unix socket of the worker server (torch.distributed.elastic.control_plane) the process
// runs: its TORCH_WORKER_SERVER_SOCKET, when that names a socket that exists; "" otherwise.
std::string WorkerServerSocket(pid_t pid);

// py-spy: $DLAUNCH_PY_SPY when set, else on PATH, else <dir of this program>/../libexec/dlaunch/
// py-spy, where deploy/install.sh puts it. "" when none is there; `why` then says what was tried.
std::string FindPySpy(std::string* why);

}  // namespace dlaunch
