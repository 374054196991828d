// The worker's checkpoint reader: the framing check of a checkpoint file's bytes, and the
// listing of a checkpoint directory, whose file names are read as steps. The input's first
// line is a file name placed in the directory; the whole input is the file's bytes.
#include <stdlib.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <string>

#include "tests/fuzz/fuzz_target.h"
#include "worker/checkpoint_file.h"

namespace {

// The scratch directory's path; a plain array, so it outlives the atexit handler removing it.
char g_scratch[4096];

const std::string& ScratchDir() {
  static const std::string dir = [] {
    std::snprintf(g_scratch, sizeof(g_scratch), "%s/dlaunch-fuzz-ckpt-XXXXXX",
                  getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    if (mkdtemp(g_scratch) == nullptr) return std::string();
    // Empty between inputs; removed when the process exits normally.
    std::atexit([] { ::rmdir(g_scratch); });
    return std::string(g_scratch);
  }();
  return dir;
}

void CheckListing(std::string_view bytes) {
  const std::string name(bytes.substr(0, bytes.find('\n')));
  if (ScratchDir().empty() || name.empty() || name.size() > 255 || name == "." || name == ".." ||
      name.find_first_of(std::string("/\0", 2)) != std::string::npos) {
    return;
  }
  const std::string path = ScratchDir() + "/" + name;
  std::ofstream(path, std::ios::binary) << bytes;
  absl::StatusOr<std::vector<dlaunch::worker::CheckpointEntry>> listed =
      dlaunch::worker::ListCheckpoints(ScratchDir());
  ::unlink(path.c_str());
  FUZZ_CHECK(listed.ok(), listed.status().ToString());
  for (const dlaunch::worker::CheckpointEntry& entry : *listed) {
    FUZZ_CHECK(entry.step >= 0 && entry.path == path, entry.path);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  absl::StatusOr<std::string> payload = dlaunch::worker::UnframeCheckpoint(bytes, "fuzz.dlck");
  if (payload.ok()) {
    FUZZ_CHECK(dlaunch::worker::FrameCheckpoint(*payload) == bytes, "framed again differs");
  } else {
    FUZZ_CHECK(payload.status().code() == absl::StatusCode::kDataLoss,
               payload.status().ToString());
  }
  absl::StatusOr<std::string> framed =
      dlaunch::worker::UnframeCheckpoint(dlaunch::worker::FrameCheckpoint(bytes));
  FUZZ_CHECK(framed.ok() && *framed == bytes, "a framed payload does not unframe to itself");
  CheckListing(bytes);
  return 0;
}
