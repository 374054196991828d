#include "launcher/submit/site_search_path.h"

#include <cstdlib>
#include <filesystem>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace dlaunch {
namespace fs = std::filesystem;

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

}  // namespace dlaunch
