#include "common/child_supervisor.h"

#include <algorithm>

#include <errno.h>
#include <string.h>
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include "absl/strings/str_cat.h"
#include "common/file_io.h"

namespace dlaunch {
namespace {

template <typename Real, typename Interface>
std::unique_ptr<Interface> OwnIfMissing(Interface* given, boost::asio::io_context& io) {
  if (given != nullptr) return nullptr;
  return std::make_unique<Real>(io);
}

}  // namespace

ChildSupervisor::ChildSupervisor(boost::asio::io_context& io, std::string log_dir,
                                 int tail_lines, Callbacks callbacks, std::string log_prefix,
                                 Seams seams)
    : io_(io),
      log_dir_(std::move(log_dir)),
      log_prefix_(std::move(log_prefix)),
      tail_lines_(tail_lines),
      callbacks_(std::move(callbacks)),
      own_launcher_(OwnIfMissing<SystemProcessLauncher>(seams.launcher, io)),
      own_clock_(OwnIfMissing<AsioTimerClock>(seams.clock, io)),
      launcher_(seams.launcher ? *seams.launcher : *own_launcher_),
      clock_(seams.clock ? *seams.clock : *own_clock_) {
  launcher_.WatchExits([this] { Reap(); });
}

ChildSupervisor::~ChildSupervisor() {
  if (kill_timer_) clock_.Cancel(*kill_timer_);
  for (auto& [pid, w] : workers_) {
    if (!w->reaped) Signal(pid, SIGKILL);
    if (w->linger) clock_.Cancel(*w->linger);
    if (w->log_fd >= 0) close(w->log_fd);
  }
}

absl::StatusOr<int> ChildSupervisor::OpenLog(int rank) const {
  if (log_dir_.empty()) return -1;
  std::string path = absl::StrCat(log_dir_, "/", log_prefix_, rank, ".log");
  int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
  if (fd < 0) return ErrnoStatus(errno, "cannot open", path);
  return fd;
}

absl::Status ChildSupervisor::StartCommands(const std::vector<std::vector<std::string>>& commands) {
  std::vector<StartRequest> requests;
  for (size_t i = 0; i < commands.size(); ++i) {
    StartRequest r;
    r.rank = r.local_rank = static_cast<int>(i);
    r.options.argv = commands[i];
    requests.push_back(std::move(r));
  }
  for (const auto& pid : StartAll(std::move(requests))) {
    if (!pid.ok()) {
      KillAll();
      return absl::FailedPreconditionError(
          absl::StrCat("cannot start the node launcher: ", pid.status().message()));
    }
  }
  return absl::OkStatus();
}

std::vector<absl::StatusOr<pid_t>> ChildSupervisor::StartAll(std::vector<StartRequest> requests) {
  std::vector<std::unique_ptr<Worker>> workers(requests.size());
  std::vector<absl::StatusOr<PendingProcess>> pending;
  for (size_t i = 0; i < requests.size(); ++i) {
    absl::StatusOr<int> log_fd = OpenLog(requests[i].rank);
    if (!log_fd.ok()) {
      pending.push_back(log_fd.status());
      continue;
    }
    auto w = std::make_unique<Worker>();
    w->rank = requests[i].rank;
    w->local_rank = requests[i].local_rank;
    w->log_fd = *log_fd;
    requests[i].options.capture_output = true;
    requests[i].options.new_process_group = true;
    pending.push_back(launcher_.Fork(requests[i].options));
    workers[i] = std::move(w);
  }
  std::vector<absl::StatusOr<pid_t>> results;
  for (size_t i = 0; i < requests.size(); ++i) {
    absl::StatusOr<SpawnedProcess> spawned =
        pending[i].ok() ? launcher_.AwaitExec(std::move(*pending[i])) : pending[i].status();
    if (!spawned.ok()) {
      if (workers[i] && workers[i]->log_fd >= 0) close(workers[i]->log_fd);
      results.push_back(spawned.status());
      continue;
    }
    Adopt(std::move(workers[i]), *spawned);
    results.push_back(spawned->pid);
  }
  // A child that exited before the exit watch was armed is still found by the next Reap.
  boost::asio::post(io_, [this] { Reap(); });
  return results;
}

void ChildSupervisor::Adopt(std::unique_ptr<Worker> w, const SpawnedProcess& spawned) {
  w->pid = spawned.pid;
  w->out.fd = std::make_unique<boost::asio::posix::stream_descriptor>(io_, spawned.stdout_fd);
  w->err.fd = std::make_unique<boost::asio::posix::stream_descriptor>(io_, spawned.stderr_fd);
  w->err.is_stderr = true;
  Worker& ref = *w;
  workers_[ref.pid] = std::move(w);
  ReadMore(ref.pid, ref.out);
  ReadMore(ref.pid, ref.err);
}

void ChildSupervisor::ReadMore(pid_t pid, Stream& s) {
  if (!s.fd || !s.fd->is_open()) return;
  s.fd->async_read_some(boost::asio::buffer(s.buf), [this, pid, &s](
                                                        const boost::system::error_code& ec,
                                                        size_t n) {
    auto it = workers_.find(pid);
    if (it == workers_.end()) return;  // already finished; `s` is gone
    if (ec) {
      if (ec == boost::asio::error::operation_aborted) return;
      Consume(*it->second, s, nullptr, 0, /*flush=*/true);
      s.fd->close();
      MaybeComplete(pid, false);
      return;
    }
    Consume(*it->second, s, s.buf.data(), n, false);
    ReadMore(pid, s);
  });
}

void ChildSupervisor::WriteLog(Worker& w, const char* data, size_t n) {
  if (w.log_fd < 0 || n == 0) return;
  const int64_t room = std::max<int64_t>(0, log_limit_ - w.log_bytes);
  const size_t kept = static_cast<size_t>(std::min<int64_t>(room, static_cast<int64_t>(n)));
  size_t done = 0;
  while (done < kept) {
    ssize_t n_written = write(w.log_fd, data + done, kept - done);
    if (n_written < 0 && errno == EINTR) continue;
    if (n_written <= 0) {
      if (w.log_errno == 0) w.log_errno = n_written < 0 ? errno : ENOSPC;
      w.unwritten_bytes += static_cast<int64_t>(kept - done);
      break;
    }
    done += static_cast<size_t>(n_written);
  }
  if (done > 0) w.log_mid_line = data[done - 1] != '\n';
  w.log_bytes += static_cast<int64_t>(kept);
  w.dropped_bytes += static_cast<int64_t>(n - kept);
}

void ChildSupervisor::Consume(Worker& w, Stream& s, const char* data, size_t n, bool flush) {
  WriteLog(w, data, n);
  s.partial.append(data, n);
  std::vector<std::string> lines;
  size_t start = 0, nl;
  while ((nl = s.partial.find('\n', start)) != std::string::npos) {
    lines.emplace_back(s.partial, start, nl - start);
    start = nl + 1;
  }
  while (s.partial.size() - start > kMaxLineBytes) {
    lines.emplace_back(s.partial, start, kMaxLineBytes);
    start += kMaxLineBytes;
  }
  s.partial.erase(0, start);
  if (flush && !s.partial.empty()) {
    WriteLog(w, "\n", 1);
    lines.push_back(std::move(s.partial));
    s.partial.clear();
  }
  for (const auto& l : lines) {
    w.tail.push_back(l);
    if (static_cast<int>(w.tail.size()) > tail_lines_) w.tail.pop_front();
  }
  if (!lines.empty() && callbacks_.on_output) callbacks_.on_output(w.rank, s.is_stderr, std::move(lines));
}

void ChildSupervisor::Drain(Worker& w, Stream& s) {
  if (!s.fd || !s.fd->is_open()) return;
  char buf[8192];
  ssize_t n;
  while ((n = read(s.fd->native_handle(), buf, sizeof(buf))) > 0) Consume(w, s, buf, n, false);
  Consume(w, s, nullptr, 0, true);
  s.fd->cancel();
  s.fd->close();
}

void ChildSupervisor::Reap() {
  for (auto& [pid, w] : workers_) {
    if (w->reaped) continue;
    std::optional<int> status = launcher_.TryReap(pid);
    if (!status) continue;
    w->reaped = true;
    w->wait_status = *status;
    // The leader is gone; anything it left in its group (helpers it forked) goes too, which
    // also closes the pipes they inherited.
    launcher_.SignalGroup(pid, SIGKILL);
    w->linger = clock_.RunAfter(kOutputLinger, [this, pid = pid] { MaybeComplete(pid, true); });
    boost::asio::post(io_, [this, pid = pid] { MaybeComplete(pid, false); });
  }
}

void ChildSupervisor::MaybeComplete(pid_t pid, bool force) {
  auto it = workers_.find(pid);
  if (it == workers_.end() || !it->second->reaped) return;
  Worker& ref = *it->second;
  bool open = (ref.out.fd && ref.out.fd->is_open()) || (ref.err.fd && ref.err.fd->is_open());
  if (open && !force) return;
  std::unique_ptr<Worker> w = std::move(it->second);
  workers_.erase(it);
  Drain(*w, w->out);
  Drain(*w, w->err);
  if (w->linger) clock_.Cancel(*w->linger);
  if (w->log_fd >= 0 && w->dropped_bytes > 0) {
    // On a line of its own, even when the cap fell inside one.
    const std::string note = absl::StrCat(w->log_mid_line ? "\n" : "",
                                          "[dlaunch] this log keeps the first ", log_limit_,
                                          " bytes of output; ", w->dropped_bytes,
                                          " more bytes were not kept\n");
    (void)!write(w->log_fd, note.data(), note.size());
  }
  if (w->unwritten_bytes > 0) {
    // The log could not take it (a full disk): said where it can still be seen, as the rank's
    // last line of output (live view, failure tail), and tried in the log once more.
    const std::string note = absl::StrCat("[dlaunch] ", w->unwritten_bytes,
                                          " bytes of this rank's output could not be written to "
                                          "its log: ",
                                          strerror(w->log_errno));
    const std::string line = note + "\n";
    (void)!write(w->log_fd, line.data(), line.size());
    w->tail.push_back(note);
    if (callbacks_.on_output) callbacks_.on_output(w->rank, true, {note});
  }
  if (w->log_fd >= 0) close(w->log_fd);
  ChildExit e;
  e.rank = w->rank;
  e.local_rank = w->local_rank;
  e.pid = pid;
  e.wait_status = w->wait_status;
  e.stopped = w->stopping;
  e.tail.assign(w->tail.begin(), w->tail.end());
  // Pending async operations hold references into `w`; let them complete (cancelled) first.
  boost::asio::post(io_, [w = std::move(w)] {});
  if (workers_.empty()) {
    if (kill_timer_) clock_.Cancel(*kill_timer_);
    kill_timer_.reset();
    stop_.reset();  // the next children's stop is a new one
  }
  if (callbacks_.on_exit) callbacks_.on_exit(e);
}

void ChildSupervisor::StopAll(std::chrono::milliseconds grace) {
  StopWhere([](int) { return true; }, grace);
}

void ChildSupervisor::StopWhere(const std::function<bool(int local_rank)>& pick,
                                std::chrono::milliseconds grace) {
  bool any = false;
  for (auto& [pid, w] : workers_) {
    if (!pick(w->local_rank)) continue;
    w->stopping = true;
    any = true;
  }
  if (!any) return;
  const SteadyTime now = clock_.Now();
  if (!stop_) {
    stop_.emplace(now, grace);
  } else {
    stop_->KillBy(now + grace);
  }
  Escalate();
}

void ChildSupervisor::Escalate() {
  if (kill_timer_) clock_.Cancel(*kill_timer_);
  kill_timer_.reset();
  std::vector<pid_t> left;
  for (const auto& [pid, w] : workers_) {
    if (w->stopping && !w->reaped) left.push_back(pid);
  }
  const EscalationStep step = stop_->Look(left, clock_.Now());
  for (pid_t pid : step.term) {
    Signal(pid, SIGTERM);
    // A stopped rank (SIGSTOP, or a debugger's stop) holds SIGTERM pending until it runs again;
    // without this it would sit out the whole grace and take the SIGKILL.
    Signal(pid, SIGCONT);
  }
  for (pid_t pid : step.kill) Signal(pid, SIGKILL);
  if (!step.next) {
    stop_.reset();  // none left to stop: a later stop is a new one
    return;
  }
  // Exits come by SIGCHLD (Reap), so the only look left to make is the deadline's.
  const SteadyTime now = clock_.Now();
  if (now >= stop_->kill_at()) return;
  kill_timer_ = clock_.RunAfter(
      std::chrono::ceil<std::chrono::milliseconds>(stop_->kill_at() - now), [this] {
        kill_timer_.reset();
        Escalate();
      });
}

void ChildSupervisor::Signal(pid_t pid, int sig) {
  launcher_.SignalGroup(pid, sig);
  // The child itself too, if it moved to another group (setpgid) and so missed that.
  launcher_.SignalChild(pid, sig);
}

void ChildSupervisor::KillAll() { StopAll(std::chrono::milliseconds(0)); }

std::optional<pid_t> ChildSupervisor::PidOfLocalRank(int local_rank) const {
  for (const auto& [pid, w] : workers_) {
    if (w->local_rank == local_rank && !w->reaped) return pid;
  }
  return std::nullopt;
}

void ChildSupervisor::SetRank(pid_t pid, int rank) {
  if (auto it = workers_.find(pid); it != workers_.end()) it->second->rank = rank;
}

void ChildSupervisor::Kill(pid_t pid) {
  auto it = workers_.find(pid);
  if (it == workers_.end()) return;
  it->second->stopping = true;
  if (!it->second->reaped) Signal(pid, SIGKILL);
}

}  // namespace dlaunch
