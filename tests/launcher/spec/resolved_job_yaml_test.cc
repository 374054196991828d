// ResolvedJobYaml: every key written, and parsing it again gives an equal spec.
#include "launcher/spec/resolved_job_yaml.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "launcher/spec/job_spec_parser.h"

namespace dlaunch {
namespace {

JobSpec Parse(const std::string& text) {
  absl::StatusOr<JobSpec> spec = ParseJobSpec(text, "job.yaml");
  EXPECT_TRUE(spec.ok()) << spec.status();
  return spec.ok() ? *spec : JobSpec{};
}

TEST(ResolvedJobYamlTest, RoundTripsToAnEqualSpec) {
  const std::vector<std::string> jobs = {
      "command: [x]\n",
      "name: full\nnodes: {min: 2, max: 8}\nnproc_per_node: 4\n"
      "command: [python3, \"-c\", \"print('hi there')\", \"\", \"yes\", \"#x\", \"a: b\", "
      "\"quote\\\"s\\\\\", \"tab\\there\", \"01\", \"~\", \"-\"]\n"
      "env: {A: \"1\", B: \"\", C: \"x y\", D: \"null\"}\nworkdir: /w d\n"
      "hosts: n[1-3]\nlauncher: ssh\n"
      "rendezvous: {port: 1, master_port: 2, join_timeout: 0.1, last_call: 1.25}\n"
      "heartbeat: {interval: 250ms, misses: 9}\nstop: {grace: 1h, exit_timeout: off}\n"
      "health: {stall_timeout: 90s, startup_timeout: off}\nmax_restarts: 2\n"
      "logs: {dir: \"out dir\", ranks: [3, 1], tail_lines: 0, summary_interval: 0}\n"
      "gpus: {binding: isolate, per_proc: 1}\n"
      "cpus: {map: [\"0-3,8\", {cpus: \"9,4\", gpu: 1}, \"10\", \"11\"]}\n"
      "scheduler: {type: slurm, site: s, account: a, queue: q, walltime: \"30:00\", "
      "filesystems: [home], modules: [m1, m2], setup: [\"echo $HOME\", \"cd /x\"], "
      "directives: {\"--gres\": \"gpu:4\", place: scatter}}\n",
      "nodes: 3\nnproc_per_node: gpu\ncommand: a b c\n",
      "command: [x]\ncpus: {binding: none}\n",
      "nodes: {min: 2, max: 2, spares: 1}\ncommand: [x]\nmax_restarts: 3\n"
      "restart: in_process\n"
      "restarts: {backoff: 1s, backoff_max: 10s, crash_loop: 0, node_failures: 5}\n",
      "command: [x]\nstop: {exit_timeout: 2s}\nhealth: {stall_timeout: off}\n",
      "command: [x]\ngpus: {per_node: 4}\npreflight: {timeout: 5s, min_free: 1.5G, "
      "paths: [/lus/scratch, /local], clock_offset: off, imports: [torch, numpy], "
      "import_check: import}\n",
      "command: [x]\npreflight: off\n",
      "command: [x]\nrendezvous: {relay_fanout: 64}\n",
      "command: [x]\nrendezvous: {relay_fanout: auto}\n",
  };
  for (const std::string& text : jobs) {
    const JobSpec spec = Parse(text);
    const std::string resolved = ResolvedJobYaml(spec);
    absl::StatusOr<JobSpec> again = ParseJobSpec(resolved, "job.yaml");
    ASSERT_TRUE(again.ok()) << again.status() << "\n" << resolved;
    EXPECT_TRUE(*again == spec) << resolved;
    EXPECT_EQ(ResolvedJobYaml(*again), resolved);
  }
}

TEST(ResolvedJobYamlTest, WritesEveryKey) {
  const std::string resolved = ResolvedJobYaml(Parse("command: [x]\n"));
  EXPECT_EQ(resolved,
            "# Resolved job: every setting of docs/job-spec.md, defaults filled in.\n"
            "name: dlaunch-job\n"
            "nodes: auto\n"
            "nproc_per_node: gpu\n"
            "command: [x]\n"
            "env: {}\n"
            "workdir: \"\"\n"
            "hosts: []\n"
            "launcher: auto\n"
            "rendezvous:\n"
            "  port: 0\n"
            "  tls: \"on\"\n"
      "  relay_fanout: 0\n"
            "  master_port: 0\n"
            "  worker_store: rank0\n"
            "  join_timeout: 5m\n"
            "  last_call: 10s\n"
            "heartbeat:\n"
            "  interval: 2s\n"
            "  misses: 3\n"
            "stop:\n"
            "  grace: 10s\n"
            "  exit_timeout: 30s\n"
            "health:\n"
            "  stall_timeout: \"auto\"\n"
            "  startup_timeout: 10m\n"
            "stragglers:\n"
            "  policy: report\n"
            "  threshold: 1.25\n"
            "  interval: 5s\n"
            "  intervals: 3\n"
            "  warmup_steps: 5\n"
            "max_restarts: 0\n"
            "restart: respawn\n"
            "restarts:\n"
            "  backoff: 0s\n"
            "  backoff_max: 30s\n"
            "  crash_loop: 3\n"
            "  node_failures: 2\n"
            "  warm_start: \"off\"\n"
            "logs:\n"
            "  dir: runs\n"
            "  ranks: all\n"
            "  tail_lines: 20\n"
            "  summary_interval: 5s\n"
            "gpus:\n"
            "  binding: shared\n"
            "  per_proc: 0\n"
            "  per_node: 0\n"
            "cpus:\n"
            "  binding: cores\n"
            "  map: []\n"
            "preflight:\n"
            "  timeout: 30s\n"
            "  min_free: 1GiB\n"
            "  paths: []\n"
            "  clock_offset: 10s\n"
            "  imports: auto\n"
            "  import_check: locate\n"
            "  collective: auto\n"
            "  collective_engine: auto\n"
            "  collective_budget: 20s\n"
            "  collective_size: 4MiB\n"
            "  slow_share: \"20%\"\n"
            "scheduler:\n"
            "  type: \"\"\n"
            "  site: \"\"\n"
            "  account: \"\"\n"
            "  queue: \"\"\n"
            "  walltime: \"\"\n"
            "  filesystems: []\n"
            "  modules: []\n"
            "  setup: []\n"
            "  python_setup: site\n"
            "  directives: {}\n");
}

}  // namespace
}  // namespace dlaunch
