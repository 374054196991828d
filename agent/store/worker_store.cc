#include "agent/store/worker_store.h"


#include <deque>
#include <unordered_map>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/process.h"

namespace dlaunch {
namespace {

using boost::asio::ip::tcp;

// A connection whose replies pile up unread beyond this is closed: a client that sends queries
// and never reads the answers must not grow the agent's memory.
constexpr size_t kMaxPendingReplyBytes = 64 * 1024 * 1024;
// Connection errors logged one by one; after these, only counted.
constexpr uint64_t kLoggedErrors = 10;

// The listener on every address: IPv6 with IPv4 mapped in, or IPv4 alone where the node has no
// IPv6.
absl::Status OpenAcceptor(tcp::acceptor& acceptor, int port) {
  boost::system::error_code ec;
  const auto p = static_cast<unsigned short>(port);
  for (const tcp::endpoint& ep : {tcp::endpoint(tcp::v6(), p), tcp::endpoint(tcp::v4(), p)}) {
    ec.clear();
    if (acceptor.is_open()) acceptor.close();
    acceptor.open(ep.protocol(), ec);
    if (ec) continue;
    if (ep.protocol() == tcp::v6()) acceptor.set_option(boost::asio::ip::v6_only(false), ec);
    acceptor.set_option(tcp::acceptor::reuse_address(true), ec);
    acceptor.bind(ep, ec);
    if (!ec) acceptor.listen(tcp::socket::max_listen_connections, ec);
    if (!ec) return absl::OkStatus();
  }
  return absl::UnavailableError(absl::StrCat("cannot listen for the workers' store on port ",
                                             port, ": ", ec.message()));
}

}  // namespace

struct WorkerStoreServer::State : std::enable_shared_from_this<WorkerStoreServer::State> {
  struct Connection {
    explicit Connection(tcp::socket s) : socket(std::move(s)) {}
    tcp::socket socket;
    uint64_t id = 0;
    std::string peer;  // numeric address:port, never a looked-up name
    std::deque<std::string> out;
    size_t out_bytes = 0;
    bool writing = false;
    bool closed = false;
  };
  using ConnectionPtr = std::shared_ptr<Connection>;

  State(boost::asio::io_context& io, WorkerStoreLimits limits, LogFn log)
      : acceptor(io), retry(io), engine(limits), log(std::move(log)) {}

  void Accept();
  void Adopt(tcp::socket socket);
  void WaitRead(const ConnectionPtr& c);
  void OnReadable(const ConnectionPtr& c);
  void Deliver(std::vector<WorkerStoreEngine::Reply>& replies);
  void Write(const ConnectionPtr& c);
  void Refuse(const ConnectionPtr& c, const std::string& why);
  void Drop(const ConnectionPtr& c);
  void Stop();

  tcp::acceptor acceptor;
  boost::asio::steady_timer retry;  // accepting again after the process ran out of files
  WorkerStoreEngine engine;
  LogFn log;
  std::unordered_map<uint64_t, ConnectionPtr> connections;
  uint64_t next_id = 1;
  uint64_t accept_failures = 0;  // in a row, since the last accepted connection
  Stats stats;
  bool stopped = false;
  std::vector<char> buffer = std::vector<char>(64 * 1024);  // one, shared: one thread reads
};

void WorkerStoreServer::State::Accept() {
  acceptor.async_accept([self = shared_from_this()](const boost::system::error_code& ec,
                                                    tcp::socket socket) {
    if (self->stopped || ec == boost::asio::error::operation_aborted) return;
    if (!ec) {
      if (self->accept_failures > 0) {
        self->log(absl::StrCat("worker store: accepting again after ", self->accept_failures,
                               " failed tries (", self->stats.open, " open)"));
        self->accept_failures = 0;
      }
      self->Adopt(std::move(socket));
      self->Accept();
      return;
    }
    // Out of file descriptors (EMFILE, ENFILE) or the like: the connection waits in the
    // backlog; try again shortly rather than spin, and say so once.
    if (self->accept_failures++ == 0) {
      self->log(absl::StrCat("worker store: accepting a connection failed: ", ec.message(),
                             " (", self->stats.open, " open; the open-files limit?); retrying "
                             "every 100 ms"));
    }
    self->retry.expires_after(std::chrono::milliseconds(100));
    self->retry.async_wait([self](const boost::system::error_code& e) {
      if (!e && !self->stopped) self->Accept();
    });
  });
}

void WorkerStoreServer::State::Adopt(tcp::socket socket) {
  auto c = std::make_shared<Connection>(std::move(socket));
  boost::system::error_code ec;
  c->socket.set_option(tcp::no_delay(true), ec);
  c->socket.non_blocking(true, ec);
  const tcp::endpoint ep = c->socket.remote_endpoint(ec);
  boost::asio::ip::address a = ep.address();
  // An IPv4 client of the dual-stack listener reads as ::ffff:a.b.c.d; say a.b.c.d.
  if (a.is_v6() && a.to_v6().is_v4_mapped()) {
    a = boost::asio::ip::make_address_v4(boost::asio::ip::v4_mapped, a.to_v6());
  }
  c->peer = ec ? "?" : absl::StrCat(a.to_string(), ":", ep.port());
  c->id = next_id++;
  engine.Open(c->id);
  connections.emplace(c->id, c);
  ++stats.accepted;
  ++stats.open;
  WaitRead(c);
}

void WorkerStoreServer::State::WaitRead(const ConnectionPtr& c) {
  c->socket.async_wait(tcp::socket::wait_read,
                       [self = shared_from_this(), c](const boost::system::error_code& ec) {
                         if (c->closed || self->stopped) return;
                         if (ec) {
                           self->Drop(c);
                           return;
                         }
                         self->OnReadable(c);
                       });
}

void WorkerStoreServer::State::OnReadable(const ConnectionPtr& c) {
  boost::system::error_code ec;
  const size_t n = c->socket.read_some(boost::asio::buffer(buffer), ec);
  if (ec == boost::asio::error::would_block || ec == boost::asio::error::try_again) {
    WaitRead(c);
    return;
  }
  if (ec) {  // end of stream (a worker that finished) or a reset: not the client's fault
    Drop(c);
    return;
  }
  std::vector<WorkerStoreEngine::Reply> replies;
  absl::Status st = engine.Feed(c->id, std::string_view(buffer.data(), n), &replies);
  Deliver(replies);
  if (!st.ok()) {
    Refuse(c, std::string(st.message()));
    return;
  }
  if (!c->closed) WaitRead(c);
}

void WorkerStoreServer::State::Deliver(std::vector<WorkerStoreEngine::Reply>& replies) {
  for (WorkerStoreEngine::Reply& r : replies) {
    auto it = connections.find(r.to);
    if (it == connections.end()) continue;
    const ConnectionPtr c = it->second;  // a copy: Refuse erases the map's
    c->out_bytes += r.bytes.size();
    c->out.push_back(std::move(r.bytes));
    if (c->out_bytes > kMaxPendingReplyBytes) {
      Refuse(c, absl::StrCat("more than ", kMaxPendingReplyBytes,
                             " bytes of replies left unread"));
      continue;
    }
    if (!c->writing) Write(c);
  }
}

void WorkerStoreServer::State::Write(const ConnectionPtr& c) {
  c->writing = true;
  // Everything pending goes out in one write.
  while (c->out.size() > 1) {
    std::string second = std::move(c->out[1]);
    c->out.erase(c->out.begin() + 1);
    c->out.front() += second;
  }
  boost::asio::async_write(
      c->socket, boost::asio::buffer(c->out.front()),
      [self = shared_from_this(), c](const boost::system::error_code& ec, size_t) {
        c->writing = false;
        if (c->closed || self->stopped) return;
        if (ec) {
          self->Drop(c);
          return;
        }
        c->out_bytes -= c->out.front().size();
        c->out.pop_front();
        if (!c->out.empty()) self->Write(c);
      });
}

void WorkerStoreServer::State::Refuse(const ConnectionPtr& c, const std::string& why) {
  if (c->closed) return;
  ++stats.errors;
  if (stats.errors <= kLoggedErrors) {
    log(absl::StrCat("worker store: closed the connection from ", c->peer, ": ", why,
                     stats.errors == kLoggedErrors ? " (further errors are only counted)" : ""));
  }
  Drop(c);
}

void WorkerStoreServer::State::Drop(const ConnectionPtr& c) {
  if (c->closed) return;
  c->closed = true;
  engine.Close(c->id);
  boost::system::error_code ec;
  c->socket.close(ec);
  connections.erase(c->id);
  --stats.open;
}

void WorkerStoreServer::State::Stop() {
  stopped = true;
  boost::system::error_code ec;
  acceptor.close(ec);
  retry.cancel();
  std::vector<ConnectionPtr> all;
  for (auto& [id, c] : connections) all.push_back(c);
  for (const ConnectionPtr& c : all) Drop(c);
}

absl::StatusOr<std::unique_ptr<WorkerStoreServer>> WorkerStoreServer::Listen(
    boost::asio::io_context& io, int port, LogFn log, WorkerStoreLimits limits) {
  RaiseOpenFileLimit();
  auto state = std::make_shared<State>(io, limits, std::move(log));
  if (absl::Status st = OpenAcceptor(state->acceptor, port); !st.ok()) return st;
  state->Accept();
  return std::unique_ptr<WorkerStoreServer>(new WorkerStoreServer(std::move(state)));
}

WorkerStoreServer::WorkerStoreServer(std::shared_ptr<State> state) : state_(std::move(state)) {}

WorkerStoreServer::~WorkerStoreServer() { state_->Stop(); }

int WorkerStoreServer::port() const {
  boost::system::error_code ec;
  return state_->acceptor.local_endpoint(ec).port();
}

WorkerStoreServer::Stats WorkerStoreServer::stats() const {
  Stats s = state_->stats;
  s.keys = state_->engine.num_keys();
  return s;
}

absl::StatusOr<std::unique_ptr<WorkerStoreServer>> HostWorkerStore(
    boost::asio::io_context& io, const v1::JoinResponse& place,
    const WorkerStoreServer::LogFn& log) {
  if (!place.worker().agent_store() || place.node_rank() != 0) {
    return std::unique_ptr<WorkerStoreServer>();
  }
  auto server = WorkerStoreServer::Listen(io, place.master_port(), log);
  if (!server.ok()) {
    return absl::UnavailableError(absl::StrCat(
        "the agent cannot serve round ", place.round(), "'s workers' store at ",
        place.master_addr(), ":", place.master_port(), ": ", server.status().message()));
  }
  log(absl::StrCat("serving the workers' store (TORCHELASTIC_USE_AGENT_STORE) at ",
                   place.master_addr(), ":", (*server)->port(), " for round ", place.round()));
  return *std::move(server);
}

}  // namespace dlaunch
