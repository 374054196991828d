// Scheduler nodefiles (PBS_NODEFILE, COBALT_NODEFILE) and Slurm's nodelist variable, read the
// way `dlaunch run` finds its allocation: hosts are trimmed, non-empty and listed once.
#include <set>
#include <string>

#include "launcher/run/allocation.h"
#include "tests/fuzz/fuzz_target.h"

namespace {

// `words`: a host must be one word (what DetectAllocation hands on); ParseNodefile only trims.
void CheckHosts(const std::vector<std::string>& hosts, const std::string& input, bool words) {
  std::set<std::string> seen;
  for (const std::string& host : hosts) {
    FUZZ_CHECK(!host.empty(), input);
    const std::string blank = " \t\r\n\v\f";
    if (words) {
      FUZZ_CHECK(host.find_first_of(blank) == std::string::npos, "\"" + host + "\"");
    } else {
      FUZZ_CHECK(blank.find(host.front()) == std::string::npos &&
                     blank.find(host.back()) == std::string::npos,
                 "\"" + host + "\"");
    }
    FUZZ_CHECK(seen.insert(host).second, "listed twice: " + host + "\n--- input:\n" + input);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  CheckHosts(dlaunch::ParseNodefile(text), text, false);
  for (const char* variable : {"PBS_NODEFILE", "SLURM_JOB_NODELIST"}) {
    const bool file = std::string(variable) == "PBS_NODEFILE";
    dlaunch::EnvLookup env =
        dlaunch::MapEnvironment({{variable, file ? "/var/spool/nodefile" : text}});
    absl::StatusOr<dlaunch::Allocation> allocation = dlaunch::DetectAllocation(
        env, [&text](const std::string&) -> absl::StatusOr<std::string> { return text; });
    if (!allocation.ok()) continue;
    CheckHosts(allocation->hosts, text, true);
  }
  return 0;
}
