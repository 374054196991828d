#include "worker/idx_reader.h"

#include <stdlib.h>
#include <unistd.h>

#include "absl/strings/match.h"
#include "gtest/gtest.h"

namespace dlaunch::worker {
namespace {

TEST(IdxReaderTest, ParsesHeaderAndData) {
  const std::string bytes("\0\0\x08\x02\0\0\0\x02\0\0\0\x03" "abcdef", 18);
  absl::StatusOr<IdxArray> a = ParseIdx(bytes, "t");
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->dims, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(a->data[5], 'f');
}

TEST(IdxReaderTest, RejectsBadMagicTypeAndLength) {
  EXPECT_FALSE(ParseIdx(std::string("\1\0\x08\x01\0\0\0\x01z", 9), "t").ok());
  EXPECT_FALSE(ParseIdx(std::string("\0\0\x0d\x01\0\0\0\x01z", 9), "t").ok());
  absl::StatusOr<IdxArray> short_data = ParseIdx(std::string("\0\0\x08\x01\0\0\0\x05zz", 10), "name.idx");
  ASSERT_FALSE(short_data.ok());
  EXPECT_NE(short_data.status().message().find("name.idx"), absl::string_view::npos);
}

TEST(IdxReaderTest, DimensionsWhoseProductWrapsAreRefused) {
  // 65536^4 wrapped to 0, and a file of no data read as a 4-d array of 2^64 bytes.
  std::string bytes("\0\0\x08\x04", 4);
  for (int d = 0; d < 4; ++d) bytes += std::string("\0\x01\0\0", 4);
  absl::StatusOr<IdxArray> a = ParseIdx(bytes, "wrapped.idx");
  ASSERT_FALSE(a.ok());
  EXPECT_EQ(a.status().message(), "wrapped.idx: idx dimensions multiply past 2^64");
}

TEST(IdxReaderTest, ACorruptGzipFileIsDataLossWithZlibsReason) {
  // Found by fuzzing (AddressSanitizer): the reason was read after gzclose had freed it.
  char path[] = "/tmp/dlaunch-idx-XXXXXX";
  const int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  // A gzip header, then a deflate block of a reserved type: "invalid block type".
  const std::string bytes("\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x03\xff\xff\xff\xff", 14);
  ASSERT_EQ(write(fd, bytes.data(), bytes.size()), static_cast<ssize_t>(bytes.size()));
  close(fd);
  absl::StatusOr<IdxArray> a = ReadIdxFile(path);
  unlink(path);
  ASSERT_FALSE(a.ok());
  EXPECT_EQ(a.status().code(), absl::StatusCode::kDataLoss);
  // zlib's own text names the file too.
  EXPECT_TRUE(absl::EndsWith(a.status().message(), ": invalid block type")) << a.status();
}

TEST(IdxReaderTest, ReadsRealFashionMnistLabels) {
  const std::string path = "/usr/share/datasets/fashion-mnist/t10k-labels-idx1-ubyte.gz";
  absl::StatusOr<IdxArray> a = ReadIdxFile(path);
  if (absl::IsNotFound(a.status())) GTEST_SKIP() << "dataset-fashion-mnist is not installed";
  ASSERT_TRUE(a.ok()) << a.status();
  ASSERT_EQ(a->dims, (std::vector<int64_t>{10000}));
  std::vector<int> per_class(10);
  for (uint8_t l : a->data) {
    ASSERT_LT(l, 10);
    ++per_class[l];
  }
  for (int c : per_class) EXPECT_EQ(c, 1000);  // the test split is balanced
}

TEST(IdxReaderTest, MissingFileIsNotFound) {
  EXPECT_TRUE(absl::IsNotFound(ReadIdxFile("/nonexistent/x.gz").status()));
}

}  // namespace
}  // namespace dlaunch::worker
