#include "worker/checkpoint_file.h"

#include <dirent.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/file_io.h"

namespace dlaunch::worker {
namespace {

constexpr char kMagic[8] = {'D', 'L', 'C', 'K', 'P', 'T', '0', '1'};
constexpr std::string_view kPrefix = "ckpt-";
constexpr std::string_view kSuffix = ".dlck";

void AppendU64(std::string& out, uint64_t v) {
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

uint64_t ReadU64(std::string_view bytes) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(bytes[i]);
  return v;
}

uint64_t Crc32(std::string_view data) {
  uLong crc = crc32(0L, Z_NULL, 0);
  // zlib takes uInt lengths; feed large payloads in chunks.
  size_t off = 0;
  while (off < data.size()) {
    const size_t n = std::min<size_t>(data.size() - off, 1u << 30);
    crc = crc32(crc, reinterpret_cast<const Bytef*>(data.data() + off), static_cast<uInt>(n));
    off += n;
  }
  return crc;
}

}  // namespace

std::string FrameCheckpoint(std::string_view payload) {
  std::string out;
  out.reserve(payload.size() + kCheckpointTrailerBytes);
  out.append(payload);
  out.append(kMagic, sizeof(kMagic));
  AppendU64(out, payload.size());
  AppendU64(out, Crc32(payload));
  return out;
}

absl::StatusOr<std::string> UnframeCheckpoint(std::string_view file_bytes, std::string_view what) {
  if (file_bytes.size() < kCheckpointTrailerBytes) {
    return absl::DataLossError(absl::StrCat(std::string(what), ": ", file_bytes.size(),
                                            " bytes is shorter than the checkpoint trailer"));
  }
  const std::string_view trailer = file_bytes.substr(file_bytes.size() - kCheckpointTrailerBytes);
  if (trailer.substr(0, 8) != std::string_view(kMagic, sizeof(kMagic))) {
    return absl::DataLossError(absl::StrCat(std::string(what), ": no checkpoint trailer (torn or foreign file)"));
  }
  const uint64_t length = ReadU64(trailer.substr(8, 8));
  const uint64_t crc = ReadU64(trailer.substr(16, 8));
  if (length != file_bytes.size() - kCheckpointTrailerBytes) {
    return absl::DataLossError(absl::StrCat(std::string(what), ": trailer says ", length, " payload bytes, file has ",
                                            file_bytes.size() - kCheckpointTrailerBytes));
  }
  const std::string_view payload = file_bytes.substr(0, length);
  if (Crc32(payload) != crc) {
    return absl::DataLossError(absl::StrCat(std::string(what), ": payload checksum mismatch"));
  }
  return std::string(payload);
}

std::string CheckpointPath(const std::string& dir, int64_t step) {
  return absl::StrFormat("%s/%s%012d%s", dir, kPrefix, step, kSuffix);
}

absl::StatusOr<std::vector<CheckpointEntry>> ListCheckpoints(const std::string& dir) {
  std::vector<CheckpointEntry> out;
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) {
    if (errno == ENOENT) return out;
    return ErrnoStatus(errno, "cannot list checkpoint directory", dir);
  }
  while (dirent* e = ::readdir(d)) {
    const std::string_view name(e->d_name);
    if (name.size() <= kPrefix.size() + kSuffix.size() || name.substr(0, kPrefix.size()) != kPrefix ||
        name.substr(name.size() - kSuffix.size()) != kSuffix) {
      continue;
    }
    const std::string_view digits =
        name.substr(kPrefix.size(), name.size() - kPrefix.size() - kSuffix.size());
    // A step too large for int64 is no checkpoint of ours (std::stoll threw on it).
    int64_t step = 0;
    if (!std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; }) ||
        !absl::SimpleAtoi(absl::string_view(digits.data(), digits.size()), &step)) {
      continue;
    }
    out.push_back({step, absl::StrCat(dir, "/", std::string(name))});
  }
  ::closedir(d);
  std::sort(out.begin(), out.end(),
            [](const CheckpointEntry& a, const CheckpointEntry& b) { return a.step > b.step; });
  return out;
}

void PruneCheckpoints(const std::string& dir, size_t keep) {
  absl::StatusOr<std::vector<CheckpointEntry>> all = ListCheckpoints(dir);
  if (!all.ok()) return;
  for (size_t i = keep; i < all->size(); ++i) ::unlink((*all)[i].path.c_str());
}

}  // namespace dlaunch::worker
