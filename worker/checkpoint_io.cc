#include "worker/checkpoint_io.h"

#include <sys/stat.h>

#include <cstdio>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "common/file_io.h"
#include "worker/checkpoint_file.h"

namespace dlaunch::worker {

absl::StatusOr<std::string> SerializeTrainingState(const torch::nn::Module& model,
                                                   const torch::optim::Optimizer& optimizer,
                                                   const ScalarTrainingState& state) {
  try {
    torch::serialize::OutputArchive archive;
    torch::serialize::OutputArchive model_archive(archive.compilation_unit());
    model.save(model_archive);
    archive.write("model", model_archive);
    torch::serialize::OutputArchive optimizer_archive(archive.compilation_unit());
    optimizer.save(optimizer_archive);
    archive.write("optimizer", optimizer_archive);
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
  try {
    torch::serialize::InputArchive archive;
    archive.load_from(payload.data(), payload.size(), device);
    torch::serialize::InputArchive model_archive;
    archive.read("model", model_archive);
    model.load(model_archive);
    torch::serialize::InputArchive optimizer_archive;
    archive.read("optimizer", optimizer_archive);
    optimizer.load(optimizer_archive);
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
    return absl::DataLossError(absl::StrCat(
        "checkpoint does not match this model/optimizer (different --model?): ", e.what()));
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
