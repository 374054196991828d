#include "worker/training_summary.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace dlaunch::worker {
namespace {

std::string Quote(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') {
      out.push_back('\\');
      out.push_back(c);
    } else if (static_cast<unsigned char>(c) < 0x20) {
      absl::StrAppendFormat(&out, "\\u%04x", c);
    } else {
      out.push_back(c);
    }
  }
  return out + "\"";
}

std::string Num(double v) { return absl::StrFormat("%.9g", v); }

}  // namespace

std::string TrainingSummaryToJson(const TrainingSummary& s) {
  std::string out = "{";
  absl::StrAppend(&out, "\"model\": ", Quote(s.model), ", \"dataset\": ", Quote(s.dataset),
                  ", \"backend\": ", Quote(s.backend), ", \"amp\": ", Quote(s.amp),
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
