// SiteSearchPath: where site profiles and batch templates are looked for -- the user's
// directories first, then the templates shipped with dlaunch.
#pragma once

#include <string>
#include <vector>

namespace dlaunch {

// Where profiles and templates are looked for, first match wins.
struct SiteSearchPath {
  std::vector<std::string> site_dirs;      // directories holding <name>.yaml
  std::vector<std::string> template_dirs;  // directories holding <scheduler>.sh.mustache
};

// Builds the search path from explicit inputs (pure, for tests):
//   site_dirs: each entry of `dlaunch_site_path` (colon-separated), `home`/.config/dlaunch/sites,
//   then each built-in templates dir + "/sites";
//   template_dirs: the same user directories (a user profile can sit next to its template),
//   then the built-in templates dirs.
// Built-in dirs, in order: <exe dir>/../share/dlaunch/templates, the source tree's templates/,
// the install prefix's share/dlaunch/templates. Empty inputs are skipped.
SiteSearchPath MakeSiteSearchPath(const std::string& dlaunch_site_path, const std::string& home,
                                  const std::string& exe_path,
                                  const std::vector<std::string>& builtin_template_dirs);

// The search path of this process: $DLAUNCH_SITE_PATH, $HOME, /proc/self/exe and the compiled-in
// source and install template directories.
SiteSearchPath DefaultSiteSearchPath();

}  // namespace dlaunch
