#include "worker/step_trace.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/file_io.h"
#include "common/json_line.h"

namespace dlaunch::worker {

bool StepSampler::Take() {
  if (++since_taken_ < stride_) return false;
  since_taken_ = 0;
  taken_stride_ = stride_;
  if (++taken_at_stride_ == window_) {
    taken_at_stride_ = 0;
    stride_ *= 2;
  }
  return true;
}

std::string StepSampler::Describe() const {
  return absl::StrCat("every step for the first ", window_, " recorded, then 1 in 2 for the next ",
                      window_, ", 1 in 4 for the next ", window_,
                      ", and so on; each line's stride is the steps it stands for");
}

StepTrace::StepTrace(int rank, Sink sink, int64_t window, int64_t wall_minus_steady_us)
    : sink_(std::move(sink)),
      wall_minus_steady_us_(wall_minus_steady_us),
      steps_(window),
      spans_(window) {
  Write(JsonLine()
            .Add("trace", "dlaunch-step-trace")
            .Add("version", 1)
            .Add("rank", rank)
            .Add("clock", "unix_us")
            .Add("sampling", steps_.Describe())
            .str());
}

int64_t StepTrace::UnixMicros(Clock::time_point t) const {
  return std::chrono::duration_cast<std::chrono::microseconds>(t.time_since_epoch()).count() +
         wall_minus_steady_us_;
}

void StepTrace::Step(int64_t step, const std::array<Clock::time_point, 5>& t) {
  if (!steps_.Take()) return;
  auto us = [](Clock::duration d) {
    return static_cast<int64_t>(std::chrono::duration_cast<std::chrono::microseconds>(d).count());
  };
  Write(JsonLine()
            .Add("step", step)
            .Add("ts", UnixMicros(t[0]))
            .Add("data", us(t[1] - t[0]))
            .Add("forward", us(t[2] - t[1]))
            .Add("backward", us(t[3] - t[2]))
            .Add("optimizer", us(t[4] - t[3]))
            .Add("stride", steps_.stride())
            .str());
}

void StepTrace::Span(const std::string& name, int64_t step, Clock::time_point begin,
                     Clock::time_point end) {
  if (!spans_.Take()) return;
  Write(JsonLine()
            .Add("span", name)
            .Add("step", step)
            .Add("ts", UnixMicros(begin))
            .Add("dur",
                 static_cast<int64_t>(
                     std::chrono::duration_cast<std::chrono::microseconds>(end - begin).count()))
            .Add("stride", spans_.stride())
            .str());
}

void StepTrace::Write(const std::string& line) {
  if (!status_.ok()) return;
  if (!sink_(line)) status_ = absl::DataLossError("cannot write a step trace line");
}

int64_t WallMinusSteadyMicros() {
  auto micros = [](auto t) {
    return std::chrono::duration_cast<std::chrono::microseconds>(t.time_since_epoch()).count();
  };
  return micros(std::chrono::system_clock::now()) - micros(StepTrace::Clock::now());
}

absl::StatusOr<std::unique_ptr<StepTrace>> OpenStepTrace(const EnvLookup& env, int rank) {
  std::optional<std::string> job_dir = env("DLAUNCH_JOB_DIR");
  if (!job_dir || job_dir->empty()) return std::unique_ptr<StepTrace>();
  const std::string dir = *job_dir + "/trace";
  const std::string path = absl::StrCat(dir, "/rank-", rank, ".jsonl");
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return ErrnoStatus(ec.value(), "cannot create", dir);
  auto out = std::make_shared<std::ofstream>(path, std::ios::app);
  if (!*out) return ErrnoStatus(errno, "cannot open", path);
  // Flushed per line: a rank that is killed leaves every step it recorded.
  StepTrace::Sink sink = [out, path](const std::string& line) {
    *out << line << '\n' << std::flush;
    if (*out) return true;
    std::fprintf(stderr,
                 "dlaunch-worker: warning: cannot write %s: %s; the step trace stops here\n",
                 path.c_str(), std::strerror(errno));
    return false;
  };
  return std::make_unique<StepTrace>(rank, std::move(sink), kStepTraceWindow,
                                     WallMinusSteadyMicros());
}

}  // namespace dlaunch::worker
