#include "launcher/submit/site_profile.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <filesystem>
#include <functional>
#include <map>
#include <set>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/file_io.h"
#include "common/shell_quote.h"
#include "launcher/jobdir/job_record.h"
#include "launcher/spec/names.h"
#include "launcher/spec/spec_scalars.h"
#include "launcher/spec/yaml_guard.h"
#include "launcher/submit/scheduler.h"

namespace dlaunch {
namespace fs = std::filesystem;
namespace {

// Readers of one mapping's keys, by key.
using KeyReaders = std::map<std::string, std::function<void(const YAML::Node&)>>;

// Collects problems instead of stopping at the first, so a broken profile is fixed in one pass;
// each is placed as FILE:LINE:COL like job.yaml's, and reported in file order.
class ProfileReader {
 public:
  explicit ProfileReader(std::string file) : file_(std::move(file)) {}

  void Error(const YAML::Node& at, const std::string& msg) {
    errors_.push_back({at.Mark(), msg});
  }

  std::string String(const YAML::Node& n, const std::string& key) {
    if (!n.IsScalar()) {
      Error(n, absl::StrCat("'", key, "' must be a string"));
      return "";
    }
    return n.as<std::string>();
  }

  int Int(const YAML::Node& n, const std::string& key) {
    int v = 0;
    if (!n.IsScalar() || !absl::SimpleAtoi(n.Scalar(), &v) || v < 0) {
      Error(n, absl::StrCat("'", key, "' must be a non-negative integer"));
      return 0;
    }
    return v;
  }

  bool Bool(const YAML::Node& n, const std::string& key) {
    bool v = false;
    if (!n.IsScalar() || !YAML::convert<bool>::decode(n, v)) {
      Error(n, absl::StrCat("'", key, "' must be true or false"));
    }
    return v;
  }

  std::vector<std::string> Strings(const YAML::Node& n, const std::string& key) {
    std::vector<std::string> out;
    if (!n.IsSequence()) {
      Error(n, absl::StrCat("'", key, "' must be a list of strings"));
      return out;
    }
    for (const auto& item : n) out.push_back(String(item, key));
    return out;
  }

  // The one walltime grammar (spec_scalars.h); a limit or default of zero means nothing.
  int Walltime(const YAML::Node& n, const std::string& key) {
    absl::StatusOr<int> s = ParseWalltime(String(n, key));
    if (!s.ok()) {
      Error(n, absl::StrCat("'", key, "': ", s.status().message()));
      return 0;
    }
    if (*s == 0) {
      Error(n, absl::StrCat("'", key, "' must be positive"));
      return 0;
    }
    return *s;
  }

  // Reads a mapping through a key -> reader table; an unknown key is an error naming the
  // section and the keys it takes. `section` is "" at the top level.
  void Mapping(const YAML::Node& n, const std::string& section, const KeyReaders& readers) {
    std::vector<std::string> keys;
    for (const auto& [key, reader] : readers) keys.push_back(key);
    if (!n.IsMap()) {
      Error(n, absl::StrCat("'", section, "' must be a mapping (", absl::StrJoin(keys, ", "),
                            ")"));
      return;
    }
    for (const auto& kv : n) {
      const std::string key = kv.first.as<std::string>();
      auto reader = readers.find(key);
      if (reader != readers.end()) {
        reader->second(kv.second);
      } else if (section.empty()) {
        Error(kv.first, absl::StrCat("unknown key '", key, "'"));
      } else {
        Error(kv.first, absl::StrCat("unknown key '", key, "' in ", section, " (",
                                     absl::StrJoin(keys, ", "), ")"));
      }
    }
  }

  SiteLimits Limits(const YAML::Node& n, const std::string& key, SiteProfile* profile) {
    SiteLimits limits;
    KeyReaders readers = {
        {"min_nodes", [&](const YAML::Node& v) { limits.min_nodes = Int(v, "min_nodes"); }},
        {"max_nodes", [&](const YAML::Node& v) { limits.max_nodes = Int(v, "max_nodes"); }},
        {"max_walltime",
         [&](const YAML::Node& v) { limits.max_walltime_s = Walltime(v, "max_walltime"); }},
    };
    // The site-wide limits also say what a job must name.
    if (profile != nullptr) {
      readers["requires_account"] = [&](const YAML::Node& v) {
        profile->requires_account = Bool(v, "requires_account");
      };
      readers["requires_queue"] = [&](const YAML::Node& v) {
        profile->requires_queue = Bool(v, "requires_queue");
      };
    }
    Mapping(n, key, readers);
    return limits;
  }

  // Every problem, in file order, one per line.
  std::string Message() {
    std::stable_sort(errors_.begin(), errors_.end(), [](const Located& a, const Located& b) {
      return std::make_pair(a.mark.line, a.mark.column) <
             std::make_pair(b.mark.line, b.mark.column);
    });
    std::vector<std::string> lines;
    for (const Located& e : errors_) lines.push_back(YamlPosition(file_, e.mark) + e.message);
    return absl::StrJoin(lines, "\n");
  }

  bool ok() const { return errors_.empty(); }

 private:
  struct Located {
    YAML::Mark mark;
    std::string message;
  };
  std::string file_;
  std::vector<Located> errors_;
};

// The launch prefix is expanded by bash inside double quotes, so only plain words and ${VAR} /
// $VAR references may appear in it: no quotes, backslashes, command substitution or backticks.
absl::Status CheckLaunchLine(const std::string& launch) {
  for (size_t i = 0; i < launch.size(); ++i) {
    char c = launch[i];
    if (c == '"' || c == '\'' || c == '\\' || c == '`' || c == '\n' || c == ';' || c == '&' ||
        c == '|' || c == '<' || c == '>') {
      return absl::InvalidArgumentError(absl::StrCat(
          "'launch' may hold only words and $VAR / ${VAR} references, found '",
          std::string(1, c), "'"));
    }
    if (c == '$' && i + 1 < launch.size() && launch[i + 1] == '(') {
      return absl::InvalidArgumentError("'launch' may not use $( ) command substitution");
    }
  }
  return absl::OkStatus();
}


void ReadScheduler(ProfileReader& r, const YAML::Node& v, SiteProfile* p) {
  p->scheduler = r.String(v, "scheduler");
  if (!IsSchedulerTypeName(p->scheduler)) {
    r.Error(v, absl::StrCat("unknown scheduler '", p->scheduler, "' (",
                            absl::StrJoin(SchedulerTypeNames(), ", "), ")"));
  }
}

void ReadLauncher(ProfileReader& r, const YAML::Node& v, SiteProfile* p) {
  p->launcher = r.String(v, "launcher");
  if (!IsConcreteNodeLauncherName(p->launcher)) {
    r.Error(v, absl::StrCat("unknown launcher '", p->launcher, "' (",
                            absl::StrJoin(ConcreteNodeLauncherNames(), ", "), ")"));
  }
}

void ReadLaunch(ProfileReader& r, const YAML::Node& v, SiteProfile* p) {
  p->launch = std::string(absl::StripAsciiWhitespace(r.String(v, "launch")));
  absl::Status s = CheckLaunchLine(p->launch);
  if (!s.ok()) r.Error(v, std::string(s.message()));
}

void ReadNodefileVar(ProfileReader& r, const YAML::Node& v, SiteProfile* p) {
  p->nodefile_var = r.String(v, "nodefile_var");
  if (!p->nodefile_var.empty() && !IsShellVariableName(p->nodefile_var)) {
    r.Error(v, "'nodefile_var' must be a shell variable name");
  }
}

void ReadCommands(ProfileReader& r, const YAML::Node& v, SiteProfile* p) {
  r.Mapping(v, "commands",
            {{"submit", [&](const YAML::Node& n) { p->submit_command = r.String(n, "submit"); }},
             {"status", [&](const YAML::Node& n) { p->status_command = r.String(n, "status"); }},
             {"cancel", [&](const YAML::Node& n) { p->cancel_command = r.String(n, "cancel"); }}});
}

void ReadDefaults(ProfileReader& r, const YAML::Node& v, SiteProfile* p) {
  r.Mapping(
      v, "defaults",
      {{"queue", [&](const YAML::Node& n) { p->default_queue = r.String(n, "queue"); }},
       {"account", [&](const YAML::Node& n) { p->default_account = r.String(n, "account"); }},
       {"walltime",
        [&](const YAML::Node& n) {
          p->default_walltime = r.String(n, "walltime");
          r.Walltime(n, "walltime");  // checked here, converted when a job uses it
        }},
       {"filesystems",
        [&](const YAML::Node& n) { p->default_filesystems = r.Strings(n, "filesystems"); }},
       {"gpus_per_node",
        [&](const YAML::Node& n) { p->gpus_per_node = r.Int(n, "gpus_per_node"); }},
       {"gpu_model", [&](const YAML::Node& n) { p->gpu_model = r.String(n, "gpu_model"); }},
       {"gpu_binding", [&](const YAML::Node& n) {
          p->gpu_binding = r.String(n, "gpu_binding");
          if (p->gpu_binding != "shared" && p->gpu_binding != "isolate") {
            r.Error(n, absl::StrCat("defaults.gpu_binding must be \"shared\" or \"isolate\", got \"",
                                    p->gpu_binding, "\""));
          }
        }}});
}

void ReadQueues(ProfileReader& r, const YAML::Node& v, SiteProfile* p) {
  if (!v.IsMap()) {
    r.Error(v, "'queues' must map queue names to limits");
    return;
  }
  for (const auto& q : v) {
    const std::string queue = q.first.as<std::string>();
    p->queue_limits[queue] = r.Limits(q.second, absl::StrCat("queues.", queue), nullptr);
  }
}

// What the file leaves out: the launcher a scheduler implies, the template named after the
// scheduler; and what it must not leave out.
void CompleteProfile(ProfileReader& r, const YAML::Node& root, SiteProfile* p) {
  if (p->scheduler.empty()) r.Error(root, "'scheduler' is required");
  if (p->launcher.empty()) {
    p->launcher = p->scheduler == "slurm" ? "srun" : p->scheduler == "local" ? "local" : "";
    if (p->launcher.empty()) r.Error(root, "'launcher' is required for this scheduler");
  }
  if (p->launch.empty() && p->launcher != "local" && p->launcher != "ssh") {
    r.Error(root, absl::StrCat("'launch' (the agent-launch prefix) is required for launcher '",
                               p->launcher, "'"));
  }
  if (p->template_name.empty() && !p->scheduler.empty()) {
    p->template_name = absl::StrCat(p->scheduler, ".sh.mustache");
  }
}

}  // namespace

absl::StatusOr<SiteProfile> ParseSiteProfile(const std::string& yaml_text,
                                             const std::string& name,
                                             const std::string& file_name) {
  if (absl::Status bounded = CheckYamlDocument(yaml_text, file_name, "a site profile");
      !bounded.ok()) {
    return bounded;
  }
  YAML::Node root;
  try {
    root = YAML::Load(yaml_text);
  } catch (const YAML::Exception& e) {
    return absl::InvalidArgumentError(absl::StrCat(file_name, ":", e.mark.line + 1, ":",
                                                   e.mark.column + 1, ": ", e.msg));
  }
  if (!root.IsMap()) {
    return absl::InvalidArgumentError(
        absl::StrCat(file_name, ": a site profile must be a YAML mapping"));
  }
  SiteProfile p;
  p.name = name;
  p.source_path = file_name;
  ProfileReader r(file_name);
  auto with = [&](void (*read)(ProfileReader&, const YAML::Node&, SiteProfile*)) {
    return [&r, &p, read](const YAML::Node& v) { read(r, v, &p); };
  };
  const KeyReaders top = {
      {"description", [&](const YAML::Node& v) { p.description = r.String(v, "description"); }},
      {"scheduler", with(ReadScheduler)},
      {"template", [&](const YAML::Node& v) { p.template_name = r.String(v, "template"); }},
      {"directives", [&](const YAML::Node& v) { p.directives = r.Strings(v, "directives"); }},
      {"filesystems_separator",
       [&](const YAML::Node& v) {
         p.filesystems_separator = r.String(v, "filesystems_separator");
       }},
      {"nodefile_var", with(ReadNodefileVar)},
      {"launcher", with(ReadLauncher)},
      {"launch", with(ReadLaunch)},
      {"modules", [&](const YAML::Node& v) { p.modules = r.Strings(v, "modules"); }},
      {"setup", [&](const YAML::Node& v) { p.setup = r.Strings(v, "setup"); }},
      {"python_setup",
       [&](const YAML::Node& v) { p.python_setup = r.Strings(v, "python_setup"); }},
      {"commands", with(ReadCommands)},
      {"defaults", with(ReadDefaults)},
      {"limits", [&](const YAML::Node& v) { p.limits = r.Limits(v, "limits", &p); }},
      {"queues", with(ReadQueues)},
  };
  try {
    r.Mapping(root, "", top);
  } catch (const YAML::Exception& e) {
    r.Error(root, e.what());
  }
  CompleteProfile(r, root, &p);
  if (!r.ok()) return absl::InvalidArgumentError(r.Message());
  return p;
}

absl::StatusOr<SiteProfile> LoadSiteProfile(const std::string& name, const SiteSearchPath& path) {
  std::vector<std::string> tried;
  std::string file;
  std::string profile_name = name;
  if (absl::StrContains(name, "/") || absl::EndsWith(name, ".yaml")) {
    file = name;
    profile_name = fs::path(name).stem().string();
    tried.push_back(name);
  } else {
    for (const auto& dir : path.site_dirs) {
      std::string candidate = absl::StrCat(dir, "/", name, ".yaml");
      tried.push_back(candidate);
      std::error_code ec;
      if (fs::is_regular_file(candidate, ec)) {
        file = candidate;
        break;
      }
    }
  }
  absl::StatusOr<std::string> text =
      file.empty() ? absl::NotFoundError("no profile file") : ReadFile(file);
  if (!text.ok()) {
    std::vector<std::string> known = ListSiteProfiles(path);
    return absl::NotFoundError(absl::StrCat(
        "site profile '", name, "' not found; looked in: ", absl::StrJoin(tried, ", "),
        known.empty() ? "" : absl::StrCat("; known sites: ", absl::StrJoin(known, ", "))));
  }
  absl::StatusOr<SiteProfile> profile = ParseSiteProfile(*text, profile_name, file);
  if (!profile.ok()) return profile.status();

  std::vector<std::string> template_dirs;
  // The profile's own directory, then the one above it (a sites/ folder inside a templates
  // folder), then the search path.
  fs::path profile_dir = fs::path(file).parent_path();
  template_dirs.push_back(profile_dir.empty() ? "." : profile_dir.string());
  template_dirs.push_back((fs::absolute(profile_dir.empty() ? "." : profile_dir) / "..")
                              .lexically_normal()
                              .string());
  template_dirs.insert(template_dirs.end(), path.template_dirs.begin(), path.template_dirs.end());
  std::vector<std::string> template_tried;
  if (fs::path(profile->template_name).is_absolute()) template_dirs = {"/"};
  for (const auto& dir : template_dirs) {
    fs::path candidate = fs::path(dir) / profile->template_name;
    template_tried.push_back(candidate.string());
    std::error_code ec;
    if (fs::is_regular_file(candidate, ec)) {
      profile->template_path = fs::absolute(candidate, ec).lexically_normal().string();
      absl::StatusOr<std::string> template_text = ReadFile(profile->template_path);
      if (!template_text.ok()) {
        return absl::NotFoundError(
            absl::StrCat("cannot read template ", profile->template_path));
      }
      profile->template_text = *std::move(template_text);
      return profile;
    }
  }
  return absl::NotFoundError(absl::StrCat(file, ": template '", profile->template_name,
                                          "' not found; looked in: ",
                                          absl::StrJoin(template_tried, ", ")));
}

std::vector<std::string> ListSiteProfiles(const SiteSearchPath& path) {
  std::set<std::string> names;
  for (const auto& dir : path.site_dirs) {
    std::error_code ec;
    for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
      if (it->path().extension() == ".yaml") names.insert(it->path().stem().string());
    }
  }
  return std::vector<std::string>(names.begin(), names.end());
}

std::string DefaultSiteName(const std::string& spec_site, const std::string& spec_type) {
  if (!spec_site.empty()) return spec_site;
  const Scheduler* scheduler = FindScheduler(spec_type);
  return std::string(scheduler != nullptr ? scheduler->default_site() : "local");
}

}  // namespace dlaunch
