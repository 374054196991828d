// ParseWarmRequest: dlaunch-worker's warm process reads the request format of
// python/src/dlaunch/_zygote.py (what agent/workers/warm_start.cc's ZygoteRequestBody writes).
#include "worker/warm_serve.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace dlaunch::worker {
namespace {

std::string Body(const std::vector<std::string>& fields) {
  std::string body;
  for (const std::string& f : fields) {
    body += f;
    body += '\0';
  }
  return body;
}

TEST(WarmServeTest, ParsesTheAgentsRequest) {
  auto req = ParseWarmRequest(Body({"dlaunch-zygote-1", "/job", "0,3", "42", "9", "1", "2",
                                    "dlaunch-worker", "--steps", "RANK=1", "A=b=c"}));
  ASSERT_TRUE(req.ok()) << req.status();
  EXPECT_EQ(req->cwd, "/job");
  EXPECT_EQ(req->cpus, (std::vector<int>{0, 3}));
  EXPECT_EQ(req->agent, 42);
  EXPECT_EQ(req->death_signal, 9);
  EXPECT_TRUE(req->traceable);
  EXPECT_EQ(req->argv, (std::vector<std::string>{"dlaunch-worker", "--steps"}));
  EXPECT_EQ(req->env, (std::vector<std::string>{"RANK=1", "A=b=c"}));
}

TEST(WarmServeTest, NoCpusAndNoEnvironment) {
  auto req = ParseWarmRequest(Body({"dlaunch-zygote-1", "", "", "7", "0", "0", "1", "w"}));
  ASSERT_TRUE(req.ok()) << req.status();
  EXPECT_TRUE(req->cpus.empty());
  EXPECT_FALSE(req->traceable);
  EXPECT_TRUE(req->env.empty());
}

TEST(WarmServeTest, RejectsMalformedRequests) {
  EXPECT_FALSE(ParseWarmRequest(Body({"dlaunch-zygote-2", "", "", "7", "0", "0", "1", "w"})).ok());
  EXPECT_FALSE(ParseWarmRequest(Body({"dlaunch-zygote-1", "", "", "7"})).ok());
  EXPECT_FALSE(ParseWarmRequest(Body({"dlaunch-zygote-1", "", "x", "7", "0", "0", "1", "w"})).ok());
  EXPECT_FALSE(ParseWarmRequest(Body({"dlaunch-zygote-1", "", "", "0", "0", "0", "1", "w"})).ok());
  EXPECT_FALSE(ParseWarmRequest(Body({"dlaunch-zygote-1", "", "", "7", "0", "0", "5", "w"})).ok());
  EXPECT_FALSE(ParseWarmRequest(Body({"dlaunch-zygote-1", "", "", "7", "0", "0", "0"})).ok());
}

TEST(WarmServeTest, RecognisesTheServingMode) {
  EXPECT_TRUE(IsWarmServe({"dlaunch-worker", "--warm-serve", "/s"}));
  EXPECT_FALSE(IsWarmServe({"dlaunch-worker", "--steps", "1"}));
  EXPECT_FALSE(RunWarmServer({"dlaunch-worker", "--warm-serve"}).ok());
  EXPECT_FALSE(RunWarmServer({"dlaunch-worker", "--warm-serve", "/s", "--no-such-flag"}).ok());
}

}  // namespace
}  // namespace dlaunch::worker
