// The agents' logs in the job directory, with real processes: each is named by its agent's node
// id (logs/agent-<node id>.log), not by the order the node launchers started in. One agent is
// made to join last, so it is node 3 whichever launcher started it.
#include <sys/stat.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "tests/integration/test_process.h"

namespace dlaunch::testing {
namespace {

using std::chrono::seconds;

const std::string kBin = DLAUNCH_BIN_DIR;

TEST(JobLogsTest, EachAgentsLogIsNamedByItsNodeIdWhateverOrderTheAgentsJoinedIn) {
  const std::string tmp = MakeTempDir();
  const std::string job_dir = tmp + "/job";
  // The first agent to start waits 3 s before it runs (exec keeps the launcher's pid), so it
  // joins last: node 3 of 4, the rest in their order of joining.
  const std::string wrapper = tmp + "/agent.sh";
  std::ofstream(wrapper) << "#!/bin/sh\n"
                         << "if mkdir " << tmp << "/late 2>/dev/null; then sleep 3; fi\n"
                         << "exec " << kBin << "/dlaunch-agent \"$@\"\n";
  ASSERT_EQ(chmod(wrapper.c_str(), 0755), 0);
  ChildProcess run({kBin + "/dlaunch", "run", "--nnodes", "4", "--nproc-per-node", "1", "--job-dir",
                    job_dir, "--heartbeat", "1", "--grace", "2", "--", "true"},
                   tmp, {"DLAUNCH_AGENT=" + wrapper});
  ASSERT_EQ(run.Wait(seconds(90)), 0) << run.Stdout() << run.Stderr();
  for (int node = 0; node < 4; ++node) {
    const std::string log = ReadFile(absl::StrCat(job_dir, "/logs/agent-", node, ".log"));
    EXPECT_TRUE(absl::StrContains(log, absl::StrCat("round 0: node rank ", node, " of 4")))
        << "logs/agent-" << node << ".log:\n" << log;
  }
  // Every launcher's log was named by its agent's node id.
  for (const auto& entry : std::filesystem::directory_iterator(job_dir + "/logs")) {
    EXPECT_FALSE(absl::StartsWith(entry.path().filename().string(), "launcher-")) << entry.path();
  }
}

}  // namespace
}  // namespace dlaunch::testing
