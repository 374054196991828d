#include "launcher/cli/watch_command.h"

#include <unistd.h>

#include <chrono>
#include <functional>
#include <iostream>
#include <memory>
#include <optional>

#include <grpcpp/grpcpp.h>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "common/exit_codes.h"
#include "common/file_io.h"
#include "dlaunch/control.grpc.pb.h"
#include "launcher/cli/cli_support.h"
#include "launcher/cli/job_commands.h"
#include "launcher/jobdir/job_record.h"
#include "launcher/jobdir/journal.h"
#include "launcher/job/live_table.h"
#include "launcher/run/live_terminal.h"
#include "proto/control_credentials.h"
#include "proto/grpc_status.h"

namespace dlaunch {
namespace {

constexpr char kWatchUsage[] =
    "usage: dlaunch watch JOB\n"
    "  Shows the live table of a running job (redrawn in place on a terminal, plain tables\n"
    "  every 5 s otherwise) until it ends, then its summary. Works from any host that sees the\n"
    "  job directory and reaches the launcher; needs the job token in the directory.\n"
    "  JOB is a job id (under $DLAUNCH_JOB_ROOT, default runs/, else any job you started:\n"
    "  see `dlaunch status --help`) or a job directory.\n";
// Not on a terminal, a table is printed this often.
constexpr std::chrono::seconds kPlainPeriod(5);
// `dlaunch status` waits this long for its one snapshot.
constexpr std::chrono::seconds kStatusDeadline(5);
// Plain tables are laid out for a screen this size (no row is cut, up to kMaxNodeRows nodes).
constexpr int kPlainWidth = 160;
constexpr int kPlainHeight = 2 * (kMaxNodeRows + 4);

struct JobEndpoint {
  std::string address;
  JobCredentials creds;  // the token, and the launcher's certificate to pin
  std::string token_path;
};

absl::StatusOr<JobEndpoint> ReadJobEndpoint(const std::string& job_dir) {
  absl::StatusOr<std::string> info_text = ReadFile(job_dir + "/launcher.json");
  if (!info_text.ok()) {
    return absl::FailedPreconditionError(
        absl::StrCat("the job's launcher has not started (no ", job_dir, "/launcher.json)"));
  }
  absl::StatusOr<LauncherInfo> info = ParseLauncherInfo(*info_text);
  if (!info.ok() || info->address.empty()) {
    return absl::FailedPreconditionError(
        absl::StrCat(job_dir, "/launcher.json names no control endpoint"));
  }
  JobEndpoint endpoint{info->address, {}, job_dir + "/token"};
  absl::StatusOr<std::string> token = ReadFile(endpoint.token_path);
  if (!token.ok()) {
    return absl::PermissionDeniedError(
        absl::StrCat("cannot read the job token ", endpoint.token_path, " (", token.status().message(),
                     "); only the job's owner can watch it"));
  }
  absl::StatusOr<JobCredentials> creds = ParseJobCredentials(*token, endpoint.token_path);
  if (!creds.ok()) return absl::PermissionDeniedError(creds.status().message());
  endpoint.creds = *std::move(creds);
  return endpoint;
}

// Reads the job's Watch stream, handing each snapshot to `on_snapshot` until it returns false
// or the stream ends. OK when the stream ended OK or `on_snapshot` stopped it.
absl::Status StreamSnapshots(const JobEndpoint& endpoint,
                             const std::function<bool(const v1::JobSnapshot&)>& on_snapshot,
                             std::chrono::seconds deadline = std::chrono::seconds(0)) {
  auto stub = v1::Control::NewStub(ControlChannel(endpoint.address, endpoint.creds));
  grpc::ClientContext ctx;
  ctx.AddMetadata(kTokenMetadataKey, endpoint.creds.token);
  if (deadline.count() > 0) ctx.set_deadline(std::chrono::system_clock::now() + deadline);
  std::unique_ptr<grpc::ClientReader<v1::JobSnapshot>> reader =
      stub->Watch(&ctx, v1::WatchRequest());
  v1::JobSnapshot snapshot;
  bool stopped = false;
  while (reader->Read(&snapshot)) {
    if (!on_snapshot(snapshot)) {
      stopped = true;
      ctx.TryCancel();
      break;
    }
  }
  grpc::Status status = reader->Finish();
  if (stopped || status.ok()) return absl::OkStatus();
  if (status.error_code() == grpc::StatusCode::UNAUTHENTICATED) {
    return absl::UnauthenticatedError(
        absl::StrCat("the job's launcher at ", endpoint.address, " refused the token in ",
                     endpoint.token_path, ": ", status.error_message()));
  }
  return absl::UnavailableError(absl::StrCat("cannot watch the job's launcher at ",
                                             endpoint.address, ": ", status.error_message()));
}

// The job directory says the job is over: summary.json, or job_finished as the last event.
bool EndedPerDirectory(const std::string& job_dir) {
  if (ReadJobSummary(job_dir).ok()) return true;
  absl::StatusOr<EventJournal> journal = ReadEventJournal(job_dir);
  return journal.ok() && !journal->events.empty() && journal->events.back().has_job_finished();
}

// What `dlaunch status` prints of an ended job.
int ShowSummary(const std::string& job_dir) {
  std::cout.flush();
  return RunStatusCommand({job_dir});
}

}  // namespace

int RunWatchCommand(const std::vector<std::string>& args) {
  if (WantsHelp(args)) {
    std::cout << kWatchUsage;
    return kExitOk;
  }
  std::string job_dir;
  int rc = kExitOk;
  if (!ParseJobCommand(args, {}, kWatchUsage, &job_dir, &rc)) return rc;
  if (EndedPerDirectory(job_dir)) return ShowSummary(job_dir);
  absl::StatusOr<JobEndpoint> endpoint = ReadJobEndpoint(job_dir);
  if (!endpoint.ok()) {
    std::cerr << "dlaunch: " << endpoint.status().message() << "\n";
    return kExitLaunchError;
  }
  std::unique_ptr<LiveTerminal> terminal;
  if (isatty(STDOUT_FILENO)) terminal = std::make_unique<LiveTerminal>(STDOUT_FILENO, STDERR_FILENO);
  bool ended = false;
  std::vector<std::string> last_table;
  std::optional<std::chrono::steady_clock::time_point> last_plain;
  absl::Status st = StreamSnapshots(*endpoint, [&](const v1::JobSnapshot& s) {
    ended = s.ended();
    if (terminal) {
      last_table = RenderLiveTable(s, terminal->width(), terminal->height());
      terminal->Draw(last_table);
      return true;
    }
    auto now = std::chrono::steady_clock::now();
    if (ended || !last_plain || now - *last_plain >= kPlainPeriod) {
      last_plain = now;
      if (last_table.size() > 0) std::cout << "\n";
      last_table = RenderLiveTable(s, kPlainWidth, kPlainHeight);
      for (const std::string& line : last_table) std::cout << line << "\n";
      std::cout.flush();
    }
    return true;
  });
  if (terminal) {
    terminal->Close();  // the last table stays on the screen, above the summary
    for (const std::string& line : last_table) std::cout << line << "\n";
  }
  if (st.code() == absl::StatusCode::kUnauthenticated) {
    std::cerr << "dlaunch: " << st.message() << "\n";
    return kExitLaunchError;
  }
  // The launcher closes its endpoint right after the last snapshot, which can then be lost:
  // the job directory says whether the job is over.
  if (ended || EndedPerDirectory(job_dir)) {
    std::cout << "\n";
    return ShowSummary(job_dir);
  }
  std::cerr << "dlaunch: " << (st.ok() ? "the launcher ended the stream early" : st.message())
            << "\n";
  return kExitLaunchError;
}

void PrintLiveStatus(const std::string& job_dir, std::ostream& out) {
  absl::StatusOr<std::string> info_text = ReadFile(job_dir + "/launcher.json");
  if (!info_text.ok()) return;
  absl::StatusOr<LauncherInfo> info = ParseLauncherInfo(*info_text);
  if (!info.ok() || info->address.empty()) return;
  absl::StatusOr<JobEndpoint> endpoint = ReadJobEndpoint(job_dir);
  std::vector<std::string> table;
  absl::Status st = endpoint.status();
  if (st.ok()) {
    st = StreamSnapshots(
        *endpoint,
        [&](const v1::JobSnapshot& s) {
          table = RenderLiveTable(s, kPlainWidth, kPlainHeight);
          return false;
        },
        kStatusDeadline);
  }
  if (!st.ok() || table.empty()) {
    out << "live:       none (" << (st.ok() ? "no snapshot" : st.message()) << ")\n";
    return;
  }
  out << "live, from the launcher at " << endpoint->address << ":\n";
  for (const std::string& line : table) out << "  " << line << "\n";
}

}  // namespace dlaunch
