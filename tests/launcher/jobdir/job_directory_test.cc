#include "launcher/jobdir/job_directory.h"

#include <sys/stat.h>

#include <filesystem>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "launcher/jobdir/journal.h"
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

TEST(JobDirectoryTest, TheDirectoryAndItsLogsAreTheOwnersAlone) {
  ScratchDir tmp;
  auto dir = JobDirectory::Create(tmp.path() + "/j");
  ASSERT_TRUE(dir.ok()) << dir.status();
  struct stat st;
  ASSERT_EQ(stat(dir->path().c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  ASSERT_EQ(stat(dir->logs_dir().c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
}

TEST(JobDirectoryTest, ASymlinkIsRefusedAndItsTargetUntouched) {
  ScratchDir tmp;
  std::filesystem::create_directory(tmp.path() + "/elsewhere");
  std::filesystem::create_directory_symlink(tmp.path() + "/elsewhere", tmp.path() + "/link");
  auto dir = JobDirectory::Create(tmp.path() + "/link");
  ASSERT_FALSE(dir.ok());
  EXPECT_THAT(dir.status().message(), HasSubstr("is a symbolic link (to " + tmp.path() + "/elsewhere)"));
  EXPECT_FALSE(std::filesystem::exists(tmp.path() + "/elsewhere/logs"));
}

TEST(JobDirectoryTest, ADirectoryWithAJournalIsRefusedAndKeptAsItWas) {
  ScratchDir tmp;
  std::filesystem::create_directory(tmp.path() + "/j");
  WriteFile(tmp.path() + "/j/events.jsonl", "{\"earlier\": 1}\n");
  auto dir = JobDirectory::Create(tmp.path() + "/j");
  ASSERT_FALSE(dir.ok());
  EXPECT_EQ(dir.status().code(), absl::StatusCode::kAlreadyExists);
  EXPECT_THAT(dir.status().message(), HasSubstr("already holds a job's journal"));
  EXPECT_EQ(test_files::ReadFile(tmp.path() + "/j/events.jsonl"), "{\"earlier\": 1}\n");
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
  ASSERT_TRUE(dir->WriteCredentials("abc", nullptr).ok());
  EXPECT_EQ(ReadFile(dir->token_path()), "abc\n");
  EXPECT_FALSE(std::filesystem::exists(dir->path() + "/control.crt")) << "plain TCP: no certificate";
  struct stat st;
  ASSERT_EQ(stat(dir->token_path().c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
}

TEST(JobDirectoryTest, WithTlsTheCertificateIsBesideTheTokenAndTheKeyIsNowhere) {
  ScratchDir tmp;
  auto dir = JobDirectory::Create(tmp.path() + "/j");
  ASSERT_TRUE(dir.ok());
  auto tls = MakeControlIdentity();
  ASSERT_TRUE(tls.ok()) << tls.status();
  ASSERT_TRUE(dir->WriteCredentials("abc", &*tls).ok());
  EXPECT_EQ(ReadFile(dir->token_path()), "abc\ntls " + tls->fingerprint + "\n");
  EXPECT_EQ(ReadFile(dir->path() + "/control.crt"), tls->cert_pem);
  struct stat st;
  ASSERT_EQ(stat((dir->path() + "/control.crt").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  auto creds = ReadJobCredentials(dir->token_path());
  ASSERT_TRUE(creds.ok()) << creds.status();
  EXPECT_EQ(creds->token, "abc");
  EXPECT_EQ(creds->cert_pem, tls->cert_pem);
  for (const auto& entry : std::filesystem::recursive_directory_iterator(dir->path())) {
    if (!entry.is_regular_file()) continue;
    EXPECT_EQ(ReadFile(entry.path().string()).find("PRIVATE KEY"), std::string::npos) << entry.path();
  }
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
  v1::JobSummary summary;
  summary.set_result("succeeded");
  summary.set_samples(128);
  ASSERT_TRUE(dir->WriteSummary(summary).ok());
  const std::string text = ReadFile(dir->path() + "/summary.json");
  EXPECT_THAT(text, HasSubstr("\"result\":\"succeeded\",\"exit_code\":0,"));
  EXPECT_THAT(text, HasSubstr("\"samples\":\"128\""));
  EXPECT_EQ(text.back(), '\n');
  absl::StatusOr<JobSummaryFile> read = ReadJobSummary(dir->path());
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_EQ(read->summary.result(), "succeeded");
  EXPECT_EQ(read->summary.samples(), 128);
}

TEST(JobDirectoryTest, FailedWritesAreReported) {
  ScratchDir tmp;
  auto dir = JobDirectory::Create(tmp.path() + "/j");
  ASSERT_TRUE(dir.ok());
  std::filesystem::remove_all(dir->path());  // the directory went away under the job
  absl::Status summary = dir->WriteSummary(v1::JobSummary());
  EXPECT_FALSE(summary.ok());
  EXPECT_THAT(summary.message(), HasSubstr(dir->path()));
  EXPECT_FALSE(dir->WriteLauncherInfo({1, "h", "a:1"}).ok());
  EXPECT_FALSE(dir->WriteCredentials("t", nullptr).ok());
}

TEST(JobDirectoryTest, JournalAppendsOneLinePerRecord) {
  ScratchDir tmp;
  auto dir = JobDirectory::Create(tmp.path() + "/j");
  ASSERT_TRUE(dir.ok());
  JobJournal journal;
  ASSERT_TRUE(journal.Open(*dir).ok());
  v1::JobEvent started;
  started.set_time("T");
  started.mutable_job_started()->set_job_id("j1");
  v1::JobEvent lost;
  lost.set_round(2);
  lost.mutable_node_lost()->set_node_id(3);
  ASSERT_TRUE(journal.AppendEvent(started).ok());
  ASSERT_TRUE(journal.AppendEvent(lost).ok());
  v1::MetricLine metric;
  metric.set_node_id(1);
  metric.mutable_report()->set_rank(4);
  ASSERT_TRUE(journal.AppendMetric(metric).ok());
  journal.FlushMetrics();  // metric lines are written by the journal's writer thread
  absl::StatusOr<EventJournal> events = ReadEventJournal(dir->path());
  ASSERT_TRUE(events.ok()) << events.status();
  ASSERT_EQ(events->events.size(), 2u);
  EXPECT_EQ(events->events[0].job_started().job_id(), "j1");
  EXPECT_EQ(events->events[1].round(), 2);
  EXPECT_EQ(events->events[1].node_lost().node_id(), 3);
  absl::StatusOr<MetricJournal> metrics = ReadMetricJournal(dir->path());
  ASSERT_TRUE(metrics.ok()) << metrics.status();
  ASSERT_EQ(metrics->metrics.size(), 1u);
  EXPECT_EQ(metrics->metrics[0].report().rank(), 4);
}

TEST(JobDirectoryTest, ManyMetricLinesAreWrittenInOrderAndClosingWritesTheRest) {
  ScratchDir tmp;
  auto dir = JobDirectory::Create(tmp.path() + "/j");
  ASSERT_TRUE(dir.ok());
  {
    JobJournal journal;
    ASSERT_TRUE(journal.Open(*dir).ok());
    for (int i = 0; i < 20000; ++i) {
      v1::MetricLine metric;
      metric.set_node_id(i % 7);
      metric.mutable_report()->set_rank(i);
      ASSERT_TRUE(journal.AppendMetric(std::move(metric)).ok());
    }
    journal.FlushMetrics();
    EXPECT_EQ(journal.dropped_metrics(), 0);
    absl::StatusOr<MetricJournal> metrics = ReadMetricJournal(dir->path());
    ASSERT_TRUE(metrics.ok());
    ASSERT_EQ(metrics->metrics.size(), 20000u);
    for (int i = 0; i < 20000; ++i) ASSERT_EQ(metrics->metrics[i].report().rank(), i);
    v1::MetricLine last;
    last.mutable_report()->set_rank(-5);
    ASSERT_TRUE(journal.AppendMetric(last).ok());
  }  // closing the journal writes what is queued
  absl::StatusOr<MetricJournal> metrics = ReadMetricJournal(dir->path());
  ASSERT_TRUE(metrics.ok());
  ASSERT_EQ(metrics->metrics.size(), 20001u);
  EXPECT_EQ(metrics->metrics.back().report().rank(), -5);
}

}  // namespace
}  // namespace dlaunch
