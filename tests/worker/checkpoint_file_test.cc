#include "worker/checkpoint_file.h"

#include <dirent.h>
#include <stdlib.h>
#include <unistd.h>

#include <fstream>

#include "common/file_io.h"
#include "gtest/gtest.h"

namespace dlaunch::worker {
namespace {

std::string TempDir() {
  char tmpl[] = "/tmp/ckpt_test_XXXXXX";
  return mkdtemp(tmpl);
}

TEST(CheckpointFileTest, FrameRoundTrips) {
  const std::string payload("state\0with\0zeros", 16);
  absl::StatusOr<std::string> back = UnframeCheckpoint(FrameCheckpoint(payload));
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*back, payload);
  EXPECT_TRUE(UnframeCheckpoint(FrameCheckpoint("")).ok());
}

TEST(CheckpointFileTest, EveryTruncationIsDataLoss) {
  const std::string framed = FrameCheckpoint(std::string(1000, 'x') + "tail");
  for (size_t len = 0; len < framed.size(); ++len) {
    absl::StatusOr<std::string> r = UnframeCheckpoint(framed.substr(0, len), "f");
    ASSERT_FALSE(r.ok()) << "length " << len;
    EXPECT_TRUE(absl::IsDataLoss(r.status())) << r.status();
  }
}

TEST(CheckpointFileTest, FlippedBitOrAppendedBytesAreDataLoss) {
  std::string framed = FrameCheckpoint("some checkpoint payload");
  std::string flipped = framed;
  flipped[3] ^= 0x10;
  EXPECT_TRUE(absl::IsDataLoss(UnframeCheckpoint(flipped).status()));
  EXPECT_TRUE(absl::IsDataLoss(UnframeCheckpoint(framed + "junk").status()));
  // A torn write whose tail happens to be an older complete file's trailer still fails: the
  // length no longer matches.
  const std::string old = FrameCheckpoint("old");
  EXPECT_TRUE(absl::IsDataLoss(UnframeCheckpoint(framed.substr(0, 10) + old.substr(3)).status()));
}

int EntryCount(const std::string& dir) {
  int n = 0;
  DIR* d = opendir(dir.c_str());
  while (dirent* e = d ? readdir(d) : nullptr) {
    if (e->d_name[0] != '.') ++n;
  }
  if (d) closedir(d);
  return n;
}

TEST(CheckpointFileTest, AtomicWriteListAndPrune) {
  const std::string dir = TempDir();
  for (int64_t step : {5, 40, 12}) {
    ASSERT_TRUE(WriteFileAtomically(CheckpointPath(dir, step), FrameCheckpoint("s")).ok());
  }
  std::ofstream(dir + "/unrelated.txt") << "x";
  absl::StatusOr<std::vector<CheckpointEntry>> list = ListCheckpoints(dir);
  ASSERT_TRUE(list.ok());
  ASSERT_EQ(list->size(), 3u);
  EXPECT_EQ((*list)[0].step, 40);
  EXPECT_EQ((*list)[1].step, 12);
  EXPECT_EQ((*list)[2].step, 5);
  // No temporary file is left behind: the directory holds the three checkpoints and the other file.
  EXPECT_EQ(EntryCount(dir), 4);
  PruneCheckpoints(dir, 2);
  list = ListCheckpoints(dir);
  ASSERT_EQ(list->size(), 2u);
  EXPECT_EQ((*list)[1].step, 12);
  absl::StatusOr<std::string> bytes = ReadFile((*list)[0].path);
  ASSERT_TRUE(bytes.ok());
  EXPECT_EQ(*UnframeCheckpoint(*bytes), "s");
}

TEST(CheckpointFileTest, AStepBeyondInt64IsNotACheckpoint) {
  // Found by fuzzing: the listing threw std::out_of_range and took the worker down.
  const std::string dir = TempDir();
  ASSERT_TRUE(WriteFileAtomically(CheckpointPath(dir, 7), FrameCheckpoint("s")).ok());
  std::ofstream(dir + "/ckpt-99999999999999999999.dlck") << "x";
  absl::StatusOr<std::vector<CheckpointEntry>> list = ListCheckpoints(dir);
  ASSERT_TRUE(list.ok()) << list.status();
  ASSERT_EQ(list->size(), 1u);
  EXPECT_EQ((*list)[0].step, 7);
}

TEST(CheckpointFileTest, MissingDirectoryListsEmpty) {
  absl::StatusOr<std::vector<CheckpointEntry>> list = ListCheckpoints("/nonexistent/dlaunch/ckpt");
  ASSERT_TRUE(list.ok());
  EXPECT_TRUE(list->empty());
}

}  // namespace
}  // namespace dlaunch::worker
