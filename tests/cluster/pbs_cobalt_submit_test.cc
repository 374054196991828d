// The PBS (Polaris) and Cobalt (ThetaGPU) batch scripts that `dlaunch submit` renders, run for
// real: neither scheduler can be installed here, so the test plays the scheduler's part --
// qsub only records the script, which then runs on the first host of a 3-host allocation with
// the scheduler's environment (nodefile, job id, submit directory) and a real MPI launcher
// (MPICH hydra standing in for PALS mpiexec; Open MPI mpirun as on ThetaGPU) that reaches the
// other hosts through the cluster's ssh replacement.
#include <stdlib.h>
#include <sys/stat.h>

#include <memory>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "cluster_job_checks.h"
#include "gtest/gtest.h"
#include "netns_cluster.h"

namespace dlaunch {
namespace testing {
namespace {

constexpr int kNodes = 3;
constexpr int kProcsPerNode = 2;

class BatchScriptTest : public DlaunchClusterTest {
 protected:
  BatchScriptTest() : DlaunchClusterTest(kNodes) {}

  void SetUp() override {
    DlaunchClusterTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    submit_dir_ = MakeDir("submit");
    tools_dir_ = MakeDir("site-bin");
    nodefile_ = cluster_->dir() + "/nodefile";
    std::string nodes;
    for (const std::string& h : cluster_->hosts()) nodes += h + "\n";
    WriteFileOrDie(nodefile_, nodes);
  }

  // `dlaunch submit` on the login host with a qsub that records the script and answers with
  // `scheduler_job_id`; returns the script's path.
  std::string SubmitWithRecordingQsub(const std::string& job_yaml,
                                      const std::string& scheduler_job_id) {
    WriteFileOrDie(submit_dir_ + "/job.yaml", job_yaml);
    const std::string record = cluster_->dir() + "/qsub.args";
    const std::string qsub = tools_dir_ + "/qsub";
    WriteFileOrDie(qsub,
                   absl::StrCat("#!/bin/sh\nfor a; do echo \"$a\"; done > ", record, "\necho ",
                                scheduler_job_id, "\n"),
                   0755);
    RunResult submit = cluster_->RunOn(
        "head", absl::StrCat("cd ", submit_dir_, " && ", DlaunchPath(), " submit job.yaml"),
        absl::Seconds(60), {{"DLAUNCH_JOB_ROOT", job_root_}, {"DLAUNCH_QSUB", qsub}});
    EXPECT_EQ(submit.exit_code, 0) << "dlaunch submit:\n" << submit.output;
    // The script is the argument of qsub that names a file.
    std::string script;
    for (absl::string_view arg :
         absl::StrSplit(ReadFileOrEmpty(record), '\n', absl::SkipEmpty())) {
      struct stat st;
      if (stat(std::string(arg).c_str(), &st) == 0 && S_ISREG(st.st_mode)) script = std::string(arg);
    }
    EXPECT_FALSE(script.empty()) << "qsub was not given a script; it got:\n"
                                 << ReadFileOrEmpty(record) << "dlaunch submit said:\n"
                                 << submit.output;
    return script;
  }

  // Runs the batch script on the first host, as the scheduler would, with `env` added.
  RunResult RunScriptOnFirstHost(const std::string& script, EnvOverrides env) {
    const char* path = getenv("PATH");
    env["PATH"] = absl::StrCat(tools_dir_, ":", DLAUNCH_BIN_DIR, ":", path ? path : "/usr/bin:/bin");
    return cluster_->RunOn(cluster_->hosts()[0], "exec /bin/bash " + script, absl::Seconds(150),
                           env);
  }

  // A Polaris job (PBS, mpiexec) with `rendezvous_yaml` added under its `rendezvous:`, run as
  // the scheduler would run its script.
  RunResult RunPolarisScript(const std::string& rendezvous_yaml) {
    std::string yaml = BarrierJobYaml("cluster-pbs", kNodes, kProcsPerNode, {},
                                      "scheduler:\n  type: pbs\n  site: polaris\n  account: TestProj\n"
                                      "  queue: debug-scaling\n  walltime: \"0:10:00\"\n");
    const std::string rendezvous = "rendezvous:\n";
    yaml.insert(yaml.find(rendezvous) + rendezvous.size(), rendezvous_yaml);
    std::string script = SubmitWithRecordingQsub(yaml, "4242.polaris-pbs-01.hsn.cm.polaris.alcf.anl.gov");
    EXPECT_FALSE(script.empty());
    if (script.empty()) return RunResult{};
    // The site's set-up for a Python worker (ALCF's conda PyTorch): Lmod's `module` and conda
    // are not on these hosts; stand-ins record what the script asked of them.
    for (const char* tool : {"module", "conda"}) {
      WriteFileOrDie(absl::StrCat(tools_dir_, "/", tool),
                     absl::StrCat("#!/bin/sh\necho \"", tool, " $*\" >> ", tools_dir_, "/site-setup.log\n"),
                     0755);
    }
    // PALS's `mpiexec -n N --ppn 1 --hostfile F` is spelled the same by MPICH's hydra, but for
    // "no binding": PALS' `--cpu-bind none` is hydra's `-bind-to none`.
    WriteFileOrDie(tools_dir_ + "/mpiexec",
                   absl::StrCat("#!/bin/sh\n"
                                "for a; do shift; if [ \"$a\" = --cpu-bind ]; then a=-bind-to; fi; "
                                "set -- \"$@\" \"$a\"; done\n"
                                "exec /usr/bin/mpiexec.hydra -launcher ssh "
                                "-launcher-exec ", cluster_->RshPath(), " \"$@\"\n"),
                   0755);
    return RunScriptOnFirstHost(
        script, {{"PBS_NODEFILE", nodefile_},
                 {"PBS_JOBID", "4242.polaris-pbs-01.hsn.cm.polaris.alcf.anl.gov"},
                 {"PBS_JOBNAME", "cluster-pbs"},
                 {"PBS_O_WORKDIR", submit_dir_}});
  }

  void ExpectJobRanAcrossHosts(const RunResult& run) {
    EXPECT_TRUE(run.ok()) << "batch script exit " << run.exit_code
                          << (run.timed_out ? " (timed out)" : "") << ":\n" << run.output;
    std::string job_dir = OnlyJobDir(job_root_);
    ASSERT_FALSE(job_dir.empty()) << "expected exactly one job directory in " << job_root_;
    ExpectBarrierJobSucceeded(job_dir, kNodes, kProcsPerNode, cluster_->hosts());
    std::string job_id = job_dir.substr(job_dir.rfind('/') + 1);
    std::vector<std::string> left = WaitNoJobProcesses(*cluster_, job_id, absl::Seconds(15));
    EXPECT_TRUE(left.empty()) << "processes of job " << job_id << " left after it ended:\n"
                              << absl::StrJoin(left, "\n");
  }

  std::string submit_dir_, tools_dir_, nodefile_;
};

TEST_F(BatchScriptTest, PolarisPbsScriptRunsAcrossHostsWithMpiexec) {
  ExpectJobRanAcrossHosts(RunPolarisScript(""));
  // The worker is Python: the script set up ALCF's PyTorch first.
  EXPECT_EQ(ReadFileOrEmpty(tools_dir_ + "/site-setup.log"),
            "module use /soft/modulefiles\nmodule load conda\nconda activate\n");
}

// The same with two relays on the first host: under mpiexec every agent gets both addresses and
// takes the one its PMI_RANK picks (docs/relays.md).
TEST_F(BatchScriptTest, PolarisPbsScriptRunsAcrossHostsThroughRelays) {
  RunResult run = RunPolarisScript("  relay_fanout: 2\n");
  ExpectJobRanAcrossHosts(run);
  const std::string job_dir = OnlyJobDir(job_root_);
  int sessions = 0;
  for (int i = 0; i < 2; ++i) {
    const std::string log = ReadFileOrEmpty(absl::StrCat(job_dir, "/relays/relay-", i, ".log"));
    for (int n = 1; n <= kNodes; ++n) {
      if (absl::StrContains(log, absl::StrCat(" ", n, " agent session(s)"))) sessions += n;
    }
    EXPECT_FALSE(absl::StrContains(log, " 0 agent session(s)")) << "relay " << i << ": " << log;
  }
  EXPECT_EQ(sessions, kNodes) << run.output;
}

TEST_F(BatchScriptTest, ThetaGpuCobaltScriptRunsAcrossHostsWithOpenMpi) {
  std::string script = SubmitWithRecordingQsub(
      BarrierJobYaml("cluster-cobalt", kNodes, kProcsPerNode, {},
                     "scheduler:\n  type: cobalt\n  site: thetagpu\n  account: TestProj\n"
                     "  queue: full-node\n  walltime: \"0:10:00\"\n"),
      "4243");
  ASSERT_FALSE(script.empty());
  WriteFileOrDie(tools_dir_ + "/mpirun", "#!/bin/sh\nexec /usr/bin/mpirun.openmpi \"$@\"\n",
                 0755);
  RunResult run = RunScriptOnFirstHost(
      script, {{"COBALT_NODEFILE", nodefile_},
               {"COBALT_JOBID", "4243"},
               {"COBALT_JOBSIZE", std::to_string(kNodes)},
               {"OMPI_MCA_plm_rsh_agent", cluster_->RshPath()},
               {"OMPI_ALLOW_RUN_AS_ROOT", "1"},
               {"OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1"}});
  ExpectJobRanAcrossHosts(run);
}

}  // namespace
}  // namespace testing
}  // namespace dlaunch
