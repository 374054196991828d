#include "worker/checkpoint_io.h"

#include <sys/stat.h>

#include <cstdio>
#include <sstream>
#include <type_traits>

#include <torch/version.h>

#include "absl/strings/str_cat.h"
#include "common/file_io.h"
#include "worker/checkpoint_file.h"

namespace dlaunch::worker {
namespace {

// The optimizer state is written as one momentum buffer per parameter, in parameter order
// ("momentum/<i>"), not with Optimizer::save: LibTorch 1.13 keys that state by the text of each
// parameter's address and 2.x by the address itself, so a checkpoint saved by one and loaded by
// the other put the buffers under the wrong parameters. Checkpoints without these entries (written
// before) are still loaded with Optimizer::load, by the LibTorch version that wrote them.
constexpr char kMomentumCount[] = "momentum_count";

template <typename State>
typename State::key_type StateKey(const State&, const torch::Tensor& param) {
  using Key = typename State::key_type;
  if constexpr (std::is_same_v<Key, std::string>) {
    std::ostringstream text;  // what 1.13's c10::guts::to_string of the pointer gives
    text << param.unsafeGetTensorImpl();
    return text.str();
  } else {
    return static_cast<Key>(param.unsafeGetTensorImpl());
  }
}

std::vector<torch::Tensor> AllParams(const torch::optim::Optimizer& optimizer) {
  std::vector<torch::Tensor> out;
  for (const auto& group : optimizer.param_groups()) {
    out.insert(out.end(), group.params().begin(), group.params().end());
  }
  return out;
}

// The momentum buffer of `param`; undefined when it has none yet.
torch::Tensor MomentumOf(const torch::optim::SGD& sgd, const torch::Tensor& param) {
  const auto& state = sgd.state();
  auto it = state.find(StateKey(state, param));
  if (it == state.end()) return {};
  return static_cast<const torch::optim::SGDParamState&>(*it->second).momentum_buffer();
}

void WriteMomentum(const torch::optim::SGD& sgd, torch::serialize::OutputArchive& archive) {
  const std::vector<torch::Tensor> params = AllParams(sgd);
  for (size_t i = 0; i < params.size(); ++i) {
    const torch::Tensor buffer = MomentumOf(sgd, params[i]);
    if (buffer.defined()) archive.write("momentum/" + std::to_string(i), buffer);
  }
  archive.write(kMomentumCount, torch::tensor(static_cast<int64_t>(params.size()), torch::kInt64));
}

// False when the archive has no per-parameter momentum (an older checkpoint).
bool ReadMomentum(torch::optim::SGD& sgd, torch::serialize::InputArchive& archive) {
  torch::Tensor count;
  if (!archive.try_read(kMomentumCount, count)) return false;
  const std::vector<torch::Tensor> params = AllParams(sgd);
  if (count.item<int64_t>() != static_cast<int64_t>(params.size())) {
    throw std::runtime_error("the checkpoint holds momentum for " +
                             std::to_string(count.item<int64_t>()) + " parameters, the model has " +
                             std::to_string(params.size()));
  }
  auto& state = sgd.state();
  state.clear();
  for (size_t i = 0; i < params.size(); ++i) {
    torch::Tensor buffer;
    if (!archive.try_read("momentum/" + std::to_string(i), buffer)) continue;
    if (!buffer.sizes().equals(params[i].sizes())) {
      throw std::runtime_error("momentum " + std::to_string(i) + " has another shape than its parameter");
    }
    auto param_state = std::make_unique<torch::optim::SGDParamState>();
    param_state->momentum_buffer(buffer);
    state[StateKey(state, params[i])] = std::move(param_state);
  }
  return true;
}

// An older checkpoint's optimizer state, loaded by LibTorch's own format, must fit the
// parameters; a checkpoint written on another LibTorch version may not, and would fail later in
// the first step with a tensor-size error.
void CheckMomentumShapes(const torch::optim::SGD& sgd) {
  for (const torch::Tensor& param : AllParams(sgd)) {
    const torch::Tensor buffer = MomentumOf(sgd, param);
    if (buffer.defined() && !buffer.sizes().equals(param.sizes())) {
      throw std::runtime_error("its optimizer state does not fit the parameters (written by "
                               "another LibTorch version?)");
    }
  }
}

// The writer's LibTorch version recorded in the archive, e.g. "1.13.0"; empty when absent.
std::string WriterVersion(torch::serialize::InputArchive& archive) {
  torch::Tensor v;
  if (!archive.try_read("libtorch_version", v) || v.numel() != 3) return "";
  return absl::StrCat(v[0].item<int64_t>(), ".", v[1].item<int64_t>(), ".", v[2].item<int64_t>());
}

}  // namespace

std::string LibTorchVersion() {
  return absl::StrCat(TORCH_VERSION_MAJOR, ".", TORCH_VERSION_MINOR, ".", TORCH_VERSION_PATCH);
}

absl::StatusOr<std::string> SerializeTrainingState(const torch::nn::Module& model,
                                                   const torch::optim::Optimizer& optimizer,
                                                   const ScalarTrainingState& state) {
  try {
    torch::serialize::OutputArchive archive;
    torch::serialize::OutputArchive model_archive(archive.compilation_unit());
    model.save(model_archive);
    archive.write("model", model_archive);
    if (const auto* sgd = dynamic_cast<const torch::optim::SGD*>(&optimizer)) {
      WriteMomentum(*sgd, archive);
    } else {
      torch::serialize::OutputArchive optimizer_archive(archive.compilation_unit());
      optimizer.save(optimizer_archive);
      archive.write("optimizer", optimizer_archive);
    }
    archive.write("libtorch_version",
                  torch::tensor({int64_t{TORCH_VERSION_MAJOR}, int64_t{TORCH_VERSION_MINOR},
                                 int64_t{TORCH_VERSION_PATCH}}, torch::kInt64));
    archive.write("step", torch::tensor(state.step, torch::kInt64));
    archive.write("loss_scale", torch::tensor(state.loss_scale, torch::kFloat64));
    archive.write("good_steps", torch::tensor(state.good_steps, torch::kInt64));
    std::ostringstream out;
    archive.save_to(out);
    return out.str();
  } catch (const std::exception& e) {
    return absl::InternalError(absl::StrCat("cannot serialise the training state: ", e.what()));
  }
}

absl::StatusOr<ScalarTrainingState> DeserializeTrainingState(const std::string& payload,
                                                             torch::nn::Module& model,
                                                             torch::optim::Optimizer& optimizer,
                                                             torch::Device device) {
  std::string writer;
  try {
    torch::serialize::InputArchive archive;
    archive.load_from(payload.data(), payload.size(), device);
    writer = WriterVersion(archive);
    torch::serialize::InputArchive model_archive;
    archive.read("model", model_archive);
    model.load(model_archive);
    auto* sgd = dynamic_cast<torch::optim::SGD*>(&optimizer);
    if (sgd == nullptr || !ReadMomentum(*sgd, archive)) {
      torch::serialize::InputArchive optimizer_archive;
      archive.read("optimizer", optimizer_archive);
      optimizer.load(optimizer_archive);
      if (sgd != nullptr) CheckMomentumShapes(*sgd);
    }
    torch::Tensor t;
    ScalarTrainingState state;
    archive.read("step", t);
    state.step = t.item<int64_t>();
    archive.read("loss_scale", t);
    state.loss_scale = t.item<double>();
    archive.read("good_steps", t);
    state.good_steps = t.item<int64_t>();
    return state;
  } catch (const std::exception& e) {
    // The first line of LibTorch's message; its C++ stack trace follows on the next lines.
    std::string what = e.what();
    what = what.substr(0, what.find('\n'));
    if (!writer.empty()) {
      return absl::DataLossError(absl::StrCat(
          "checkpoint (written on LibTorch ", writer, ", read on ", LibTorchVersion(),
          ") does not match this model/optimizer (different --model?): ", what));
    }
    return absl::DataLossError(absl::StrCat(
        "checkpoint does not match this model/optimizer (different --model, or written by an "
        "older dlaunch-worker on another LibTorch than this one's ", LibTorchVersion(), "?): ",
        what));
  }
}

absl::Status SaveCheckpoint(const std::string& dir, const std::string& payload, int64_t step) {
  if (::mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) {
    return absl::InternalError(absl::StrCat("cannot create --checkpoint-dir ", dir));
  }
  absl::Status s = WriteFileAtomically(CheckpointPath(dir, step), FrameCheckpoint(payload));
  if (!s.ok()) return s;
  // Two, so that a newest file damaged after the fact still leaves one to resume from.
  PruneCheckpoints(dir, 2);
  return absl::OkStatus();
}

absl::StatusOr<std::string> LoadNewestIntactCheckpoint(const std::string& dir,
                                                       int64_t* step_in_name) {
  absl::StatusOr<std::vector<CheckpointEntry>> entries = ListCheckpoints(dir);
  if (!entries.ok()) return entries.status();
  for (const CheckpointEntry& e : *entries) {
    absl::StatusOr<std::string> bytes = ReadFile(e.path);
    if (!bytes.ok()) {
      std::fprintf(stderr, "dlaunch-worker: skipping checkpoint: %s\n",
                   bytes.status().ToString().c_str());
      continue;
    }
    absl::StatusOr<std::string> payload = UnframeCheckpoint(*bytes, e.path);
    if (!payload.ok()) {
      std::fprintf(stderr, "dlaunch-worker: skipping torn checkpoint: %s\n",
                   payload.status().ToString().c_str());
      continue;
    }
    *step_in_name = e.step;
    return payload;
  }
  return absl::NotFoundError(absl::StrCat("no intact checkpoint in ", dir));
}

}  // namespace dlaunch::worker
