// Trainer::Setup: the set-up steps of the Horovod recipe, one method each, and the resume.
#include <cstdio>
#include <cstring>

#include <torch/torch.h>
#ifdef DLAUNCH_WITH_CUDA
#include <c10/cuda/CUDAFunctions.h>
#include <cuda_runtime_api.h>
#endif

#include "absl/strings/str_cat.h"
#include "common/environment.h"
#include "worker/checkpoint_io.h"
#include "worker/device_choice.h"
#include "worker/models.h"
#include "worker/trainer_internal.h"

namespace dlaunch::worker {

absl::Status Trainer::Setup() {
  ConfigureThreads();
  DLAUNCH_WORKER_RETURN_IF_ERROR(PinDevice());
  DLAUNCH_WORKER_RETURN_IF_ERROR(ConnectReporter());
  DLAUNCH_WORKER_RETURN_IF_ERROR(InitProcessGroup());
  // Loading lasts until the first step: the data set, the model, a resume.
  EnterPhase(TrainerReport::Phase::kLoadingData);
  DLAUNCH_WORKER_RETURN_IF_ERROR(LoadAndShardData());
  ScaleLearningRate();
  DLAUNCH_WORKER_RETURN_IF_ERROR(BuildModelAndOptimizer());
  // 6 and 7: broadcast, resumed, or (a rank started anew beside ranks kept in their process)
  // sent by a kept one.
  DLAUNCH_WORKER_RETURN_IF_ERROR(SyncState());
  BuildReducer();
  auto opts = torch::TensorOptions().device(device_).dtype(torch::kFloat64);
  loss_sum_ = torch::zeros({}, opts);
  correct_sum_ = torch::zeros({}, opts);
  return absl::OkStatus();
}

void Trainer::ConfigureThreads() {
  const int threads = options_.threads > 0 ? options_.threads
                                           : (env_.omp_num_threads > 0 ? env_.omp_num_threads : 1);
  at::set_num_threads(threads);
  try {
    at::set_num_interop_threads(1);
  } catch (const std::exception&) {
    // Already fixed by an earlier parallel call; harmless.
  }
}

namespace {

// What this build's CUDA runtime says, asked directly so that a node without a driver is named
// in the runtime's own words ("CUDA driver version is insufficient ...").
CudaProbe ProbeCuda() {
  CudaProbe probe;
  probe.libtorch_version = LibTorchVersion();
#ifdef DLAUNCH_WITH_CUDA
  probe.built_with_cuda = true;
  int count = 0;
  const cudaError_t error = cudaGetDeviceCount(&count);
  if (error != cudaSuccess) {
    probe.error = cudaGetErrorString(error);
    count = 0;
  }
  probe.device_count = count;
#endif
  return probe;
}

}  // namespace

// One GPU per local rank when there are GPUs (worker/device_choice.h); mixed precision only
// there.
absl::Status Trainer::PinDevice() {
  absl::StatusOr<DeviceChoice> choice = ChooseDevice(
      DeviceRequestFromEnv(ProcessEnvironment(), options_.device, env_.local_rank), ProbeCuda());
  if (!choice.ok()) return choice.status();
  use_cuda_ = choice->kind == DeviceKind::kCuda;
  if (use_cuda_) {
    device_ = torch::Device(torch::kCUDA, static_cast<c10::DeviceIndex>(choice->index));
#ifdef DLAUNCH_WITH_CUDA
    c10::cuda::set_device(device_.index());
#endif
  }
  if (IsRankZero() || use_cuda_) {
    std::fprintf(stderr, "dlaunch-worker: rank %d trains on %s\n", env_.rank,
                 choice->described.c_str());
  }
  amp_ = AmpFromName(options_.amp);
  if (!use_cuda_ && amp_ != Amp::kOff) {
    std::fprintf(stderr, "dlaunch-worker: --amp %s needs CUDA; training in fp32 on CPU\n",
                 AmpName(amp_));
    amp_ = Amp::kOff;
  }
  return absl::OkStatus();
}

absl::Status Trainer::ConnectReporter() {
  absl::StatusOr<ReportClient> reporter = ReportClient::Connect(env_.report_socket);
  if (!reporter.ok()) return reporter.status();
  reporter_.emplace(std::move(*reporter));
  const std::string backend =
      options_.backend == "auto" ? (use_cuda_ ? "nccl" : "gloo") : options_.backend;
  // Says hello: under `restart: in_process` the agent keeps this process across rounds. Not
  // with NCCL, whose communicator abort is not wired here: those ranks start anew.
  if (!env_.report_socket.empty() && backend == "gloo") {
    absl::StatusOr<std::unique_ptr<RestartChannel>> channel =
        RestartChannel::Connect(env_.report_socket);
    if (!channel.ok()) return channel.status();
    restart_ = *std::move(channel);
  }
  return absl::OkStatus();
}

absl::Status Trainer::InitProcessGroup() {
  absl::StatusOr<ProcessGroupHandle> pg = CreateProcessGroup(
      env_, options_.backend, use_cuda_,
      std::chrono::milliseconds(static_cast<int64_t>(options_.store_timeout_s * 1000)),
      std::chrono::milliseconds(static_cast<int64_t>(options_.collective_timeout_s * 1000)));
  if (!pg.ok()) return pg.status();
  pg_ = std::move(*pg);
  return absl::OkStatus();
}

// The data sets live in memory whole. On a GPU they are moved there when they are small
// beside its memory, so that a step gathers its batch on the device instead of stacking it on
// the host and copying it over (for ResNet-50 at batch 256, 154 MB per step that the GPU waited
// for: about 40% of the step on an H200).
void Trainer::HoldDataOnTheGpu() {
  constexpr int64_t kMaxBytesOnGpu = int64_t{4} << 30;
  if (!device_.is_cuda()) return;
  const int64_t bytes = data_.train.bytes() + data_.test.bytes();
  if (bytes > kMaxBytesOnGpu) return;
  data_.train.MoveTo(device_);
  data_.test.MoveTo(device_);
  if (env_.rank == 0) {
    std::fprintf(stderr, "dlaunch-worker: data held on %s (%.0f MB)\n", device_.str().c_str(),
                 static_cast<double>(bytes) / 1e6);
  }
}

absl::Status Trainer::LoadAndShardData() {
  if (options_.dataset == "fashion-mnist") {
    absl::StatusOr<Datasets> d = LoadFashionMnist(options_.data_dir);
    if (!d.ok()) return d.status();
    data_ = std::move(*d);
  } else {
    data_ = MakeSyntheticDatasets(options_.image_shape, options_.synthetic_samples, options_.seed);
  }
  HoldDataOnTheGpu();
  return ShardData();
}

absl::Status Trainer::ShardData() {
  steps_per_epoch_ = StepsPerEpoch(data_.train.size(), env_.world_size, options_.batch_size);
  if (steps_per_epoch_ == 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "the training set (", data_.train.size(), " samples) is smaller than one global batch (",
        env_.world_size, " ranks x --batch-size ", options_.batch_size, ")"));
  }
  total_steps_ = options_.steps > 0 ? options_.steps : options_.epochs * steps_per_epoch_;
  sampler_ = std::make_unique<DistributedSampler>(data_.train.size(), env_.world_size, env_.rank,
                                                  options_.seed);
  return absl::OkStatus();
}

void Trainer::ScaleLearningRate() {
  schedule_ = std::make_unique<LearningRateSchedule>(
      options_.lr, env_.world_size, options_.warmup_epochs, steps_per_epoch_,
      options_.lr_schedule == "cosine" ? LearningRateDecay::kCosine : LearningRateDecay::kConstant,
      total_steps_);
}

absl::Status Trainer::BuildModelAndOptimizer() {
  torch::manual_seed(options_.seed);
  absl::StatusOr<torch::nn::Sequential> model =
      MakeModel(options_.model, options_.image_shape, data_.num_classes);
  if (!model.ok()) return model.status();
  model_ = *model;
  model_->to(device_);
  if (options_.channels_last) {
    torch::NoGradGuard no_grad;
    int converted = 0;
    for (auto& p : model_->parameters()) {
      if (p.dim() != 4) continue;
      p.set_data(p.contiguous(at::MemoryFormat::ChannelsLast));
      ++converted;
    }
    if (env_.rank == 0) {
      std::fprintf(stderr,
                   "dlaunch-worker: %d convolution weight(s) and the batches in channels-last "
                   "layout\n",
                   converted);
    }
  }
  params_ = model_->parameters();
  buffers_ = model_->buffers();
  optimizer_ = std::make_unique<torch::optim::SGD>(
      params_, torch::optim::SGDOptions(schedule_->At(0))
                   .momentum(options_.momentum)
                   .weight_decay(options_.weight_decay));
  return absl::OkStatus();
}

// 5: the reducer's hooks go on once the parameters hold their final (broadcast, resumed or
// sent) values.
void Trainer::BuildReducer() {
  ddp_ = std::make_unique<DdpModel>(params_, buffers_, pg_.group, env_.world_size,
                                    options_.bucket_cap_mb);
  if (state_.step > 0 && env_.world_size > 1) LayOutBucketsAsAfterTheFirstStep();
}

void Trainer::BroadcastModelState() {
  std::vector<torch::Tensor> tensors = params_;
  tensors.insert(tensors.end(), buffers_.begin(), buffers_.end());
  if (env_.world_size > 1) BroadcastFromRankZero(pg_.group, tensors);
}

// The reducer lays its buckets out again after the first backward of its process, in the order
// the gradients became ready; an uninterrupted run did that at its step 1. A resumed process
// would all-reduce its first step in the initial layout, and with three or more ranks Gloo's
// ring then adds each element's contributions in another order: the run would no longer be
// bit-identical to the uninterrupted one. One backward of a zero loss does the re-layout first:
// eval mode (no running statistics move), no optimizer step, gradients zeroed after it, and
// the next step re-seeds its own RNG (StepSeed) as usual.
void Trainer::LayOutBucketsAsAfterTheFirstStep() {
  const int64_t count = std::min<int64_t>(options_.batch_size, data_.train.size());
  std::vector<int64_t> indices(static_cast<size_t>(count));
  for (int64_t i = 0; i < count; ++i) indices[static_cast<size_t>(i)] = i;
  auto [x, y] = data_.train.Batch(indices.data(), count);
  x = InModelLayout(x.to(device_));
  y = y.to(device_);
  model_->eval();
  torch::Tensor loss;
  ddp_->Forward([&] { loss = torch::nll_loss(model_->forward(x).to(torch::kFloat32), y) * 0.0; });
  loss.backward();
  optimizer_->zero_grad();
}

absl::Status Trainer::Resume() {
  // Rank 0 reads the file; the bytes travel to the other ranks over the process group, which
  // need not share a filesystem with it.
  std::string payload;
  int64_t length = 0;
  absl::Status load_status;
  if (IsRankZero()) {
    int64_t step_in_name = 0;
    absl::StatusOr<std::string> bytes = LoadNewestIntactCheckpoint(options_.checkpoint_dir,
                                                                   &step_in_name);
    if (bytes.ok()) {
      payload = std::move(*bytes);
      length = static_cast<int64_t>(payload.size());
    } else if (!absl::IsNotFound(bytes.status())) {
      load_status = bytes.status();
      length = -1;
    } else {
      std::fprintf(stderr, "dlaunch-worker: resume: %s; starting from step 0\n",
                   std::string(bytes.status().message()).c_str());
    }
  }
  if (env_.world_size > 1) {
    torch::Tensor len = torch::tensor({length}, torch::kInt64).to(device_);
    std::vector<torch::Tensor> t = {len};
    pg_.group->broadcast(t)->wait();
    length = len.cpu().item<int64_t>();
  }
  if (length < 0) {
    return load_status.ok() ? absl::DataLossError("rank 0 could not read the checkpoint")
                            : load_status;
  }
  if (length == 0) return absl::OkStatus();
  if (env_.world_size > 1) {
    torch::Tensor bytes = torch::empty({length}, torch::kUInt8);
    if (IsRankZero()) std::memcpy(bytes.data_ptr(), payload.data(), payload.size());
    bytes = bytes.to(device_);
    std::vector<torch::Tensor> t = {bytes};
    pg_.group->broadcast(t)->wait();
    bytes = bytes.cpu();
    payload.assign(static_cast<const char*>(bytes.data_ptr()), static_cast<size_t>(length));
  }
  absl::StatusOr<ScalarTrainingState> state =
      DeserializeTrainingState(payload, *model_, *optimizer_, device_);
  if (!state.ok()) return state.status();
  state_ = *state;
  start_step_ = state_.step;
  checkpoint_step_ = state_.step;  // the checkpoint just read is complete
  if (IsRankZero()) {
    std::fprintf(stderr, "dlaunch-worker: resumed from step %lld\n",
                 static_cast<long long>(start_step_));
  }
  BroadcastModelState();
  return absl::OkStatus();
}

}  // namespace dlaunch::worker
