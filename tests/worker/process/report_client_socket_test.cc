// The report client on a real Unix socket: one JSON line per report, and a socket that is not
// there is Unavailable.
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <string>

#include "dlaunch/report.pb.h"
#include "google/protobuf/util/json_util.h"
#include "gtest/gtest.h"
#include "worker/report_client.h"

namespace dlaunch::worker {
namespace {

TEST(ReportClientTest, SendsOneLinePerReportOnTheSocket) {
  char dir[] = "/tmp/report_test_XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  const std::string path = std::string(dir) + "/r.sock";
  const int listener = socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strcpy(addr.sun_path, path.c_str());
  ASSERT_EQ(bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  ASSERT_EQ(listen(listener, 1), 0);

  absl::StatusOr<ReportClient> client = ReportClient::Connect(path);
  ASSERT_TRUE(client.ok()) << client.status();
  const int conn = accept(listener, nullptr, nullptr);
  ASSERT_GE(conn, 0);
  for (int step : {1, 2}) {
    dlaunch::v1::WorkerReport r;
    r.set_step(step);
    r.set_loss(0.25);
    client->Send(r);
  }
  std::string got;
  char buf[4096];
  while (std::count(got.begin(), got.end(), '\n') < 2) {
    const ssize_t n = read(conn, buf, sizeof(buf));
    ASSERT_GT(n, 0);
    got.append(buf, static_cast<size_t>(n));
  }
  const std::string first = got.substr(0, got.find('\n'));
  dlaunch::v1::WorkerReport parsed;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(first, &parsed).ok()) << first;
  EXPECT_EQ(parsed.step(), 1);
  EXPECT_DOUBLE_EQ(parsed.loss(), 0.25);
  close(conn);
  close(listener);
  unlink(path.c_str());
  rmdir(dir);
}

TEST(ReportClientTest, UnreachableSocketIsUnavailable) {
  absl::StatusOr<ReportClient> client = ReportClient::Connect("/tmp/no-such-dir-dlaunch/r.sock");
  EXPECT_TRUE(absl::IsUnavailable(client.status())) << client.status();
}

}  // namespace
}  // namespace dlaunch::worker
