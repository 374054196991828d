// WorkerOptions: the dlaunch-worker command line, parsed and validated. Pure.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace dlaunch::worker {

struct WorkerOptions {
  std::string model = "cnn";               // cnn, mlp, resnet18, resnet34, resnet50
  std::string dataset = "fashion-mnist";   // fashion-mnist, synthetic
  std::string data_dir = "/usr/share/datasets/fashion-mnist";
  std::vector<int64_t> image_shape = {1, 28, 28};  // C,H,W (synthetic data)
  int64_t synthetic_samples = 60000;       // training set size of the synthetic dataset
  int64_t epochs = 1;
  int64_t steps = 0;                       // > 0: stop after this many global steps
  int64_t batch_size = 64;                 // per rank
  double lr = 0.01;                        // per-rank base rate, scaled by world size
  double momentum = 0.9;
  double weight_decay = 0.0;
  double warmup_epochs = 0.0;
  std::string lr_schedule = "constant";   // constant, cosine (after the warm-up)
  std::string device = "auto";             // auto, cpu, cuda (worker/device_choice.h)
  std::string backend = "auto";            // auto, nccl, gloo
  std::string amp = "off";                 // off, bf16, fp16
  std::string checkpoint_dir;
  int64_t checkpoint_every = 0;            // steps; 0: only at the end
  bool resume = false;
  bool channels_last = false;              // NHWC weights and batches for 4-D convolutions
  int64_t report_every = 50;
  uint64_t seed = 0;
  std::string summary_json;
  int threads = 0;                         // 0: OMP_NUM_THREADS, else 1
  double store_timeout_s = 300.0;          // rendezvous through the TCPStore
  double collective_timeout_s = 1800.0;
  double bucket_cap_mb = 25.0;
  std::string save_params;
  bool evaluate = true;                    // test accuracy at each epoch end
  int64_t fail_at_step = -1;               // fault injection: SIGKILL self after this step
};

// argv[0] is skipped. InvalidArgument names the offending flag and value.
absl::StatusOr<WorkerOptions> ParseWorkerOptions(const std::vector<std::string>& args);

// True when args ask for --help / -h.
bool WantsHelp(const std::vector<std::string>& args);

std::string WorkerUsage();

}  // namespace dlaunch::worker
