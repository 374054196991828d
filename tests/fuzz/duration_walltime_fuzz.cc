// The spec's scalar forms: durations, walltimes, CPU lists and one-line commands. Each written
// form must read back as the value it was written from.
#include <string>
#include <string_view>

#include "absl/strings/str_cat.h"
#include "launcher/spec/spec_scalars.h"
#include "tests/fuzz/fuzz_target.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const std::string input(text);

  if (absl::StatusOr<double> seconds = dlaunch::ParseDuration(text); seconds.ok()) {
    const std::string written = dlaunch::FormatDuration(*seconds);
    absl::StatusOr<double> back = dlaunch::ParseDuration(written);
    FUZZ_CHECK(back.ok() && *back == *seconds,
               absl::StrCat(input, " -> ", *seconds, " -> \"", written, "\""));
  }

  if (absl::StatusOr<int> walltime = dlaunch::ParseWalltime(text); walltime.ok()) {
    FUZZ_CHECK(*walltime >= 0, input);
    for (const std::string& written :
         {dlaunch::FormatWalltime(*walltime), dlaunch::FormatWalltimeHms(*walltime)}) {
      absl::StatusOr<int> back = dlaunch::ParseWalltime(written);
      FUZZ_CHECK(back.ok() && *back == *walltime,
                 absl::StrCat(input, " -> ", *walltime, " s -> \"", written, "\""));
    }
  }

  if (absl::StatusOr<std::vector<int>> cpus = dlaunch::ParseCpuList(text); cpus.ok()) {
    const std::string written = dlaunch::FormatCpuList(*cpus);
    absl::StatusOr<std::vector<int>> back = dlaunch::ParseCpuList(written);
    FUZZ_CHECK(back.ok() && *back == *cpus, input + " -> \"" + written + "\"");
  }

  (void)dlaunch::SplitCommandLine(text);
  return 0;
}
