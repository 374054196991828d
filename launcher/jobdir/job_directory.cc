#include "launcher/jobdir/job_directory.h"

#include <cerrno>
#include <filesystem>

#include "absl/strings/str_cat.h"
#include "common/file_io.h"
#include "common/json_line.h"
#include "launcher/jobdir/job_index.h"
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
  namespace fs = std::filesystem;
  std::error_code ec;
  // A link could send the token and logs anywhere its owner chose: refused, and so is a
  // directory that already holds a job's journal (it would be mixed with this job's).
  if (fs::is_symlink(fs::symlink_status(path, ec))) {
    return absl::FailedPreconditionError(absl::StrCat(
        "job directory ", path, " is a symbolic link (to ", fs::read_symlink(path, ec).string(),
        "); give the directory itself"));
  }
  if (fs::exists(path + "/events.jsonl", ec)) {
    return absl::AlreadyExistsError(absl::StrCat(
        "job directory ", path, " already holds a job's journal (events.jsonl); "
        "give a new --job-dir, nothing there was changed"));
  }
  fs::create_directories(path + "/logs", ec);
  if (ec) {
    return absl::Status(ErrnoToStatusCode(ec.value()),
                        absl::StrCat("cannot create job directory ", path, ": ", ec.message()));
  }
  // The job's token, logs and sockets are its user's alone.
  for (const std::string& dir : {path, path + "/logs"}) {
    fs::permissions(dir, fs::perms::owner_all, fs::perm_options::replace, ec);
  }
  JobDirectory dir(fs::absolute(path).lexically_normal().string());
  const std::string id = fs::path(dir.path()).filename().string();
  (void)JobIndex(JobIndex::DefaultRoot()).Record(id, dir.path());
  return dir;
}

absl::Status JobDirectory::WriteCredentials(const std::string& token,
                                          const ControlIdentity* tls) const {
  constexpr WriteOptions kOwnerOnly{0600, false};
  if (tls != nullptr) {
    absl::Status st = WriteFileAtomically(path_ + "/" + kControlCertFile, tls->cert_pem, kOwnerOnly);
    if (!st.ok()) return st;
  }
  return WriteFileAtomically(token_path(), FormatTokenFile(token, tls ? tls->fingerprint : ""),
                             kOwnerOnly);
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

absl::Status JobDirectory::WriteSummary(const v1::JobSummary& summary) const {
  absl::StatusOr<std::string> json = JobSummaryJson(summary);
  if (!json.ok()) return json.status();
  // Synced: `dlaunch logs --follow` and `status` rely on it as the job's last word.
  return WriteFileAtomically(path_ + "/summary.json", *json + "\n");
}

absl::Status JobDirectory::WriteKind(const std::string& kind) const {
  return WriteFileAtomically(path_ + "/" + kJobKindFile, kind + "\n", kStartupFile);
}

absl::Status JobJournal::Open(const JobDirectory& dir) {
  events_path_ = dir.path() + "/events.jsonl";
  metrics_path_ = dir.path() + "/metrics.jsonl";
  events_.open(events_path_, std::ios::app);
  if (!events_) return ErrnoStatus(errno, "cannot open", events_path_);
  metrics_.open(metrics_path_, std::ios::app);
  if (!metrics_) return ErrnoStatus(errno, "cannot open", metrics_path_);
  writer_ = std::thread([this] { WriteMetrics(); });
  return absl::OkStatus();
}

JobJournal::~JobJournal() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    closing_ = true;
  }
  wake_.notify_all();
  if (writer_.joinable()) writer_.join();
}

absl::Status JobJournal::AppendEvent(const v1::JobEvent& event) {
  absl::StatusOr<std::string> line = EventJournalLine(event);
  return line.ok() ? Append(events_, events_path_, *line) : line.status();
}

absl::Status JobJournal::AppendMetric(v1::MetricLine metric) {
  std::lock_guard<std::mutex> lock(mu_);
  if (pending_.size() >= kMaxPendingMetrics) {
    ++dropped_;
  } else {
    pending_.push_back(std::move(metric));
    if (pending_.size() == 1) wake_.notify_one();
  }
  return write_error_;
}

void JobJournal::FlushMetrics() {
  std::unique_lock<std::mutex> lock(mu_);
  drained_.wait(lock, [this] { return (pending_.empty() && !writing_) || !writer_.joinable(); });
}

int64_t JobJournal::dropped_metrics() const {
  std::lock_guard<std::mutex> lock(mu_);
  return dropped_;
}

void JobJournal::WriteMetrics() {
  std::vector<v1::MetricLine> batch;
  std::string text;
  for (;;) {
    {
      std::unique_lock<std::mutex> lock(mu_);
      writing_ = false;
      drained_.notify_all();
      wake_.wait(lock, [this] { return closing_ || !pending_.empty(); });
      if (pending_.empty()) return;  // closing, nothing left
      batch.swap(pending_);
      writing_ = true;
    }
    text.clear();
    absl::Status st;
    for (const v1::MetricLine& m : batch) {
      absl::StatusOr<std::string> line = MetricJournalLine(m);
      if (!line.ok()) {
        st = line.status();
        continue;
      }
      absl::StrAppend(&text, *line, "\n");
    }
    batch.clear();
    metrics_ << text << std::flush;
    if (!metrics_) st = absl::DataLossError(absl::StrCat("cannot append to ", metrics_path_));
    if (!st.ok()) {
      std::lock_guard<std::mutex> lock(mu_);
      write_error_ = st;
    }
  }
}

}  // namespace dlaunch
