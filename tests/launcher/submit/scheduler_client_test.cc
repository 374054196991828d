// Scheduler adapters: the pure readers against recorded qsub/qstat/sbatch/squeue/scontrol and
// /proc output, and SchedulerClient driving each adapter through a scripted CommandRunner.
#include "launcher/submit/scheduler_client.h"

#include <map>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "launcher/spec/names.h"

namespace dlaunch {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

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
  auto getenv = [&](const std::string& n) -> std::optional<std::string> {
    auto it = env.find(n);
    if (it == env.end()) return std::nullopt;
    return it->second;
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

TEST(ParseLocalProcess, AliveNotZombieAndOurJobDir) {
  const std::string stat = "4242 (bash) S 1 4242 4242 0 -1 4194560 402 0 0 0\n";
  const std::string cmdline = std::string("/bin/bash\0/runs/j1/job.sh\0", 27);
  SchedulerJobStatus s = ParseLocalProcess(stat + cmdline, "/runs/j1");
  EXPECT_EQ(s.state, "running");
  EXPECT_EQ(s.raw_state, "S");
  EXPECT_EQ(ParseLocalProcess(stat + cmdline, "/runs/j2").state, "not_in_queue");
  EXPECT_EQ(ParseLocalProcess("4242 (my (odd) name) Z 1 0\n", "/runs/j1").state, "not_in_queue");
  EXPECT_EQ(ParseLocalProcess("", "/runs/j1").state, "not_in_queue");
}

TEST(FindScheduler, EveryNamedSchedulerHasAnAdapter) {
  for (const std::string& name : SchedulerTypeNames()) {
    const Scheduler* s = FindScheduler(name);
    ASSERT_NE(s, nullptr) << name;
    EXPECT_EQ(s->name(), name);
  }
  EXPECT_EQ(FindScheduler("lsf"), nullptr);
}

// A CommandRunner that records every argv and answers from a script of replies, in order.
class ScriptedRunner {
 public:
  void Reply(int exit_code, std::string out, std::string err = "") {
    replies_.push_back(CommandResult{exit_code, std::move(out), std::move(err)});
  }
  void Fail(absl::Status status) { failures_[replies_.size()] = std::move(status); Reply(0, ""); }
  CommandRunner runner() {
    return [this](const std::vector<std::string>& argv) -> absl::StatusOr<CommandResult> {
      calls_.push_back(argv);
      const size_t i = calls_.size() - 1;
      if (i >= replies_.size()) return absl::InternalError("unexpected command");
      if (auto f = failures_.find(i); f != failures_.end()) return f->second;
      return replies_[i];
    };
  }
  const std::vector<std::vector<std::string>>& calls() const { return calls_; }

 private:
  std::vector<CommandResult> replies_;
  std::map<size_t, absl::Status> failures_;
  std::vector<std::vector<std::string>> calls_;
};

TEST(SchedulerClient, PbsSubmitQueryCancel) {
  ScriptedRunner r;
  r.Reply(0, "4242.polaris-pbs-01\n");
  r.Reply(0, "Job Id: 4242.polaris-pbs-01\n    job_state = R\n");
  r.Reply(0, "");
  SchedulerClient client("pbs", {"/b/qsub", "/b/qstat", "/b/qdel", ""}, r.runner());
  absl::StatusOr<std::string> id = client.Submit("/jobs/x/job.sh", "/jobs/x");
  ASSERT_TRUE(id.ok()) << id.status();
  EXPECT_EQ(*id, "4242.polaris-pbs-01");
  absl::StatusOr<SchedulerJobStatus> s = client.Query(*id, "/jobs/x");
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->state, "running");
  EXPECT_TRUE(client.Cancel(*id).ok());
  EXPECT_THAT(r.calls(), ElementsAre(ElementsAre("/b/qsub", "/jobs/x/job.sh"),
                                     ElementsAre("/b/qstat", "-fx", *id),
                                     ElementsAre("/b/qdel", *id)));
}

TEST(SchedulerClient, PbsJobTheServerForgotIsNotInQueue) {
  ScriptedRunner r;
  r.Reply(153, "", "qstat: Unknown Job Id 1.x\n");
  SchedulerClient client("pbs", {"qsub", "qstat", "qdel", ""}, r.runner());
  EXPECT_EQ(client.Query("1.x", "/j")->state, "not_in_queue");
}

TEST(SchedulerClient, SlurmFallsBackToScontrolForFinishedJobs) {
  ScriptedRunner r;
  r.Reply(0, "77;cluster\n");
  r.Reply(0, "");  // squeue: the job left the queue
  r.Reply(0, "JobId=77 JobState=COMPLETED ExitCode=0:0\n");
  SchedulerClient client("slurm", {"sbatch", "squeue", "scancel", "scontrol"}, r.runner());
  EXPECT_EQ(*client.Submit("/j/job.sh", "/j"), "77");
  absl::StatusOr<SchedulerJobStatus> s = client.Query("77", "/j");
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->state, "finished");
  EXPECT_THAT(r.calls(), ElementsAre(ElementsAre("sbatch", "--parsable", "/j/job.sh"),
                                     ElementsAre("squeue", "-h", "-j", "77", "-o", "%T"),
                                     ElementsAre("scontrol", "show", "job", "-o", "77")));
}

TEST(SchedulerClient, OnlyTheFirstStatusQueryMustAnswer) {
  ScriptedRunner first;
  first.Fail(absl::NotFoundError("cannot execute 'squeue'"));
  SchedulerClient a("slurm", {"sbatch", "squeue", "scancel", "scontrol"}, first.runner());
  EXPECT_EQ(a.Query("77", "/j").status().code(), absl::StatusCode::kUnavailable);
  ScriptedRunner second;
  second.Reply(0, "");
  second.Fail(absl::NotFoundError("cannot execute 'scontrol'"));
  SchedulerClient b("slurm", {"sbatch", "squeue", "scancel", "scontrol"}, second.runner());
  EXPECT_EQ(b.Query("77", "/j")->state, "not_in_queue");
}

TEST(SchedulerClient, SubmitFailureIsUnavailableWithTheSchedulersMessage) {
  ScriptedRunner r;
  r.Reply(188, "", "qsub: Job violates queue and/or server resource limits\n");
  SchedulerClient client("pbs", {"qsub", "qstat", "qdel", ""}, r.runner());
  absl::StatusOr<std::string> id = client.Submit("/j/job.sh", "/j");
  ASSERT_FALSE(id.ok());
  EXPECT_EQ(id.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(std::string(id.status().message()), HasSubstr("resource limits"));
  EXPECT_THAT(std::string(id.status().message()), HasSubstr("exit 188"));
}

TEST(SchedulerClient, MissingProgramIsUnavailable) {
  ScriptedRunner r;
  r.Fail(absl::NotFoundError("cannot execute 'qsub': No such file or directory"));
  SchedulerClient client("pbs", {"qsub", "qstat", "qdel", ""}, r.runner());
  absl::StatusOr<std::string> id = client.Submit("/j/job.sh", "/j");
  EXPECT_EQ(id.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(std::string(id.status().message()), HasSubstr("cannot execute 'qsub'"));
}

TEST(SchedulerClient, LocalStartsDetachedReadsProcAndSignalsTheGroup) {
  ScriptedRunner r;
  r.Reply(0, "4242\n");
  r.Reply(0, "4242 (bash) S 1 4242\n" + std::string("/bin/bash\0/j/job.sh\0", 21));
  r.Reply(1, "");
  SchedulerClient client("local", {}, r.runner());
  EXPECT_EQ(*client.Submit("/j/job.sh", "/j"), "4242");
  EXPECT_EQ(client.Query("4242", "/j")->state, "running");
  absl::Status cancel = client.Cancel("4242");
  EXPECT_EQ(cancel.code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(cancel.message(), "process 4242 is not running");
  ASSERT_EQ(r.calls().size(), 3u);
  EXPECT_EQ(r.calls()[0], DetachedArgv({"/bin/bash", "/j/job.sh"}, "/j/scheduler.out"));
  EXPECT_THAT(r.calls()[1], ElementsAre("cat", "/proc/4242/stat", "/proc/4242/cmdline"));
  EXPECT_EQ(r.calls()[2].back(), "4242");
  // Ids that cannot be this job's pid run nothing.
  EXPECT_EQ(client.Query("1", "/j")->state, "not_in_queue");
  EXPECT_EQ(client.Cancel("x").code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(r.calls().size(), 3u);
}

TEST(SchedulerClient, UnknownSchedulerIsInvalidArgument) {
  ScriptedRunner r;
  SchedulerClient client("lsf", {}, r.runner());
  EXPECT_EQ(client.Submit("/j/job.sh", "/j").status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(r.calls().empty());
}

}  // namespace
}  // namespace dlaunch
