#include "launcher/submit/batch_script.h"

#include <kainjow/mustache.hpp>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <limits>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/shell_quote.h"

namespace dlaunch {
namespace {

using kainjow::mustache::data;
using kainjow::mustache::mustache;

constexpr int kDefaultWalltimeS = 3600;
constexpr size_t kMaxNameLength = 64;

// Directive keys for `scheduler.directives`: one or two dashes and an option name.
absl::Status CheckDirectiveKey(const std::string& key) {
  std::string rest = key;
  if (absl::StartsWith(rest, "--")) {
    rest = rest.substr(2);
  } else if (absl::StartsWith(rest, "-")) {
    rest = rest.substr(1);
  } else {
    return absl::InvalidArgumentError(absl::StrCat(
        "scheduler.directives key \"", absl::CHexEscape(key),
        "\" must be an option such as -m or --mail-type"));
  }
  if (rest.empty() || !absl::ascii_isalpha(static_cast<unsigned char>(rest[0]))) {
    return absl::InvalidArgumentError(absl::StrCat(
        "scheduler.directives key \"", absl::CHexEscape(key), "\" is not an option name"));
  }
  return CheckDirectiveValue(absl::StrCat("scheduler.directives key \"", key, "\""), rest);
}

// A walltime the script will ask for: the one walltime grammar, and more than zero.
absl::StatusOr<int> RequestedWalltime(const std::string& text, const std::string& what) {
  absl::StatusOr<int> seconds = ParseWalltime(text);
  if (!seconds.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(what, ": ", seconds.status().message()));
  }
  if (*seconds == 0) return absl::InvalidArgumentError(absl::StrCat(what, " must be positive"));
  return *seconds;
}

// Mustache treats an empty string as true in sections, so optional values are left unset
// instead: `{{#queue}}-q {{queue}}{{/queue}}` then disappears when there is no queue.
void SetOptional(data* values, const std::string& key, const std::string& value) {
  if (!value.empty()) values->set(key, value);
}

data StringList(const std::vector<std::string>& items) {
  data list{data::type::list};
  for (const auto& s : items) list.push_back(data{s});
  return list;
}

// Renders one mustache template with shell-oriented settings: no HTML escaping (values are
// checked or quoted before they get here) and parse errors reported with the template's name.
absl::StatusOr<std::string> RenderMustache(const std::string& text, const data& values,
                                           const std::string& what) {
  mustache tmpl{text};
  if (!tmpl.is_valid()) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, ": template error: ", tmpl.error_message()));
  }
  tmpl.set_custom_escape([](const std::string& s) { return s; });
  std::string out = tmpl.render(values);
  if (!tmpl.is_valid()) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, ": template error: ", tmpl.error_message()));
  }
  return out;
}

}  // namespace

int RequestedGpusPerNode(const JobSpec& spec, const SiteProfile& profile) {
  if (spec.gpus_per_node > 0) return spec.gpus_per_node;
  if (spec.gpus_per_proc > 0 && spec.nproc_per_node > 0) {
    // In 64 bits: two large counts must reach the scheduler (which refuses them), not wrap.
    const int64_t product = int64_t{spec.gpus_per_proc} * spec.nproc_per_node;
    return static_cast<int>(std::min<int64_t>(product, std::numeric_limits<int>::max()));
  }
  return profile.gpus_per_node;
}

bool IsPythonCommand(const JobSpec& spec) {
  if (spec.command.empty()) return false;
  const std::string base = std::filesystem::path(spec.command[0]).filename().string();
  return base == "python" || absl::StartsWith(base, "python3");
}

absl::StatusOr<ResolvedSchedulerSettings> ResolveSchedulerSettings(const JobSpec& spec,
                                                                   const SiteProfile& profile) {
  const SchedulerSpec& s = spec.scheduler;
  ResolvedSchedulerSettings r;
  r.queue = s.queue.empty() ? profile.default_queue : s.queue;
  r.account = s.account.empty() ? profile.default_account : s.account;
  r.filesystems = s.filesystems.empty() ? profile.default_filesystems : s.filesystems;
  if (s.walltime_s > 0) {
    r.walltime_s = s.walltime_s;
  } else if (!s.walltime.empty()) {
    absl::StatusOr<int> w = RequestedWalltime(s.walltime, "scheduler.walltime");
    if (!w.ok()) return w.status();
    r.walltime_s = *w;
  } else if (!profile.default_walltime.empty()) {
    absl::StatusOr<int> w = RequestedWalltime(
        profile.default_walltime, absl::StrCat("site ", profile.name, " defaults.walltime"));
    if (!w.ok()) return w.status();
    r.walltime_s = *w;
  } else {
    r.walltime_s = kDefaultWalltimeS;
  }
  // PBS accepts queue@server; accounts are project names.
  if (!r.queue.empty()) {
    absl::Status st = CheckDirectiveValue("scheduler.queue", r.queue, "@");
    if (!st.ok()) return st;
  }
  if (!r.account.empty()) {
    absl::Status st = CheckDirectiveValue("scheduler.account", r.account);
    if (!st.ok()) return st;
  }
  for (const auto& f : r.filesystems) {
    absl::Status st = CheckDirectiveValue("scheduler.filesystems entry", f);
    if (!st.ok()) return st;
  }
  return r;
}

namespace {

// What RenderBatchScript refuses before looking at the profile's templates: a profile of another
// scheduler, a job name or node range no scheduler takes, relative paths, an odd job id.
absl::Status CheckRenderInputs(const JobSpec& spec, const SiteProfile& profile,
                               const RenderContext& ctx) {
  if (!spec.scheduler.type.empty() && spec.scheduler.type != profile.scheduler) {
    return absl::InvalidArgumentError(absl::StrCat(
        "scheduler.type is '", spec.scheduler.type, "' but site '", profile.name, "' uses ",
        profile.scheduler));
  }
  absl::Status st = CheckDirectiveValue("name", spec.name);
  if (!st.ok()) return st;
  if (!absl::ascii_isalpha(static_cast<unsigned char>(spec.name[0]))) {
    return absl::InvalidArgumentError(absl::StrCat(
        "name \"", spec.name, "\" must start with a letter (PBS refuses other job names)"));
  }
  if (spec.name.size() > kMaxNameLength) {
    return absl::InvalidArgumentError(
        absl::StrCat("name is ", spec.name.size(), " characters; at most ", kMaxNameLength));
  }
  if (spec.max_nodes < 1 || spec.min_nodes < 1 || spec.min_nodes > spec.max_nodes) {
    return absl::InvalidArgumentError(absl::StrCat("nodes: min ", spec.min_nodes, ", max ",
                                                   spec.max_nodes, " is not a valid range"));
  }
  for (const std::string* path : {&ctx.job_dir, &ctx.dlaunch_binary, &ctx.resolved_spec_path,
                                  &ctx.submit_cwd}) {
    if (path->empty() || (*path)[0] != '/') {
      return absl::InvalidArgumentError(absl::StrCat(
          "render context paths must be absolute, got \"", absl::CHexEscape(*path), "\""));
    }
  }
  return CheckDirectiveValue("job id", ctx.job_id);
}

// The site's modules, then the job's, each checked for a `module load` line.
absl::StatusOr<std::vector<std::string>> JobModules(const JobSpec& spec,
                                                    const SiteProfile& profile) {
  std::vector<std::string> modules = profile.modules;
  modules.insert(modules.end(), spec.scheduler.modules.begin(), spec.scheduler.modules.end());
  for (const auto& m : modules) {
    absl::Status st = CheckDirectiveValue("scheduler.modules entry", m, "/+:");
    if (!st.ok()) return st;
  }
  return modules;
}

// Values the profile's directive templates may use. Everything here is already checked.
absl::StatusOr<data> DirectiveValues(const JobSpec& spec, const SiteProfile& profile,
                                     const RenderContext& ctx,
                                     const ResolvedSchedulerSettings& sched) {
  data values;
  values.set("name", spec.name);
  values.set("job_id", ctx.job_id);
  // Spares are hosts of the allocation beyond nodes.max, so the batch job asks for them too.
  const int requested = RequestedNodes(spec);
  values.set("nodes", std::to_string(requested));
  values.set("min_nodes", std::to_string(spec.min_nodes));
  values.set("nodes_range", spec.min_nodes == requested
                                ? std::to_string(requested)
                                : absl::StrCat(spec.min_nodes, "-", requested));
  values.set("walltime_hms", FormatWalltimeHms(sched.walltime_s));
  values.set("walltime_minutes", std::to_string((sched.walltime_s + 59) / 60));
  values.set("walltime_seconds", std::to_string(sched.walltime_s));
  SetOptional(&values, "queue", sched.queue);
  SetOptional(&values, "account", sched.account);
  SetOptional(&values, "filesystems",
              absl::StrJoin(sched.filesystems, profile.filesystems_separator));
  // The job's own GPU count first: on a cluster that allots GPUs as a resource (Slurm GRES,
  // PBS ngpus) a job that asks for none gets nodes without any.
  const int gpus = RequestedGpusPerNode(spec, profile);
  SetOptional(&values, "gpus_per_node", gpus > 0 ? std::to_string(gpus) : "");
  const bool directives_use_job_dir =
      std::any_of(profile.directives.begin(), profile.directives.end(),
                  [](const std::string& d) { return absl::StrContains(d, "job_dir"); });
  if (directives_use_job_dir) {
    // No ":" (PBS reads host:path in -o/-e) and no "," or "=" (option lists).
    absl::Status st = CheckDirectiveValue("job directory", ctx.job_dir, "/+@");
    if (!st.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(
          st.message(), " (site ", profile.name,
          " writes scheduler output there; choose a job root without such characters)"));
    }
  }
  values.set("job_dir", ctx.job_dir);
  return values;
}

// The directive lines after the prefix: the profile's templates rendered (empty ones dropped),
// then the job's own `scheduler.directives`, checked.
absl::StatusOr<std::vector<std::string>> RenderDirectives(const JobSpec& spec,
                                                          const SiteProfile& profile,
                                                          const data& values) {
  std::vector<std::string> directives;
  for (size_t i = 0; i < profile.directives.size(); ++i) {
    absl::StatusOr<std::string> line = RenderMustache(
        profile.directives[i], values,
        absl::StrCat(profile.source_path, ": directives[", i, "]"));
    if (!line.ok()) return line.status();
    std::string d(absl::StripAsciiWhitespace(*line));
    if (d.empty()) continue;
    if (d.find_first_of("\n\r") != std::string::npos) {
      return absl::InvalidArgumentError(absl::StrCat(
          profile.source_path, ": directives[", i, "] renders to more than one line"));
    }
    directives.push_back(d);
  }
  for (const auto& [key, value] : spec.scheduler.extra) {
    absl::Status st = CheckDirectiveKey(key);
    if (!st.ok()) return st;
    if (value.empty()) {
      directives.push_back(key);
      continue;
    }
    st = CheckDirectiveValue(absl::StrCat("scheduler.directives value for ", key), value,
                             "/+@:,=");
    if (!st.ok()) return st;
    directives.push_back(absl::StartsWith(key, "--") ? absl::StrCat(key, "=", value)
                                                     : absl::StrCat(key, " ", value));
  }
  return directives;
}

// The rest of what the script template uses: directives, modules and setup lines, the launch
// line, and the shell words of the `dlaunch run` line, quoted here so a template cannot forget.
void AddScriptValues(const JobSpec& spec, const SiteProfile& profile, const RenderContext& ctx,
                     const std::vector<std::string>& directives,
                     const std::vector<std::string>& modules, data* values) {
  values->set("directives", StringList(directives));
  values->set("site", profile.name);
  values->set("scheduler", profile.scheduler);
  values->set("modules", StringList(modules));
  // A Python worker needs the site's Python (on Polaris ALCF's conda PyTorch) on every node;
  // the job's own setup lines come after, so they can still switch to another environment.
  std::vector<std::string> site_setup = profile.setup;
  if (IsPythonCommand(spec) && spec.scheduler.site_python_setup) {
    site_setup.insert(site_setup.end(), profile.python_setup.begin(), profile.python_setup.end());
  }
  values->set("site_setup", StringList(site_setup));
  values->set("setup", StringList(spec.scheduler.setup));
  SetOptional(values, "nodefile_var", profile.nodefile_var);
  values->set("launcher", profile.launcher);
  SetOptional(values, "launch", profile.launch);
  values->set("dlaunch", ShellQuote(ctx.dlaunch_binary));
  // A spec with a study section runs the whole study in the one allocation.
  const bool study = !spec.study_nodes.empty() || !spec.study_procs.empty();
  values->set("dlaunch_command", study ? "scale" : "run");
  values->set("spec_path", ShellQuote(ctx.resolved_spec_path));
  values->set("job_dir_q", ShellQuote(ctx.job_dir));
  values->set("submit_cwd", ShellQuote(ctx.submit_cwd));
  values->set("ranks_per_node", spec.nproc_per_node > 0 ? std::to_string(spec.nproc_per_node)
                                : profile.gpus_per_node > 0
                                    ? std::to_string(profile.gpus_per_node)
                                    : std::string("1"));
}

}  // namespace

absl::StatusOr<std::string> RenderBatchScript(const JobSpec& spec, const SiteProfile& profile,
                                              const RenderContext& ctx) {
  if (absl::Status st = CheckRenderInputs(spec, profile, ctx); !st.ok()) return st;
  absl::StatusOr<ResolvedSchedulerSettings> sched = ResolveSchedulerSettings(spec, profile);
  if (!sched.ok()) return sched.status();
  absl::StatusOr<std::vector<std::string>> modules = JobModules(spec, profile);
  if (!modules.ok()) return modules.status();
  absl::StatusOr<data> values = DirectiveValues(spec, profile, ctx, *sched);
  if (!values.ok()) return values.status();
  absl::StatusOr<std::vector<std::string>> directives = RenderDirectives(spec, profile, *values);
  if (!directives.ok()) return directives.status();
  AddScriptValues(spec, profile, ctx, *directives, *modules, &*values);
  return RenderMustache(profile.template_text, *values, profile.template_path);
}

}  // namespace dlaunch
