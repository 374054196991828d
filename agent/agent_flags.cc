#include "agent/agent_flags.h"

#include <cstdlib>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/host_identity.h"
#include "common/file_io.h"
#include "common/flags.h"

namespace dlaunch {

absl::StatusOr<AgentFlags> ParseAgentFlags(const std::vector<std::string>& args) {
  AgentFlags f;
  AgentOptions* o = &f.options;
  const std::vector<Flag> table = {
      {{"--control"}, true, StringFlag("--control", &o->control)},
      {{"--control-fallback"}, true, StringFlag("--control-fallback", &o->control_fallback)},
      {{"--token-file"}, true, StringFlag("--token-file", &f.token_file)},
      {{"--nproc"}, true, IntFlag("--nproc", &o->nproc, 0, 1 << 16)},
      {{"--host"}, true, StringFlag("--host", &o->host)},
      {{"--addr"}, true, StringFlag("--addr", &o->addr)},
      {{"--join-timeout"}, true, DoubleFlag("--join-timeout", &o->join_timeout_s, 0)},
      {{"--tail-lines"}, true, IntFlag("--tail-lines", &o->tail_lines, 0, 1 << 20)},
      {{"-h", "--help"}, false, SwitchFlag(&f.help)},
  };
  ParsedArgs parsed;
  if (absl::Status st = ParseFlags(args, table, &parsed); !st.ok()) return st;
  if (f.help) return f;
  if (!parsed.positional.empty() || parsed.saw_dashes) {
    return absl::InvalidArgumentError(absl::StrCat(
        "unexpected argument '", parsed.positional.empty() ? "--" : parsed.positional[0], "'"));
  }
  if (o->control.empty()) return absl::InvalidArgumentError("--control is required");
  absl::StatusOr<std::string> picked = PickControlAddress(
      o->control, [](const char* name) { return std::getenv(name); },
      o->host.empty() ? LocalHostName() : o->host);
  if (!picked.ok()) return picked.status();
  o->control = *std::move(picked);
  return f;
}

absl::StatusOr<std::string> PickControlAddress(const std::string& list,
                                               const std::function<const char*(const char*)>& getenv,
                                               const std::string& host) {
  if (list.find(',') == std::string::npos) return list;
  std::vector<std::string> addrs = absl::StrSplit(list, ',');
  for (const std::string& a : addrs) {
    if (a.empty()) return absl::InvalidArgumentError(absl::StrCat("--control '", list, "' has an empty address"));
  }
  uint64_t rank = 0;
  bool have_rank = false;
  for (const char* name : {"PMI_RANK", "PALS_RANKID", "OMPI_COMM_WORLD_RANK", "SLURM_PROCID"}) {
    const char* v = getenv(name);
    if (v != nullptr && absl::SimpleAtoi(v, &rank)) {
      have_rank = true;
      break;
    }
  }
  if (!have_rank) rank = std::hash<std::string>{}(host);
  return addrs[rank % addrs.size()];
}

absl::StatusOr<JobCredentials> ReadAgentCredentials(const std::string& token_file,
                                                    const char* env_token) {
  if (token_file.empty()) {
    if (env_token == nullptr) {
      return absl::InvalidArgumentError("no token: pass --token-file or set DLAUNCH_TOKEN");
    }
    return JobCredentials{env_token, "", ""};
  }
  absl::StatusOr<JobCredentials> creds = ReadJobCredentials(token_file);
  if (!creds.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("--token-file: ", creds.status().message()));
  }
  return creds;
}

}  // namespace dlaunch
