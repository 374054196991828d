#include "tests/integration/test_process.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <thread>

extern char** environ;

namespace dlaunch::testing {

ChildProcess::ChildProcess(const std::vector<std::string>& argv, const std::string& out_dir,
                           const std::vector<std::string>& extra_env) {
  static int counter = 0;
  ++counter;
  out_path_ = out_dir + "/cmd" + std::to_string(counter) + ".out";
  err_path_ = out_dir + "/cmd" + std::to_string(counter) + ".err";
  std::vector<std::string> env;
  for (char** e = environ; *e; ++e) env.push_back(*e);
  for (const auto& e : extra_env) env.push_back(e);
  std::vector<char*> cargv, cenv;
  for (const auto& a : argv) cargv.push_back(const_cast<char*>(a.c_str()));
  cargv.push_back(nullptr);
  for (const auto& e : env) cenv.push_back(const_cast<char*>(e.c_str()));
  cenv.push_back(nullptr);
  pid_ = fork();
  if (pid_ == 0) {
    int o = open(out_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    int e = open(err_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(o, 1);
    dup2(e, 2);
    int devnull = open("/dev/null", O_RDONLY);
    dup2(devnull, 0);
    execve(cargv[0], cargv.data(), cenv.data());
    _exit(127);
  }
}

ChildProcess::~ChildProcess() {
  if (pid_ > 0 && !code_) {
    kill(pid_, SIGKILL);
    int st;
    waitpid(pid_, &st, 0);
  }
}

std::optional<int> ChildProcess::Wait(std::chrono::milliseconds timeout) {
  WaitFor(
      [this] {
        int st = 0;
        if (code_) return true;
        if (waitpid(pid_, &st, WNOHANG) != pid_) return false;
        code_ = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
        return true;
      },
      timeout);
  return code_;
}

void ChildProcess::Signal(int sig) const { kill(pid_, sig); }
std::string ChildProcess::Stdout() const { return ReadFile(out_path_); }
std::string ChildProcess::Stderr() const { return ReadFile(err_path_); }

std::vector<pid_t> FindProcesses(const std::string& env_needle, const std::string& cmdline_part) {
  std::vector<pid_t> out;
  DIR* d = opendir("/proc");
  if (!d) return out;
  while (dirent* e = readdir(d)) {
    pid_t pid = std::atoi(e->d_name);
    if (pid <= 0 || pid == getpid()) continue;
    std::string base = std::string("/proc/") + e->d_name;
    std::string stat = ReadFile(base + "/stat");
    auto close_paren = stat.rfind(')');
    if (close_paren == std::string::npos || close_paren + 2 >= stat.size()) continue;
    if (stat[close_paren + 2] == 'Z') continue;  // exited, waiting to be reaped
    std::string environ_text = ReadFile(base + "/environ");
    std::string cmdline = ReadFile(base + "/cmdline");
    for (auto& c : cmdline) if (c == '\0') c = ' ';
    bool env_hit = false;
    size_t start = 0;
    while (start < environ_text.size()) {
      size_t end = environ_text.find('\0', start);
      if (end == std::string::npos) end = environ_text.size();
      if (!env_needle.empty() && environ_text.compare(start, end - start, env_needle) == 0) env_hit = true;
      start = end + 1;
    }
    if (env_hit || (!cmdline_part.empty() && cmdline.find(cmdline_part) != std::string::npos)) {
      out.push_back(pid);
    }
  }
  closedir(d);
  return out;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string Torch2Python() {
  const char* python = std::getenv("DLAUNCH_TORCH2_PYTHON");
  if (python != nullptr && *python != '\0') return python;
  return std::string(DLAUNCH_SOURCE_DIR) + "/build-torch2/venv/bin/python";
}

std::string WhyPythonCannotImport(const std::string& python, const std::string& module,
                                  const std::string& dir) {
  if (access(python.c_str(), X_OK) != 0) return python + " does not exist";
  // Importing torch on a loaded 2-core machine takes a while.
  ChildProcess probe({python, "-c", "import " + module}, dir);
  auto code = probe.Wait(std::chrono::seconds(180));
  if (!code.has_value() || *code != 0) return python + " cannot import " + module;
  return "";
}

std::string MakeTempDir() {
  char tmpl[] = "/tmp/dlaunch-it-XXXXXX";
  char* d = mkdtemp(tmpl);
  return d ? d : "/tmp";
}

}  // namespace dlaunch::testing
