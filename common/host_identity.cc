#include "common/host_identity.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <limits.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cctype>
#include <random>

namespace dlaunch {
namespace {

bool IsLoopback(const std::string& addr) { return addr.rfind("127.", 0) == 0; }

std::string Ipv4Text(const sockaddr* sa) {
  char text[INET_ADDRSTRLEN];
  auto* in = reinterpret_cast<const sockaddr_in*>(sa);
  if (!inet_ntop(AF_INET, &in->sin_addr, text, sizeof(text))) return "";
  return text;
}

std::string FirstNonLoopbackInterface() {
  ifaddrs* ifs = nullptr;
  std::string out = "127.0.0.1";
  if (getifaddrs(&ifs) != 0) return out;
  for (ifaddrs* i = ifs; i; i = i->ifa_next) {
    if (!i->ifa_addr || i->ifa_addr->sa_family != AF_INET) continue;
    std::string text = Ipv4Text(i->ifa_addr);
    if (!text.empty() && !IsLoopback(text)) {
      out = text;
      break;
    }
  }
  freeifaddrs(ifs);
  return out;
}

}  // namespace

std::string LocalHostName() {
  char buf[HOST_NAME_MAX + 1] = {0};
  gethostname(buf, HOST_NAME_MAX);
  return buf;
}

std::string ShortHostName(const std::string& host) {
  std::string lower = host;
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  in_addr a4;
  in6_addr a6;
  if (inet_pton(AF_INET, lower.c_str(), &a4) == 1 || inet_pton(AF_INET6, lower.c_str(), &a6) == 1) {
    return lower;  // an address must not be cut at its first dot
  }
  return lower.substr(0, lower.find('.'));
}

std::string AdvertisedAddress(const std::string& host) {
  addrinfo hints{}, *res = nullptr;
  hints.ai_family = AF_INET;
  if (getaddrinfo(host.c_str(), nullptr, &hints, &res) == 0) {
    for (addrinfo* p = res; p; p = p->ai_next) {
      std::string text = Ipv4Text(p->ai_addr);
      if (!text.empty() && !IsLoopback(text)) {
        freeaddrinfo(res);
        return text;
      }
    }
    freeaddrinfo(res);
  }
  return FirstNonLoopbackInterface();
}

std::string RouteAddressTo(const std::string& target) {
  auto colon = target.rfind(':');
  std::string host = target.substr(0, colon);
  std::string port = colon == std::string::npos ? "1" : target.substr(colon + 1);
  addrinfo hints{}, *res = nullptr;
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_DGRAM;
  if (getaddrinfo(host.c_str(), port.c_str(), &hints, &res) != 0 || !res) return "127.0.0.1";
  std::string out = "127.0.0.1";
  int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  // connect() on a datagram socket sends nothing; it only asks the kernel to pick a route.
  if (fd >= 0 && connect(fd, res->ai_addr, res->ai_addrlen) == 0) {
    sockaddr_in local{};
    socklen_t len = sizeof(local);
    if (getsockname(fd, reinterpret_cast<sockaddr*>(&local), &len) == 0) {
      std::string text = Ipv4Text(reinterpret_cast<sockaddr*>(&local));
      if (!text.empty()) out = text;
    }
  }
  if (fd >= 0) close(fd);
  freeaddrinfo(res);
  return out;
}

int FreePort(const std::string& addr) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return 0;
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_port = 0;
  if (inet_pton(AF_INET, addr.c_str(), &sa.sin_addr) != 1) sa.sin_addr.s_addr = htonl(INADDR_ANY);
  int port = 0;
  socklen_t len = sizeof(sa);
  if (bind(fd, reinterpret_cast<sockaddr*>(&sa), sizeof(sa)) == 0 &&
      getsockname(fd, reinterpret_cast<sockaddr*>(&sa), &len) == 0) {
    port = ntohs(sa.sin_port);
  }
  close(fd);
  return port;
}

std::string RandomHex(int n) {
  std::random_device rd;
  std::string out;
  for (int i = 0; i < n; ++i) out.push_back("0123456789abcdef"[rd() % 16]);
  return out;
}

}  // namespace dlaunch
