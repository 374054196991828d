// JobState's stragglers: every interval the StragglerScore of the round's reports (or, without
// reports, of its ranks' CPU and GPU samples) names or clears nodes; each change is journaled
// (straggler_detected / straggler_cleared) and said, and under stragglers.policy: exclude a node
// named is marked to be left out at the next restart, through the same exclusion as a node that
// failed too often. The round goes on: a slow node is not a failure. See docs/stragglers.md.
#include "launcher/job/job_events.h"
#include "launcher/job/job_state.h"

namespace dlaunch {

void JobState::JournalStraggler(const StragglerChange& change, JobActions& out) {
  RecordEvent(StragglerEvent(current_round(), nodes_.PlaceOf(change.node), change,
                             config_.stragglers, config_.exclude_stragglers ? "exclude" : "report"),
              out);
}

// Each rank joined to its GPUs' samples (Heartbeat.rank_gpus), for the "gpu clock".
void JobState::NoteRankGpus(int node, const v1::Heartbeat& hb, double now_s) {
  if (hb.rank_gpus().empty()) return;
  std::map<std::string, const v1::GpuSample*> by_device;
  for (const v1::GpuSample& g : hb.gpus()) by_device[g.device()] = &g;
  for (const auto& [rank, gpus] : hb.rank_gpus()) {
    std::vector<RankGpuSample> samples;
    for (const std::string& device : gpus.devices()) {
      auto it = by_device.find(device);
      if (it == by_device.end()) continue;  // it did not answer NVML this time
      const v1::GpuSample& g = *it->second;
      RankGpuSample x;
      x.utilization_pct = g.utilization_pct();
      x.sm_clock_mhz = g.sm_clock_mhz();
      x.sm_clock_max_mhz = g.sm_clock_max_mhz();
      if (g.has_clock_event_reasons()) x.clock_event_reasons = g.clock_event_reasons();
      samples.push_back(x);
    }
    stragglers_.OnGpuSample(rank, node, samples, now_s);
  }
}

void JobState::ScoreStragglers(double now_s, JobActions& out) {
  if (outcome_ != Outcome::kRunning || Restarting() || !stragglers_.Due(now_s)) return;
  for (const StragglerChange& change : stragglers_.Evaluate(now_s)) {
    JournalStraggler(change, out);
    if (change.detected && config_.exclude_stragglers) rounds_.ExcludeAtNextRestart(change.node);
  }
}

void JobState::ClearStragglers(double now_s, JobActions& out) {
  for (const StragglerChange& change : stragglers_.EndRound(now_s)) JournalStraggler(change, out);
}

}  // namespace dlaunch
