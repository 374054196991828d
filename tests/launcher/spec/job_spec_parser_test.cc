#include "launcher/spec/job_spec_parser.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <sstream>

#include "tests/launcher/spec/job_spec_testing.h"

namespace dlaunch {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Pair;
using ::testing::UnorderedElementsAre;

using spec_testing::Errors;
using spec_testing::Parse;

TEST(ParseJobSpecTest, MinimalJobGetsDefaults) {
  const JobSpec spec = Parse("command: [python, train.py]\n");
  EXPECT_FALSE(spec.agent_store);  // rank 0 serves the workers' store unless asked
  EXPECT_THAT(spec.command, ElementsAre("python", "train.py"));
  EXPECT_EQ(spec.name, "dlaunch-job");
  EXPECT_TRUE(spec.nodes_auto);
  EXPECT_EQ(spec.min_nodes, 1);
  EXPECT_EQ(spec.max_nodes, 1);
  EXPECT_EQ(spec.nproc_per_node, 0);
  EXPECT_EQ(spec.node_launcher, "auto");
  EXPECT_EQ(spec.join_timeout_s, 300);
  EXPECT_EQ(spec.last_call_s, 10);
  EXPECT_EQ(spec.heartbeat_interval_s, 2);
  EXPECT_EQ(spec.heartbeat_misses, 3);
  EXPECT_EQ(spec.stop_grace_s, 10);
  EXPECT_EQ(spec.exit_timeout_s, 30);
  EXPECT_TRUE(spec.stall_detection);
  EXPECT_EQ(spec.stall_timeout_s, 0);
  EXPECT_EQ(spec.startup_timeout_s, 600);
  EXPECT_EQ(spec.job_root, "runs");
  EXPECT_TRUE(spec.show_all_ranks);
  EXPECT_EQ(spec.tail_lines, 20);
  EXPECT_FALSE(spec.isolate_gpus);
  EXPECT_EQ(spec.scheduler.type, "");
  EXPECT_EQ(spec.source_path, "job.yaml");
}

TEST(ParseJobSpecTest, FullJob) {
  const JobSpec spec = Parse(R"(
name: resnet50-scaling
nodes: {min: 2, max: 8, spares: 1}
nproc_per_node: 4
command: [python3, train.py, --epochs, 90]
args: [--lr, 0.1]
env:
  NCCL_DEBUG: WARN
  EMPTY:
workdir: /lus/eagle/projects/demo
hosts: ["nid[001-002]", login1]
launcher: mpiexec
rendezvous: {port: 29400, master_port: 29500, worker_store: agent, join_timeout: 10m, last_call: 30s}
heartbeat: {interval: 500ms, misses: 5}
stop: {grace: 1m30s, exit_timeout: 2s}
health: {stall_timeout: 3s, startup_timeout: 1m}
max_restarts: 3
restart: in_process
restarts: {backoff: 2s, backoff_max: 1m, crash_loop: 4, node_failures: 0, warm_start: on}
logs: {dir: /tmp/runs, ranks: [0, 7], tail_lines: 50, summary_interval: 0}
gpus: {binding: isolate, per_proc: 2}
scheduler:
  type: pbs
  site: polaris
  account: MyProject
  queue: debug
  walltime: 90
  filesystems: home:eagle
  modules: [conda/2023-10-04]
  setup: |
    conda activate base
    export FOO=1
  directives: {place: scatter}
)");
  EXPECT_EQ(spec.name, "resnet50-scaling");
  EXPECT_FALSE(spec.nodes_auto);
  EXPECT_EQ(spec.min_nodes, 2);
  EXPECT_EQ(spec.max_nodes, 8);
  EXPECT_EQ(spec.spare_nodes, 1);
  EXPECT_EQ(spec.nproc_per_node, 4);
  EXPECT_THAT(spec.command, ElementsAre("python3", "train.py", "--epochs", "90", "--lr", "0.1"));
  EXPECT_THAT(spec.env, UnorderedElementsAre(Pair("NCCL_DEBUG", "WARN"), Pair("EMPTY", "")));
  EXPECT_EQ(spec.workdir, "/lus/eagle/projects/demo");
  EXPECT_THAT(spec.hosts, ElementsAre("nid001", "nid002", "login1"));
  EXPECT_EQ(spec.node_launcher, "mpiexec");
  EXPECT_EQ(spec.control_port, 29400);
  EXPECT_EQ(spec.master_port, 29500);
  EXPECT_TRUE(spec.agent_store);
  EXPECT_EQ(spec.join_timeout_s, 600);
  EXPECT_EQ(spec.last_call_s, 30);
  EXPECT_EQ(spec.heartbeat_interval_s, 0.5);
  EXPECT_EQ(spec.heartbeat_misses, 5);
  EXPECT_EQ(spec.stop_grace_s, 90);
  EXPECT_EQ(spec.exit_timeout_s, 2);
  EXPECT_TRUE(spec.stall_detection);
  EXPECT_EQ(spec.stall_timeout_s, 3);
  EXPECT_EQ(spec.startup_timeout_s, 60);
  EXPECT_EQ(spec.max_restarts, 3);
  EXPECT_TRUE(spec.restart_in_process);
  EXPECT_EQ(spec.restart_backoff_s, 2);
  EXPECT_EQ(spec.restart_backoff_max_s, 60);
  EXPECT_EQ(spec.crash_loop_limit, 4);
  EXPECT_EQ(spec.warm_start, "on");
  EXPECT_EQ(spec.node_failure_limit, 0);
  EXPECT_EQ(spec.job_root, "/tmp/runs");
  EXPECT_FALSE(spec.show_all_ranks);
  EXPECT_THAT(spec.show_ranks, ElementsAre(0, 7));
  EXPECT_EQ(spec.tail_lines, 50);
  EXPECT_EQ(spec.summary_interval_s, 0);
  EXPECT_TRUE(spec.isolate_gpus);
  EXPECT_EQ(spec.gpus_per_proc, 2);
  EXPECT_EQ(spec.scheduler.type, "pbs");
  EXPECT_EQ(spec.scheduler.site, "polaris");
  EXPECT_EQ(spec.scheduler.account, "MyProject");
  EXPECT_EQ(spec.scheduler.queue, "debug");
  EXPECT_EQ(spec.scheduler.walltime, "01:30:00");
  EXPECT_EQ(spec.scheduler.walltime_s, 5400);
  EXPECT_THAT(spec.scheduler.filesystems, ElementsAre("home", "eagle"));
  EXPECT_THAT(spec.scheduler.modules, ElementsAre("conda/2023-10-04"));
  EXPECT_THAT(spec.scheduler.setup, ElementsAre("conda activate base", "export FOO=1"));
  EXPECT_THAT(spec.scheduler.extra, ElementsAre(Pair("place", "scatter")));
}

TEST(ParseJobSpecTest, NodesForms) {
  EXPECT_EQ(Parse("nodes: 4\ncommand: [x]\n").min_nodes, 4);
  EXPECT_EQ(Parse("nodes: 4\ncommand: [x]\n").max_nodes, 4);
  EXPECT_FALSE(Parse("nodes: 4\ncommand: [x]\n").nodes_auto);
  EXPECT_TRUE(Parse("nodes: auto\ncommand: [x]\n").nodes_auto);
  const JobSpec range = Parse("nodes: \"2:6\"\ncommand: [x]\n");
  EXPECT_EQ(range.min_nodes, 2);
  EXPECT_EQ(range.max_nodes, 6);
  const JobSpec only_min = Parse("nodes: {min: 3}\ncommand: [x]\n");
  EXPECT_EQ(only_min.min_nodes, 3);
  EXPECT_EQ(only_min.max_nodes, 3);
  const JobSpec only_max = Parse("nodes: {max: 5}\ncommand: [x]\n");
  EXPECT_EQ(only_max.min_nodes, 1);
  EXPECT_EQ(only_max.max_nodes, 5);
}

TEST(ParseJobSpecTest, NprocPerNodeForms) {
  EXPECT_EQ(Parse("nproc_per_node: 3\ncommand: [x]\n").nproc_per_node, 3);
  EXPECT_EQ(Parse("nproc_per_node: gpu\ncommand: [x]\n").nproc_per_node, 0);
  EXPECT_EQ(Parse("nproc_per_node: auto\ncommand: [x]\n").nproc_per_node, 0);
}

TEST(ParseJobSpecTest, CommandAsOneStringIsSplitLikeAShell) {
  EXPECT_THAT(Parse("command: python3 train.py --name 'my run' \"a b\" c\\ d\n").command,
              ElementsAre("python3", "train.py", "--name", "my run", "a b", "c d"));
  EXPECT_THAT(Parse("command: x\nargs: --steps 10\n").command, ElementsAre("x", "--steps", "10"));
}

TEST(ParseJobSpecTest, HostsAsHostlistString) {
  EXPECT_THAT(Parse("hosts: nid[001-003],login\ncommand: [x]\n").hosts,
              ElementsAre("nid001", "nid002", "nid003", "login"));
}

TEST(ParseJobSpecTest, LogRanksForms) {
  const JobSpec one = Parse("logs: {ranks: 3}\ncommand: [x]\n");
  EXPECT_FALSE(one.show_all_ranks);
  EXPECT_THAT(one.show_ranks, ElementsAre(3));
  EXPECT_TRUE(Parse("logs: {ranks: all}\ncommand: [x]\n").show_all_ranks);
}

TEST(ParseJobSpecTest, SchedulerExtraIsAnAliasOfDirectives) {
  EXPECT_THAT(Parse("command: [x]\nscheduler: {extra: {a: b}}\n").scheduler.extra,
              ElementsAre(Pair("a", "b")));
  EXPECT_EQ(Errors("command: [x]\nscheduler: {directives: {a: b}, extra: {a: c}}\n"),
            "job.yaml:2:40: scheduler.extra and scheduler.directives are the same setting; "
            "give one");
}

TEST(ParseJobSpecTest, SchedulerPythonSetupIsTheSitesOrOff) {
  EXPECT_TRUE(Parse("command: [x]\n").scheduler.site_python_setup);
  EXPECT_TRUE(Parse("command: [x]\nscheduler: {python_setup: site}\n").scheduler.site_python_setup);
  EXPECT_FALSE(Parse("command: [x]\nscheduler: {python_setup: off}\n").scheduler.site_python_setup);
  EXPECT_THAT(Errors("command: [x]\nscheduler: {python_setup: conda}\n"),
              ::testing::HasSubstr("job.yaml:2:27: "));
}

TEST(ParseJobSpecTest, WalltimeForms) {
  auto walltime = [](const std::string& value) {
    return Parse("command: [x]\nscheduler: {walltime: " + value + "}\n").scheduler;
  };
  EXPECT_EQ(walltime("\"01:00:00\"").walltime_s, 3600);
  EXPECT_EQ(walltime("\"01:00:00\"").walltime, "01:00:00");
  EXPECT_EQ(walltime("\"30:00\"").walltime_s, 1800);
  EXPECT_EQ(walltime("60").walltime_s, 3600);
  EXPECT_EQ(walltime("2h").walltime, "02:00:00");
  EXPECT_EQ(walltime("\"1-00:00:00\"").walltime, "24:00:00");
  EXPECT_EQ(walltime("\"\"").walltime_s, 0);
  EXPECT_EQ(walltime("\"\"").walltime, "");
}

TEST(ParseJobSpecTest, CpusBindingAndMap) {
  const JobSpec spec = Parse(
      "command: [x]\nnproc_per_node: 2\n"
      "cpus:\n  binding: cores\n  map:\n    - {cpus: \"0-3,32-35\", gpu: 3}\n    - \"4-7\"\n");
  EXPECT_FALSE(spec.cpu_binding_none);
  ASSERT_EQ(spec.cpu_map.size(), 2u);
  EXPECT_THAT(spec.cpu_map[0].cpus, ElementsAre(0, 1, 2, 3, 32, 33, 34, 35));
  EXPECT_EQ(spec.cpu_map[0].gpu, 3);
  EXPECT_THAT(spec.cpu_map[1].cpus, ElementsAre(4, 5, 6, 7));
  EXPECT_EQ(spec.cpu_map[1].gpu, -1);
  EXPECT_TRUE(Parse("command: [x]\ncpus: {binding: none}\n").cpu_binding_none);
  EXPECT_TRUE(Parse("command: [x]\n").cpu_map.empty());
}

TEST(ParseJobSpecTest, CpusMapProblemsKnowableBeforeTheNodeArePlaced) {
  EXPECT_EQ(Errors("command: [x]\ncpus: {binding: cors}\n"),
            "job.yaml:2:17: cpus.binding must be \"cores\" or \"none\", got \"cors\" "
            "(did you mean 'cores'?)");
  EXPECT_EQ(Errors("command: [x]\ncpus:\n  map:\n    - \"0-3\"\n    - \"3-x\"\n"),
            "job.yaml:5:7: cpus.map[1]: \"3-x\" is not a CPU list (CPU ids and ranges such as "
            "\"0-7,32-39\")");
  EXPECT_EQ(Errors("command: [x]\ncpus:\n  map:\n    - \"0-3\"\n    - \"3-5\"\n"),
            "job.yaml:5:7: cpus.map[1] gives CPU 3 to local rank 1, but cpus.map[0] gives it to "
            "local rank 0 already");
  EXPECT_EQ(Errors("command: [x]\nnproc_per_node: 3\ncpus:\n  map: [\"0\", \"1\"]\n"),
            "job.yaml:4:8: cpus.map has 2 entries for 3 local ranks (nproc_per_node); give one "
            "per local rank");
  EXPECT_EQ(Errors("command: [x]\ncpus:\n  binding: none\n  map: [\"0\"]\n"),
            "job.yaml:4:8: cpus.map cannot be used with cpus.binding: none (nothing would be "
            "pinned)");
  EXPECT_THAT(Errors("command: [x]\ncpus:\n  map: [{cpus: \"0\", core: 1}]\n"),
              HasSubstr("unknown key 'core' in 'cpus.map[0]' (expected cpus, gpu)"));
  EXPECT_THAT(Errors("command: [x]\ncpus:\n  map: [{gpu: 1}]\n"),
              HasSubstr("cpus.map[0] has no 'cpus'"));
  EXPECT_THAT(Errors("command: [x]\ncpus:\n  map: [{cpus: \"0\", gpu: -2}]\n"),
              HasSubstr("cpus.map[0].gpu must not be negative, got -2"));
}

TEST(ParseJobSpecTest, PreflightSectionAndGpusPerNode) {
  const JobSpec defaults = Parse("command: [x]\n");
  EXPECT_TRUE(defaults.preflight.enabled);
  EXPECT_EQ(defaults.preflight.min_free_bytes, int64_t{1} << 30);
  EXPECT_TRUE(defaults.preflight.imports_auto);
  EXPECT_FALSE(defaults.preflight.import_modules);  // found, not imported
  const JobSpec spec = Parse(
      "command: [x]\ngpus: {per_node: 4}\n"
      "preflight: {timeout: 5s, min_free: 500MB, paths: [/scratch], clock_offset: off, "
      "imports: [torch], import_check: import}\n");
  EXPECT_TRUE(spec.preflight.import_modules);
  EXPECT_EQ(spec.gpus_per_node, 4);
  EXPECT_EQ(spec.preflight.timeout_s, 5);
  EXPECT_EQ(spec.preflight.min_free_bytes, 500000000);
  EXPECT_THAT(spec.preflight.paths, ElementsAre("/scratch"));
  EXPECT_EQ(spec.preflight.max_clock_offset_s, 0);
  EXPECT_FALSE(spec.preflight.imports_auto);
  EXPECT_THAT(spec.preflight.imports, ElementsAre("torch"));
  EXPECT_FALSE(Parse("command: [x]\npreflight: off\n").preflight.enabled);
}

TEST(ParseJobSpecTest, CollectiveCheckKeys) {
  const JobSpec defaults = Parse("command: [x]\n");
  EXPECT_TRUE(defaults.preflight.collective);
  EXPECT_EQ(defaults.preflight.collective_budget_s, 20);
  EXPECT_EQ(defaults.preflight.collective_bytes, int64_t{4} << 20);
  EXPECT_DOUBLE_EQ(defaults.preflight.slow_share, 0.2);
  const JobSpec spec = Parse(
      "command: [x]\npreflight: {collective: off, collective_budget: 5s, collective_size: 1MiB, "
      "slow_share: 35%}\n");
  EXPECT_FALSE(spec.preflight.collective);
  EXPECT_FALSE(spec.preflight.collective_auto);
  EXPECT_TRUE(Parse("command: [x]\n").preflight.collective_auto);
  const JobSpec on = Parse("command: [x]\npreflight: {collective: on}\n");
  EXPECT_TRUE(on.preflight.collective);
  EXPECT_FALSE(on.preflight.collective_auto);
  EXPECT_EQ(spec.preflight.collective_budget_s, 5);
  EXPECT_EQ(spec.preflight.collective_bytes, int64_t{1} << 20);
  EXPECT_DOUBLE_EQ(spec.preflight.slow_share, 0.35);
  EXPECT_DOUBLE_EQ(Parse("command: [x]\npreflight: {slow_share: 0.1}\n").preflight.slow_share, 0.1);
  EXPECT_THAT(Errors("command: [x]\npreflight:\n  slow_share: 120%\n"),
              HasSubstr("job.yaml:3:15: preflight.slow_share must be between 0% and 100%, got 120%"));
  EXPECT_THAT(Errors("command: [x]\npreflight:\n  slow_share: lots\n"),
              HasSubstr("job.yaml:3:15: preflight.slow_share"));
  EXPECT_FALSE(defaults.preflight.collective_tcp);
  EXPECT_TRUE(Parse("command: [x]\npreflight: {collective_engine: tcp}\n").preflight.collective_tcp);
  EXPECT_THAT(Errors("command: [x]\npreflight:\n  collective_engine: mpi\n"),
              HasSubstr("job.yaml:3:22: preflight.collective_engine must be"));
  EXPECT_THAT(Errors("command: [x]\npreflight:\n  collective: maybe\n"),
              HasSubstr("job.yaml:3:15: preflight.collective must be"));
  EXPECT_THAT(Errors("command: [x]\npreflight:\n  collective_budget: 0s\n"),
              HasSubstr("job.yaml:3:22: preflight.collective_budget must be positive"));
}

TEST(ParseJobSpecTest, TheControlChannelIsEncryptedUnlessTurnedOff) {
  EXPECT_TRUE(Parse("command: [x]\n").control_tls);
  EXPECT_TRUE(Parse("command: [x]\nrendezvous: {tls: on}\n").control_tls);
  EXPECT_FALSE(Parse("command: [x]\nrendezvous: {tls: off}\n").control_tls);
  EXPECT_THAT(Errors("command: [x]\nrendezvous:\n  tls: maybe\n"),
              HasSubstr("job.yaml:3:8: rendezvous.tls must be \"on\" or \"off\", got \"maybe\""));
}

TEST(ParseJobSpecTest, RelaysAreOffUnlessAFanoutIsGiven) {
  EXPECT_EQ(Parse("command: [x]\n").relay_fanout, 0);
  EXPECT_EQ(Parse("command: [x]\nrendezvous: {relay_fanout: 256}\n").relay_fanout, 256);
  EXPECT_THAT(Errors("command: [x]\nrendezvous:\n  relay_fanout: -2\n"),
              HasSubstr("job.yaml:3:17: rendezvous.relay_fanout must not be negative, got -2"));
  EXPECT_THAT(Errors("command: [x]\nrendezvous:\n  relay_fanout: many\n"),
              HasSubstr("job.yaml:3:17: rendezvous.relay_fanout"));
  const JobSpec automatic = Parse("command: [x]\nrendezvous: {relay_fanout: auto}\n");
  EXPECT_TRUE(automatic.relay_fanout_auto);
  EXPECT_EQ(automatic.relay_fanout, 0);
  EXPECT_FALSE(Parse("command: [x]\nrendezvous: {relay_fanout: 8}\n").relay_fanout_auto);
}

TEST(LoadJobSpecTest, ReadsFilesAndReportsMissingOnes) {
  const std::string path = testing::TempDir() + "/load_job_spec_test.yaml";
  std::ofstream(path) << "name: loaded\ncommand: [x]\n";
  absl::StatusOr<JobSpec> spec = LoadJobSpec(path);
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->name, "loaded");
  EXPECT_EQ(spec->source_path, path);
  std::remove(path.c_str());
  absl::StatusOr<JobSpec> missing = LoadJobSpec(path);
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(missing.status().message(),
            "cannot read job file '" + path + "': No such file or directory");
}

TEST(LoadJobSpecTest, ShippedExampleIsValid) {
  absl::StatusOr<JobSpec> spec = LoadJobSpec(DLAUNCH_SOURCE_DIR "/examples/local.yaml");
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->min_nodes, 2);
  EXPECT_EQ(spec->nproc_per_node, 2);
  EXPECT_EQ(spec->node_launcher, "local");
  EXPECT_EQ(spec->command[0], "dlaunch-worker");
}

TEST(LoadJobSpecTest, DocumentedExampleIsValid) {
  std::ifstream doc(DLAUNCH_SOURCE_DIR "/docs/job-spec.md");
  std::stringstream text;
  text << doc.rdbuf();
  const std::string markdown = text.str();
  const size_t start = markdown.find("```yaml\n");
  ASSERT_NE(start, std::string::npos);
  const size_t end = markdown.find("```", start + 8);
  const std::string example = markdown.substr(start + 8, end - start - 8);
  const JobSpec spec = Parse(example);
  EXPECT_EQ(spec.name, "resnet50-scaling");
  EXPECT_EQ(spec.max_nodes, 8);
  EXPECT_THAT(spec.command, ElementsAre("python3", "train.py", "--epochs", "90", "--lr", "0.1"));
  EXPECT_THAT(spec.hosts, ElementsAre("x3004c0s1b0n0", "x3004c0s2b0n0", "x3004c0s3b0n0",
                                      "x3004c0s4b0n0"));
  EXPECT_EQ(spec.scheduler.walltime_s, 3600);
  EXPECT_THAT(spec.show_ranks, ElementsAre(0));
}

}  // namespace
}  // namespace dlaunch
