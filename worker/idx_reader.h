// Reads the idx format of MNIST / Fashion-MNIST (optionally gzip-compressed): a big-endian
// header (two zero bytes, a type code, the number of dimensions, each dimension as u32) followed
// by the unsigned-byte data. No LibTorch, so it is unit-tested cheaply.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace dlaunch::worker {

struct IdxArray {
  std::vector<int64_t> dims;
  std::vector<uint8_t> data;  // row-major, product(dims) bytes
};

// Parses decompressed idx bytes; `what` names the source in errors.
absl::StatusOr<IdxArray> ParseIdx(std::string_view bytes, std::string_view what);

// Reads and parses a file; gzip is detected by its magic, so plain idx files work too.
// A file preloaded (below) is served from memory, once.
absl::StatusOr<IdxArray> ReadIdxFile(const std::string& path);

// Reads and parses `path` now for the next ReadIdxFile of it: dlaunch-worker's warm process
// (worker/warm_serve.h) reads the data set before it forks ranks, which then skip the read.
absl::Status PreloadIdxFile(const std::string& path);

}  // namespace dlaunch::worker
