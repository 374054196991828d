// TrainingSummary: what rank 0 writes to --summary-json at the end of a run. Pure rendering.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace dlaunch::worker {

struct TrainingSummary {
  std::string model;
  std::string dataset;
  std::string backend;
  std::string amp;
  int world_size = 1;
  int64_t batch_size = 0;      // per rank
  int64_t epochs = 0;          // epochs started (the last may be partial under --steps)
  int64_t steps = 0;           // global optimizer steps reached
  int64_t start_step = 0;      // step resumed from (0 for a fresh run)
  double samples_per_sec_total = 0;
  double samples_per_sec_per_rank = 0;
  double final_loss = 0;
  std::optional<double> test_accuracy;
  double wall_time_s = 0;      // this process, start to end
  double time_to_first_step_s = 0;  // process start to the end of the first training step
};

// A single JSON object followed by a newline.
std::string TrainingSummaryToJson(const TrainingSummary& summary);

}  // namespace dlaunch::worker
