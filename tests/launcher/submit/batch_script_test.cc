// RenderBatchScript: golden scripts per site profile, refusal of values that could escape into
// the shell or a directive, and real bash runs of rendered scripts with a stand-in dlaunch.
#include "launcher/submit/batch_script.h"

#include <sys/stat.h>
#include <sys/wait.h>

#include <cstdlib>
#include <functional>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "launcher/submit/site_profile.h"
#include "tests/testing/test_files.h"

namespace dlaunch {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::Not;

SiteSearchPath BuiltinOnly() {
  return MakeSiteSearchPath("", "", "", {std::string(DLAUNCH_SOURCE_DIR) + "/templates"});
}

SiteProfile Profile(const std::string& name) {
  absl::StatusOr<SiteProfile> p = LoadSiteProfile(name, BuiltinOnly());
  EXPECT_TRUE(p.ok()) << p.status();
  return p.ok() ? *p : SiteProfile{};
}

JobSpec TrainingJob() {
  JobSpec spec;
  spec.name = "fmnist";
  spec.min_nodes = 2;
  spec.max_nodes = 2;
  spec.command = {"python3", "train.py", "--epochs", "5"};
  spec.env = {{"NCCL_DEBUG", "WARN"}};
  spec.scheduler.account = "MyProject";
  spec.scheduler.walltime = "0:30:00";
  spec.scheduler.setup = {"source /home/user/venv/bin/activate"};
  return spec;
}

RenderContext GoldenContext() {
  RenderContext ctx;
  ctx.job_id = "fmnist-20261121-101530-a3f9";
  ctx.job_dir = "/home/user/proj/runs/fmnist-20261121-101530-a3f9";
  ctx.dlaunch_binary = "/opt/dlaunch/bin/dlaunch";
  ctx.resolved_spec_path = ctx.job_dir + "/job.yaml";
  ctx.submit_cwd = "/home/user/proj";
  return ctx;
}

// Runs `command` with /bin/sh and returns its exit status.
int Shell(const std::string& command) {
  int status = std::system(command.c_str());
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}


// --- Golden scripts, one per built-in profile ------------------------------------------------

struct GoldenCase {
  std::string site;
  std::string queue;
};

class GoldenTest : public ::testing::TestWithParam<GoldenCase> {};

TEST_P(GoldenTest, MatchesGoldenFile) {
  const GoldenCase& c = GetParam();
  SiteProfile profile = Profile(c.site);
  JobSpec spec = TrainingJob();
  spec.scheduler.queue = c.queue;
  if (profile.scheduler == "local") spec.scheduler.account.clear();
  absl::StatusOr<std::string> script = RenderBatchScript(spec, profile, GoldenContext());
  ASSERT_TRUE(script.ok()) << script.status();

  const std::string golden = absl::StrCat(DLAUNCH_SOURCE_DIR, "/tests/launcher/submit/golden/", c.site,
                                          ".sh");
  const char* update = std::getenv("DLAUNCH_UPDATE_GOLDEN");
  if (update != nullptr && std::string(update) == "1") {
    WriteFile(golden, *script, 0755);
    GTEST_SKIP() << "rewrote " << golden;
  }
  ASSERT_TRUE(fs::exists(golden)) << golden << " missing; run with DLAUNCH_UPDATE_GOLDEN=1";
  EXPECT_EQ(*script, ReadFile(golden))
      << "rendered script differs from " << golden
      << "; if the change is intended, regenerate with DLAUNCH_UPDATE_GOLDEN=1 and review the diff";
  // Every golden script is valid bash.
  EXPECT_EQ(Shell(absl::StrCat("bash -n '", golden, "'")), 0);
}

INSTANTIATE_TEST_SUITE_P(Sites, GoldenTest,
                         ::testing::Values(GoldenCase{"polaris", "debug"},
                                           GoldenCase{"thetagpu", "full-node"},
                                           GoldenCase{"generic-pbs", "workq"},
                                           GoldenCase{"generic-slurm", "gpu"},
                                           GoldenCase{"local", ""}),
                         [](const auto& info) {
                           std::string n = info.param.site;
                           for (char& ch : n) {
                             if (ch == '-') ch = '_';
                           }
                           return n;
                         });

// The directive lines ALCF documents for Polaris and ThetaGPU, checked line by line so a golden
// regeneration cannot silently drop one.
TEST(RenderBatchScript, PolarisHasAlcfDirectives) {
  JobSpec spec = TrainingJob();
  spec.scheduler.queue = "debug";
  absl::StatusOr<std::string> s = RenderBatchScript(spec, Profile("polaris"), GoldenContext());
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_THAT(*s, ::testing::StartsWith("#!/bin/bash\n"));
  for (const char* line : {"#PBS -l select=2:system=polaris\n", "#PBS -l place=scatter\n",
                           "#PBS -l walltime=0:30:00\n", "#PBS -l filesystems=home:eagle\n",
                           "#PBS -q debug\n", "#PBS -A MyProject\n", "#PBS -N fmnist\n",
                           "NNODES=$(wc -l < \"$PBS_NODEFILE\")\n"}) {
    EXPECT_THAT(*s, HasSubstr(line));
  }
  EXPECT_THAT(*s, HasSubstr("--launcher mpiexec --launcher-cmd "
                            "\"mpiexec -n ${NNODES} --ppn 1 --hostfile ${PBS_NODEFILE}\""));
}

TEST(RenderBatchScript, ThetaGpuHasCobaltDirectives) {
  JobSpec spec = TrainingJob();
  spec.scheduler.queue = "single-gpu";
  spec.min_nodes = spec.max_nodes = 1;
  spec.scheduler.walltime = "10";
  spec.scheduler.account = "proj";
  spec.scheduler.filesystems = {"home", "grand"};
  absl::StatusOr<std::string> s = RenderBatchScript(spec, Profile("thetagpu"), GoldenContext());
  ASSERT_TRUE(s.ok()) << s.status();
  for (const char* line : {"#COBALT -n 1\n", "#COBALT -t 10\n", "#COBALT -q single-gpu\n",
                           "#COBALT -A proj\n", "#COBALT --attrs filesystems=home,grand\n"}) {
    EXPECT_THAT(*s, HasSubstr(line));
  }
  EXPECT_THAT(*s, HasSubstr("\"mpirun -hostfile ${COBALT_NODEFILE} -n ${NNODES} -npernode 1\""));
}

TEST(RenderBatchScript, SlurmDirectivesAndNodeRange) {
  JobSpec spec = TrainingJob();
  spec.min_nodes = 2;
  spec.max_nodes = 4;
  spec.scheduler.queue = "gpu";
  spec.scheduler.extra = {{"--mail-type", "END"}, {"--exclusive", ""}};
  SiteProfile profile = Profile("generic-slurm");
  profile.gpus_per_node = 4;
  absl::StatusOr<std::string> s = RenderBatchScript(spec, profile, GoldenContext());
  ASSERT_TRUE(s.ok()) << s.status();
  for (const char* line : {"#SBATCH -J fmnist\n", "#SBATCH -N 2-4\n",
                           "#SBATCH --ntasks-per-node=1\n", "#SBATCH --gpus-per-node=4\n",
                           "#SBATCH -t 0:30:00\n", "#SBATCH -p gpu\n", "#SBATCH -A MyProject\n",
                           "#SBATCH --mail-type=END\n", "#SBATCH --exclusive\n"}) {
    EXPECT_THAT(*s, HasSubstr(line));
  }
}

TEST(RenderBatchScript, OptionalDirectivesDisappearWhenEmpty) {
  JobSpec spec = TrainingJob();
  spec.scheduler.account.clear();
  absl::StatusOr<std::string> s =
      RenderBatchScript(spec, Profile("generic-pbs"), GoldenContext());
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_THAT(*s, Not(HasSubstr("#PBS -A")));
  EXPECT_THAT(*s, Not(HasSubstr("#PBS -q")));
  EXPECT_THAT(*s, Not(HasSubstr("#PBS \n")));
}

// --- Hostile values --------------------------------------------------------------------------

TEST(RenderBatchScript, RefusesUnsafeJobNames) {
  for (const std::string name : {"x; rm -rf ~", "a\nb", "$(id)", "`id`", "x y", "-N", "a'b",
                                 "x\n#PBS -l select=999"}) {
    JobSpec spec = TrainingJob();
    spec.name = name;
    absl::StatusOr<std::string> s = RenderBatchScript(spec, Profile("polaris"), GoldenContext());
    ASSERT_FALSE(s.ok()) << "accepted name " << name;
    EXPECT_EQ(s.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(s.status().message()), HasSubstr("name"));
  }
}

TEST(RenderBatchScript, RefusesUnsafeSchedulerValues) {
  struct Case {
    std::string field;
    std::function<void(JobSpec*)> set;
  };
  std::vector<Case> cases = {
      {"scheduler.account", [](JobSpec* s) { s->scheduler.account = "p\n#PBS -q prod"; }},
      {"scheduler.queue", [](JobSpec* s) { s->scheduler.queue = "debug; id"; }},
      {"scheduler.filesystems", [](JobSpec* s) { s->scheduler.filesystems = {"home", "$(id)"}; }},
      {"scheduler.modules", [](JobSpec* s) { s->scheduler.modules = {"conda; rm -rf ~"}; }},
      {"scheduler.directives", [](JobSpec* s) { s->scheduler.extra = {{"-m", "a`id`"}}; }},
      {"scheduler.directives", [](JobSpec* s) { s->scheduler.extra = {{"x; id", "1"}}; }},
      {"scheduler.walltime", [](JobSpec* s) { s->scheduler.walltime = "1:00:00\nid"; }},
  };
  for (const auto& c : cases) {
    JobSpec spec = TrainingJob();
    c.set(&spec);
    absl::StatusOr<std::string> s = RenderBatchScript(spec, Profile("polaris"), GoldenContext());
    ASSERT_FALSE(s.ok()) << c.field << " accepted";
    EXPECT_THAT(std::string(s.status().message()), HasSubstr(c.field));
  }
}

TEST(RenderBatchScript, RefusesJobDirThatADirectiveCannotHold) {
  RenderContext ctx = GoldenContext();
  for (const std::string dir : {"/home/user/my runs/x", "/home/user/a:b/x", "/h/$(id)/x"}) {
    ctx.job_dir = dir;
    absl::StatusOr<std::string> s = RenderBatchScript(TrainingJob(), Profile("polaris"), ctx);
    ASSERT_FALSE(s.ok()) << dir;
    EXPECT_THAT(std::string(s.status().message()), HasSubstr("job directory"));
  }
  // The local site names no directory in a directive, so only quoting applies there.
  ctx.job_dir = "/home/user/my runs/x";
  JobSpec spec = TrainingJob();
  spec.scheduler.account.clear();
  EXPECT_TRUE(RenderBatchScript(spec, Profile("local"), ctx).ok());
}

TEST(RenderBatchScript, CommandAndEnvironmentNeverReachTheScript) {
  JobSpec spec = TrainingJob();
  spec.command = {"python3", "train.py; touch pwned-cmd"};
  spec.env = {{"EVIL", "$(touch pwned-env)"}};
  absl::StatusOr<std::string> s = RenderBatchScript(spec, Profile("polaris"), GoldenContext());
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_THAT(*s, Not(HasSubstr("pwned")));
}

TEST(RenderBatchScript, SetupLinesAreEmittedVerbatim) {
  JobSpec spec = TrainingJob();
  spec.scheduler.setup = {"export DATA=$HOME/data && echo \"ready\""};
  absl::StatusOr<std::string> s = RenderBatchScript(spec, Profile("polaris"), GoldenContext());
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_THAT(*s, HasSubstr("\nexport DATA=$HOME/data && echo \"ready\"\n"));
}

TEST(RenderBatchScript, SchedulerTypeMustMatchSite) {
  JobSpec spec = TrainingJob();
  spec.scheduler.type = "slurm";
  absl::StatusOr<std::string> s = RenderBatchScript(spec, Profile("polaris"), GoldenContext());
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(std::string(s.status().message()), HasSubstr("slurm"));
}

TEST(RenderBatchScript, IsDeterministic) {
  JobSpec spec = TrainingJob();
  EXPECT_EQ(*RenderBatchScript(spec, Profile("polaris"), GoldenContext()),
            *RenderBatchScript(spec, Profile("polaris"), GoldenContext()));
}

// --- Rendered scripts run under bash ---------------------------------------------------------

// A stand-in for dlaunch that records its arguments, one per line, to $ARGS_OUT.
std::string MakeFakeDlaunch(const std::string& dir) {
  std::string path = dir + "/fake dlaunch";
  WriteFile(path,
            "#!/bin/bash\nfor a in \"$@\"; do printf '%s\\n' \"$a\"; done > \"$ARGS_OUT\"\n"
            "printf '%s\\n' \"$PWD\" > \"$ARGS_OUT.cwd\"\n",
            0755);
  return path;
}

std::vector<std::string> Lines(const std::string& text) {
  return absl::StrSplit(text, '\n', absl::SkipEmpty());
}

TEST(RenderedScript, HostilePathsStayInertUnderBash) {
  ScratchDir tmp("dlaunch-render");
  // Directory names a user could pick for the job root or working directory.
  const std::string hostile = "ru ns$(touch pwned1)`touch pwned2`;touch pwned3;'q'";
  const std::string cwd = tmp.path() + "/" + hostile;
  fs::create_directories(cwd);
  RenderContext ctx;
  ctx.job_id = "fmnist-20261121-101530-a3f9";
  ctx.job_dir = cwd + "/runs/" + ctx.job_id;
  ctx.resolved_spec_path = ctx.job_dir + "/job.yaml";
  ctx.submit_cwd = cwd;
  ctx.dlaunch_binary = MakeFakeDlaunch(tmp.path());
  JobSpec spec = TrainingJob();
  spec.scheduler.account.clear();
  spec.scheduler.setup.clear();
  absl::StatusOr<std::string> s = RenderBatchScript(spec, Profile("local"), ctx);
  ASSERT_TRUE(s.ok()) << s.status();
  const std::string script = tmp.path() + "/job.sh";
  WriteFile(script, *s, 0755);
  const std::string args_out = tmp.path() + "/args";
  ASSERT_EQ(Shell(absl::StrCat("cd '", tmp.path(), "' && ARGS_OUT='", args_out, "' bash '",
                               script, "'")),
            0)
      << *s;
  std::vector<std::string> args = Lines(ReadFile(args_out));
  std::vector<std::string> want = {"run", ctx.resolved_spec_path, "--job-dir", ctx.job_dir,
                                   "--launcher", "local"};
  EXPECT_EQ(args, want);
  EXPECT_EQ(Lines(ReadFile(args_out + ".cwd")), std::vector<std::string>{cwd});
  for (const char* f : {"pwned1", "pwned2", "pwned3"}) {
    EXPECT_FALSE(fs::exists(tmp.path() + "/" + f)) << f;
    EXPECT_FALSE(fs::exists(cwd + "/" + f)) << f;
  }
}

// Each scheduler's script run with that scheduler's environment: the agent-launch prefix that
// reaches `dlaunch run` has the allocation's node count and nodefile filled in.
struct ExecCase {
  std::string site;
  std::string env;              // scheduler environment for the run
  std::string want_launcher;
  std::string want_launch_cmd;  // with @NODEFILE@ for the nodefile path
};

class RenderedScriptExec : public ::testing::TestWithParam<ExecCase> {};

TEST_P(RenderedScriptExec, PassesExpandedLaunchPrefix) {
  const ExecCase& c = GetParam();
  ScratchDir tmp("dlaunch-render");
  const std::string nodefile = tmp.path() + "/nodefile";
  WriteFile(nodefile, "node-a\nnode-b\nnode-c\n");
  RenderContext ctx;
  ctx.job_id = "fmnist-20261121-101530-a3f9";
  ctx.job_dir = tmp.path() + "/runs/" + ctx.job_id;
  ctx.resolved_spec_path = ctx.job_dir + "/job.yaml";
  ctx.submit_cwd = tmp.path();
  ctx.dlaunch_binary = MakeFakeDlaunch(tmp.path());
  JobSpec spec = TrainingJob();
  spec.min_nodes = spec.max_nodes = 3;
  spec.scheduler.setup = {"export FROM_SETUP=1"};
  SiteProfile profile = Profile(c.site);
  profile.modules.clear();  // no `module` command here
  absl::StatusOr<std::string> s = RenderBatchScript(spec, profile, ctx);
  ASSERT_TRUE(s.ok()) << s.status();
  const std::string script = tmp.path() + "/job.sh";
  WriteFile(script, *s, 0755);
  std::string env = c.env;
  size_t at = env.find("@NODEFILE@");
  if (at != std::string::npos) env.replace(at, 10, nodefile);
  const std::string args_out = tmp.path() + "/args";
  ASSERT_EQ(Shell(absl::StrCat("cd / && env -i PATH=/usr/bin:/bin ", env, " ARGS_OUT='",
                               args_out, "' '", script, "'")),
            0)
      << *s;
  std::string want_cmd = c.want_launch_cmd;
  at = want_cmd.find("@NODEFILE@");
  if (at != std::string::npos) want_cmd.replace(at, 10, nodefile);
  std::vector<std::string> args = Lines(ReadFile(args_out));
  std::vector<std::string> want = {"run",        ctx.resolved_spec_path, "--job-dir",
                                   ctx.job_dir,  "--launcher",           c.want_launcher,
                                   "--launcher-cmd", want_cmd};
  EXPECT_EQ(args, want);
  EXPECT_EQ(Lines(ReadFile(args_out + ".cwd")), std::vector<std::string>{tmp.path()});
}

INSTANTIATE_TEST_SUITE_P(
    Schedulers, RenderedScriptExec,
    ::testing::Values(
        ExecCase{"polaris", "PBS_NODEFILE=@NODEFILE@", "mpiexec",
                 "mpiexec -n 3 --ppn 1 --hostfile @NODEFILE@"},
        ExecCase{"thetagpu", "COBALT_NODEFILE=@NODEFILE@", "mpirun",
                 "mpirun -hostfile @NODEFILE@ -n 3 -npernode 1"},
        ExecCase{"generic-slurm", "SLURM_JOB_NUM_NODES=3", "srun",
                 "srun --ntasks-per-node=1 -N 3 --kill-on-bad-exit=1"}),
    [](const auto& info) {
      std::string n = info.param.site;
      for (char& ch : n) {
        if (ch == '-') ch = '_';
      }
      return n;
    });

TEST(RenderedScript, FailsWithoutTheSchedulersNodefile) {
  ScratchDir tmp("dlaunch-render");
  RenderContext ctx;
  ctx.job_id = "j-20261121-101530-0001";
  ctx.job_dir = tmp.path() + "/runs/" + ctx.job_id;
  ctx.resolved_spec_path = ctx.job_dir + "/job.yaml";
  ctx.submit_cwd = tmp.path();
  ctx.dlaunch_binary = MakeFakeDlaunch(tmp.path());
  JobSpec spec = TrainingJob();
  spec.scheduler.setup.clear();
  absl::StatusOr<std::string> s = RenderBatchScript(spec, Profile("polaris"), ctx);
  ASSERT_TRUE(s.ok()) << s.status();
  const std::string script = tmp.path() + "/job.sh";
  WriteFile(script, *s, 0755);
  // set -u: an unset PBS_NODEFILE stops the script instead of launching on zero nodes.
  EXPECT_NE(Shell(absl::StrCat("env -i PATH=/usr/bin:/bin ARGS_OUT=", tmp.path(),
                               "/args bash '", script, "' 2>/dev/null")),
            0);
  EXPECT_FALSE(fs::exists(tmp.path() + "/args"));
}

}  // namespace
}  // namespace dlaunch
