// StepTrace: dlaunch-worker's own timeline of each training step, like Horovod's timeline: the
// phases (data, forward, backward with the gradient all-reduce, optimizer) and the spans between
// steps (checkpoint, evaluate), one JSON line each in $DLAUNCH_JOB_DIR/trace/rank-N.jsonl, which
// the launcher merges into the job's trace.json (docs/trace.md). Bounded for long jobs: see
// StepSampler. No LibTorch: the trainer hands it time points.
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "common/environment.h"

namespace dlaunch::worker {

// Every step for the first `window` recorded, then one in 2 for the next `window` recorded,
// one in 4 after that, and so on: a job of N steps writes about window * (1 + log2(N / window))
// lines, and each recorded step says how many steps it stands for (its stride).
class StepSampler {
 public:
  explicit StepSampler(int64_t window) : window_(window > 0 ? window : 1) {}
  // True when this step is to be recorded; stride() is then the steps it stands for.
  bool Take();
  int64_t stride() const { return taken_stride_; }
  // The rule, in words, for the trace file's header.
  std::string Describe() const;

 private:
  int64_t window_;
  int64_t stride_ = 1;       // in effect for the next step
  int64_t since_taken_ = 0;  // steps seen since the last one recorded
  int64_t taken_at_stride_ = 0;
  int64_t taken_stride_ = 1;  // the stride of the last step recorded
};

constexpr int64_t kStepTraceWindow = 500;

class StepTrace {
 public:
  using Clock = std::chrono::steady_clock;
  // Writes one line (without its newline); false when the write failed.
  using Sink = std::function<bool(const std::string& line)>;

  // `wall_minus_steady_us` turns the steady clock's time points into microseconds since the
  // Unix epoch, the clock of the launcher's journal.
  StepTrace(int rank, Sink sink, int64_t window, int64_t wall_minus_steady_us);

  // One step's phase boundaries: data from t[0] to t[1], forward to t[2], backward (with the
  // gradient all-reduce it blocks on) to t[3], optimizer to t[4].
  void Step(int64_t step, const std::array<Clock::time_point, 5>& t);
  // Time between steps: "checkpoint", "evaluate".
  void Span(const std::string& name, int64_t step, Clock::time_point begin, Clock::time_point end);

  // OK, or the first write that failed (nothing is written after it).
  const absl::Status& status() const { return status_; }

 private:
  int64_t UnixMicros(Clock::time_point t) const;
  void Write(const std::string& line);

  Sink sink_;
  int64_t wall_minus_steady_us_;
  StepSampler steps_;
  StepSampler spans_;
  absl::Status status_;
};

// The offset of the system clock from the steady clock now, in microseconds.
int64_t WallMinusSteadyMicros();

// The step trace of `rank` in the job directory named by DLAUNCH_JOB_DIR, appended to (a
// restarted worker continues the file); null when the variable is unset (the worker runs
// outside dlaunch). A write that fails later is reported once on stderr.
absl::StatusOr<std::unique_ptr<StepTrace>> OpenStepTrace(const EnvLookup& env, int rank);

}  // namespace dlaunch::worker
