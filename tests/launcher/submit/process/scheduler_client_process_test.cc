// SchedulerClient with real programs: stand-in qsub/qstat/qdel and sbatch/squeue/scontrol
// scripts, and a real detached local job that is cancelled with its whole process group.
#include <signal.h>
#include <sys/stat.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "launcher/submit/scheduler_client.h"
#include "tests/testing/test_files.h"
#include "tests/testing/wait_for.h"

namespace dlaunch {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

void WriteExecutable(const std::string& path, const std::string& text) {
  std::ofstream(path) << text;
  ::chmod(path.c_str(), 0755);
}

// Stand-in PBS programs that record their arguments and answer like PBS Pro does.
TEST(SchedulerClient, PbsSubmitQueryCancelWithStandInPrograms) {
  ScratchDir tmp("dlaunch-sched");
  const std::string log = tmp.path() + "/calls";
  WriteExecutable(tmp.path() + "/qsub",
                  "#!/bin/sh\necho \"qsub $*\" >> " + log +
                      "\necho 4242.polaris-pbs-01.hsn.cm.polaris.alcf.anl.gov\n");
  WriteExecutable(tmp.path() + "/qstat", "#!/bin/sh\necho \"qstat $*\" >> " + log +
                                             "\nprintf 'Job Id: %s\\n    job_state = R\\n' "
                                             "\"$2\"\n");
  WriteExecutable(tmp.path() + "/qdel", "#!/bin/sh\necho \"qdel $*\" >> " + log + "\n");
  SchedulerCommands cmds{tmp.path() + "/qsub", tmp.path() + "/qstat", tmp.path() + "/qdel", ""};
  SchedulerClient client("pbs", cmds, RealCommandRunner());
  absl::StatusOr<std::string> id = client.Submit("/jobs/x/job.sh", "/jobs/x");
  ASSERT_TRUE(id.ok()) << id.status();
  EXPECT_EQ(*id, "4242.polaris-pbs-01.hsn.cm.polaris.alcf.anl.gov");
  absl::StatusOr<SchedulerJobStatus> s = client.Query(*id, "/jobs/x");
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->state, "running");
  EXPECT_TRUE(client.Cancel(*id).ok());
  EXPECT_EQ(ReadFile(log), "qsub /jobs/x/job.sh\nqstat -fx " + *id + "\nqdel " + *id + "\n");
}

TEST(SchedulerClient, SlurmFallsBackToScontrolForFinishedJobs) {
  ScratchDir tmp("dlaunch-sched");
  WriteExecutable(tmp.path() + "/sbatch", "#!/bin/sh\n[ \"$1\" = --parsable ] || exit 9\n"
                                          "echo '77;cluster'\n");
  WriteExecutable(tmp.path() + "/squeue", "#!/bin/sh\nexit 0\n");  // job left the queue
  WriteExecutable(tmp.path() + "/scontrol",
                  "#!/bin/sh\necho \"JobId=$5 JobState=COMPLETED ExitCode=0:0\"\n");
  SchedulerCommands cmds{tmp.path() + "/sbatch", tmp.path() + "/squeue", "scancel",
                         tmp.path() + "/scontrol"};
  SchedulerClient client("slurm", cmds, RealCommandRunner());
  absl::StatusOr<std::string> id = client.Submit("/j/job.sh", "/j");
  ASSERT_TRUE(id.ok()) << id.status();
  EXPECT_EQ(*id, "77");
  absl::StatusOr<SchedulerJobStatus> s = client.Query("77", "/j");
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->state, "finished");
}

TEST(SchedulerClient, SubmitFailureIsUnavailableWithTheSchedulersMessage) {
  ScratchDir tmp("dlaunch-sched");
  WriteExecutable(tmp.path() + "/qsub",
                  "#!/bin/sh\necho 'qsub: Job violates queue and/or server resource limits' >&2\n"
                  "exit 188\n");
  SchedulerClient client("pbs", {tmp.path() + "/qsub", "qstat", "qdel", ""},
                         RealCommandRunner());
  absl::StatusOr<std::string> id = client.Submit("/j/job.sh", "/j");
  ASSERT_FALSE(id.ok());
  EXPECT_EQ(id.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(std::string(id.status().message()), HasSubstr("resource limits"));
  EXPECT_THAT(std::string(id.status().message()), HasSubstr("exit 188"));
}

// True while /proc shows the process and it is not a zombie.
bool IsAlive(std::string pid) {
  while (!pid.empty() && (pid.back() == '\n' || pid.back() == ' ')) pid.pop_back();
  std::string stat = ReadFile("/proc/" + pid + "/stat");
  size_t paren = stat.rfind(')');
  return paren != std::string::npos && paren + 2 < stat.size() && stat[paren + 2] != 'Z';
}

TEST(SchedulerClient, LocalRunsTheScriptInTheBackgroundAndCancels) {
  ScratchDir tmp("dlaunch-sched");
  const std::string job_dir = tmp.path() + "/job";
  fs::create_directories(job_dir);
  const std::string script = job_dir + "/job.sh";
  WriteExecutable(script, "#!/bin/bash\necho started\ntouch " + job_dir +
                              "/started\nsleep 60 &\necho $! > " + job_dir + "/sleep.pid\nwait\n");
  SchedulerClient client("local", {}, RealCommandRunner());
  absl::StatusOr<std::string> id = client.Submit(script, job_dir);
  ASSERT_TRUE(id.ok()) << id.status();
  ASSERT_TRUE(WaitFor([&] { return fs::exists(job_dir + "/sleep.pid"); },
                      std::chrono::seconds(10)));
  absl::StatusOr<SchedulerJobStatus> s = client.Query(*id, job_dir);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->state, "running");
  // A pid that is not this job's (other job dir) is not mistaken for it.
  EXPECT_EQ(client.Query(*id, tmp.path() + "/other")->state, "not_in_queue");
  ASSERT_TRUE(client.Cancel(*id).ok());
  EXPECT_TRUE(WaitFor([&] { return client.Query(*id, job_dir)->state == "not_in_queue"; },
                      std::chrono::seconds(10)));
  // The whole group went: the background sleep too.
  const std::string sleep_pid = ReadFile(job_dir + "/sleep.pid");
  EXPECT_TRUE(WaitFor([&] { return !IsAlive(sleep_pid); }, std::chrono::seconds(10)));
  EXPECT_EQ(ReadFile(job_dir + "/scheduler.out"), "started\n");
}

}  // namespace
}  // namespace dlaunch
