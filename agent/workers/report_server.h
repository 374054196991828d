// ReportServer: the agent's Unix socket (DLAUNCH_REPORT_SOCKET) where workers send one JSON
// WorkerReport per line. Identifies the sender by SO_PEERCRED pid when it is a known worker,
// else trusts the report's own rank. Runs on the io_context's thread.
#pragma once

#include <sys/types.h>

#include <functional>
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

  ReportServer(boost::asio::io_context& io, RankOfPid rank_of_pid, OnReport on_report,
               OnBadLine on_bad_line);
  ~ReportServer();

  absl::Status Listen(const std::string& path);
  // Accepts every connection already waiting. With open_connections() and the closed
  // callback, the agent waits for the reports of exited workers to be read before it
  // finishes: the exit and a report sent just before it race on the event loop.
  void AcceptPending();
  int open_connections() const { return open_; }
  void set_on_connection_closed(std::function<void()> f) { on_closed_ = std::move(f); }
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

}  // namespace dlaunch
