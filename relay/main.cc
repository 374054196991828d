// dlaunch-relay: started by `dlaunch run` with `--relay-fanout K`, one per K agents
// (docs/relays.md). Reads the job token (and the pinned certificate) from the token file, as an
// agent does, gets its own certificate from the launcher, writes the port it listens on to
// --port-file, and carries its agents' sessions until the launcher ends its stream, SIGTERM or
// SIGINT. It dies with the process that started it.
#include <signal.h>
#include <sys/prctl.h>

#include <atomic>
#include <cstdio>
#include <iostream>
#include <string>
#include <thread>
#include <vector>

#include <openssl/crypto.h>

#include "absl/strings/str_cat.h"
#include "common/exit_codes.h"
#include "common/file_io.h"
#include "common/flags.h"
#include "common/process.h"
#include "proto/control_credentials.h"
#include "relay/relay.h"

namespace {

constexpr char kUsage[] =
    "usage: dlaunch-relay --upstream HOST:PORT --token-file FILE [--listen ADDR] [--port-file FILE]\n"
    "                     [--log FILE] [--name NAME]\n"
    "Carries the control sessions of the agents that connect to it to the launcher at --upstream\n"
    "over one stream (docs/relays.md). --listen defaults to 0.0.0.0:0 (a free port); the port is\n"
    "written to --port-file once agents may connect.\n";

int Usage(const std::string& why) {
  std::cerr << "dlaunch-relay: " << why << "\n" << kUsage;
  return dlaunch::kExitUsage;
}

}  // namespace

int main(int argc, char** argv) {
  OPENSSL_init_crypto(OPENSSL_INIT_NO_ATEXIT, nullptr);
  dlaunch::TurnOffLockOrderChecks();
  prctl(PR_SET_PDEATHSIG, SIGTERM);
  dlaunch::RelayOptions options;
  std::string token_file, port_file, log;
  bool help = false;
  const std::vector<dlaunch::Flag> table = {
      {{"--upstream"}, true, dlaunch::StringFlag("--upstream", &options.upstream)},
      {{"--listen"}, true, dlaunch::StringFlag("--listen", &options.listen)},
      {{"--token-file"}, true, dlaunch::StringFlag("--token-file", &token_file)},
      {{"--port-file"}, true, dlaunch::StringFlag("--port-file", &port_file)},
      {{"--log"}, true, dlaunch::StringFlag("--log", &log)},
      {{"--name"}, true, dlaunch::StringFlag("--name", &options.name)},
      {{"-h", "--help"}, false, dlaunch::SwitchFlag(&help)},
  };
  dlaunch::ParsedArgs parsed;
  absl::Status st = dlaunch::ParseFlags(std::vector<std::string>(argv + 1, argv + argc), table, &parsed);
  if (!st.ok()) return Usage(std::string(st.message()));
  if (help) {
    std::cout << kUsage;
    return dlaunch::kExitOk;
  }
  if (!parsed.positional.empty() || parsed.saw_dashes) return Usage("unexpected argument");
  if (!log.empty() && (std::freopen(log.c_str(), "a", stderr) == nullptr ||
                       std::freopen(log.c_str(), "a", stdout) == nullptr)) {
    return Usage(absl::StrCat("--log: cannot open ", log));
  }
  if (options.upstream.empty()) return Usage("--upstream is required");
  if (token_file.empty()) return Usage("--token-file is required");
  absl::StatusOr<dlaunch::JobCredentials> creds = dlaunch::ReadJobCredentials(token_file);
  if (!creds.ok()) return Usage(absl::StrCat("--token-file: ", creds.status().message()));
  options.credentials = *std::move(creds);
  if (!options.credentials.fingerprint.empty()) dlaunch::CountFailedHandshakesQuietly();
  dlaunch::RaiseOpenFileLimit();  // one connection per agent

  // Signals are taken by a thread of their own; gRPC's threads never see them.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  // After the mask: on gRPC 1.30 this starts gRPC's threads, which must not take a SIGTERM.
  dlaunch::InitGrpcForCallbacks();

  absl::StatusOr<std::unique_ptr<dlaunch::Relay>> relay = dlaunch::Relay::Start(options);
  if (!relay.ok()) {
    std::cerr << "dlaunch-relay: " << relay.status().message() << std::endl;
    return dlaunch::kExitLaunchError;
  }
  if (!port_file.empty()) {
    if (absl::Status w = dlaunch::WriteFileAtomically(port_file, absl::StrCat((*relay)->port(), "\n"));
        !w.ok()) {
      std::cerr << "dlaunch-relay: " << w.message() << std::endl;
      return dlaunch::kExitLaunchError;
    }
  }
  // SIGTERM or SIGINT ends the relay's stream. The thread is joined before the relay goes: at
  // the end it is woken with a SIGTERM of its own and, seeing `exiting`, touches nothing.
  std::atomic<bool> exiting{false};
  std::thread signals([&stop_signals, &exiting, r = relay->get()] {
    int sig = 0;
    sigwait(&stop_signals, &sig);
    if (!exiting.load()) r->Stop();
  });

  const grpc::Status end = (*relay)->Wait();
  exiting.store(true);
  pthread_kill(signals.native_handle(), SIGTERM);
  signals.join();
  const dlaunch::RelayCounts c = (*relay)->counts();
  std::cerr << "dlaunch-relay: the stream to the launcher ended ("
            << (end.ok() ? std::string("closed by the launcher") : end.error_message()) << "); "
            << c.sessions << " agent session(s), " << c.entries_up << " message(s) up in "
            << c.writes_up << " write(s), " << c.commands_down << " command(s) down in "
            << c.writes_down << " read(s), " << c.refused << " call(s) refused, "
            << c.undeliverable << " command(s) for ended sessions" << std::endl;
  return end.ok() || end.error_code() == grpc::StatusCode::CANCELLED ? dlaunch::kExitOk
                                                                     : dlaunch::kExitLaunchError;
}
