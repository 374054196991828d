#include "common/file_io.h"

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "gtest/gtest.h"

namespace dlaunch {
namespace {

class FileIoTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/dlaunch-file-io-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string dir_;
};

TEST_F(FileIoTest, WritesAtomicallyWithTheModeAskedAndReadsBack) {
  const std::string path = dir_ + "/secret";
  ASSERT_TRUE(WriteFileAtomically(path, "token\n", {.mode = 0600}).ok());
  auto text = ReadFile(path);
  ASSERT_TRUE(text.ok()) << text.status();
  EXPECT_EQ(*text, "token\n");
  struct stat st;
  ASSERT_EQ(stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  // Replacing keeps no temporary file behind.
  ASSERT_TRUE(WriteFileAtomically(path, "other", {.mode = 0600, .fsync = false}).ok());
  EXPECT_EQ(*ReadFile(path), "other");
  EXPECT_NE(access((path + ".tmp." + std::to_string(getpid())).c_str(), F_OK), 0);
}

TEST_F(FileIoTest, ErrorsNameThePathAndCarryACodeFromErrno) {
  auto missing = ReadFile(dir_ + "/nope");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
  EXPECT_NE(missing.status().message().find(dir_ + "/nope"), std::string::npos);

  auto st = WriteFileAtomically(dir_ + "/no/such/dir/file", "x");
  EXPECT_EQ(st.code(), absl::StatusCode::kNotFound) << st;
  EXPECT_EQ(ErrnoToStatusCode(ENOSPC), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(ErrnoToStatusCode(EACCES), absl::StatusCode::kPermissionDenied);
}

}  // namespace
}  // namespace dlaunch
