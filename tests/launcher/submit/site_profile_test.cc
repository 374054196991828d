// Site profiles: the built-in ones parse and carry their sites' facts; user profiles on
// DLAUNCH_SITE_PATH take precedence and may bring their own template; mistakes are named.
#include "launcher/submit/site_profile.h"
#include "tests/testing/test_files.h"

#include <filesystem>
#include <fstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace dlaunch {
namespace {

namespace fs = std::filesystem;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsSupersetOf;

const std::string kTemplates = std::string(DLAUNCH_SOURCE_DIR) + "/templates";

SiteSearchPath BuiltinOnly() { return MakeSiteSearchPath("", "", "", {kTemplates}); }


TEST(SiteProfile, EveryBuiltinProfileLoads) {
  std::vector<std::string> names = ListSiteProfiles(BuiltinOnly());
  EXPECT_THAT(names, IsSupersetOf({"polaris", "thetagpu", "generic-pbs", "generic-slurm",
                                   "local"}));
  for (const auto& n : names) {
    absl::StatusOr<SiteProfile> p = LoadSiteProfile(n, BuiltinOnly());
    ASSERT_TRUE(p.ok()) << n << ": " << p.status();
    EXPECT_FALSE(p->template_text.empty()) << n;
    EXPECT_TRUE(fs::path(p->template_path).is_absolute());
  }
}

// Polaris sets up ALCF's conda PyTorch for Python workers (ALCF's own job-script lines).
TEST(SiteProfile, PolarisPythonSetupIsAlcfConda) {
  absl::StatusOr<SiteProfile> polaris = LoadSiteProfile("polaris", BuiltinOnly());
  ASSERT_TRUE(polaris.ok()) << polaris.status();
  EXPECT_THAT(polaris->python_setup,
              ElementsAre("module use /soft/modulefiles", "module load conda", "conda activate"));
  absl::StatusOr<SiteProfile> off = ParseSiteProfile(
      "scheduler: slurm\nlaunch: srun\npython_setup: []\n", "mine", "mine.yaml");
  ASSERT_TRUE(off.ok()) << off.status();
  EXPECT_TRUE(off->python_setup.empty());
  absl::StatusOr<SiteProfile> bad = ParseSiteProfile(
      "scheduler: slurm\nlaunch: srun\npython_setup: conda activate\n", "mine", "mine.yaml");
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.status().message(),
              HasSubstr("mine.yaml:3:15: 'python_setup' must be a list of strings"));
}

TEST(SiteProfile, PolarisAndThetaGpuFacts) {
  absl::StatusOr<SiteProfile> polaris = LoadSiteProfile("polaris", BuiltinOnly());
  ASSERT_TRUE(polaris.ok()) << polaris.status();
  EXPECT_EQ(polaris->scheduler, "pbs");
  EXPECT_EQ(polaris->gpus_per_node, 4);
  EXPECT_EQ(polaris->gpu_model, "A100");
  EXPECT_EQ(polaris->gpu_binding, "isolate");   // ALCF: one GPU per rank
  EXPECT_EQ(polaris->nodefile_var, "PBS_NODEFILE");
  EXPECT_EQ(polaris->launch,
            "mpiexec -n ${NNODES} --ppn 1 --cpu-bind none --hostfile ${PBS_NODEFILE}");
  EXPECT_THAT(polaris->default_filesystems, ElementsAre("home", "eagle"));
  EXPECT_TRUE(polaris->requires_account);
  EXPECT_EQ(polaris->queue_limits.at("debug").max_nodes, 2);
  EXPECT_EQ(polaris->limits.max_walltime_s, 24 * 3600);

  absl::StatusOr<SiteProfile> theta = LoadSiteProfile("thetagpu", BuiltinOnly());
  ASSERT_TRUE(theta.ok()) << theta.status();
  EXPECT_EQ(theta->scheduler, "cobalt");
  EXPECT_EQ(theta->gpus_per_node, 8);
  EXPECT_EQ(theta->gpu_binding, "isolate");
  EXPECT_EQ(theta->launch,
            "mpirun -hostfile ${COBALT_NODEFILE} -n ${NNODES} -npernode 1 --bind-to none");
  EXPECT_EQ(theta->filesystems_separator, ",");
}

TEST(SiteProfile, GpuBindingDefaultIsSharedOrIsolate) {
  absl::StatusOr<SiteProfile> bad = ParseSiteProfile(
      "scheduler: pbs\ndefaults: {gpu_binding: isolated}\n", "x", "x.yaml");
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(std::string(bad.status().message()),
              ::testing::HasSubstr("defaults.gpu_binding must be \"shared\" or \"isolate\", got \"isolated\""));
  absl::StatusOr<SiteProfile> generic = LoadSiteProfile("generic-pbs", BuiltinOnly());
  ASSERT_TRUE(generic.ok()) << generic.status();
  EXPECT_EQ(generic->gpu_binding, "");   // no site default: the job's own (shared) applies
}

TEST(SiteProfile, UserProfileShadowsBuiltinAndBringsItsOwnTemplate) {
  ScratchDir dir("dlaunch-sites");
  std::ofstream(dir.path() + "/polaris.yaml") << "scheduler: pbs\n"
                                                 "template: mine.sh.mustache\n"
                                                 "launcher: mpiexec\n"
                                                 "launch: mpiexec -n ${NNODES}\n";
  std::ofstream(dir.path() + "/mine.sh.mustache") << "#!/bin/bash\n# mine {{job_id}}\n";
  SiteSearchPath path = MakeSiteSearchPath(dir.path(), "", "", {kTemplates});
  absl::StatusOr<SiteProfile> p = LoadSiteProfile("polaris", path);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->source_path, dir.path() + "/polaris.yaml");
  EXPECT_EQ(p->template_path, dir.path() + "/mine.sh.mustache");
  EXPECT_EQ(p->template_text, "#!/bin/bash\n# mine {{job_id}}\n");
  // A user profile without a template of its own uses the built-in one for its scheduler.
  std::ofstream(dir.path() + "/cluster9.yaml") << "scheduler: slurm\nlaunch: srun -N ${NNODES}\n";
  absl::StatusOr<SiteProfile> c = LoadSiteProfile("cluster9", path);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->template_path, kTemplates + "/slurm.sh.mustache");
  EXPECT_EQ(c->launcher, "srun");
  // Or names a template anywhere by absolute path.
  std::ofstream(dir.path() + "/abs.yaml")
      << "scheduler: local\ntemplate: " << dir.path() << "/mine.sh.mustache\n";
  absl::StatusOr<SiteProfile> a = LoadSiteProfile("abs", path);
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->template_path, dir.path() + "/mine.sh.mustache");
  // A template that is nowhere is reported with the places searched.
  std::ofstream(dir.path() + "/gone.yaml") << "scheduler: local\ntemplate: gone.mustache\n";
  absl::StatusOr<SiteProfile> g = LoadSiteProfile("gone", path);
  ASSERT_FALSE(g.ok());
  EXPECT_THAT(std::string(g.status().message()), HasSubstr("template 'gone.mustache' not found"));
}

TEST(SiteProfile, ProfileByPath) {
  absl::StatusOr<SiteProfile> p = LoadSiteProfile(kTemplates + "/sites/local.yaml", {});
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->name, "local");
}

TEST(SiteProfile, MissingProfileListsWhereItLookedAndWhatExists) {
  absl::StatusOr<SiteProfile> p = LoadSiteProfile("frontier", BuiltinOnly());
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(p.status().message()), HasSubstr(kTemplates + "/sites/frontier.yaml"));
  EXPECT_THAT(std::string(p.status().message()), HasSubstr("polaris"));
}

TEST(SiteProfile, ParseErrorsNameKeyAndPosition) {
  absl::StatusOr<SiteProfile> p = ParseSiteProfile(
      "scheduler: pbs\nlauncher: mpiexec\nlaunch: \"mpiexec $(id)\"\nmax_nodez: 3\n"
      "defaults: {walltime: forever}\n",
      "x", "x.yaml");
  ASSERT_FALSE(p.ok());
  std::string m(p.status().message());
  EXPECT_THAT(m, HasSubstr("x.yaml:3:"));
  EXPECT_THAT(m, HasSubstr("command substitution"));
  EXPECT_THAT(m, HasSubstr("x.yaml:4:1: unknown key 'max_nodez'"));
  EXPECT_THAT(m, HasSubstr("walltime"));
}

TEST(SiteProfile, LaunchLineMayNotQuoteOrChain) {
  for (const char* bad : {"mpiexec \"-n\" 2", "mpiexec; id", "mpiexec `id`", "a | b"}) {
    std::string yaml = std::string("scheduler: pbs\nlauncher: mpiexec\nlaunch: '") + bad + "'\n";
    EXPECT_FALSE(ParseSiteProfile(yaml, "x", "x.yaml").ok()) << bad;
  }
}

TEST(SiteSearchPath, Order) {
  SiteSearchPath p = MakeSiteSearchPath("/a:/b", "/home/u", "/opt/dl/bin/dlaunch",
                                        {"/src/templates", "/usr/share/dlaunch/templates"});
  EXPECT_THAT(p.site_dirs,
              ElementsAre("/a", "/b", "/home/u/.config/dlaunch/sites",
                          "/opt/dl/share/dlaunch/templates/sites", "/src/templates/sites",
                          "/usr/share/dlaunch/templates/sites"));
  EXPECT_THAT(p.template_dirs,
              ElementsAre("/a", "/b", "/home/u/.config/dlaunch/sites",
                          "/opt/dl/share/dlaunch/templates", "/src/templates",
                          "/usr/share/dlaunch/templates"));
}

TEST(DefaultSiteName, FromSpec) {
  EXPECT_EQ(DefaultSiteName("polaris", "pbs"), "polaris");
  EXPECT_EQ(DefaultSiteName("", "pbs"), "generic-pbs");
  EXPECT_EQ(DefaultSiteName("", "cobalt"), "thetagpu");
  EXPECT_EQ(DefaultSiteName("", "slurm"), "generic-slurm");
  EXPECT_EQ(DefaultSiteName("", ""), "local");
}

// Problems come one per line as FILE:LINE:COL, in file order like job.yaml's, and an unknown key
// in a section names the keys that section takes.
TEST(SiteProfile, ErrorsAreInFileOrderAndNameTheSectionsKeys) {
  absl::StatusOr<SiteProfile> p = ParseSiteProfile(
      "scheduler: lsf\nlauncher: mpiexec\nlaunch: mpiexec\n"
      "defaults: {queue: q, wallclock: 1h}\ncommands: [qsub]\n",
      "x", "x.yaml");
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(std::string(p.status().message()),
            "x.yaml:1:12: unknown scheduler 'lsf' (pbs, cobalt, slurm, local)\n"
            "x.yaml:4:22: unknown key 'wallclock' in defaults (account, filesystems, gpu_binding, "
            "gpu_model, gpus_per_node, queue, walltime)\n"
            "x.yaml:5:11: 'commands' must be a mapping (cancel, status, submit)");
}

// Site profiles read walltimes with the job spec's grammar (spec_scalars_test.cc has the forms);
// a limit or default of zero means nothing, so it is refused.
TEST(SiteProfile, WalltimesUseTheJobSpecGrammarAndMustBePositive) {
  const std::string head = "scheduler: pbs\nlauncher: mpiexec\nlaunch: mpiexec\n";
  absl::StatusOr<SiteProfile> p = ParseSiteProfile(
      head + "limits: {max_walltime: 2h}\ndefaults: {walltime: \"1-00:00:00\"}\n", "x", "x.yaml");
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->limits.max_walltime_s, 7200);
  EXPECT_EQ(p->default_walltime, "1-00:00:00");
  p = ParseSiteProfile(head + "limits: {max_walltime: \"0\"}\n", "x", "x.yaml");
  ASSERT_FALSE(p.ok());
  EXPECT_THAT(std::string(p.status().message()),
              HasSubstr("x.yaml:4:24: 'max_walltime' must be positive"));
}

TEST(SiteProfile, WhatAProfileMayCostIsBounded) {
  // The job file's bounds (launcher/spec/yaml_guard.h) hold for profiles too.
  std::string bomb = "a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n";
  for (int i = 1; i < 6; ++i) {
    bomb += "a" + std::to_string(i) + ": &a" + std::to_string(i) + " [";
    for (int k = 0; k < 10; ++k) bomb += (k ? ", *a" : "*a") + std::to_string(i - 1);
    bomb += "]\n";
  }
  absl::StatusOr<SiteProfile> p = ParseSiteProfile(bomb, "x", "x.yaml");
  EXPECT_EQ(p.status().message(),
            "x.yaml:5:55: the document holds more than 100000 values once its aliases are "
            "expanded");
  p = ParseSiteProfile("scheduler: pbs\n" + std::string(300 << 10, '#'), "x", "x.yaml");
  EXPECT_EQ(p.status().message(),
            "x.yaml: 307215 bytes is more than the 262144 bytes (256 KiB) a site profile may hold");
  p = ParseSiteProfile("scheduler: pbs\n---\nscheduler: slurm\n", "x", "x.yaml");
  EXPECT_EQ(p.status().message(),
            "x.yaml:2:1: a site profile holds one YAML document, found a second one here");
}

}  // namespace
}  // namespace dlaunch
