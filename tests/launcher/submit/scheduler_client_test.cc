// Scheduler adapters: output parsers against recorded qsub/qstat/sbatch/squeue/scontrol output,
// then the real adapter driving stand-in scheduler programs and a real background job.
#include "launcher/submit/scheduler_client.h"
#include "tests/testing/test_files.h"

#include <signal.h>
#include <sys/stat.h>

#include <chrono>
#include <filesystem>
#include <functional>
#include <fstream>
#include <map>
#include <sstream>
#include <thread>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace dlaunch {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;


void WriteExecutable(const std::string& path, const std::string& text) {
  std::ofstream(path) << text;
  ::chmod(path.c_str(), 0755);
}

TEST(ParseSubmitOutput, Pbs) {
  EXPECT_EQ(*ParseSubmitOutput("pbs", "1234.polaris-pbs-01.hsn.cm.polaris.alcf.anl.gov\n"),
            "1234.polaris-pbs-01.hsn.cm.polaris.alcf.anl.gov");
  EXPECT_FALSE(ParseSubmitOutput("pbs", "").ok());
  EXPECT_FALSE(ParseSubmitOutput("pbs", "qsub: Unknown queue\n").ok());
}

TEST(ParseSubmitOutput, Cobalt) {
  EXPECT_EQ(*ParseSubmitOutput("cobalt", "Job routed to queue \"full-node\".\n"
                                         "Memory mode set to flat quad for queue full-node\n"
                                         "10063\n"),
            "10063");
  EXPECT_FALSE(ParseSubmitOutput("cobalt", "error: project not found\n").ok());
}

TEST(ParseSubmitOutput, Slurm) {
  EXPECT_EQ(*ParseSubmitOutput("slurm", "123\n"), "123");
  EXPECT_EQ(*ParseSubmitOutput("slurm", "456;cluster-a\n"), "456");
  EXPECT_FALSE(ParseSubmitOutput("slurm", "Submitted batch job\n").ok());
}

TEST(ParsePbsQstat, StatesAndExitStatus) {
  const std::string running =
      "Job Id: 1234.polaris-pbs-01\n    Job_Name = fmnist\n    job_state = R\n"
      "    queue = debug\n";
  SchedulerJobStatus s = ParsePbsQstat(running);
  EXPECT_EQ(s.state, "running");
  EXPECT_EQ(s.raw_state, "R");
  s = ParsePbsQstat("Job Id: 1\n    job_state = F\n    Exit_status = 0\n");
  EXPECT_EQ(s.state, "finished");
  s = ParsePbsQstat("Job Id: 1\n    job_state = F\n    Exit_status = 271\n");
  EXPECT_EQ(s.state, "failed");
  EXPECT_EQ(s.exit_status, "271");
  EXPECT_EQ(ParsePbsQstat("    job_state = Q\n").state, "queued");
  EXPECT_EQ(ParsePbsQstat("    job_state = H\n").state, "held");
}

TEST(ParseCobaltQstat, StateColumn) {
  const std::string out =
      "JobID  User     WallTime  Nodes  State    Location\n"
      "=========================================================\n"
      "10063  alice    00:10:00  1      running  thetagpu06\n"
      "10064  bob      01:00:00  2      queued   None\n";
  EXPECT_EQ(ParseCobaltQstat(out, "10063").state, "running");
  EXPECT_EQ(ParseCobaltQstat(out, "10064").state, "queued");
  EXPECT_EQ(ParseCobaltQstat(out, "10065").state, "not_in_queue");
  EXPECT_EQ(ParseCobaltQstat("JobID User State\n1 a user_hold\n", "1").state, "held");
}

TEST(ParseSlurm, SqueueAndScontrol) {
  EXPECT_EQ(ParseSqueue("RUNNING\n").state, "running");
  EXPECT_EQ(ParseSqueue("PENDING\n").state, "queued");
  EXPECT_EQ(ParseSqueue("").state, "not_in_queue");
  SchedulerJobStatus s = ParseScontrolShowJob(
      "JobId=123 JobName=fmnist UserId=alice(1000) JobState=FAILED Reason=NonZeroExitCode "
      "Dependency=(null) ExitCode=1:0 RunTime=00:00:05\n");
  EXPECT_EQ(s.state, "failed");
  EXPECT_EQ(s.exit_status, "1:0");
  EXPECT_EQ(ParseScontrolShowJob("JobId=1 JobState=COMPLETED ExitCode=0:0").state, "finished");
  EXPECT_EQ(ParseScontrolShowJob("JobId=1 JobState=CANCELLED ExitCode=0:15").state,
            "cancelled");
}

TEST(ResolveSchedulerCommands, EnvironmentThenProfileThenDefault) {
  SiteProfile p;
  p.submit_command = "/site/bin/qsub";
  std::map<std::string, std::string> env = {{"DLAUNCH_QDEL", "/tmp/qdel"}};
  auto getenv = [&](const char* n) -> const char* {
    auto it = env.find(n);
    return it == env.end() ? nullptr : it->second.c_str();
  };
  SchedulerCommands c = ResolveSchedulerCommands("pbs", &p, getenv);
  EXPECT_EQ(c.submit, "/site/bin/qsub");
  EXPECT_EQ(c.status, "qstat");
  EXPECT_EQ(c.cancel, "/tmp/qdel");
  env["DLAUNCH_SBATCH"] = "/x/sbatch";
  c = ResolveSchedulerCommands("slurm", nullptr, getenv);
  EXPECT_EQ(c.submit, "/x/sbatch");
  EXPECT_EQ(c.scontrol, "scontrol");
}

TEST(RealCommandRunner, CollectsOutputAndExitCode) {
  absl::StatusOr<CommandResult> r =
      RealCommandRunner()({"bash", "-c", "echo out; echo err >&2; exit 7"});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->out, "out\n");
  EXPECT_EQ(r->err, "err\n");
  EXPECT_EQ(r->exit_code, 7);
  r = RealCommandRunner()({"/nonexistent/qsub"});
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(std::string(r.status().message()), HasSubstr("cannot run /nonexistent/qsub"));
  r = RealCommandRunner(0.3)({"sleep", "30"});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kDeadlineExceeded);
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

bool WaitFor(const std::function<bool()>& cond, std::chrono::seconds limit) {
  auto deadline = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < deadline) {
    if (cond()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return cond();
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
