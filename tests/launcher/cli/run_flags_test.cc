#include "launcher/cli/run_flags.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace dlaunch {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(RunFlagsTest, ParsesEveryFlagInBothForms) {
  auto f = ParseRunFlags({"job.yaml", "--hosts", "n[1-2]", "--nnodes=1:2", "--nproc_per_node", "4",
                          "--launcher", "ssh", "--launcher-cmd", "mpiexec -n 2", "--job-dir", "d",
                          "--job-root", "r", "--name", "x", "--control-addr", "10.0.0.1",
                          "--port", "4000", "--show-ranks", "0,3", "--grace", "1.5",
                          "--heartbeat=0.5", "--join-timeout", "20", "--max-restarts", "3",
                          "--spares=1"});
  ASSERT_TRUE(f.ok()) << f.status();
  EXPECT_EQ(f->spec_path, "job.yaml");
  EXPECT_THAT(f->hosts, ElementsAre("n1", "n2"));
  EXPECT_EQ(f->nnodes, "1:2");
  EXPECT_EQ(f->nproc_per_node, 4);
  EXPECT_EQ(f->launcher, "ssh");
  EXPECT_EQ(f->launcher_cmd, "mpiexec -n 2");
  EXPECT_EQ(f->job_dir, "d");
  EXPECT_EQ(f->job_root, "r");
  EXPECT_EQ(f->name, "x");
  EXPECT_EQ(f->control_addr, "10.0.0.1");
  EXPECT_EQ(f->port, 4000);
  EXPECT_EQ(f->show_ranks, "0,3");
  EXPECT_EQ(f->grace_s, 1.5);
  EXPECT_EQ(f->heartbeat_s, 0.5);
  EXPECT_EQ(f->join_timeout_s, 20);
  EXPECT_EQ(f->max_restarts, 3);
  EXPECT_EQ(f->spares, 1);
  EXPECT_TRUE(f->command.empty());
}

TEST(RunFlagsTest, CommandAfterDashesKeepsItsOwnFlags) {
  auto f = ParseRunFlags({"--nproc-per-node", "gpu", "--", "python", "train.py", "--port", "x"});
  ASSERT_TRUE(f.ok()) << f.status();
  EXPECT_EQ(f->nproc_per_node, 0);
  EXPECT_THAT(f->command, ElementsAre("python", "train.py", "--port", "x"));
}

TEST(RunFlagsTest, BadValuesNameTheFlag) {
  struct Case {
    std::vector<std::string> args;
    std::string message;
  } cases[] = {
      {{"--nproc-per-node", "0", "--", "t"}, "--nproc-per-node: expected a positive integer or 'gpu', got '0'"},
      {{"--port", "70000", "--", "t"}, "--port: expected 0..65535, got '70000'"},
      {{"--grace", "-1", "--", "t"}, "--grace: expected a duration (seconds, or e.g. 20s, 5m, 1h30m), got '-1'"},
      {{"--heartbeat", "x", "--", "t"}, "--heartbeat: expected a duration (seconds, or e.g. 20s, 5m, 1h30m), got 'x'"},
      {{"--hosts", "n[2-1]", "--", "t"}, "--hosts: "},
      {{"--grace"}, "--grace needs a value"},
      {{"--max-restarts", "-1", "--", "t"}, "--max-restarts: not a non-negative integer: '-1'"},
      {{"--max-restart", "1", "--", "t"}, "unknown flag --max-restart (did you mean --max-restarts?)"},
      {{"--nnode", "2", "--", "t"}, "unknown flag --nnode (did you mean --nnodes?)"},
      {{"a.yaml", "b.yaml"}, "unexpected argument 'b.yaml' (put the worker command after `--`)"},
      {{}, "give a job.yaml, a script (train.py) or a command after `--`"},
  };
  for (const Case& c : cases) {
    auto f = ParseRunFlags(c.args);
    ASSERT_FALSE(f.ok()) << c.message;
    EXPECT_EQ(f.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(f.status().message(), HasSubstr(c.message));
  }
}

TEST(RunFlagsTest, RelayFanoutTakesACountOrAuto) {
  auto counted = ParseRunFlags({"--relay-fanout", "64", "--", "t"});
  ASSERT_TRUE(counted.ok()) << counted.status();
  EXPECT_EQ(counted->relay_fanout, 64);
  EXPECT_FALSE(counted->relay_fanout_auto);
  auto automatic = ParseRunFlags({"--relay-fanout=auto", "--", "t"});
  ASSERT_TRUE(automatic.ok()) << automatic.status();
  EXPECT_TRUE(automatic->relay_fanout_auto);
  auto spec = BuildRunSpec(*automatic);
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_TRUE(spec->relay_fanout_auto);
  // The last one given wins, as for every flag.
  auto then_count = ParseRunFlags({"--relay-fanout", "auto", "--relay-fanout", "64", "--", "t"});
  ASSERT_TRUE(then_count.ok()) << then_count.status();
  EXPECT_FALSE(BuildRunSpec(*then_count)->relay_fanout_auto);
  EXPECT_EQ(BuildRunSpec(*then_count)->relay_fanout, 64);
  auto then_auto = ParseRunFlags({"--relay-fanout", "64", "--relay-fanout", "auto", "--", "t"});
  ASSERT_TRUE(then_auto.ok()) << then_auto.status();
  EXPECT_TRUE(BuildRunSpec(*then_auto)->relay_fanout_auto);
  auto bad = ParseRunFlags({"--relay-fanout", "some", "--", "t"});
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.status().message(), HasSubstr("--relay-fanout: not a non-negative integer: 'some'"));
}

TEST(RunFlagsTest, HelpIsOnlyLookedForBeforeTheCommand) {
  EXPECT_TRUE(WantsRunHelp({"--nnodes", "2", "--help"}));
  EXPECT_TRUE(WantsRunHelp({"-h"}));
  EXPECT_FALSE(WantsRunHelp({"--", "train", "--help"}));
}

TEST(RunFlagsTest, FlagsOverrideTheSpec) {
  RunFlags f;
  f.command = {"/bin/true"};
  f.nnodes = "2:4";
  f.nproc_per_node = 3;
  f.grace_s = 0;
  f.heartbeat_s = 0.5;
  f.join_timeout_s = 9;
  f.port = 0;
  f.show_ranks = "0,2";
  f.max_restarts = 2;
  f.spares = 1;
  auto spec = BuildRunSpec(f);
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->min_nodes, 2);
  EXPECT_EQ(spec->max_nodes, 4);
  EXPECT_FALSE(spec->nodes_auto);
  EXPECT_EQ(spec->nproc_per_node, 3);
  EXPECT_EQ(spec->stop_grace_s, 0);
  EXPECT_EQ(spec->heartbeat_interval_s, 0.5);
  EXPECT_EQ(spec->join_timeout_s, 9);
  EXPECT_EQ(spec->control_port, 0);
  EXPECT_FALSE(spec->show_all_ranks);
  EXPECT_THAT(spec->show_ranks, ElementsAre(0, 2));
  EXPECT_EQ(spec->max_restarts, 2);
  EXPECT_EQ(spec->spare_nodes, 1);
  EXPECT_THAT(spec->command, ElementsAre("/bin/true"));
}

TEST(RunFlagsTest, WithoutNnodesACommandLineJobUsesEveryHost) {
  RunFlags f;
  f.command = {"/bin/true"};
  auto spec = BuildRunSpec(f);
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_TRUE(spec->nodes_auto);
}

TEST(RunFlagsTest, BadNodeCountsAndRankListsAreRefused) {
  RunFlags f;
  f.command = {"/bin/true"};
  f.nnodes = "zero";
  auto spec = BuildRunSpec(f);
  ASSERT_FALSE(spec.ok());
  EXPECT_EQ(spec.status().message(), "--nnodes: expected N or MIN:MAX, got 'zero'");
  f.nnodes = "3:2";
  EXPECT_FALSE(BuildRunSpec(f).ok());
  f.nnodes = "";
  f.show_ranks = "0,x";
  spec = BuildRunSpec(f);
  ASSERT_FALSE(spec.ok());
  EXPECT_THAT(spec.status().message(), HasSubstr("--show-ranks: expected 'all' or ranks like 0,3"));
}

}  // namespace
}  // namespace dlaunch
