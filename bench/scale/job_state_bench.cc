// The launcher's decisions at scale, in process: JobState driven with the messages N agents
// of 4 ranks send (round closed, sessions, every worker started, heartbeats at 1 Hz each with one
// report per rank, the live snapshot and the tick once a second, one node lost and a restart
// round, then every rank succeeding and every session ending). No gRPC, no processes: this is
// the per-event cost of JobState itself, the part that must not grow with N. Prints one
// markdown row per N.
//
//   job_state_bench [N ...]      (default 100 1000 4000 10000)
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "launcher/job/job_state.h"
#include "tests/testing/job_actions.h"  // the agents' messages, as the JobState tests build them

namespace dlaunch {
namespace {

using Clock = std::chrono::steady_clock;

double Since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

constexpr int kSlots = 4;
constexpr int kHeartbeatSeconds = 5;  // simulated seconds of steady heartbeats

Participant Place(int i) {
  Participant p;
  p.agent_id = "a" + std::to_string(i);
  p.host = "n" + std::to_string(i);
  p.addr = "10.0.0.1";
  p.slots = kSlots;
  p.worker_port = 30000 + i % 30000;
  return p;
}

v1::AgentMessage Heartbeat(int round, int first_rank, int64_t step) {
  v1::AgentMessage m;
  m.set_round(round);
  v1::Heartbeat* hb = m.mutable_heartbeat();
  hb->set_workers_running(kSlots);
  for (int k = 0; k < kSlots; ++k) {
    v1::WorkerReport* r = hb->add_reports();
    r->set_kind(v1::WorkerReport::STEP);
    r->set_rank(first_rank + k);
    r->set_step(step);
    r->set_samples(640);
    r->set_interval_s(1);
    r->set_loss(0.5);
    r->set_total_steps(100000);
  }
  return m;
}

struct Row {
  int nodes = 0;
  double start_s = 0;        // close, sessions, every worker started
  double heartbeat_us = 0;   // per heartbeat (4 reports)
  double tick_ms = 0;        // one tick (pings, liveness, summary line)
  double snapshot_ms = 0;    // one live snapshot
  double restart_s = 0;      // a lost node to the next round's start
  double finish_s = 0;       // every rank succeeded, every session ended
  size_t actions = 0;        // actions returned over the whole job
};

Row Run(int n) {
  Row row;
  row.nodes = n;
  JobConfig c;
  c.job_id = "bench";
  c.job_dir = "runs/bench";
  for (int i = 0; i < n; ++i) c.hosts.push_back("n" + std::to_string(i));
  c.node_launcher = "srun";
  c.heartbeat_s = 1;
  c.heartbeat_misses = 3;
  c.summary_interval_s = 5;
  c.restarts.max_restarts = 1;
  c.progress.startup_timeout_s = 1e12;
  JobState state(c);
  size_t actions = state.OnStarted({"srun"}, 0).size();
  auto take = [&actions](const JobActions& a) { actions += a.size(); };

  std::vector<Participant> places;
  for (int i = 0; i < n; ++i) places.push_back(Place(i));
  auto t0 = Clock::now();
  take(state.OnRendezvousClosed(AssignRound(0, places, 0), 1));
  for (int i = 0; i < n; ++i) take(state.OnSessionOpened(i, i, 1));
  for (int r = 0; r < n * kSlots; ++r) {
    take(state.OnAgentMessage(r / kSlots, WorkerMessage(0, r, v1::WorkerEvent::STARTED), 1.5));
  }
  row.start_s = Since(t0);

  double now = 2;
  t0 = Clock::now();
  for (int s = 0; s < kHeartbeatSeconds; ++s, now += 1) {
    for (int i = 0; i < n; ++i) {
      take(state.OnAgentMessage(i, Heartbeat(0, i * kSlots, 10 * s + 10), now + i * (1.0 / n)));
    }
  }
  row.heartbeat_us = Since(t0) / (kHeartbeatSeconds * static_cast<double>(n)) * 1e6;
  t0 = Clock::now();
  take(state.OnTick(now));
  row.tick_ms = Since(t0) * 1e3;
  t0 = Clock::now();
  v1::JobSnapshot snap = state.Snapshot(now);
  row.snapshot_ms = Since(t0) * 1e3;
  if (snap.nodes_size() != n) std::fprintf(stderr, "snapshot has %d nodes\n", snap.nodes_size());

  // Node n-1's agent dies; the others end the round; the next round starts without it.
  t0 = Clock::now();
  take(state.OnSessionEnded(n - 1, n - 1, now));
  for (int i = 0; i < n - 1; ++i) take(state.OnAgentMessage(i, RoundEndedMessage(0, 40000), now + 0.1));
  take(state.OnHealthCheck(now + 60));
  row.restart_s = Since(t0);
  now += 61;

  t0 = Clock::now();
  for (int r = 0; r < (n - 1) * kSlots; ++r) {
    take(state.OnAgentMessage(r / kSlots, WorkerMessage(1, r, v1::WorkerEvent::STARTED), now));
  }
  for (int r = 0; r < (n - 1) * kSlots; ++r) {
    take(state.OnAgentMessage(r / kSlots, WorkerMessage(1, r, v1::WorkerEvent::SUCCEEDED), now + 1));
  }
  for (int i = 0; i < n - 1; ++i) take(state.OnSessionEnded(i, i, now + 2));
  take(state.OnLauncherExited(0, 0, {}, now + 3));
  row.finish_s = Since(t0);
  if (!state.finished()) std::fprintf(stderr, "N=%d: the job did not finish\n", n);
  row.actions = actions;
  return row;
}

}  // namespace
}  // namespace dlaunch

int main(int argc, char** argv) {
  std::vector<int> sizes;
  for (int i = 1; i < argc; ++i) sizes.push_back(std::atoi(argv[i]));
  if (sizes.empty()) sizes = {100, 1000, 4000, 10000};
  std::printf("| nodes | ranks | start (s) | heartbeat (us) | tick (ms) | snapshot (ms) | "
              "restart (s) | second round + finish (s) | actions |\n");
  std::printf("|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
  for (int n : sizes) {
    dlaunch::Row r = dlaunch::Run(n);
    std::printf("| %d | %d | %.3f | %.1f | %.2f | %.2f | %.3f | %.3f | %zu |\n", r.nodes,
                r.nodes * dlaunch::kSlots, r.start_s, r.heartbeat_us, r.tick_ms, r.snapshot_ms,
                r.restart_s, r.finish_s, r.actions);
    std::fflush(stdout);
  }
  return 0;
}
