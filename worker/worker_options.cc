#include "worker/worker_options.h"

#include <functional>
#include <map>
#include <set>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"

namespace dlaunch::worker {
namespace {

using Setter = std::function<absl::Status(const std::string&)>;

absl::Status Bad(const std::string& flag, const std::string& value, const std::string& why) {
  return absl::InvalidArgumentError(absl::StrCat("--", flag, "=\"", value, "\": ", why));
}

Setter Int(const std::string& flag, int64_t* out, int64_t min) {
  return [=](const std::string& v) {
    if (!absl::SimpleAtoi(v, out) || *out < min) return Bad(flag, v, absl::StrCat("want an integer >= ", min));
    return absl::OkStatus();
  };
}

Setter Double(const std::string& flag, double* out, double min) {
  return [=](const std::string& v) {
    if (!absl::SimpleAtod(v, out) || !(*out >= min)) return Bad(flag, v, absl::StrCat("want a number >= ", min));
    return absl::OkStatus();
  };
}

Setter Choice(const std::string& flag, std::string* out, std::set<std::string> allowed) {
  return [=](const std::string& v) {
    if (allowed.count(v) == 0) return Bad(flag, v, absl::StrCat("want one of ", absl::StrJoin(allowed, ", ")));
    *out = v;
    return absl::OkStatus();
  };
}

Setter String(const std::string& flag, std::string* out) {
  return [=](const std::string& v) {
    if (v.empty()) return Bad(flag, v, "must not be empty");
    *out = v;
    return absl::OkStatus();
  };
}

// C,H,W: three positive integers.
Setter ImageShape(const std::string& flag, std::vector<int64_t>* out) {
  return [flag, out](const std::string& v) {
    std::vector<std::string> parts = absl::StrSplit(v, ',');
    std::vector<int64_t> shape;
    for (const std::string& p : parts) {
      int64_t d;
      if (!absl::SimpleAtoi(p, &d) || d < 1) return Bad(flag, v, "want C,H,W with positive integers");
      shape.push_back(d);
    }
    if (shape.size() != 3) return Bad(flag, v, "want three dimensions C,H,W");
    *out = shape;
    return absl::OkStatus();
  };
}

Setter Seed(const std::string& flag, uint64_t* out) {
  return [flag, out](const std::string& v) {
    if (!absl::SimpleAtoi(v, out)) return Bad(flag, v, "want a non-negative integer");
    return absl::OkStatus();
  };
}

// An int-sized option, checked as Int does.
Setter SmallInt(const std::string& flag, int* out, int64_t min) {
  return [flag, out, min](const std::string& v) {
    int64_t wide = 0;
    if (absl::Status s = Int(flag, &wide, min)(v); !s.ok()) return s;
    *out = static_cast<int>(wide);
    return absl::OkStatus();
  };
}

}  // namespace

bool WantsHelp(const std::vector<std::string>& args) {
  for (size_t i = 1; i < args.size(); ++i) {
    if (args[i] == "--help" || args[i] == "-h") return true;
  }
  return false;
}

std::string WorkerUsage() {
  return R"(usage: dlaunch-worker [flags]
Data-parallel LibTorch trainer. Reads RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT,
OMP_NUM_THREADS and DLAUNCH_REPORT_SOCKET from the environment (torchrun-compatible); without
them it trains alone.

  --model {cnn,mlp,resnet18,resnet34,resnet50}   (default cnn)
  --dataset {fashion-mnist,synthetic}            (default fashion-mnist)
  --data-dir DIR          Fashion-MNIST idx(.gz) files (default /usr/share/datasets/fashion-mnist)
  --image-shape C,H,W     synthetic sample shape (default 1,28,28)
  --synthetic-samples N   synthetic training-set size (default 60000)
  --epochs N | --steps N  length of training (--steps wins; default 1 epoch)
  --batch-size B          per rank (default 64)
  --lr LR                 per-rank base rate, multiplied by the world size (default 0.01)
  --momentum M            SGD momentum (default 0.9)
  --weight-decay W        (default 0)
  --warmup-epochs E       linear warm-up from LR to LR x world size (default 0)
  --lr-schedule {constant,cosine}  after the warm-up: keep the rate, or decay it along a half
                          cosine to zero at the last step (default constant)
  --device {auto,cpu,cuda}  auto: the rank's GPU when CUDA sees one, else the CPU; cuda:
                          fail before training, naming the node and the cause, without one
  --backend {auto,nccl,gloo}   auto: NCCL on CUDA, else Gloo
  --amp {off,bf16,fp16}   mixed precision on CUDA (fp16 with dynamic loss scaling)
  --channels-last         convolution weights and image batches in NHWC layout (faster
                          convolutions on tensor cores, e.g. ResNets in bf16)
  --checkpoint-dir DIR    rank 0 writes checkpoints here
  --checkpoint-every N    also every N steps (default: only at the end)
  --resume                continue from the newest intact checkpoint in --checkpoint-dir
  --report-every N        report every N steps (default 50)
  --seed S                shared seed for initialisation and data order (default 0)
  --summary-json PATH     rank 0 writes a JSON summary here
  --threads N             intra-op threads (default OMP_NUM_THREADS, else 1)
  --store-timeout SECONDS rendezvous deadline for the TCPStore (default 300)
  --collective-timeout SECONDS  (default 1800)
  --bucket-cap-mb MB      gradient bucket size (default 25)
  --no-eval               skip test accuracy at epoch ends
  --save-params PATH      every rank writes its final parameters (raw float32, for tests);
                          {rank} in PATH: the rank the process started as
  --fail-at-step K        fault injection: the process kills itself (SIGKILL) after step K
  --help
)";
}

namespace {

// The rules between flags, once every flag is read; the dataset fixes the image shape.
absl::Status CheckTogether(bool epochs_given, WorkerOptions* o) {
  if (o->resume && o->checkpoint_dir.empty()) {
    return absl::InvalidArgumentError("--resume needs --checkpoint-dir");
  }
  if (o->checkpoint_every > 0 && o->checkpoint_dir.empty()) {
    return absl::InvalidArgumentError("--checkpoint-every needs --checkpoint-dir");
  }
  if (epochs_given && o->steps > 0) {
    return absl::InvalidArgumentError("give --epochs or --steps, not both");
  }
  if (o->dataset == "fashion-mnist") o->image_shape = {1, 28, 28};
  if (o->model == "cnn" && (o->image_shape[1] < 6 || o->image_shape[2] < 6)) {
    return absl::InvalidArgumentError("--model cnn needs images of at least 6x6 (--image-shape)");
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<WorkerOptions> ParseWorkerOptions(const std::vector<std::string>& args) {
  WorkerOptions o;
  bool epochs_given = false;
  std::map<std::string, Setter> setters = {
      {"model", Choice("model", &o.model, {"cnn", "mlp", "resnet18", "resnet34", "resnet50"})},
      {"dataset", Choice("dataset", &o.dataset, {"fashion-mnist", "synthetic"})},
      {"data-dir", String("data-dir", &o.data_dir)},
      {"image-shape", ImageShape("image-shape", &o.image_shape)},
      {"synthetic-samples", Int("synthetic-samples", &o.synthetic_samples, 1)},
      {"epochs", [&](const std::string& v) { epochs_given = true; return Int("epochs", &o.epochs, 1)(v); }},
      {"steps", Int("steps", &o.steps, 1)},
      {"batch-size", Int("batch-size", &o.batch_size, 1)},
      {"lr", Double("lr", &o.lr, 0.0)},
      {"momentum", Double("momentum", &o.momentum, 0.0)},
      {"weight-decay", Double("weight-decay", &o.weight_decay, 0.0)},
      {"warmup-epochs", Double("warmup-epochs", &o.warmup_epochs, 0.0)},
      {"lr-schedule", Choice("lr-schedule", &o.lr_schedule, {"constant", "cosine"})},
      {"device", Choice("device", &o.device, {"auto", "cpu", "cuda"})},
      {"backend", Choice("backend", &o.backend, {"auto", "nccl", "gloo"})},
      {"amp", Choice("amp", &o.amp, {"off", "bf16", "fp16"})},
      {"checkpoint-dir", String("checkpoint-dir", &o.checkpoint_dir)},
      {"checkpoint-every", Int("checkpoint-every", &o.checkpoint_every, 0)},
      {"report-every", Int("report-every", &o.report_every, 1)},
      {"seed", Seed("seed", &o.seed)},
      {"summary-json", String("summary-json", &o.summary_json)},
      {"threads", SmallInt("threads", &o.threads, 1)},
      {"store-timeout", Double("store-timeout", &o.store_timeout_s, 0.001)},
      {"collective-timeout", Double("collective-timeout", &o.collective_timeout_s, 0.001)},
      {"bucket-cap-mb", Double("bucket-cap-mb", &o.bucket_cap_mb, 0.0)},
      {"save-params", String("save-params", &o.save_params)},
      {"fail-at-step", Int("fail-at-step", &o.fail_at_step, 1)},
  };
  const std::map<std::string, bool*> switches = {{"resume", &o.resume},
                                                 {"channels-last", &o.channels_last}};

  for (size_t i = 1; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (arg.rfind("--", 0) != 0) {
      return absl::InvalidArgumentError(absl::StrCat("unexpected argument \"", arg, "\" (see --help)"));
    }
    std::string name = arg.substr(2);
    std::string value;
    bool has_value = false;
    if (const size_t eq = name.find('='); eq != std::string::npos) {
      value = name.substr(eq + 1);
      name = name.substr(0, eq);
      has_value = true;
    }
    if (auto sw = switches.find(name); sw != switches.end()) {
      if (has_value) return Bad(name, value, "is a switch and takes no value");
      *sw->second = true;
      continue;
    }
    if (name == "no-eval") {
      o.evaluate = false;
      continue;
    }
    auto it = setters.find(name);
    if (it == setters.end()) {
      return absl::InvalidArgumentError(absl::StrCat("unknown flag --", name, " (see --help)"));
    }
    if (!has_value) {
      if (i + 1 >= args.size()) return absl::InvalidArgumentError(absl::StrCat("--", name, " needs a value"));
      value = args[++i];
    }
    if (absl::Status s = it->second(value); !s.ok()) return s;
  }
  if (absl::Status s = CheckTogether(epochs_given, &o); !s.ok()) return s;
  return o;
}

}  // namespace dlaunch::worker
