// What a worker command runs when it is Python: the interpreter, its script, and whether that
// script imports torch. The agent's preflight looks for it (or imports it) before the job joins;
// the launcher says so. Pure but for reading the script's first 64 KiB.
#pragma once

#include <string>
#include <vector>

namespace dlaunch {

// The basename is python, python3, python3.11, ...
bool IsPythonProgram(const std::string& program);

// The script a Python command runs (`python3 -u train.py`: train.py), under `workdir` when
// relative; "" for -m, -c, standard input, or a command that is not Python.
std::string PythonScriptPath(const std::vector<std::string>& argv, const std::string& workdir);

// The Python modules a command imports that the preflight should try: torch when the command is
// Python and its script (or -m module, or -c code) uses torch.
std::vector<std::string> PythonImportsFor(const std::vector<std::string>& argv,
                                          const std::string& workdir);

}  // namespace dlaunch
