#include "worker/restart_channel.h"

#include <dirent.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "dlaunch/report.pb.h"
#include "google/protobuf/util/json_util.h"
#include "worker/report_client.h"

namespace dlaunch::worker {

absl::StatusOr<std::unique_ptr<RestartChannel>> RestartChannel::Connect(
    const std::string& socket_path) {
  absl::StatusOr<int> fd = ConnectReportSocket(socket_path);
  if (!fd.ok()) return fd.status();
  std::unique_ptr<RestartChannel> channel(new RestartChannel(*fd));
  channel->Send("hello", 0, "");
  return channel;
}

RestartChannel::RestartChannel(int fd) : fd_(fd) {
  reader_ = std::thread([this] { ReadLoop(); });
}

RestartChannel::~RestartChannel() {
  // Wakes the reader out of its recv(); it ends on the end of the stream.
  ::shutdown(fd_, SHUT_RDWR);
  if (reader_.joinable()) reader_.join();
  ::close(fd_);
}

void RestartChannel::Send(const std::string& what, int round, const std::string& why) {
  v1::RestartLine line;
  line.set_restart(what);
  line.set_round(round);
  if (what == "hello") line.set_in_process(true);
  line.set_why(why);
  std::string json;
  google::protobuf::util::JsonPrintOptions options;
  options.preserve_proto_field_names = true;
  (void)google::protobuf::util::MessageToJsonString(line, &json, options);
  json += "\n";
  std::lock_guard<std::mutex> lock(send_mu_);
  size_t off = 0;
  while (off < json.size()) {
    const ssize_t n = ::send(fd_, json.data() + off, json.size() - off, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      // The agent is gone: it ends this process, or its "join" never comes (WaitForJoin).
      std::fprintf(stderr, "dlaunch-worker: cannot say \"%s\" to the agent: %s\n", what.c_str(),
                   std::strerror(errno));
      return;
    }
    off += static_cast<size_t>(n);
  }
}

void RestartChannel::ReadLoop() {
  std::string buffer;
  char chunk[4096];
  for (;;) {
    const ssize_t n = ::recv(fd_, chunk, sizeof(chunk), 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    buffer.append(chunk, static_cast<size_t>(n));
    for (size_t nl; (nl = buffer.find('\n')) != std::string::npos;) {
      Take(buffer.substr(0, nl));
      buffer.erase(0, nl + 1);
    }
  }
  std::lock_guard<std::mutex> lock(mu_);
  closed_ = true;
  cv_.notify_all();
}

void RestartChannel::Take(const std::string& text) {
  v1::RestartLine line;
  google::protobuf::util::JsonParseOptions options;
  options.ignore_unknown_fields = true;
  if (!google::protobuf::util::JsonStringToMessage(text, &line, options).ok()) {
    std::fprintf(stderr, "dlaunch-worker: ignoring a line from the agent it cannot read: %s\n",
                 text.c_str());
    return;
  }
  if (line.restart() == "leave") {
    // The round is over: a collective of the training thread blocked on a peer that is stuck
    // (not dead) would hold it past the agent's bound to leave; failing it now lets the thread
    // leave at once, wherever it is.
    ShutdownTcpConnections();
    std::lock_guard<std::mutex> lock(mu_);
    leave_round_.store(line.round());
    cv_.notify_all();
    return;
  }
  std::lock_guard<std::mutex> lock(mu_);
  if (line.restart() == "join") {
    RoundPlace place;
    place.round = line.round();
    place.rank = line.rank();
    place.local_rank = line.local_rank();
    place.world_size = line.world_size();
    place.local_world_size = line.local_world_size();
    place.node_rank = line.node_rank();
    place.master_addr = line.master_addr();
    place.master_port = line.master_port();
    joins_.push_back(std::move(place));
  } else {
    return;
  }
  cv_.notify_all();
}

std::optional<int> RestartChannel::WaitForLeave(std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait_for(lock, timeout, [&] { return leave_requested() || closed_; });
  const int round = leave_round_.load();
  if (round < 0) return std::nullopt;
  return round;
}

std::optional<RoundPlace> RestartChannel::WaitForJoin(std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait_for(lock, timeout, [&] { return !joins_.empty() || closed_; });
  if (joins_.empty()) return std::nullopt;
  RoundPlace place = std::move(joins_.front());
  joins_.pop_front();
  return place;
}

int ShutdownTcpConnections() {
  DIR* dir = ::opendir("/proc/self/fd");
  if (dir == nullptr) return 0;
  int count = 0;
  while (dirent* entry = ::readdir(dir)) {
    int fd = 0;
    if (!absl::SimpleAtoi(entry->d_name, &fd) || fd == ::dirfd(dir)) continue;
    sockaddr_storage addr{};
    socklen_t len = sizeof(addr);
    if (::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) continue;
    if (addr.ss_family != AF_INET && addr.ss_family != AF_INET6) continue;
    int type = 0, listening = 0;
    socklen_t size = sizeof(int);
    if (::getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &size) != 0 || type != SOCK_STREAM) continue;
    size = sizeof(int);
    // A listening socket (the store rank 0 serves) is left alone: its server thread treats an
    // event on it as fatal, and it closes with the store.
    if (::getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &size) == 0 && listening) continue;
    if (::shutdown(fd, SHUT_RDWR) == 0) ++count;
  }
  ::closedir(dir);
  return count;
}

}  // namespace dlaunch::worker
