// A job directory on a disk that is full or fills up while the job runs: a small tmpfs mounted
// for the test (skipped where the test may not mount one). The preflight refuses a disk without
// room before anything starts; a disk that fills during the job is said once, the job still
// ends with its workers' result, and what was written before stays whole.
#include <sys/mount.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "absl/strings/str_split.h"
#include "tests/integration/test_process.h"

namespace dlaunch::testing {
namespace {

using std::chrono::seconds;

const std::string kBin = DLAUNCH_BIN_DIR;

class FullDiskTest : public ::testing::Test {
 protected:
  void SetUp() override {
    tmp_ = MakeTempDir();
    disk_ = tmp_ + "/disk";
    ASSERT_EQ(mkdir(disk_.c_str(), 0700), 0);
    if (mount("tmpfs", disk_.c_str(), "tmpfs", MS_NOSUID | MS_NODEV, "size=384k,mode=0700") != 0) {
      GTEST_SKIP() << "cannot mount a small tmpfs here (" << strerror(errno) << ")";
    }
    mounted_ = true;
    job_dir_ = disk_ + "/job";
  }
  void TearDown() override {
    if (mounted_) umount2(disk_.c_str(), MNT_DETACH);
  }

  std::unique_ptr<ChildProcess> Run(const std::vector<std::string>& flags,
                                    const std::vector<std::string>& command) {
    std::vector<std::string> argv = {kBin + "/dlaunch", "run", "--nnodes", "2",
                                     "--nproc-per-node", "1", "--job-dir", job_dir_,
                                     "--heartbeat", "1", "--grace", "2"};
    argv.insert(argv.end(), flags.begin(), flags.end());
    argv.push_back("--");
    argv.insert(argv.end(), command.begin(), command.end());
    return std::make_unique<ChildProcess>(argv, tmp_);
  }

  std::string tmp_, disk_, job_dir_;
  bool mounted_ = false;
};

TEST_F(FullDiskTest, ThePreflightRefusesAJobDirectoryWithoutRoom) {
  auto run = Run({}, {kBin + "/dlaunch-test-probe"});
  std::optional<int> code = run->Wait(seconds(120));
  ASSERT_TRUE(code.has_value()) << run->Stderr();
  EXPECT_NE(*code, 0);
  const std::string err = run->Stderr();
  EXPECT_NE(err.find("no worker was started"), std::string::npos) << err;
  EXPECT_NE(err.find("job directory " + job_dir_), std::string::npos) << err;
  EXPECT_NE(err.find("needs 1.0 GiB"), std::string::npos) << err;
}

TEST_F(FullDiskTest, ADiskThatFillsDuringTheJobIsSaidAndWhatWasWrittenStaysWhole) {
  // Each rank writes about 1 MB of output into its log on a 384 KiB disk, then exits 0.
  const std::string flood = "i=0; while [ $i -lt 10000 ]; do echo \"line $i of a worker that "
                            "fills the disk with its output, one line after another\"; "
                            "i=$((i+1)); done; exit 0";
  auto run = Run({"--no-preflight"}, {"/bin/sh", "-c", flood});
  std::optional<int> code = run->Wait(seconds(180));
  ASSERT_TRUE(code.has_value()) << "dlaunch run did not end on a full disk: " << run->Stderr();
  const std::string out = run->Stdout() + run->Stderr();
  EXPECT_NE(out.find("No space left on device"), std::string::npos) << out;
  // A rank whose log the disk could not take says how much of its output is missing.
  EXPECT_NE(out.find("of this rank's output could not be written to its log: No space left on "
                     "device"),
            std::string::npos)
      << out.substr(out.size() > 4000 ? out.size() - 4000 : 0);
  // The token and the resolved job.yaml, written before the disk filled, are whole.
  std::string token = ReadFile(job_dir_ + "/token");
  EXPECT_EQ(token.substr(0, token.find('\n')).size(), 32u) << token;
  EXPECT_NE(ReadFile(job_dir_ + "/job.yaml").find("command:"), std::string::npos);
  // Every journal line that is there is a whole line; no half-written file is left behind.
  std::string events = ReadFile(job_dir_ + "/events.jsonl");
  ASSERT_FALSE(events.empty());
  for (absl::string_view line : absl::StrSplit(events, '\n', absl::SkipEmpty())) {
    EXPECT_EQ(line.front(), '{') << line;
    EXPECT_EQ(line.back(), '}') << line;
  }
  EXPECT_EQ(events.back(), '\n');
  for (const auto& entry : std::filesystem::directory_iterator(job_dir_)) {
    EXPECT_EQ(entry.path().filename().string().find(".tmp."), std::string::npos) << entry.path();
  }
  EXPECT_TRUE(WaitFor([&] { return FindProcesses("", job_dir_).empty(); }, seconds(20)))
      << "a process of the job outlived it";
}

}  // namespace
}  // namespace dlaunch::testing
