#include "launcher/jobdir/job_directory.h"

#include <sys/stat.h>

#include <filesystem>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/testing/test_files.h"

namespace dlaunch {
namespace {

using ::testing::HasSubstr;

TEST(JobDirectoryTest, CreateMakesTheLogsFolderAndAnAbsolutePath) {
  ScratchDir tmp;
  auto dir = JobDirectory::Create(tmp.path() + "/a/../job-1");
  ASSERT_TRUE(dir.ok()) << dir.status();
  EXPECT_EQ(dir->path(), tmp.path() + "/job-1");
  struct stat st;
  EXPECT_EQ(stat(dir->logs_dir().c_str(), &st), 0);
  EXPECT_EQ(dir->token_path(), tmp.path() + "/job-1/token");
}

TEST(JobDirectoryTest, CreateFailureNamesThePath) {
  ScratchDir tmp;
  WriteFile(tmp.path() + "/file", "x");
  auto dir = JobDirectory::Create(tmp.path() + "/file/job");
  ASSERT_FALSE(dir.ok());
  EXPECT_THAT(dir.status().message(), HasSubstr("cannot create job directory " + tmp.path() + "/file/job"));
}

TEST(JobDirectoryTest, TokenIsReadableByItsOwnerOnly) {
  ScratchDir tmp;
  auto dir = JobDirectory::Create(tmp.path() + "/j");
  ASSERT_TRUE(dir.ok());
  ASSERT_TRUE(dir->WriteToken("abc").ok());
  EXPECT_EQ(ReadFile(dir->token_path()), "abc\n");
  struct stat st;
  ASSERT_EQ(stat(dir->token_path().c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
}

TEST(JobDirectoryTest, JobYamlFromSubmitIsKept) {
  ScratchDir tmp;
  auto dir = JobDirectory::Create(tmp.path() + "/j");
  ASSERT_TRUE(dir.ok());
  ASSERT_TRUE(dir->WriteJobYamlIfAbsent("first\n").ok());
  ASSERT_TRUE(dir->WriteJobYamlIfAbsent("second\n").ok());
  EXPECT_EQ(ReadFile(dir->path() + "/job.yaml"), "first\n");
}

TEST(JobDirectoryTest, WritesHostfileLauncherInfoAndSummary) {
  ScratchDir tmp;
  auto dir = JobDirectory::Create(tmp.path() + "/j");
  ASSERT_TRUE(dir.ok());
  ASSERT_TRUE(dir->WriteHostfile({"a", "b"}).ok());
  EXPECT_EQ(ReadFile(dir->hostfile_path()), "a\nb\n");
  ASSERT_TRUE(dir->WriteLauncherInfo({42, "h", "1.2.3.4:5"}).ok());
  auto info = ParseLauncherInfo(ReadFile(dir->path() + "/launcher.json"));
  ASSERT_TRUE(info.ok()) << info.status();
  EXPECT_EQ(info->pid, 42);
  EXPECT_EQ(info->address, "1.2.3.4:5");
  ASSERT_TRUE(dir->WriteSummary("{\"result\":\"succeeded\"}").ok());
  EXPECT_EQ(ReadFile(dir->path() + "/summary.json"), "{\"result\":\"succeeded\"}\n");
}

TEST(JobDirectoryTest, FailedWritesAreReported) {
  ScratchDir tmp;
  auto dir = JobDirectory::Create(tmp.path() + "/j");
  ASSERT_TRUE(dir.ok());
  std::filesystem::remove_all(dir->path());  // the directory went away under the job
  absl::Status summary = dir->WriteSummary("{}");
  EXPECT_FALSE(summary.ok());
  EXPECT_THAT(summary.message(), HasSubstr(dir->path()));
  EXPECT_FALSE(dir->WriteLauncherInfo({1, "h", "a:1"}).ok());
  EXPECT_FALSE(dir->WriteToken("t").ok());
}

TEST(JobDirectoryTest, EventLinePutsTheTimeFirst) {
  EXPECT_EQ(EventLine("T", "{\"event\":\"x\",\"n\":1}"), "{\"time\":\"T\",\"event\":\"x\",\"n\":1}");
  EXPECT_EQ(EventLine("T", "{}"), "{\"time\":\"T\"}");
}

TEST(JobDirectoryTest, JournalAppendsLines) {
  ScratchDir tmp;
  auto dir = JobDirectory::Create(tmp.path() + "/j");
  ASSERT_TRUE(dir.ok());
  JobJournal journal;
  ASSERT_TRUE(journal.Open(*dir).ok());
  ASSERT_TRUE(journal.AppendEvent("{\"a\":1}").ok());
  ASSERT_TRUE(journal.AppendEvent("{\"b\":2}").ok());
  ASSERT_TRUE(journal.AppendMetric("{\"m\":3}").ok());
  EXPECT_EQ(ReadFile(dir->path() + "/events.jsonl"), "{\"a\":1}\n{\"b\":2}\n");
  EXPECT_EQ(ReadFile(dir->path() + "/metrics.jsonl"), "{\"m\":3}\n");
}

}  // namespace
}  // namespace dlaunch
