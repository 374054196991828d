#include "launcher/job/failure.h"

#include <cstring>

#include "absl/strings/str_cat.h"

namespace dlaunch {

std::string FailureClassName(FailureClass c) {
  switch (c) {
    case FailureClass::kWorkerCrash: return "worker crash";
    case FailureClass::kAgentLost: return "agent lost";
    case FailureClass::kNodeSilent: return "node silent";
    case FailureClass::kStall: return "stall";
    case FailureClass::kExitHang: return "hang at exit";
    case FailureClass::kLaunchError: return "launch error";
    case FailureClass::kOutOfMemory: return "out of memory";
  }
  return "failure";
}

namespace {

std::string Where(const Failure& f) {
  std::string host = f.host.empty() ? "" : absl::StrCat(", host ", f.host);
  if (f.global_rank < 0) {
    return absl::StrCat("node ", f.node_rank, f.host.empty() ? "" : absl::StrCat(" (host ", f.host, ")"));
  }
  return absl::StrCat("rank ", f.global_rank, " (local ", f.local_rank, ", node ", f.node_rank,
                      host, ")");
}

std::string How(const Failure& f) {
  if (f.signal > 0) {
    const char* name = strsignal(f.signal);
    return absl::StrCat(" killed by signal ", f.signal, " (", name ? name : "?", ")");
  }
  if (f.exit_code >= 0) return absl::StrCat(" exited with code ", f.exit_code);
  return "";
}

}  // namespace

std::string DescribeStuckAt(const StuckAt& at) {
  if (at.line <= 0) return absl::StrCat(at.function, " (", at.file, ")");
  return absl::StrCat(at.function, " (", at.file, ":", at.line, ")");
}

std::string DescribeFailure(const Failure& f) {
  std::string out = absl::StrCat(FailureClassName(f.cls), ": ", Where(f), How(f));
  if (!f.detail.empty()) absl::StrAppend(&out, ": ", f.detail);
  if (f.stuck_at) {
    absl::StrAppend(&out, f.detail.empty() ? ": in " : ", in ", DescribeStuckAt(*f.stuck_at));
  }
  return out;
}

std::string FailureSignature(const Failure& f) {
  // A node is named by its id, as exclusion counts it (RestartPolicy): its rank changes when a
  // restart moves a spare in. A rank failure keeps its global rank, a script's own failure.
  return absl::StrCat(static_cast<int>(f.cls), "/", f.global_rank < 0 ? "node" : "rank", "/",
                      f.global_rank < 0 ? f.node_id : f.global_rank, "/", f.exit_code, "/",
                      f.signal);
}

}  // namespace dlaunch
