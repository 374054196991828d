// dlaunch-test-probe: a small real multi-rank program for the integration tests. It records its
// environment, proves MASTER_ADDR/MASTER_PORT work with a TCP barrier (rank 0 listens, the
// others connect), optionally sends a report on DLAUNCH_REPORT_SOCKET, then sleeps or fails.
//   --env-dir DIR      write DIR/rank-N.env (KEY=VALUE lines, plus REPORT_SOCKET_IS_SOCKET=0/1)
//   --barrier          TCP barrier across all ranks through MASTER_ADDR:MASTER_PORT
//   --report           send one WorkerReport line (step 1, 64 samples)
//   --fail-rank R      rank R exits with --exit-code (default 3) after printing two lines
//   --sleep SECONDS    then sleep (all ranks but a failing one)
#include <arpa/inet.h>
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
#include <string>
#include <thread>

extern char** environ;

namespace {

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
      if (c >= 0) close(c);
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
      close(fd);
      freeaddrinfo(res);
      return ok;
    }
    close(fd);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));  // rank 0 not listening yet
  }
  freeaddrinfo(res);
  return false;
}

bool SendReport(int rank) {
  const char* path = std::getenv("DLAUNCH_REPORT_SOCKET");
  if (!path) return false;
  int fd = socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un sa{};
  sa.sun_family = AF_UNIX;
  std::strncpy(sa.sun_path, path, sizeof(sa.sun_path) - 1);
  if (connect(fd, reinterpret_cast<sockaddr*>(&sa), sizeof(sa)) != 0) return false;
  std::string line = "{\"kind\": \"STEP\", \"step\": 1, \"samples\": 64, \"interval_s\": 0.5, "
                     "\"loss\": 0.25, \"samplesPerSec\": 128, \"custom_field\": 7}\n";
  bool ok = write(fd, line.data(), line.size()) == static_cast<ssize_t>(line.size());
  close(fd);
  return ok;
}

}  // namespace

int main(int argc, char** argv) {
  std::string env_dir;
  bool barrier = false, report = false;
  int fail_rank = -1, exit_code = 3;
  double sleep_s = 0;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--env-dir" && i + 1 < argc) env_dir = argv[++i];
    else if (a == "--barrier") barrier = true;
    else if (a == "--report") report = true;
    else if (a == "--fail-rank" && i + 1 < argc) fail_rank = std::atoi(argv[++i]);
    else if (a == "--exit-code" && i + 1 < argc) exit_code = std::atoi(argv[++i]);
    else if (a == "--sleep" && i + 1 < argc) sleep_s = std::atof(argv[++i]);
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
  if (sleep_s > 0) std::this_thread::sleep_for(std::chrono::duration<double>(sleep_s));
  return 0;
}
