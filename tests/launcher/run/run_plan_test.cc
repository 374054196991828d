#include "launcher/run/run_plan.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace dlaunch {
namespace {

using ::testing::ElementsAre;

JobSpec Spec() {
  JobSpec s;
  s.join_timeout_s = 30;
  s.last_call_s = 2;
  s.master_port = 29500;
  s.heartbeat_interval_s = 0.5;
  s.stop_grace_s = 3;
  s.max_restarts = 1;
  s.nproc_per_node = 4;
  s.tail_lines = 7;
  s.env = {{"A", "1"}};
  s.show_all_ranks = false;
  s.show_ranks = {0, 3};
  s.isolate_gpus = true;
  s.gpus_per_proc = 1;
  s.cpu_map = {{{0, 1, 2}, 3}, {{4, 5}, -1}};
  return s;
}

TEST(RunPlanTest, RendezvousFollowsThePlanWithShortHostNames) {
  HostPlan plan;
  plan.hosts = {"nid001.cluster.org", "nid002"};
  plan.min_nodes = 1;
  plan.max_nodes = 2;
  RendezvousConfig rc = MakeRendezvousConfig(Spec(), plan);
  EXPECT_THAT(rc.host_order, ElementsAre("nid001", "nid002"));
  EXPECT_EQ(rc.min_nodes, 1);
  EXPECT_EQ(rc.max_nodes, 2);
  EXPECT_EQ(rc.join_timeout_s, 30);
  EXPECT_EQ(rc.last_call_s, 2);
  EXPECT_EQ(rc.master_port, 29500);
  EXPECT_EQ(rc.expected_agents, 2);
  plan.spare_hosts = {"nid003"};
  EXPECT_EQ(MakeRendezvousConfig(Spec(), plan).expected_agents, 3);
}

TEST(RunPlanTest, PreflightPlanNamesWhatEveryNodeMustOffer) {
  JobSpec spec = Spec();
  spec.gpus_per_node = 4;
  spec.env["TMPDIR"] = "/local/scratch";
  spec.preflight.paths = {"/lus/eagle/proj"};
  spec.preflight.min_free_bytes = 2048;
  spec.preflight.max_clock_offset_s = 1.5;
  spec.preflight.timeout_s = 20;
  spec.preflight.imports_auto = false;
  spec.preflight.imports = {"torch"};
  const v1::JoinResponse t = MakeJoinTemplate(spec, JobPlacement{"j1", "/jobs/j1", {"python3", "t.py"}, "/w"});
  v1::PreflightPlan plan = MakePreflightPlan(spec, t);
  EXPECT_TRUE(plan.enabled());
  EXPECT_EQ(plan.gpus(), 4);
  ASSERT_EQ(plan.paths_size(), 3);
  EXPECT_EQ(plan.paths(0).path(), "/jobs/j1");
  EXPECT_EQ(plan.paths(1).path(), "/local/scratch");
  EXPECT_EQ(plan.paths(1).what(), "TMPDIR");
  EXPECT_EQ(plan.paths(2).what(), "preflight.paths[0]");
  EXPECT_EQ(plan.paths(2).min_free_bytes(), 2048);
  EXPECT_THAT(plan.worker().argv(), ElementsAre("python3", "t.py"));
  EXPECT_THAT(plan.ports(), ElementsAre(29500));
  EXPECT_THAT(plan.python_imports(), ElementsAre("torch"));
  EXPECT_FALSE(plan.python_imports_auto());
  EXPECT_EQ(plan.max_clock_offset_ms(), 1500);
  EXPECT_EQ(plan.timeout_ms(), 20000);
  spec.preflight.enabled = false;
  plan = MakePreflightPlan(spec, t);
  EXPECT_FALSE(plan.enabled());
  EXPECT_EQ(plan.paths_size(), 0);
}

TEST(RunPlanTest, TheCollectiveCheckRunsByDefaultOnlyAcrossHosts) {
  JobSpec spec = Spec();
  const v1::JoinResponse t = MakeJoinTemplate(spec, JobPlacement{"j1", "/jobs/j1", {"true"}, "/w"});
  auto enabled = [&](const std::vector<std::string>& hosts, const std::string& launcher) {
    HostPlan plan;
    plan.hosts = hosts;
    plan.node_launcher = launcher;
    v1::PreflightPlan preflight = MakePreflightPlan(spec, t);
    FitCollectiveCheckToHosts(spec, plan, &preflight);
    return preflight.collective().enabled();
  };
  EXPECT_TRUE(spec.preflight.collective_auto);
  EXPECT_FALSE(enabled({"me", "me"}, "local"));        // one machine's agents share it
  EXPECT_FALSE(enabled({"nid1", "nid1"}, "mpiexec"));  // one host, however started
  EXPECT_TRUE(enabled({"nid1", "nid2"}, "mpiexec"));
  EXPECT_TRUE(enabled({"h1", "h2", "h3"}, "ssh"));
  spec.preflight.collective_auto = false;  // collective: on
  EXPECT_TRUE(enabled({"me", "me"}, "local"));
  spec.preflight.collective = false;  // collective: off
  EXPECT_FALSE(enabled({"h1", "h2"}, "ssh"));
}

TEST(RunPlanTest, ThePreflightNoteSaysWhatEveryNodeLooksForOrImportsBeforeItJoins) {
  JobSpec spec = Spec();
  spec.preflight.imports_auto = false;
  spec.preflight.imports = {"torch"};
  const v1::JoinResponse t = MakeJoinTemplate(spec, JobPlacement{"j1", "/jobs/j1", {"python3", "t.py"}, "/w"});
  EXPECT_FALSE(MakePreflightPlan(spec, t).import_python_modules());
  EXPECT_EQ(PreflightNote(MakePreflightPlan(spec, t), 2),
            "preflight: 2 node(s) check themselves and look for torch before they join "
            "(--no-preflight skips it)");
  spec.preflight.import_modules = true;  // import_check: import
  EXPECT_TRUE(MakePreflightPlan(spec, t).import_python_modules());
  EXPECT_EQ(PreflightNote(MakePreflightPlan(spec, t), 2),
            "preflight: importing torch on 2 node(s) before they join: seconds per node, more on "
            "a parallel file system (--no-preflight skips it)");
  spec.preflight.imports.clear();
  EXPECT_EQ(PreflightNote(MakePreflightPlan(spec, t), 3),
            "preflight: 3 node(s) check themselves before they join (--no-preflight skips it)");
  spec.preflight.enabled = false;
  EXPECT_EQ(PreflightNote(MakePreflightPlan(spec, t), 2), "");
}

TEST(RunPlanTest, JobConfigTakesTheSpecsTimingAndThePlansNodes) {
  HostPlan plan;
  plan.hosts = {"nid001", "nid002"};
  plan.node_launcher = "srun";
  plan.min_nodes = 1;
  JobSpec spec = Spec();
  spec.heartbeat_misses = 4;
  spec.startup_timeout_s = 0;  // no limit
  JobConfig c = MakeJobConfig(spec, plan, "job-7", "runs/job-7");
  EXPECT_EQ(c.job_id, "job-7");
  EXPECT_EQ(c.job_dir, "runs/job-7");
  EXPECT_THAT(c.hosts, ElementsAre("nid001", "nid002"));
  EXPECT_EQ(c.node_launcher, "srun");
  EXPECT_EQ(c.heartbeat_s, 0.5);
  EXPECT_EQ(c.heartbeat_misses, 4);
  EXPECT_EQ(c.stop_grace_s, 3);
  EXPECT_GT(c.progress.startup_timeout_s, 1e9);
  EXPECT_EQ(c.restarts.max_restarts, 1);
  EXPECT_EQ(c.min_nodes, 1);
  EXPECT_EQ(c.master_port, 29500);
}

TEST(RunPlanTest, JoinResponseIsTheTemplatePlusTheNodesPlace) {
  JobPlacement place{"job-1", "/runs/job-1", {"/bin/train", "--x"}, "/work"};
  v1::JoinResponse t = MakeJoinTemplate(Spec(), place);
  EXPECT_EQ(t.job_id(), "job-1");
  EXPECT_EQ(t.job_dir(), "/runs/job-1");
  EXPECT_THAT(t.worker().argv(), ElementsAre("/bin/train", "--x"));
  EXPECT_EQ(t.worker().env().at("A"), "1");
  EXPECT_EQ(t.worker().workdir(), "/work");
  EXPECT_TRUE(t.worker().isolate_gpus());
  EXPECT_EQ(t.worker().gpus_per_proc(), 1);
  EXPECT_FALSE(t.worker().cpu_binding_none());
  ASSERT_EQ(t.worker().cpu_map_size(), 2);
  EXPECT_THAT(t.worker().cpu_map(0).cpus(), ElementsAre(0, 1, 2));
  EXPECT_EQ(t.worker().cpu_map(0).gpu(), 3);
  EXPECT_THAT(t.worker().cpu_map(1).cpus(), ElementsAre(4, 5));
  EXPECT_EQ(t.worker().cpu_map(1).gpu(), -1);
  EXPECT_EQ(t.heartbeat_ms(), 500);
  EXPECT_EQ(t.grace_ms(), 3000);
  EXPECT_EQ(t.max_restarts(), 1);
  EXPECT_FALSE(t.forward_all());
  EXPECT_THAT(t.forward_ranks(), ElementsAre(0, 3));

  RoundResult round;
  round.round = 0;
  round.nodes.resize(2);
  round.world_size = 8;
  round.master_addr = "10.0.0.1";
  round.master_port = 29500;
  v1::JoinResponse r = MakeJoinResponse(t, round, NodeAssignment{1, 4, 4});
  EXPECT_EQ(r.job_id(), "job-1");
  EXPECT_EQ(r.node_rank(), 1);
  EXPECT_EQ(r.nnodes(), 2);
  EXPECT_EQ(r.rank_offset(), 4);
  EXPECT_EQ(r.local_world_size(), 4);
  EXPECT_EQ(r.world_size(), 8);
  EXPECT_EQ(r.master_addr(), "10.0.0.1");
  EXPECT_EQ(r.master_port(), 29500);
}

TEST(RunPlanTest, AgentArgvCarriesTheTokenFileNotTheToken) {
  EXPECT_THAT(MakeAgentArgv("/bin/dlaunch-agent", "10.0.0.1:4000", "/runs/j/token", Spec()),
              ElementsAre("/bin/dlaunch-agent", "--control", "10.0.0.1:4000", "--token-file",
                          "/runs/j/token", "--nproc", "4", "--join-timeout", "30.000000",
                          "--tail-lines", "7"));
}

TEST(RunPlanTest, AgentArgvBehindRelaysNamesTheLauncherAsTheFallback) {
  EXPECT_THAT(MakeAgentArgv("/bin/dlaunch-agent", "10.0.0.1:4001,10.0.0.1:4002", "/runs/j/token",
                            Spec(), "10.0.0.1:4000"),
              ElementsAre("/bin/dlaunch-agent", "--control", "10.0.0.1:4001,10.0.0.1:4002",
                          "--token-file", "/runs/j/token", "--nproc", "4", "--join-timeout",
                          "30.000000", "--tail-lines", "7", "--control-fallback", "10.0.0.1:4000"));
}

}  // namespace
}  // namespace dlaunch
