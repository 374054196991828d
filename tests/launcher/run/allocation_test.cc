#include "launcher/run/allocation.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <map>

#include "absl/status/status.h"
#include "common/file_io.h"

namespace dlaunch {
namespace {

using ::testing::ElementsAre;

// An environment and a file system made of maps, so each scheduler is tested without one.
struct FakeNode {
  std::map<std::string, std::string> env;
  std::map<std::string, std::string> files;

  EnvLookup Env() const {
    return [this](const std::string& name) -> std::optional<std::string> {
      auto found = env.find(name);
      if (found == env.end()) return std::nullopt;
      return found->second;
    };
  }
  FileReader Files() const {
    return [this](const std::string& path) -> absl::StatusOr<std::string> {
      auto found = files.find(path);
      if (found == files.end()) return absl::NotFoundError("No such file or directory");
      return found->second;
    };
  }
  absl::StatusOr<Allocation> Detect() const { return DetectAllocation(Env(), Files()); }
};

TEST(ParseNodefileTest, TrimsSkipsBlanksAndDropsRepeats) {
  EXPECT_THAT(ParseNodefile("n1\nn1\nn1\nn1\nn2\nn2\nn2\nn2\n"), ElementsAre("n1", "n2"));
  EXPECT_THAT(ParseNodefile("  b \n\n\ta\r\n b\n"), ElementsAre("b", "a"));
  EXPECT_THAT(ParseNodefile("last-without-newline"), ElementsAre("last-without-newline"));
  EXPECT_THAT(ParseNodefile(""), ElementsAre());
}

TEST(DetectAllocationTest, NoSchedulerMeansLocal) {
  FakeNode node;
  absl::StatusOr<Allocation> allocation = node.Detect();
  ASSERT_TRUE(allocation.ok());
  EXPECT_EQ(allocation->scheduler, "");
  EXPECT_TRUE(allocation->hosts.empty());
  EXPECT_EQ(allocation->job_id, "");
  EXPECT_EQ(allocation->node_launcher, "local");
}

TEST(DetectAllocationTest, PbsPro) {
  FakeNode node;
  node.env = {{"PBS_NODEFILE", "/var/spool/pbs/aux/123.polaris"},
              {"PBS_JOBID", "123.polaris-pbs-01"}};
  node.files = {{"/var/spool/pbs/aux/123.polaris",
                 "x3004c0s1b0n0.hsn.cm.polaris.alcf.anl.gov\n"
                 "x3004c0s1b0n0.hsn.cm.polaris.alcf.anl.gov\n"
                 "x3004c0s7b1n0.hsn.cm.polaris.alcf.anl.gov\n"}};
  absl::StatusOr<Allocation> allocation = node.Detect();
  ASSERT_TRUE(allocation.ok()) << allocation.status();
  EXPECT_EQ(allocation->scheduler, "pbs");
  EXPECT_THAT(allocation->hosts, ElementsAre("x3004c0s1b0n0.hsn.cm.polaris.alcf.anl.gov",
                                             "x3004c0s7b1n0.hsn.cm.polaris.alcf.anl.gov"));
  EXPECT_EQ(allocation->job_id, "123.polaris-pbs-01");
  EXPECT_EQ(allocation->node_launcher, "mpiexec");
  EXPECT_EQ(allocation->source, "PBS_NODEFILE=/var/spool/pbs/aux/123.polaris");
}

TEST(DetectAllocationTest, Cobalt) {
  FakeNode node;
  node.env = {{"COBALT_NODEFILE", "/var/tmp/cobalt.9"}, {"COBALT_JOBID", "9"}};
  node.files = {{"/var/tmp/cobalt.9", "thetagpu01\nthetagpu02\n"}};
  absl::StatusOr<Allocation> allocation = node.Detect();
  ASSERT_TRUE(allocation.ok()) << allocation.status();
  EXPECT_EQ(allocation->scheduler, "cobalt");
  EXPECT_THAT(allocation->hosts, ElementsAre("thetagpu01", "thetagpu02"));
  EXPECT_EQ(allocation->job_id, "9");
  EXPECT_EQ(allocation->node_launcher, "mpirun");
}

TEST(DetectAllocationTest, SlurmNodelistInHostlistSyntax) {
  FakeNode node;
  node.env = {{"SLURM_JOB_NODELIST", "nid[001-003,007]"}, {"SLURM_JOB_ID", "4242"}};
  absl::StatusOr<Allocation> allocation = node.Detect();
  ASSERT_TRUE(allocation.ok()) << allocation.status();
  EXPECT_EQ(allocation->scheduler, "slurm");
  EXPECT_THAT(allocation->hosts, ElementsAre("nid001", "nid002", "nid003", "nid007"));
  EXPECT_EQ(allocation->job_id, "4242");
  EXPECT_EQ(allocation->node_launcher, "srun");
  EXPECT_EQ(allocation->source, "SLURM_JOB_NODELIST=nid[001-003,007]");
}

TEST(DetectAllocationTest, SlurmOlderVariableNames) {
  FakeNode node;
  node.env = {{"SLURM_NODELIST", "a,b"}, {"SLURM_JOBID", "7"}};
  absl::StatusOr<Allocation> allocation = node.Detect();
  ASSERT_TRUE(allocation.ok()) << allocation.status();
  EXPECT_THAT(allocation->hosts, ElementsAre("a", "b"));
  EXPECT_EQ(allocation->job_id, "7");
}

TEST(DetectAllocationTest, PriorityIsPbsThenCobaltThenSlurm) {
  FakeNode node;
  node.env = {{"PBS_NODEFILE", "/pbs"}, {"COBALT_NODEFILE", "/cobalt"},
              {"SLURM_JOB_NODELIST", "s1"}};
  node.files = {{"/pbs", "p1\n"}, {"/cobalt", "c1\n"}};
  EXPECT_EQ(node.Detect()->scheduler, "pbs");
  node.env.erase("PBS_NODEFILE");
  EXPECT_EQ(node.Detect()->scheduler, "cobalt");
  node.env.erase("COBALT_NODEFILE");
  EXPECT_EQ(node.Detect()->scheduler, "slurm");
  node.env["SLURM_JOB_NODELIST"] = "";  // empty counts as unset
  EXPECT_EQ(node.Detect()->scheduler, "");
}

TEST(DetectAllocationTest, BrokenAllocationsNameTheVariable) {
  FakeNode node;
  node.env = {{"PBS_NODEFILE", "/missing"}};
  absl::StatusOr<Allocation> missing = node.Detect();
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(missing.status().message(),
            "cannot read PBS_NODEFILE=/missing: No such file or directory");

  node.env = {{"COBALT_NODEFILE", "/empty"}};
  node.files = {{"/empty", "\n  \n"}};
  EXPECT_EQ(node.Detect().status().message(), "COBALT_NODEFILE=/empty lists no hosts");

  node.env = {{"SLURM_JOB_NODELIST", "nid[001-"}};
  absl::StatusOr<Allocation> bad = node.Detect();
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(bad.status().message(),
            "SLURM_JOB_NODELIST: bad hostlist \"nid[001-\": '[' at offset 3 has no matching ']'");
}

TEST(DetectAllocationTest, ANodefileLineOfSeveralWordsIsNoHost) {
  // Found by fuzzing: "n1 slots=4" went on as one host name, spaces and all.
  FakeNode node;
  node.env = {{"PBS_NODEFILE", "/nodefile"}};
  node.files = {{"/nodefile", "n0\n n1 slots=4\n"}};
  absl::StatusOr<Allocation> bad = node.Detect();
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(bad.status().message(),
            "PBS_NODEFILE=/nodefile line 2: \"n1 slots=4\" is not a host name (a nodefile lists "
            "one host per line)");
  node.files = {{"/nodefile", "n0\r\n\tn1\t\r\n\n"}};  // CRLF and surrounding blanks are fine
  ASSERT_TRUE(node.Detect().ok());
  EXPECT_THAT(node.Detect()->hosts, ElementsAre("n0", "n1"));
}

TEST(DetectAllocationTest, ReadsARealNodefile) {
  const std::string path = testing::TempDir() + "/allocation_test_nodefile";
  std::ofstream(path) << "h1\nh1\nh2\n";
  FakeNode node;
  node.env = {{"PBS_NODEFILE", path}};
  absl::StatusOr<Allocation> allocation = DetectAllocation(node.Env(), ReadFile);
  std::remove(path.c_str());
  ASSERT_TRUE(allocation.ok()) << allocation.status();
  EXPECT_THAT(allocation->hosts, ElementsAre("h1", "h2"));
}

JobSpec Nodes(int min, int max) {
  JobSpec spec;
  spec.command = {"x"};
  spec.min_nodes = min;
  spec.max_nodes = max;
  return spec;
}

JobSpec AutoNodes() {
  JobSpec spec;
  spec.command = {"x"};
  spec.nodes_auto = true;
  return spec;
}

Allocation PbsAllocation(std::vector<std::string> hosts) {
  Allocation allocation;
  allocation.scheduler = "pbs";
  allocation.hosts = std::move(hosts);
  allocation.node_launcher = "mpiexec";
  allocation.source = "PBS_NODEFILE=/f";
  return allocation;
}

TEST(ResolveHostsTest, FlagBeatsSpecBeatsAllocationBeatsLocal) {
  JobSpec spec = AutoNodes();
  spec.hosts = {"s1", "s2"};
  const Allocation allocation = PbsAllocation({"p1", "p2", "p3"});

  absl::StatusOr<HostPlan> plan = ResolveHosts(spec, {"f1"}, allocation, "me");
  ASSERT_TRUE(plan.ok());
  EXPECT_THAT(plan->hosts, ElementsAre("f1"));
  EXPECT_EQ(plan->source, "--hosts");
  // Whoever names the hosts, mpiexec inside a PBS job is the site's (PALS on ALCF's machines).
  EXPECT_EQ(plan->scheduler, "pbs");

  plan = ResolveHosts(spec, {}, allocation, "me");
  EXPECT_THAT(plan->hosts, ElementsAre("s1", "s2"));
  EXPECT_EQ(plan->source, "job.yaml hosts");

  spec.hosts.clear();
  plan = ResolveHosts(spec, {}, allocation, "me");
  EXPECT_THAT(plan->hosts, ElementsAre("p1", "p2", "p3"));
  EXPECT_EQ(plan->source, "PBS_NODEFILE=/f");

  plan = ResolveHosts(spec, {}, Allocation{}, "me");
  EXPECT_THAT(plan->hosts, ElementsAre("me"));
  EXPECT_EQ(plan->source, "local");
  EXPECT_EQ(plan->scheduler, "");
}

TEST(ResolveHostsTest, AutoNodesUsesEveryHost) {
  absl::StatusOr<HostPlan> plan =
      ResolveHosts(AutoNodes(), {}, PbsAllocation({"p1", "p2", "p3"}), "me");
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(plan->min_nodes, 3);
  EXPECT_EQ(plan->max_nodes, 3);
  plan = ResolveHosts(AutoNodes(), {}, Allocation{}, "me");
  EXPECT_EQ(plan->min_nodes, 1);
  EXPECT_EQ(plan->max_nodes, 1);
}

TEST(ResolveHostsTest, CountedNodesTakeTheFirstMax) {
  absl::StatusOr<HostPlan> plan =
      ResolveHosts(Nodes(1, 2), {}, PbsAllocation({"p1", "p2", "p3"}), "me");
  ASSERT_TRUE(plan.ok());
  EXPECT_THAT(plan->hosts, ElementsAre("p1", "p2"));
  EXPECT_EQ(plan->min_nodes, 1);
  EXPECT_EQ(plan->max_nodes, 2);

  plan = ResolveHosts(Nodes(2, 8), {"a", "b", "c"}, Allocation{}, "me");
  ASSERT_TRUE(plan.ok());
  EXPECT_THAT(plan->hosts, ElementsAre("a", "b", "c"));
  EXPECT_EQ(plan->min_nodes, 2);
  EXPECT_EQ(plan->max_nodes, 3);
}

TEST(ResolveHostsTest, LocalRunsMaxNodesAgentsHere) {
  absl::StatusOr<HostPlan> plan = ResolveHosts(Nodes(2, 2), {}, Allocation{}, "localhost");
  ASSERT_TRUE(plan.ok());
  EXPECT_THAT(plan->hosts, ElementsAre("localhost", "localhost"));
  EXPECT_EQ(plan->min_nodes, 2);
  EXPECT_EQ(plan->max_nodes, 2);
  plan = ResolveHosts(Nodes(1, 3), {}, Allocation{}, "h");
  EXPECT_THAT(plan->hosts, ElementsAre("h", "h", "h"));
  EXPECT_EQ(plan->min_nodes, 1);
}

TEST(ResolveHostsTest, SparesAreLocalCopiesOrTheAllocationsHostsBeyondMax) {
  JobSpec spec = Nodes(2, 2);
  spec.spare_nodes = 1;
  absl::StatusOr<HostPlan> plan = ResolveHosts(spec, {}, Allocation{}, "h");
  ASSERT_TRUE(plan.ok());
  EXPECT_THAT(plan->hosts, ElementsAre("h", "h"));
  EXPECT_THAT(plan->spare_hosts, ElementsAre("h"));
  EXPECT_THAT(plan->AgentHosts(), ElementsAre("h", "h", "h"));

  // Beyond nodes.max: spares only when a restart can use them.
  spec = Nodes(1, 2);
  plan = ResolveHosts(spec, {}, PbsAllocation({"p1", "p2", "p3", "p4"}), "me");
  ASSERT_TRUE(plan.ok());
  EXPECT_THAT(plan->spare_hosts, ElementsAre());
  spec.max_restarts = 1;
  plan = ResolveHosts(spec, {}, PbsAllocation({"p1", "p2", "p3", "p4"}), "me");
  ASSERT_TRUE(plan.ok());
  EXPECT_THAT(plan->hosts, ElementsAre("p1", "p2"));
  EXPECT_THAT(plan->spare_hosts, ElementsAre("p3", "p4"));
}

TEST(ResolveHostsTest, AutoLauncherFollowsWhereTheHostsAre) {
  const Allocation pbs = PbsAllocation({"p1", "p2"});
  EXPECT_EQ(ResolveHosts(AutoNodes(), {}, pbs, "me")->node_launcher, "mpiexec");
  EXPECT_EQ(ResolveHosts(AutoNodes(), {"p2"}, pbs, "me")->node_launcher, "mpiexec");
  EXPECT_EQ(ResolveHosts(AutoNodes(), {}, Allocation{}, "me")->node_launcher, "local");
  EXPECT_EQ(ResolveHosts(AutoNodes(), {"me", "localhost", "127.0.0.1"}, Allocation{}, "me")
                ->node_launcher,
            "local");
  EXPECT_EQ(ResolveHosts(AutoNodes(), {"me", "other"}, Allocation{}, "me")->node_launcher, "ssh");
  JobSpec spec = AutoNodes();
  spec.node_launcher = "srun";
  EXPECT_EQ(ResolveHosts(spec, {}, pbs, "me")->node_launcher, "srun");
  EXPECT_EQ(ResolveHosts(spec, {}, Allocation{}, "me")->node_launcher, "srun");
}

TEST(ResolveHostsTest, TooFewHostsIsAnError) {
  absl::StatusOr<HostPlan> plan = ResolveHosts(Nodes(4, 4), {}, PbsAllocation({"p1"}), "me");
  EXPECT_EQ(plan.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(plan.status().message(),
            "the job needs at least 4 nodes but PBS_NODEFILE=/f gives 1 host");
  plan = ResolveHosts(Nodes(3, 3), {"a", "b"}, Allocation{}, "me");
  EXPECT_EQ(plan.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(plan.status().message(), "the job needs at least 3 nodes but --hosts gives 2 hosts");
  JobSpec spec = Nodes(2, 2);
  spec.hosts = {"a"};
  plan = ResolveHosts(spec, {}, Allocation{}, "me");
  EXPECT_EQ(plan.status().message(),
            "the job needs at least 2 nodes but job.yaml hosts gives 1 host");
}

}  // namespace
}  // namespace dlaunch
