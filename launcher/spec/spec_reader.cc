#include "launcher/spec/spec_reader.h"

#include <algorithm>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "common/did_you_mean.h"
#include "launcher/spec/hostlist.h"
#include "launcher/spec/job_spec_checks.h"
#include "launcher/spec/job_spec_schema.h"
#include "launcher/spec/spec_scalars.h"

namespace dlaunch {
namespace {

using Keys = std::vector<std::string>;

std::string Join(const std::string& section, const std::string& key) {
  return section.empty() ? key : absl::StrCat(section, ".", key);
}

bool LooksNumeric(const std::string& text) {
  double ignored;
  return absl::SimpleAtod(text, &ignored);
}

// How a value is named in "got ..." messages.
std::string Describe(const YAML::Node& node) {
  switch (node.Type()) {
    case YAML::NodeType::Null:
    case YAML::NodeType::Undefined:
      return "nothing";
    case YAML::NodeType::Sequence:
      return "a list";
    case YAML::NodeType::Map:
      return "a mapping";
    case YAML::NodeType::Scalar:
      if (node.Tag() != "!" && LooksNumeric(node.Scalar())) return node.Scalar();
      return absl::StrCat("\"", node.Scalar(), "\"");
  }
  return "?";
}

}  // namespace

void SpecReader::WrongType(const SpecField& field, absl::string_view expected) {
  Report(field.mark, field.path,
         absl::StrCat(field.path, " must be ", expected, ", got ", Describe(field.value)));
}

std::map<std::string, SpecField> SpecReader::Fields(const YAML::Node& map,
                                                    const std::string& section,
                                                    const YAML::Mark& map_mark) {
  std::map<std::string, SpecField> fields;
  if (map.IsNull()) return fields;
  const Keys& allowed = SchemaKeys().at(section);
  if (!map.IsMap()) {
    SpecField whole{section, map, map_mark};
    WrongType(whole, absl::StrCat("a mapping with keys ", absl::StrJoin(allowed, ", ")));
    return fields;
  }
  for (const auto& entry : map) {
    const YAML::Node& key = entry.first;
    const YAML::Node& value = entry.second;
    if (!key.IsScalar()) {
      Report(key.Mark(), "", "keys must be plain names");
      continue;
    }
    const std::string name = key.Scalar();
    const std::string path = Join(section, name);
    if (std::find(allowed.begin(), allowed.end(), name) == allowed.end()) {
      std::string where = section.empty() ? "" : absl::StrCat(" in '", section, "'");
      std::string suggestion = ClosestMatch(name, allowed);
      if (suggestion.empty() && section.empty()) {
        if (auto alias = KnownAliases().find(name); alias != KnownAliases().end()) {
          suggestion = alias->second;
        }
      }
      if (suggestion.empty()) {
        // A key that belongs to another section ("port" at the top is rendezvous.port).
        for (const auto& [other, keys] : SchemaKeys()) {
          if (other != section && std::find(keys.begin(), keys.end(), name) != keys.end()) {
            suggestion = Join(other, name);
            break;
          }
        }
      }
      std::string message = absl::StrCat("unknown key '", name, "'", where);
      if (!suggestion.empty()) absl::StrAppend(&message, " (did you mean '", suggestion, "'?)");
      Report(key.Mark(), "", std::move(message));
      continue;
    }
    if (auto first = fields.find(name); first != fields.end()) {
      Report(key.Mark(), "",
             absl::StrCat("duplicate key '", path, "' (first given on line ",
                          marks_[path].line + 1, ")"));
      continue;
    }
    // An empty value ("nodes:" then a newline) is positioned at the next line; point at the key.
    const YAML::Mark mark = value.IsNull() && value.Tag().empty() ? key.Mark() : value.Mark();
    marks_[path] = key.Mark();
    fields[name] = SpecField{path, value, mark};
  }
  // Later problems are placed at values, so keep value positions from here on; duplicates above
  // needed the key line of the first occurrence.
  for (const auto& [name, field] : fields) marks_[field.path] = field.mark;
  return fields;
}

bool SpecReader::Scalar(const SpecField& field, absl::string_view expected, std::string* out) {
  if (!field.value.IsScalar()) {
    WrongType(field, expected);
    return false;
  }
  *out = field.value.Scalar();
  return true;
}

void SpecReader::String(const SpecField& field, std::string* out) {
  if (field.value.IsNull()) {
    out->clear();
    return;
  }
  Scalar(field, "a string", out);
}

void SpecReader::Int(const SpecField& field, int* out) {
  std::string text;
  if (!Scalar(field, "an integer", &text)) return;
  if (!absl::SimpleAtoi(text, out)) WrongType(field, "an integer");
}

void SpecReader::Duration(const SpecField& field, double* out) {
  constexpr absl::string_view kExpected =
      "a duration (seconds, or a string such as \"30s\", \"5m\", \"1h\", \"250ms\")";
  std::string text;
  if (!Scalar(field, kExpected, &text)) return;
  absl::StatusOr<double> seconds = ParseDuration(text);
  if (!seconds.ok()) {
    WrongType(field, kExpected);
    return;
  }
  *out = *seconds;
}

void SpecReader::DurationOrWord(const SpecField& field, const std::map<std::string, double>& words,
                                double* out, std::string* word) {
  std::string expected = "a duration (seconds, or a string such as \"30s\", \"5m\")";
  std::vector<std::string> names;
  for (const auto& [name, value] : words) {
    absl::StrAppend(&expected, " or \"", name, "\"");
    names.push_back(name);
  }
  std::string text;
  if (!Scalar(field, expected, &text)) return;
  if (auto it = words.find(text); it != words.end()) {
    *out = it->second;
    *word = text;
    return;
  }
  absl::StatusOr<double> seconds = ParseDuration(text);
  if (!seconds.ok()) {
    std::string message = absl::StrCat(field.path, " must be ", expected, ", got ",
                                       Describe(field.value));
    if (std::string near = ClosestMatch(text, names); !near.empty()) {
      absl::StrAppend(&message, "; did you mean \"", near, "\"?");
    }
    Report(field.mark, field.path, std::move(message));
    return;
  }
  *out = *seconds;
  word->clear();
}

void SpecReader::StringList(const SpecField& field, std::vector<std::string>* out,
                            bool split_command) {
  if (field.value.IsNull()) return;
  if (field.value.IsScalar()) {
    if (!split_command) {
      out->push_back(field.value.Scalar());
      return;
    }
    absl::StatusOr<std::vector<std::string>> words = SplitCommandLine(field.value.Scalar());
    if (!words.ok()) {
      Report(field.mark, field.path, absl::StrCat(field.path, ": ", words.status().message()));
      return;
    }
    out->insert(out->end(), words->begin(), words->end());
    return;
  }
  if (!field.value.IsSequence()) {
    WrongType(field, "a list of strings");
    return;
  }
  for (size_t i = 0; i < field.value.size(); ++i) {
    const YAML::Node item = field.value[i];
    if (!item.IsScalar()) {
      Report(item.Mark(), field.path,
             absl::StrCat(field.path, "[", i, "] must be a string, got ", Describe(item)));
      continue;
    }
    out->push_back(item.Scalar());
  }
}

void SpecReader::StringMap(const SpecField& field, std::map<std::string, std::string>* out) {
  if (field.value.IsNull()) return;
  if (!field.value.IsMap()) {
    WrongType(field, "a mapping of names to values");
    return;
  }
  for (const auto& entry : field.value) {
    if (!entry.first.IsScalar()) {
      Report(entry.first.Mark(), field.path, "keys must be plain names");
      continue;
    }
    const std::string name = entry.first.Scalar();
    const std::string path = Join(field.path, name);
    marks_[path] = entry.first.Mark();
    if (out->count(name) > 0) {
      Report(entry.first.Mark(), path, absl::StrCat("duplicate key '", path, "'"));
      continue;
    }
    if (entry.second.IsNull()) {
      (*out)[name] = "";
    } else if (entry.second.IsScalar()) {
      (*out)[name] = entry.second.Scalar();
    } else {
      Report(entry.second.Mark(), path,
             absl::StrCat(path, " must be a string, got ", Describe(entry.second)));
    }
  }
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
  if (min != max) marks_["nodes.min"] = marks_["nodes.max"] = field.mark;
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
    absl::StatusOr<std::vector<std::string>> hosts = ExpandHostlist(list);
    if (!hosts.ok()) {
      Report(field.mark, field.path, absl::StrCat(field.path, ": ", hosts.status().message()));
      continue;
    }
    spec->hosts.insert(spec->hosts.end(), hosts->begin(), hosts->end());
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
    marks_[absl::StrCat(field.path, "[", i, "]")] = items[i].Mark();
    spec->show_ranks.push_back(rank);
  }
}

void SpecReader::Scheduler(const SpecField& field, SchedulerSpec* scheduler) {
  std::map<std::string, SpecField> fields = Fields(field.value, "scheduler", field.mark);
  if (fields.count("type")) String(fields["type"], &scheduler->type);
  if (fields.count("site")) String(fields["site"], &scheduler->site);
  if (fields.count("account")) String(fields["account"], &scheduler->account);
  if (fields.count("queue")) String(fields["queue"], &scheduler->queue);
  if (fields.count("walltime")) {
    const SpecField& walltime = fields["walltime"];
    std::string text;
    if (walltime.value.IsNull() || (walltime.value.IsScalar() && walltime.value.Scalar().empty())) {
      scheduler->walltime.clear();
      scheduler->walltime_s = 0;
    } else if (Scalar(walltime, "a walltime (\"HH:MM:SS\", \"MM:SS\" or minutes)", &text)) {
      absl::StatusOr<int> seconds = ParseWalltime(text);
      if (seconds.ok() && *seconds == 0) {
        Report(walltime.mark, walltime.path,
               absl::StrCat("scheduler.walltime must be positive, got ", Describe(walltime.value)));
      } else if (seconds.ok()) {
        scheduler->walltime_s = *seconds;
        scheduler->walltime = FormatWalltime(*seconds);
      } else {
        WrongType(walltime, "a walltime (\"HH:MM:SS\", \"MM:SS\" or minutes)");
      }
    }
  }
  if (fields.count("filesystems")) {
    std::vector<std::string> items;
    StringList(fields["filesystems"], &items, /*split_command=*/false);
    // PBS writes them joined ("home:eagle"); accept that form as well as a list.
    for (const std::string& item : items) {
      for (absl::string_view name : absl::StrSplit(item, absl::ByAnyChar(":,"), absl::SkipEmpty())) {
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
  if (fields.count("directives") && fields.count("extra")) {
    Report(fields["extra"].mark, "scheduler.extra",
           "scheduler.extra and scheduler.directives are the same setting; give one");
  } else if (fields.count("directives")) {
    StringMap(fields["directives"], &scheduler->extra);
  } else if (fields.count("extra")) {
    StringMap(fields["extra"], &scheduler->extra);
    marks_["scheduler.directives"] = fields["extra"].mark;
  }
}

void SpecReader::Read(const YAML::Node& root, JobSpec* spec) {
  const YAML::Mark root_mark = root.Mark().is_null() ? YAML::Mark() : root.Mark();
  if (!root.IsNull() && !root.IsMap()) {
    Report(root_mark, "",
           absl::StrCat("a job must be a mapping of keys (name:, nodes:, command: ...), got ",
                        Describe(root)));
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
  if (has("rendezvous")) {
    auto fields = Fields(top["rendezvous"].value, "rendezvous", top["rendezvous"].mark);
    if (fields.count("port")) Int(fields["port"], &spec->control_port);
    if (fields.count("master_port")) Int(fields["master_port"], &spec->master_port);
    if (fields.count("join_timeout")) Duration(fields["join_timeout"], &spec->join_timeout_s);
    if (fields.count("last_call")) Duration(fields["last_call"], &spec->last_call_s);
  }
  if (has("heartbeat")) {
    auto fields = Fields(top["heartbeat"].value, "heartbeat", top["heartbeat"].mark);
    if (fields.count("interval")) Duration(fields["interval"], &spec->heartbeat_interval_s);
    if (fields.count("misses")) Int(fields["misses"], &spec->heartbeat_misses);
  }
  if (has("stop")) {
    auto fields = Fields(top["stop"].value, "stop", top["stop"].mark);
    if (fields.count("grace")) Duration(fields["grace"], &spec->stop_grace_s);
    if (fields.count("exit_timeout")) {
      std::string word;
      DurationOrWord(fields["exit_timeout"], {{"off", 0}}, &spec->exit_timeout_s, &word);
    }
  }
  if (has("health")) {
    auto fields = Fields(top["health"].value, "health", top["health"].mark);
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
  if (has("max_restarts")) Int(top["max_restarts"], &spec->max_restarts);
  if (has("restarts")) {
    auto fields = Fields(top["restarts"].value, "restarts", top["restarts"].mark);
    if (fields.count("backoff")) Duration(fields["backoff"], &spec->restart_backoff_s);
    if (fields.count("backoff_max")) Duration(fields["backoff_max"], &spec->restart_backoff_max_s);
    if (fields.count("crash_loop")) Int(fields["crash_loop"], &spec->crash_loop_limit);
    if (fields.count("node_failures")) Int(fields["node_failures"], &spec->node_failure_limit);
  }
  if (has("logs")) {
    auto fields = Fields(top["logs"].value, "logs", top["logs"].mark);
    if (fields.count("dir")) String(fields["dir"], &spec->job_root);
    if (fields.count("ranks")) Ranks(fields["ranks"], spec);
    if (fields.count("tail_lines")) Int(fields["tail_lines"], &spec->tail_lines);
    if (fields.count("summary_interval")) {
      Duration(fields["summary_interval"], &spec->summary_interval_s);
    }
  }
  if (has("gpus")) {
    auto fields = Fields(top["gpus"].value, "gpus", top["gpus"].mark);
    if (fields.count("binding")) {
      std::string binding;
      const SpecField& field = fields["binding"];
      if (Scalar(field, "\"shared\" or \"isolate\"", &binding)) {
        if (binding == "shared" || binding == "isolate") {
          spec->isolate_gpus = binding == "isolate";
          spec->gpu_binding_given = true;
        } else {
          std::string message = absl::StrCat("gpus.binding must be \"shared\" or \"isolate\", got ",
                                             Describe(field.value));
          if (std::string near = ClosestMatch(binding, {"shared", "isolate"}); !near.empty()) {
            absl::StrAppend(&message, " (did you mean '", near, "'?)");
          }
          Report(field.mark, field.path, std::move(message));
        }
      }
    }
    if (fields.count("per_proc")) Int(fields["per_proc"], &spec->gpus_per_proc);
  }
  if (has("cpus")) Cpus(top["cpus"], spec);
  if (has("scheduler")) Scheduler(top["scheduler"], &spec->scheduler);
  CheckValues(*spec, root_mark);
}

void SpecReader::Cpus(const SpecField& field, JobSpec* spec) {
  std::map<std::string, SpecField> fields = Fields(field.value, "cpus", field.mark);
  if (fields.count("binding")) {
    std::string binding;
    const SpecField& b = fields["binding"];
    if (Scalar(b, "\"cores\" or \"none\"", &binding)) {
      if (binding == "cores" || binding == "none") {
        spec->cpu_binding_none = binding == "none";
      } else {
        std::string message =
            absl::StrCat("cpus.binding must be \"cores\" or \"none\", got ", Describe(b.value));
        if (std::string near = ClosestMatch(binding, {"cores", "none"}); !near.empty()) {
          absl::StrAppend(&message, " (did you mean '", near, "'?)");
        }
        Report(b.mark, b.path, std::move(message));
      }
    }
  }
  if (fields.count("map")) CpuMap(fields["map"], &spec->cpu_map);
}

// `map:` is a list with one entry per local rank: {cpus: "0-7,32-39", gpu: 3}, or just the CPU
// list. Each entry's position is kept so the value checks can point at it.
void SpecReader::CpuMap(const SpecField& field, std::vector<CpuMapEntry>* map) {
  constexpr absl::string_view kEntry = "a CPU list such as \"0-7\" or {cpus: \"0-7\", gpu: 0}";
  map->clear();
  if (field.value.IsNull()) return;
  if (!field.value.IsSequence()) {
    WrongType(field, "a list with one entry per local rank");
    return;
  }
  for (size_t i = 0; i < field.value.size(); ++i) {
    const std::string path = absl::StrCat(field.path, "[", i, "]");
    const YAML::Node item = field.value[i];
    marks_[path] = item.Mark();
    CpuMapEntry entry;
    if (item.IsMap()) {
      for (const auto& kv : item) {
        const std::string key = kv.first.IsScalar() ? kv.first.Scalar() : "";
        const SpecField value{absl::StrCat(path, ".", key), kv.second, kv.second.Mark()};
        if (key == "cpus") {
          CpuList(value, &entry.cpus);
        } else if (key == "gpu") {
          Int(value, &entry.gpu);
        } else {
          Report(kv.first.Mark(), "",
                 absl::StrCat("unknown key '", key, "' in '", path, "' (expected cpus, gpu)"));
        }
      }
      if (!item["cpus"]) Report(item.Mark(), path, absl::StrCat(path, " has no 'cpus'"));
    } else if (item.IsScalar()) {
      CpuList(SpecField{path, item, item.Mark()}, &entry.cpus);
    } else {
      WrongType(SpecField{path, item, item.Mark()}, kEntry);
    }
    map->push_back(std::move(entry));
  }
}

void SpecReader::CpuList(const SpecField& field, std::vector<int>* cpus) {
  std::string text;
  if (!Scalar(field, "a CPU list such as \"0-7,32-39\"", &text)) return;
  absl::StatusOr<std::vector<int>> parsed = ParseCpuList(text);
  if (!parsed.ok()) {
    Report(field.mark, field.path, absl::StrCat(field.path, ": ", parsed.status().message()));
    return;
  }
  *cpus = *std::move(parsed);
}

void SpecReader::CheckValues(const JobSpec& spec, const YAML::Mark& root_mark) {
  for (const SpecProblem& problem : CheckJobSpec(spec)) {
    // The key's own position, else its nearest written parent ("hosts[2]" -> "hosts"), else the
    // top of the file (a missing key has no position of its own).
    std::string path = problem.path;
    bool already_reported = false;
    YAML::Mark mark = root_mark;
    while (!path.empty()) {
      if (bad_paths_.count(path)) already_reported = true;
      if (auto found = marks_.find(path); found != marks_.end()) {
        mark = found->second;
        break;
      }
      const size_t cut = path.find_last_of(".[");
      path = cut == std::string::npos ? "" : path.substr(0, cut);
    }
    if (!already_reported && !bad_paths_.count(problem.path)) {
      problems_.push_back({mark, problem.message});
    }
  }
}

}  // namespace dlaunch
