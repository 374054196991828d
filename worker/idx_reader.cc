#include "worker/idx_reader.h"

#include <zlib.h>

#include <map>
#include <mutex>

#include "absl/strings/str_cat.h"

namespace dlaunch::worker {

absl::StatusOr<IdxArray> ParseIdx(std::string_view bytes, std::string_view what) {
  auto byte = [&](size_t i) { return static_cast<unsigned char>(bytes[i]); };
  if (bytes.size() < 4 || byte(0) != 0 || byte(1) != 0) {
    return absl::InvalidArgumentError(absl::StrCat(std::string(what), ": not an idx file (bad magic)"));
  }
  if (byte(2) != 0x08) {
    return absl::InvalidArgumentError(
        absl::StrCat(std::string(what), ": idx type code ", byte(2), " is not unsigned byte (8)"));
  }
  const int ndims = byte(3);
  const size_t header = 4 + 4 * static_cast<size_t>(ndims);
  if (ndims == 0 || bytes.size() < header) {
    return absl::InvalidArgumentError(absl::StrCat(std::string(what), ": truncated idx header"));
  }
  IdxArray out;
  uint64_t count = 1;
  for (int d = 0; d < ndims; ++d) {
    const size_t o = 4 + 4 * static_cast<size_t>(d);
    const uint32_t dim = (uint32_t{byte(o)} << 24) | (uint32_t{byte(o + 1)} << 16) |
                         (uint32_t{byte(o + 2)} << 8) | uint32_t{byte(o + 3)};
    out.dims.push_back(dim);
    // Dimensions whose product wraps past 2^64 could promise exactly the bytes present.
    if (__builtin_mul_overflow(count, uint64_t{dim}, &count)) {
      return absl::InvalidArgumentError(
          absl::StrCat(std::string(what), ": idx dimensions multiply past 2^64"));
    }
  }
  if (bytes.size() - header != count) {
    return absl::InvalidArgumentError(absl::StrCat(std::string(what), ": header promises ", count,
                                                   " bytes of data, file has ", bytes.size() - header));
  }
  out.data.assign(bytes.begin() + header, bytes.end());
  return out;
}

namespace {

std::mutex preload_mu;
std::map<std::string, IdxArray>& Preloaded() {
  static auto* files = new std::map<std::string, IdxArray>;
  return *files;
}

absl::StatusOr<IdxArray> ReadAndParse(const std::string& path) {
  gzFile f = gzopen(path.c_str(), "rb");  // reads plain files transparently
  if (f == nullptr) return absl::NotFoundError(absl::StrCat("cannot open ", path));
  gzbuffer(f, 1 << 20);
  std::string bytes;
  char buf[1 << 16];
  int n;
  while ((n = gzread(f, buf, sizeof(buf))) > 0) bytes.append(buf, static_cast<size_t>(n));
  int err = Z_OK;
  const char* msg = gzerror(f, &err);
  // gzerror's text belongs to the gzFile: copied before gzclose frees it.
  const std::string error = msg != nullptr && *msg != '\0' ? msg : "read error";
  gzclose(f);
  if (n < 0 || (err != Z_OK && err != Z_STREAM_END)) {
    return absl::DataLossError(absl::StrCat(path, ": ", error));
  }
  return ParseIdx(bytes, path);
}

}  // namespace

absl::StatusOr<IdxArray> ReadIdxFile(const std::string& path) {
  {
    std::lock_guard<std::mutex> lock(preload_mu);
    auto it = Preloaded().find(path);
    if (it != Preloaded().end()) {
      // Moved, not copied: a forked rank's pages stay shared with the warm process's.
      IdxArray out = std::move(it->second);
      Preloaded().erase(it);
      return out;
    }
  }
  return ReadAndParse(path);
}

absl::Status PreloadIdxFile(const std::string& path) {
  absl::StatusOr<IdxArray> array = ReadAndParse(path);
  if (!array.ok()) return array.status();
  std::lock_guard<std::mutex> lock(preload_mu);
  Preloaded()[path] = *std::move(array);
  return absl::OkStatus();
}

}  // namespace dlaunch::worker
