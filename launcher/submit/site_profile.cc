#include "launcher/submit/site_profile.h"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include <yaml-cpp/yaml.h>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "launcher/jobdir/job_record.h"
#include "common/shell_quote.h"
#include "launcher/spec/names.h"
#include "launcher/spec/spec_scalars.h"
#include "launcher/submit/scheduler.h"

namespace dlaunch {
namespace fs = std::filesystem;
namespace {

std::string Where(const std::string& file, const YAML::Node& node) {
  YAML::Mark m = node.Mark();
  if (m.line < 0) return file;
  return absl::StrCat(file, ":", m.line + 1, ":", m.column + 1);
}

// Collects problems instead of stopping at the first, so a broken profile is fixed in one pass.
class ProfileReader {
 public:
  explicit ProfileReader(std::string file) : file_(std::move(file)) {}

  void Error(const YAML::Node& at, const std::string& msg) {
    errors_.push_back(absl::StrCat(Where(file_, at), ": ", msg));
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

  SiteLimits Limits(const YAML::Node& n, const std::string& key, SiteProfile* profile) {
    SiteLimits limits;
    if (!n.IsMap()) {
      Error(n, absl::StrCat("'", key, "' must be a mapping"));
      return limits;
    }
    for (const auto& kv : n) {
      std::string k = kv.first.as<std::string>();
      if (k == "min_nodes") {
        limits.min_nodes = Int(kv.second, k);
      } else if (k == "max_nodes") {
        limits.max_nodes = Int(kv.second, k);
      } else if (k == "max_walltime") {
        limits.max_walltime_s = Walltime(kv.second, k);
      } else if (profile != nullptr && k == "requires_account") {
        profile->requires_account = Bool(kv.second, k);
      } else if (profile != nullptr && k == "requires_queue") {
        profile->requires_queue = Bool(kv.second, k);
      } else {
        Error(kv.first, absl::StrCat("unknown key '", k, "' in ", key));
      }
    }
    return limits;
  }

  const std::vector<std::string>& errors() const { return errors_; }

 private:
  std::string file_;
  std::vector<std::string> errors_;
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

}  // namespace

SiteSearchPath MakeSiteSearchPath(const std::string& dlaunch_site_path, const std::string& home,
                                  const std::string& exe_path,
                                  const std::vector<std::string>& builtin_template_dirs) {
  SiteSearchPath path;
  std::vector<std::string> user_dirs;
  for (absl::string_view d : absl::StrSplit(dlaunch_site_path, ':', absl::SkipEmpty())) {
    user_dirs.emplace_back(d);
  }
  if (!home.empty()) user_dirs.push_back(absl::StrCat(home, "/.config/dlaunch/sites"));
  std::vector<std::string> builtin;
  if (!exe_path.empty()) {
    fs::path exe_dir = fs::path(exe_path).parent_path();
    builtin.push_back((exe_dir / ".." / "share" / "dlaunch" / "templates").lexically_normal());
  }
  for (const auto& d : builtin_template_dirs) {
    if (!d.empty()) builtin.push_back(d);
  }
  path.site_dirs = user_dirs;
  path.template_dirs = user_dirs;
  for (const auto& d : builtin) {
    path.site_dirs.push_back(absl::StrCat(d, "/sites"));
    path.template_dirs.push_back(d);
  }
  return path;
}

SiteSearchPath DefaultSiteSearchPath() {
  const char* site_path = std::getenv("DLAUNCH_SITE_PATH");
  const char* home = std::getenv("HOME");
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  std::vector<std::string> builtin;
#ifdef DLAUNCH_SOURCE_TEMPLATES
  builtin.push_back(DLAUNCH_SOURCE_TEMPLATES);
#endif
#ifdef DLAUNCH_INSTALL_TEMPLATES
  builtin.push_back(DLAUNCH_INSTALL_TEMPLATES);
#endif
  return MakeSiteSearchPath(site_path ? site_path : "", home ? home : "",
                            ec ? std::string() : exe.string(), builtin);
}

absl::StatusOr<SiteProfile> ParseSiteProfile(const std::string& yaml_text,
                                             const std::string& name,
                                             const std::string& file_name) {
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
  try {
    for (const auto& kv : root) {
      const std::string key = kv.first.as<std::string>();
      const YAML::Node& v = kv.second;
      if (key == "description") {
        p.description = r.String(v, key);
      } else if (key == "scheduler") {
        p.scheduler = r.String(v, key);
        if (!IsSchedulerTypeName(p.scheduler)) {
          r.Error(v, absl::StrCat("unknown scheduler '", p.scheduler, "' (",
                                  absl::StrJoin(SchedulerTypeNames(), ", "), ")"));
        }
      } else if (key == "template") {
        p.template_name = r.String(v, key);
      } else if (key == "directives") {
        p.directives = r.Strings(v, key);
      } else if (key == "filesystems_separator") {
        p.filesystems_separator = r.String(v, key);
      } else if (key == "nodefile_var") {
        p.nodefile_var = r.String(v, key);
        if (!p.nodefile_var.empty() && !IsShellVariableName(p.nodefile_var)) {
          r.Error(v, "'nodefile_var' must be a shell variable name");
        }
      } else if (key == "launcher") {
        p.launcher = r.String(v, key);
        if (!IsConcreteNodeLauncherName(p.launcher)) {
          r.Error(v, absl::StrCat("unknown launcher '", p.launcher, "' (",
                                  absl::StrJoin(ConcreteNodeLauncherNames(), ", "), ")"));
        }
      } else if (key == "launch") {
        p.launch = std::string(absl::StripAsciiWhitespace(r.String(v, key)));
        absl::Status s = CheckLaunchLine(p.launch);
        if (!s.ok()) r.Error(v, std::string(s.message()));
      } else if (key == "modules") {
        p.modules = r.Strings(v, key);
      } else if (key == "setup") {
        p.setup = r.Strings(v, key);
      } else if (key == "commands") {
        if (!v.IsMap()) {
          r.Error(v, "'commands' must be a mapping (submit, status, cancel)");
          continue;
        }
        for (const auto& c : v) {
          std::string ck = c.first.as<std::string>();
          if (ck == "submit") {
            p.submit_command = r.String(c.second, ck);
          } else if (ck == "status") {
            p.status_command = r.String(c.second, ck);
          } else if (ck == "cancel") {
            p.cancel_command = r.String(c.second, ck);
          } else {
            r.Error(c.first, absl::StrCat("unknown key '", ck,
                                          "' in commands (submit, status, cancel)"));
          }
        }
      } else if (key == "defaults") {
        if (!v.IsMap()) {
          r.Error(v, "'defaults' must be a mapping");
          continue;
        }
        for (const auto& d : v) {
          std::string dk = d.first.as<std::string>();
          if (dk == "queue") {
            p.default_queue = r.String(d.second, dk);
          } else if (dk == "account") {
            p.default_account = r.String(d.second, dk);
          } else if (dk == "walltime") {
            p.default_walltime = r.String(d.second, dk);
            r.Walltime(d.second, dk);
          } else if (dk == "filesystems") {
            p.default_filesystems = r.Strings(d.second, dk);
          } else if (dk == "gpus_per_node") {
            p.gpus_per_node = r.Int(d.second, dk);
          } else if (dk == "gpu_model") {
            p.gpu_model = r.String(d.second, dk);
          } else {
            r.Error(d.first, absl::StrCat("unknown key '", dk, "' in defaults"));
          }
        }
      } else if (key == "limits") {
        p.limits = r.Limits(v, key, &p);
      } else if (key == "queues") {
        if (!v.IsMap()) {
          r.Error(v, "'queues' must map queue names to limits");
          continue;
        }
        for (const auto& q : v) {
          std::string qn = q.first.as<std::string>();
          p.queue_limits[qn] = r.Limits(q.second, absl::StrCat("queues.", qn), nullptr);
        }
      } else {
        r.Error(kv.first, absl::StrCat("unknown key '", key, "'"));
      }
    }
  } catch (const YAML::Exception& e) {
    r.Error(root, e.what());
  }
  if (p.scheduler.empty()) r.Error(root, "'scheduler' is required");
  if (p.launcher.empty()) {
    p.launcher = p.scheduler == "slurm" ? "srun" : p.scheduler == "local" ? "local" : "";
    if (p.launcher.empty()) r.Error(root, "'launcher' is required for this scheduler");
  }
  if (p.launch.empty() && p.launcher != "local" && p.launcher != "ssh") {
    r.Error(root, absl::StrCat("'launch' (the agent-launch prefix) is required for launcher '",
                               p.launcher, "'"));
  }
  if (p.template_name.empty() && !p.scheduler.empty()) {
    p.template_name = absl::StrCat(p.scheduler, ".sh.mustache");
  }
  if (!r.errors().empty()) {
    return absl::InvalidArgumentError(absl::StrJoin(r.errors(), "\n"));
  }
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
      file.empty() ? absl::NotFoundError("no profile file") : ReadTextFile(file);
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
      absl::StatusOr<std::string> template_text = ReadTextFile(profile->template_path);
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
