#include "proto/report_merge.h"

#include <algorithm>

namespace dlaunch {

namespace {

// The earlier report's phase events, then the later one's, up to the bound.
void MergePhaseLogs(const v1::WorkerReport& earlier, const v1::WorkerReport& later,
                    v1::WorkerReport* merged) {
  if (!earlier.has_phase_log() && !later.has_phase_log()) {
    merged->clear_phase_log();
    return;
  }
  v1::PhaseLog log;
  int dropped = earlier.phase_log().dropped() + later.phase_log().dropped();
  for (const v1::PhaseLog* from : {&earlier.phase_log(), &later.phase_log()}) {
    for (const v1::PhaseEvent& e : from->events()) {
      if (log.events_size() < kMaxPhaseEvents) {
        *log.add_events() = e;
      } else {
        ++dropped;
      }
    }
  }
  log.set_dropped(dropped);
  *merged->mutable_phase_log() = std::move(log);
}

}  // namespace

v1::WorkerReport MergeReports(const v1::WorkerReport& earlier, const v1::WorkerReport& later) {
  if (later.kind() == v1::WorkerReport::PHASE) {
    v1::WorkerReport merged = earlier;
    // A phase without an enum (a script's own name) leaves the rank's phase as it was.
    if (later.phase() != v1::WorkerReport::PHASE_UNSPECIFIED) merged.set_phase(later.phase());
    merged.set_step(std::max(earlier.step(), later.step()));
    merged.set_epoch(std::max(earlier.epoch(), later.epoch()));
    merged.set_total_steps(std::max(earlier.total_steps(), later.total_steps()));
    merged.set_checkpoint_step(std::max(earlier.checkpoint_step(), later.checkpoint_step()));
    MergePhaseLogs(earlier, later, &merged);
    return merged;
  }
  v1::WorkerReport merged = later;
  // What a rank said once (a checkpoint written, the step training ends at) holds until it says
  // more: a step report that leaves it out does not take it back.
  merged.set_checkpoint_step(std::max(earlier.checkpoint_step(), later.checkpoint_step()));
  merged.set_total_steps(std::max(earlier.total_steps(), later.total_steps()));
  MergePhaseLogs(earlier, later, &merged);
  merged.set_samples(earlier.samples() + later.samples());
  merged.set_interval_s(earlier.interval_s() + later.interval_s());
  auto* t = merged.mutable_timings();
  const auto& a = earlier.timings();
  t->set_data_ms(t->data_ms() + a.data_ms());
  t->set_forward_ms(t->forward_ms() + a.forward_ms());
  t->set_backward_ms(t->backward_ms() + a.backward_ms());
  t->set_comm_wait_ms(t->comm_wait_ms() + a.comm_wait_ms());
  t->set_optimizer_ms(t->optimizer_ms() + a.optimizer_ms());
  if (merged.interval_s() > 0) merged.set_samples_per_sec(merged.samples() / merged.interval_s());
  if (!later.has_test_accuracy() && earlier.has_test_accuracy()) {
    merged.set_test_accuracy(earlier.test_accuracy());
  }
  return merged;
}

}  // namespace dlaunch
