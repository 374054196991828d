#include "agent/workers/warm_start.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <arpa/inet.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "common/python_command.h"

namespace dlaunch {
namespace {

// How long the agent waits for the warm process's answer; a fork of a process with torch
// imported takes milliseconds. Past it the rank starts cold, and a rank the warm process did
// fork is an adopted orphan the round's sweep ends.
constexpr int kAnswerSeconds = 5;

// The index of the script in a Python command, as python_command.cc reads it.
size_t ScriptIndex(const std::vector<std::string>& argv) {
  for (size_t i = 1; i < argv.size(); ++i) {
    if (argv[i] == "-W" || argv[i] == "-X") {
      ++i;
      continue;
    }
    if (!argv[i].empty() && argv[i][0] != '-') return i;
  }
  return argv.size();
}

class Fd {
 public:
  explicit Fd(int fd = -1) : fd_(fd) {}
  ~Fd() { reset(); }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }
  int release() { return std::exchange(fd_, -1); }
  void reset(int fd = -1) {
    if (fd_ >= 0) close(fd_);
    fd_ = fd;
  }

 private:
  int fd_;
};

absl::Status Errno(const std::string& what) {
  return absl::InternalError(absl::StrCat(what, ": ", strerror(errno)));
}

// Sends the length-prefixed `body` with `fds` attached to its first byte.
absl::Status SendRequest(int sock, const std::string& body, const std::vector<int>& fds) {
  const uint32_t n = htonl(static_cast<uint32_t>(body.size()));
  std::string msg(reinterpret_cast<const char*>(&n), 4);
  msg += body;
  iovec iov{msg.data(), msg.size()};
  std::vector<char> control(CMSG_SPACE(sizeof(int) * fds.size()));
  msghdr hdr{};
  hdr.msg_iov = &iov;
  hdr.msg_iovlen = 1;
  hdr.msg_control = control.data();
  hdr.msg_controllen = control.size();
  cmsghdr* c = CMSG_FIRSTHDR(&hdr);
  c->cmsg_level = SOL_SOCKET;
  c->cmsg_type = SCM_RIGHTS;
  c->cmsg_len = CMSG_LEN(sizeof(int) * fds.size());
  std::memcpy(CMSG_DATA(c), fds.data(), sizeof(int) * fds.size());
  ssize_t sent;
  do sent = sendmsg(sock, &hdr, MSG_NOSIGNAL); while (sent < 0 && errno == EINTR);
  if (sent < 0) return Errno("send to the warm process");
  size_t off = static_cast<size_t>(sent);
  while (off < msg.size()) {
    ssize_t w = send(sock, msg.data() + off, msg.size() - off, MSG_NOSIGNAL);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return Errno("send to the warm process");
    off += static_cast<size_t>(w);
  }
  return absl::OkStatus();
}

// The warm process's one-line answer: the rank's pid.
absl::StatusOr<pid_t> ReadAnswer(int sock) {
  std::string line;
  char buf[256];
  while (line.find('\n') == std::string::npos) {
    ssize_t r = read(sock, buf, sizeof(buf));
    if (r < 0 && errno == EINTR) continue;
    if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      return absl::DeadlineExceededError("the warm process did not answer in time");
    }
    if (r < 0) return Errno("read from the warm process");
    if (r == 0) return absl::UnavailableError("the warm process closed the connection");
    line.append(buf, static_cast<size_t>(r));
  }
  absl::string_view answer(line.data(), line.find('\n'));
  int pid = 0;
  if (absl::ConsumePrefix(&answer, "pid ") && absl::SimpleAtoi(answer, &pid) && pid > 0) return pid;
  absl::ConsumePrefix(&answer, "error ");
  return absl::FailedPreconditionError(absl::StrCat("the warm process refused: ", answer));
}

}  // namespace

bool IsDlaunchWorker(const std::vector<std::string>& argv) {
  return !argv.empty() && std::filesystem::path(argv[0]).filename() == "dlaunch-worker";
}

bool WarmStartable(const std::vector<std::string>& argv) {
  return IsDlaunchWorker(argv) || !PythonScriptPath(argv, "").empty();
}

std::vector<std::string> ZygoteCommand(const std::vector<std::string>& argv,
                                       const std::string& socket_path) {
  if (IsDlaunchWorker(argv)) {  // worker/warm_serve.h
    std::vector<std::string> cmd = {argv[0], "--warm-serve", socket_path};
    cmd.insert(cmd.end(), argv.begin() + 1, argv.end());
    return cmd;
  }
  const size_t script = ScriptIndex(argv);
  std::vector<std::string> cmd(argv.begin(), argv.begin() + static_cast<long>(script));
  cmd.insert(cmd.end(), {"-c", kZygoteProgram, socket_path, argv[script]});
  return cmd;
}

std::string ZygoteRequestBody(const SpawnOptions& options, pid_t agent) {
  std::vector<std::string> fields = {
      "dlaunch-zygote-1",
      options.workdir,
      absl::StrJoin(options.cpu_affinity, ","),
      std::to_string(agent),
      std::to_string(options.parent_death_signal),
      options.traceable_by_parent ? "1" : "0",
      std::to_string(options.argv.size())};
  fields.insert(fields.end(), options.argv.begin(), options.argv.end());
  fields.insert(fields.end(), options.envp.begin(), options.envp.end());
  std::string body;
  for (const std::string& f : fields) {
    body += f;
    body += '\0';
  }
  return body;
}

absl::StatusOr<std::unique_ptr<Zygote>> Zygote::Start(const SpawnOptions& worker) {
  if (!WarmStartable(worker.argv)) {
    return absl::InvalidArgumentError("the worker command is neither a Python script nor dlaunch-worker");
  }
  // Only this user may enter: whoever can connect can have a process run as the job.
  char dir[] = "/tmp/dlaunch-warm-XXXXXX";
  if (mkdtemp(dir) == nullptr) return Errno("mkdtemp /tmp/dlaunch-warm-XXXXXX");
  std::unique_ptr<Zygote> z(new Zygote);
  z->dir_ = dir;
  z->socket_ = absl::StrCat(dir, "/zygote.sock");
  SpawnOptions options = worker;
  options.argv = ZygoteCommand(worker.argv, z->socket_);
  options.capture_output = false;  // its few lines go to the agent's own output
  options.cgroup_procs_fd = -1;    // the workers' cgroup is killed at each round's end
  options.cpu_affinity.clear();
  options.traceable_by_parent = false;
  auto pending = ForkProcess(options);
  if (!pending.ok()) return pending.status();
  auto spawned = AwaitExec(*std::move(pending));
  if (!spawned.ok()) return spawned.status();
  z->pid_ = spawned->pid;
  return z;
}

Zygote::~Zygote() {
  if (alive()) {
    kill(-pid_, SIGKILL);
    kill(pid_, SIGKILL);
    int status;
    WaitChild(pid_, &status, 0);
  }
  std::error_code ec;
  std::filesystem::remove_all(dir_, ec);
}

bool Zygote::alive() {
  if (pid_ < 0) return false;
  int status = 0;
  if (WaitChild(pid_, &status, WNOHANG) != pid_) return true;
  exit_text_ = DescribeWaitStatus(status);
  refused_ = WIFEXITED(status);
  pid_ = -1;
  return false;
}

absl::StatusOr<PendingProcess> Zygote::TryFork(const SpawnOptions& options) {
  if (!alive()) return absl::UnavailableError(absl::StrCat("the warm process ended (", exit_text_, ")"));
  Fd sock(socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (sock.get() < 0) return Errno("socket");
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strncpy(addr.sun_path, socket_.c_str(), sizeof(addr.sun_path) - 1);
  if (connect(sock.get(), reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    return absl::UnavailableError("the warm process is not warm yet");
  }
  timeval limit{kAnswerSeconds, 0};
  setsockopt(sock.get(), SOL_SOCKET, SO_RCVTIMEO, &limit, sizeof(limit));
  setsockopt(sock.get(), SOL_SOCKET, SO_SNDTIMEO, &limit, sizeof(limit));
  int out[2], err[2];
  if (pipe2(out, O_CLOEXEC) != 0) return Errno("pipe");
  Fd out_r(out[0]), out_w(out[1]);
  if (pipe2(err, O_CLOEXEC) != 0) return Errno("pipe");
  Fd err_r(err[0]), err_w(err[1]);
  std::vector<int> fds = {out_w.get(), err_w.get()};
  if (options.cgroup_procs_fd >= 0) fds.push_back(options.cgroup_procs_fd);
  if (absl::Status st = SendRequest(sock.get(), ZygoteRequestBody(options, getpid()), fds);
      !st.ok()) {
    return st;
  }
  out_w.reset();
  err_w.reset();
  auto pid = ReadAnswer(sock.get());
  if (!pid.ok()) return pid.status();
  // The warm process answers once the rank is this process's child, and the loop thread (this
  // one) reaps nothing before it is recorded: no exit of it can be mistaken for an orphan's.
  RecordSpawnedChild(*pid);
  PendingProcess p;
  p.pid = *pid;
  p.stdout_fd = out_r.release();
  p.stderr_fd = err_r.release();
  p.program = options.argv.empty() ? "" : options.argv[0];
  p.workdir = options.workdir;
  return p;
}

absl::StatusOr<PendingProcess> WarmProcessLauncher::Fork(const SpawnOptions& options) {
  Zygote* z = zygote_ ? zygote_() : nullptr;
  std::string why = "no warm process";
  if (z != nullptr && options.capture_output && WarmStartable(options.argv)) {
    auto warm = z->TryFork(options);
    if (warm.ok()) {
      paths_[warm->pid] = "warm";
      return warm;
    }
    why = std::string(warm.status().message());
  }
  auto cold = SystemProcessLauncher::Fork(options);
  if (cold.ok()) paths_[cold->pid] = absl::StrCat("cold: ", why);
  return cold;
}

absl::StatusOr<SpawnedProcess> WarmProcessLauncher::AwaitExec(PendingProcess pending) {
  if (pending.exec_status_fd >= 0) return SystemProcessLauncher::AwaitExec(std::move(pending));
  for (int fd : {pending.stdout_fd, pending.stderr_fd}) {
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
  }
  return SpawnedProcess{pending.pid, pending.stdout_fd, pending.stderr_fd};
}

std::string WarmProcessLauncher::TakePath(pid_t pid) {
  auto it = paths_.find(pid);
  if (it == paths_.end()) return "";
  std::string path = std::move(it->second);
  paths_.erase(it);
  return path;
}

}  // namespace dlaunch
