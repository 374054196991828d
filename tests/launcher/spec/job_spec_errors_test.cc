// The job.yaml parser's errors: unknown keys, wrong types, ranges, every problem in file order
// with its line and column, and the bounds on what a file may cost.
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "launcher/spec/job_spec_parser.h"
#include "tests/launcher/spec/job_spec_testing.h"

namespace dlaunch {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using spec_testing::Errors;
using spec_testing::Parse;

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
            "job.yaml:2:13: rendezvous must be a mapping with keys port, tls, relay_fanout, master_port, "
            "worker_store, join_timeout, last_call, got 5");
  EXPECT_EQ(Errors("command: [x]\nrestart: inprocess\n"),
            "job.yaml:2:10: restart must be \"respawn\" or \"in_process\", got \"inprocess\" (did you mean 'in_process'?)");
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
            "job.yaml:2:10: restart must be \"respawn\" or \"in_process\" (backoff, crash_loop "
            "and node_failures go under 'restarts'), got a mapping");
  EXPECT_EQ(Errors("command: [x]\nrestarts: {backoff: 10s, backoff_max: 5s}\n"),
            "job.yaml:2:39: restarts.backoff_max (5s) must not be less than restarts.backoff (10s)");
  EXPECT_EQ(Errors("command: [x]\nrestarts: {crash_loop: -2}\n"),
            "job.yaml:2:24: restarts.crash_loop must not be negative, got -2");
  EXPECT_EQ(Errors("command: [x]\nrestarts: {warm_start: warm}\n"),
            "job.yaml:2:24: restarts.warm_start must be \"on\" or \"off\" or \"auto\", got \"warm\"");
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

TEST(ParseJobSpecTest, BadPreflightValuesAreNamedWhereTheyAre) {
  EXPECT_THAT(Errors("command: [x]\npreflight: {min_free: lots}\n"),
              HasSubstr("job.yaml:2:23: preflight.min_free must be a size"));
  EXPECT_THAT(Errors("command: [x]\npreflight: maybe\n"), HasSubstr("job.yaml:2:12"));
  EXPECT_THAT(Errors("command: [x]\npreflight: {timeout: 0}\n"),
              HasSubstr("preflight.timeout"));
  EXPECT_THAT(Errors("command: [x]\npreflight: {min_fre: 1G}\n"), HasSubstr("min_free"));
  EXPECT_THAT(Errors("command: [x]\npreflight: {import_check: maybe}\n"),
              HasSubstr("preflight.import_check"));
  EXPECT_THAT(Errors("command: [x]\ngpus: {per_node: -1}\n"), HasSubstr("gpus.per_node"));
}

TEST(ParseJobSpecTest, StragglerValuesAreReadAndBadOnesNamedWhereTheyAre) {
  JobSpec spec = Parse(
      "command: [x]\nstragglers:\n  policy: exclude\n  threshold: 1.5\n  interval: 2s\n"
      "  intervals: 4\n  warmup_steps: 0\n");
  EXPECT_EQ(spec.stragglers.policy, "exclude");
  EXPECT_DOUBLE_EQ(spec.stragglers.threshold, 1.5);
  EXPECT_DOUBLE_EQ(spec.stragglers.interval_s, 2);
  EXPECT_EQ(spec.stragglers.intervals, 4);
  EXPECT_EQ(spec.stragglers.warmup_steps, 0);
  EXPECT_EQ(Parse("command: [x]\n").stragglers, StragglerSpec{});
  EXPECT_THAT(Errors("command: [x]\nstragglers: {policy: kick}\n"),
              HasSubstr("job.yaml:2:22: stragglers.policy must be \"report\" or \"exclude\" or \"off\", got \"kick\""));
  EXPECT_THAT(Errors("command: [x]\nstragglers:\n  threshold: 0.8\n"),
              HasSubstr("job.yaml:3:14: stragglers.threshold must be more than 1"));
  EXPECT_THAT(Errors("command: [x]\nstragglers:\n  threshold: fast\n"),
              HasSubstr("job.yaml:3:14: stragglers.threshold must be a number, got \"fast\""));
  EXPECT_THAT(Errors("command: [x]\nstragglers: {interval: 0}\n"),
              HasSubstr("job.yaml:2:24: stragglers.interval must be positive"));
  EXPECT_THAT(Errors("command: [x]\nstragglers: {intervals: 0}\n"),
              HasSubstr("job.yaml:2:25: stragglers.intervals must be at least 1"));
  EXPECT_THAT(Errors("command: [x]\nstragglers: {treshold: 2}\n"),
              HasSubstr("did you mean 'threshold'?"));
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

}  // namespace
}  // namespace dlaunch
