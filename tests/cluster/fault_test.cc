// Fault injection on namespace hosts: a 3-host x 2-rank job of tests/cluster/fault_worker.py,
// started by `dlaunch run` on the login host `head` over ssh, meets one fault at a time (a
// killed or crashed rank, a stopped rank, a frozen node, a killed agent, a cut link, a killed
// launcher, a rank hung at exit, a full disk, a taken MASTER_PORT). Each test checks that the
// root cause is named (class, rank, node, host in the first error line, events.jsonl and
// summary.json), that it was detected within a generous bound of docs/failures.md's numbers
// (times from events.jsonl), and that nothing of the job is left on any host. Each scenario
// runs twice: with max_restarts 0 the job ends with exit 1; with a restart left it restarts
// within a bound and then succeeds (or, where the fault outlives the restart, fails again).
#include <signal.h>
#include <unistd.h>

#include <iostream>
#include <regex>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "fault_cluster.h"
#include "gtest/gtest.h"

namespace dlaunch {
namespace testing {
namespace {

// The scenarios, each for a job without (restarts 0) or with one restart.
class FaultTest : public FaultClusterTest {
 protected:
  static FaultJobOptions Restarts(int restarts) {
    FaultJobOptions options;
    options.max_restarts = restarts;
    return options;
  }

  // The job's end as the scenario expects it: exit 1 without a restart; with one, a restart
  // within `restart_bound` and success in round 1 on `nodes_after` nodes.
  void ExpectOutcome(pid_t launcher, int restarts, absl::Duration restart_bound,
                     int nodes_after = kNodes) {
    const int code = WaitJobEnd(launcher);
    if (restarts == 0) {
      EXPECT_EQ(code, 1) << LauncherOutput();
    } else {
      EXPECT_EQ(code, 0) << LauncherOutput();
      ExpectRestartedAndSucceeded(nodes_after * kProcs, restart_bound);
    }
  }

  // A rank that kills itself with `sig` at step 5 of round 0.
  void WorkerSignal(const std::string& fault, int rank, int restarts) {
    pid_t launcher = StartJob(absl::StrCat(fault, "-r", restarts),
                              {"--fault", fault, "--fault-rank", absl::StrCat(rank)},
                              Restarts(restarts));
    ASSERT_GT(launcher, 0);
    ExpectOutcome(launcher, restarts, absl::Seconds(6));
    ExpectRootCause("worker crash", rank,
                    fault == "kill" ? "killed by signal 9" : "killed by signal 11");
    ExpectDetectedWithin(WorkerFaultTime(rank, fault), absl::Seconds(2));
    ExpectNothingLeft();
  }

  // One rank SIGSTOPped: alive, silent. Detected once health.stall_timeout (3 s) passes
  // without its progress, within a heartbeat of it; its stacks are recorded before the stop.
  void StoppedRank(int restarts) {
    FaultJobOptions options = Restarts(restarts);
    options.stall_timeout = "3s";
    pid_t launcher = StartJob(absl::StrCat("stall-r", restarts), {}, options);
    ASSERT_GT(launcher, 0);
    ASSERT_TRUE(WaitAllRanksAtStep(5)) << LauncherOutput();
    pid_t rank3 = RankPid(3);
    ASSERT_GT(rank3, 0);
    ASSERT_EQ(kill(rank3, SIGSTOP), 0);
    absl::Time stopped = absl::Now();
    // The stop waits for the stack dump (at most 10 s) and the stopped rank's SIGKILL (grace).
    ExpectOutcome(launcher, restarts, absl::Seconds(16));
    ExpectRootCause("stall", 3, "no progress for");
    absl::Duration took = FirstFailureTime() - stopped;
    EXPECT_GE(took, absl::Seconds(2.5)) << "a stall named before health.stall_timeout";
    EXPECT_LE(took, absl::Seconds(3 + 3)) << "stall_timeout 3 s";
    EXPECT_TRUE(absl::StrContains(ReadJobFile("stacks/rank-3.txt"), "Thread"))
        << "the stalled rank's stacks:\n" << ReadJobFile("stacks/rank-3.txt");
    ExpectNothingLeft();
  }

  // An unmodified DDP script (torch, gloo over the hosts' links, no reports) whose rank `rank`
  // stops in its own code while its peers block in the next collective, speaking last: the
  // rank silent longest is a waiting peer. Every rank's stacks, on every host, name the one
  // outside a collective (py-spy where the agent finds it, else gdb's native frames).
  void StoppedDdpRank(int rank) {
    if (RunCommand({"/usr/bin/python3", "-c", "import torch.distributed"}, absl::Seconds(120))
            .exit_code != 0) {
      GTEST_SKIP() << "python3-torch is not installed (scripts/install-deps.sh installs it)";
    }
    FaultJobOptions options;
    options.stall_timeout = "8s";
    options.preflight = "off";
    options.command = absl::StrCat("[\"/usr/bin/python3\", \"", DLAUNCH_SOURCE_DIR,
                                   "/tests/integration/ddp_stopped_rank.py\", \"", rank, "\"]");
    pid_t launcher = StartJob(absl::StrCat("ddp-stopped-", rank), {}, options);
    ASSERT_GT(launcher, 0);
    EXPECT_EQ(WaitJobEnd(launcher, absl::Seconds(180)), 1) << LauncherOutput();
    ExpectRootCause("stall", rank, "outside any collective");
    EXPECT_FALSE(absl::StrContains(LauncherOutput(), "(the failure reported above is a consequence)"))
        << LauncherOutput();
    // Every other rank, on every host, waits for it in a collective.
    std::vector<int> others;
    for (int r = 0; r < kNodes * kProcs; ++r) {
      if (r != rank) others.push_back(r);
    }
    const std::string last = std::to_string(others.back());
    others.pop_back();
    EXPECT_TRUE(absl::StrContains(LauncherOutput(),
                                  absl::StrCat("[dlaunch] ranks ", absl::StrJoin(others, ", "), " and ",
                                               last, " wait in ")))
        << LauncherOutput();
    ExpectNothingLeft();
  }

  // Agent and workers of h2 frozen: the launcher hears no heartbeat for interval x misses
  // (1 s x 3) and names the node, although the stall limit is as short (every rank stops making
  // progress at the same time). With a restart left and nodes.min 2, the job goes on on h1
  // and h3. Once the job has ended, the node thaws; its agent finds its session gone and
  // takes its workers with it.
  void FrozenNode(int restarts) {
    FaultJobOptions options = Restarts(restarts);
    options.nodes = "2:3";
    options.stall_timeout = "3s";
    pid_t launcher = StartJob(absl::StrCat("frozen-r", restarts), {}, options);
    ASSERT_GT(launcher, 0);
    ASSERT_TRUE(WaitAllRanksAtStep(5)) << LauncherOutput();
    std::vector<pid_t> frozen = HostJobPids("h2");
    ASSERT_FALSE(frozen.empty()) << "no job process on h2";
    for (pid_t pid : frozen) kill(pid, SIGSTOP);
    absl::Time frozen_at = absl::Now();
    // A frozen member never confirms its stop: the round waits out grace + margin for it.
    ExpectOutcome(launcher, restarts, absl::Seconds(12), 2);
    ExpectNodeRootCause("node silent", 1, "no heartbeat");
    absl::Duration took = FirstFailureTime() - frozen_at;
    EXPECT_GE(took, absl::Seconds(2)) << "named silent before heartbeat.interval x misses";
    EXPECT_LE(took, absl::Seconds(3 + 3));
    for (pid_t pid : frozen) kill(pid, SIGCONT);
    ExpectNothingLeft();
  }

  // h2's agent SIGKILLed: its session breaks (its workers die with it, PR_SET_PDEATHSIG).
  void KilledAgent(int restarts) {
    FaultJobOptions options = Restarts(restarts);
    options.nodes = "2:3";
    const std::string stamps = StampFile();
    pid_t launcher =
        StartJob(absl::StrCat("agentkill-r", restarts), {"--stamp-file", stamps}, options);
    ASSERT_GT(launcher, 0);
    ASSERT_TRUE(WaitAllRanksAtStep(5)) << LauncherOutput();
    pid_t agent = AgentPid("h2");
    ASSERT_GT(agent, 0);
    // The time is taken before the kill: the launcher can see the session end before this
    // thread runs again after kill() on a busy machine.
    absl::Time killed = absl::Now();
    ASSERT_EQ(kill(agent, SIGKILL), 0);
    const absl::Time workers_gone = WaitHostWorkersGone("h2", absl::Seconds(15));
    ExpectOutcome(launcher, restarts, absl::Seconds(6), 2);
    ExpectDetectedWithin(killed, absl::Seconds(2));
    if (restarts > 0) {
      const absl::Time round1 = FirstStamp(stamps, "start", 1);
      ASSERT_NE(round1, absl::InfiniteFuture()) << "no rank of round 1 started";
      EXPECT_LT(workers_gone, round1) << "h2's round-0 workers ran into round 1";
      PrintLostNode("agent-killed", killed, workers_gone, round1);
    }
    ExpectNothingLeft();
    // Here the agent is the node launcher's own process (the ssh replacement execs it), so its
    // death also ends that node launcher by a signal: the root cause must still be the node.
    ExpectNodeRootCause("agent lost", 1, "session ended");
  }

  // h2's link down: the launcher stops hearing it (node silent); the cut-off agent, with no
  // echo of its own messages for its lease (3 heartbeats and half a second), kills its workers and
  // exits, link still down, well before the launcher would give up on the node's stop and end
  // its node launcher (3 s + grace 2 s + 3 s + 5 s of slack). With a restart, round 1 starts
  // only after h2's workers are surely gone (docs/restarts.md, "No two rounds at once").
  // With `relay_fanout`, the agents' sessions go through relays on the launcher's host: the
  // cut-off agent's lease is renewed only by the launcher's echo passed on by its relay, so it
  // fences itself the same way.
  void Partition(int restarts, int relay_fanout = 0) {
    FaultJobOptions options = Restarts(restarts);
    options.nodes = "2:3";
    options.relay_fanout = relay_fanout;
    const std::string stamps = StampFile();
    pid_t launcher = StartJob(absl::StrCat("partition-r", restarts, relay_fanout ? "-relays" : ""),
                              {"--stamp-file", stamps}, options);
    ASSERT_GT(launcher, 0);
    ASSERT_TRUE(WaitAllRanksAtStep(5)) << LauncherOutput();
    ASSERT_TRUE(cluster_->CutLink("h2").ok());
    absl::Time cut = absl::Now();
    absl::Time workers_gone = WaitHostWorkersGone("h2", absl::Seconds(15));
    std::vector<std::string> left = WaitHostEmpty("h2", absl::Seconds(10));
    EXPECT_TRUE(left.empty()) << "the cut-off agent did not fence itself:\n"
                              << absl::StrJoin(left, "\n");
    const std::string agent_log = ReadJobFile("logs/agent-1.log");
    EXPECT_TRUE(absl::StrContains(agent_log, "no word from the launcher")) << agent_log;
    // Fenced: its workers are killed, not stopped with a grace.
    EXPECT_TRUE(absl::StrContains(agent_log, "killing workers")) << agent_log;
    ExpectOutcome(launcher, restarts, absl::Seconds(12), 2);
    ExpectNodeRootCause("node silent", 1, "no heartbeat");
    EXPECT_LE(FirstFailureTime() - cut, absl::Seconds(3.5 + 3));
    if (restarts > 0) {
      // No two rounds at once: h2's round-0 workers were gone before round 1's first started.
      const absl::Time round1 = FirstStamp(stamps, "start", 1);
      ASSERT_NE(round1, absl::InfiniteFuture()) << "no rank of round 1 started";
      EXPECT_LT(workers_gone, round1)
          << "h2's round-0 workers ran " << absl::FormatDuration(workers_gone - round1)
          << " into round 1";
      PrintLostNode("partition", cut, workers_gone, round1);
    }
    ASSERT_TRUE(cluster_->HealLink("h2").ok());
    ExpectNothingLeft();
  }

  // One line for bench/faults/lost_node.sh: the fault, the loss named, the cut-off node's
  // workers gone and round 1's first worker started, each from the fault.
  void PrintLostNode(const std::string& what, absl::Time fault, absl::Time workers_gone,
                     absl::Time round1) {
    const absl::Time named = FirstFailureTime();
    std::cout << absl::StrFormat(
        "lost-node %s: named %.3f s, workers gone %.3f s, round 1 started %.3f s after the "
        "fault; %.3f s after it was named\n",
        what, absl::ToDoubleSeconds(named - fault), absl::ToDoubleSeconds(workers_gone - fault),
        absl::ToDoubleSeconds(round1 - fault), absl::ToDoubleSeconds(round1 - named));
  }

  // The launcher SIGKILLed: every agent sees its stream break, stops its workers and exits
  // (with a restart left, the agents wait between rounds instead of exiting once their
  // workers end; they must still go).
  void KilledLauncher(int restarts) {
    pid_t launcher = StartJob(absl::StrCat("launcherkill-r", restarts), {}, Restarts(restarts));
    ASSERT_GT(launcher, 0);
    ASSERT_TRUE(WaitAllRanksAtStep(5)) << LauncherOutput();
    ASSERT_EQ(kill(launcher, SIGKILL), 0);
    absl::Time killed = absl::Now();
    ASSERT_TRUE(cluster_->WaitSpawned(launcher, absl::Seconds(10)).ok());
    // No launcher is left to write events: the hosts' process tables are the record here.
    std::vector<std::string> left = WaitNoJobProcesses(*cluster_, job_id(), absl::Seconds(10));
    EXPECT_TRUE(left.empty()) << absl::StrJoin(left, "\n");
    EXPECT_LE(absl::Now() - killed, absl::Seconds(5)) << "agents outlived the launcher";
    ExpectNothingLeft();
  }

  // Every rank but 3 finishes its 15 steps and exits 0; rank 3 stays, as a rank stuck in Gloo
  // teardown. Named at stop.exit_timeout (2 s) after the first rank exited, its stacks kept.
  void HangAtExit(int restarts) {
    FaultJobOptions options = Restarts(restarts);
    options.exit_timeout = "2s";
    pid_t launcher = StartJob(
        absl::StrCat("exithang-r", restarts),
        {"--round0-steps", "15", "--fault", "hang-exit", "--fault-rank", "3"}, options);
    ASSERT_GT(launcher, 0);
    // Not restarted even with a restart left: the other ranks finished their work, and a new
    // round would redo it (docs/failures.md: the job fails, naming the hung rank).
    EXPECT_EQ(WaitJobEnd(launcher), 1) << LauncherOutput();
    EXPECT_TRUE(absl::StrContains(ReadJobFile("summary.json"), "\"restarts\":0"))
        << ReadJobFile("summary.json");
    ExpectRootCause("hang at exit", 3, "after another rank exited 0");
    std::smatch m;
    std::string events = ReadJobFile("events.jsonl");
    ASSERT_TRUE(std::regex_search(
        events, m, std::regex("\"hang_detected\":\\{.*\"silent_s\":([0-9.]+)")))
        << events;
    double silent = std::stod(m[1]);
    EXPECT_GE(silent, 2.0);
    EXPECT_LE(silent, 2.0 + 1.5) << "named long after stop.exit_timeout";
    EXPECT_TRUE(absl::StrContains(ReadJobFile("summary.json"), "\"ranks_succeeded\":5"))
        << ReadJobFile("summary.json");
    EXPECT_TRUE(absl::StrContains(ReadJobFile("stacks/rank-3.txt"), "Thread"))
        << ReadJobFile("stacks/rank-3.txt");
    ExpectNothingLeft();
  }

  // Rank 0 checkpoints 96 KiB every 5 steps into a 160 KiB tmpfs: the second checkpoint runs
  // out of space half-way. The rank's own error, quoted from its log, is the root cause. A
  // restart resumes from the step-5 checkpoint and meets the same full disk at step 10: the
  // job fails again, with the same cause.
  void FullDisk(int restarts) {
    ScopedTmpfs ckpt("160k");
    ASSERT_TRUE(ckpt.ok()) << ckpt.error();
    pid_t launcher = StartJob(absl::StrCat("diskfull-r", restarts),
                              {"--checkpoint-dir", ckpt.path(), "--checkpoint-every", "5",
                               "--checkpoint-bytes", "98304", "--steps", "20"},
                              Restarts(restarts));
    ASSERT_GT(launcher, 0);
    EXPECT_EQ(WaitJobEnd(launcher), 1) << LauncherOutput();
    ExpectRootCause("worker crash", 0, "exited with code 1");
    EXPECT_TRUE(absl::StrContains(ReadJobFile("summary.json"), "No space left on device"))
        << ReadJobFile("summary.json");
    ExpectDetectedWithin(WorkerFaultTime(0, "checkpoint-failed"), absl::Seconds(2));
    if (restarts > 0) {
      EXPECT_TRUE(absl::StrContains(ReadJobFile("logs/rank-0.log"), "round 1: running from step 5"))
          << ReadJobFile("logs/rank-0.log");
      EXPECT_TRUE(absl::StrContains(ReadJobFile("summary.json"), "\"restarts\":1"))
          << ReadJobFile("summary.json");
    }
    ExpectNothingLeft();
  }

  // Something already listens on node 0's MASTER_PORT: rank 0 cannot open its store there. A
  // restart gets a fresh port from node 0 and succeeds.
  // A process on h1 listening on `port` (the job's master port); its pid.
  pid_t BlockPortOnH1(int port) {
    pid_t blocker = cluster_->SpawnOn(
        "h1", absl::StrCat("exec /usr/bin/python3 -c 'import socket,time; s=socket.socket(); ",
                           "s.bind((\"0.0.0.0\", ", port, ")); s.listen(); time.sleep(600)'"),
        cluster_->dir() + "/blocker.log");
    if (blocker > 0 && !WaitListening("h1", port)) {
      ADD_FAILURE() << ReadFileOrEmpty(cluster_->dir() + "/blocker.log");
    }
    return blocker;
  }

  // The port is taken when the worker binds it: with the preflight off (it would find the port
  // taken before any worker starts, as PreflightFindsTheTakenPort shows), rank 0 fails.
  void TakenMasterPort(int restarts) {
    const int port = 29517;
    pid_t blocker = BlockPortOnH1(port);
    ASSERT_GT(blocker, 0);
    FaultJobOptions options = Restarts(restarts);
    options.master_port = port;
    options.preflight = "off";
    pid_t launcher = StartJob(absl::StrCat("porttaken-r", restarts), {}, options);
    ASSERT_GT(launcher, 0);
    const int code = WaitJobEnd(launcher);
    ExpectRootCause("worker crash", 0, "exited with code 1");
    EXPECT_TRUE(absl::StrContains(ReadJobFile("events.jsonl"), "Address already in use"))
        << ReadJobFile("events.jsonl");
    ExpectDetectedWithin(WorkerFaultTime(0, "bind-failed"), absl::Seconds(2));
    kill(blocker, SIGKILL);
    ASSERT_TRUE(cluster_->WaitSpawned(blocker, absl::Seconds(10)).ok());
    ExpectNothingLeft();
    if (restarts == 0) {
      EXPECT_EQ(code, 1) << LauncherOutput();
      return;
    }
    const std::string reused = absl::StrCat("\"round\":1,\"round_started\":{",
                                            "\"node_ids\":[0,1,2],\"world_size\":6,",
                                            "\"master_addr\":\"", cluster_->HostIp("h1"),
                                            "\",\"master_port\":", port, "}");
    EXPECT_FALSE(absl::StrContains(ReadJobFile("events.jsonl"), reused))
        << "round 1 must not reuse the taken port " << port;
    EXPECT_EQ(code, 0) << LauncherOutput();
    ExpectRestartedAndSucceeded(kNodes * kProcs, absl::Seconds(6));
  }

  // The master port is taken on h1 before the job starts. With `nodes` exact (3) the job stops
  // at the preflight, naming h1 and the port, before any worker starts; with "2:3" h1 is left
  // out and the job runs on h2 and h3.
  void PreflightFindsTheTakenPort(const std::string& nodes) {
    const int port = 29518;
    pid_t blocker = BlockPortOnH1(port);
    ASSERT_GT(blocker, 0);
    FaultJobOptions options;
    options.master_port = port;
    options.nodes = nodes;
    pid_t launcher = StartJob(absl::StrCat("preflight-", nodes.size()),
                              {"--round0-steps", "5", "--step-time", "0.05"}, options);
    ASSERT_GT(launcher, 0);
    const int code = WaitJobEnd(launcher);
    kill(blocker, SIGKILL);
    ASSERT_TRUE(cluster_->WaitSpawned(blocker, absl::Seconds(10)).ok());
    const std::string out = LauncherOutput();
    const std::string named = absl::StrCat("h1: ports: port ", port, " is in use");
    EXPECT_TRUE(absl::StrContains(out, "node left out: h1")) << out;
    EXPECT_TRUE(absl::StrContains(ReadJobFile("events.jsonl"), "\"node_unfit\""));
    ExpectNothingLeft();
    if (nodes == "3") {
      EXPECT_EQ(code, 3) << out;
      EXPECT_TRUE(absl::StrContains(out, "preflight: 2 fit node(s) of 3 needed; no worker was started"))
          << out;
      EXPECT_TRUE(absl::StrContains(out, "\n  " + named)) << out;
      EXPECT_FALSE(absl::StrContains(ReadJobFile("events.jsonl"), "worker_started"));
      return;
    }
    EXPECT_EQ(code, 0) << out;
    EXPECT_TRUE(absl::StrContains(out, "rendezvous complete")) << out;
    EXPECT_TRUE(absl::StrContains(out, "2 node(s), world size 4")) << out;
    EXPECT_TRUE(absl::StrContains(out, absl::StrCat("MASTER_ADDR=", cluster_->HostIp("h2")))) << out;
  }
};

// The default run keeps one quick test per kind of fault (a rank, a node, the job's end, a
// resource); DLAUNCH_FAULT_SUITE=full runs them all.
TEST_F(FaultTest, WorkerSigkillEndsTheJob) { WorkerSignal("kill", 3, 0); }
TEST_F(FaultTest, WorkerSigkillRestarts) { WorkerSignal("kill", 3, 1); }
TEST_F(FaultTest, WorkerSigsegvEndsTheJob) {
  FAULT_SUITE_FULL_ONLY();
  WorkerSignal("segv", 4, 0);
}
TEST_F(FaultTest, WorkerSigsegvRestarts) {
  FAULT_SUITE_FULL_ONLY();
  WorkerSignal("segv", 4, 1);
}
TEST_F(FaultTest, StoppedRankIsAStall) {
  FAULT_SUITE_FULL_ONLY();
  StoppedRank(0);
}
TEST_F(FaultTest, StoppedRankRestarts) {
  FAULT_SUITE_FULL_ONLY();
  StoppedRank(1);
}
TEST_F(FaultTest, StoppedDdpRankOnTheSecondHostIsNamedNotAWaitingPeer) { StoppedDdpRank(3); }
TEST_F(FaultTest, StoppedDdpRankOnTheFirstHostIsNamedNotAWaitingPeer) {
  FAULT_SUITE_FULL_ONLY();
  StoppedDdpRank(1);
}
TEST_F(FaultTest, StoppedDdpRankOnTheThirdHostIsNamedNotAWaitingPeer) {
  FAULT_SUITE_FULL_ONLY();
  StoppedDdpRank(4);
}
TEST_F(FaultTest, FrozenNodeIsSilent) {
  FAULT_SUITE_FULL_ONLY();
  FrozenNode(0);
}
TEST_F(FaultTest, FrozenNodeDropsOutAndTheJobGoesOn) {
  FAULT_SUITE_FULL_ONLY();
  FrozenNode(1);
}
TEST_F(FaultTest, KilledAgentIsLost) { KilledAgent(0); }
TEST_F(FaultTest, KilledAgentsNodeDropsOutAndTheJobGoesOn) {
  FAULT_SUITE_FULL_ONLY();
  KilledAgent(1);
}
TEST_F(FaultTest, PartitionedNodeIsNamedAndFencesItself) {
  FAULT_SUITE_FULL_ONLY();
  Partition(0);
}
TEST_F(FaultTest, PartitionedNodeDropsOutAndTheJobGoesOn) {
  FAULT_SUITE_FULL_ONLY();
  Partition(1);
}
TEST_F(FaultTest, PartitionedNodeBehindARelayFencesItselfAndTheJobGoesOn) {
  Partition(1, /*relay_fanout=*/2);
  EXPECT_TRUE(absl::StrContains(LauncherOutput(), "2 relay(s) carry the agents' sessions"))
      << LauncherOutput();
}
TEST_F(FaultTest, KilledLauncherLeavesNothing) {
  FAULT_SUITE_FULL_ONLY();
  KilledLauncher(0);
}
TEST_F(FaultTest, KilledLauncherLeavesNothingBetweenRounds) {
  FAULT_SUITE_FULL_ONLY();
  KilledLauncher(1);
}
TEST_F(FaultTest, HangAtExitIsNamedAtTheExitTimeout) { HangAtExit(0); }
TEST_F(FaultTest, HangAtExitIsNotRestarted) {
  FAULT_SUITE_FULL_ONLY();
  HangAtExit(1);
}
TEST_F(FaultTest, FullDiskWhileCheckpointingIsNamed) { FullDisk(0); }
TEST_F(FaultTest, FullDiskFailsAgainAfterTheRestart) {
  FAULT_SUITE_FULL_ONLY();
  FullDisk(1);
}
TEST_F(FaultTest, TakenMasterPortIsNamed) {
  FAULT_SUITE_FULL_ONLY();
  TakenMasterPort(0);
}
TEST_F(FaultTest, TakenMasterPortRestartsOnAFreshPort) { TakenMasterPort(1); }
TEST_F(FaultTest, PreflightLeavesOutTheNodeWithTheTakenPort) { PreflightFindsTheTakenPort("2:3"); }
TEST_F(FaultTest, PreflightStopsTheJobBeforeAnyWorkerStarts) {
  FAULT_SUITE_FULL_ONLY();
  PreflightFindsTheTakenPort("3");
}

// The whole loop with the LibTorch trainer: 3 hosts x 2 ranks train a small MLP on synthetic
// data with a checkpoint every 5 steps; in round 0, rank 3 kills itself after step 12. The job
// restarts, every rank resumes from the step-10 checkpoint, and the final parameters of every
// rank are bit-identical to those of an uninterrupted run with the same seed.
TEST_F(FaultTest, RestartResumesToTheSameParametersAsAnUninterruptedRun) {
  FAULT_SUITE_FULL_ONLY();
  const std::string worker = std::string(DLAUNCH_BIN_DIR) + "/dlaunch-worker";
  if (access(worker.c_str(), X_OK) != 0) {
    GTEST_SKIP() << worker << " is not built (LibTorch not found, or DLAUNCH_BUILD_WORKER=OFF)";
  }
  auto train = [&](const std::string& name, int max_restarts, const std::string& fail) {
    const std::string dir = MakeDir(name);
    const std::string args = absl::StrCat(
        worker, " --model mlp --dataset synthetic --image-shape 1,8,8 --synthetic-samples 1024",
        " --batch-size 16 --steps 20 --seed 7 --report-every 1 --no-eval --store-timeout 60",
        " --checkpoint-dir ", dir, "/ckpt --checkpoint-every 5 --save-params ", dir,
        "/params-$RANK.bin");
    // Only round 0's rank 3 fails: a resumed round passes step 12 again.
    const std::string script = absl::StrCat(
        "if [ \\\"$DLAUNCH_ROUND\\\" = 0 ] && [ \\\"$RANK\\\" = 3 ]; then exec ", args, " ", fail,
        "; fi; exec ", args);
    FaultJobOptions options;
    options.max_restarts = max_restarts;
    options.command = absl::StrCat("[\"/bin/sh\", \"-c\", \"", script, "\"]");
    pid_t launcher = StartJob(name, {}, options);
    EXPECT_GT(launcher, 0);
    EXPECT_EQ(WaitJobEnd(launcher, absl::Seconds(240)), 0) << LauncherOutput();
    return dir;
  };
  const std::string plain = train("uninterrupted", 0, "");
  ASSERT_FALSE(HasFailure());
  // The second job's directory must be the only one in the job root.
  ASSERT_EQ(RunCommand({"/bin/mv", job_dir(), plain + "/job"}, absl::Seconds(10)).exit_code, 0);
  const std::string restarted = train("restarted", 1, "--fail-at-step 12");
  ASSERT_FALSE(HasFailure());
  ExpectRootCause("worker crash", 3, "killed by signal 9");
  EXPECT_TRUE(absl::StrContains(ReadJobFile("events.jsonl"), "\"round\":1"))
      << ReadJobFile("events.jsonl");
  // Rank 0 loads the checkpoint and broadcasts it; it says from which step.
  EXPECT_TRUE(absl::StrContains(ReadJobFile("logs/rank-0.log"), "resumed from step 10"))
      << ReadJobFile("logs/rank-0.log");
  ExpectNothingLeft();
  std::string differing;
  for (int rank = 0; rank < kNodes * kProcs; ++rank) {
    std::string a = ReadFileOrEmpty(absl::StrCat(plain, "/params-", rank, ".bin"));
    std::string b = ReadFileOrEmpty(absl::StrCat(restarted, "/params-", rank, ".bin"));
    ASSERT_FALSE(a.empty()) << "rank " << rank << " saved no parameters";
    ASSERT_EQ(a.size(), b.size()) << "rank " << rank;
    if (a != b) absl::StrAppend(&differing, differing.empty() ? "" : ", ", rank);
  }
  EXPECT_TRUE(differing.empty())
      << "after the restart and resume from step 10, the final parameters of rank(s) " << differing
      << " differ from the uninterrupted run's with the same seed";
}

}  // namespace
}  // namespace testing
}  // namespace dlaunch
