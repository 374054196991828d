#include "worker/distributed_env.h"

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace dlaunch::worker {
namespace {

absl::Status ReadInt(const EnvLookup& lookup, const char* name, int min, int* out) {
  std::optional<std::string> v = lookup(name);
  if (!v.has_value() || v->empty()) return absl::OkStatus();
  int parsed;
  if (!absl::SimpleAtoi(*v, &parsed) || parsed < min) {
    return absl::InvalidArgumentError(
        absl::StrCat("environment variable ", name, "=\"", *v, "\" is not an integer >= ", min));
  }
  *out = parsed;
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<DistributedEnv> ReadDistributedEnv(const EnvLookup& lookup) {
  DistributedEnv env;
  absl::Status s;
  if (!(s = ReadInt(lookup, "RANK", 0, &env.rank)).ok()) return s;
  if (!(s = ReadInt(lookup, "WORLD_SIZE", 1, &env.world_size)).ok()) return s;
  if (!(s = ReadInt(lookup, "LOCAL_RANK", 0, &env.local_rank)).ok()) return s;
  if (!(s = ReadInt(lookup, "MASTER_PORT", 1, &env.master_port)).ok()) return s;
  if (!(s = ReadInt(lookup, "OMP_NUM_THREADS", 1, &env.omp_num_threads)).ok()) return s;
  if (!(s = ReadInt(lookup, "TORCHELASTIC_RESTART_COUNT", 0, &env.restart_count)).ok()) return s;
  if (env.master_port > 65535) {
    return absl::InvalidArgumentError(
        absl::StrCat("environment variable MASTER_PORT=", env.master_port, " is not a port"));
  }
  if (env.rank >= env.world_size) {
    return absl::InvalidArgumentError(absl::StrCat("RANK=", env.rank, " is not below WORLD_SIZE=",
                                                   env.world_size));
  }
  if (std::optional<std::string> a = lookup("MASTER_ADDR"); a.has_value() && !a->empty()) {
    env.master_addr = *a;
  }
  if (env.world_size > 1 && env.master_port == 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("WORLD_SIZE=", env.world_size, " needs MASTER_PORT (and MASTER_ADDR)"));
  }
  if (std::optional<std::string> a = lookup("TORCHELASTIC_USE_AGENT_STORE")) {
    env.use_agent_store = *a == "True" || *a == "1";
  }
  if (std::optional<std::string> r = lookup("DLAUNCH_REPORT_SOCKET")) env.report_socket = *r;
  return env;
}

}  // namespace dlaunch::worker
