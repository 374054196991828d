#include "worker/trainer.h"

#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <optional>

#include <ATen/autocast_mode.h>
#include <torch/torch.h>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/file_io.h"
#include "worker/loss_scaler.h"
#include "worker/process_uptime.h"
#include "worker/trainer_internal.h"
#include "worker/training_summary.h"

namespace dlaunch::worker {
namespace {

double Ms(Clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); }

// One seed per (run seed, rank, step): dropout masks differ between ranks, as they would with
// independent RNG streams, and a resumed run draws exactly what the uninterrupted one drew.
uint64_t StepSeed(uint64_t seed, int rank, int64_t step) {
  uint64_t z = seed * 0x9E3779B97F4A7C15ULL + static_cast<uint64_t>(rank) * 0xBF58476D1CE4E5B9ULL +
               static_cast<uint64_t>(step) * 0x94D049BB133111EBULL;
  z ^= z >> 31;
  return z;
}

// Turns autocast on for the forward pass on CUDA; off (fp32) otherwise.
class AutocastScope {
 public:
  explicit AutocastScope(Amp amp)
      : AutocastScope(amp != Amp::kOff, amp == Amp::kBf16 ? at::kBFloat16 : at::kHalf) {}
  AutocastScope(bool enabled, at::ScalarType dtype) : enabled_(enabled) {
    if (!enabled_) return;
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 4)
    at::autocast::set_autocast_dtype(at::kCUDA, dtype);
    at::autocast::set_autocast_enabled(at::kCUDA, true);
#else
    at::autocast::set_autocast_gpu_dtype(dtype);
    at::autocast::set_enabled(true);
#endif
  }
  ~AutocastScope() {
    if (!enabled_) return;
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 4)
    at::autocast::set_autocast_enabled(at::kCUDA, false);
#else
    at::autocast::set_enabled(false);
#endif
    at::autocast::clear_cache();
  }

 private:
  bool enabled_;
};

}  // namespace

torch::Tensor Trainer::InModelLayout(torch::Tensor x) const {
  if (!options_.channels_last || x.dim() != 4) return x;
  return x.contiguous(at::MemoryFormat::ChannelsLast);
}

void Trainer::TrainStep(const std::vector<int64_t>& epoch_indices, int64_t offset) {
  const int64_t step = state_.step;
  const auto t0 = Clock::now();
  auto [x, y] = data_.train.Batch(epoch_indices.data() + offset * options_.batch_size,
                                  options_.batch_size);
  x = InModelLayout(x.to(device_, /*non_blocking=*/true));
  y = y.to(device_, /*non_blocking=*/true);
  const double lr = schedule_->At(step);
  for (auto& group : optimizer_->param_groups()) {
    static_cast<torch::optim::SGDOptions&>(group.options()).lr(lr);
  }
  torch::manual_seed(StepSeed(options_.seed, env_.rank, step));
  const auto t1 = Clock::now();

  model_->train();
  torch::Tensor loss;
  torch::Tensor output;
  ddp_->Forward([&] {
    AutocastScope autocast(amp_);
    output = model_->forward(x);
    loss = torch::nll_loss(output.to(torch::kFloat32), y);
  });
  const auto t2 = Clock::now();

  // The averaged gradients are in .grad when backward() returns (DdpModel::Forward), so the
  // time blocked on the all-reduce is part of backward_ms.
  if (amp_ == Amp::kFp16) {
    (loss * state_.loss_scale).backward();
  } else {
    loss.backward();
  }
  const auto t3 = Clock::now();

  const bool apply = amp_ != Amp::kFp16 || UnscaleAndUpdateLossScale();
  if (apply) optimizer_->step();
  optimizer_->zero_grad();
  ++state_.step;

  {
    torch::NoGradGuard no_grad;
    loss_sum_ += loss.detach().to(torch::kFloat64) * options_.batch_size;
    correct_sum_ += output.argmax(1).eq(y).sum().to(torch::kFloat64);
  }
  const auto t4 = Clock::now();
  interval_samples_ += options_.batch_size;
  ++interval_steps_;
  data_ms_ += Ms(t1 - t0);
  forward_ms_ += Ms(t2 - t1);
  backward_ms_ += Ms(t3 - t2);
  optimizer_ms_ += Ms(t4 - t3);
  if (step_trace_) step_trace_->Step(state_.step, {t0, t1, t2, t3, t4});  // 1-based, as reports
}

// fp16: unscales the gradients and moves the loss scale; false when the step must be skipped.
// Gradients are identical on every rank after the all-reduce, so every rank takes the same
// decision without another collective.
bool Trainer::UnscaleAndUpdateLossScale() {
  torch::NoGradGuard no_grad;
  LossScaler scaler(state_.loss_scale, state_.good_steps);
  const double inv = scaler.UnscaleFactor();
  bool finite = true;
  for (auto& p : params_) {
    if (!p.grad().defined()) continue;
    p.grad().mul_(inv);
    finite = finite && p.grad().isfinite().all().item<bool>();
  }
  const bool apply = scaler.Update(finite);
  state_.loss_scale = scaler.scale();
  state_.good_steps = scaler.good_steps();
  return apply;
}

void Trainer::Report(TrainerReport::Kind kind, std::optional<double> test_accuracy) {
  const double interval_s = std::chrono::duration<double>(Clock::now() - interval_start_).count();
  const double samples = static_cast<double>(interval_samples_);
  // [loss, accuracy, samples/s, phase timings...] averaged over ranks.
  torch::Tensor m = torch::tensor(
      {samples > 0 ? loss_sum_.item<double>() / samples : 0.0,
       samples > 0 ? correct_sum_.item<double>() / samples : 0.0,
       interval_s > 0 ? samples / interval_s : 0.0, data_ms_, forward_ms_, backward_ms_,
       optimizer_ms_},
      torch::kFloat64);
  m = m.to(device_);
  AllReduceMean(pg_, m);
  m = m.cpu();
  const auto v = m.accessor<double, 1>();
  last_loss_ = v[0];

  TrainerReport r;
  r.kind = kind;
  r.phase = phase_;
  r.rank = env_.rank;
  r.step = state_.step;
  r.epoch = static_cast<int32_t>(std::max<int64_t>(state_.step - 1, 0) / steps_per_epoch_);
  r.samples = interval_samples_;
  r.interval_s = interval_s;
  r.loss = v[0];
  if (samples > 0) r.accuracy = v[1];
  r.test_accuracy = test_accuracy;
  r.samples_per_sec = interval_s > 0 ? samples / interval_s : 0.0;
  r.data_ms = data_ms_;
  r.forward_ms = forward_ms_;
  r.backward_ms = backward_ms_;
  r.optimizer_ms = optimizer_ms_;
  r.message = absl::StrFormat("rank-mean samples/s %.1f", v[2]);
  r.checkpoint_step = checkpoint_step_;
  r.total_steps = total_steps_;  // the live view's progress bar and ETA
  reporter_->Send(r);

  loss_sum_.zero_();
  correct_sum_.zero_();
  interval_samples_ = 0;
  interval_steps_ = 0;
  data_ms_ = forward_ms_ = backward_ms_ = optimizer_ms_ = 0;
  interval_start_ = Clock::now();
}

// A PHASE report when `phase` is new: no collective and no device work, so it costs the loop
// nothing but one short line on the local socket. It carries what the agent's merge of this
// rank's reports takes from the latest one (step, epoch, checkpoint step, total steps).
void Trainer::EnterPhase(TrainerReport::Phase phase) {
  if (phase == phase_) return;
  phase_ = phase;
  TrainerReport r;
  r.kind = TrainerReport::Kind::kPhase;
  r.phase = phase;
  r.rank = env_.rank;
  r.step = state_.step;
  if (steps_per_epoch_ > 0) {
    r.epoch = static_cast<int32_t>(std::max<int64_t>(state_.step - 1, 0) / steps_per_epoch_);
  }
  r.checkpoint_step = checkpoint_step_;
  r.total_steps = total_steps_;  // 0 (unknown) before the data set is read
  reporter_->Send(r);
}

double Trainer::Evaluate() {
  // Each rank scores a disjoint strided slice of the test set; the sums make the exact
  // whole-set accuracy.
  torch::NoGradGuard no_grad;
  model_->eval();
  const int64_t n = data_.test.size();
  std::vector<int64_t> mine;
  for (int64_t i = env_.rank; i < n; i += env_.world_size) mine.push_back(i);
  double correct = 0;
  constexpr int64_t kEvalBatch = 1000;
  for (size_t off = 0; off < mine.size(); off += kEvalBatch) {
    const int64_t count = std::min<int64_t>(kEvalBatch, static_cast<int64_t>(mine.size() - off));
    auto [x, y] = data_.test.Batch(mine.data() + off, count);
    AutocastScope autocast(amp_);
    torch::Tensor out = model_->forward(InModelLayout(x.to(device_)));
    correct += out.argmax(1).eq(y.to(device_)).sum().item<double>();
  }
  torch::Tensor t = torch::tensor({correct, static_cast<double>(mine.size())}, torch::kFloat64)
                        .to(device_);
  if (env_.world_size > 1) {
    std::vector<torch::Tensor> ts = {t};
    pg_.group->allreduce(ts)->wait();
  }
  t = t.cpu();
  return t[0].item<double>() / std::max(1.0, t[1].item<double>());
}

absl::Status Trainer::Checkpoint() {
  if (options_.checkpoint_dir.empty()) return absl::OkStatus();
  if (IsRankZero()) {
    absl::StatusOr<std::string> payload = SerializeTrainingState(*model_, *optimizer_, state_);
    if (!payload.ok()) return payload.status();
    DLAUNCH_WORKER_RETURN_IF_ERROR(SaveCheckpoint(options_.checkpoint_dir, *payload, state_.step));
  }
  // Every rank: rank 0 finishes the save before it joins the next collective, and fails
  // instead of joining when the save failed, so by the next report (which follows a
  // collective) this checkpoint is complete on disk.
  checkpoint_step_ = state_.step;
  return absl::OkStatus();
}

absl::Status Trainer::SaveParams() const {
  // Raw float32 values of every parameter in model order: byte-comparable across ranks/runs.
  std::string bytes;
  for (const auto& p : params_) {
    torch::Tensor c = p.detach().to(torch::kCPU, torch::kFloat32).contiguous();
    bytes.append(static_cast<const char*>(c.data_ptr()), c.numel() * sizeof(float));
  }
  return WriteFileAtomically(options_.save_params, bytes);
}

absl::Status Trainer::Run() {
  const auto run_start = Clock::now();
  try {
    DLAUNCH_WORKER_RETURN_IF_ERROR(Setup());
    auto trace = OpenStepTrace(ProcessEnvironment(), env_.rank);
    if (trace.ok()) step_trace_ = *std::move(trace);  // a timeline is not worth failing the job
    else std::fprintf(stderr, "warning: no step trace: %s\n", trace.status().ToString().c_str());
    interval_start_ = Clock::now();
    return TrainUntilDone(run_start);
  } catch (const std::exception& e) {
    return absl::InternalError(absl::StrCat("training failed: ", e.what()));
  }
}

absl::Status Trainer::TrainLoop() {
  // The sampler's epoch order of this round's rank and world size, from the step reached.
  int64_t epoch = -1;
  std::vector<int64_t> indices;
  timed_start_ = Clock::now();
  const int64_t first_step = state_.step;
  EnterPhase(TrainerReport::Phase::kTraining);
  while (state_.step < total_steps_) {
    const int64_t e = state_.step / steps_per_epoch_;
    if (e != epoch) {
      epoch = e;
      indices = sampler_->EpochIndices(epoch);
    }
    TrainStep(indices, state_.step % steps_per_epoch_);
    DLAUNCH_WORKER_RETURN_IF_ERROR(OnStepEnd(first_step));
    if (restart_ && restart_->leave_requested()) throw RoundStopped{};
  }
  return absl::OkStatus();
}

// After each step: throughput bookkeeping, the report / evaluation / checkpoint cadence, and
// the --fail-at-step fault injection.
absl::Status Trainer::OnStepEnd(int64_t first_step) {
  if (state_.step == first_step + 1) {
    // The first step carries one-time costs (allocations, bucket rebuild); throughput is timed
    // from its end (and again from the first step of a round this process rejoined).
    if (time_to_first_step_s_ == 0) time_to_first_step_s_ = SecondsSinceProcessStart();
    timed_start_ = Clock::now();
  } else {
    timed_samples_ += options_.batch_size;
  }
  const bool epoch_end = state_.step % steps_per_epoch_ == 0;
  const bool last = state_.step == total_steps_;
  if (state_.step % options_.report_every == 0 && !epoch_end && !last) {
    Report(TrainerReport::Kind::kStep, std::nullopt);
  }
  if (epoch_end || last) {
    train_seconds_ += std::chrono::duration<double>(Clock::now() - timed_start_).count();
    if (options_.evaluate) {
      EnterPhase(TrainerReport::Phase::kEvaluating);
      const auto e0 = Clock::now();
      test_accuracy_ = Evaluate();
      if (step_trace_) step_trace_->Span("evaluate", state_.step, e0, Clock::now());
      // The epoch report below says training goes on; the final report keeps EVALUATING.
      if (!last) EnterPhase(TrainerReport::Phase::kTraining);
    }
    Report(last ? TrainerReport::Kind::kFinal : TrainerReport::Kind::kEpoch,
           options_.evaluate ? test_accuracy_ : std::nullopt);
    if (IsRankZero()) {
      const int64_t epoch = (state_.step - 1) / steps_per_epoch_;
      std::fprintf(stderr, "epoch %lld step %lld/%lld loss %.4f test_accuracy %s\n",
                   static_cast<long long>(epoch + 1), static_cast<long long>(state_.step),
                   static_cast<long long>(total_steps_), last_loss_,
                   test_accuracy_ ? absl::StrFormat("%.4f", *test_accuracy_).c_str() : "n/a");
    }
    timed_start_ = Clock::now();
  }
  if ((options_.checkpoint_every > 0 && state_.step % options_.checkpoint_every == 0) || last) {
    // Only rank 0 writes, so only rank 0 checkpoints; the others go on and wait for it in
    // their next step's all-reduce.
    const bool writes = IsRankZero() && !options_.checkpoint_dir.empty();
    const auto c0 = Clock::now();
    if (writes) EnterPhase(TrainerReport::Phase::kCheckpointing);
    DLAUNCH_WORKER_RETURN_IF_ERROR(Checkpoint());
    if (step_trace_ && writes) step_trace_->Span("checkpoint", state_.step, c0, Clock::now());
    if (writes && !last) EnterPhase(TrainerReport::Phase::kTraining);
    timed_start_ += Clock::now() - c0;
  }
  if (state_.step == options_.fail_at_step) {
    std::fflush(nullptr);
    ::raise(SIGKILL);
  }
  return absl::OkStatus();
}

// Throughput: the mean over ranks of each rank's samples/s (the total is that times the size).
double Trainer::FinalThroughput() {
  torch::Tensor t = torch::tensor(
      {train_seconds_ > 0 ? timed_samples_ / train_seconds_ : 0.0}, torch::kFloat64).to(device_);
  AllReduceMean(pg_, t);
  return t.cpu().item<double>();
}

absl::Status Trainer::Finish(double per_rank, Clock::time_point run_start) {
  const double wall = std::chrono::duration<double>(Clock::now() - run_start).count();
  if (!options_.save_params.empty()) DLAUNCH_WORKER_RETURN_IF_ERROR(SaveParams());
  if (IsRankZero()) {
    std::fprintf(stderr,
                 "done: %lld steps, %d ranks, training throughput %.1f samples/s total (%.1f per "
                 "rank), "
                 "test_accuracy %s, loss %.4f, %.1f s\n",
                 static_cast<long long>(state_.step), env_.world_size,
                 per_rank * env_.world_size, per_rank,
                 test_accuracy_ ? absl::StrFormat("%.4f", *test_accuracy_).c_str() : "n/a",
                 last_loss_, wall);
    if (!options_.summary_json.empty()) DLAUNCH_WORKER_RETURN_IF_ERROR(WriteSummary(per_rank));
  }
  // All ranks leave together, so rank 0's store outlives everyone's last use of it.
  if (env_.world_size > 1) pg_.group->barrier()->wait();
  ShutdownProcessGroup(pg_);
  return absl::OkStatus();
}

absl::Status Trainer::WriteSummary(double per_rank) {
  TrainingSummary s;
  s.model = options_.model;
  s.dataset = options_.dataset;
  s.backend = pg_.backend;
  s.amp = AmpName(amp_);
  s.world_size = env_.world_size;
  s.batch_size = options_.batch_size;
  s.epochs = (state_.step + steps_per_epoch_ - 1) / steps_per_epoch_;
  s.steps = state_.step;
  s.start_step = start_step_;
  s.samples_per_sec_total = per_rank * env_.world_size;
  s.samples_per_sec_per_rank = per_rank;
  s.final_loss = last_loss_;
  s.test_accuracy = test_accuracy_;
  s.wall_time_s = SecondsSinceProcessStart();
  s.time_to_first_step_s = time_to_first_step_s_;
  return WriteFileAtomically(options_.summary_json, TrainingSummaryToJson(s));
}

absl::Status RunTraining(const WorkerOptions& options, const DistributedEnv& env) {
  Trainer trainer(options, env);
  return trainer.Run();
}

}  // namespace dlaunch::worker
