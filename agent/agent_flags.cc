#include "agent/agent_flags.h"

#include "absl/strings/str_cat.h"
#include "common/file_io.h"
#include "common/flags.h"

namespace dlaunch {

absl::StatusOr<AgentFlags> ParseAgentFlags(const std::vector<std::string>& args) {
  AgentFlags f;
  AgentOptions* o = &f.options;
  const std::vector<Flag> table = {
      {{"--control"}, true, StringFlag("--control", &o->control)},
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
  return f;
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
