// The text of `dlaunch status` and the end-of-job decision of `logs --follow`, from what a job
// directory holds, without files or processes.
#include "launcher/cli/job_view.h"

#include <gtest/gtest.h>

#include "absl/strings/str_cat.h"

namespace dlaunch {
namespace {

// A typed event `name` with the fields of JSON object `body`, as the journal reads it.
v1::JobEvent Event(const std::string& time, const std::string& name,
                   const std::string& body = "{}") {
  absl::StatusOr<EventJournal> j = ParseEventJournal(
      absl::StrCat("{\"time\":\"", time, "\",\"round\":0,\"", name, "\":", body, "}"));
  EXPECT_TRUE(j.ok() && j->events.size() == 1) << name << " " << body;
  return j.ok() && !j->events.empty() ? j->events[0] : v1::JobEvent();
}

JobFiles RunningJob() {
  JobFiles files;
  files.events_present = true;
  files.events = {Event("1.5", "job_started", R"({"nodes":2})"),
                  Event("2.0", "node_joined", R"({"host":"n0"})"),
                  Event("2.1", "node_joined", R"({"host":"n1","slots":1,"joined":2})"),
                  Event("9.0", "worker_failed", R"({"exit_code":1,"rank":3,"node_id":1})")};
  return files;
}

SubmitRecord Record() {
  SubmitRecord rec;
  rec.job_id = "fmnist-20261121-101530-a3f9";
  rec.scheduler = "pbs";
  rec.scheduler_job_id = "901.pbs";
  rec.site = "polaris";
  rec.submit_time = "2026-11-21T10:15:30Z";
  rec.cwd = "/home/u/proj";
  return rec;
}

TEST(LauncherViewTest, FromEventsAndSummary) {
  EXPECT_EQ(LauncherView(JobFiles{}), "not started");
  JobFiles empty;
  empty.events_present = true;
  EXPECT_EQ(LauncherView(empty), "started, no events yet");
  JobFiles files = RunningJob();
  EXPECT_EQ(LauncherView(files), "running: 2 node(s) joined, 1 worker failure(s)");
  files.events.push_back(Event("9.1", "node_lost"));
  EXPECT_EQ(LauncherView(files), "running: 2 node(s) joined, 1 worker failure(s), 1 node(s) lost");
  files.events.push_back(Event("9.9", "job_finished"));
  EXPECT_EQ(LauncherView(files), "finished");
  files.summary = std::map<std::string, std::string>{{"result", "failed"}, {"exit_code", "1"}};
  EXPECT_EQ(LauncherView(files), "failed (exit 1)");
  files.summary = std::map<std::string, std::string>{{"status", "interrupted"}};
  EXPECT_EQ(LauncherView(files), "interrupted");
}

TEST(JobEndedTest, SummaryOrAFinalJobFinishedEvent) {
  JobFiles files = RunningJob();
  EXPECT_FALSE(JobEnded(files));
  EXPECT_FALSE(JobEnded(JobFiles{}));
  files.events.push_back(Event("9.9", "job_finished", R"({"exit_code":1})"));
  EXPECT_TRUE(JobEnded(files));
  JobFiles summarised = RunningJob();
  summarised.summary = std::map<std::string, std::string>{{"result", "succeeded"}};
  EXPECT_TRUE(JobEnded(summarised));
}

TEST(FormatJobStatusTest, SubmittedJobWithSchedulerAnswerEventsAndSummary) {
  JobFiles files = RunningJob();
  files.summary = std::map<std::string, std::string>{{"result", "failed"}, {"exit_code", "1"}};
  SchedulerAnswer answer = SchedulerJobStatus{"finished", "F", "1"};
  EXPECT_EQ(FormatJobStatus("/runs/fmnist-20261121-101530-a3f9", Record(), answer, files, 2),
            "job        fmnist-20261121-101530-a3f9\n"
            "directory  /runs/fmnist-20261121-101530-a3f9\n"
            "site       polaris (pbs)\n"
            "submitted  2026-11-21T10:15:30Z from /home/u/proj\n"
            "scheduler  job 901.pbs: finished (F), exit status 1\n"
            "dlaunch    failed (exit 1)\n"
            "events:\n"
            "  2.1  node_joined round=0 host=n1 slots=1 joined=2\n"
            "  9.0  worker_failed round=0 rank=3 node_id=1 node_rank=0 exit_code=1 signal=0\n"
            "summary:\n"
            "  exit_code: 1\n"
            "  result: failed\n");
}

TEST(FormatJobStatusTest, SaysWhenTheJournalIsOfAnotherSchema) {
  JobFiles files = RunningJob();
  files.schema_version = 1;
  EXPECT_NE(FormatJobStatus("j", absl::NotFoundError("x"), std::nullopt, files, 1)
                .find("journal    schema version 1 (untyped, from an earlier dlaunch), read as "
                      "version 2\n"),
            std::string::npos);
  JobFiles refused;
  refused.events_present = true;
  refused.events_error = "j/events.jsonl: journal schema version 3 is newer than this dlaunch reads";
  EXPECT_EQ(FormatJobStatus("j", absl::NotFoundError("x"), std::nullopt, refused, 1),
            "job        j\ndirectory  j\ndlaunch    started, no events yet\n"
            "journal    j/events.jsonl: journal schema version 3 is newer than this dlaunch reads\n");
}

TEST(FormatJobStatusTest, SchedulerLineForEachCase) {
  const JobFiles none;
  SubmitRecord rec = Record();
  std::string text = FormatJobStatus("d/j", rec, absl::UnavailableError("qstat: timeout"), none, 10);
  EXPECT_NE(text.find("scheduler  job 901.pbs: cannot ask (qstat: timeout)\n"), std::string::npos)
      << text;
  EXPECT_NE(text.find("job        j\n"), std::string::npos) << text;
  rec.scheduler_job_id.clear();
  text = FormatJobStatus("d/j", rec, std::nullopt, none, 10);
  EXPECT_NE(text.find("scheduler  submission failed\n"), std::string::npos) << text;
  rec.dry_run = true;
  text = FormatJobStatus("d/j", rec, std::nullopt, none, 10);
  EXPECT_NE(text.find("scheduler  not submitted (dry run)\n"), std::string::npos) << text;
  // No submit.json (an interactive run): only dlaunch's own lines.
  EXPECT_EQ(FormatJobStatus("j", absl::NotFoundError("no submit.json"), std::nullopt, none, 10),
            "job        j\ndirectory  j\ndlaunch    not started\n");
}

TEST(FormatJobListRowTest, RecordOrDashes) {
  SubmitRecord rec = Record();
  EXPECT_EQ(FormatJobListRow("j1", rec, JobFiles{}),
            "j1\tpolaris\t901.pbs\t2026-11-21T10:15:30Z\tnot started\n");
  rec.scheduler_job_id.clear();
  rec.dry_run = true;
  EXPECT_EQ(FormatJobListRow("j1", rec, JobFiles{}),
            "j1\tpolaris\t(dry run)\t2026-11-21T10:15:30Z\tnot started\n");
  EXPECT_EQ(FormatJobListRow("j2", absl::NotFoundError("x"), RunningJob()),
            "j2\t-\t-\t-\trunning: 2 node(s) joined, 1 worker failure(s)\n");
}

}  // namespace
}  // namespace dlaunch
