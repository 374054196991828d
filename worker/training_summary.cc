#include "worker/training_summary.h"

#include "absl/strings/str_format.h"
#include "common/json_line.h"

namespace dlaunch::worker {
namespace {

// Nine significant digits: throughput and loss keep the precision they had before summaries
// went through JsonLine (whose doubles have six).
std::string Num(double v) { return absl::StrFormat("%.9g", v); }

}  // namespace

std::string TrainingSummaryToJson(const TrainingSummary& s) {
  JsonLine line;
  line.Add("model", s.model)
      .Add("dataset", s.dataset)
      .Add("backend", s.backend)
      .Add("amp", s.amp)
      .Add("world_size", s.world_size)
      .Add("batch_size", static_cast<int64_t>(s.batch_size))
      .Add("epochs", static_cast<int64_t>(s.epochs))
      .Add("steps", static_cast<int64_t>(s.steps))
      .Add("start_step", static_cast<int64_t>(s.start_step))
      .AddRaw("samples_per_sec_total", Num(s.samples_per_sec_total))
      .AddRaw("samples_per_sec_per_rank", Num(s.samples_per_sec_per_rank))
      .AddRaw("final_loss", Num(s.final_loss))
      .AddRaw("test_accuracy", s.test_accuracy ? Num(*s.test_accuracy) : "null")
      .AddRaw("wall_time_s", Num(s.wall_time_s))
      .AddRaw("time_to_first_step_s", Num(s.time_to_first_step_s));
  return line.str() + "\n";
}

}  // namespace dlaunch::worker
