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

#include "absl/strings/match.h"
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
  // A variant of the training job or the profile, and the golden file's suffix naming it.
  std::string variant;
  std::function<void(JobSpec*, SiteProfile*)> adjust;
};

// For ctest's names and failure messages (gtest would print the bytes).
void PrintTo(const GoldenCase& c, std::ostream* os) {
  *os << c.site << (c.variant.empty() ? "" : "-") << c.variant;
}

void AskForFourGpus(JobSpec* spec, SiteProfile*) { spec->gpus_per_node = 4; }
void PythonSetupOff(JobSpec*, SiteProfile* profile) { profile->python_setup.clear(); }

class GoldenTest : public ::testing::TestWithParam<GoldenCase> {};

TEST_P(GoldenTest, MatchesGoldenFile) {
  const GoldenCase& c = GetParam();
  SiteProfile profile = Profile(c.site);
  JobSpec spec = TrainingJob();
  spec.scheduler.queue = c.queue;
  if (profile.scheduler == "local") spec.scheduler.account.clear();
  if (c.adjust) c.adjust(&spec, &profile);
  absl::StatusOr<std::string> script = RenderBatchScript(spec, profile, GoldenContext());
  ASSERT_TRUE(script.ok()) << script.status();

  const std::string golden =
      absl::StrCat(DLAUNCH_SOURCE_DIR, "/tests/launcher/submit/golden/", c.site,
                   c.variant.empty() ? "" : "-", c.variant, ".sh");
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
                         ::testing::Values(
                             GoldenCase{"polaris", "debug", "", nullptr},
                             GoldenCase{"polaris", "debug", "python-setup-off", PythonSetupOff},
                             GoldenCase{"thetagpu", "full-node", "", nullptr},
                             GoldenCase{"generic-pbs", "workq", "", nullptr},
                             GoldenCase{"generic-pbs", "workq", "gpus", AskForFourGpus},
                             GoldenCase{"generic-slurm", "gpu", "", nullptr},
                             GoldenCase{"generic-slurm", "gpu", "gpus", AskForFourGpus},
                             GoldenCase{"local", "", "", nullptr}),
                         [](const auto& info) {
                           std::string n = info.param.site;
                           if (!info.param.variant.empty()) n += "_" + info.param.variant;
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

// --- GPU requests ------------------------------------------------------------------------------

// The script's directive lines, in order, without the prefix.
std::vector<std::string> DirectivesOf(const std::string& script, const std::string& prefix) {
  std::vector<std::string> out;
  for (absl::string_view line : absl::StrSplit(script, '\n')) {
    if (absl::StartsWith(line, prefix)) out.emplace_back(line.substr(prefix.size()));
  }
  return out;
}

// A GPU job on a GRES-managed Slurm cluster gets GPUs only if it asks: one GPU line, the count
// from the job (gpus.per_node, else gpus.per_proc x nproc_per_node), else the site's.
TEST(RenderBatchScript, SlurmAsksForTheJobsGpusPerNode) {
  struct Case {
    std::string what;
    int nproc_per_node, gpus_per_node, gpus_per_proc, site_gpus;
    std::string want;  // the GPU directive, "" = none
  };
  for (const Case& c : std::vector<Case>{
           {"gpus.per_node with nproc_per_node: gpu", 0, 4, 0, 0, "--gpus-per-node=4"},
           {"gpus.per_node wins over the site", 0, 2, 0, 4, "--gpus-per-node=2"},
           {"gpus.per_proc x nproc_per_node", 2, 0, 2, 0, "--gpus-per-node=4"},
           {"the site's count", 0, 0, 0, 8, "--gpus-per-node=8"},
           {"a CPU job on a CPU site", 4, 0, 0, 0, ""},
           {"no count anywhere", 0, 0, 0, 0, ""}}) {
    JobSpec spec = TrainingJob();
    spec.nproc_per_node = c.nproc_per_node;
    spec.gpus_per_node = c.gpus_per_node;
    spec.gpus_per_proc = c.gpus_per_proc;
    SiteProfile profile = Profile("generic-slurm");
    profile.gpus_per_node = c.site_gpus;
    absl::StatusOr<std::string> s = RenderBatchScript(spec, profile, GoldenContext());
    ASSERT_TRUE(s.ok()) << c.what << ": " << s.status();
    std::vector<std::string> gpu_lines;
    for (const std::string& d : DirectivesOf(*s, "#SBATCH ")) {
      if (absl::StrContains(d, "gpu")) gpu_lines.push_back(d);
    }
    EXPECT_EQ(gpu_lines, c.want.empty() ? std::vector<std::string>{}
                                        : std::vector<std::string>{c.want})
        << c.what << "\n" << *s;
  }
}

// A site whose Slurm counts GPUs with select/cons_res asks in GRES form; the profile says so.
TEST(RenderBatchScript, SlurmGresFormWhereTheProfileSaysSo) {
  absl::StatusOr<SiteProfile> profile = ParseSiteProfile(
      "scheduler: slurm\n"
      "directives:\n"
      "  - \"-N {{nodes}}\"\n"
      "  - \"{{#gpus_per_node}}--gres=gpu:{{gpus_per_node}}{{/gpus_per_node}}\"\n"
      "launch: \"srun -N ${NNODES}\"\n",
      "gres-site", "gres-site.yaml");
  ASSERT_TRUE(profile.ok()) << profile.status();
  profile->template_text = Profile("generic-slurm").template_text;
  JobSpec spec = TrainingJob();
  spec.gpus_per_node = 4;
  absl::StatusOr<std::string> s = RenderBatchScript(spec, *profile, GoldenContext());
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(DirectivesOf(*s, "#SBATCH "), (std::vector<std::string>{"-N 2", "--gres=gpu:4"}));
}

// PBS: generic sites may share nodes, so a GPU count becomes ngpus in the select statement;
// Polaris gives whole nodes and ALCF selects by system, so its select has none.
TEST(RenderBatchScript, PbsNgpusOnlyWhereNodesAreShared) {
  JobSpec spec = TrainingJob();
  spec.scheduler.queue = "debug";
  spec.gpus_per_node = 4;
  absl::StatusOr<std::string> generic =
      RenderBatchScript(spec, Profile("generic-pbs"), GoldenContext());
  ASSERT_TRUE(generic.ok()) << generic.status();
  EXPECT_THAT(*generic, HasSubstr("#PBS -l select=2:ncpus=1:ngpus=4\n"));
  absl::StatusOr<std::string> polaris = RenderBatchScript(spec, Profile("polaris"), GoldenContext());
  ASSERT_TRUE(polaris.ok()) << polaris.status();
  EXPECT_THAT(*polaris, HasSubstr("#PBS -l select=2:system=polaris\n"));
  EXPECT_THAT(*polaris, Not(HasSubstr("ngpus")));
}

// --- Polaris' Python environment ----------------------------------------------------------------

constexpr char kPolarisConda[] =
    "module use /soft/modulefiles\nmodule load conda\nconda activate\n";

// A Python worker gets ALCF's conda PyTorch without copying lines into job.yaml: after the
// site's own lines, before the job's (which may switch environments), before `set -u`.
TEST(RenderBatchScript, PolarisPythonJobGetsAlcfConda) {
  for (const char* python : {"python3", "python", "/usr/bin/python3.11"}) {
    JobSpec spec = TrainingJob();
    spec.scheduler.queue = "debug";
    spec.command = {python, "train.py"};
    absl::StatusOr<std::string> s = RenderBatchScript(spec, Profile("polaris"), GoldenContext());
    ASSERT_TRUE(s.ok()) << s.status();
    EXPECT_THAT(*s, HasSubstr(absl::StrCat("export NCCL_CROSS_NIC=1\n", kPolarisConda,
                                           "source /home/user/venv/bin/activate\nset -u\n")))
        << python << "\n" << *s;
  }
}

TEST(RenderBatchScript, PolarisNonPythonJobGetsNoConda) {
  JobSpec spec = TrainingJob();
  spec.scheduler.queue = "debug";
  spec.command = {"dlaunch-worker", "--model", "cnn"};
  absl::StatusOr<std::string> s = RenderBatchScript(spec, Profile("polaris"), GoldenContext());
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_THAT(*s, Not(HasSubstr("conda")));
}

// `python_setup: []` in a profile turns it off; other sites have none.
TEST(RenderBatchScript, PythonSetupOffOrAbsentAddsNothing) {
  JobSpec spec = TrainingJob();
  spec.scheduler.queue = "debug";
  SiteProfile off = Profile("polaris");
  off.python_setup.clear();
  for (const SiteProfile& profile : {off, Profile("generic-pbs"), Profile("generic-slurm")}) {
    absl::StatusOr<std::string> s = RenderBatchScript(spec, profile, GoldenContext());
    ASSERT_TRUE(s.ok()) << s.status();
    EXPECT_THAT(*s, Not(HasSubstr("conda"))) << profile.name;
  }
}

TEST(RenderBatchScript, AJobThatBringsItsOwnPythonTurnsTheSitesOff) {
  JobSpec spec = TrainingJob();
  spec.scheduler.queue = "debug";
  spec.command = {"python3", "train.py"};
  spec.scheduler.site_python_setup = false;
  absl::StatusOr<std::string> s = RenderBatchScript(spec, Profile("polaris"), GoldenContext());
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_THAT(*s, Not(HasSubstr("conda")));
  EXPECT_THAT(*s, HasSubstr("source /home/user/venv/bin/activate\n")) << "the job's own setup stays";
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
