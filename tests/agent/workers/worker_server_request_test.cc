// The answer of PyTorch's worker server as WorkerServerRequest reads it: the body of a 200, the
// status and the server's words otherwise. The request itself is exercised against a real Unix
// socket in process/stack_dumper_socket_test.cc.
#include "agent/workers/worker_server_request.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace dlaunch {
namespace {

using ::testing::HasSubstr;

TEST(WorkerServerRequestTest, TheBodyOfA200) {
  absl::StatusOr<std::string> body = WorkerServerRequest::ParseResponse(
      "HTTP/1.1 200 OK\r\nContent-Length: 12\r\nContent-Type: text/plain\r\n\r\nThread 0x1:\n");
  ASSERT_TRUE(body.ok()) << body.status();
  EXPECT_EQ(*body, "Thread 0x1:\n");
}

TEST(WorkerServerRequestTest, AnErrorStatusCarriesTheServersWords) {
  // torch's pyspy_dump handler without py-spy on the rank's PATH answers so.
  absl::StatusOr<std::string> body = WorkerServerRequest::ParseResponse(
      "HTTP/1.1 500 Internal Server Error\r\nContent-Length: 26\r\n\r\nsh: 1: py-spy: not found\r\n");
  ASSERT_FALSE(body.ok());
  EXPECT_THAT(body.status().message(), HasSubstr("HTTP 500: sh: 1: py-spy: not found"));
}

TEST(WorkerServerRequestTest, NotAnHttpAnswer) {
  EXPECT_FALSE(WorkerServerRequest::ParseResponse("").ok());
  EXPECT_FALSE(WorkerServerRequest::ParseResponse("HTTP/1.1 200 OK\r\nContent-Length: 3\r\n").ok())
      << "cut before the end of its head";
  EXPECT_FALSE(WorkerServerRequest::ParseResponse("SSH-2.0-OpenSSH\r\n\r\n").ok());
}

}  // namespace
}  // namespace dlaunch
