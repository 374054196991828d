// The worker's idx dataset reader (MNIST, Fashion-MNIST), from a file that is gzip or plain, as
// dlaunch-worker reads it: what reads holds exactly the bytes its dimensions promise.
#include <sys/mman.h>
#include <unistd.h>

#include <string>

#include "absl/strings/str_cat.h"
#include "tests/fuzz/fuzz_target.h"
#include "worker/idx_reader.h"

namespace {

void CheckArray(const absl::StatusOr<dlaunch::worker::IdxArray>& array) {
  if (!array.ok()) return;
  uint64_t count = 1;
  for (int64_t dim : array->dims) {
    FUZZ_CHECK(dim >= 0, "a negative dimension");
    FUZZ_CHECK(dim == 0 || count <= UINT64_MAX / static_cast<uint64_t>(dim),
               "the dimensions' product overflows");
    count *= static_cast<uint64_t>(dim);
  }
  FUZZ_CHECK(count == array->data.size(),
             absl::StrCat(count, " promised, ", array->data.size(), " held"));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  CheckArray(dlaunch::worker::ParseIdx(bytes, "fuzz"));
  // The file reader, through a memory file so no disk is touched.
  static const int fd = memfd_create("idx-fuzz", 0);
  if (fd < 0 || ftruncate(fd, 0) != 0 || pwrite(fd, data, size, 0) != static_cast<ssize_t>(size)) {
    return 0;
  }
  CheckArray(dlaunch::worker::ReadIdxFile(absl::StrCat("/proc/self/fd/", fd)));
  return 0;
}
