// Rendered batch scripts run under real bash with a stand-in dlaunch: hostile paths stay inert,
// the launch prefix is expanded, a missing nodefile fails; and every golden script is valid bash.
#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "launcher/submit/batch_script.h"
#include "tests/launcher/submit/batch_script_fixtures.h"
#include "tests/testing/test_files.h"

namespace dlaunch {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using batch_script_fixtures::GoldenContext;
using batch_script_fixtures::Profile;
using batch_script_fixtures::TrainingJob;

// Runs `command` with /bin/sh and returns its exit status.
int Shell(const std::string& command) {
  int status = std::system(command.c_str());
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}


TEST(GoldenScripts, AreValidBash) {
  const std::string dir = absl::StrCat(DLAUNCH_SOURCE_DIR, "/tests/launcher/submit/golden");
  int checked = 0;
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (entry.path().extension() != ".sh") continue;
    EXPECT_EQ(Shell(absl::StrCat("bash -n '", entry.path().string(), "'")), 0) << entry.path();
    ++checked;
  }
  EXPECT_GE(checked, 8) << "golden scripts missing from " << dir;
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
  profile.python_setup.clear();
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
                 "mpiexec -n 3 --ppn 1 --cpu-bind none --hostfile @NODEFILE@"},
        ExecCase{"thetagpu", "COBALT_NODEFILE=@NODEFILE@", "mpirun",
                 "mpirun -hostfile @NODEFILE@ -n 3 -npernode 1 --bind-to none"},
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
  SiteProfile profile = Profile("polaris");
  profile.python_setup.clear();  // no `module` command here
  absl::StatusOr<std::string> s = RenderBatchScript(spec, profile, ctx);
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
