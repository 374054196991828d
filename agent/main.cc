// dlaunch-agent: started once per node by the launcher's node launcher (local, ssh, mpiexec,
// mpirun, srun). Reads the job token from a file (never from argv, which `ps` shows).
#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

#include <boost/asio.hpp>
#include <openssl/crypto.h>

#include "agent/agent_flags.h"
#include "agent/node_agent.h"
#include "proto/control_credentials.h"
#include "common/exit_codes.h"

namespace {

int Usage(const absl::Status& why) {
  std::cerr << "dlaunch-agent: " << why.message() << "\n" << dlaunch::kAgentUsage;
  return dlaunch::kExitUsage;
}

}  // namespace

int main(int argc, char** argv) {
  // The process exits when the job ends: OpenSSL's clean-up at exit (its algorithm tables,
  // a noticeable share of the TLS start-up cost on a busy node) is left to the kernel.
  OPENSSL_init_crypto(OPENSSL_INIT_NO_ATEXIT, nullptr);
  dlaunch::TurnOffLockOrderChecks();
  absl::StatusOr<dlaunch::AgentFlags> flags =
      dlaunch::ParseAgentFlags(std::vector<std::string>(argv + 1, argv + argc));
  if (!flags.ok()) return Usage(flags.status());
  if (flags->help) {
    std::cout << dlaunch::kAgentUsage;
    return dlaunch::kExitOk;
  }
  absl::StatusOr<dlaunch::JobCredentials> creds =
      dlaunch::ReadAgentCredentials(flags->token_file, std::getenv("DLAUNCH_TOKEN"));
  if (!creds.ok()) return Usage(creds.status());
  flags->options.credentials = *std::move(creds);
  unsetenv("DLAUNCH_TOKEN");  // workers must not inherit it

  // A server that cannot prove it holds the job's key shows as handshake failures; they are
  // counted and named once, below, instead of one gRPC line per attempt.
  const std::string pinned = flags->options.credentials.fingerprint;
  if (!pinned.empty()) dlaunch::CountFailedHandshakesQuietly();

  boost::asio::io_context io;
  dlaunch::NodeAgent agent(io, flags->options);
  if (absl::Status started = agent.Start(); !started.ok()) {
    std::cerr << "dlaunch-agent: " << started.ToString() << std::endl;
    if (int64_t failed = dlaunch::FailedHandshakes(); failed > 0) {
      std::cerr << "dlaunch-agent: the server at " << flags->options.control << " failed " << failed
                << " TLS handshake(s): it did not prove it holds the key of the certificate the "
                   "token file pins ("
                << pinned << "), so it is not this job's launcher (another job's, or a stale one "
                   "on a reused port)\n";
    }
    return dlaunch::kExitLaunchError;
  }
  io.run();
  return agent.exit_code();
}
