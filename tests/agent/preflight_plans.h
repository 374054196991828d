// Preflight plans for the preflight's tests (tests/agent/health/preflight_test.cc and
// tests/agent/process/preflight_process_test.cc).
#pragma once

#include <string>
#include <vector>

#include "dlaunch/control.pb.h"

namespace dlaunch::preflight_testing {

// A plan whose command is `argv`, run in `workdir`; Python looks for `imports`, or imports them
// with `import_them` (preflight.import_check: import).
inline v1::PreflightPlan CommandPlan(const std::vector<std::string>& argv,
                                     const std::string& workdir,
                                     const std::vector<std::string>& imports = {},
                                     bool import_them = false) {
  v1::PreflightPlan plan;
  plan.set_enabled(true);
  plan.set_timeout_ms(20000);
  for (const auto& a : argv) plan.mutable_worker()->add_argv(a);
  plan.mutable_worker()->set_workdir(workdir);
  for (const auto& m : imports) plan.add_python_imports(m);
  plan.set_import_python_modules(import_them);
  return plan;
}

}  // namespace dlaunch::preflight_testing
