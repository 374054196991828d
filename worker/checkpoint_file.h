// Checkpoint files on disk: framing and atomic replacement, independent of what the payload
// holds (checkpoint_io serialises the LibTorch state into the payload).
//
// A file is the payload followed by a 24-byte trailer: the magic "DLCKPT01", the payload length
// (u64 little-endian) and the CRC-32 of the payload (u64 little-endian). A file cut short, with
// bytes appended, or with a flipped bit fails the check and is reported as DataLoss, so a torn
// write is never loaded. Files are written with common/file_io's WriteFileAtomically (temporary
// name, fsync, rename, directory fsync), so readers see either the old or the new file.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace dlaunch::worker {

inline constexpr size_t kCheckpointTrailerBytes = 24;

// payload + trailer.
std::string FrameCheckpoint(std::string_view payload);

// The payload of a framed file; DataLoss naming `what` when the trailer does not check out.
absl::StatusOr<std::string> UnframeCheckpoint(std::string_view file_bytes,
                                              std::string_view what = "checkpoint");

// <dir>/ckpt-<step, 12 digits>.dlck
std::string CheckpointPath(const std::string& dir, int64_t step);

struct CheckpointEntry {
  int64_t step;
  std::string path;
};

// Checkpoint files in dir, newest (highest step) first; an absent dir is an empty list.
absl::StatusOr<std::vector<CheckpointEntry>> ListCheckpoints(const std::string& dir);

// Removes all but the `keep` newest checkpoints (best effort).
void PruneCheckpoints(const std::string& dir, size_t keep);

}  // namespace dlaunch::worker
