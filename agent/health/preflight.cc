#include "agent/health/preflight.h"

#include <netinet/in.h>
#include <pwd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <thread>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "agent/placement/gpu_discovery.h"
#include "agent/health/python_process.h"
#include "common/command_runner.h"

namespace dlaunch {
namespace {

using Clock = std::chrono::steady_clock;

v1::CheckResult Result(const std::string& name, v1::CheckResult::Verdict verdict,
                       std::string detail) {
  v1::CheckResult r;
  r.set_name(name);
  r.set_verdict(verdict);
  r.set_detail(std::move(detail));
  return r;
}

std::string GiB(int64_t bytes) {
  return absl::StrFormat("%.1f GiB", static_cast<double>(bytes) / (1024.0 * 1024 * 1024));
}

// Runs `check` and stamps how long it took.
v1::CheckResult Timed(const std::function<v1::CheckResult()>& check) {
  const Clock::time_point start = Clock::now();
  v1::CheckResult r = check();
  r.set_seconds(std::chrono::duration<double>(Clock::now() - start).count());
  return r;
}

// The last non-empty line of `text`: where Python puts the exception.
std::string LastLine(const std::string& text) {
  std::vector<absl::string_view> lines = absl::StrSplit(text, '\n', absl::SkipWhitespace());
  return lines.empty() ? "" : std::string(absl::StripAsciiWhitespace(lines.back()));
}

// Finds each module as `import` would, without running it: importlib's finders (so PYTHONPATH,
// .pth files and editable installs count), a dotted name part by part under its parent's path
// (find_spec of `a.b` would import `a`; one already loaded at start, like os.path, counts),
// torch's compiled core beside it, and the version from the installed distribution. Prints the
// Python version, then "module version" per module (no version for the standard library's).
constexpr char kLocateModules[] = R"(import sys, importlib.util, importlib.machinery
def find(name):
    if name in sys.modules:
        return
    parts = name.split('.')
    spec = importlib.util.find_spec(parts[0])
    for i in range(1, len(parts)):
        if spec is None or not spec.submodule_search_locations:
            spec = None
            break
        spec = importlib.machinery.PathFinder.find_spec('.'.join(parts[:i + 1]),
                                                         list(spec.submodule_search_locations))
    if spec is None:
        raise ModuleNotFoundError('No module named %r' % name)
try:
    from importlib.metadata import version
except ImportError:
    version = None
def version_of(name):
    try:
        return version(name.split('.')[0])
    except Exception:
        return ''
print('%d.%d.%d' % sys.version_info[:3])
for name in sys.argv[1:]:
    find(name)
    if name == 'torch':
        find('torch._C')
    v = version_of(name) if version else ''
    print(name + (' ' + v if v else ''))
)";

// The interpreter `python` (as found on PATH) imports `imports`, or with `import_them` false
// only finds them; the result names what it did and how long it took.
v1::CheckResult CheckPythonModules(const std::string& python, const std::vector<std::string>& imports,
                                   bool import_them, const EnvMap& env, const std::string& workdir,
                                   double timeout_s) {
  SpawnOptions options;
  if (import_them || imports.empty()) {
    std::string code = "import sys";
    for (const std::string& m : imports) absl::StrAppend(&code, "; import ", m);
    absl::StrAppend(&code, "; print('%d.%d.%d' % sys.version_info[:3])");
    options.argv = {python, "-c", code};
  } else {
    options.argv = {python, "-c", kLocateModules};
    options.argv.insert(options.argv.end(), imports.begin(), imports.end());
  }
  options.envp = ToEnvp(env);
  options.workdir = workdir;
  options.new_process_group = true;
  const Clock::time_point start = Clock::now();
  absl::StatusOr<CommandResult> ran = RunCommandWith(options, timeout_s);
  const double took = std::chrono::duration<double>(Clock::now() - start).count();
  const std::string modules = absl::StrJoin(imports, ", ");
  // The interpreter as it was found on PATH: the one the ranks will run.
  std::string what = python;
  if (!imports.empty()) {
    what = import_them ? absl::StrCat(python, " -c 'import ", modules, "'")
                       : absl::StrCat(python, " looking for ", modules, " (without importing)");
  }
  if (!ran.ok()) return Result("command", v1::CheckResult::FAILED, absl::StrCat(what, ": ", ran.status().message()));
  if (ran->exit_code != 0) {
    return Result("command", v1::CheckResult::FAILED,
                  absl::StrCat(what, " failed (exit ", ran->exit_code, "): ", LastLine(ran->err)));
  }
  std::vector<std::string> lines = absl::StrSplit(ran->out, '\n', absl::SkipWhitespace());
  const std::string python_version = lines.empty() ? "?" : lines[0];
  std::string did;
  if (!imports.empty() && import_them) did = ", import " + modules;
  if (!imports.empty() && !import_them) {
    did = absl::StrCat(", found ", absl::StrJoin(lines.begin() + std::min<size_t>(1, lines.size()),
                                                 lines.end(), ", "),
                       " (not imported)");
  }
  return Result("command", v1::CheckResult::PASSED,
                absl::StrFormat("%s: Python %s%s in %.2f s", python, python_version, did, took));
}

}  // namespace

absl::StatusOr<DiskFree> StatDiskFree(const std::string& path) {
  std::filesystem::path p = std::filesystem::absolute(path);
  std::error_code ec;
  while (!std::filesystem::exists(p, ec) && p.has_parent_path() && p != p.parent_path()) {
    p = p.parent_path();
  }
  struct statvfs vfs;
  if (::statvfs(p.c_str(), &vfs) != 0) {
    return absl::UnavailableError(absl::StrCat("statvfs ", p.string(), ": ", std::strerror(errno)));
  }
  return DiskFree{static_cast<int64_t>(vfs.f_bavail) * static_cast<int64_t>(vfs.f_frsize),
                  static_cast<int64_t>(vfs.f_blocks) * static_cast<int64_t>(vfs.f_frsize)};
}

std::string ProcessOwner(int pid) {
  struct stat st;
  if (::stat(absl::StrCat("/proc/", pid).c_str(), &st) != 0) return "unknown user";
  if (const passwd* pw = ::getpwuid(st.st_uid)) return pw->pw_name;
  return absl::StrCat("uid ", st.st_uid);
}

v1::CheckResult CheckGpus(int required, int seen, const std::string& source) {
  const std::string figure = absl::StrCat("sees ", seen, " GPU(s) (", source, ")");
  if (required <= 0) return Result("gpus", v1::CheckResult::PASSED, figure + ", none required");
  if (seen < required) {
    return Result("gpus", v1::CheckResult::FAILED,
                  absl::StrCat(figure, ", the job needs ", required, " (gpus.per_node)"));
  }
  return Result("gpus", v1::CheckResult::PASSED, absl::StrCat(figure, ", needs ", required));
}

v1::CheckResult CheckGpuProcesses(const PreflightNode& node) {
  if (node.gpus_seen == 0) return Result("gpu processes", v1::CheckResult::SKIPPED, "no GPUs");
  if (!node.gpu_processes) {
    return Result("gpu processes", v1::CheckResult::SKIPPED,
                  absl::StrCat("cannot list GPU processes: ", node.gpu_processes_unavailable));
  }
  if (node.gpu_processes->empty()) {
    return Result("gpu processes", v1::CheckResult::PASSED, "no process on the GPUs");
  }
  std::vector<std::string> busy;
  for (const GpuProcess& p : *node.gpu_processes) {
    busy.push_back(absl::StrCat("GPU ", p.device, ": pid ", p.pid, " of ",
                                node.owner_of ? node.owner_of(p.pid) : ProcessOwner(p.pid), ", ",
                                GiB(static_cast<int64_t>(p.used_bytes))));
  }
  return Result("gpu processes", v1::CheckResult::FAILED,
                absl::StrCat("GPUs already in use: ", absl::StrJoin(busy, "; ")));
}

v1::CheckResult CheckDisk(const v1::PreflightPlan& plan, const PreflightNode& node) {
  if (plan.paths().empty()) return Result("disk", v1::CheckResult::SKIPPED, "no directory to check");
  std::vector<std::string> short_of;
  std::vector<std::string> figures;
  for (const v1::PathNeed& need : plan.paths()) {
    absl::StatusOr<DiskFree> free =
        node.disk_free ? node.disk_free(need.path()) : StatDiskFree(need.path());
    if (!free.ok()) {
      short_of.push_back(absl::StrCat(need.what(), " ", need.path(), ": ", free.status().message()));
      continue;
    }
    std::string figure = absl::StrCat(need.what(), " ", need.path(), ": ", GiB(free->free_bytes),
                                      " free");
    if (free->free_bytes < need.min_free_bytes()) {
      short_of.push_back(absl::StrCat(figure, ", needs ", GiB(need.min_free_bytes()),
                                      " (preflight.min_free)"));
    }
    figures.push_back(std::move(figure));
  }
  if (!short_of.empty()) {
    return Result("disk", v1::CheckResult::FAILED, absl::StrJoin(short_of, "; "));
  }
  return Result("disk", v1::CheckResult::PASSED, absl::StrJoin(figures, "; "));
}

v1::CheckResult CheckCommand(const v1::PreflightPlan& plan, const EnvMap& agent_env) {
  const v1::WorkerTemplate& worker = plan.worker();
  if (worker.argv().empty()) return Result("command", v1::CheckResult::SKIPPED, "no command");
  EnvMap env = agent_env;
  for (const auto& [k, v] : worker.env()) env[k] = v;
  const std::string& program = worker.argv(0);
  if (!worker.workdir().empty() && !std::filesystem::is_directory(worker.workdir())) {
    return Result("command", v1::CheckResult::FAILED,
                  absl::StrCat("working directory ", worker.workdir(), " does not exist here"));
  }
  const std::string found = FindProgram(program, env.count("PATH") ? env["PATH"] : "",
                                        worker.workdir());
  if (found.empty()) {
    return Result("command", v1::CheckResult::FAILED,
                  absl::StrCat(program, ": not found or not executable",
                               program.find('/') == std::string::npos ? " on PATH" : ""));
  }
  if (!IsPythonProgram(program)) {
    return Result("command", v1::CheckResult::PASSED, found);
  }
  // The interpreter is there; so must the script be, or every rank fails at once.
  const std::vector<std::string> argv(worker.argv().begin(), worker.argv().end());
  if (const std::string script = PythonScriptPath(argv, worker.workdir()); !script.empty()) {
    std::error_code ec;
    if (!std::filesystem::is_regular_file(script, ec)) {
      return Result("command", v1::CheckResult::FAILED,
                    absl::StrCat(found, " ", script, ": ",
                                 std::filesystem::exists(script, ec) ? "not a regular file"
                                                                     : "no such file"));
    }
  }
  std::vector<std::string> imports(plan.python_imports().begin(), plan.python_imports().end());
  if (plan.python_imports_auto()) {
    imports = PythonImportsFor({worker.argv().begin(), worker.argv().end()}, worker.workdir());
  }
  return CheckPythonModules(found, imports, plan.import_python_modules(), env, worker.workdir(),
                            std::max(1, plan.timeout_ms()) / 1000.0);
}

v1::CheckResult CheckPorts(const std::vector<int>& ports) {
  if (ports.empty()) return Result("ports", v1::CheckResult::SKIPPED, "no fixed port");
  std::vector<std::string> taken;
  for (int port : ports) {
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return Result("ports", v1::CheckResult::FAILED, absl::StrCat("socket: ", std::strerror(errno)));
    // As the job's store binds it: a port held only by TIME_WAIT connections is free.
    const int one = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_ANY);
    addr.sin_port = htons(static_cast<uint16_t>(port));
    if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
      taken.push_back(absl::StrCat("port ", port, " is in use (", std::strerror(errno), ")"));
    }
    ::close(fd);
  }
  if (!taken.empty()) return Result("ports", v1::CheckResult::FAILED, absl::StrJoin(taken, "; "));
  return Result("ports", v1::CheckResult::PASSED, absl::StrCat("free: ", absl::StrJoin(ports, ", ")));
}

v1::CheckResult CheckClock(int64_t launcher_ms, int64_t asked_ms, int64_t answered_ms,
                           int max_offset_ms) {
  if (max_offset_ms <= 0 || launcher_ms <= 0) {
    return Result("clock", v1::CheckResult::SKIPPED, "not checked");
  }
  // The launcher read its clock somewhere within the round trip: assume its middle.
  const double offset_ms = static_cast<double>(launcher_ms) - (asked_ms + answered_ms) / 2.0;
  const double slack_ms = std::max<int64_t>(0, answered_ms - asked_ms) / 2.0;
  const std::string figure =
      absl::StrFormat("%+.3f s against the launcher (+/- %.3f s)", -offset_ms / 1000, slack_ms / 1000);
  if (std::fabs(offset_ms) - slack_ms > max_offset_ms) {
    return Result("clock", v1::CheckResult::FAILED,
                  absl::StrFormat("%s, more than %.3f s (preflight.clock_offset)", figure,
                                  max_offset_ms / 1000.0));
  }
  return Result("clock", v1::CheckResult::PASSED, figure);
}

std::vector<v1::CheckResult> RunPreflight(const v1::PreflightPlan& plan, PreflightNode node) {
  if (!plan.enabled()) return {};
  // The command check starts a program (Python's import of torch takes seconds): beside the rest.
  v1::CheckResult command;
  std::thread slow([&] { command = Timed([&] { return CheckCommand(plan, node.env); }); });
  std::vector<v1::CheckResult> out;
  out.push_back(Timed([&] { return CheckGpus(plan.gpus(), node.gpus_seen, node.gpu_source); }));
  out.push_back(Timed([&] { return CheckGpuProcesses(node); }));
  out.push_back(Timed([&] { return CheckDisk(plan, node); }));
  out.push_back(Timed([&] { return CheckPorts({plan.ports().begin(), plan.ports().end()}); }));
  out.push_back(Timed([&] {
    return CheckClock(plan.launcher_time_ms(), node.asked_ms, node.answered_ms,
                      plan.max_clock_offset_ms());
  }));
  slow.join();
  out.insert(out.begin() + 3, std::move(command));
  return out;
}

}  // namespace dlaunch
