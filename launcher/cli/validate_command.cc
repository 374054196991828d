#include "launcher/cli/validate_command.h"

#include <iostream>

#include "absl/strings/str_join.h"
#include "common/exit_codes.h"
#include "common/host_identity.h"
#include "launcher/cli/cli_support.h"
#include "launcher/run/allocation.h"
#include "launcher/spec/job_spec_parser.h"

namespace dlaunch {

const char kValidateUsage[] =
    "usage: dlaunch validate job.yaml\n"
    "Checks the job spec (every problem as job.yaml:LINE:COL: message, exit code 2) and prints\n"
    "the resolved job, every key with its default filled in; inside an allocation, also the\n"
    "hosts it would run on.\n";

int RunValidateCommand(const std::vector<std::string>& args) {
  if (WantsHelp(args)) {
    std::cout << kValidateUsage;
    return kExitOk;
  }
  if (args.size() != 1 || args[0].rfind("-", 0) == 0) {
    std::cerr << kValidateUsage;
    return kExitUsage;
  }
  auto spec = LoadJobSpec(args[0]);
  if (!spec.ok()) {
    std::cerr << spec.status().message() << std::endl;
    return kExitUsage;
  }
  std::cout << ResolvedJobYaml(*spec);
  auto alloc = DetectAllocation();
  if (alloc.ok()) {
    auto plan = ResolveHosts(*spec, {}, *alloc, ShortHostName(LocalHostName()));
    if (plan.ok()) {
      std::cout << "# resolved here: " << plan->hosts.size() << " node(s) from " << plan->source
                << ": " << absl::StrJoin(plan->hosts, ",") << "\n";
    } else {
      std::cout << "# hosts cannot be resolved here: " << plan.status().message() << "\n";
    }
  }
  return kExitOk;
}

}  // namespace dlaunch
