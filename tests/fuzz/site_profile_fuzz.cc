// Site profiles (templates/sites/*.yaml and users' own): parse; what parses has walltimes that
// read as walltimes and limits that are not negative.
#include <string>

#include "launcher/spec/spec_scalars.h"
#include "launcher/submit/site_profile.h"
#include "tests/fuzz/fuzz_target.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  absl::StatusOr<dlaunch::SiteProfile> profile =
      dlaunch::ParseSiteProfile(text, "fuzz", "fuzz.yaml");
  if (!profile.ok()) {
    FUZZ_CHECK(!profile.status().message().empty(), "an error without a message");
    return 0;
  }
  if (!profile->default_walltime.empty()) {
    FUZZ_CHECK(dlaunch::ParseWalltime(profile->default_walltime).ok(), profile->default_walltime);
  }
  FUZZ_CHECK(profile->limits.max_walltime_s >= 0 && profile->limits.min_nodes >= 0 &&
                 profile->limits.max_nodes >= 0,
             text);
  return 0;
}
