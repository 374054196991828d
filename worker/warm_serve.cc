#include "worker/warm_serve.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/child_setup.h"
#include "worker/idx_reader.h"
#include "worker/worker_options.h"

namespace dlaunch::worker {
namespace {

constexpr std::string_view kMagic = "dlaunch-zygote-1";

absl::Status Errno(const std::string& what) {
  return absl::InternalError(absl::StrCat(what, ": ", strerror(errno)));
}

void Log(const std::string& msg) {
  std::fprintf(stderr, "dlaunch-worker warm %d: %s\n", getpid(), msg.c_str());
  std::fflush(stderr);
}

int CountThreads() {
  DIR* d = opendir("/proc/self/task");
  if (d == nullptr) return -1;
  int n = 0;
  while (dirent* e = readdir(d)) n += e->d_name[0] != '.';
  closedir(d);
  return n;
}

// A pool that a fork handler stops (OpenBLAS's) is safe to fork: a throwaway fork runs those
// handlers. What still runs after it is not.
absl::Status CheckOneThread() {
  if (CountThreads() > 1) {
    pid_t pid = fork();
    if (pid == 0) _exit(0);
    if (pid > 0) waitpid(pid, nullptr, 0);
  }
  const int n = CountThreads();
  if (n == 1) return absl::OkStatus();
  return absl::FailedPreconditionError(
      absl::StrCat(n, " threads before serving: a fork copies only one"));
}

// The Fashion-MNIST files the trainer will read, in datasets.cc's order (.gz first).
void PreloadFashionMnist(const std::string& dir) {
  for (const char* base : {"train-images-idx3-ubyte", "train-labels-idx1-ubyte",
                           "t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"}) {
    for (const std::string& path :
         {absl::StrCat(dir, "/", base, ".gz"), absl::StrCat(dir, "/", base)}) {
      struct stat st;
      if (::stat(path.c_str(), &st) != 0) continue;
      // A failure is left to the rank, which reads the file itself and reports it as usual.
      if (absl::Status s = PreloadIdxFile(path); !s.ok()) Log(std::string(s.message()));
      break;
    }
  }
}

bool ReadFull(int fd, char* buf, size_t n) {
  while (n > 0) {
    ssize_t r = read(fd, buf, n);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    buf += r;
    n -= static_cast<size_t>(r);
  }
  return true;
}

// Receives one request: the 4-byte length with the descriptors attached, then the body.
absl::StatusOr<WarmRequest> ReceiveRequest(int conn) {
  char head[4];
  char control[CMSG_SPACE(3 * sizeof(int))];
  iovec iov{head, sizeof(head)};
  msghdr hdr{};
  hdr.msg_iov = &iov;
  hdr.msg_iovlen = 1;
  hdr.msg_control = control;
  hdr.msg_controllen = sizeof(control);
  ssize_t got = recvmsg(conn, &hdr, MSG_CMSG_CLOEXEC);
  if (got <= 0) return absl::InvalidArgumentError("short request");
  std::vector<int> fds;
  for (cmsghdr* c = CMSG_FIRSTHDR(&hdr); c != nullptr; c = CMSG_NXTHDR(&hdr, c)) {
    if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
    const size_t n = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
    for (size_t i = 0; i < n; ++i) {
      int fd;
      std::memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
      fds.push_back(fd);
    }
  }
  auto fail = [&](absl::Status s) {
    for (int fd : fds) close(fd);
    return s;
  };
  if (!ReadFull(conn, head + got, sizeof(head) - static_cast<size_t>(got))) {
    return fail(absl::InvalidArgumentError("short request"));
  }
  uint32_t size;
  std::memcpy(&size, head, 4);
  size = ntohl(size);
  if (size > (64u << 20)) return fail(absl::InvalidArgumentError("request too large"));
  std::string body(size, '\0');
  if (!ReadFull(conn, body.data(), size)) return fail(absl::InvalidArgumentError("short request"));
  absl::StatusOr<WarmRequest> req = ParseWarmRequest(body);
  if (!req.ok()) return fail(req.status());
  if (fds.size() < 2) return fail(absl::InvalidArgumentError("no stdout/stderr descriptors"));
  req->fds = std::move(fds);
  return req;
}

void ReportAndExit(int ready, const std::string& why) {
  const std::string msg = "e" + why;
  (void)!write(ready, msg.data(), msg.size());
  _exit(127);
}

// In the rank (the grandchild): what common/process.cc's RunChild does before its exec.
void BecomeRank(const WarmRequest& req, int ready) {
  setpgid(0, 0);
  if (req.fds.size() > 2) (void)!write(req.fds[2], "0", 1);  // refused: as RunChild, ignored
  const timespec nap{0, 100000};
  for (int i = 0; getppid() != req.agent; ++i) {  // the middle process is exiting
    if (i > 50000) _exit(127);
    nanosleep(&nap, nullptr);
  }
  if (!TieChildToParent(req.agent, req.death_signal, req.traceable)) _exit(127);
  const int devnull = open("/dev/null", O_RDONLY);
  dup2(devnull, 0);
  dup2(req.fds[0], 1);
  dup2(req.fds[1], 2);
  close(devnull);
  for (int fd : req.fds) close(fd);
  if (!req.cpus.empty()) {
    cpu_set_t set;
    CPU_ZERO(&set);
    for (int c : req.cpus) CPU_SET(c, &set);
    if (sched_setaffinity(0, sizeof(set), &set) != 0) {
      ReportAndExit(ready, absl::StrCat("sched_setaffinity: ", strerror(errno)));
    }
  }
  if (!req.cwd.empty() && chdir(req.cwd.c_str()) != 0) {
    ReportAndExit(ready, absl::StrCat(strerror(errno), ": ", req.cwd));
  }
  clearenv();
  for (const std::string& kv : req.env) {
    const size_t eq = kv.find('=');
    if (eq != 0 && eq != std::string::npos) {
      setenv(kv.substr(0, eq).c_str(), kv.c_str() + eq + 1, 1);
    }
  }
  (void)!write(ready, "k", 1);
  close(ready);
}

// Forks the rank twice. Returns 0 in the rank; in the server the rank's pid, or why not.
absl::StatusOr<pid_t> ForkRank(const WarmRequest& req, int listener, int conn) {
  std::fflush(stdout);
  std::fflush(stderr);
  int pipefd[2];
  if (pipe2(pipefd, O_CLOEXEC) != 0) return Errno("pipe");
  const pid_t middle = fork();
  if (middle < 0) return Errno("fork");
  if (middle == 0) {
    const pid_t rank = fork();
    if (rank == 0) {
      close(listener);
      close(conn);
      close(pipefd[0]);
      BecomeRank(req, pipefd[1]);
      return 0;
    }
    (void)!write(pipefd[1], &rank, sizeof(rank));
    _exit(0);
  }
  close(pipefd[1]);
  for (int fd : req.fds) close(fd);
  waitpid(middle, nullptr, 0);
  pid_t pid = -1;
  const bool have_pid = ReadFull(pipefd[0], reinterpret_cast<char*>(&pid), sizeof(pid));
  std::string status;
  char buf[256];
  for (ssize_t r; (r = read(pipefd[0], buf, sizeof(buf))) > 0;) {
    status.append(buf, static_cast<size_t>(r));
  }
  close(pipefd[0]);
  if (!have_pid || pid <= 0) return absl::InternalError("the rank's fork failed");
  if (status.empty() || status[0] != 'k') {
    return absl::InternalError(status.size() > 1 ? status.substr(1)
                                                 : "the rank ended while it was set up");
  }
  return pid;
}

void Answer(int conn, const std::string& line) {
  (void)!send(conn, line.data(), line.size(), MSG_NOSIGNAL);
}

// Answers requests until a rank is forked; returns its request in the rank.
absl::StatusOr<WarmRequest> Serve(const std::string& path) {
  const int listener = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (listener < 0) return Errno("socket");
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path.size() >= sizeof(addr.sun_path)) {
    return absl::InvalidArgumentError("socket path too long");
  }
  std::strncpy(addr.sun_path, path.c_str(), sizeof(addr.sun_path) - 1);
  if (bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      listen(listener, 16) != 0) {
    return Errno(absl::StrCat("listen on ", path));
  }
  Log(absl::StrCat("warm: serving ", path));
  while (true) {
    const int conn = accept4(listener, nullptr, nullptr, SOCK_CLOEXEC);
    if (conn < 0 && (errno == EINTR || errno == ECONNABORTED)) continue;
    if (conn < 0) return Errno("accept");  // it ends; the agent's ranks start cold
    ucred cred{};
    socklen_t len = sizeof(cred);
    // Only the agent that started this process may ask.
    if (getsockopt(conn, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0 || cred.pid != getppid()) {
      close(conn);
      continue;
    }
    absl::StatusOr<WarmRequest> req = ReceiveRequest(conn);
    if (!req.ok()) {
      Log(absl::StrCat("bad request: ", req.status().message()));
      close(conn);
      continue;
    }
    absl::StatusOr<pid_t> pid = ForkRank(*req, listener, conn);
    if (pid.ok() && *pid == 0) return req;
    Answer(conn, pid.ok() ? absl::StrCat("pid ", *pid, "\n")
                          : absl::StrCat("error ", pid.status().message(), "\n"));
    close(conn);
  }
}

}  // namespace

absl::StatusOr<WarmRequest> ParseWarmRequest(std::string_view body) {
  std::vector<std::string> f =
      absl::StrSplit(absl::string_view(body.data(), body.size()), absl::ByChar(0));
  if (f.empty() || f[0] != kMagic) {
    return absl::InvalidArgumentError("not a dlaunch-zygote-1 request");
  }
  if (f.size() < 7) return absl::InvalidArgumentError("a request has 7 fields before argv");
  WarmRequest req;
  req.cwd = f[1];
  for (absl::string_view c : absl::StrSplit(f[2], ',', absl::SkipEmpty())) {
    int cpu;
    if (!absl::SimpleAtoi(c, &cpu) || cpu < 0) return absl::InvalidArgumentError("bad cpu list");
    req.cpus.push_back(cpu);
  }
  int argc = 0;
  if (!absl::SimpleAtoi(f[3], &req.agent) || req.agent <= 0 ||
      !absl::SimpleAtoi(f[4], &req.death_signal) || !absl::SimpleAtoi(f[6], &argc) || argc < 1 ||
      static_cast<size_t>(argc) > f.size() - 7) {
    return absl::InvalidArgumentError("bad agent pid, death signal or argc");
  }
  req.traceable = f[5] == "1";
  req.argv.assign(f.begin() + 7, f.begin() + 7 + argc);
  for (size_t i = 7 + static_cast<size_t>(argc); i < f.size(); ++i) {
    if (!f[i].empty()) req.env.push_back(f[i]);
  }
  return req;
}

bool IsWarmServe(const std::vector<std::string>& args) {
  return args.size() >= 2 && args[1] == kWarmServeFlag;
}

absl::StatusOr<std::vector<std::string>> RunWarmServer(const std::vector<std::string>& args) {
  if (args.size() < 3) return absl::InvalidArgumentError("--warm-serve needs a socket path");
  std::vector<std::string> job = {args[0]};
  job.insert(job.end(), args.begin() + 3, args.end());
  absl::StatusOr<WorkerOptions> options = ParseWorkerOptions(job);
  if (!options.ok()) return options.status();
  if (options->dataset == "fashion-mnist") PreloadFashionMnist(options->data_dir);
  if (absl::Status s = CheckOneThread(); !s.ok()) return s;
  absl::StatusOr<WarmRequest> req = Serve(args[2]);
  if (!req.ok()) return req.status();
  return req->argv;
}

}  // namespace dlaunch::worker
