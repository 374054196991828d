#include "launcher/cli/trace_command.h"

#include <filesystem>
#include <iostream>

#include "common/exit_codes.h"
#include "common/file_io.h"
#include "launcher/cli/cli_support.h"
#include "launcher/jobdir/job_record.h"
#include "launcher/trace/goodput_view.h"
#include "launcher/trace/job_trace.h"
#include "launcher/trace/trace_summary.h"

namespace dlaunch {
namespace fs = std::filesystem;
namespace {

constexpr char kTraceUsage[] =
    "usage: dlaunch trace JOB [--rebuild]\n"
    "  Prints where the job's trace.json is (Chrome trace format: open it in\n"
    "  https://ui.perfetto.dev or chrome://tracing) and where time went per rank.\n"
    "  JOB is a job id (under $DLAUNCH_JOB_ROOT, default runs/, else any job you started:\n"
    "  see `dlaunch status --help`) or a job directory.\n"
    "  The trace is built from the job directory when it is missing or older than the\n"
    "  journal (a running job, or one whose launcher was killed).\n"
    "  --rebuild   build trace.json again in any case\n";

// True when trace.json must be (re)built: missing, or events.jsonl was written after it.
bool TraceStale(const std::string& job_dir) {
  std::error_code ec1, ec2;
  const auto trace_time = fs::last_write_time(TracePath(job_dir), ec1);
  const auto events_time = fs::last_write_time(job_dir + "/events.jsonl", ec2);
  return ec1 || (!ec2 && events_time > trace_time);
}

}  // namespace

int RunTraceCommand(const std::vector<std::string>& args) {
  if (WantsHelp(args)) {
    std::cout << kTraceUsage;
    return kExitOk;
  }
  bool rebuild = false;
  const std::vector<Flag> table = {{{"--rebuild"}, false, SwitchFlag(&rebuild)}};
  std::string job_dir;
  int rc = kExitOk;
  if (!ParseJobCommand(args, table, kTraceUsage, &job_dir, &rc)) return rc;
  absl::StatusOr<TraceInput> input = LoadTraceInput(job_dir);
  if (!input.ok()) {
    std::cerr << "dlaunch: no timeline for " << job_dir << ": " << input.status().message()
              << " (a job that `dlaunch run` started has events.jsonl)\n";
    return kExitUsage;
  }
  // The job's seconds (docs/goodput.md), for the trace's goodput track and the report below.
  const v1::GoodputAccount account = ComputeGoodput(*input);
  std::vector<std::string> notes;
  if (rebuild || TraceStale(job_dir)) {
    absl::StatusOr<RenderedTrace> written = WriteJobTrace(job_dir, *input, account);
    if (!written.ok()) {
      std::cerr << "dlaunch: cannot write the trace: " << written.status().message() << "\n";
      return kExitLaunchError;
    }
    std::cout << "built " << TracePath(job_dir) << " from the job directory\n";
    notes = written->notes;
  } else {
    absl::StatusOr<std::string> text = ReadFile(TracePath(job_dir));
    absl::StatusOr<std::vector<std::string>> read =
        text.ok() ? ReadTraceNotes(*text) : absl::StatusOr<std::vector<std::string>>(text.status());
    if (!read.ok()) {
      std::cerr << "dlaunch: " << read.status().message() << " (--rebuild writes it again)\n";
      return kExitLaunchError;
    }
    notes = *std::move(read);
  }
  std::cout << FormatTraceSummary(TracePath(job_dir), SummarizeRankTime(*input), notes);
  // An ended job's summary.json gets the account when its launcher left it to this command (a
  // journal too big to read at exit, or a killed launcher).
  std::cout << "\n";
  for (const std::string& line : GoodputReport(account)) std::cout << line << "\n";
  if (fs::exists(job_dir + "/summary.json")) {
    if (absl::Status st = AddGoodputToSummary(job_dir, account); !st.ok()) {
      std::cerr << "dlaunch: cannot add the goodput account to summary.json: " << st.message() << "\n";
    }
  }
  return kExitOk;
}

}  // namespace dlaunch
