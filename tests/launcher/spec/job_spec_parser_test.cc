#include "launcher/spec/job_spec_parser.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <sstream>

namespace dlaunch {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Pair;
using ::testing::UnorderedElementsAre;

JobSpec Parse(const std::string& text) {
  absl::StatusOr<JobSpec> spec = ParseJobSpec(text, "job.yaml");
  EXPECT_TRUE(spec.ok()) << spec.status();
  return spec.ok() ? *spec : JobSpec{};
}

// The whole error message (every problem, one per line).
std::string Errors(const std::string& text) {
  absl::StatusOr<JobSpec> spec = ParseJobSpec(text, "job.yaml");
  EXPECT_FALSE(spec.ok()) << text;
  EXPECT_EQ(spec.status().code(), absl::StatusCode::kInvalidArgument);
  return std::string(spec.status().message());
}

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
restarts: {backoff: 2s, backoff_max: 1m, crash_loop: 4, node_failures: 0}
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
  EXPECT_EQ(spec.restart_backoff_s, 2);
  EXPECT_EQ(spec.restart_backoff_max_s, 60);
  EXPECT_EQ(spec.crash_loop_limit, 4);
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

TEST(ParseJobSpecTest, UnknownKeysSuggestTheNearestKey) {
  EXPECT_EQ(Errors("command: [x]\nnodez: 2\n"),
            "job.yaml:2:1: unknown key 'nodez' (did you mean 'nodes'?)");
  EXPECT_EQ(Errors("command: [x]\nrendezvous:\n  prot: 1\n"),
            "job.yaml:3:3: unknown key 'prot' in 'rendezvous' (did you mean 'port'?)");
  EXPECT_EQ(Errors("command: [x]\nport: 1\n"),
            "job.yaml:2:1: unknown key 'port' (did you mean 'rendezvous.port'?)");
  EXPECT_EQ(Errors("command: [x]\nnproc: 2\n"),
            "job.yaml:2:1: unknown key 'nproc' (did you mean 'nproc_per_node'?)");
  EXPECT_EQ(Errors("command: [x]\nbanana: 2\n"), "job.yaml:2:1: unknown key 'banana'");
  EXPECT_EQ(Errors("command: [x]\nlogs: {max_restarts: 1}\n"),
            "job.yaml:2:8: unknown key 'max_restarts' in 'logs' (did you mean 'max_restarts'?)");
}

TEST(ParseJobSpecTest, WrongTypesNameTheKeyAndTheValue) {
  EXPECT_EQ(Errors("command: [x]\n\n\n\nnproc_per_node:   \"two\"\n"),
            "job.yaml:5:19: nproc_per_node must be a positive integer or \"gpu\", got \"two\"");
  EXPECT_EQ(Errors("command: [x]\nnproc_per_node: 0\n"),
            "job.yaml:2:17: nproc_per_node must be a positive integer or \"gpu\", got 0");
  EXPECT_EQ(Errors("command: [x]\nnodes: many\n"),
            "job.yaml:2:8: nodes must be a positive integer, \"auto\", \"MIN:MAX\" or a mapping "
            "{min, max}, got \"many\"");
  EXPECT_EQ(Errors("command: [x]\nmax_restarts: [1]\n"),
            "job.yaml:2:15: max_restarts must be an integer, got a list");
  EXPECT_EQ(Errors("command: [x]\nmax_restarts:\n"),
            "job.yaml:2:1: max_restarts must be an integer, got nothing");
  EXPECT_EQ(Errors("command: [x]\nheartbeat: {interval: soon}\n"),
            "job.yaml:2:23: heartbeat.interval must be a duration (seconds, or a string such as "
            "\"30s\", \"5m\", \"1h\", \"250ms\"), got \"soon\"");
  EXPECT_EQ(Errors("command: [x]\nenv: [A, B]\n"),
            "job.yaml:2:6: env must be a mapping of names to values, got a list");
  EXPECT_EQ(Errors("command: [x]\nenv: {A: [1]}\n"),
            "job.yaml:2:10: env.A must be a string, got a list");
  EXPECT_EQ(Errors("command: [x, {a: b}]\n"),
            "job.yaml:1:14: command[1] must be a string, got a mapping");
  EXPECT_EQ(Errors("command: [x]\nrendezvous: 5\n"),
            "job.yaml:2:13: rendezvous must be a mapping with keys port, tls, master_port, "
            "worker_store, join_timeout, last_call, got 5");
  EXPECT_EQ(Errors("command: [x]\nrendezvous:\n  worker_store: rank_0\n"),
            "job.yaml:3:17: rendezvous.worker_store must be \"agent\" or \"rank0\", got "
            "\"rank_0\" (did you mean 'rank0'?)");
  EXPECT_EQ(Errors("command: [x]\nname: {a: 1}\n"),
            "job.yaml:2:7: name must be a string, got a mapping");
  EXPECT_EQ(Errors("command: [x]\ngpus: {binding: isolated}\n"),
            "job.yaml:2:17: gpus.binding must be \"shared\" or \"isolate\", got \"isolated\" "
            "(did you mean 'isolate'?)");
  EXPECT_EQ(Errors("command: [x]\nlogs: {ranks: [0, x]}\n"),
            "job.yaml:2:19: logs.ranks must be \"all\" or a list of ranks, got \"x\"");
  EXPECT_EQ(Errors("command: [x]\nscheduler: {walltime: \"1 hour\"}\n"),
            "job.yaml:2:23: scheduler.walltime must be a walltime (\"HH:MM:SS\", \"MM:SS\" or "
            "minutes), got \"1 hour\"");
  EXPECT_EQ(Errors("command: [x]\nscheduler: {walltime: \"0:00\"}\n"),
            "job.yaml:2:23: scheduler.walltime must be positive, got \"0:00\"");
  EXPECT_EQ(Errors("command: [x]\nhosts: \"n[1-\"\n"),
            "job.yaml:2:8: hosts: bad hostlist \"n[1-\": '[' at offset 1 has no matching ']'");
  // Found by fuzzing: bytes no host name has, in ranges that multiply to 753,571 names, cost
  // 3.4 s and 0.5 GB (2 GB under the sanitizers) before this was refused.
  EXPECT_EQ(Errors("command: [x]\nhosts: \"n\\xff[0-90]x[0-90]\"\n"),
            "job.yaml:2:8: hosts: \"n\\xc3\\xbf[0-90]x[0-90]\" holds '\\xc3', which no host name has "
            "(letters, digits, '-', '.', '_')");
  EXPECT_EQ(Errors("command: [x]\nhosts: \"a[0-90]b[0-90]c[0-90]\"\n"),
            "job.yaml:2:8: hosts: bad hostlist \"a[0-90]b[0-90]c[0-90]\": more than 100000 hosts");
  // Lists that each fit, together past what a job may have.
  EXPECT_EQ(Errors("command: [x]\nhosts: [\"a[0-59999]\", \"b[0-59999]\"]\n"),
            "job.yaml:2:8: hosts: more than 100000 hosts (120000 so far); no machine has that many "
            "nodes: is a range mistyped?");
}

TEST(ParseJobSpecTest, RangesAndValues) {
  EXPECT_EQ(Errors("command: [x]\nnodes: {min: 4, max: 2}\n"),
            "job.yaml:2:22: nodes.max (2) must not be less than nodes.min (4)");
  EXPECT_EQ(Errors("command: [x]\nnodes: \"4:2\"\n"),
            "job.yaml:2:8: nodes.max (2) must not be less than nodes.min (4)");
  EXPECT_EQ(Errors("command: [x]\nnodes: 0\n"), "job.yaml:2:8: nodes must be at least 1, got 0");
  EXPECT_EQ(Errors("command: [x]\nnodes: {min: 0, max: 2}\n"),
            "job.yaml:2:14: nodes.min must be at least 1, got 0");
  EXPECT_EQ(Errors("command: [x]\nrendezvous: {port: 70000, master_port: -1}\n"),
            "job.yaml:2:20: rendezvous.port must be in 0..65535, got 70000\n"
            "job.yaml:2:40: rendezvous.master_port must be in 0..65535, got -1");
  EXPECT_EQ(Errors("command: [x]\nrendezvous: {port: 29500, master_port: 29500}\n"),
            "job.yaml:2:40: rendezvous.master_port must differ from rendezvous.port (both 29500)");
  EXPECT_EQ(Errors("command: [x]\nrendezvous: {join_timeout: 0, last_call: -1s}\n"),
            "job.yaml:2:28: rendezvous.join_timeout must be positive, got 0s\n"
            "job.yaml:2:42: rendezvous.last_call must not be negative, got -1s");
  EXPECT_EQ(Errors("command: [x]\nheartbeat: {misses: 0}\n"),
            "job.yaml:2:21: heartbeat.misses must be at least 1, got 0");
  EXPECT_EQ(Errors("command: [x]\nstop: {grace: -250ms}\n"),
            "job.yaml:2:15: stop.grace must not be negative, got -250ms");
  EXPECT_EQ(Errors("command: [x]\nstop: {exit_timeout: -1s}\n"),
            "job.yaml:2:22: stop.exit_timeout must not be negative, got -1s");
  EXPECT_EQ(Errors("command: [x]\nhealth: {stall_timeout: of}\n"),
            "job.yaml:2:25: health.stall_timeout must be a duration (seconds, or a string such "
            "as \"30s\", \"5m\") or \"auto\" or \"off\", got \"of\"; did you mean \"off\"?");
  EXPECT_EQ(Errors("command: [x]\nhealth: {stall_timeot: 3s}\n"),
            "job.yaml:2:10: unknown key 'stall_timeot' in 'health' (did you mean 'stall_timeout'?)");
  EXPECT_EQ(Errors("command: [x]\nmax_restarts: -1\n"),
            "job.yaml:2:15: max_restarts must not be negative, got -1");
  EXPECT_EQ(Errors("command: [x]\nnodes: {min: 1, max: 2, spares: -1}\n"),
            "job.yaml:2:33: nodes.spares must not be negative, got -1");
  EXPECT_EQ(Errors("command: [x]\nnodes: {min: 1, spare: 1}\n"),
            "job.yaml:2:17: unknown key 'spare' in 'nodes' (did you mean 'spares'?)");
  EXPECT_EQ(Errors("command: [x]\nrestarts: {backof: 1s}\n"),
            "job.yaml:2:12: unknown key 'backof' in 'restarts' (did you mean 'backoff'?)");
  EXPECT_EQ(Errors("command: [x]\nrestart: {backoff: 1s}\n"),
            "job.yaml:2:1: unknown key 'restart' (did you mean 'restarts'?)");
  EXPECT_EQ(Errors("command: [x]\nrestarts: {backoff: 10s, backoff_max: 5s}\n"),
            "job.yaml:2:39: restarts.backoff_max (5s) must not be less than restarts.backoff (10s)");
  EXPECT_EQ(Errors("command: [x]\nrestarts: {crash_loop: -2}\n"),
            "job.yaml:2:24: restarts.crash_loop must not be negative, got -2");
  EXPECT_EQ(Errors("command: [x]\nrestarts: {node_failures: two}\n"),
            "job.yaml:2:27: restarts.node_failures must be an integer, got \"two\"");
  EXPECT_EQ(Errors("command: [x]\nrestarts: {backoff: soon}\n"),
            "job.yaml:2:21: restarts.backoff must be a duration (seconds, or a string such as "
            "\"30s\", \"5m\", \"1h\", \"250ms\"), got \"soon\"");
  EXPECT_EQ(Errors("command: [x]\nname: my job\n"),
            "job.yaml:2:7: name must be letters, digits, '.', '_' or '-', got \"my job\"");
  EXPECT_EQ(Errors("command: [x]\nlauncher: mpiexe\n"),
            "job.yaml:2:11: launcher must be one of auto, local, ssh, mpiexec, mpirun, srun, "
            "got \"mpiexe\" (did you mean 'mpiexec'?)");
  EXPECT_EQ(Errors("command: [x]\nscheduler: {type: pbspro}\n"),
            "job.yaml:2:19: scheduler.type must be one of pbs, cobalt, slurm, local, got "
            "\"pbspro\"");
  EXPECT_EQ(Errors("command: [x]\nenv:\n  OK: 1\n  BAD-NAME: 2\n"),
            "job.yaml:4:3: env name 'BAD-NAME' is not a valid environment variable name");
  EXPECT_EQ(Errors("command: [x]\nlogs: {ranks: [], tail_lines: -1}\n"),
            "job.yaml:2:15: logs.ranks must be \"all\" or a non-empty list of ranks\n"
            "job.yaml:2:31: logs.tail_lines must not be negative, got -1");
  EXPECT_EQ(Errors("command: [x]\nlogs:\n  ranks:\n    - 0\n    - -2\n"),
            "job.yaml:5:7: logs.ranks[1] must be a rank (0 or more), got -2");
  EXPECT_EQ(Errors("command: [x]\ngpus: {per_proc: -1}\n"),
            "job.yaml:2:18: gpus.per_proc must not be negative, got -1");
  EXPECT_EQ(Errors("command: [x]\nlogs: {dir: \"\"}\n"), "job.yaml:2:13: logs.dir must not be empty");
}

TEST(ParseJobSpecTest, CommandProblems) {
  EXPECT_EQ(Errors("name: a\n"), "job.yaml:1:1: missing required key 'command'");
  EXPECT_EQ(Errors(""), "job.yaml:1:1: missing required key 'command'");
  EXPECT_EQ(Errors("# only a comment\n"), "job.yaml:1:1: missing required key 'command'");
  EXPECT_EQ(Errors("command: []\n"), "job.yaml:1:10: command must not be empty");
  EXPECT_EQ(Errors("command:\n"), "job.yaml:1:1: command must not be empty");
  EXPECT_EQ(Errors("command: ['', a]\n"),
            "job.yaml:1:10: command[0] (the program) must not be empty");
  EXPECT_EQ(Errors("command: python train.py > log\n"),
            "job.yaml:1:10: command: '>' needs a shell, and dlaunch runs the program directly; "
            "write the command as a list, e.g. [bash, -c, \"...\"]");
  EXPECT_EQ(Errors("command: echo 'unterminated\n"),
            "job.yaml:1:10: command: unterminated single quote");
}

TEST(ParseJobSpecTest, EveryProblemIsReportedInFileOrder) {
  const std::string text =
      "nodez: 2\n"                    // 1
      "nproc_per_node: two\n"         // 2
      "rendezvous:\n"                 // 3
      "  port: 99999\n"               // 4
      "  join_timout: 5m\n"           // 5
      "heartbeat: {interval: 0}\n"    // 6
      "launcher: bogus\n";            // 7
  EXPECT_EQ(Errors(text),
            "job.yaml:1:1: unknown key 'nodez' (did you mean 'nodes'?)\n"
            "job.yaml:1:1: missing required key 'command'\n"
            "job.yaml:2:17: nproc_per_node must be a positive integer or \"gpu\", got \"two\"\n"
            "job.yaml:4:9: rendezvous.port must be in 0..65535, got 99999\n"
            "job.yaml:5:3: unknown key 'join_timout' in 'rendezvous' (did you mean "
            "'join_timeout'?)\n"
            "job.yaml:6:23: heartbeat.interval must be positive, got 0s\n"
            "job.yaml:7:11: launcher must be one of auto, local, ssh, mpiexec, mpirun, srun, got "
            "\"bogus\"");
}

TEST(ParseJobSpecTest, DuplicateKeys) {
  EXPECT_EQ(Errors("command: [x]\nnodes: 1\nnodes: 2\n"),
            "job.yaml:3:1: duplicate key 'nodes' (first given on line 2)");
  EXPECT_EQ(Errors("command: [x]\nenv: {A: 1, A: 2}\n"), "job.yaml:2:13: duplicate key 'env.A'");
}

TEST(ParseJobSpecTest, YamlSyntaxAndShape) {
  EXPECT_EQ(Errors("command: [x\n"),
            "job.yaml:2:1: YAML syntax error: end of sequence flow not found");
  EXPECT_EQ(Errors("- a\n- b\n"),
            "job.yaml:1:1: a job must be a mapping of keys (name:, nodes:, command: ...), got a "
            "list");
  EXPECT_EQ(Errors("command: [x]\n---\ncommand: [y]\n"),
            "job.yaml:2:1: a job file holds one YAML document, found a second one here");
  // yaml-cpp alone loops forever on these.
  EXPECT_EQ(Errors(", a\nb: 1\n"), "job.yaml:1:1: YAML syntax error: unexpected ','");
  EXPECT_EQ(Errors("command: [x]\n---\n, b\n"),
            "job.yaml:2:1: a job file holds one YAML document, found a second one here");
  EXPECT_THAT(Errors("command: [x]\n\"a\": &x\n  b: *y\n"), HasSubstr("job.yaml:"));
}

// Ten aliases of ten aliases ... `levels` deep: 10^levels values once expanded.
std::string AliasBomb(int levels) {
  std::string text = "x0: &a0 [x, x, x, x, x, x, x, x, x, x]\n";
  for (int i = 1; i < levels; ++i) {
    text += "x" + std::to_string(i) + ": &a" + std::to_string(i) + " [";
    for (int k = 0; k < 10; ++k) text += (k ? ", *a" : "*a") + std::to_string(i - 1);
    text += "]\n";
  }
  return text + "command: [x]\n";
}

TEST(ParseJobSpecTest, WhatAFileMayCostIsBounded) {
  EXPECT_EQ(Errors("command: [x]\n" + std::string(2 << 20, '#')),
            "job.yaml: 2097165 bytes is more than the 262144 bytes (256 KiB) a job file may hold");
  EXPECT_EQ(Errors(AliasBomb(9)),
            "job.yaml:5:55: the document holds more than 100000 values once its aliases are "
            "expanded");
  EXPECT_THAT(Errors(AliasBomb(4)), HasSubstr("unknown key 'x0'"));  // 10^4 values: just read
  EXPECT_EQ(Errors("command: " + std::string(100000, '[') + std::string(100000, ']') + "\n"),
            "job.yaml:1:73: lists and mappings nest more than 64 levels deep");
  std::string map = "1";
  for (int i = 0; i < 100; ++i) map = "{k: " + map + "}";
  EXPECT_EQ(Errors("command: [x]\nenv: " + map + "\n"),
            "job.yaml:2:258: lists and mappings nest more than 64 levels deep");
}

TEST(ParseJobSpecTest, PreflightSectionAndGpusPerNode) {
  const JobSpec defaults = Parse("command: [x]\n");
  EXPECT_TRUE(defaults.preflight.enabled);
  EXPECT_EQ(defaults.preflight.min_free_bytes, int64_t{1} << 30);
  EXPECT_TRUE(defaults.preflight.imports_auto);
  const JobSpec spec = Parse(
      "command: [x]\ngpus: {per_node: 4}\n"
      "preflight: {timeout: 5s, min_free: 500MB, paths: [/scratch], clock_offset: off, "
      "imports: [torch]}\n");
  EXPECT_EQ(spec.gpus_per_node, 4);
  EXPECT_EQ(spec.preflight.timeout_s, 5);
  EXPECT_EQ(spec.preflight.min_free_bytes, 500000000);
  EXPECT_THAT(spec.preflight.paths, ElementsAre("/scratch"));
  EXPECT_EQ(spec.preflight.max_clock_offset_s, 0);
  EXPECT_FALSE(spec.preflight.imports_auto);
  EXPECT_THAT(spec.preflight.imports, ElementsAre("torch"));
  EXPECT_FALSE(Parse("command: [x]\npreflight: off\n").preflight.enabled);
}

TEST(ParseJobSpecTest, TheControlChannelIsEncryptedUnlessTurnedOff) {
  EXPECT_TRUE(Parse("command: [x]\n").control_tls);
  EXPECT_TRUE(Parse("command: [x]\nrendezvous: {tls: on}\n").control_tls);
  EXPECT_FALSE(Parse("command: [x]\nrendezvous: {tls: off}\n").control_tls);
  EXPECT_THAT(Errors("command: [x]\nrendezvous:\n  tls: maybe\n"),
              HasSubstr("job.yaml:3:8: rendezvous.tls must be \"on\" or \"off\", got \"maybe\""));
}

TEST(ParseJobSpecTest, BadPreflightValuesAreNamedWhereTheyAre) {
  EXPECT_THAT(Errors("command: [x]\npreflight: {min_free: lots}\n"),
              HasSubstr("job.yaml:2:23: preflight.min_free must be a size"));
  EXPECT_THAT(Errors("command: [x]\npreflight: maybe\n"), HasSubstr("job.yaml:2:12"));
  EXPECT_THAT(Errors("command: [x]\npreflight: {timeout: 0}\n"),
              HasSubstr("preflight.timeout"));
  EXPECT_THAT(Errors("command: [x]\npreflight: {min_fre: 1G}\n"), HasSubstr("min_free"));
  EXPECT_THAT(Errors("command: [x]\ngpus: {per_node: -1}\n"), HasSubstr("gpus.per_node"));
}

TEST(LoadJobSpecTest, AFileOf100MBIsRefusedWithoutReadingIt) {
  char path[] = "/tmp/dlaunch-huge-job-XXXXXX";
  const int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(ftruncate(fd, 100 << 20), 0);  // sparse: nothing written
  close(fd);
  absl::StatusOr<JobSpec> spec = LoadJobSpec(path);
  std::remove(path);
  ASSERT_FALSE(spec.ok());
  EXPECT_EQ(spec.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(spec.status().message(),
            std::string(path) + ": more than the 262144 bytes (256 KiB) a job file may hold");
}

TEST(ParseJobSpecTest, ErrorsUseTheGivenFileName) {
  absl::StatusOr<JobSpec> spec = ParseJobSpec("nodez: 1\ncommand: [x]\n", "examples/a.yaml");
  ASSERT_FALSE(spec.ok());
  EXPECT_EQ(spec.status().message(),
            "examples/a.yaml:1:1: unknown key 'nodez' (did you mean 'nodes'?)");
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
