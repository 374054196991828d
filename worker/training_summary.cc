#include "worker/training_summary.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/json_line.h"

namespace dlaunch::worker {
namespace {

std::string Num(double v) { return absl::StrFormat("%.9g", v); }

}  // namespace

// Laid out by hand rather than with JsonLine, whose compact form and six-digit doubles would
// change the file that scripts and the bench read; strings go through the one JSON escaper.
std::string TrainingSummaryToJson(const TrainingSummary& s) {
  std::string out = "{";
  absl::StrAppend(&out, "\"model\": ", JsonQuote(s.model), ", \"dataset\": ", JsonQuote(s.dataset),
                  ", \"backend\": ", JsonQuote(s.backend), ", \"amp\": ", JsonQuote(s.amp),
                  ", \"world_size\": ", s.world_size, ", \"batch_size\": ", s.batch_size,
                  ", \"epochs\": ", s.epochs, ", \"steps\": ", s.steps,
                  ", \"start_step\": ", s.start_step,
                  ", \"samples_per_sec_total\": ", Num(s.samples_per_sec_total),
                  ", \"samples_per_sec_per_rank\": ", Num(s.samples_per_sec_per_rank),
                  ", \"final_loss\": ", Num(s.final_loss), ", \"test_accuracy\": ",
                  s.test_accuracy ? Num(*s.test_accuracy) : std::string("null"),
                  ", \"wall_time_s\": ", Num(s.wall_time_s),
                  ", \"time_to_first_step_s\": ", Num(s.time_to_first_step_s), "}\n");
  return out;
}

}  // namespace dlaunch::worker
