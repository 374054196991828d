#include "launcher/spec/spec_reader.h"

#include <algorithm>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "launcher/spec/hostlist.h"
#include "launcher/spec/job_spec_checks.h"
#include "launcher/spec/spec_scalars.h"

namespace dlaunch {

void SpecReader::Read(const YAML::Node& root, JobSpec* spec) {
  const YAML::Mark root_mark = root.Mark().is_null() ? YAML::Mark() : root.Mark();
  if (!root.IsNull() && !root.IsMap()) {
    Report(root_mark, "",
           absl::StrCat("a job must be a mapping of keys (name:, nodes:, command: ...), got ",
                        DescribeYamlValue(root)));
    return;
  }
  std::map<std::string, SpecField> top = Fields(root, "", root_mark);
  auto has = [&](const char* key) { return top.count(key) > 0; };

  spec->nodes_auto = true;  // a job.yaml without `nodes:` uses every host it is given
  if (has("name")) String(top["name"], &spec->name);
  if (has("nodes")) Nodes(top["nodes"], spec);
  if (has("nproc_per_node")) NprocPerNode(top["nproc_per_node"], spec);
  if (has("command")) {
    StringList(top["command"], &spec->command, /*split_command=*/true);
  } else {
    Report(root_mark, "command", "missing required key 'command'");
  }
  if (has("args")) StringList(top["args"], &spec->command, /*split_command=*/true);
  if (has("env")) StringMap(top["env"], &spec->env);
  if (has("workdir")) String(top["workdir"], &spec->workdir);
  if (has("hosts")) Hosts(top["hosts"], spec);
  if (has("launcher")) String(top["launcher"], &spec->node_launcher);
  if (has("rendezvous")) Rendezvous(top["rendezvous"], spec);
  if (has("heartbeat")) Heartbeat(top["heartbeat"], spec);
  if (has("stop")) Stop(top["stop"], spec);
  if (has("health")) Health(top["health"], spec);
  if (has("max_restarts")) Int(top["max_restarts"], &spec->max_restarts);
  if (has("restart")) Restart(top["restart"], spec);
  if (has("restarts")) Restarts(top["restarts"], spec);
  if (has("stragglers")) Stragglers(top["stragglers"], spec);
  if (has("logs")) Logs(top["logs"], spec);
  if (has("gpus")) Gpus(top["gpus"], spec);
  if (has("cpus")) Cpus(top["cpus"], spec);
  if (has("preflight")) Preflight(top["preflight"], &spec->preflight);
  if (has("scheduler")) Scheduler(top["scheduler"], &spec->scheduler);
  if (has("study")) Study(top["study"], spec);
  ReportChecked(CheckJobSpec(*spec), root_mark);
}

void SpecReader::Nodes(const SpecField& field, JobSpec* spec) {
  constexpr absl::string_view kExpected =
      "a positive integer, \"auto\", \"MIN:MAX\" or a mapping {min, max}";
  if (field.value.IsMap()) {
    std::map<std::string, SpecField> range = Fields(field.value, "nodes", field.mark);
    spec->nodes_auto = false;
    spec->min_nodes = 1;
    if (range.count("min")) Int(range["min"], &spec->min_nodes);
    spec->max_nodes = spec->min_nodes;
    if (range.count("max")) Int(range["max"], &spec->max_nodes);
    if (range.count("spares")) Int(range["spares"], &spec->spare_nodes);
    return;
  }
  std::string text;
  if (!Scalar(field, kExpected, &text)) return;
  if (text == "auto") {
    spec->nodes_auto = true;
    return;
  }
  const std::vector<std::string> parts = absl::StrSplit(text, ':');
  int min = 0;
  int max = 0;
  if (parts.size() == 1 && absl::SimpleAtoi(parts[0], &min)) {
    max = min;
  } else if (parts.size() != 2 || !absl::SimpleAtoi(parts[0], &min) ||
             !absl::SimpleAtoi(parts[1], &max)) {
    WrongType(field, kExpected);
    return;
  }
  spec->nodes_auto = false;
  spec->min_nodes = min;
  spec->max_nodes = max;
  if (min != max) {
    Place("nodes.min", field.mark);
    Place("nodes.max", field.mark);
  }
}

void SpecReader::NprocPerNode(const SpecField& field, JobSpec* spec) {
  constexpr absl::string_view kExpected = "a positive integer or \"gpu\"";
  std::string text;
  if (!Scalar(field, kExpected, &text)) return;
  if (text == "gpu" || text == "auto") {
    spec->nproc_per_node = 0;
    return;
  }
  int count = 0;
  // 0 would silently mean "one per GPU"; make people say so.
  if (!absl::SimpleAtoi(text, &count) || count <= 0) {
    WrongType(field, kExpected);
    return;
  }
  spec->nproc_per_node = count;
}

void SpecReader::Hosts(const SpecField& field, JobSpec* spec) {
  std::vector<std::string> lists;
  StringList(field, &lists, /*split_command=*/false);
  for (const std::string& list : lists) {
    // Host names are letters, digits, '-', '.', '_' (and ':' of an address); with the hostlist's
    // brackets and commas nothing else can make one.
    const auto bad = std::find_if(list.begin(), list.end(), [](char c) {
      return !absl::ascii_isalnum(static_cast<unsigned char>(c)) && absl::string_view("-._:[],").find(c) == absl::string_view::npos;
    });
    if (bad != list.end()) {
      Report(field.mark, field.path,
             absl::StrCat(field.path, ": \"", absl::CHexEscape(list.substr(0, 64)),
                          list.size() > 64 ? "..." : "", "\" holds '", absl::CHexEscape(std::string(1, *bad)),
                          "', which no host name has (letters, digits, '-', '.', '_')"));
      continue;
    }
    absl::StatusOr<std::vector<std::string>> hosts = ExpandHostlist(list);
    if (!hosts.ok()) {
      Report(field.mark, field.path, absl::StrCat(field.path, ": ", hosts.status().message()));
      continue;
    }
    spec->hosts.insert(spec->hosts.end(), hosts->begin(), hosts->end());
    if (spec->hosts.size() > kMaxJobHosts) {
      Report(field.mark, field.path,
             absl::StrCat(field.path, ": more than ", kMaxJobHosts, " hosts (", spec->hosts.size(),
                          " so far); no machine has that many nodes: is a range mistyped?"));
      spec->hosts.clear();
      return;
    }
  }
}

void SpecReader::Rendezvous(const SpecField& field, JobSpec* spec) {
  std::map<std::string, SpecField> fields = Fields(field.value, "rendezvous", field.mark);
  if (fields.count("port")) Int(fields["port"], &spec->control_port);
  if (std::string word; fields.count("tls") && OneOf(fields["tls"], {"on", "off"}, &word)) {
    spec->control_tls = word == "on";
  }
  if (fields.count("master_port")) Int(fields["master_port"], &spec->master_port);
  if (fields.count("relay_fanout")) {
    const SpecField& fanout = fields["relay_fanout"];
    if (fanout.value.IsScalar() && fanout.value.Scalar() == "auto") {
      spec->relay_fanout_auto = true;
    } else {
      Int(fanout, &spec->relay_fanout);
    }
  }
  if (std::string word; fields.count("worker_store") &&
                        OneOf(fields["worker_store"], {"agent", "rank0"}, &word)) {
    spec->agent_store = word == "agent";
  }
  if (fields.count("join_timeout")) Duration(fields["join_timeout"], &spec->join_timeout_s);
  if (fields.count("last_call")) Duration(fields["last_call"], &spec->last_call_s);
}

void SpecReader::Heartbeat(const SpecField& field, JobSpec* spec) {
  std::map<std::string, SpecField> fields = Fields(field.value, "heartbeat", field.mark);
  if (fields.count("interval")) Duration(fields["interval"], &spec->heartbeat_interval_s);
  if (fields.count("misses")) Int(fields["misses"], &spec->heartbeat_misses);
}

void SpecReader::Stop(const SpecField& field, JobSpec* spec) {
  std::map<std::string, SpecField> fields = Fields(field.value, "stop", field.mark);
  if (fields.count("grace")) Duration(fields["grace"], &spec->stop_grace_s);
  if (fields.count("exit_timeout")) {
    std::string word;
    DurationOrWord(fields["exit_timeout"], {{"off", 0}}, &spec->exit_timeout_s, &word);
  }
}

void SpecReader::Health(const SpecField& field, JobSpec* spec) {
  std::map<std::string, SpecField> fields = Fields(field.value, "health", field.mark);
  if (fields.count("stall_timeout")) {
    std::string word;
    DurationOrWord(fields["stall_timeout"], {{"off", 0}, {"auto", 0}}, &spec->stall_timeout_s,
                   &word);
    spec->stall_detection = word != "off";
  }
  if (fields.count("startup_timeout")) {
    std::string word;
    DurationOrWord(fields["startup_timeout"], {{"off", 0}}, &spec->startup_timeout_s, &word);
  }
}

void SpecReader::Restart(const SpecField& field, JobSpec* spec) {
  if (field.value.IsMap()) {
    // One letter from `restarts:`, where backoff and the limits go.
    WrongType(field, "\"respawn\" or \"in_process\" (backoff, crash_loop and node_failures go "
                     "under 'restarts')");
    return;
  }
  if (std::string word; OneOf(field, {"respawn", "in_process"}, &word)) {
    spec->restart_in_process = word == "in_process";
  }
}

void SpecReader::Restarts(const SpecField& field, JobSpec* spec) {
  std::map<std::string, SpecField> fields = Fields(field.value, "restarts", field.mark);
  if (fields.count("backoff")) Duration(fields["backoff"], &spec->restart_backoff_s);
  if (fields.count("backoff_max")) Duration(fields["backoff_max"], &spec->restart_backoff_max_s);
  if (fields.count("crash_loop")) Int(fields["crash_loop"], &spec->crash_loop_limit);
  if (fields.count("node_failures")) Int(fields["node_failures"], &spec->node_failure_limit);
  if (std::string word;
      fields.count("warm_start") && OneOf(fields["warm_start"], {"on", "off", "auto"}, &word)) {
    spec->warm_start = word;
  }
}

void SpecReader::Stragglers(const SpecField& field, JobSpec* spec) {
  std::map<std::string, SpecField> fields = Fields(field.value, "stragglers", field.mark);
  if (fields.count("policy")) {
    OneOf(fields["policy"], {"report", "exclude", "off"}, &spec->stragglers.policy);
  }
  if (fields.count("threshold")) Number(fields["threshold"], &spec->stragglers.threshold);
  if (fields.count("interval")) Duration(fields["interval"], &spec->stragglers.interval_s);
  if (fields.count("intervals")) Int(fields["intervals"], &spec->stragglers.intervals);
  if (fields.count("warmup_steps")) Int(fields["warmup_steps"], &spec->stragglers.warmup_steps);
}

void SpecReader::Logs(const SpecField& field, JobSpec* spec) {
  std::map<std::string, SpecField> fields = Fields(field.value, "logs", field.mark);
  if (fields.count("dir")) String(fields["dir"], &spec->job_root);
  if (fields.count("ranks")) Ranks(fields["ranks"], spec);
  if (fields.count("tail_lines")) Int(fields["tail_lines"], &spec->tail_lines);
  if (fields.count("summary_interval")) {
    Duration(fields["summary_interval"], &spec->summary_interval_s);
  }
}

void SpecReader::Ranks(const SpecField& field, JobSpec* spec) {
  constexpr absl::string_view kExpected = "\"all\" or a list of ranks";
  if (field.value.IsScalar() && field.value.Scalar() == "all") {
    spec->show_all_ranks = true;
    spec->show_ranks.clear();
    return;
  }
  spec->show_all_ranks = false;
  spec->show_ranks.clear();
  std::vector<YAML::Node> items;
  if (field.value.IsScalar()) {
    items.push_back(field.value);
  } else if (field.value.IsSequence()) {
    for (const auto& item : field.value) items.push_back(item);
  } else {
    WrongType(field, kExpected);
    return;
  }
  for (size_t i = 0; i < items.size(); ++i) {
    int rank = 0;
    if (!items[i].IsScalar() || !absl::SimpleAtoi(items[i].Scalar(), &rank)) {
      WrongType(SpecField{field.path, items[i], items[i].Mark()}, kExpected);
      return;
    }
    Place(absl::StrCat(field.path, "[", i, "]"), items[i].Mark());
    spec->show_ranks.push_back(rank);
  }
}

// `preflight: off`, `preflight: on`, or a mapping of its settings.
void SpecReader::Preflight(const SpecField& field, PreflightSpec* preflight) {
  if (field.value.IsScalar()) {
    std::string word;
    if (OneOf(field, {"on", "off"}, &word)) preflight->enabled = word == "on";
    return;
  }
  std::map<std::string, SpecField> fields = Fields(field.value, "preflight", field.mark);
  if (fields.count("timeout")) Duration(fields["timeout"], &preflight->timeout_s);
  if (fields.count("min_free")) ByteSize(fields["min_free"], &preflight->min_free_bytes);
  if (fields.count("paths")) StringList(fields["paths"], &preflight->paths, false);
  if (fields.count("clock_offset")) {
    std::string word;
    DurationOrWord(fields["clock_offset"], {{"off", 0}}, &preflight->max_clock_offset_s, &word);
  }
  if (fields.count("imports")) {
    const SpecField& imports = fields["imports"];
    preflight->imports_auto = imports.value.IsScalar() && imports.value.Scalar() == "auto";
    if (!preflight->imports_auto) StringList(imports, &preflight->imports, false);
  }
  std::string check;
  if (fields.count("import_check") && OneOf(fields["import_check"], {"locate", "import"}, &check)) {
    preflight->import_modules = check == "import";
  }
  std::string collective;
  if (fields.count("collective") &&
      OneOf(fields["collective"], {"auto", "on", "off"}, &collective)) {
    preflight->collective = collective != "off";
    preflight->collective_auto = collective == "auto";
  }
  std::string engine;
  if (fields.count("collective_engine") &&
      OneOf(fields["collective_engine"], {"auto", "tcp"}, &engine)) {
    preflight->collective_tcp = engine == "tcp";
  }
  if (fields.count("collective_budget")) {
    Duration(fields["collective_budget"], &preflight->collective_budget_s);
  }
  if (fields.count("collective_size")) {
    ByteSize(fields["collective_size"], &preflight->collective_bytes);
  }
  if (fields.count("slow_share")) Share(fields["slow_share"], &preflight->slow_share);
}

// A share: "20%", or a fraction such as 0.2.
void SpecReader::Share(const SpecField& field, double* out) {
  constexpr absl::string_view kExpected = "a share (\"20%\", or a fraction such as 0.2)";
  std::string text;
  if (!Scalar(field, kExpected, &text)) return;
  const bool percent = absl::EndsWith(text, "%");
  if (percent) text.pop_back();
  double value = 0;
  if (!absl::SimpleAtod(absl::StripAsciiWhitespace(text), &value)) {
    WrongType(field, kExpected);
    return;
  }
  *out = percent ? value / 100 : value;
}

void SpecReader::Scheduler(const SpecField& field, SchedulerSpec* scheduler) {
  std::map<std::string, SpecField> fields = Fields(field.value, "scheduler", field.mark);
  if (fields.count("type")) String(fields["type"], &scheduler->type);
  if (fields.count("site")) String(fields["site"], &scheduler->site);
  if (fields.count("account")) String(fields["account"], &scheduler->account);
  if (fields.count("queue")) String(fields["queue"], &scheduler->queue);
  if (fields.count("walltime")) Walltime(fields["walltime"], scheduler);
  if (fields.count("filesystems")) {
    std::vector<std::string> items;
    StringList(fields["filesystems"], &items, /*split_command=*/false);
    // PBS writes them joined ("home:eagle"); accept that form as well as a list.
    for (const std::string& item : items) {
      for (absl::string_view name :
           absl::StrSplit(item, absl::ByAnyChar(":,"), absl::SkipEmpty())) {
        scheduler->filesystems.emplace_back(name);
      }
    }
  }
  if (fields.count("modules")) StringList(fields["modules"], &scheduler->modules, false);
  if (fields.count("setup")) {
    std::vector<std::string> items;
    StringList(fields["setup"], &items, /*split_command=*/false);
    // A block scalar ("setup: |") holds several lines.
    for (const std::string& item : items) {
      std::vector<std::string> lines = absl::StrSplit(item, '\n');
      while (!lines.empty() && lines.back().empty()) lines.pop_back();
      scheduler->setup.insert(scheduler->setup.end(), lines.begin(), lines.end());
    }
  }
  if (std::string word;
      fields.count("python_setup") && OneOf(fields["python_setup"], {"site", "off"}, &word)) {
    scheduler->site_python_setup = word == "site";
  }
  if (fields.count("directives") && fields.count("extra")) {
    Report(fields["extra"].mark, "scheduler.extra",
           "scheduler.extra and scheduler.directives are the same setting; give one");
  } else if (fields.count("directives")) {
    StringMap(fields["directives"], &scheduler->extra);
  } else if (fields.count("extra")) {
    StringMap(fields["extra"], &scheduler->extra);
    Place("scheduler.directives", fields["extra"].mark);
  }
}

void SpecReader::Walltime(const SpecField& field, SchedulerSpec* scheduler) {
  constexpr absl::string_view kExpected = "a walltime (\"HH:MM:SS\", \"MM:SS\" or minutes)";
  if (field.value.IsNull() || (field.value.IsScalar() && field.value.Scalar().empty())) {
    scheduler->walltime.clear();
    scheduler->walltime_s = 0;
    return;
  }
  std::string text;
  if (!Scalar(field, kExpected, &text)) return;
  absl::StatusOr<int> seconds = ParseWalltime(text);
  if (!seconds.ok()) {
    WrongType(field, kExpected);
  } else if (*seconds == 0) {
    Report(field.mark, field.path,
           absl::StrCat("scheduler.walltime must be positive, got ",
                        DescribeYamlValue(field.value)));
  } else {
    scheduler->walltime_s = *seconds;
    scheduler->walltime = FormatWalltime(*seconds);
  }
}

void SpecReader::Study(const SpecField& field, JobSpec* spec) {
  std::map<std::string, SpecField> fields = Fields(field.value, "study", field.mark);
  if (fields.count("nodes")) ScaleList(fields["nodes"], &spec->study_nodes);
  if (fields.count("procs")) ScaleList(fields["procs"], &spec->study_procs);
}

// study.nodes / study.procs: a non-empty list of distinct positive counts, [1, 2, 4] or "1,2,4".
void SpecReader::ScaleList(const SpecField& field, std::vector<int>* counts) {
  constexpr absl::string_view kExpected = "a list of positive counts such as [1, 2, 4]";
  counts->clear();
  std::vector<std::string> items;
  if (field.value.IsScalar()) {
    items = absl::StrSplit(field.value.Scalar(), ',');
  } else if (field.value.IsSequence() && field.value.size() > 0) {
    for (const auto& item : field.value) {
      if (!item.IsScalar()) {
        WrongType(field, kExpected);
        return;
      }
      items.push_back(item.Scalar());
    }
  } else {
    WrongType(field, kExpected);
    return;
  }
  for (const std::string& item : items) {
    int n = 0;
    if (!absl::SimpleAtoi(item, &n) || n < 1 ||
        std::find(counts->begin(), counts->end(), n) != counts->end()) {
      WrongType(field, absl::StrCat(kExpected, ", each once"));
      counts->clear();
      return;
    }
    counts->push_back(n);
  }
}

}  // namespace dlaunch
