// SubmittedJobDirectory: what `dlaunch submit` writes is its user's alone, as `dlaunch run`'s
// job directory is, whatever the umask; an existing directory is never reused.
#include "launcher/submit/submitted_job_directory.h"

#include <sys/stat.h>

#include <filesystem>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/testing/test_files.h"

namespace dlaunch {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

int ModeOf(const std::string& path) {
  struct stat st;
  EXPECT_EQ(::lstat(path.c_str(), &st), 0) << path;
  return st.st_mode & 07777;
}

// The umask of a login shell that shares files with its group and the world.
class PermissiveUmask {
 public:
  PermissiveUmask() : old_(::umask(022)) {}
  ~PermissiveUmask() { ::umask(old_); }

 private:
  mode_t old_;
};

TEST(SubmittedJobDirectory, EverythingIsOwnerOnly) {
  PermissiveUmask umask;
  ScratchDir tmp("dlaunch-submit-dir");
  const std::string path = tmp.path() + "/runs/fmnist-20261121-101530-a3f9";
  absl::StatusOr<SubmittedJobDirectory> dir = SubmittedJobDirectory::Create(path);
  ASSERT_TRUE(dir.ok()) << dir.status();
  ASSERT_TRUE(dir->WriteJob("name: fmnist\n", "#!/bin/bash\ntrue\n").ok());
  ASSERT_TRUE(dir->WriteSubmitRecord("{\"job_id\": \"fmnist\"}\n").ok());

  EXPECT_EQ(ModeOf(path), 0700);
  EXPECT_EQ(ModeOf(path + "/logs"), 0700);
  EXPECT_EQ(ModeOf(path + "/job.yaml"), 0600);
  EXPECT_EQ(ModeOf(path + "/submit.json"), 0600);
  EXPECT_EQ(ModeOf(path + "/job.sh"), 0700);  // the scheduler runs it as its owner
  EXPECT_EQ(dir->script_path(), path + "/job.sh");
  EXPECT_EQ(ReadFile(dir->spec_path()), "name: fmnist\n");
}

TEST(SubmittedJobDirectory, RefusesAnExistingDirectoryOrLink) {
  ScratchDir tmp("dlaunch-submit-dir");
  const std::string existing = tmp.path() + "/runs/taken";
  fs::create_directories(existing);
  absl::StatusOr<SubmittedJobDirectory> dir = SubmittedJobDirectory::Create(existing + "/");
  ASSERT_FALSE(dir.ok());
  EXPECT_TRUE(absl::IsAlreadyExists(dir.status())) << dir.status();
  EXPECT_THAT(dir.status().message(), HasSubstr(existing + " already exists"));

  const std::string link = tmp.path() + "/runs/link";
  fs::create_directory_symlink(tmp.path(), link);
  dir = SubmittedJobDirectory::Create(link);
  EXPECT_TRUE(absl::IsAlreadyExists(dir.status())) << dir.status();
  EXPECT_FALSE(fs::exists(tmp.path() + "/logs")) << "wrote through the link";
}

TEST(SubmittedJobDirectory, NamesWhatCouldNotBeMade) {
  ScratchDir tmp("dlaunch-submit-dir");
  WriteFile(tmp.path() + "/runs", "a file where the job root should be\n");
  absl::StatusOr<SubmittedJobDirectory> dir =
      SubmittedJobDirectory::Create(tmp.path() + "/runs/j-1");
  ASSERT_FALSE(dir.ok());
  EXPECT_THAT(dir.status().message(), HasSubstr(tmp.path() + "/runs"));
}

}  // namespace
}  // namespace dlaunch
