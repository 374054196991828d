// Serves the agent's workers' store (agent/store/worker_store.h) alone, for the store bench
// (bench/scale/tcpstore_bench.py): prints its port on one line, serves until stdin closes or a
// SIGTERM/SIGINT, then prints its counters on one line.
//   worker_store_server [PORT]
#include <unistd.h>

#include <csignal>
#include <cstdlib>
#include <iostream>

#include <boost/asio.hpp>

#include "agent/store/worker_store.h"

int main(int argc, char** argv) {
  boost::asio::io_context io;
  const int port = argc > 1 ? std::atoi(argv[1]) : 0;
  auto server = dlaunch::WorkerStoreServer::Listen(
      io, port, [](const std::string& line) { std::cerr << line << std::endl; });
  if (!server.ok()) {
    std::cerr << "worker_store_server: " << server.status().message() << std::endl;
    return 1;
  }
  std::cout << (*server)->port() << std::endl;
  boost::asio::signal_set signals(io, SIGINT, SIGTERM);
  signals.async_wait([&](const boost::system::error_code&, int) { io.stop(); });
  // The bench closes stdin to stop it.
  boost::asio::posix::stream_descriptor in(io, ::dup(STDIN_FILENO));
  char byte = 0;
  std::function<void()> read_stdin = [&] {
    in.async_read_some(boost::asio::buffer(&byte, 1),
                       [&](const boost::system::error_code& ec, size_t) {
                         if (ec) io.stop();
                         else read_stdin();
                       });
  };
  read_stdin();
  io.run();
  const auto s = (*server)->stats();
  std::cout << "accepted " << s.accepted << " open " << s.open << " errors " << s.errors
            << " keys " << s.keys << std::endl;
  return 0;
}
