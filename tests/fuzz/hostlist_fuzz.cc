// Hostlists (SLURM_JOB_NODELIST, --hosts, job.yaml hosts): what expands is a list of plain
// names within the bound, and the names joined by commas expand to themselves.
#include <string>
#include <string_view>

#include "absl/strings/str_join.h"
#include "launcher/spec/hostlist.h"
#include "tests/fuzz/fuzz_target.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  absl::StatusOr<std::vector<std::string>> hosts = dlaunch::ExpandHostlist(text);
  if (!hosts.ok()) {
    FUZZ_CHECK(hosts.status().code() == absl::StatusCode::kInvalidArgument,
               hosts.status().ToString());
    return 0;
  }
  FUZZ_CHECK(!hosts->empty() && hosts->size() <= dlaunch::kMaxHostlistHosts, std::string(text));
  for (const std::string& host : *hosts) {
    FUZZ_CHECK(!host.empty() && host.find_first_of(",[] \t\n") == std::string::npos, host);
  }
  if (hosts->size() <= 1000) {
    const std::string joined = absl::StrJoin(*hosts, ",");
    absl::StatusOr<std::vector<std::string>> again = dlaunch::ExpandHostlist(joined);
    FUZZ_CHECK(again.ok() && *again == *hosts, joined);
  }
  return 0;
}
