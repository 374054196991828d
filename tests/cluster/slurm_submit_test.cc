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

class SlurmSubmitTest : public DlaunchClusterTest {
 protected:
  explicit SlurmSubmitTest(int nodes = kNodes, int gpus_per_node = 0)
      : DlaunchClusterTest(nodes), gpus_per_node_(gpus_per_node) {}

  void SetUp() override {
    DlaunchClusterTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    absl::Status slurm = cluster_->StartSlurm(gpus_per_node_);
    if (absl::IsFailedPrecondition(slurm)) GTEST_SKIP() << slurm.message();
    ASSERT_TRUE(slurm.ok()) << slurm;
    submit_dir_ = MakeDir("submit");
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

  const int gpus_per_node_;
  std::string submit_dir_;
};

// What `dlaunch status JOB` says of the job: the scheduler's normalised state (from the line
// "scheduler  job ID: STATE ...") and dlaunch's own view (the line "dlaunch    VIEW").
struct StatusView {
  std::string scheduler_state;
  std::string dlaunch_view;
};

StatusView ParseStatus(const std::string& text) {
  StatusView view;
  std::smatch m;
  if (std::regex_search(text, m, std::regex("scheduler +job [^:]+: ([a-z_]+)"))) {
    view.scheduler_state = m[1];
  }
  if (std::regex_search(text, m, std::regex("\\ndlaunch +([^\\n]*)"))) view.dlaunch_view = m[1];
  return view;
}

bool SchedulerDone(const StatusView& v) {
  return v.scheduler_state == "finished" || v.scheduler_state == "failed" ||
         v.scheduler_state == "cancelled" || v.scheduler_state == "not_in_queue";
}

TEST_F(SlurmSubmitTest, SubmittedJobRunsAcrossHostsAndStatusFollowsIt) {
  std::string job_id = Submit(BarrierJobYaml("cluster-slurm", kNodes, kProcsPerNode, {},
                                             kSlurmScheduler));
  ASSERT_FALSE(job_id.empty());
  const std::string job_dir = job_root_ + "/" + job_id;

  // Follow the job with `dlaunch status` until both Slurm and dlaunch say it is over.
  std::vector<std::string> seen;
  RunResult status;
  StatusView view;
  absl::Time deadline = absl::Now() + absl::Seconds(120);
  while (absl::Now() < deadline) {
    status = Dlaunch("status " + job_id, absl::Seconds(30));
    view = ParseStatus(status.output);
    std::string line = absl::StrCat("exit ", status.exit_code, ": scheduler ",
                                    view.scheduler_state, ", dlaunch ", view.dlaunch_view);
    if (seen.empty() || seen.back() != line) seen.push_back(line);
    if (SchedulerDone(view) && !absl::StartsWith(view.dlaunch_view, "running") &&
        !absl::StrContains(view.dlaunch_view, "started")) {
      break;
    }
    usleep(300000);
  }
  const std::string history = absl::StrJoin(seen, "\n");
  ASSERT_TRUE(SchedulerDone(view))
      << "dlaunch status never saw the job end; it said, in turn:\n" << history
      << "\nlast output:\n" << status.output << "\nSlurm logs:\n" << SlurmLogs()
      << "\nscheduler.out:\n" << ReadFileOrEmpty(job_dir + "/scheduler.out");
  EXPECT_EQ(status.exit_code, 0) << status.output;
  EXPECT_EQ(view.scheduler_state, "finished") << history << "\n" << status.output;
  EXPECT_TRUE(std::regex_search(view.dlaunch_view, std::regex("succe|finished")))
      << history << "\n" << status.output;
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
  // Slurm no longer runs it, and dlaunch does not call it a success. Slurm may show the job
  // as completing for a moment after scancel, so follow the status until it settles.
  RunResult status;
  StatusView view;
  for (absl::Time deadline = absl::Now() + absl::Seconds(30); absl::Now() < deadline;) {
    status = Dlaunch("status " + job_id, absl::Seconds(30));
    view = ParseStatus(status.output);
    if (SchedulerDone(view)) break;
    usleep(200000);
  }
  EXPECT_TRUE(view.scheduler_state == "cancelled" || view.scheduler_state == "not_in_queue")
      << "dlaunch status after cancel:\n" << status.output;
  EXPECT_FALSE(std::regex_search(view.dlaunch_view, std::regex("succe")))
      << "dlaunch status after cancel:\n" << status.output;
}


// A cluster whose nodes offer GPUs as GRES (2 each), as most GPU clusters run Slurm: a job gets
// GPUs only by asking, so the batch script must carry the job's count.
constexpr int kGresNodes = 2;
constexpr int kGresGpus = 2;

class SlurmGresSubmitTest : public SlurmSubmitTest {
 protected:
  SlurmGresSubmitTest() : SlurmSubmitTest(kGresNodes, kGresGpus) {}

  // A job that asks for `gpus` per node the way the user wrote it (nproc_per_node
  // counts ranks here, as the fake GPUs cannot be opened; preflight is off for the same reason).
  std::string GpuJobYaml(const std::string& name, int gpus) {
    return BarrierJobYaml(name, kGresNodes, kProcsPerNode, {},
                          absl::StrCat(kSlurmScheduler, "gpus:\n  per_node: ", gpus,
                                       "\npreflight: off\n"));
  }

  // Slurm's record of a job (`scontrol show job -o`), one line of KEY=VALUE words.
  std::string SlurmJobRecord(const std::string& job_dir) {
    std::smatch m;
    const std::string record = ReadFileOrEmpty(job_dir + "/submit.json");
    if (!std::regex_search(record, m, std::regex("\"scheduler_job_id\": *\"([0-9]+)"))) {
      return "no scheduler job id in submit.json: " + record;
    }
    return cluster_
        ->RunOn("head", absl::StrCat("scontrol show job -o ", m[1].str()), absl::Seconds(30),
                {{"SLURM_CONF", cluster_->SlurmConf()}})
        .output;
  }
};

TEST_F(SlurmGresSubmitTest, GpuJobIsGrantedItsGpusAndRuns) {
  std::string job_id = Submit(GpuJobYaml("cluster-gpus", kGresGpus));
  ASSERT_FALSE(job_id.empty());
  const std::string job_dir = job_root_ + "/" + job_id;
  const std::string script = ReadFileOrEmpty(job_dir + "/job.sh");
  EXPECT_TRUE(absl::StrContains(script, absl::StrCat("#SBATCH --gpus-per-node=", kGresGpus, "\n")))
      << script;

  RunResult status;
  StatusView view;
  for (absl::Time deadline = absl::Now() + absl::Seconds(120); absl::Now() < deadline;) {
    status = Dlaunch("status " + job_id, absl::Seconds(30));
    view = ParseStatus(status.output);
    if (SchedulerDone(view) && !absl::StartsWith(view.dlaunch_view, "running") &&
        !absl::StrContains(view.dlaunch_view, "started")) {
      break;
    }
    usleep(300000);
  }
  ASSERT_EQ(view.scheduler_state, "finished")
      << status.output << "\nSlurm logs:\n" << SlurmLogs() << "\nscheduler.out:\n"
      << ReadFileOrEmpty(job_dir + "/scheduler.out");
  ExpectBarrierJobSucceeded(job_dir, kGresNodes, kProcsPerNode, cluster_->hosts());
  // Slurm's own record: the job held the GPUs it asked for on every node.
  const std::string record = SlurmJobRecord(job_dir);
  EXPECT_TRUE(absl::StrContains(record, absl::StrCat("TresPerNode=gres:gpu:", kGresGpus)))
      << record;
}

TEST_F(SlurmGresSubmitTest, GpuJobAskingForMoreThanANodeHasIsRefused) {
  WriteFileOrDie(submit_dir_ + "/job.yaml", GpuJobYaml("cluster-too-many", kGresGpus + 1));
  RunResult submit = Dlaunch("submit job.yaml");
  // sbatch refuses it outright; dlaunch says so with exit 3 and keeps the directory.
  EXPECT_EQ(submit.exit_code, 3) << submit.output;
  EXPECT_TRUE(absl::StrContains(submit.output, "Requested node configuration is not available"))
      << submit.output;
  const std::string job_dir = OnlyJobDir(job_root_);
  ASSERT_FALSE(job_dir.empty()) << submit.output;
  const std::string script = ReadFileOrEmpty(job_dir + "/job.sh");
  EXPECT_TRUE(absl::StrContains(script, absl::StrCat("#SBATCH --gpus-per-node=", kGresGpus + 1)))
      << script;
  RunResult queue = cluster_->RunOn("head", "squeue -h -o %i", absl::Seconds(30),
                                    {{"SLURM_CONF", cluster_->SlurmConf()}});
  EXPECT_EQ(queue.exit_code, 0) << queue.output;
  EXPECT_EQ(absl::StripAsciiWhitespace(queue.output), "") << "Slurm queued the job:\n"
                                                          << queue.output;
}

}  // namespace
}  // namespace testing
}  // namespace dlaunch
