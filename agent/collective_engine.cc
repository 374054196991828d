#include "agent/collective_engine.h"

#include <google/protobuf/util/json_util.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <set>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "common/python_command.h"

namespace dlaunch {
namespace {

// Finds torch without importing it: milliseconds, not the seconds of `import torch`.
constexpr char kFindTorch[] =
    "import importlib.util, sys; sys.exit(0 if importlib.util.find_spec('torch') else 1)";

std::string Quoted(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

std::string LastLine(const std::string& text) {
  std::vector<std::string> lines = absl::StrSplit(text, '\n', absl::SkipWhitespace());
  return lines.empty() ? "" : lines.back();
}

// The group of consecutive ring positions `index` belongs to (as collective_check.cc and the
// Python program compute it): its first position.
int GroupStart(int index, int n, int group) {
  group = std::max(group, 2);
  const int groups = std::max(1, n / group);
  return std::min(index / group, groups - 1) * group;
}

}  // namespace

CollectiveEngine ChooseCollectiveEngine(const v1::PreflightPlan& plan, const EnvMap& agent_env,
                                        int gpus, const ProbeFn& run) {
  CollectiveEngine e;
  e.gpus = gpus;
  const v1::WorkerTemplate& worker = plan.worker();
  if (plan.collective().engine() == "tcp") {
    e.why = "preflight.collective_engine: tcp";
    return e;
  }
  if (worker.argv().empty() || !IsPythonProgram(worker.argv(0))) {
    e.why = "the job's command is not Python";
    return e;
  }
  const std::vector<std::string> argv(worker.argv().begin(), worker.argv().end());
  const std::vector<std::string> imports = PythonImportsFor(argv, worker.workdir());
  if (std::find(imports.begin(), imports.end(), "torch") == imports.end()) {
    e.why = "the job's script does not use torch";
    return e;
  }
  e.env = agent_env;
  for (const auto& [k, v] : worker.env()) e.env[k] = v;
  e.workdir = worker.workdir();
  e.python = FindProgram(worker.argv(0), e.env.count("PATH") ? e.env["PATH"] : "", e.workdir);
  if (e.python.empty()) {
    e.why = worker.argv(0) + " not found";
    return e;
  }
  SpawnOptions probe;
  probe.argv = {e.python, "-c", kFindTorch};
  probe.envp = ToEnvp(e.env);
  probe.workdir = e.workdir;
  absl::StatusOr<CommandResult> found = run(probe);
  if (!found.ok() || found->exit_code != 0) {
    e.why = absl::StrCat(e.python, " has no torch");
    return e;
  }
  e.backend = gpus > 0 ? "nccl" : "gloo";
  return e;
}

std::string TorchCheckInput(const std::string& backend, const std::vector<v1::CollectivePeer>& ring,
                            int index, const std::string& my_addr, const v1::CollectivePlan& plan) {
  const int n = static_cast<int>(ring.size());
  const std::set<int> needed = {index, (index + 1) % n, (index + n - 1) % n,
                                GroupStart(index, n, plan.group())};
  std::string peers;
  for (int i : needed) {
    absl::StrAppend(&peers, peers.empty() ? "" : ", ", "\"", i, "\": {\"addr\": ",
                    Quoted(ring[i].addr()), ", \"port\": ", ring[i].port(), "}");
  }
  return absl::StrFormat(
      "{\"backend\": %s, \"n\": %d, \"index\": %d, \"addr\": %s, \"bytes\": %d, \"group\": %d, "
      "\"timeout_s\": %.3f, \"peers\": {%s}}",
      Quoted(backend), n, index, Quoted(my_addr), plan.bytes(), std::max(plan.group(), 2),
      // Its waits for peers end before the launcher judges (the whole budget after the ring).
      0.9 * plan.budget_ms() / 1000.0, peers);
}

absl::StatusOr<v1::CollectiveFigures> ParseTorchCheckOutput(const std::string& out) {
  const std::string line = LastLine(out);
  v1::CollectiveFigures f;
  if (line.empty() || line[0] != '{') {
    return absl::InvalidArgumentError(absl::StrCat("no figures in its output: ", line));
  }
  google::protobuf::util::JsonParseOptions options;
  options.ignore_unknown_fields = true;  // a newer program's fields
  const auto parsed = google::protobuf::util::JsonStringToMessage(line, &f, options);
  if (!parsed.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("unreadable figures: ", line));
  }
  return f;
}

TorchCheck::TorchCheck(const CollectiveEngine& engine, double timeout_s)
    : ran_(absl::UnavailableError("not run")) {
  char tmpl[] = "/tmp/dlaunch-collective-XXXXXX";
  if (mkdtemp(tmpl) == nullptr) {
    ran_ = absl::InternalError(absl::StrCat("mkdtemp: ", std::strerror(errno)));
    done_ = true;
    return;
  }
  dir_ = tmpl;
  fifo_ = dir_ + "/input";
  if (mkfifo(fifo_.c_str(), 0600) != 0) {
    ran_ = absl::InternalError(absl::StrCat("mkfifo: ", std::strerror(errno)));
    done_ = true;
    return;
  }
  SpawnOptions options;
  options.argv = {engine.python, "-c", kCollectiveCheckProgram, fifo_};
  options.envp = ToEnvp(engine.env);
  options.workdir = engine.workdir;
  // Its own thread: RunCommandWith waits for the program, which waits for its input.
  options.parent_death_signal = 0;
  thread_ = std::thread([this, options, timeout_s] {
    ran_ = RunCommandWith(options, timeout_s);
    done_ = true;
  });
}

TorchCheck::~TorchCheck() {
  if (!told_) Tell("skip");
  if (thread_.joinable()) thread_.join();
  if (!dir_.empty()) std::filesystem::remove_all(dir_);
}

bool TorchCheck::Tell(const std::string& line) {
  told_ = true;
  if (fifo_.empty()) return false;
  // Non-blocking: the open fails (ENXIO) until the program has opened its end, and would block
  // forever on a program that ended before it did.
  while (!done_) {
    const int fd = open(fifo_.c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd >= 0) {
      const std::string text = line + "\n";
      const bool ok = write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
      close(fd);
      return ok;
    }
    if (errno != ENXIO) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));  // its interpreter is starting
  }
  return false;
}

v1::CollectiveFigures TorchCheck::Measure(const std::string& backend,
                                          const std::vector<v1::CollectivePeer>& ring, int index,
                                          const std::string& my_addr,
                                          const v1::CollectivePlan& plan) {
  Tell(TorchCheckInput(backend, ring, index, my_addr, plan));
  if (thread_.joinable()) thread_.join();
  v1::CollectiveFigures f;
  if (!ran_.ok()) {
    f.set_error(absl::StrCat(backend, " check: ", ran_.status().message()));
    return f;
  }
  absl::StatusOr<v1::CollectiveFigures> figures = ParseTorchCheckOutput(ran_->out);
  if (!figures.ok()) {
    f.set_error(absl::StrCat(backend, " check (exit ", ran_->exit_code,
                             "): ", figures.status().message(), " ", LastLine(ran_->err)));
    return f;
  }
  if (!figures->error().empty()) figures->set_error(absl::StrCat(backend, ": ", figures->error()));
  return *figures;
}

absl::StatusOr<double> ParseAllReducePerf(const std::string& out) {
  std::optional<double> busbw;
  for (absl::string_view line : absl::StrSplit(out, '\n')) {
    line = absl::StripAsciiWhitespace(line);
    if (absl::ConsumePrefix(&line, "# Out of bounds values :")) {
      int wrong = 0;
      std::vector<std::string> words = absl::StrSplit(line, ' ', absl::SkipWhitespace());
      if (!words.empty() && absl::SimpleAtoi(words[0], &wrong) && wrong > 0) {
        return absl::DataLossError(absl::StrCat("all_reduce_perf: ", wrong, " wrong values"));
      }
    } else if (absl::ConsumePrefix(&line, "# Avg bus bandwidth")) {
      line = absl::StripLeadingAsciiWhitespace(line);
      double gbs = 0;
      if (!absl::ConsumePrefix(&line, ":") ||
          !absl::SimpleAtod(absl::StripAsciiWhitespace(line), &gbs)) {
        return absl::InvalidArgumentError(absl::StrCat("all_reduce_perf: unreadable line: ", line));
      }
      busbw = gbs * 1e9;  // nccl-tests prints GB/s of 1e9 bytes
    }
  }
  if (!busbw) return absl::NotFoundError("all_reduce_perf printed no average bus bandwidth");
  return *busbw;
}

double MeasureGpuBusBandwidth(int gpus, const std::string& path, int64_t bytes, std::string* why) {
  const std::string program = FindProgram("all_reduce_perf", path);
  if (gpus < 1 || program.empty()) {
    *why = gpus < 1 ? "no GPU" : "all_reduce_perf not on PATH";
    return 0;
  }
  const std::string size = std::to_string(std::max<int64_t>(bytes, 1 << 20));
  absl::StatusOr<CommandResult> ran =
      RunCommand({program, "-b", size, "-e", size, "-g", std::to_string(gpus), "-w", "5", "-n", "20"}, 30);
  if (!ran.ok()) {
    *why = absl::StrCat("all_reduce_perf: ", ran.status().message());
    return 0;
  }
  absl::StatusOr<double> busbw = ParseAllReducePerf(ran->out);
  if (!busbw.ok()) {
    *why = std::string(busbw.status().message());
    return 0;
  }
  return *busbw;
}

}  // namespace dlaunch
