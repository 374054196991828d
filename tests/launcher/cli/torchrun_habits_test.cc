// `dlaunch run` taken as torchrun is: a script (or program) with its own arguments after it,
// torchrun's flags where they mean something here and a one-line refusal where they do not,
// and durations written as job.yaml writes them.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "launcher/cli/run_flags.h"
#include "launcher/cli/run_target.h"
#include "tests/testing/test_files.h"

namespace dlaunch {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;

class TorchrunHabitsTest : public ::testing::Test {
 protected:
  std::string File(const std::string& name, const std::string& text, int mode = 0644) {
    const std::string path = dir_.path() + "/" + name;
    WriteFile(path, text, mode);
    return path;
  }

  ScratchDir dir_{"dlaunch-torchrun"};
};

TEST_F(TorchrunHabitsTest, AScriptIsTheCommandAndKeepsItsArguments) {
  // What `dlaunch run --nproc-per-node 2 train.py` used to read as a job.yaml.
  const std::string script = File("train.py", "import torch\nx = {'a': 1}\nprint(x)\n");
  auto f = ParseRunFlags({"--nproc-per-node", "2", script, "--epochs", "3", "--nnodes", "x", "--"},
                         "");
  ASSERT_TRUE(f.ok()) << f.status();
  EXPECT_EQ(f->spec_path, "");
  EXPECT_EQ(f->nproc_per_node, 2);
  EXPECT_EQ(f->nnodes, "");  // the script's --nnodes, not ours
  EXPECT_THAT(f->command, ElementsAre("python3", script, "--epochs", "3", "--nnodes", "x", "--"));
  auto spec = BuildRunSpec(*f);
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->nproc_per_node, 2);
  EXPECT_THAT(spec->command, ElementsAre("python3", script, "--epochs", "3", "--nnodes", "x", "--"));
}

TEST_F(TorchrunHabitsTest, ExecutablesAndProgramsOnPathRunAsTheyAre) {
  const std::string tool = File("train.sh", "#!/bin/sh\nexit 0\n", 0755);
  auto f = ParseRunFlags({tool, "-c", "1"}, "");
  ASSERT_TRUE(f.ok()) << f.status();
  EXPECT_THAT(f->command, ElementsAre(tool, "-c", "1"));

  File("mytool", "#!/bin/sh\n", 0755);
  auto on_path = ParseRunFlags({"--nnodes", "2", "mytool", "--port", "9"}, dir_.path());
  ASSERT_TRUE(on_path.ok()) << on_path.status();
  EXPECT_EQ(on_path->nnodes, "2");
  EXPECT_EQ(on_path->port, -1);
  EXPECT_THAT(on_path->command, ElementsAre("mytool", "--port", "9"));
}

TEST_F(TorchrunHabitsTest, NoPythonAndModuleAsTorchrunHasThem) {
  const std::string script = File("train.py", "print(1)\n");
  auto direct = ParseRunFlags({"--no-python", script, "a"}, "");
  ASSERT_TRUE(direct.ok()) << direct.status();
  EXPECT_THAT(direct->command, ElementsAre(script, "a"));
  auto module = ParseRunFlags({"-m", "pkg.train", "--lr", "0.1"}, "");
  ASSERT_TRUE(module.ok()) << module.status();
  EXPECT_THAT(module->command, ElementsAre("python3", "-m", "pkg.train", "--lr", "0.1"));
  auto no_module = ParseRunFlags({"-m"}, "");
  ASSERT_FALSE(no_module.ok());
  EXPECT_THAT(no_module.status().message(), HasSubstr("-m: give the module"));
}

TEST_F(TorchrunHabitsTest, AJobSpecIsFoundByNameOrByContent) {
  EXPECT_EQ(*ClassifyRunTarget("missing.yaml", ""), RunTargetKind::kJobSpec);
  EXPECT_EQ(*ClassifyRunTarget("missing.yml", ""), RunTargetKind::kJobSpec);
  const std::string conf = File("job.conf", "name: x\ncommand: [\"true\"]\n");
  EXPECT_EQ(*ClassifyRunTarget(conf, ""), RunTargetKind::kJobSpec);
  // Flags after a job.yaml are still dlaunch's.
  auto f = ParseRunFlags({conf, "--nnodes", "2"}, "");
  ASSERT_TRUE(f.ok()) << f.status();
  EXPECT_EQ(f->spec_path, conf);
  EXPECT_EQ(f->nnodes, "2");
  EXPECT_TRUE(f->command.empty());
}

TEST_F(TorchrunHabitsTest, WhatCannotBeTellsTheFormToUseInOneLine) {
  const std::string plain = File("train", "import torch\nprint(1)\n");
  struct Case {
    std::string target;
    std::string message;
  } cases[] = {
      {plain, "-- python3 " + plain},
      {dir_.path() + "/absent.py", "no such Python script"},
      {"no-such-program-anywhere", "no such file, and no program of that name on PATH"},
      {dir_.path(), "is a directory"},
  };
  for (const Case& c : cases) {
    auto f = ParseRunFlags({"--nproc-per-node", "2", c.target, "--epochs", "1"}, dir_.path());
    ASSERT_FALSE(f.ok()) << c.target;
    EXPECT_EQ(f.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(f.status().message(), HasSubstr(c.message));
    EXPECT_THAT(f.status().message(), Not(HasSubstr("\n")));
  }
}

TEST_F(TorchrunHabitsTest, AScriptsHelpIsTheScripts) {
  EXPECT_FALSE(WantsRunHelp({"--nproc-per-node", "2", "train.py", "--help"}));
  EXPECT_TRUE(WantsRunHelp({"job.yaml", "--nnodes", "2", "--help"}));
  EXPECT_TRUE(WantsRunHelp({"--name", "x", "-h"}));
}

TEST_F(TorchrunHabitsTest, DurationsAreWrittenAsInJobYaml) {
  auto f = ParseRunFlags({"--stall-timeout", "20s", "--join-timeout=1h30m", "--grace", "250ms",
                          "--heartbeat", "0.5", "--exit-timeout", "5m", "--", "t"},
                         "");
  ASSERT_TRUE(f.ok()) << f.status();
  auto spec = BuildRunSpec(*f);
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->stall_timeout_s, 20);
  EXPECT_TRUE(spec->stall_detection);
  EXPECT_EQ(spec->join_timeout_s, 5400);
  EXPECT_EQ(spec->stop_grace_s, 0.25);
  EXPECT_EQ(spec->heartbeat_interval_s, 0.5);
  EXPECT_EQ(spec->exit_timeout_s, 300);

  // The words job.yaml has for these keys too.
  auto words = ParseRunFlags({"--stall-timeout", "off", "--exit-timeout", "off", "--", "t"}, "");
  ASSERT_TRUE(words.ok()) << words.status();
  spec = BuildRunSpec(*words);
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_FALSE(spec->stall_detection);
  EXPECT_EQ(spec->exit_timeout_s, 0);
  auto adaptive = ParseRunFlags({"--stall-timeout", "auto", "--", "t"}, "");
  ASSERT_TRUE(adaptive.ok()) << adaptive.status();
  spec = BuildRunSpec(*adaptive);
  EXPECT_TRUE(spec->stall_detection);
  EXPECT_EQ(spec->stall_timeout_s, 0);

  auto bad = ParseRunFlags({"--stall-timeout", "20 sec", "--", "t"}, "");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(),
            "--stall-timeout: expected a duration (seconds, or e.g. 20s, 5m, 1h30m), got '20 sec'");
  EXPECT_FALSE(ParseRunFlags({"--grace", "-1s", "--", "t"}, "").ok());
  EXPECT_FALSE(ParseRunFlags({"--exit-timeout", "auto", "--", "t"}, "").ok());
}

TEST_F(TorchrunHabitsTest, TorchrunFlagsMapOntoTheSpec) {
  auto f = ParseRunFlags({"--nnodes=1:4", "--master_port=29501", "--rdzv-backend", "c10d",
                          "--rdzv_endpoint=node7:29400", "--rdzv-id", "job42",
                          "--rdzv-conf", "join_timeout=60,last_call_timeout=5s",
                          "--max_restarts=2", "--", "t"},
                         "");
  ASSERT_TRUE(f.ok()) << f.status();
  EXPECT_EQ(f->control_addr, "node7");
  EXPECT_EQ(f->port, 29400);
  EXPECT_FALSE(f->standalone);
  auto spec = BuildRunSpec(*f);
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->min_nodes, 1);
  EXPECT_EQ(spec->max_nodes, 4);
  EXPECT_EQ(spec->master_port, 29501);
  EXPECT_EQ(spec->control_port, 29400);
  EXPECT_EQ(spec->name, "job42");
  EXPECT_EQ(spec->join_timeout_s, 60);
  EXPECT_EQ(spec->last_call_s, 5);
  EXPECT_EQ(spec->max_restarts, 2);
  EXPECT_EQ(spec->node_launcher, "auto");
}

TEST_F(TorchrunHabitsTest, StandaloneAndLoopbackAddressesMeanThisMachine) {
  for (std::vector<std::string> args :
       {std::vector<std::string>{"--standalone"}, {"--master_addr=localhost"},
        {"--master-addr", "127.0.0.1"}, {"--rdzv-endpoint", "localhost:29400"}}) {
    args.insert(args.end(), {"--nproc-per-node", "2", "--", "t"});
    auto f = ParseRunFlags(args, "");
    ASSERT_TRUE(f.ok()) << args[0] << ": " << f.status();
    EXPECT_TRUE(f->standalone) << args[0];
    EXPECT_EQ(f->control_addr, "") << args[0];
    auto spec = BuildRunSpec(*f);
    ASSERT_TRUE(spec.ok()) << spec.status();
    EXPECT_EQ(spec->node_launcher, "local") << args[0];
  }
  auto with_hosts = ParseRunFlags({"--standalone", "--hosts", "a,b", "--", "t"}, "");
  ASSERT_TRUE(with_hosts.ok());
  auto spec = BuildRunSpec(*with_hosts);
  ASSERT_FALSE(spec.ok());
  EXPECT_THAT(spec.status().message(), HasSubstr("runs every node on this machine"));
}

TEST_F(TorchrunHabitsTest, TorchrunFlagsWithoutMeaningAreRefusedInOneLine) {
  struct Case {
    std::vector<std::string> args;
    std::string message;
  } cases[] = {
      {{"--node-rank", "0"}, "--node-rank has no meaning in dlaunch: run dlaunch once"},
      {{"--node_rank=1"}, "--node-rank has no meaning in dlaunch"},
      {{"--master-addr", "10.0.0.1"}, "--master-addr 10.0.0.1 has no meaning in dlaunch"},
      {{"--rdzv-backend", "etcd"}, "--rdzv-backend etcd has no meaning in dlaunch"},
      {{"--rdzv-conf", "read_timeout=5"}, "'read_timeout' has no meaning in dlaunch"},
      {{"--monitor-interval", "1"}, "--monitor-interval has no meaning in dlaunch"},
      {{"--start_method", "spawn"}, "--start-method has no meaning in dlaunch"},
      {{"--log-dir", "logs"}, "--log-dir has no meaning in dlaunch"},
      {{"--tee", "3"}, "--tee has no meaning in dlaunch: every rank's output is logged"},
      {{"--logs_specs", "x"}, "--logs-specs has no meaning in dlaunch"},
      {{"--local-ranks-filter", "0"}, "--show-ranks"},
      {{"--run-path"}, "--run-path has no meaning in dlaunch"},
      {{"--rdzv-endpoint", ":29400"}, "--rdzv-endpoint: expected HOST or HOST:PORT"},
  };
  for (Case& c : cases) {
    c.args.insert(c.args.end(), {"--", "t"});
    auto f = ParseRunFlags(c.args, "");
    ASSERT_FALSE(f.ok()) << c.message;
    EXPECT_EQ(f.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(f.status().message(), HasSubstr(c.message));
    EXPECT_THAT(f.status().message(), Not(HasSubstr("\n")));
  }
}

}  // namespace
}  // namespace dlaunch
