#include "launcher/submit/scheduler_client.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <sstream>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace dlaunch {
namespace {

std::string Pick(const char* env, const std::string& profile_value, const char* fallback) {
  if (env != nullptr && env[0] != '\0') return env;
  if (!profile_value.empty()) return profile_value;
  return fallback;
}

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> out;
  for (absl::string_view l : absl::StrSplit(text, '\n')) {
    std::string s(absl::StripAsciiWhitespace(l));
    if (!s.empty()) out.push_back(s);
  }
  return out;
}

std::string PbsStateName(const std::string& code) {
  if (code == "Q" || code == "W" || code == "T") return "queued";
  if (code == "H" || code == "S" || code == "U") return "held";
  if (code == "R" || code == "B") return "running";
  if (code == "E") return "exiting";
  if (code == "F" || code == "X") return "finished";
  return "unknown";
}

std::string SlurmStateName(const std::string& s) {
  if (s == "PENDING" || s == "CONFIGURING" || s == "REQUEUED" || s == "RESIZING") {
    return "queued";
  }
  if (s == "SUSPENDED" || s == "REQUEUE_HOLD" || s == "STOPPED") return "held";
  if (s == "RUNNING") return "running";
  if (s == "COMPLETING" || s == "SIGNALING" || s == "STAGE_OUT") return "exiting";
  if (s == "COMPLETED") return "finished";
  if (s == "CANCELLED") return "cancelled";
  if (s == "FAILED" || s == "TIMEOUT" || s == "NODE_FAIL" || s == "OUT_OF_MEMORY" ||
      s == "BOOT_FAIL" || s == "DEADLINE" || s == "PREEMPTED") {
    return "failed";
  }
  return "unknown";
}

std::string CommandLine(const std::vector<std::string>& argv) { return absl::StrJoin(argv, " "); }

}  // namespace

SchedulerCommands ResolveSchedulerCommands(
    const std::string& scheduler, const SiteProfile* profile,
    const std::function<const char*(const char*)>& getenv) {
  SiteProfile empty;
  const SiteProfile& p = profile != nullptr ? *profile : empty;
  SchedulerCommands c;
  if (scheduler == "slurm") {
    c.submit = Pick(getenv("DLAUNCH_SBATCH"), p.submit_command, "sbatch");
    c.status = Pick(getenv("DLAUNCH_SQUEUE"), p.status_command, "squeue");
    c.cancel = Pick(getenv("DLAUNCH_SCANCEL"), p.cancel_command, "scancel");
    c.scontrol = Pick(getenv("DLAUNCH_SCONTROL"), "", "scontrol");
  } else if (scheduler == "pbs" || scheduler == "cobalt") {
    c.submit = Pick(getenv("DLAUNCH_QSUB"), p.submit_command, "qsub");
    c.status = Pick(getenv("DLAUNCH_QSTAT"), p.status_command, "qstat");
    c.cancel = Pick(getenv("DLAUNCH_QDEL"), p.cancel_command, "qdel");
  }
  return c;
}

absl::StatusOr<std::string> ParseSubmitOutput(const std::string& scheduler,
                                              const std::string& output) {
  std::vector<std::string> lines = Lines(output);
  auto none = [&]() {
    return absl::UnavailableError(absl::StrCat("could not find a job id in the ", scheduler,
                                               " submit output: \"", absl::CHexEscape(output),
                                               "\""));
  };
  if (lines.empty()) return none();
  if (scheduler == "pbs") {
    // The whole line (id.server) is what qstat and qdel accept.
    const std::string& id = lines[0];
    if (!absl::ascii_isdigit(static_cast<unsigned char>(id[0])) ||
        id.find_first_of(" \t") != std::string::npos) {
      return none();
    }
    return id;
  }
  if (scheduler == "cobalt") {
    for (auto it = lines.rbegin(); it != lines.rend(); ++it) {
      int64_t n = 0;
      if (absl::SimpleAtoi(*it, &n) && n > 0) return *it;
    }
    return none();
  }
  if (scheduler == "slurm") {
    std::string id = lines.back().substr(0, lines.back().find(';'));
    int64_t n = 0;
    // Array and het jobs print "123_4" / "123+0"; keep the text as Slurm printed it.
    std::string digits = id.substr(0, id.find_first_not_of("0123456789"));
    if (digits.empty() || !absl::SimpleAtoi(digits, &n)) return none();
    return id;
  }
  return absl::InvalidArgumentError(absl::StrCat("unknown scheduler '", scheduler, "'"));
}

SchedulerJobStatus ParsePbsQstat(const std::string& output) {
  SchedulerJobStatus s;
  s.state = "unknown";
  for (const auto& line : Lines(output)) {
    std::vector<std::string> kv = absl::StrSplit(line, absl::MaxSplits('=', 1));
    if (kv.size() != 2) continue;
    std::string key(absl::StripAsciiWhitespace(kv[0]));
    std::string value(absl::StripAsciiWhitespace(kv[1]));
    if (key == "job_state") {
      s.raw_state = value;
      s.state = PbsStateName(value);
    } else if (key == "Exit_status") {
      s.exit_status = value;
    }
  }
  if (s.state == "finished" && !s.exit_status.empty() && s.exit_status != "0") {
    s.state = "failed";
  }
  return s;
}

SchedulerJobStatus ParseCobaltQstat(const std::string& output, const std::string& job_id) {
  SchedulerJobStatus s;
  s.state = "not_in_queue";
  int state_col = -1;
  for (const auto& line : Lines(output)) {
    std::vector<std::string> cols = absl::StrSplit(line, ' ', absl::SkipWhitespace());
    if (state_col < 0) {
      for (size_t i = 0; i < cols.size(); ++i) {
        if (cols[i] == "State") state_col = static_cast<int>(i);
      }
      continue;
    }
    if (cols.empty() || cols[0] != job_id || static_cast<int>(cols.size()) <= state_col) continue;
    s.raw_state = cols[state_col];
    const std::string& st = s.raw_state;
    if (st == "queued" || st == "starting") {
      s.state = "queued";
    } else if (absl::EndsWith(st, "hold")) {
      s.state = "held";
    } else if (st == "running") {
      s.state = "running";
    } else if (st == "exiting" || st == "killing") {
      s.state = "exiting";
    } else {
      s.state = "unknown";
    }
  }
  return s;
}

SchedulerJobStatus ParseSqueue(const std::string& output) {
  SchedulerJobStatus s;
  std::vector<std::string> lines = Lines(output);
  if (lines.empty()) {
    s.state = "not_in_queue";
    return s;
  }
  s.raw_state = lines[0];
  s.state = SlurmStateName(lines[0]);
  return s;
}

SchedulerJobStatus ParseScontrolShowJob(const std::string& output) {
  SchedulerJobStatus s;
  s.state = "not_in_queue";
  for (absl::string_view word : absl::StrSplit(output, absl::ByAnyChar(" \t\n"),
                                               absl::SkipEmpty())) {
    if (absl::ConsumePrefix(&word, "JobState=")) {
      s.raw_state = std::string(word);
      s.state = SlurmStateName(s.raw_state);
    } else if (absl::ConsumePrefix(&word, "ExitCode=")) {
      s.exit_status = std::string(word);
    }
  }
  return s;
}

CommandRunner RealCommandRunner(double timeout_s) {
  return [timeout_s](const std::vector<std::string>& argv) -> absl::StatusOr<CommandResult> {
    if (argv.empty()) return absl::InvalidArgumentError("empty command");
    int out_pipe[2], err_pipe[2], exec_pipe[2];
    if (::pipe2(out_pipe, O_CLOEXEC) != 0 || ::pipe2(err_pipe, O_CLOEXEC) != 0 ||
        ::pipe2(exec_pipe, O_CLOEXEC) != 0) {
      return absl::InternalError(absl::StrCat("pipe: ", std::strerror(errno)));
    }
    std::vector<char*> cargv;
    for (const auto& a : argv) cargv.push_back(const_cast<char*>(a.c_str()));
    cargv.push_back(nullptr);
    pid_t pid = ::fork();
    if (pid < 0) return absl::InternalError(absl::StrCat("fork: ", std::strerror(errno)));
    if (pid == 0) {
      int devnull = ::open("/dev/null", O_RDONLY);
      ::dup2(devnull, 0);
      ::dup2(out_pipe[1], 1);
      ::dup2(err_pipe[1], 2);
      ::execvp(cargv[0], cargv.data());
      int e = errno;
      (void)!::write(exec_pipe[1], &e, sizeof(e));
      ::_exit(127);
    }
    ::close(out_pipe[1]);
    ::close(err_pipe[1]);
    ::close(exec_pipe[1]);
    CommandResult result;
    auto deadline = std::chrono::steady_clock::now() +
                    std::chrono::milliseconds(static_cast<int64_t>(timeout_s * 1000));
    bool timed_out = false;
    struct pollfd fds[2] = {{out_pipe[0], POLLIN, 0}, {err_pipe[0], POLLIN, 0}};
    int open_fds = 2;
    while (open_fds > 0) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                      deadline - std::chrono::steady_clock::now()).count();
      if (left <= 0) {
        timed_out = true;
        ::kill(pid, SIGKILL);
        break;
      }
      int n = ::poll(fds, 2, static_cast<int>(left));
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) break;
      for (int i = 0; i < 2; ++i) {
        if (fds[i].fd < 0 || fds[i].revents == 0) continue;
        char buf[4096];
        ssize_t r = ::read(fds[i].fd, buf, sizeof(buf));
        if (r > 0) {
          (i == 0 ? result.out : result.err).append(buf, static_cast<size_t>(r));
        } else if (r == 0 || (r < 0 && errno != EINTR && errno != EAGAIN)) {
          ::close(fds[i].fd);
          fds[i].fd = -1;
          --open_fds;
        }
      }
    }
    for (auto& f : fds) {
      if (f.fd >= 0) ::close(f.fd);
    }
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    int exec_errno = 0;
    ssize_t got = ::read(exec_pipe[0], &exec_errno, sizeof(exec_errno));
    ::close(exec_pipe[0]);
    if (got == static_cast<ssize_t>(sizeof(exec_errno))) {
      return absl::UnavailableError(
          absl::StrCat("cannot run ", argv[0], ": ", std::strerror(exec_errno)));
    }
    if (timed_out) {
      return absl::DeadlineExceededError(
          absl::StrCat(CommandLine(argv), " did not finish within ", timeout_s, " s"));
    }
    result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    return result;
  };
}

SchedulerClient::SchedulerClient(std::string scheduler, SchedulerCommands commands,
                                 CommandRunner runner)
    : scheduler_(std::move(scheduler)), commands_(std::move(commands)), runner_(std::move(runner)) {}

absl::StatusOr<CommandResult> SchedulerClient::Run(const std::vector<std::string>& argv) {
  absl::StatusOr<CommandResult> r = runner_(argv);
  if (!r.ok()) return absl::UnavailableError(r.status().message());
  return r;
}

absl::StatusOr<std::string> SchedulerClient::Submit(const std::string& script_path,
                                                    const std::string& job_dir) {
  if (scheduler_ == "local") {
    // Double fork: the script is reparented away from us (no zombie to mistake for a live job)
    // and leads its own session, so cancel can signal the whole group.
    int id_pipe[2];
    if (::pipe2(id_pipe, O_CLOEXEC) != 0) return absl::InternalError("pipe failed");
    std::string out_path = absl::StrCat(job_dir, "/scheduler.out");
    pid_t child = ::fork();
    if (child < 0) return absl::InternalError(absl::StrCat("fork: ", std::strerror(errno)));
    if (child == 0) {
      pid_t grandchild = ::fork();
      if (grandchild != 0) {
        (void)!::write(id_pipe[1], &grandchild, sizeof(grandchild));
        ::_exit(grandchild > 0 ? 0 : 1);
      }
      ::setsid();
      int in = ::open("/dev/null", O_RDONLY);
      int out = ::open(out_path.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
      if (in < 0 || out < 0) ::_exit(126);
      ::dup2(in, 0);
      ::dup2(out, 1);
      ::dup2(out, 2);
      ::execl("/bin/bash", "bash", script_path.c_str(), static_cast<char*>(nullptr));
      ::_exit(127);
    }
    ::close(id_pipe[1]);
    pid_t started = 0;
    ssize_t got = ::read(id_pipe[0], &started, sizeof(started));
    ::close(id_pipe[0]);
    int status = 0;
    while (::waitpid(child, &status, 0) < 0 && errno == EINTR) {
    }
    if (got != static_cast<ssize_t>(sizeof(started)) || started <= 0) {
      return absl::UnavailableError("could not start the job script in the background");
    }
    return std::to_string(started);
  }
  std::vector<std::string> argv = {commands_.submit};
  if (scheduler_ == "slurm") argv.push_back("--parsable");
  argv.push_back(script_path);
  absl::StatusOr<CommandResult> r = Run(argv);
  if (!r.ok()) return r.status();
  if (r->exit_code != 0) {
    return absl::UnavailableError(absl::StrCat(CommandLine(argv), " failed (exit ", r->exit_code,
                                               "): ", absl::StripAsciiWhitespace(r->err),
                                               absl::StripAsciiWhitespace(r->out)));
  }
  return ParseSubmitOutput(scheduler_, r->out);
}

absl::StatusOr<SchedulerJobStatus> SchedulerClient::Query(const std::string& id,
                                                          const std::string& job_dir) {
  if (scheduler_ == "local") {
    SchedulerJobStatus s;
    s.state = "not_in_queue";
    int pid = 0;
    if (!absl::SimpleAtoi(id, &pid) || pid <= 0) return s;
    std::ifstream stat_file(absl::StrCat("/proc/", pid, "/stat"));
    std::string stat_text;
    std::getline(stat_file, stat_text);
    size_t paren = stat_text.rfind(')');
    if (paren == std::string::npos || paren + 2 >= stat_text.size()) return s;
    char state = stat_text[paren + 2];
    std::ifstream cmd_file(absl::StrCat("/proc/", pid, "/cmdline"));
    std::stringstream cmd;
    cmd << cmd_file.rdbuf();
    if (state == 'Z' || cmd.str().find(job_dir) == std::string::npos) return s;
    s.state = "running";
    s.raw_state = std::string(1, state);
    return s;
  }
  if (scheduler_ == "pbs") {
    absl::StatusOr<CommandResult> r = Run({commands_.status, "-fx", id});
    if (!r.ok()) return r.status();
    if (r->exit_code != 0) {
      SchedulerJobStatus s;
      s.state = "not_in_queue";
      return s;
    }
    return ParsePbsQstat(r->out);
  }
  if (scheduler_ == "cobalt") {
    absl::StatusOr<CommandResult> r = Run({commands_.status, id});
    if (!r.ok()) return r.status();
    return ParseCobaltQstat(r->out, id);
  }
  if (scheduler_ == "slurm") {
    absl::StatusOr<CommandResult> r = Run({commands_.status, "-h", "-j", id, "-o", "%T"});
    if (!r.ok()) return r.status();
    if (r->exit_code == 0) {
      SchedulerJobStatus s = ParseSqueue(r->out);
      if (s.state != "not_in_queue") return s;
    }
    // squeue forgets finished jobs after MinJobAge; scontrol may still know how they ended.
    absl::StatusOr<CommandResult> c = Run({commands_.scontrol, "show", "job", "-o", id});
    if (!c.ok() || c->exit_code != 0) {
      SchedulerJobStatus s;
      s.state = "not_in_queue";
      return s;
    }
    return ParseScontrolShowJob(c->out);
  }
  return absl::InvalidArgumentError(absl::StrCat("unknown scheduler '", scheduler_, "'"));
}

absl::Status SchedulerClient::Cancel(const std::string& id) {
  if (scheduler_ == "local") {
    int pid = 0;
    if (!absl::SimpleAtoi(id, &pid) || pid <= 1) {
      return absl::InvalidArgumentError(absl::StrCat("bad local job id '", id, "'"));
    }
    if (::kill(-pid, SIGTERM) != 0 && ::kill(pid, SIGTERM) != 0) {
      return absl::NotFoundError(absl::StrCat("process ", pid, " is not running"));
    }
    return absl::OkStatus();
  }
  std::vector<std::string> argv = {commands_.cancel, id};
  absl::StatusOr<CommandResult> r = Run(argv);
  if (!r.ok()) return r.status();
  if (r->exit_code != 0) {
    return absl::UnavailableError(absl::StrCat(CommandLine(argv), " failed (exit ", r->exit_code,
                                               "): ", absl::StripAsciiWhitespace(r->err)));
  }
  return absl::OkStatus();
}

}  // namespace dlaunch
