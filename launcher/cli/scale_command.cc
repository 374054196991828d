#include "launcher/cli/scale_command.h"

#include <limits.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <filesystem>
#include <iostream>
#include <random>
#include <tuple>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "common/command_runner.h"
#include "common/exit_codes.h"
#include "common/file_io.h"
#include "common/json_line.h"
#include "common/process.h"
#include "launcher/cli/cli_support.h"
#include "launcher/jobdir/job_record.h"
#include "launcher/run/allocation.h"
#include "launcher/spec/job_spec_parser.h"
#include "launcher/study/scale_plan.h"
#include "launcher/study/scaling_table.h"
#include "launcher/study/study_plots.h"
#include "launcher/study/study_report.h"

namespace dlaunch {
namespace {

namespace fs = std::filesystem;

constexpr char kScaleUsage[] =
    "usage: dlaunch scale job.yaml [--nodes LIST] [--procs LIST] [options]\n"
    "  Runs the job once per scale, one after the other (inside an allocation on the first N of\n"
    "  its hosts, else on this machine), and writes runs/<study-id>/: scaling.csv, scaling.md,\n"
    "  plots (PNG and SVG), report.html, study.json and one job directory per scale.\n"
    "  --nodes LIST          node counts, e.g. 1,2,4 (default: the job's, or study.nodes)\n"
    "  --procs LIST          processes per node, e.g. 1,2,4 (default: the job's, or study.procs)\n"
    "  --job-dir DIR         the study directory (default: <job root>/<study id>)\n"
    "  --job-root DIR        where the study directory goes (default: $DLAUNCH_JOB_ROOT or runs)\n"
    "  --launcher KIND       passed to every `dlaunch run`\n"
    "  --launcher-cmd PREFIX accepted for batch scripts and ignored: each scale builds the\n"
    "                        launch command for its own node count\n"
    "  dlaunch-worker scales its learning rate by WORLD_SIZE itself (--lr is per rank) and warms\n"
    "  up over --warmup-epochs; any other command reads WORLD_SIZE to do the same.\n"
    "  Exit code: 0 when every scale succeeded, else the first failing scale's.\n";

struct ScaleArgs {
  std::string spec_path;
  std::string nodes_text, procs_text;
  bool nodes_given = false, procs_given = false;
  std::string job_dir, job_root, launcher;
};

std::string SelfExe() {
  char buf[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  if (n <= 0) return "dlaunch";
  buf[n] = 0;
  return buf;
}

// The child `dlaunch run` of the scale in progress: a SIGTERM to the study is passed on to it,
// and a Ctrl-C (which the terminal sends to both) leaves the study to wait for its ending.
volatile sig_atomic_t g_child = 0;
volatile sig_atomic_t g_interrupted = 0;

void OnSignal(int sig) {
  g_interrupted = 1;
  if (sig == SIGTERM && g_child > 0) kill(static_cast<pid_t>(g_child), SIGTERM);
}

// Runs one scale to its end; its output goes straight to this terminal or log. The exit code
// (128+signal when killed; kExitLaunchError when it could not start).
int RunScale(const std::vector<std::string>& argv) {
  SpawnOptions options;
  options.argv = argv;
  options.new_process_group = false;  // a Ctrl-C reaches it as it reaches `dlaunch run`
  options.parent_death_signal = SIGTERM;
  options.capture_output = false;
  absl::StatusOr<PendingProcess> pending = ForkProcess(options);
  if (!pending.ok()) {
    std::cerr << "dlaunch scale: " << pending.status().message() << "\n";
    return kExitLaunchError;
  }
  const pid_t pid = pending->pid;
  g_child = pid;
  absl::StatusOr<SpawnedProcess> spawned = AwaitExec(*std::move(pending));
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  g_child = 0;
  if (!spawned.ok()) {
    std::cerr << "dlaunch scale: " << spawned.status().message() << "\n";
    return kExitLaunchError;
  }
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  return 128 + WTERMSIG(status);
}

RunMetrics ReadRunMetrics(const std::string& run_dir) {
  // Absent files are a run that ended before writing them: no figures, not an error.
  absl::StatusOr<std::string> summary = ReadFile(run_dir + "/summary.json");
  absl::StatusOr<std::string> metrics = ReadFile(run_dir + "/metrics.jsonl");
  absl::StatusOr<RunMetrics> m =
      ParseRunMetrics(summary.ok() ? *summary : "", metrics.ok() ? *metrics : "");
  if (!m.ok()) {
    std::cerr << "dlaunch scale: " << run_dir << ": " << m.status().message() << "\n";
    return RunMetrics{};
  }
  return *m;
}

// Draws the plots with gnuplot; on failure the report says why instead of showing them.
void DrawPlots(const std::string& study_dir, StudyPlots* plots) {
  if (plots->plots.empty()) return;
  absl::StatusOr<CommandResult> r = RunCommand(
      {"gnuplot", "-e", absl::StrCat("cd '", study_dir, "'"), study_dir + "/plots.gp"}, 120);
  std::string problem;
  if (!r.ok()) {
    problem = absl::StrCat("gnuplot could not run (", r.status().message(),
                           "); install gnuplot-nox (scripts/install-deps.sh study)");
  } else if (r->exit_code != 0) {
    problem = absl::StrCat("gnuplot failed: ", r->err);
  }
  if (problem.empty()) return;
  std::cerr << "dlaunch scale: plots not drawn: " << problem << "\n";
  plots->skipped.insert(plots->skipped.begin(),
                        absl::StrCat(absl::StrJoin(plots->plots, ", "), ": ", problem));
  plots->plots.clear();
}

absl::Status WriteStudyFiles(const std::string& dir, const StudyInfo& info,
                             const std::vector<ScaleOutcome>& outcomes) {
  const std::vector<ScalingRow> rows = MakeScalingRows(outcomes);
  StudyPlots plots = MakeStudyPlots(rows, outcomes);
  std::vector<TextFile> files = plots.data_files;
  files.push_back({"scaling.csv", ScalingCsv(rows)});
  files.push_back({"scaling.md", ScalingMarkdown(rows)});
  files.push_back({"plots.gp", plots.script});
  files.push_back({"study.json", StudyJson(info, rows, outcomes, StudyExitCode(rows))});
  for (const TextFile& f : files) {
    absl::Status st = WriteFileAtomically(dir + "/" + f.name, f.text, {.fsync = false});
    if (!st.ok()) return st;
  }
  DrawPlots(dir, &plots);
  return WriteFileAtomically(dir + "/report.html", StudyReportHtml(info, rows, plots),
                             {.fsync = false});
}

bool ParseScaleArgs(const std::vector<std::string>& args, ScaleArgs* a, int* exit_code) {
  auto text = [](std::string* out, bool* given = nullptr) {
    return [out, given](const std::string& v) {
      *out = v;
      if (given) *given = true;
      return absl::OkStatus();
    };
  };
  std::string ignored_launcher_cmd;
  const std::vector<Flag> table = {
      {{"--nodes"}, true, text(&a->nodes_text, &a->nodes_given)},
      {{"--procs", "--nproc-per-node"}, true, text(&a->procs_text, &a->procs_given)},
      {{"--job-dir", "--study-dir"}, true, text(&a->job_dir)},
      {{"--job-root"}, true, text(&a->job_root)},
      {{"--launcher"}, true, text(&a->launcher)},
      {{"--launcher-cmd"}, true, text(&ignored_launcher_cmd)},
  };
  ParsedArgs parsed;
  if (!ParseCommandFlags(args, table, 1, kScaleUsage, &parsed, exit_code)) return false;
  if (parsed.positional.empty()) {
    *exit_code = UsageError(kScaleUsage, "give the job.yaml to study");
    return false;
  }
  a->spec_path = parsed.positional[0];
  return true;
}

// The node and process counts to study: the flags', else the job's study: section.
bool StudyCounts(const ScaleArgs& a, const JobSpec& spec, std::vector<int>* nodes,
                 std::vector<int>* procs, int* exit_code) {
  *nodes = spec.study_nodes;
  *procs = spec.study_procs;
  const std::tuple<bool, const std::string*, const char*, std::vector<int>*> flags[] = {
      {a.nodes_given, &a.nodes_text, "--nodes", nodes},
      {a.procs_given, &a.procs_text, "--procs", procs}};
  for (auto [given, text, flag, out] : flags) {
    if (!given) continue;
    absl::StatusOr<std::vector<int>> list = ParseScaleList(flag, *text);
    if (!list.ok()) {
      *exit_code = UsageError(kScaleUsage, std::string(list.status().message()));
      return false;
    }
    *out = *list;
  }
  if (nodes->empty() && procs->empty()) {
    *exit_code =
        UsageError(kScaleUsage, "give --nodes and/or --procs (or a study: section in job.yaml)");
    return false;
  }
  return true;
}

// Every scale to run, each within the hosts there are: the job's own list, else the allocation's.
bool PlanStudyScales(const JobSpec& spec, const std::vector<int>& nodes,
                     const std::vector<int>& procs, std::vector<Scale>* scales, int* exit_code) {
  absl::StatusOr<Allocation> alloc = DetectAllocation();
  if (!alloc.ok()) {
    std::cerr << "dlaunch scale: " << alloc.status().message() << "\n";
    *exit_code = kExitLaunchError;
    return false;
  }
  ScaleLimits limits;
  limits.allocation_hosts = static_cast<int>(alloc->hosts.size());
  limits.allocation_source = alloc->source;
  if (!spec.hosts.empty()) {
    limits.allocation_hosts = static_cast<int>(spec.hosts.size());
    limits.allocation_source = "job.yaml hosts";
  }
  limits.default_nodes = spec.nodes_auto ? std::max(1, limits.allocation_hosts) : spec.max_nodes;
  limits.default_procs = spec.nproc_per_node;
  absl::StatusOr<std::vector<Scale>> planned = PlanScales(nodes, procs, limits);
  if (!planned.ok()) {
    std::cerr << "dlaunch scale: " << planned.status().message() << "\n";
    *exit_code = kExitUsage;
    return false;
  }
  *scales = *std::move(planned);
  return true;
}

// Creates the study directory (--job-dir, else a new study id under the job root), setting
// *dir to its absolute path and info's study id to its name. False, having said why, when it
// cannot be created.
bool MakeStudyDir(const ScaleArgs& a, const JobSpec& spec, StudyInfo* info, std::string* dir) {
  *dir = a.job_dir;
  if (dir->empty()) {
    std::random_device rd;
    info->study_id = MakeJobId(spec.name + "-scale", absl::Now(), rd());
    *dir = (fs::path(a.job_root.empty() ? DefaultJobRoot() : a.job_root) / info->study_id).string();
  } else {
    info->study_id = fs::path(AbsolutePath(*dir)).filename().string();
  }
  *dir = AbsolutePath(*dir);
  std::error_code ec;
  fs::create_directories(*dir, ec);
  if (ec) {
    std::cerr << "dlaunch scale: cannot create " << *dir << ": " << ec.message() << "\n";
    return false;
  }
  return true;
}

// A SIGTERM is passed on to the scale in progress; both signals end the study after it.
void CatchStopSignals() {
  struct sigaction sa = {};
  sa.sa_handler = OnSignal;
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
}

// The command line of one scale: this dlaunch's `run` of the study's spec snapshot.
std::vector<std::string> ScaleCommandLine(const std::string& self, const std::string& spec_snapshot,
                                          const Scale& s, const std::string& run_dir,
                                          const std::string& launcher) {
  std::vector<std::string> argv = {self};
  for (std::string& w : ScaleRunArgs(spec_snapshot, s, run_dir)) argv.push_back(std::move(w));
  if (!launcher.empty()) argv.insert(argv.end(), {"--launcher", launcher});
  return argv;
}

// Runs one scale to its end, fills in what it measured, and says how it ended.
void RunOneScale(const std::vector<std::string>& argv, const std::string& run_dir,
                 ScaleOutcome* o) {
  const absl::Time start = absl::Now();
  o->exit_code = RunScale(argv);
  o->wall_time_s = absl::ToDoubleSeconds(absl::Now() - start);
  o->metrics = ReadRunMetrics(run_dir);
  std::cout << "[dlaunch scale] scale " << o->run_dir << ": "
            << (o->exit_code == 0 ? "ok" : absl::StrCat("failed (exit ", o->exit_code, ")"))
            << " in " << absl::StrCat(static_cast<int>(o->wall_time_s)) << " s" << std::endl;
}

}  // namespace

int RunScaleCommand(const std::vector<std::string>& args) {
  if (WantsHelp(args)) {
    std::cout << kScaleUsage;
    return kExitOk;
  }
  ScaleArgs a;
  int exit_code = kExitUsage;
  if (!ParseScaleArgs(args, &a, &exit_code)) return exit_code;
  absl::StatusOr<JobSpec> spec = LoadJobSpec(a.spec_path);
  if (!spec.ok()) {
    std::cerr << spec.status().message() << std::endl;
    return kExitUsage;
  }
  std::vector<int> nodes, procs;
  if (!StudyCounts(a, *spec, &nodes, &procs, &exit_code)) return exit_code;
  std::vector<Scale> scales;
  if (!PlanStudyScales(*spec, nodes, procs, &scales, &exit_code)) return exit_code;

  StudyInfo info;
  std::string dir;
  if (!MakeStudyDir(a, *spec, &info, &dir)) return kExitLaunchError;
  // Every scale runs this snapshot of the spec (defaults filled in, as `dlaunch submit` writes
  // it), so an edit of job.yaml while a long study runs cannot change its later scales.
  const std::string spec_snapshot = dir + "/job.yaml";
  if (absl::Status st = WriteFileAtomically(spec_snapshot, ResolvedJobYaml(*spec)); !st.ok()) {
    std::cerr << "dlaunch scale: " << st.message() << "\n";
    return kExitLaunchError;
  }
  info.spec_path = a.spec_path;
  info.started = NowRfc3339();
  info.command = absl::StrCat("dlaunch scale ", absl::StrJoin(args, " "));
  std::cout << "[dlaunch scale] study " << info.study_id << ": " << scales.size()
            << " scale(s) in " << dir << std::endl;

  CatchStopSignals();
  const std::string self = SelfExe();
  std::vector<ScaleOutcome> outcomes;
  for (size_t i = 0; i < scales.size() && !g_interrupted; ++i) {
    const Scale& s = scales[i];
    ScaleOutcome o;
    o.scale = s;
    o.run_dir = s.Label();
    const std::string run_dir = dir + "/" + o.run_dir;
    std::cout << "[dlaunch scale] scale " << i + 1 << "/" << scales.size() << ": " << s.nodes
              << " node(s) x " << (s.procs_per_node > 0 ? absl::StrCat(s.procs_per_node) : "gpu")
              << " process(es) -> " << run_dir << std::endl;
    RunOneScale(ScaleCommandLine(self, spec_snapshot, s, run_dir, a.launcher), run_dir, &o);
    outcomes.push_back(std::move(o));
    // Written after every scale, so a study cut short still leaves its table.
    if (absl::Status st = WriteStudyFiles(dir, info, outcomes); !st.ok()) {
      std::cerr << "dlaunch scale: " << st.message() << "\n";
      return kExitLaunchError;
    }
    if (outcomes.back().exit_code == kExitInterrupted) break;
  }
  const std::vector<ScalingRow> rows = MakeScalingRows(outcomes);
  std::cout << "\n" << ScalingMarkdown(rows) << "\n[dlaunch scale] report: " << dir
            << "/report.html" << std::endl;
  if (g_interrupted && outcomes.size() < scales.size()) return kExitInterrupted;
  return StudyExitCode(rows);
}

}  // namespace dlaunch
