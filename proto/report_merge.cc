#include "proto/report_merge.h"

#include <algorithm>

namespace dlaunch {

v1::WorkerReport MergeReports(const v1::WorkerReport& earlier, const v1::WorkerReport& later) {
  if (later.kind() == v1::WorkerReport::PHASE) {
    v1::WorkerReport merged = earlier;
    merged.set_phase(later.phase());
    merged.set_step(std::max(earlier.step(), later.step()));
    merged.set_epoch(std::max(earlier.epoch(), later.epoch()));
    merged.set_total_steps(std::max(earlier.total_steps(), later.total_steps()));
    merged.set_checkpoint_step(std::max(earlier.checkpoint_step(), later.checkpoint_step()));
    return merged;
  }
  v1::WorkerReport merged = later;
  // What a rank said once (a checkpoint written, the step training ends at) holds until it says
  // more: a step report that leaves it out does not take it back.
  merged.set_checkpoint_step(std::max(earlier.checkpoint_step(), later.checkpoint_step()));
  merged.set_total_steps(std::max(earlier.total_steps(), later.total_steps()));
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
