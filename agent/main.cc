// dlaunch-agent: started once per node by the launcher's node launcher (local, ssh, mpiexec,
// mpirun, srun). Reads the job token from a file (never from argv, which `ps` shows).
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>

#include <boost/asio.hpp>

#include "agent/node_agent.h"

namespace {

constexpr char kUsage[] =
    "usage: dlaunch-agent --control HOST:PORT --token-file PATH [--nproc N] [--host NAME]\n"
    "                     [--addr ADDR] [--join-timeout SECONDS] [--tail-lines N]\n"
    "The token may instead come from the DLAUNCH_TOKEN environment variable.\n";

int Usage(const std::string& why) {
  std::cerr << "dlaunch-agent: " << why << "\n" << kUsage;
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  dlaunch::AgentOptions opts;
  std::string token_file;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&](const char* name) -> const char* {
      if (i + 1 >= argc) return nullptr;
      (void)name;
      return argv[++i];
    };
    const char* v = nullptr;
    if (a == "-h" || a == "--help") {
      std::cout << kUsage;
      return 0;
    } else if (a == "--control" && (v = value("--control"))) {
      opts.control = v;
    } else if (a == "--token-file" && (v = value("--token-file"))) {
      token_file = v;
    } else if (a == "--nproc" && (v = value("--nproc"))) {
      opts.nproc = std::atoi(v);
    } else if (a == "--host" && (v = value("--host"))) {
      opts.host = v;
    } else if (a == "--addr" && (v = value("--addr"))) {
      opts.addr = v;
    } else if (a == "--join-timeout" && (v = value("--join-timeout"))) {
      opts.join_timeout_s = std::atof(v);
    } else if (a == "--tail-lines" && (v = value("--tail-lines"))) {
      opts.tail_lines = std::atoi(v);
    } else {
      return Usage("unknown or incomplete argument '" + a + "'");
    }
  }
  if (opts.control.empty()) return Usage("--control is required");
  if (!token_file.empty()) {
    std::ifstream in(token_file);
    if (!in) return Usage("cannot read token file " + token_file);
    std::getline(in, opts.token);
  } else if (const char* t = std::getenv("DLAUNCH_TOKEN")) {
    opts.token = t;
  } else {
    return Usage("no token: pass --token-file or set DLAUNCH_TOKEN");
  }
  unsetenv("DLAUNCH_TOKEN");  // workers must not inherit it

  boost::asio::io_context io;
  dlaunch::NodeAgent agent(io, opts);
  if (auto st = agent.Start(); !st.ok()) {
    std::cerr << "dlaunch-agent: " << st.ToString() << std::endl;
    return 3;
  }
  io.run();
  return agent.exit_code();
}
