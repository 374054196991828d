#include "launcher/jobdir/job_directory.h"

#include <cerrno>
#include <filesystem>

#include "absl/strings/str_cat.h"
#include "common/file_io.h"
#include "common/json_line.h"
#include "launcher/jobdir/journal.h"

namespace dlaunch {
namespace {

absl::Status Append(std::ofstream& out, const std::string& path, const std::string& line) {
  out << line << "\n" << std::flush;
  if (!out) return absl::DataLossError(absl::StrCat("cannot append to ", path));
  return absl::OkStatus();
}

// The files written at start-up matter only while the job runs, which a machine crash ends
// anyway: they skip fsync, which would slow `dlaunch run`'s start on a busy disk.
constexpr WriteOptions kStartupFile{0644, false};

}  // namespace

absl::StatusOr<JobDirectory> JobDirectory::Create(const std::string& path) {
  std::error_code ec;
  std::filesystem::create_directories(path + "/logs", ec);
  if (ec) {
    return absl::Status(ErrnoToStatusCode(ec.value()),
                        absl::StrCat("cannot create job directory ", path, ": ", ec.message()));
  }
  return JobDirectory(std::filesystem::absolute(path).lexically_normal().string());
}

absl::Status JobDirectory::WriteToken(const std::string& token) const {
  return WriteFileAtomically(token_path(), token + "\n", WriteOptions{0600, false});
}

absl::Status JobDirectory::WriteJobYamlIfAbsent(const std::string& yaml) const {
  std::string file = path_ + "/job.yaml";
  if (std::filesystem::exists(file)) return absl::OkStatus();
  return WriteFileAtomically(file, yaml, kStartupFile);
}

absl::Status JobDirectory::WriteHostfile(const std::vector<std::string>& hosts) const {
  std::string text;
  for (const auto& h : hosts) absl::StrAppend(&text, h, "\n");
  return WriteFileAtomically(hostfile_path(), text, kStartupFile);
}

absl::Status JobDirectory::WriteLauncherInfo(const LauncherInfo& info) const {
  return WriteFileAtomically(path_ + "/launcher.json", JsonLine()
                                                           .Add("pid", info.pid)
                                                           .Add("host", info.host)
                                                           .Add("address", info.address)
                                                           .str() + "\n",
                             kStartupFile);
}

absl::Status JobDirectory::WriteSummary(const std::string& json) const {
  // Synced: `dlaunch logs --follow` and `status` rely on it as the job's last word.
  return WriteFileAtomically(path_ + "/summary.json", json + "\n");
}

absl::Status JobJournal::Open(const JobDirectory& dir) {
  events_path_ = dir.path() + "/events.jsonl";
  metrics_path_ = dir.path() + "/metrics.jsonl";
  events_.open(events_path_, std::ios::app);
  if (!events_) return ErrnoStatus(errno, "cannot open", events_path_);
  metrics_.open(metrics_path_, std::ios::app);
  if (!metrics_) return ErrnoStatus(errno, "cannot open", metrics_path_);
  return absl::OkStatus();
}

absl::Status JobJournal::AppendEvent(const v1::JobEvent& event) {
  absl::StatusOr<std::string> line = EventJournalLine(event);
  return line.ok() ? Append(events_, events_path_, *line) : line.status();
}

absl::Status JobJournal::AppendMetric(const v1::MetricLine& metric) {
  absl::StatusOr<std::string> line = MetricJournalLine(metric);
  return line.ok() ? Append(metrics_, metrics_path_, *line) : line.status();
}

}  // namespace dlaunch
