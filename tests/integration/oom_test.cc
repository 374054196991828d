// A worker the kernel's OOM killer takes is named "out of memory" with the memory figures, not
// "killed by signal 9": the whole job (launcher, agent, workers) runs in a memory cgroup with a
// limit this test sets, as a batch system's job step would, and one rank allocates past it.
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "tests/integration/test_process.h"

namespace dlaunch::testing {
namespace {

using std::chrono::seconds;

const std::string kBin = DLAUNCH_BIN_DIR;

bool Write(const std::string& path, const std::string& value) {
  std::ofstream out(path);
  out << value;
  out.close();
  return out.good();
}

// A child of this process's own memory cgroup with a limit, or why there cannot be one here.
class LimitedCgroup {
 public:
  // Empty when made; else the reason (no memory controller, not allowed).
  std::string Make(long limit_bytes) {
    const std::vector<std::string> self =
        absl::StrSplit(ReadFile("/proc/self/cgroup"), '\n', absl::SkipEmpty());
    for (const std::string& line : self) {
      std::vector<std::string> parts = absl::StrSplit(line, absl::MaxSplits(':', 2));
      if (parts.size() == 3 && absl::StrContains(absl::StrCat(",", parts[1], ","), ",memory,")) {
        dir_ = absl::StrCat("/sys/fs/cgroup/memory", parts[2], "/dlaunch-oom-test-", getpid());
        if (mkdir(dir_.c_str(), 0755) != 0) return "cannot make a memory cgroup: " + dir_;
        Write(dir_ + "/memory.swappiness", "0");  // the limit is to be met, not swapped away
        if (!Write(dir_ + "/memory.limit_in_bytes", std::to_string(limit_bytes))) {
          return "cannot set memory.limit_in_bytes";
        }
        Write(dir_ + "/memory.memsw.limit_in_bytes", std::to_string(limit_bytes));
        return "";
      }
    }
    for (const std::string& line : self) {
      if (!absl::StartsWith(line, "0::")) continue;
      for (const std::string mount : {"/sys/fs/cgroup", "/sys/fs/cgroup/unified"}) {
        std::string parent = mount + line.substr(3);
        if (!absl::StrContains(ReadFile(parent + "/cgroup.subtree_control"), "memory")) continue;
        dir_ = absl::StrCat(parent, "/dlaunch-oom-test-", getpid());
        if (mkdir(dir_.c_str(), 0755) != 0) return "cannot make a memory cgroup: " + dir_;
        Write(dir_ + "/memory.swap.max", "0");
        if (!Write(dir_ + "/memory.max", std::to_string(limit_bytes))) return "cannot set memory.max";
        return "";
      }
    }
    return "no memory cgroup controller this process may use";
  }
  std::string procs() const { return dir_ + "/cgroup.procs"; }
  ~LimitedCgroup() {
    if (!dir_.empty()) rmdir(dir_.c_str());
  }

 private:
  std::string dir_;
};

TEST(OomTest, AWorkerTheOomKillerTookIsNamedOutOfMemoryWithTheFigures) {
  LimitedCgroup cgroup;
  if (std::string why = cgroup.Make(256L << 20); !why.empty()) GTEST_SKIP() << why;
  const std::string tmp = MakeTempDir();
  const std::string job_id = tmp.substr(tmp.rfind('/') + 1);
  const std::string job_dir = tmp + "/" + job_id;
  // The job enters the cgroup before dlaunch starts, so launcher, agent and workers share it.
  const std::string run = absl::StrCat(
      "echo $$ > ", cgroup.procs(), " && exec ", kBin, "/dlaunch run --nnodes 1 --nproc-per-node 2",
      " --job-dir ", job_dir, " --grace 2 -- ", kBin,
      "/dlaunch-test-probe --alloc-rank 1 --alloc-mb 2048 --sleep 60");
  ChildProcess job({"/bin/sh", "-c", run}, tmp);
  auto code = job.Wait(seconds(120));
  ASSERT_TRUE(code.has_value()) << job.Stderr();
  EXPECT_EQ(*code, 1) << job.Stderr();
  const std::string err = job.Stderr();
  EXPECT_TRUE(absl::StrContains(err, "out of memory: rank 1")) << err;
  EXPECT_TRUE(absl::StrContains(err, "cgroup limit 256.0 MiB")) << err;
  const std::string summary = ReadFile(job_dir + "/summary.json");
  EXPECT_TRUE(absl::StrContains(summary, "\"root_cause\":{\"failure_class\":\"out of memory\",\"rank\":1"))
      << summary;
  EXPECT_TRUE(absl::StrContains(ReadFile(job_dir + "/events.jsonl"), "out of memory"));
  EXPECT_TRUE(WaitFor(
      [&] { return FindProcesses("DLAUNCH_JOB_ID=" + job_id, job_dir + "/token").empty(); },
      seconds(10)));
}

}  // namespace
}  // namespace dlaunch::testing
