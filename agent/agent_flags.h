// The agent's command line, table-driven (common/flags.h): every value is checked, and an
// error names the flag. The launcher builds this argv (launcher/cli/run_command.cc).
#pragma once

#include <functional>

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "agent/node_agent.h"
#include "proto/control_tls.h"

namespace dlaunch {

inline constexpr char kAgentUsage[] =
    "usage: dlaunch-agent --control HOST:PORT --token-file PATH [--nproc N] [--host NAME]\n"
    "                     [--addr ADDR] [--join-timeout SECONDS] [--tail-lines N]\n"
    "                     [--control-fallback HOST:PORT]\n"
    "The token may instead come from the DLAUNCH_TOKEN environment variable (plain TCP only).\n"
    "--control may list several addresses (relays, docs/relays.md): HOST:PORT,HOST:PORT,...; the\n"
    "agent takes the one its rank under the node launcher picks (PMI_RANK, PALS_RANKID,\n"
    "OMPI_COMM_WORLD_RANK, SLURM_PROCID), modulo the list's length.\n"
    "--control-fallback is the launcher itself: when the session through a relay breaks, the agent\n"
    "keeps its workers and moves its session there (docs/relays.md).\n";

struct AgentFlags {
  AgentOptions options;       // everything but the credentials
  std::string token_file;     // "" = take the token from DLAUNCH_TOKEN
  bool help = false;
};

// Parses the arguments after the program name. InvalidArgument for an unknown flag, a bad
// value, a stray argument, or a missing --control (unless --help).
absl::StatusOr<AgentFlags> ParseAgentFlags(const std::vector<std::string>& args);

// One address of a comma-separated --control list: entry rank % size, the rank being the first
// of PMI_RANK, PALS_RANKID, OMPI_COMM_WORLD_RANK, SLURM_PROCID that `getenv` has, else a hash of
// `host`. A single address is returned as it is. InvalidArgument for an empty entry.
absl::StatusOr<std::string> PickControlAddress(const std::string& list,
                                               const std::function<const char*(const char*)>& getenv,
                                               const std::string& host);

// The job token and the launcher's pinned certificate, from `token_file` (proto/control_tls.h),
// else the token alone from `env_token` (DLAUNCH_TOKEN, null when unset; plain TCP).
// InvalidArgument when there is none, or the file or its certificate cannot be read or do not
// match.
absl::StatusOr<JobCredentials> ReadAgentCredentials(const std::string& token_file,
                                                    const char* env_token);

}  // namespace dlaunch
