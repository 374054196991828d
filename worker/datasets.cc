#include "worker/datasets.h"

#include <sys/stat.h>

#include "absl/strings/str_cat.h"
#include "worker/idx_reader.h"

namespace dlaunch::worker {
namespace {

// Fashion-MNIST training-set pixel statistics (of x / 255).
constexpr float kMean = 0.2860f;
constexpr float kStd = 0.3530f;

absl::StatusOr<IdxArray> ReadEither(const std::string& dir, const std::string& base) {
  for (const std::string& name : {base + ".gz", base}) {
    const std::string path = absl::StrCat(dir, "/", name);
    struct stat st;
    if (::stat(path.c_str(), &st) == 0) return ReadIdxFile(path);
  }
  return absl::NotFoundError(absl::StrCat("Fashion-MNIST file ", base, "[.gz] not found in ", dir,
                                          " (--data-dir)"));
}

absl::StatusOr<TensorDataset> LoadSplit(const std::string& dir, const std::string& prefix) {
  absl::StatusOr<IdxArray> images = ReadEither(dir, prefix + "-images-idx3-ubyte");
  if (!images.ok()) return images.status();
  absl::StatusOr<IdxArray> labels = ReadEither(dir, prefix + "-labels-idx1-ubyte");
  if (!labels.ok()) return labels.status();
  if (images->dims.size() != 3 || labels->dims.size() != 1 || images->dims[0] != labels->dims[0]) {
    return absl::InvalidArgumentError(
        absl::StrCat(dir, "/", prefix, ": image and label files do not match"));
  }
  const int64_t n = images->dims[0];
  torch::Tensor x = torch::from_blob(images->data.data(), {n, 1, images->dims[1], images->dims[2]},
                                     torch::kUInt8)
                        .to(torch::kFloat32)
                        .div_(255.0f)
                        .sub_(kMean)
                        .div_(kStd);
  torch::Tensor y = torch::from_blob(labels->data.data(), {n}, torch::kUInt8).to(torch::kInt64);
  return TensorDataset(x, y, n);
}

}  // namespace

std::pair<torch::Tensor, torch::Tensor> TensorDataset::Batch(const int64_t* indices,
                                                             int64_t count) const {
  torch::Tensor idx = torch::from_blob(const_cast<int64_t*>(indices), {count}, torch::kInt64);
  if (!images_.device().is_cpu()) idx = idx.to(images_.device());
  const int64_t pool = images_.size(0);
  if (pool != size_) idx = idx.remainder(pool);
  return {images_.index_select(0, idx), labels_.index_select(0, idx)};
}

int64_t TensorDataset::bytes() const {
  return static_cast<int64_t>(images_.nbytes() + labels_.nbytes());
}

void TensorDataset::MoveTo(const torch::Device& device) {
  images_ = images_.to(device);
  labels_ = labels_.to(device);
}

absl::StatusOr<Datasets> LoadFashionMnist(const std::string& dir) {
  Datasets d;
  absl::StatusOr<TensorDataset> train = LoadSplit(dir, "train");
  if (!train.ok()) return train.status();
  absl::StatusOr<TensorDataset> test = LoadSplit(dir, "t10k");
  if (!test.ok()) return test.status();
  d.train = std::move(*train);
  d.test = std::move(*test);
  return d;
}

Datasets MakeSyntheticDatasets(const std::vector<int64_t>& image_shape, int64_t train_size,
                               uint64_t seed) {
  // The pool is generated from its own generator so that it is the same on every rank and in
  // every run with the same seed, whatever the model initialisation drew.
  auto gen = at::detail::createCPUGenerator(seed ^ 0x5EEDDA7AULL);
  const int64_t pool = std::min<int64_t>(train_size, 1024);
  std::vector<int64_t> shape = {pool};
  shape.insert(shape.end(), image_shape.begin(), image_shape.end());
  torch::Tensor x = at::normal(0.0, 1.0, shape, gen);
  torch::Tensor y = at::randint(0, 10, {pool}, gen, torch::kInt64);
  Datasets d;
  d.train = TensorDataset(x, y, train_size);
  const int64_t test_pool = std::min<int64_t>(pool, 256);
  d.test = TensorDataset(x.narrow(0, 0, test_pool), y.narrow(0, 0, test_pool), test_pool);
  return d;
}

}  // namespace dlaunch::worker
