// dlaunch: the command-line entry point. Subcommands are dispatched in launcher/cli.cc.
#include "launcher/cli/cli.h"

int main(int argc, char** argv) { return dlaunch::RunCli(argc, argv); }
