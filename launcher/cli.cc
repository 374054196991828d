#include "launcher/cli.h"

#include <iostream>

namespace dlaunch {

int RunCli(int argc, char** argv) {
  std::cerr << "dlaunch: not yet wired\n";
  return 2;
}

}  // namespace dlaunch
