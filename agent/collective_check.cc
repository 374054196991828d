#include "agent/collective_check.h"

#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <future>
#include <memory>
#include <mutex>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "agent/collective_engine.h"
#include "agent/control_client.h"

namespace dlaunch {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

// Every connection opens with a tag and the sender's ring position.
constexpr char kNeighbourTag = 'N';
constexpr char kRingTag = 'R';
constexpr size_t kHeader = 5;
// Each neighbour exchange is timed this many times and its best kept: a slow link is slow every
// time, while a node busy for a moment (its scheduler, another process) is not.
constexpr int kRounds = 3;

class Socket {
 public:
  explicit Socket(int fd = -1) : fd_(fd) {}
  Socket(Socket&& o) noexcept : fd_(o.fd_) { o.fd_ = -1; }
  Socket& operator=(Socket&& o) noexcept {
    std::swap(fd_, o.fd_);
    return *this;
  }
  ~Socket() {
    if (fd_ >= 0) close(fd_);
  }
  int fd() const { return fd_; }

 private:
  int fd_;
};

double Seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

// Blocking calls give up at `deadline` (the check's budget), never hang.
void SetDeadline(int fd, Clock::time_point deadline) {
  const auto left = std::max<int64_t>(
      1, std::chrono::duration_cast<std::chrono::microseconds>(deadline - Clock::now()).count());
  timeval tv{static_cast<time_t>(left / 1000000), static_cast<suseconds_t>(left % 1000000)};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
}

bool SendAll(int fd, const char* p, size_t n) {
  while (n > 0) {
    const ssize_t k = send(fd, p, n, MSG_NOSIGNAL);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) return false;
    p += k;
    n -= static_cast<size_t>(k);
  }
  return true;
}

bool RecvAll(int fd, char* p, size_t n) {
  while (n > 0) {
    const ssize_t k = recv(fd, p, n, 0);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) return false;
    p += k;
    n -= static_cast<size_t>(k);
  }
  return true;
}

Socket Connect(const v1::CollectivePeer& peer, char tag, int my_index, Clock::time_point deadline) {
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (getaddrinfo(peer.addr().c_str(), std::to_string(peer.port()).c_str(), &hints, &found) != 0) {
    return Socket();
  }
  Socket s(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  SetDeadline(s.fd(), deadline);
  const bool connected = connect(s.fd(), found->ai_addr, found->ai_addrlen) == 0;
  freeaddrinfo(found);
  if (!connected) return Socket();
  int one = 1;
  setsockopt(s.fd(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  char header[kHeader] = {tag};
  const int32_t index = my_index;
  std::memcpy(header + 1, &index, sizeof(index));
  if (!SendAll(s.fd(), header, kHeader)) return Socket();
  return s;
}

// Accepts the peers' connections: each neighbour's bytes are read (and acknowledged) on a thread
// of their own, so that two neighbours are served at once; the ring predecessor's connection is
// handed to the all-reduce.
class Acceptor {
 public:
  Acceptor(int listener, int neighbours, size_t bytes, Clock::time_point deadline)
      : thread_([this, listener, neighbours, bytes, deadline] {
          Run(listener, neighbours, bytes, deadline);
        }) {}
  ~Acceptor() { thread_.join(); }
  std::future<Socket> Predecessor() { return predecessor_.get_future(); }

 private:
  void Run(int listener, int neighbours, size_t bytes, Clock::time_point deadline) {
    bool ring_seen = false;
    std::vector<std::thread> readers;
    while ((neighbours > 0 || !ring_seen) && Clock::now() < deadline) {
      pollfd p{listener, POLLIN, 0};
      const int wait = static_cast<int>(
          std::chrono::duration_cast<milliseconds>(deadline - Clock::now()).count());
      if (poll(&p, 1, std::max(wait, 1)) <= 0) continue;
      Socket s(accept4(listener, nullptr, nullptr, SOCK_CLOEXEC));
      if (s.fd() < 0) continue;
      SetDeadline(s.fd(), deadline);
      char header[kHeader];
      if (!RecvAll(s.fd(), header, kHeader)) continue;
      if (header[0] == kRingTag && !ring_seen) {
        ring_seen = true;
        predecessor_.set_value(std::move(s));
      } else if (header[0] == kNeighbourTag && neighbours > 0) {
        --neighbours;
        readers.emplace_back([bytes, s = std::move(s)] {
          std::vector<char> sink(std::min<size_t>(bytes, 1 << 20));
          for (int round = 0; round < kRounds; ++round) {
            for (size_t left = bytes; left > 0;) {
              const size_t n = std::min(left, sink.size());
              if (!RecvAll(s.fd(), sink.data(), n)) return;
              left -= n;
            }
            const char ack = 1;
            if (!SendAll(s.fd(), &ack, 1)) return;
          }
        });
      }
    }
    if (!ring_seen) predecessor_.set_value(Socket());
    for (std::thread& t : readers) t.join();
  }

  std::promise<Socket> predecessor_;
  std::thread thread_;
};

// Bytes per second of sending `bytes` to `peer`, until it acknowledged the last one: the best of
// kRounds; 0 on error.
double SendTimed(const v1::CollectivePeer& peer, int my_index, size_t bytes,
                 Clock::time_point deadline) {
  Socket s = Connect(peer, kNeighbourTag, my_index, deadline);
  if (s.fd() < 0) return 0;
  std::vector<char> block(std::min<size_t>(bytes, 1 << 20), 'x');
  double best = 0;
  for (int round = 0; round < kRounds; ++round) {
    const Clock::time_point start = Clock::now();
    for (size_t left = bytes; left > 0;) {
      const size_t n = std::min(left, block.size());
      if (!SendAll(s.fd(), block.data(), n)) return 0;
      left -= n;
    }
    char ack = 0;
    if (!RecvAll(s.fd(), &ack, 1)) return 0;
    best = std::max(best, static_cast<double>(bytes) / std::max(Seconds(Clock::now() - start), 1e-9));
  }
  return best;
}

// The group of consecutive ring positions `index` belongs to: groups of `group` nodes, the last
// one taking the remainder (so no group is a single node).
std::pair<int, int> GroupOf(int index, int n, int group) {
  group = std::max(group, 2);
  const int groups = std::max(1, n / group);
  const int g = std::min(index / group, groups - 1);
  const int start = g * group;
  return {start, g == groups - 1 ? n - start : group};
}

// A ring all-reduce (sum) of `bytes` of floats over `to_next`/`from_prev` as position `pos` of
// `size`: bytes per second, or 0 with `error` set.
double RingAllReduce(int to_next, int from_prev, int pos, int size, size_t bytes,
                     std::string* error) {
  const size_t count = std::max<size_t>(bytes / sizeof(float), static_cast<size_t>(size));
  std::vector<float> data(count, static_cast<float>(pos + 1));
  auto begin = [&](int k) { return count * static_cast<size_t>(k) / static_cast<size_t>(size); };
  auto length = [&](int k) { return begin(k + 1) - begin(k); };
  std::vector<float> incoming(count / static_cast<size_t>(size) + 1);  // the longest chunk
  auto step = [&](int send_k, int recv_k, bool add) {
    bool sent = false;
    std::thread sender([&] {
      sent = SendAll(to_next, reinterpret_cast<const char*>(&data[begin(send_k)]),
                     length(send_k) * sizeof(float));
    });
    float* into = add ? incoming.data() : &data[begin(recv_k)];
    const bool got = RecvAll(from_prev, reinterpret_cast<char*>(into), length(recv_k) * sizeof(float));
    sender.join();
    if (got && add) {
      for (size_t i = 0; i < length(recv_k); ++i) data[begin(recv_k) + i] += incoming[i];
    }
    return sent && got;
  };
  const Clock::time_point start = Clock::now();
  for (int s = 0; s < size - 1; ++s) {  // reduce-scatter
    if (!step((pos - s + size) % size, (pos - s - 1 + size) % size, true)) {
      *error = "all-reduce: a ring neighbour did not answer";
      return 0;
    }
  }
  for (int s = 0; s < size - 1; ++s) {  // all-gather
    if (!step((pos - s + 1 + size) % size, (pos - s + size) % size, false)) {
      *error = "all-reduce: a ring neighbour did not answer";
      return 0;
    }
  }
  const double took = Seconds(Clock::now() - start);
  const float want = static_cast<float>(size) * static_cast<float>(size + 1) / 2;
  for (int k = 0; k < size; ++k) {
    if (data[begin(k)] != want) {
      *error = absl::StrFormat("all-reduce: chunk %d summed to %g, not %g", k, data[begin(k)], want);
      return 0;
    }
  }
  return static_cast<double>(bytes) / std::max(took, 1e-9);
}

// C += A x B for n x n floats, in the loop order compilers vectorise.
void MultiplyAdd(const float* a, const float* b, float* c, int n) {
  for (int i = 0; i < n; ++i) {
    for (int k = 0; k < n; ++k) {
      const float aik = a[i * n + k];
      for (int j = 0; j < n; ++j) c[i * n + j] += aik * b[k * n + j];
    }
  }
}

v1::CheckResult Skipped(const std::string& name, const std::string& why) {
  v1::CheckResult r;
  r.set_name(name);
  r.set_verdict(v1::CheckResult::SKIPPED);
  r.set_detail(why);
  return r;
}

v1::CheckResult Failed(const std::string& name, const std::string& why) {
  v1::CheckResult r = Skipped(name, why);
  r.set_verdict(v1::CheckResult::FAILED);
  return r;
}

}  // namespace

int ListenForPeers(int* port) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_ANY);
  socklen_t len = sizeof(a);
  if (bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0 || listen(fd, 64) != 0 ||
      getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
    close(fd);
    return -1;
  }
  *port = ntohs(a.sin_port);
  return fd;
}

double MeasureFlopsPerCore(milliseconds window, milliseconds warmup) {
  constexpr int kN = 96;
  std::vector<float> a(kN * kN, 1.0f), b(kN * kN, 0.5f), c(kN * kN, 0.0f);
  // The warm-up fills the caches, and lets a CPU quota take hold: a throttled group was seen to
  // run unthrottled for about 100 ms after it had been idle.
  double rate = 0;
  // Three windows, the best kept: a quota slows every one, a passing load on the node not all.
  const milliseconds third = window / 3;
  for (milliseconds w : {warmup, third, third, third}) {
    const Clock::time_point start = Clock::now();
    int64_t multiplies = 0;
    while (Clock::now() - start < w) {
      MultiplyAdd(a.data(), b.data(), c.data(), kN);
      ++multiplies;
    }
    const double flops = 2.0 * kN * kN * kN * static_cast<double>(multiplies);
    if (w != warmup) rate = std::max(rate, flops / Seconds(Clock::now() - start));
  }
  // Keeps the products alive: a loop whose result nobody reads may be dropped.
  volatile float sink = c[kN * kN - 1];
  (void)sink;
  return rate;
}

v1::CollectiveFigures MeasureLinks(const std::vector<v1::CollectivePeer>& ring, int index,
                                   int listener, const v1::CollectivePlan& plan) {
  v1::CollectiveFigures f;
  const int n = static_cast<int>(ring.size());
  const size_t bytes = static_cast<size_t>(plan.bytes());
  const Clock::time_point deadline = Clock::now() + milliseconds(plan.budget_ms() / 2);
  const int right = (index + 1) % n;
  const int left = (index + n - 1) % n;
  const int neighbours = right == left ? 1 : 2;
  const auto [start, size] = GroupOf(index, n, plan.group());
  Acceptor acceptor(listener, neighbours, bytes, deadline);
  std::future<Socket> predecessor = acceptor.Predecessor();
  double to_right = 0, to_left = 0;
  std::thread left_sender;
  if (neighbours == 2) {
    left_sender = std::thread([&] { to_left = SendTimed(ring[left], index, bytes, deadline); });
  }
  to_right = SendTimed(ring[right], index, bytes, deadline);
  if (left_sender.joinable()) left_sender.join();
  if (neighbours == 1) to_left = to_right;
  f.set_to_right_bps(to_right);
  f.set_to_left_bps(to_left);
  if (to_right == 0 || to_left == 0) {
    f.set_error("a ring neighbour did not take the bytes within the budget");
  }
  // The all-reduce within the group: its own ring of connections.
  const int pos = index - start;
  Socket next = Connect(ring[start + (pos + 1) % size], kRingTag, index, deadline);
  Socket prev;
  if (predecessor.wait_until(deadline) == std::future_status::ready) prev = predecessor.get();
  std::string error;
  if (next.fd() >= 0 && prev.fd() >= 0) {
    f.set_allreduce_bps(RingAllReduce(next.fd(), prev.fd(), pos, size, bytes, &error));
  } else {
    error = "all-reduce: cannot reach the group's ring";
  }
  if (!error.empty() && f.error().empty()) f.set_error(error);
  return f;
}

std::vector<v1::CheckResult> CollectiveCheckThisNode(ControlClient& client,
                                                     const v1::CollectivePlan& plan,
                                                     const CollectiveMember& me, bool own_passed,
                                                     const CollectiveEngine& engine) {
  const Clock::time_point start = Clock::now();
  const milliseconds budget(plan.budget_ms());
  int port = 0;
  Socket listener(own_passed ? ListenForPeers(&port) : -1);
  // The torch engine's program imports torch while the node waits for its peers: the launcher
  // gives it the measuring time of the whole budget, after up to half of it waiting.
  std::unique_ptr<TorchCheck> torch;
  if (own_passed && !engine.backend.empty()) {
    torch = std::make_unique<TorchCheck>(engine, 1.5 * plan.budget_ms() / 1000.0 + 5);
  }
  v1::CollectiveCheckRequest ask;
  ask.set_agent_id(me.agent_id);
  ask.set_host(me.host);
  ask.set_addr(me.addr);
  ask.set_port(port);
  ask.set_local_checks_passed(own_passed && listener.fd() >= 0);
  ask.set_engine(engine.backend);
  // The launcher answers within the budget; the margin covers the calls themselves.
  absl::StatusOr<v1::CollectiveCheckResponse> placed =
      client.CollectiveCheck(ask, budget + std::chrono::seconds(5));
  if (!placed.ok()) {
    const std::string why = absl::StrCat("cannot ask the launcher: ", placed.status().message());
    return {Failed("link", why)};
  }
  if (!placed->skipped().empty()) {
    if (!own_passed) return {};
    return {Skipped("link", placed->skipped()), Skipped("compute", placed->skipped())};
  }
  std::vector<v1::CollectivePeer> ring(placed->ring().begin(), placed->ring().end());
  const double flops = MeasureFlopsPerCore(milliseconds(plan.compute_ms()));
  v1::CollectiveFigures figures;
  const std::string& used = placed->engine();
  if (used == "gloo" || used == "nccl") {
    // The program's store listens on the port the peers were given.
    listener = Socket();
    if (torch) {
      figures = torch->Measure(used, ring, placed->index(), me.addr, plan);
    } else {
      figures.set_error(absl::StrCat(used, " engine: this node has no torch"));
    }
    torch.reset();
    figures.set_method(absl::StrCat(used, " (torch), matmul loop"));
  } else {
    torch.reset();  // told to skip: the nodes measure with the agents' loop
    figures = MeasureLinks(ring, placed->index(), listener.fd(), plan);
    figures.set_method("tcp ring, matmul loop");
  }
  if (engine.gpus > 0) {
    std::string why;
    figures.set_gpu_busbw_bps(MeasureGpuBusBandwidth(
        engine.gpus, engine.env.count("PATH") ? engine.env.at("PATH") : "", plan.bytes(), &why));
  }
  figures.set_flops_per_core(flops);
  figures.set_seconds(Seconds(Clock::now() - start));
  ask.set_reporting(true);
  *ask.mutable_report() = figures;
  absl::StatusOr<v1::CollectiveCheckResponse> judged =
      client.CollectiveCheck(ask, budget + std::chrono::seconds(5));
  if (!judged.ok()) {
    return {Failed("link", absl::StrCat("cannot report to the launcher: ", judged.status().message()))};
  }
  if (!judged->skipped().empty()) {
    return {Skipped("link", judged->skipped()), Skipped("compute", judged->skipped())};
  }
  std::vector<v1::CheckResult> out(judged->checks().begin(), judged->checks().end());
  const double took = Seconds(Clock::now() - start);
  for (v1::CheckResult& c : out) c.set_seconds(took);
  return out;
}

}  // namespace dlaunch
