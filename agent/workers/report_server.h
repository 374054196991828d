// ReportServer: the agent's Unix socket (DLAUNCH_REPORT_SOCKET) where workers send one JSON
// WorkerReport per line. Identifies the sender by SO_PEERCRED pid when it is a known worker,
// else trusts the report's own rank. Runs on the io_context's thread.
//
// With in-process restart the socket also carries the restart's lines both ways
// (docs/restarts.md, "In-process restart"): a line with a "restart" key is one of them
// (v1::RestartLine), handed to OnRestartLine with the sender's pid, and Send writes a line to
// the connection of a pid.
#pragma once

#include <sys/types.h>

#include <functional>
#include <map>
#include <memory>
#include <string>

#include <boost/asio.hpp>

#include "absl/status/status.h"
#include "dlaunch/report.pb.h"

namespace dlaunch {

class ReportServer {
 public:
  // `rank_of_pid` maps a worker pid to its global rank (-1 when unknown).
  using RankOfPid = std::function<int(pid_t)>;
  using OnReport = std::function<void(const v1::WorkerReport&)>;
  using OnBadLine = std::function<void(int rank, const std::string& error)>;
  using OnRestartLine = std::function<void(pid_t pid, const v1::RestartLine& line)>;

  ReportServer(boost::asio::io_context& io, RankOfPid rank_of_pid, OnReport on_report,
               OnBadLine on_bad_line);
  ~ReportServer();

  absl::Status Listen(const std::string& path);
  // Accepts every connection already waiting. With open_connections() and the closed
  // callback, the agent waits for the reports of exited workers to be read before it
  // finishes: the exit and a report sent just before it race on the event loop.
  void AcceptPending();
  int open_connections() const { return open_; }
  // Those of the worker `pid`.
  int open_connections_of(pid_t pid) const {
    auto it = open_by_pid_.find(pid);
    return it == open_by_pid_.end() ? 0 : it->second;
  }
  void set_on_connection_closed(std::function<void()> f) { on_closed_ = std::move(f); }
  void set_on_restart_line(OnRestartLine f) { on_restart_ = std::move(f); }
  // Writes `line` and a newline to the connection of the worker `pid` (the newest one it
  // opened); false when it has none open.
  bool Send(pid_t pid, const std::string& line);
  const std::string& path() const { return path_; }

 private:
  class Connection;
  void Accept();
  void Adopt(boost::asio::local::stream_protocol::socket socket);

  boost::asio::io_context& io_;
  RankOfPid rank_of_pid_;
  OnReport on_report_;
  OnBadLine on_bad_line_;
  std::string path_;
  std::unique_ptr<boost::asio::local::stream_protocol::acceptor> acceptor_;
  std::function<void()> on_closed_;
  OnRestartLine on_restart_;
  // The connection each worker sent its restart lines on (Send writes there), and how many
  // each has open.
  std::map<pid_t, std::weak_ptr<Connection>> by_pid_;
  std::map<pid_t, int> open_by_pid_;
  int open_ = 0;
};

// A report line longer than this (without its newline) is refused and its connection closed:
// reports are a few hundred bytes, and a worker writing without newlines must not grow the
// agent's memory.
inline constexpr size_t kMaxReportLineBytes = 1 << 20;

// Parses one report line (protobuf JSON mapping; unknown fields ignored). A line's phase event
// (phase_name, phase_event "begin" or "end", t, phase_s: the Python package's phase()) becomes
// the one event of its phase_log; a malformed one is an error, as a malformed field is.
absl::Status ParseReportLine(const std::string& line, v1::WorkerReport* out);
// True when `line` has a "restart" key: one of the in-process restart's lines, not a report.
bool IsRestartLine(const std::string& line);
// Parses one of the in-process restart's lines from a worker (hello, left, ready, cannot).
absl::Status ParseRestartLine(const std::string& line, v1::RestartLine* out);

}  // namespace dlaunch
