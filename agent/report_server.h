// ReportServer: the agent's Unix socket (DLAUNCH_REPORT_SOCKET) where workers send one JSON
// WorkerReport per line. Identifies the sender by SO_PEERCRED pid when it is a known worker,
// else trusts the report's own rank. Runs on the io_context's thread.
#pragma once

#include <sys/types.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

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
  // Handles every report already written: connections not yet accepted and bytes not yet
  // read. Called when the last worker has exited, so a report sent just before exiting is
  // not lost to the order in which the event loop sees the exit and the socket.
  void Sweep();
  const std::string& path() const { return path_; }

 private:
  class Connection;
  void Accept();
  void Track(const std::shared_ptr<Connection>& c);

  boost::asio::io_context& io_;
  RankOfPid rank_of_pid_;
  OnReport on_report_;
  OnBadLine on_bad_line_;
  std::string path_;
  std::unique_ptr<boost::asio::local::stream_protocol::acceptor> acceptor_;
  std::vector<std::weak_ptr<Connection>> connections_;
};

// Parses one report line (protobuf JSON mapping; unknown fields ignored).
absl::Status ParseReportLine(const std::string& line, v1::WorkerReport* out);

}  // namespace dlaunch
