// dlaunch-test-probe: a small real multi-rank program for the integration tests. It records its
// environment, proves MASTER_ADDR/MASTER_PORT work with a TCP barrier (rank 0 listens, the
// others connect), optionally sends a report on DLAUNCH_REPORT_SOCKET, then sleeps or fails.
//   --env-dir DIR      write DIR/rank-N.env (KEY=VALUE lines, plus REPORT_SOCKET_IS_SOCKET=0/1)
//   --barrier          TCP barrier across all ranks through MASTER_ADDR:MASTER_PORT
//   --report           send one WorkerReport line (step 1, 64 samples)
//   --fail-rank R      rank R exits with --exit-code (default 3) after printing two lines
//   --sleep SECONDS    then sleep (all ranks but a failing one)
//   --kill-rank R      rank R kills itself with SIGKILL (after the barrier and report)
//   --peer-fail        with --barrier: rank 0 keeps the killed rank's barrier connection open
//                      and, when it breaks, exits 1 the way Gloo does when a peer died
//   --report-every S   while sleeping, send a report (steps 2, 3, ...) every S seconds
//   --stop-rank R      rank R stops itself with SIGSTOP after --stop-after reports (default 3)
//   --total-steps N    reports carry total_steps N (the live view's progress bar)
#include <arpa/inet.h>
#include <signal.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <map>
#include <string>
#include <thread>
#include <vector>

extern char** environ;

namespace {

// With --peer-fail the barrier's connections stay open: rank 0 keeps one per peer rank, so it
// notices a peer's death the way a collective would.
bool g_keep_connections = false;
std::map<int, int> g_peer_fds;

int EnvInt(const char* name) {
  const char* v = std::getenv(name);
  return v ? std::atoi(v) : -1;
}

bool Barrier(int rank, int world) {
  const char* addr = std::getenv("MASTER_ADDR");
  const int port = EnvInt("MASTER_PORT");
  if (!addr || port <= 0) return false;
  if (rank == 0) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    sockaddr_in sa{};
    sa.sin_family = AF_INET;
    sa.sin_port = htons(port);
    sa.sin_addr.s_addr = INADDR_ANY;
    if (bind(fd, reinterpret_cast<sockaddr*>(&sa), sizeof(sa)) != 0 || listen(fd, 64) != 0) {
      perror("barrier bind");
      return false;
    }
    int seen = 0;
    for (int i = 1; i < world; ++i) {
      int c = accept(fd, nullptr, nullptr);
      int r = -1;
      if (c >= 0 && read(c, &r, sizeof(r)) == sizeof(r) && r > 0 && r < world) ++seen;
      if (c >= 0 && g_keep_connections) {
        g_peer_fds[r] = c;
      } else if (c >= 0) {
        close(c);
      }
    }
    close(fd);
    std::cout << "barrier: rank 0 saw " << seen << " of " << world - 1 << " peers" << std::endl;
    return seen == world - 1;
  }
  addrinfo hints{}, *res = nullptr;
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_STREAM;
  if (getaddrinfo(addr, std::to_string(port).c_str(), &hints, &res) != 0) return false;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (std::chrono::steady_clock::now() < deadline) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (connect(fd, res->ai_addr, res->ai_addrlen) == 0) {
      bool ok = write(fd, &rank, sizeof(rank)) == sizeof(rank);
      if (!g_keep_connections) close(fd);
      freeaddrinfo(res);
      return ok;
    }
    close(fd);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));  // rank 0 not listening yet
  }
  freeaddrinfo(res);
  return false;
}

long g_total_steps = 0;

bool SendReport(int rank, long step = 1) {
  const char* path = std::getenv("DLAUNCH_REPORT_SOCKET");
  if (!path) return false;
  int fd = socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un sa{};
  sa.sun_family = AF_UNIX;
  std::strncpy(sa.sun_path, path, sizeof(sa.sun_path) - 1);
  if (connect(fd, reinterpret_cast<sockaddr*>(&sa), sizeof(sa)) != 0) return false;
  std::string line = "{\"kind\": \"STEP\", \"step\": " + std::to_string(step) +
                     ", \"samples\": 64, \"interval_s\": 0.5, "
                     "\"loss\": 0.25, \"samplesPerSec\": 128, \"custom_field\": 7, "
                     "\"total_steps\": " + std::to_string(g_total_steps) + "}\n";
  bool ok = write(fd, line.data(), line.size()) == static_cast<ssize_t>(line.size());
  close(fd);
  return ok;
}

}  // namespace

int main(int argc, char** argv) {
  std::string env_dir;
  bool barrier = false, report = false;
  int fail_rank = -1, exit_code = 3, kill_rank = -1, stop_rank = -1, stop_after = 3;
  int alloc_rank = -1;
  long alloc_mb = 0;
  bool peer_fail = false;
  double sleep_s = 0, report_every_s = 0;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--env-dir" && i + 1 < argc) env_dir = argv[++i];
    else if (a == "--barrier") barrier = true;
    else if (a == "--report") report = true;
    else if (a == "--fail-rank" && i + 1 < argc) fail_rank = std::atoi(argv[++i]);
    else if (a == "--exit-code" && i + 1 < argc) exit_code = std::atoi(argv[++i]);
    else if (a == "--sleep" && i + 1 < argc) sleep_s = std::atof(argv[++i]);
    else if (a == "--kill-rank" && i + 1 < argc) kill_rank = std::atoi(argv[++i]);
    else if (a == "--alloc-rank" && i + 1 < argc) alloc_rank = std::atoi(argv[++i]);
    else if (a == "--alloc-mb" && i + 1 < argc) alloc_mb = std::atol(argv[++i]);
    else if (a == "--peer-fail") peer_fail = g_keep_connections = true;
    else if (a == "--report-every" && i + 1 < argc) report_every_s = std::atof(argv[++i]);
    else if (a == "--stop-rank" && i + 1 < argc) stop_rank = std::atoi(argv[++i]);
    else if (a == "--stop-after" && i + 1 < argc) stop_after = std::atoi(argv[++i]);
    else if (a == "--total-steps" && i + 1 < argc) g_total_steps = std::atol(argv[++i]);
    else {
      std::cerr << "probe: unknown argument " << a << std::endl;
      return 2;
    }
  }
  const int rank = EnvInt("RANK"), world = EnvInt("WORLD_SIZE");
  std::cout << "probe rank " << rank << " of " << world << " pid " << getpid() << std::endl;
  if (!env_dir.empty()) {
    std::ofstream out(env_dir + "/rank-" + std::to_string(rank) + ".env.tmp");
    for (char** e = environ; *e; ++e) out << *e << "\n";
    struct stat st;
    const char* sock = std::getenv("DLAUNCH_REPORT_SOCKET");
    out << "REPORT_SOCKET_IS_SOCKET=" << (sock && stat(sock, &st) == 0 && S_ISSOCK(st.st_mode)) << "\n";
    out.close();
    std::rename((env_dir + "/rank-" + std::to_string(rank) + ".env.tmp").c_str(),
                (env_dir + "/rank-" + std::to_string(rank) + ".env").c_str());
  }
  if (barrier && !Barrier(rank, world)) {
    std::cerr << "probe: barrier failed on rank " << rank << std::endl;
    return 4;
  }
  if (report && !SendReport(rank)) {
    std::cerr << "probe: report failed on rank " << rank << std::endl;
    return 5;
  }
  if (rank == fail_rank) {
    std::cout << "probe: rank " << rank << " is about to fail" << std::endl;
    std::cerr << "probe: failing on purpose with exit code " << exit_code << std::endl;
    return exit_code;
  }
  if (rank == kill_rank) {
    std::cout << "probe: rank " << rank << " kills itself" << std::endl;
    raise(SIGKILL);
  }
  if (rank == alloc_rank) {
    // Touches alloc_mb MB a page at a time: past a memory limit, the OOM killer takes it.
    std::cout << "probe: rank " << rank << " allocates " << alloc_mb << " MB" << std::endl;
    std::vector<char*> blocks;
    for (long mb = 0; mb < alloc_mb; ++mb) {
      char* block = static_cast<char*>(std::malloc(1 << 20));
      if (block == nullptr) return 6;
      for (size_t off = 0; off < (1 << 20); off += 4096) block[off] = 1;
      blocks.push_back(block);
    }
    std::cout << "probe: rank " << rank << " holds " << alloc_mb << " MB" << std::endl;
  }
  if (peer_fail && rank == 0 && g_peer_fds.count(kill_rank)) {
    char byte;
    while (read(g_peer_fds[kill_rank], &byte, 1) > 0) {
    }
    std::cerr << "RuntimeError: [gloo/transport/tcp/pair.cc:598] Connection reset by peer" << std::endl;
    return 1;
  }
  if (report_every_s > 0) {
    const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(sleep_s);
    for (long step = 2; std::chrono::steady_clock::now() < end; ++step) {
      if (rank == stop_rank && step - 1 >= stop_after) {
        std::cout << "probe: rank " << rank << " stops itself after " << step - 1 << " reports"
                  << std::endl;
        raise(SIGSTOP);
      }
      std::this_thread::sleep_for(std::chrono::duration<double>(report_every_s));
      SendReport(rank, step);
    }
    return 0;
  }
  if (sleep_s > 0) std::this_thread::sleep_for(std::chrono::duration<double>(sleep_s));
  return 0;
}
