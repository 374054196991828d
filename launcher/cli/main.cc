// dlaunch: the command-line entry point. Subcommands are dispatched in launcher/cli.cc.
#include "launcher/cli/cli.h"
#include "proto/callback_server.h"
#include "proto/control_credentials.h"

int main(int argc, char** argv) {
  dlaunch::TurnOffLockOrderChecks();
  dlaunch::InitGrpcForCallbacks();
  return dlaunch::RunCli(argc, argv);
}
