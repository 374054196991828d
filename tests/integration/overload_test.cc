// Floods at a running job's control endpoint, with real processes: agents beyond the ones the job
// started, and callers without the job's token. Each is refused with a clear word to the caller;
// the launcher counts them and says so for the first three and every tenfold count, and the job
// goes on and ends as it would have.
#include <signal.h>

#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "tests/integration/test_process.h"

namespace dlaunch::testing {
namespace {

using std::chrono::seconds;

const std::string kBin = DLAUNCH_BIN_DIR;
constexpr int kFlood = 12;

std::string ControlAddress(const std::string& job_dir) {
  const std::string info = ReadFile(job_dir + "/launcher.json");
  const size_t at = info.find("\"address\":\"") + 11;
  return info.substr(at, info.find('"', at) - at);
}

int CountLines(const std::string& text, const std::string& part) {
  int n = 0;
  for (absl::string_view line : absl::StrSplit(text, '\n')) n += line.find(part) != line.npos;
  return n;
}

// Starts `agents` real agents against the job with `token_file`, one after the other, and
// returns their stderr; each must exit with an error.
std::vector<std::string> RunAgents(const std::string& job_dir, const std::string& token_file,
                                   int agents) {
  std::vector<std::string> errs;
  for (int i = 0; i < agents; ++i) {
    ChildProcess agent({kBin + "/dlaunch-agent", "--control", ControlAddress(job_dir),
                        "--token-file", token_file, "--join-timeout", "20"},
                       job_dir + "/..");
    std::optional<int> code = agent.Wait(seconds(60));
    EXPECT_TRUE(code.has_value() && *code != 0) << agent.Stderr();
    if (!code) agent.Signal(SIGKILL);
    errs.push_back(agent.Stderr());
  }
  return errs;
}

// Starts a 2-node job whose workers sleep, and waits until they run.
ChildProcess StartJob(const std::string& tmp, const std::vector<std::string>& extra) {
  std::vector<std::string> argv = {kBin + "/dlaunch", "run", "--nnodes", "2", "--job-dir",
                                   tmp + "/job", "--heartbeat", "1", "--grace", "2"};
  argv.insert(argv.end(), extra.begin(), extra.end());
  argv.insert(argv.end(), {"--", "sleep", "120"});
  return ChildProcess(argv, tmp);
}

void WaitRunning(ChildProcess& job) {
  ASSERT_TRUE(WaitFor([&] { return job.Stdout().find("all 2 workers started") != std::string::npos; },
                      seconds(120)))
      << job.Stdout() << job.Stderr();
}

TEST(OverloadTest, AgentsBeyondTheOnesTheJobStartedAreRefusedAndCounted) {
  const std::string tmp = MakeTempDir();
  ChildProcess job = StartJob(tmp, {"--max-restarts", "1"});  // the job takes spares
  WaitRunning(job);
  const std::vector<std::string> errs = RunAgents(tmp + "/job", tmp + "/job/token", kFlood);
  for (const std::string& err : errs) {
    EXPECT_NE(err.find("the job started 2 agent(s) and all of them are in it: agent "),
              std::string::npos)
        << err;
    EXPECT_NE(err.find(") is one too many"), std::string::npos) << err;
  }
  job.Signal(SIGINT);
  ASSERT_TRUE(job.Wait(seconds(120)).has_value()) << job.Stderr();
  const std::string said = job.Stdout() + job.Stderr();
  // The 1st, 2nd, 3rd and 10th of the 12.
  EXPECT_EQ(CountLines(said, "[dlaunch] refused a join: the job started 2 agent(s)"), 4) << said;
  EXPECT_EQ(CountLines(said, "(10 refused so far; only every tenfold is said)"), 1) << said;
  EXPECT_EQ(CountLines(said, "spare joined"), 0) << said;
  EXPECT_TRUE(FindProcesses("", tmp + "/job").empty());
}

TEST(OverloadTest, CallersWithoutTheTokenAreRefusedAndCounted) {
  const std::string tmp = MakeTempDir();
  ChildProcess job = StartJob(tmp, {"--no-tls"});
  WaitRunning(job);
  {
    std::ofstream(tmp + "/wrong-token") << "not-the-job-token\n";
  }
  const std::vector<std::string> errs = RunAgents(tmp + "/job", tmp + "/wrong-token", kFlood);
  for (const std::string& err : errs) {
    EXPECT_NE(err.find("missing or wrong job token"), std::string::npos) << err;
  }
  job.Signal(SIGINT);
  ASSERT_TRUE(job.Wait(seconds(120)).has_value()) << job.Stderr();
  const std::string said = job.Stdout() + job.Stderr();
  EXPECT_EQ(CountLines(said, ": missing or wrong job token"), 4) << said;
  EXPECT_EQ(CountLines(said, "(10 refused so far; only every tenfold is said)"), 1) << said;
  const std::string events = ReadFile(tmp + "/job/events.jsonl");
  EXPECT_EQ(CountLines(events, "\"call_refused\""), 4) << "the journal keeps what is said";
}

}  // namespace
}  // namespace dlaunch::testing
