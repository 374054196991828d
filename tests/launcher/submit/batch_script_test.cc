// RenderBatchScript: golden scripts per site profile and refusal of values that could escape
// into the shell or a directive. Pure: the bash runs of rendered scripts are in
// process/rendered_script_test.cc.
#include "launcher/submit/batch_script.h"

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
#include "tests/launcher/submit/batch_script_fixtures.h"
#include "tests/testing/test_files.h"

namespace dlaunch {
namespace {

using batch_script_fixtures::GoldenContext;
using batch_script_fixtures::Profile;
using batch_script_fixtures::TrainingJob;

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::Not;

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
                            "\"mpiexec -n ${NNODES} --ppn 1 --cpu-bind none --hostfile ${PBS_NODEFILE}\""));
}

// Spares are the allocation's hosts beyond nodes.max: the batch job must ask for them.
TEST(RenderBatchScript, SparesAreRequestedBesideNodesMax) {
  JobSpec spec = TrainingJob();
  spec.scheduler.queue = "debug";
  spec.max_restarts = 2;
  spec.spare_nodes = 1;
  absl::StatusOr<std::string> s = RenderBatchScript(spec, Profile("polaris"), GoldenContext());
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_THAT(*s, HasSubstr("#PBS -l select=3:system=polaris\n"));
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
  EXPECT_THAT(*s, HasSubstr("\"mpirun -hostfile ${COBALT_NODEFILE} -n ${NNODES} -npernode 1 "
                            "--bind-to none\""));
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
  const JobSpec spec = TrainingJob();
  const absl::StatusOr<std::string> first =
      RenderBatchScript(spec, Profile("polaris"), GoldenContext());
  const absl::StatusOr<std::string> second =
      RenderBatchScript(spec, Profile("polaris"), GoldenContext());
  ASSERT_TRUE(first.ok()) << first.status();
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_EQ(*first, *second);
}

}  // namespace
}  // namespace dlaunch
