// `dlaunch submit`, `status` and `cancel` against a real Slurm (slurmctld on the login host,
// one slurmd per compute host): the job's agents start on every allocated host through srun,
// and a cancelled job leaves no process on any host.
#include <sys/stat.h>
#include <unistd.h>

#include <memory>
#include <regex>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "cluster_job_checks.h"
#include "gtest/gtest.h"
#include "netns_cluster.h"

namespace dlaunch {
namespace testing {
namespace {

constexpr int kNodes = 3;
constexpr int kProcsPerNode = 2;
constexpr char kSlurmScheduler[] =
    "scheduler:\n  type: slurm\n  site: generic-slurm\n  walltime: \"0:10:00\"\n";

class SlurmSubmitTest : public ::testing::Test {
 protected:
  void SetUp() override {
    NETNS_CLUSTER_SKIP_IF_UNAVAILABLE();
    std::string missing = MissingDlaunchBinaries();
    if (!missing.empty()) GTEST_SKIP() << missing;
    auto started = NetnsCluster::Start(kNodes);
    ASSERT_TRUE(started.ok()) << started.status();
    cluster_ = std::move(*started);
    absl::Status slurm = cluster_->StartSlurm();
    if (absl::IsFailedPrecondition(slurm)) GTEST_SKIP() << slurm.message();
    ASSERT_TRUE(slurm.ok()) << slurm;
    submit_dir_ = cluster_->dir() + "/submit";
    job_root_ = cluster_->dir() + "/runs";
    for (const std::string& d : {submit_dir_, job_root_}) {
      ASSERT_EQ(mkdir(d.c_str(), 0755), 0) << d;
    }
  }

  // A dlaunch command on the login host, where the Slurm clients reach the controller.
  RunResult Dlaunch(const std::string& args, absl::Duration timeout = absl::Seconds(60)) {
    const char* path = getenv("PATH");
    return cluster_->RunOn(
        "head", absl::StrCat("cd ", submit_dir_, " && ", DlaunchPath(), " ", args), timeout,
        {{"SLURM_CONF", cluster_->SlurmConf()},
         {"DLAUNCH_JOB_ROOT", job_root_},
         {"PATH", absl::StrCat(DLAUNCH_BIN_DIR, ":", path ? path : "/usr/bin:/bin")}});
  }

  // Submits job.yaml and returns the job's id (the name of its job directory).
  std::string Submit(const std::string& job_yaml) {
    WriteFileOrDie(submit_dir_ + "/job.yaml", job_yaml);
    RunResult submit = Dlaunch("submit job.yaml");
    EXPECT_EQ(submit.exit_code, 0) << "dlaunch submit:\n" << submit.output;
    std::string job_dir = OnlyJobDir(job_root_);
    EXPECT_FALSE(job_dir.empty()) << "no job directory in " << job_root_ << "; submit said:\n"
                                  << submit.output;
    return job_dir.empty() ? "" : job_dir.substr(job_dir.rfind('/') + 1);
  }

  std::string SlurmLogs() {
    RunResult tail = RunCommand(
        {"/bin/sh", "-c", "tail -n 20 " + cluster_->dir() + "/slurm/log/*.log"}, absl::Seconds(10));
    return tail.output;
  }

  std::unique_ptr<NetnsCluster> cluster_;
  std::string submit_dir_, job_root_;
};

bool LooksFinished(const std::string& status) {
  static const std::regex finished("succe|complet|finished|\\bdone\\b|fail|cancel",
                                   std::regex::icase);
  return std::regex_search(status, finished);
}

TEST_F(SlurmSubmitTest, SubmittedJobRunsAcrossHostsAndStatusFollowsIt) {
  std::string job_id = Submit(BarrierJobYaml("cluster-slurm", kNodes, kProcsPerNode, {},
                                             kSlurmScheduler));
  ASSERT_FALSE(job_id.empty());
  const std::string job_dir = job_root_ + "/" + job_id;

  // Follow the job with `dlaunch status` until it says the job is over.
  std::vector<std::string> seen;
  RunResult status;
  absl::Time deadline = absl::Now() + absl::Seconds(120);
  while (absl::Now() < deadline) {
    status = Dlaunch("status " + job_id, absl::Seconds(30));
    std::string text(absl::StripAsciiWhitespace(status.output));
    if (seen.empty() || seen.back() != text) seen.push_back(text);
    if (status.exit_code != 0 && status.exit_code != 1) break;  // usage or scheduler error
    if (LooksFinished(text) && !ReadFileOrEmpty(job_dir + "/summary.json").empty()) break;
    usleep(300000);
  }
  ASSERT_TRUE(LooksFinished(status.output))
      << "dlaunch status never reported an end; it said, in turn:\n"
      << absl::StrJoin(seen, "\n----\n") << "\nSlurm logs:\n" << SlurmLogs()
      << "\nscheduler.out:\n" << ReadFileOrEmpty(job_dir + "/scheduler.out");
  EXPECT_EQ(status.exit_code, 0) << status.output;
  EXPECT_TRUE(std::regex_search(status.output, std::regex("succe|complet", std::regex::icase)))
      << status.output;
  ExpectBarrierJobSucceeded(job_dir, kNodes, kProcsPerNode, cluster_->hosts());
  std::vector<std::string> left = WaitNoJobProcesses(*cluster_, job_id, absl::Seconds(15));
  EXPECT_TRUE(left.empty()) << absl::StrJoin(left, "\n");
}

TEST_F(SlurmSubmitTest, CancelStopsEveryProcessOnEveryHost) {
  std::string job_id = Submit(BarrierJobYaml("cluster-cancel", kNodes, kProcsPerNode,
                                             {"--sleep", "600"}, kSlurmScheduler));
  ASSERT_FALSE(job_id.empty());
  const std::string job_dir = job_root_ + "/" + job_id;

  // Wait until every rank is past the barrier: the job is running on all hosts.
  const int world = kNodes * kProcsPerNode;
  int running = 0;
  absl::Time deadline = absl::Now() + absl::Seconds(90);
  while (absl::Now() < deadline) {
    running = 0;
    for (int r = 0; r < world; ++r) {
      if (absl::StrContains(ReadFileOrEmpty(absl::StrCat(job_dir, "/logs/rank-", r, ".log")),
                            "barrier passed")) {
        ++running;
      }
    }
    if (running == world) break;
    usleep(200000);
  }
  ASSERT_EQ(running, world) << "the job never ran all ranks\nSlurm logs:\n" << SlurmLogs()
                            << "\nscheduler.out:\n" << ReadFileOrEmpty(job_dir + "/scheduler.out");
  ASSERT_FALSE(JobProcesses(*cluster_, job_id).empty())
      << "a running job has no process this test can see: the check below would prove nothing";

  RunResult cancel = Dlaunch("cancel " + job_id);
  EXPECT_EQ(cancel.exit_code, 0) << "dlaunch cancel:\n" << cancel.output;

  std::vector<std::string> left = WaitNoJobProcesses(*cluster_, job_id, absl::Seconds(30));
  EXPECT_TRUE(left.empty()) << "left on the hosts after dlaunch cancel:\n"
                            << absl::StrJoin(left, "\n");
  RunResult status = Dlaunch("status " + job_id, absl::Seconds(30));
  EXPECT_TRUE(std::regex_search(status.output, std::regex("cancel", std::regex::icase)))
      << "dlaunch status after cancel:\n" << status.output;
}

}  // namespace
}  // namespace testing
}  // namespace dlaunch
