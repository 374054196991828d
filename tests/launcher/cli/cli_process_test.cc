// dlaunch script/submit/status/logs/cancel, called as the CLI calls them, against real job
// directories, stand-in scheduler programs and a real background job. The fixture changes the
// process's cwd and environment, so these run as the integration label (one process per test).
#include "launcher/cli/job_commands.h"
#include "launcher/cli/run_command.h"
#include "launcher/cli/submit_command.h"
#include "launcher/cli/trace_command.h"
#include "launcher/cli/watch_command.h"

#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <map>
#include <optional>
#include <sstream>
#include <thread>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "launcher/jobdir/job_record.h"
#include "launcher/spec/job_spec_parser.h"
#include "tests/testing/test_files.h"
#include "tests/testing/wait_for.h"

namespace dlaunch {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::Not;

// --- Commands against a scratch directory ----------------------------------------------------

class CliProcessTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (fs::temp_directory_path() / "dlaunch-cmds-XXXXXX").string();
    dir_ = ::mkdtemp(tmpl.data());
    old_cwd_ = fs::current_path();
    fs::current_path(dir_);
    SetEnv("DLAUNCH_JOB_ROOT", dir_ + "/runs");
    SetEnv("DLAUNCH_SITE_PATH", dir_ + "/sites");
    SetEnv("DLAUNCH_BIN", dir_ + "/bin/dlaunch");
    SetEnv("XDG_STATE_HOME", dir_ + "/state");  // the job index
    fs::create_directories(dir_ + "/bin");
    fs::create_directories(dir_ + "/sites");
    // Stand-in dlaunch: the job script execs it; it stays up until signalled.
    WriteFile(dir_ + "/bin/dlaunch",
              "#!/bin/bash\necho \"dlaunch $*\"\n"
              "printf '{\"pid\": %d, \"host\": \"%s\"}' $$ \"$HOSTNAME\" > \"$4/launcher.json\"\n"
              "touch \"$4/launched\"\nsleep 60 & wait\n",
              0755);
    WriteFile(dir_ + "/job.yaml",
              "name: smoke\nnodes: 1\ncommand: [\"true\"]\n"
              "scheduler:\n  walltime: \"0:10:00\"\n");
  }

  void TearDown() override {
    fs::current_path(old_cwd_);
    for (const auto& [name, value] : saved_env_) {
      if (value.has_value()) {
        ::setenv(name.c_str(), value->c_str(), 1);
      } else {
        ::unsetenv(name.c_str());
      }
    }
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }

  void SetEnv(const std::string& name, const std::string& value) {
    if (!saved_env_.count(name)) {
      const char* old = std::getenv(name.c_str());
      saved_env_[name] = old ? std::optional<std::string>(old) : std::nullopt;
    }
    ::setenv(name.c_str(), value.c_str(), 1);
  }

  // Runs a command function, returning its exit code and what it printed.
  int Run(const std::function<int(const std::vector<std::string>&)>& fn,
          const std::vector<std::string>& args, std::string* out, std::string* err = nullptr) {
    ::testing::internal::CaptureStdout();
    ::testing::internal::CaptureStderr();
    int rc = fn(args);
    std::cout.flush();
    std::cerr.flush();
    *out = ::testing::internal::GetCapturedStdout();
    std::string e = ::testing::internal::GetCapturedStderr();
    if (err != nullptr) *err = e;
    return rc;
  }

  std::string dir_;
  fs::path old_cwd_;
  std::map<std::string, std::optional<std::string>> saved_env_;
};

TEST_F(CliProcessTest, ScriptPrintsTheScriptAndWritesNothing) {
  std::string out, err;
  ASSERT_EQ(Run(RunScriptCommand, {"job.yaml", "--site", "generic-pbs"}, &out, &err), 0) << err;
  EXPECT_THAT(out, ::testing::StartsWith("#!/bin/bash\n#PBS -N smoke\n"));
  EXPECT_THAT(out, HasSubstr(absl::StrCat("exec ", dir_, "/bin/dlaunch run ", dir_, "/runs/smoke-")));
  EXPECT_THAT(out, HasSubstr("#PBS -l walltime=0:10:00\n"));
  EXPECT_FALSE(fs::exists(dir_ + "/runs"));
}

TEST_F(CliProcessTest, BadUsageExitsTwoWithUsage) {
  std::string out, err;
  EXPECT_EQ(Run(RunScriptCommand, {}, &out, &err), 2);
  EXPECT_THAT(err, HasSubstr("usage: dlaunch script"));
  EXPECT_EQ(Run(RunSubmitCommand, {"job.yaml", "--bogus"}, &out, &err), 2);
  EXPECT_THAT(err, HasSubstr("unknown flag --bogus"));
  EXPECT_EQ(Run(RunLogsCommand, {"x", "--rank", "one"}, &out, &err), 2);
  EXPECT_EQ(Run(RunCancelCommand, {}, &out, &err), 2);
  EXPECT_EQ(Run(RunStatusCommand, {"a", "b"}, &out, &err), 2);
  EXPECT_EQ(Run(RunScriptCommand, {"job.yaml", "--site", "nowhere"}, &out, &err), 2);
  EXPECT_THAT(err, HasSubstr("site profile 'nowhere' not found"));
  EXPECT_EQ(Run(RunSubmitCommand, {"--help"}, &out, &err), 0);
  EXPECT_THAT(out, HasSubstr("--dry-run"));
}

TEST_F(CliProcessTest, DryRunWritesTheJobDirectory) {
  std::string out, err;
  ASSERT_EQ(Run(RunSubmitCommand, {"job.yaml", "--site", "generic-slurm", "--dry-run"}, &out,
                &err),
            0)
      << err;
  std::string id(absl::StripAsciiWhitespace(out));
  EXPECT_THAT(id, ::testing::MatchesRegex("smoke-[0-9]{8}-[0-9]{6}-[0-9a-f]{4}"));
  const std::string job_dir = dir_ + "/runs/" + id;
  EXPECT_TRUE(fs::is_directory(job_dir + "/logs"));
  struct stat st;
  ASSERT_EQ(::stat((job_dir + "/job.sh").c_str(), &st), 0);
  EXPECT_TRUE(st.st_mode & S_IXUSR);
  EXPECT_THAT(ReadFile(job_dir + "/job.sh"), HasSubstr("#SBATCH -J smoke\n"));
  absl::StatusOr<JobSpec> resolved = LoadJobSpec(job_dir + "/job.yaml");
  ASSERT_TRUE(resolved.ok()) << resolved.status();
  EXPECT_EQ(resolved->name, "smoke");
  absl::StatusOr<SubmitRecord> rec = ParseSubmitRecord(ReadFile(job_dir + "/submit.json"));
  ASSERT_TRUE(rec.ok()) << rec.status();
  EXPECT_EQ(rec->job_id, id);
  EXPECT_TRUE(rec->dry_run);
  EXPECT_EQ(rec->site, "generic-slurm");
  EXPECT_EQ(rec->scheduler, "slurm");
  EXPECT_EQ(rec->cwd, dir_);
  // status lists it; status JOB says it was not submitted.
  ASSERT_EQ(Run(RunStatusCommand, {}, &out), 0);
  EXPECT_THAT(out,
              HasSubstr("\tnot started\tgeneric-slurm\t(dry run)\t" + dir_ + "/runs/" + id + "\n"));
  ASSERT_EQ(Run(RunStatusCommand, {id}, &out), 0);
  EXPECT_THAT(out, HasSubstr("not submitted (dry run)"));
  EXPECT_THAT(out, HasSubstr("dlaunch    not started"));
}

// The submit directory is its user's alone, as `dlaunch run`'s is, under a sharing umask.
TEST_F(CliProcessTest, SubmitDirectoryIsOwnerOnly) {
  const mode_t old_umask = ::umask(022);
  std::string out, err;
  const int rc = Run(RunSubmitCommand, {"job.yaml", "--site", "local", "--dry-run"}, &out, &err);
  ::umask(old_umask);
  ASSERT_EQ(rc, 0) << err;
  const std::string job_dir = dir_ + "/runs/" + std::string(absl::StripAsciiWhitespace(out));
  for (const auto& [path, mode] : std::vector<std::pair<std::string, int>>{
           {job_dir, 0700}, {job_dir + "/logs", 0700}, {job_dir + "/job.yaml", 0600},
           {job_dir + "/submit.json", 0600}, {job_dir + "/job.sh", 0700}}) {
    struct stat st;
    ASSERT_EQ(::stat(path.c_str(), &st), 0) << path;
    EXPECT_EQ(st.st_mode & 07777, mode) << path;
  }
}

// Polaris and ThetaGPU give each rank only its own GPU unless job.yaml chose a binding.
TEST_F(CliProcessTest, SiteGpuBindingAppliesOnlyWhenTheJobSetsNone) {
  const std::string sched = "scheduler:\n  account: a\n  queue: debug\n  walltime: \"0:10:00\"\n";
  WriteFile(dir_ + "/plain.yaml", "name: plain\nnodes: 1\ncommand: [\"true\"]\n" + sched);
  WriteFile(dir_ + "/shared.yaml",
            "name: shared\nnodes: 1\ncommand: [\"true\"]\ngpus: {binding: shared}\n" + sched);
  for (const auto& [file, site, isolate] :
       std::vector<std::tuple<std::string, std::string, bool>>{{"plain.yaml", "polaris", true},
                                                               {"shared.yaml", "polaris", false},
                                                               {"plain.yaml", "generic-pbs", false}}) {
    std::string out, err;
    ASSERT_EQ(Run(RunSubmitCommand, {file, "--site", site, "--dry-run"}, &out, &err), 0)
        << file << " on " << site << ": " << err;
    std::string id(absl::StripAsciiWhitespace(out));
    absl::StatusOr<JobSpec> resolved = LoadJobSpec(dir_ + "/runs/" + id + "/job.yaml");
    ASSERT_TRUE(resolved.ok()) << resolved.status();
    EXPECT_EQ(resolved->isolate_gpus, isolate) << file << " on " << site;
  }
}

TEST_F(CliProcessTest, SubmitsThroughQsubAndRecordsItsId) {
  WriteFile(dir_ + "/bin/qsub",
            "#!/bin/sh\ncp \"$1\" \"" + dir_ + "/submitted.sh\"\necho 901.pbs-server\n", 0755);
  WriteFile(dir_ + "/bin/qstat",
            "#!/bin/sh\nprintf 'Job Id: %s\\n    job_state = Q\\n' \"$2\"\n", 0755);
  SetEnv("DLAUNCH_QSUB", dir_ + "/bin/qsub");
  SetEnv("DLAUNCH_QSTAT", dir_ + "/bin/qstat");
  std::string out, err;
  ASSERT_EQ(Run(RunSubmitCommand, {"job.yaml", "--site", "generic-pbs"}, &out, &err), 0) << err;
  std::string id(absl::StripAsciiWhitespace(out));
  const std::string job_dir = dir_ + "/runs/" + id;
  EXPECT_THAT(err, HasSubstr("pbs job 901.pbs-server"));
  EXPECT_EQ(ReadFile(dir_ + "/submitted.sh"), ReadFile(job_dir + "/job.sh"));
  absl::StatusOr<SubmitRecord> rec = ParseSubmitRecord(ReadFile(job_dir + "/submit.json"));
  ASSERT_TRUE(rec.ok());
  EXPECT_EQ(rec->scheduler_job_id, "901.pbs-server");
  EXPECT_FALSE(rec->dry_run);
  ASSERT_EQ(Run(RunStatusCommand, {job_dir}, &out), 0);
  EXPECT_THAT(out, HasSubstr("scheduler  job 901.pbs-server: queued (Q)"));
}

TEST_F(CliProcessTest, SchedulerRefusalExitsThree) {
  WriteFile(dir_ + "/bin/qsub", "#!/bin/sh\necho 'qsub: Unauthorized Request' >&2\nexit 159\n",
            0755);
  SetEnv("DLAUNCH_QSUB", dir_ + "/bin/qsub");
  std::string out, err;
  EXPECT_EQ(Run(RunSubmitCommand, {"job.yaml", "--site", "generic-pbs"}, &out, &err), 3);
  EXPECT_THAT(err, HasSubstr("Unauthorized Request"));
}

TEST_F(CliProcessTest, PrecheckProblemsAreListedAndNothingIsWritten) {
  WriteFile(dir_ + "/bad.yaml",
            "name: big\nnodes: 5000\ncommand: [./no-such-trainer]\n"
            "scheduler:\n  walltime: \"30:00:00\"\n");
  std::string out, err;
  EXPECT_EQ(Run(RunSubmitCommand, {"bad.yaml", "--site", "polaris"}, &out, &err), 2);
  EXPECT_THAT(err, HasSubstr("no-such-trainer' does not exist"));
  EXPECT_THAT(err, HasSubstr("site polaris allows at most 560"));
  EXPECT_THAT(err, HasSubstr("allows at most 24:00:00"));
  EXPECT_THAT(err, HasSubstr("requires a project account"));
  EXPECT_FALSE(fs::exists(dir_ + "/runs"));
}

TEST_F(CliProcessTest, StatusAndLogsReadTheJobDirectory) {
  const std::string job_dir = dir_ + "/runs/fmnist-20261121-101530-a3f9";
  fs::create_directories(job_dir + "/logs");
  SubmitRecord rec;
  rec.job_id = "fmnist-20261121-101530-a3f9";
  rec.scheduler = "local";
  rec.scheduler_job_id = "999999999";  // no such process
  rec.site = "local";
  rec.submit_time = "2026-11-21T10:15:30Z";
  WriteFile(job_dir + "/submit.json", SubmitRecordToJson(rec));
  WriteFile(job_dir + "/events.jsonl",
            "{\"time\": 1.5, \"event\": \"job_started\", \"nodes\": 2}\n"
            "{\"time\": 2.0, \"event\": \"node_joined\", \"host\": \"n0\"}\n"
            "{\"time\": 2.1, \"event\": \"node_joined\", \"host\": \"n1\"}\n"
            "{\"time\": 9.0, \"event\": \"worker_failed\", \"rank\": 3, \"exit_code\": 1}\n"
            "{\"time\": 9.5, \"ev");  // torn last line
  WriteFile(job_dir + "/logs/rank-0.log", "epoch 1 loss 0.5\nepoch 2 loss 0.4\n");
  WriteFile(job_dir + "/logs/rank-1.log", "epoch 1 loss 0.6\npartial");
  WriteFile(job_dir + "/logs/rank-10.log", "ten\n");

  std::string out;
  ASSERT_EQ(Run(RunStatusCommand, {rec.job_id}, &out), 0);
  EXPECT_THAT(out, HasSubstr("scheduler  job 999999999: not_in_queue"));
  EXPECT_THAT(out, HasSubstr("running: 2 node(s) joined, 1 worker failure(s)"));
  // An untyped journal of an earlier dlaunch, read as the typed one: its worker_failed named no
  // node rank.
  EXPECT_THAT(out, HasSubstr("worker_failed round=0 rank=3 node_id=-1 node_rank=-1 exit_code=1"));
  EXPECT_THAT(out, HasSubstr("journal    schema version 1 (untyped, from an earlier dlaunch)"));

  WriteFile(job_dir + "/summary.json", "{\"result\": \"failed\", \"exit_code\": 1}");
  ASSERT_EQ(Run(RunStatusCommand, {rec.job_id}, &out), 0);
  EXPECT_THAT(out, HasSubstr("dlaunch    failed (exit 1)"));
  EXPECT_THAT(out, HasSubstr("summary:\n  result: failed (exit 1)\n"));

  ASSERT_EQ(Run(RunLogsCommand, {rec.job_id}, &out), 0);
  EXPECT_EQ(out,
            "[rank 0] epoch 1 loss 0.5\n[rank 0] epoch 2 loss 0.4\n[rank 1] epoch 1 loss 0.6\n"
            "[rank 10] ten\n");
  ASSERT_EQ(Run(RunLogsCommand, {job_dir, "--rank", "1"}, &out), 0);
  EXPECT_EQ(out, "epoch 1 loss 0.6\n");
  // --follow returns once summary.json is there.
  ASSERT_EQ(Run(RunLogsCommand, {rec.job_id, "--rank=0", "--follow"}, &out), 0);
  EXPECT_EQ(out, "epoch 1 loss 0.5\nepoch 2 loss 0.4\n");
  std::string err;
  EXPECT_EQ(Run(RunLogsCommand, {rec.job_id, "--rank", "7"}, &out, &err), 2);
  EXPECT_THAT(err, HasSubstr("no log for rank 7"));
  EXPECT_EQ(Run(RunLogsCommand, {"no-such-job"}, &out, &err), 2);
  EXPECT_THAT(err, HasSubstr("no job 'no-such-job'"));
}

// A job directory that `dlaunch run` wrote before the typed journal (a restart, a spare).
TEST_F(CliProcessTest, StatusReadsAJobDirectoryOfAnEarlierDlaunch) {
  const std::string job_dir = dir_ + "/runs/legacy";
  fs::create_directories(job_dir);
  WriteFile(job_dir + "/job.yaml", "name: legacy\n");
  for (const char* name : {"events.jsonl", "metrics.jsonl", "summary.json"}) {
    fs::copy_file(std::string(DLAUNCH_SOURCE_DIR "/tests/launcher/testdata/journal-v1/") + name,
                  job_dir + "/" + name);
  }
  std::string out, err;
  ASSERT_EQ(Run(RunStatusCommand, {job_dir}, &out, &err), 0) << err;
  EXPECT_THAT(out, HasSubstr("dlaunch    succeeded (exit 0)"));
  EXPECT_THAT(out, HasSubstr("journal    schema version 1"));
  EXPECT_THAT(out, HasSubstr("spare_lost round=1 node_id=2 host=vm reason=its session ended\n"));
  EXPECT_THAT(out, HasSubstr("job_finished round=0 result=succeeded exit_code=0"));
}

// A job directory of the dlaunch before the typed summary (summary.json hand-built, a failure's
// node rank under "node"): `status` shows its end in words, and `trace` builds its timeline and
// gives its summary.json a fresh goodput account that status then reads back.
TEST_F(CliProcessTest, StatusAndTraceReadTheUntypedSummaryOfTheDlaunchBefore) {
  const std::string job_dir = dir_ + "/runs/untyped";
  fs::create_directories(job_dir);
  WriteFile(job_dir + "/job.yaml", "name: untyped\n");
  for (const char* name : {"events.jsonl", "metrics.jsonl", "summary.json"}) {
    fs::copy_file(std::string(DLAUNCH_SOURCE_DIR "/tests/launcher/testdata/untyped-summary/") +
                      name,
                  job_dir + "/" + name);
  }
  std::string out, err;
  ASSERT_EQ(Run(RunStatusCommand, {job_dir}, &out, &err), 0) << err;
  EXPECT_THAT(out, HasSubstr("dlaunch    failed (exit 1)\n"));
  EXPECT_THAT(out, HasSubstr("ranks      2, 0 succeeded\n"));
  EXPECT_THAT(out, HasSubstr("  root cause: worker crash: rank 1 (local 0, node 1, host vm) exited "
                             "with code 3\n"));
  EXPECT_THAT(out, HasSubstr("  restarts: 1 of 1\n  not restarted: restart budget spent (1 of 1 "
                             "used)\n"));
  EXPECT_THAT(out, HasSubstr("  goodput not known of 0.4 s"));
  EXPECT_THAT(out, Not(HasSubstr("unreadable")));
  ASSERT_EQ(Run(RunTraceCommand, {job_dir}, &out, &err), 0) << err;
  EXPECT_TRUE(fs::exists(job_dir + "/trace.json"));
  const std::string summary = ReadFile(job_dir + "/summary.json");
  EXPECT_THAT(summary, HasSubstr("\"root_cause\":{\"class\":\"worker crash\""))
      << "the summary is left as its dlaunch wrote it, with the account replaced";
  ASSERT_EQ(Run(RunStatusCommand, {job_dir}, &out, &err), 0) << err;
  EXPECT_THAT(out, HasSubstr("  root cause: worker crash: rank 1 (local 0, node 1, host vm)"));
  EXPECT_THAT(out, HasSubstr("  goodput not known of 0.4 s"));
  EXPECT_THAT(out, Not(HasSubstr("unreadable")));
}

TEST_F(CliProcessTest, StatusRefusesTheJournalOfANewerDlaunchInOneLine) {
  const std::string job_dir = dir_ + "/runs/future";
  fs::create_directories(job_dir);
  WriteFile(job_dir + "/job.yaml", "name: future\n");
  WriteFile(job_dir + "/events.jsonl",
            "{\"time\":\"T\",\"round\":0,\"journal_opened\":{\"schema_version\":9}}\n");
  std::string out;
  ASSERT_EQ(Run(RunStatusCommand, {job_dir}, &out), 0);
  EXPECT_THAT(out, HasSubstr("journal    " + job_dir +
                             "/events.jsonl: journal schema version 9 is newer than this "
                             "dlaunch reads (2)"));
}

TEST_F(CliProcessTest, LocalSubmitRunsInBackgroundAndCancelStopsIt) {
  std::string out, err;
  ASSERT_EQ(Run(RunSubmitCommand, {"job.yaml", "--site", "local"}, &out, &err), 0) << err;
  std::string id(absl::StripAsciiWhitespace(out));
  const std::string job_dir = dir_ + "/runs/" + id;
  // The script ran and exec'd "dlaunch run <job.yaml> --job-dir <dir> ...".
  ASSERT_TRUE(WaitFor([&] { return fs::exists(job_dir + "/launched"); }, std::chrono::seconds(20)))
      << ReadFile(job_dir + "/scheduler.out");
  EXPECT_THAT(ReadFile(job_dir + "/scheduler.out"),
              HasSubstr(absl::StrCat("dlaunch run ", job_dir, "/job.yaml --job-dir ", job_dir,
                                     " --launcher local")));
  ASSERT_EQ(Run(RunStatusCommand, {id}, &out), 0);
  EXPECT_THAT(out, HasSubstr(": running"));
  ASSERT_EQ(Run(RunCancelCommand, {id}, &out, &err), 0) << err;
  EXPECT_THAT(out, HasSubstr("cancelled local job"));
  EXPECT_THAT(out, Not(HasSubstr("sent SIGTERM to launcher")));
  EXPECT_TRUE(WaitFor(
      [&] {
        std::string o;
        Run(RunStatusCommand, {id}, &o);
        return o.find("not_in_queue") != std::string::npos;
      },
      std::chrono::seconds(20)));
}

TEST_F(CliProcessTest, FollowStopsWhenTheLauncherDiedWithoutASummary) {
  const std::string job_dir = dir_ + "/runs/killed-20261121-101530-0002";
  fs::create_directories(job_dir + "/logs");
  WriteFile(job_dir + "/job.yaml", "name: killed\n");
  WriteFile(job_dir + "/logs/rank-0.log", "step 1\n");
  pid_t child = ::fork();
  if (child == 0) ::_exit(0);
  ASSERT_EQ(::waitpid(child, nullptr, 0), child);  // a pid that no longer exists
  char host[256] = {0};
  ::gethostname(host, sizeof(host) - 1);
  WriteFile(job_dir + "/launcher.json",
            absl::StrCat("{\"pid\": ", child, ", \"host\": \"", host, "\"}"));
  std::string out;
  ASSERT_EQ(Run(RunLogsCommand, {job_dir, "--follow"}, &out), 0);
  EXPECT_EQ(out, "[rank 0] step 1\n");
}

TEST_F(CliProcessTest, FollowStopsWhenEventsSayTheJobFinished) {
  // No summary.json (its write failed) and no launcher.json (the launcher ran on another host):
  // the last event alone ends the follow.
  const std::string job_dir = dir_ + "/runs/elsewhere-20261121-101530-0003";
  fs::create_directories(job_dir + "/logs");
  WriteFile(job_dir + "/job.yaml", "name: elsewhere\n");
  WriteFile(job_dir + "/logs/rank-0.log", "step 1\n");
  WriteFile(job_dir + "/events.jsonl",
            "{\"time\": 1.0, \"event\": \"job_started\"}\n"
            "{\"time\": 2.0, \"event\": \"job_finished\", \"exit_code\": 0}\n");
  std::string out;
  ASSERT_EQ(Run(RunLogsCommand, {job_dir, "--follow"}, &out), 0);
  EXPECT_EQ(out, "[rank 0] step 1\n");
}

TEST_F(CliProcessTest, CancelSignalsALauncherOnThisHost) {
  const std::string job_dir = dir_ + "/runs/interactive-20261121-101530-0001";
  fs::create_directories(job_dir);
  WriteFile(job_dir + "/job.yaml", "name: interactive\n");
  pid_t child = ::fork();
  if (child == 0) {
    ::execlp("sleep", "sleep", "60", static_cast<char*>(nullptr));
    ::_exit(127);
  }
  char host[256] = {0};
  ::gethostname(host, sizeof(host) - 1);
  WriteFile(job_dir + "/launcher.json",
            absl::StrCat("{\"pid\": ", child, ", \"host\": \"", host,
                         "\", \"address\": \"10.0.0.1:4000\"}"));
  std::string out, err;
  ASSERT_EQ(Run(RunCancelCommand, {job_dir}, &out, &err), 0) << err;
  EXPECT_THAT(out, HasSubstr(absl::StrCat("sent SIGTERM to launcher pid ", child)));
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFSIGNALED(status));
  EXPECT_EQ(WTERMSIG(status), SIGTERM);
}

// The first command a torchrun user types: a script, its own arguments after it, a duration.
// Runs a real job on this machine (dlaunch-agent from the build, python3 from PATH).
TEST_F(CliProcessTest, RunTakesAScriptAsTorchrunDoes) {
  WriteFile(dir_ + "/train.py",
            "import os, sys\n"
            "with open('argv-' + os.environ['RANK'], 'w') as f:\n"
            "    f.write(' '.join(sys.argv[1:]) + ' ' + os.environ['WORLD_SIZE'])\n");
  std::string out, err;
  ASSERT_EQ(Run(RunRunCommand,
                {"--nproc-per-node", "2", "--stall-timeout", "20s", "--job-root", dir_ + "/runs",
                 "train.py", "--epochs", "1", "--nnodes", "x"},
                &out, &err),
            0)
      << out << err;
  EXPECT_EQ(ReadFile(dir_ + "/argv-0"), "--epochs 1 --nnodes x 2");
  EXPECT_EQ(ReadFile(dir_ + "/argv-1"), "--epochs 1 --nnodes x 2");
}

TEST_F(CliProcessTest, RunRefusesWhatItCannotTellInOneLine) {
  WriteFile(dir_ + "/train", "import torch\nprint(1)\n");
  std::string out, err;
  EXPECT_EQ(Run(RunRunCommand, {"--nproc-per-node", "2", "train"}, &out, &err), 2);
  EXPECT_EQ(err, "dlaunch: train is neither a job.yaml (it holds no YAML mapping), a Python script "
                 "(.py) nor an executable: say what runs it, e.g. `dlaunch run [options] -- "
                 "python3 train`\n");
  EXPECT_EQ(Run(RunRunCommand, {"--node_rank=0", "train.py"}, &out, &err), 2);
  EXPECT_THAT(err, HasSubstr("--node-rank has no meaning in dlaunch"));
  EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << err;
  EXPECT_FALSE(fs::exists(dir_ + "/runs"));
}

// --- Finding jobs from anywhere ----------------------------------------------------------------

TEST_F(CliProcessTest, ASubmittedJobIsFoundFromAnotherDirectory) {
  std::string out, err;
  ASSERT_EQ(Run(RunSubmitCommand, {"job.yaml", "--site", "generic-slurm", "--dry-run"}, &out, &err),
            0)
      << err;
  const std::string id(absl::StripAsciiWhitespace(out));
  WriteFile(dir_ + "/runs/" + id + "/logs/rank-0.log", "step 1\n");
  // Elsewhere: no runs/ here, and DLAUNCH_JOB_ROOT as a new user has it, unset.
  fs::create_directories(dir_ + "/elsewhere");
  fs::current_path(dir_ + "/elsewhere");
  ::unsetenv("DLAUNCH_JOB_ROOT");
  ASSERT_EQ(Run(RunStatusCommand, {id}, &out, &err), 0) << err;
  EXPECT_THAT(out, HasSubstr("directory  " + dir_ + "/runs/" + id + "\n"));
  ASSERT_EQ(Run(RunLogsCommand, {id, "--rank", "0"}, &out, &err), 0) << err;
  EXPECT_EQ(out, "step 1\n");
  // watch and trace find it too: what they say is about the job, not "no job".
  EXPECT_EQ(Run(RunWatchCommand, {id}, &out, &err), 3);
  EXPECT_THAT(err, HasSubstr("no " + dir_ + "/runs/" + id + "/launcher.json"));
  EXPECT_EQ(Run(RunTraceCommand, {id}, &out, &err), 2);
  EXPECT_THAT(err, HasSubstr("no timeline for " + dir_ + "/runs/" + id + ":"));
  // The list shows it too, with where it is.
  ASSERT_EQ(Run(RunStatusCommand, {}, &out, &err), 0) << err;
  EXPECT_THAT(out, HasSubstr(id + "\t"));
  EXPECT_THAT(out, HasSubstr("\t" + dir_ + "/runs/" + id + "\n"));
  // Its directory removed, the index entry is stale: "no job", not a broken path.
  fs::remove_all(dir_ + "/runs/" + id);
  EXPECT_EQ(Run(RunStatusCommand, {id}, &out, &err), 2);
  EXPECT_THAT(err, HasSubstr("no job '" + id + "' in runs or in the job index"));
}

TEST_F(CliProcessTest, TheListShowsStartTimesNewestFirstAndLeavesOutDoctorRuns) {
  const std::string runs = dir_ + "/runs/";
  auto job = [&](const std::string& id, const std::string& started) {
    fs::create_directories(runs + id + "/logs");
    WriteFile(runs + id + "/job.yaml", "name: x\n");
    WriteFile(runs + id + "/events.jsonl",
              "{\"time\":\"" + started + "\",\"round\":0,\"job_started\":{\"nodes\":1}}\n");
  };
  job("older-20261120-080000-0001", "2026-11-20T08:00:00.125Z");
  job("newer-20261121-090000-0002", "2026-11-21T09:00:00.500Z");
  job("check-20261122-100000-0003", "2026-11-22T10:00:00.000Z");
  WriteFile(runs + "check-20261122-100000-0003/kind", "doctor\n");
  // A doctor run of an earlier dlaunch: no kind file, no journal.
  fs::create_directories(runs + "smoke-doctor-20261122-110000-0004/logs");
  WriteFile(runs + "smoke-doctor-20261122-110000-0004/job.yaml", "name: smoke-doctor\n");
  std::string out;
  ASSERT_EQ(Run(RunStatusCommand, {}, &out), 0);
  EXPECT_THAT(out, ::testing::StartsWith("JOB\tSTARTED\tSTATE\tSITE\tSCHEDULER JOB\tDIRECTORY\n"
                                         "newer-20261121-090000-0002\t2026-11-21 09:00:00Z\t"));
  EXPECT_THAT(out, HasSubstr("\nolder-20261120-080000-0001\t2026-11-20 08:00:00Z\t"));
  EXPECT_THAT(out, Not(HasSubstr("check-")));
  EXPECT_THAT(out, Not(HasSubstr("doctor")));
  // A doctor run is still there to look at by its id.
  ASSERT_EQ(Run(RunStatusCommand, {"check-20261122-100000-0003"}, &out), 0);
  EXPECT_THAT(out, HasSubstr("started    2026-11-22 10:00:00Z\n"));
}

TEST_F(CliProcessTest, StatusJsonIsForScripts) {
  const std::string job_dir = dir_ + "/runs/done-1";
  fs::create_directories(job_dir + "/logs");
  WriteFile(job_dir + "/job.yaml", "name: done\n");
  WriteFile(job_dir + "/summary.json", "{\"result\": \"succeeded\", \"exit_code\": 0}\n");
  std::string out, err;
  ASSERT_EQ(Run(RunStatusCommand, {"done-1", "--json"}, &out, &err), 0) << err;
  EXPECT_EQ(out, "{\"job_id\":\"done-1\",\"directory\":\"" + job_dir +
                     "\",\"state\":\"succeeded (exit 0)\",\"started\":\"\",\"ended\":true,"
                     "\"submit\":null,"
                     "\"summary\":{\"result\": \"succeeded\", \"exit_code\": 0}}\n");
  ASSERT_EQ(Run(RunStatusCommand, {"--json"}, &out, &err), 0) << err;
  EXPECT_THAT(out, ::testing::StartsWith("[{\"job_id\":\"done-1\",\"directory\":\"" + job_dir));
  EXPECT_EQ(Run(RunStatusCommand, {"done-1", "--jsn"}, &out, &err), 2);
  EXPECT_THAT(err, HasSubstr("unknown flag --jsn"));
}

}  // namespace
}  // namespace dlaunch
