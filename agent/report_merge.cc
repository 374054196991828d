#include "agent/report_merge.h"

namespace dlaunch {

v1::WorkerReport MergeReports(const v1::WorkerReport& earlier, const v1::WorkerReport& later) {
  v1::WorkerReport merged = later;
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
