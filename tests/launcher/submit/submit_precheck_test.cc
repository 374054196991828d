// Pre-submit checks against a table-driven file system: every problem is listed at once.
#include "launcher/submit/submit_precheck.h"

#include <set>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "launcher/submit/site_profile.h"

namespace dlaunch {
namespace {

using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::SizeIs;

SiteProfile Profile(const std::string& name) {
  absl::StatusOr<SiteProfile> p = LoadSiteProfile(
      name, MakeSiteSearchPath("", "", "", {std::string(DLAUNCH_SOURCE_DIR) + "/templates"}));
  EXPECT_TRUE(p.ok()) << p.status();
  return *p;
}

// Files that exist, and the subset that is executable.
FileLookup Files(std::set<std::string> existing, std::set<std::string> executable) {
  FileLookup f;
  f.exists = [existing, executable](const std::string& p) {
    return existing.count(p) > 0 || executable.count(p) > 0;
  };
  f.is_executable = [executable](const std::string& p) { return executable.count(p) > 0; };
  return f;
}

JobSpec GoodPolarisJob() {
  JobSpec spec;
  spec.name = "fmnist";
  spec.min_nodes = spec.max_nodes = 2;
  spec.command = {"python3", "train.py"};
  spec.scheduler.account = "MyProject";
  spec.scheduler.queue = "debug";
  spec.scheduler.walltime = "0:30:00";
  return spec;
}

const FileLookup kPythonAndScript =
    Files({"/home/u/proj/train.py"}, {"/usr/bin/python3"});

TEST(PrecheckSubmit, GoodJobPasses) {
  PrecheckReport r = PrecheckSubmit(GoodPolarisJob(), Profile("polaris"), "/home/u/proj",
                                    "/usr/local/bin:/usr/bin", kPythonAndScript);
  EXPECT_THAT(r.errors, IsEmpty());
  EXPECT_TRUE(r.ok());
}

TEST(PrecheckSubmit, ListsEveryProblem) {
  JobSpec spec = GoodPolarisJob();
  spec.command = {"trainer"};
  spec.max_nodes = 4;                    // debug allows 2
  spec.scheduler.walltime = "02:00:00";  // debug allows 1 h
  spec.scheduler.account.clear();
  SiteProfile polaris = Profile("polaris");
  polaris.setup.clear();  // nothing that could put `trainer` on PATH
  PrecheckReport r = PrecheckSubmit(spec, polaris, "/home/u/proj", "/usr/bin", kPythonAndScript);
  ASSERT_THAT(r.errors, SizeIs(4)) << ::testing::PrintToString(r.errors);
  EXPECT_THAT(r.errors[0], HasSubstr("'trainer' is not on PATH"));
  EXPECT_THAT(r.errors[1], HasSubstr("nodes: 4 requested, queue debug on polaris allows at most 2"));
  EXPECT_THAT(r.errors[2], HasSubstr("2:00:00 requested, queue debug on polaris allows at most 1:00:00"));
  EXPECT_THAT(r.errors[3], HasSubstr("scheduler.account: site polaris requires"));
}

TEST(PrecheckSubmit, SiteWideLimits) {
  JobSpec spec = GoodPolarisJob();
  spec.scheduler.queue = "prod";
  spec.min_nodes = spec.max_nodes = 1000;
  spec.scheduler.walltime = "48:00:00";
  PrecheckReport r =
      PrecheckSubmit(spec, Profile("polaris"), "/home/u/proj", "/usr/bin", kPythonAndScript);
  EXPECT_THAT(r.errors, ::testing::Contains(HasSubstr("site polaris allows at most 560")));
  EXPECT_THAT(r.errors, ::testing::Contains(HasSubstr("site polaris allows at most 24:00:00")));
  // prod's own minimum: too few nodes is also an error.
  spec.min_nodes = spec.max_nodes = 2;
  spec.scheduler.walltime = "1:00:00";
  r = PrecheckSubmit(spec, Profile("polaris"), "/home/u/proj", "/usr/bin", kPythonAndScript);
  EXPECT_THAT(r.errors, ElementsAre(HasSubstr("queue prod on polaris needs at least 10")));
}

TEST(PrecheckSubmit, RelativeProgramResolvesAgainstWorkdir) {
  JobSpec spec = GoodPolarisJob();
  spec.command = {"./bin/train"};
  spec.workdir = "exp1";
  FileLookup files = Files({"/home/u/proj/exp1/bin/readme"}, {"/home/u/proj/exp1/bin/train"});
  EXPECT_TRUE(PrecheckSubmit(spec, Profile("polaris"), "/home/u/proj", "", files).ok());
  spec.command = {"./bin/readme"};
  PrecheckReport r = PrecheckSubmit(spec, Profile("polaris"), "/home/u/proj", "", files);
  EXPECT_THAT(r.errors, ElementsAre(HasSubstr("/home/u/proj/exp1/bin/readme' is not executable")));
  spec.command = {"./bin/missing"};
  r = PrecheckSubmit(spec, Profile("polaris"), "/home/u/proj", "", files);
  EXPECT_THAT(r.errors, ElementsAre(HasSubstr("does not exist")));
}

TEST(PrecheckSubmit, MissingScriptForInterpreter) {
  JobSpec spec = GoodPolarisJob();
  spec.command = {"python3", "trian.py"};
  PrecheckReport r = PrecheckSubmit(spec, Profile("polaris"), "/home/u/proj", "/usr/bin",
                                    kPythonAndScript);
  EXPECT_THAT(r.errors, ElementsAre(HasSubstr("script 'trian.py' does not exist")));
}

TEST(PrecheckSubmit, ModulesMakeAnUnfoundProgramAWarning) {
  JobSpec spec = GoodPolarisJob();
  spec.command = {"torchrun-like"};
  spec.scheduler.modules = {"conda"};
  PrecheckReport r =
      PrecheckSubmit(spec, Profile("polaris"), "/home/u/proj", "/usr/bin", kPythonAndScript);
  EXPECT_TRUE(r.ok()) << ::testing::PrintToString(r.errors);
  EXPECT_THAT(r.warnings, ElementsAre(HasSubstr("assuming the job's modules or setup")));
}

// nproc_per_node: gpu on a site whose directives ask for GPUs, with no count anywhere: the job
// would ask for none, so the user hears of it before the queue.
TEST(PrecheckSubmit, GpuJobWithoutAGpuCountIsWarned) {
  JobSpec spec = GoodPolarisJob();
  spec.scheduler.account.clear();
  spec.scheduler.queue = "gpu";
  spec.nproc_per_node = 0;  // gpu
  PrecheckReport r = PrecheckSubmit(spec, Profile("generic-slurm"), "/home/u/proj", "/usr/bin",
                                    kPythonAndScript);
  EXPECT_TRUE(r.ok()) << ::testing::PrintToString(r.errors);
  EXPECT_THAT(r.warnings, ElementsAre(AllOf(HasSubstr("nproc_per_node: gpu"),
                                            HasSubstr("gpus.per_node"),
                                            HasSubstr("site generic-slurm"))));
  spec.gpus_per_node = 4;
  r = PrecheckSubmit(spec, Profile("generic-slurm"), "/home/u/proj", "/usr/bin", kPythonAndScript);
  EXPECT_THAT(r.warnings, IsEmpty());
  spec.gpus_per_node = 0;
  spec.nproc_per_node = 2;  // a CPU job asks for no GPU on purpose
  r = PrecheckSubmit(spec, Profile("generic-slurm"), "/home/u/proj", "/usr/bin", kPythonAndScript);
  EXPECT_THAT(r.warnings, IsEmpty());
}

// Polaris' python_setup loads the conda module, which puts python on PATH in the job.
TEST(PrecheckSubmit, PythonSetupMakesAnUnfoundPythonAWarning) {
  JobSpec spec = GoodPolarisJob();
  PrecheckReport r =
      PrecheckSubmit(spec, Profile("polaris"), "/home/u/proj", "/opt/none", kPythonAndScript);
  EXPECT_TRUE(r.ok()) << ::testing::PrintToString(r.errors);
  SiteProfile off = Profile("polaris");
  off.python_setup.clear();
  off.setup.clear();
  r = PrecheckSubmit(spec, off, "/home/u/proj", "/opt/none", kPythonAndScript);
  EXPECT_THAT(r.errors, ElementsAre(HasSubstr("'python3' is not on PATH")));
}

TEST(PrecheckSubmit, EmptyCommandAndBadWalltimeAndMissingQueue) {
  JobSpec spec = GoodPolarisJob();
  spec.command.clear();
  spec.scheduler.walltime = "half an hour";
  PrecheckReport r = PrecheckSubmit(spec, Profile("polaris"), "/p", "/usr/bin", kPythonAndScript);
  EXPECT_THAT(r.errors, ElementsAre(HasSubstr("no worker program"),
                                    HasSubstr("scheduler.walltime")));
  SiteProfile strict = Profile("generic-slurm");
  strict.requires_queue = true;
  spec = GoodPolarisJob();
  spec.scheduler.queue.clear();
  r = PrecheckSubmit(spec, strict, "/home/u/proj", "/usr/bin", kPythonAndScript);
  EXPECT_THAT(r.errors, ElementsAre(HasSubstr("scheduler.queue: site generic-slurm requires")));
}

TEST(PrecheckSubmit, ProfileDefaultsSatisfyRequirements) {
  JobSpec spec = GoodPolarisJob();
  spec.scheduler.queue.clear();  // polaris defaults to debug
  spec.scheduler.walltime.clear();
  EXPECT_TRUE(PrecheckSubmit(spec, Profile("polaris"), "/home/u/proj", "/usr/bin",
                             kPythonAndScript).ok());
}

}  // namespace
}  // namespace dlaunch
