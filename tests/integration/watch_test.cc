// `dlaunch watch` and `dlaunch status` of a running `dlaunch run`, from other processes: the
// launcher's Watch stream with the job token, refusal without it, and the summary at the end.
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <regex>

#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include "absl/strings/str_cat.h"
#include "dlaunch/control.grpc.pb.h"
#include "proto/control_credentials.h"
#include "tests/integration/test_process.h"

namespace dlaunch::testing {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

const std::string kBin = DLAUNCH_BIN_DIR;

class WatchTest : public ::testing::Test {
 protected:
  void SetUp() override {
    tmp_ = MakeTempDir();
    job_dir_ = tmp_ + "/" + tmp_.substr(tmp_.rfind('/') + 1);
  }

  // Two local nodes of one rank each, reporting every 0.3 s (steps 2, 3, ...) for `seconds`.
  std::unique_ptr<ChildProcess> StartJob(int seconds) {
    return std::make_unique<ChildProcess>(
        std::vector<std::string>{kBin + "/dlaunch", "run", "--nnodes", "2", "--nproc-per-node",
                                 "1", "--job-dir", job_dir_, "--heartbeat", "1", "--grace", "2",
                                 "--", kBin + "/dlaunch-test-probe", "--report", "--report-every",
                                 "0.3", "--total-steps", "1000", "--sleep",
                                 std::to_string(seconds)},
        tmp_);
  }

  // `dlaunch ARGS...` to completion (stdout and stderr are files: not a terminal).
  std::unique_ptr<ChildProcess> Dlaunch(const std::vector<std::string>& args) {
    std::vector<std::string> argv = {kBin + "/dlaunch"};
    argv.insert(argv.end(), args.begin(), args.end());
    return std::make_unique<ChildProcess>(argv, tmp_);
  }

  // Both ranks have reported a step past the first (the agent may merge reports, so any step
  // from 2 on).
  bool Reporting() const {
    const std::string metrics = ReadFile(job_dir_ + "/metrics.jsonl");
    for (int rank : {0, 1}) {
      const std::regex step(absl::StrCat("\"rank\":", rank, ",\"step\":\"([0-9]+)\""));
      bool past_first = false;
      for (std::sregex_iterator it(metrics.begin(), metrics.end(), step), end; it != end; ++it) {
        past_first |= std::stol((*it)[1].str()) >= 2;
      }
      if (!past_first) return false;
    }
    return true;
  }

  std::string tmp_, job_dir_;
};

TEST_F(WatchTest, WatchAndStatusSeeTheRunningJobAndTheSummaryAfterIt) {
  auto run = StartJob(12);
  ASSERT_TRUE(WaitFor([&] { return Reporting(); }, seconds(60)))
      << run->Stdout() << run->Stderr();

  // launcher.json names the endpoint that watchers use.
  std::string info = ReadFile(job_dir_ + "/launcher.json");
  size_t at = info.find("\"address\":\"");
  ASSERT_NE(at, std::string::npos) << info;
  const std::string address = info.substr(at + 11, info.find('"', at + 11) - at - 11);

  // The Watch call itself, over TLS pinned to the job's certificate but without the token:
  // refused.
  {
    auto creds = ReadJobCredentials(job_dir_ + "/token");
    ASSERT_TRUE(creds.ok()) << creds.status();
    auto stub = v1::Control::NewStub(ControlChannel(address, *creds));
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + seconds(20));
    auto reader = stub->Watch(&ctx, v1::WatchRequest());
    v1::JobSnapshot snapshot;
    EXPECT_FALSE(reader->Read(&snapshot));
    EXPECT_EQ(reader->Finish().error_code(), grpc::StatusCode::UNAUTHENTICATED);
  }

  auto status = Dlaunch({"status", job_dir_});
  ASSERT_EQ(status->Wait(seconds(30)), 0) << status->Stdout() << status->Stderr();
  std::string out = status->Stdout();
  EXPECT_NE(out.find("live, from the launcher at "), std::string::npos) << out;
  EXPECT_NE(out.find("NODE  HOST"), std::string::npos) << out;
  EXPECT_NE(out.find("   0  "), std::string::npos) << out;
  EXPECT_NE(out.find("   1  "), std::string::npos) << out;
  EXPECT_NE(out.find("running"), std::string::npos) << out;
  EXPECT_NE(out.find("/1000"), std::string::npos) << "the progress line: " << out;

  auto watch = Dlaunch({"watch", job_dir_});
  // The watcher has its first table: the stream is open with the token it read.
  ASSERT_TRUE(WaitFor([&] { return watch->Stdout().find("NODE  HOST") != std::string::npos; },
                      seconds(30)))
      << watch->Stdout() << watch->Stderr();

  // A wrong token, then none at all, from other watchers: refused, and said so.
  const std::string token = ReadFile(job_dir_ + "/token");
  {
    // The wrong token with the right certificate's fingerprint (the second line).
    std::ofstream(job_dir_ + "/token") << "0123456789abcdef0123456789abcdef\n"
                                       << token.substr(token.find('\n') + 1);
    auto wrong = Dlaunch({"watch", job_dir_});
    ASSERT_EQ(wrong->Wait(seconds(30)), 3) << wrong->Stdout() << wrong->Stderr();
    EXPECT_NE(wrong->Stderr().find("refused the token in " + job_dir_ + "/token"), std::string::npos)
        << wrong->Stderr();
    EXPECT_NE(wrong->Stderr().find("missing or wrong job token"), std::string::npos) << wrong->Stderr();
    ASSERT_EQ(std::remove((job_dir_ + "/token").c_str()), 0);
    auto missing = Dlaunch({"watch", job_dir_});
    ASSERT_EQ(missing->Wait(seconds(30)), 3) << missing->Stdout() << missing->Stderr();
    EXPECT_NE(missing->Stderr().find("cannot read the job token " + job_dir_ + "/token"),
              std::string::npos)
        << missing->Stderr();
    std::ofstream(job_dir_ + "/token") << token;
  }

  auto code = run->Wait(seconds(90));
  ASSERT_TRUE(code.has_value()) << "dlaunch run did not finish";
  ASSERT_EQ(*code, 0) << run->Stdout() << run->Stderr();
  // The launcher logged the refusal.
  EXPECT_NE(run->Stderr().find("refused Watch from "), std::string::npos) << run->Stderr();
  EXPECT_NE(run->Stdout().find("[dlaunch]"), std::string::npos) << "plain lines when not a terminal";
  EXPECT_EQ(run->Stdout().find("\x1b["), std::string::npos) << "no cursor movement in a file";

  // The first watcher saw the job to its end, then printed the summary and exited 0.
  auto watched = watch->Wait(seconds(30));
  ASSERT_TRUE(watched.has_value()) << watch->Stdout() << watch->Stderr();
  EXPECT_EQ(*watched, 0) << watch->Stdout() << watch->Stderr();
  std::string w = watch->Stdout();
  EXPECT_NE(w.find("ended (exit 0)"), std::string::npos) << w;
  EXPECT_NE(w.find(" done "), std::string::npos) << w;
  EXPECT_NE(w.find("summary:"), std::string::npos) << w;
  EXPECT_NE(w.find("result: succeeded"), std::string::npos) << w;

  // Watching an ended job shows its summary.
  auto after = Dlaunch({"watch", job_dir_});
  ASSERT_EQ(after->Wait(seconds(30)), 0) << after->Stdout() << after->Stderr();
  EXPECT_NE(after->Stdout().find("result: succeeded"), std::string::npos) << after->Stdout();
  auto status_after = Dlaunch({"status", job_dir_});
  ASSERT_EQ(status_after->Wait(seconds(30)), 0);
  EXPECT_EQ(status_after->Stdout().find("live, from"), std::string::npos) << status_after->Stdout();
  EXPECT_EQ(status_after->Stdout().find("live:"), std::string::npos) << status_after->Stdout();
}

}  // namespace
}  // namespace dlaunch::testing
