// WorkerStoreServer: the workers' c10d store served by an agent (the agent-store way torchrun
// uses): a TCP listener on every address of the node at MASTER_PORT, and WorkerStoreEngine
// behind it. Node 0's agent hosts one for each round when the job asks for it
// (rendezvous.worker_store: agent); the workers then connect as TCPStore clients, rank 0 too.
// It never resolves a peer's name (the reverse lookups that stall PyTorch's own server, see
// docs/BENCHMARKS.md). A connection that breaks the protocol or a bound is closed and counted;
// the others go on. Runs on the io_context's thread; one thread must run that io_context.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include <boost/asio.hpp>

#include "absl/status/statusor.h"
#include "agent/core/worker_store_engine.h"
#include "dlaunch/control.pb.h"

namespace dlaunch {

class WorkerStoreServer {
 public:
  using LogFn = std::function<void(const std::string&)>;
  struct Stats {
    uint64_t accepted = 0;  // connections accepted since Listen
    uint64_t open = 0;      // connections open now
    uint64_t errors = 0;    // connections closed for breaking the protocol or a bound
    size_t keys = 0;        // keys held now
  };

  // Listens at `port` (0: any free port) on every address of the node, IPv6 and IPv4.
  // Raises this process's soft limit on open files to its hard limit, as one store holds a
  // connection per rank. `log` hears the first errors and why (then only a count).
  static absl::StatusOr<std::unique_ptr<WorkerStoreServer>> Listen(
      boost::asio::io_context& io, int port, LogFn log, WorkerStoreLimits limits = {});
  ~WorkerStoreServer();  // closes the listener and every connection

  int port() const;
  Stats stats() const;

  struct State;  // shared with the connections' handlers, which may outlive the server

 private:
  explicit WorkerStoreServer(std::shared_ptr<State> state);
  std::shared_ptr<State> state_;
};

// Node 0's agent hosts its round's store when the job asks for one: a server at the round's
// MASTER_PORT, or null when this node does not host it. An error when it cannot listen (the
// port taken): the agent fails the round's starts with it, as rank 0 would fail to bind.
absl::StatusOr<std::unique_ptr<WorkerStoreServer>> HostWorkerStore(
    boost::asio::io_context& io, const v1::JoinResponse& place,
    const WorkerStoreServer::LogFn& log);

}  // namespace dlaunch
