// The text of `dlaunch status` and the end-of-job decision of `logs --follow`, from what a job
// directory holds, without files or processes.
#include "launcher/cli/job_view.h"

#include <gtest/gtest.h>

#include "absl/strings/str_cat.h"
#include "launcher/trace/goodput_view.h"

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

// summary.json's text as the journal's reader reads it.
v1::JobSummary Summary(const std::string& json) {
  absl::StatusOr<JobSummaryFile> read = ParseJobSummary(json);
  EXPECT_TRUE(read.ok()) << read.status() << " " << json;
  return read.ok() ? read->summary : v1::JobSummary();
}

JobFiles RunningJob() {
  JobFiles files;
  files.events_present = true;
  files.events = {Event("1.5", "job_started", R"({"nodes":2})"),
                  Event("2.0", "node_joined", R"({"host":"n0"})"),
                  Event("2.1", "node_joined", R"({"host":"n1","slots":1,"joined":2,"expected":2})"),
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
  files.summary = Summary(R"({"result":"failed","exit_code":1})");
  EXPECT_EQ(LauncherView(files), "failed (exit 1)");
  files.summary = Summary(R"({"result":"interrupted","exit_code":130})");
  EXPECT_EQ(LauncherView(files), "interrupted (exit 130)");
}

TEST(JobEndedTest, SummaryOrAFinalJobFinishedEvent) {
  JobFiles files = RunningJob();
  EXPECT_FALSE(JobEnded(files));
  EXPECT_FALSE(JobEnded(JobFiles{}));
  files.events.push_back(Event("9.9", "job_finished", R"({"exit_code":1})"));
  EXPECT_TRUE(JobEnded(files));
  JobFiles summarised = RunningJob();
  summarised.summary = Summary(R"({"result":"succeeded"})");
  EXPECT_TRUE(JobEnded(summarised));
}

TEST(FormatJobStatusTest, SubmittedJobWithSchedulerAnswerEventsAndSummary) {
  JobFiles files = RunningJob();
  files.summary = Summary(R"({"result":"failed","exit_code":1})");
  SchedulerAnswer answer = SchedulerJobStatus{"finished", "F", "1"};
  EXPECT_EQ(FormatJobStatus("/runs/fmnist-20261121-101530-a3f9", Record(), answer, files, 2),
            "job        fmnist-20261121-101530-a3f9\n"
            "directory  /runs/fmnist-20261121-101530-a3f9\n"
            "site       polaris (pbs)\n"
            "submitted  2026-11-21T10:15:30Z from /home/u/proj\n"
            "scheduler  job 901.pbs: finished (F), exit status 1\n"
            "dlaunch    failed (exit 1)\n"
            "started    1.5\n"
            "nodes      2 asked for\n"
            "events:\n"
            "  2.1  node_joined round=0 host=n1 slots=1 joined=2 expected=2\n"
            "  9.0  worker_failed round=0 rank=3 node_id=1 node_rank=0 exit_code=1 signal=0\n"
            "summary:\n"
            "  result: failed (exit 1)\n"
            "  goodput: not in summary.json; `dlaunch trace JOB` computes it\n"
            "files:\n"
            "  logs     /runs/fmnist-20261121-101530-a3f9/logs\n"
            "  events   /runs/fmnist-20261121-101530-a3f9/events.jsonl\n"
            "  summary  /runs/fmnist-20261121-101530-a3f9/summary.json\n");
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
            "journal    j/events.jsonl: journal schema version 3 is newer than this dlaunch reads\n"
            "files:\n  logs     j/logs\n  events   j/events.jsonl\n");
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
            "job        j\ndirectory  j\ndlaunch    not started\nfiles:\n  logs     j/logs\n");
}

TEST(FormatJobListRowTest, StartTimeStateAndWhere) {
  SubmitRecord rec = Record();
  EXPECT_EQ(FormatJobListRow("j1", "runs/j1", "2026-11-21T10:15:30Z", rec, JobFiles{}),
            "j1\t2026-11-21 10:15:30Z\tnot started\tpolaris\t901.pbs\truns/j1\n");
  rec.scheduler_job_id.clear();
  rec.dry_run = true;
  EXPECT_EQ(FormatJobListRow("j1", "runs/j1", "2026-11-21T10:15:30Z", rec, JobFiles{}),
            "j1\t2026-11-21 10:15:30Z\tnot started\tpolaris\t(dry run)\truns/j1\n");
  EXPECT_EQ(FormatJobListRow("j2", "/p/runs/j2", "", absl::NotFoundError("x"), RunningJob()),
            "j2\t-\trunning: 2 node(s) joined, 1 worker failure(s)\t-\t-\t/p/runs/j2\n");
}

TEST(JobStartTimeTest, JobStartedElseFirstEventElseSubmission) {
  JobFiles files;
  EXPECT_EQ(JobStartTime(absl::NotFoundError("x"), files), "");
  EXPECT_EQ(JobStartTime(Record(), files), "2026-11-21T10:15:30Z");
  files.events = {Event("2026-11-21T10:16:01.250Z", "journal_opened"),
                  Event("2026-11-21T10:16:02.500Z", "job_started", R"({"nodes":2})")};
  EXPECT_EQ(JobStartTime(Record(), files), "2026-11-21T10:16:02.500Z");
  files.events.pop_back();
  EXPECT_EQ(JobStartTime(Record(), files), "2026-11-21T10:16:01.250Z");
  EXPECT_EQ(ShortTime("2026-11-21T10:16:01.250Z"), "2026-11-21 10:16:01Z");
  EXPECT_EQ(ShortTime(""), "-");
}

TEST(IsDoctorRunTest, ByItsKindFileOrAnOldDoctorsIdWithoutAJournal) {
  JobFiles doctor;
  doctor.kind = "doctor";
  EXPECT_TRUE(IsDoctorRun("anything", absl::NotFoundError("x"), doctor));
  JobFiles none;
  EXPECT_TRUE(IsDoctorRun("train-doctor-20261121-101530-a3f9", absl::NotFoundError("x"), none));
  EXPECT_FALSE(IsDoctorRun("train-20261121-101530-a3f9", absl::NotFoundError("x"), none));
  // A training job someone named "...-doctor" has a journal.
  JobFiles ran = RunningJob();
  ran.events_present = true;
  EXPECT_FALSE(IsDoctorRun("train-doctor-20261121-101530-a3f9", absl::NotFoundError("x"), ran));
  JobFiles other;
  other.kind = "train";
  EXPECT_FALSE(IsDoctorRun("train-doctor-20261121-101530-a3f9", absl::NotFoundError("x"), other));
}

// A finished job as summary.json has it: nested failures as dlaunch wrote them.
JobFiles FailedJob() {
  JobFiles files = RunningJob();
  files.events.push_back(Event("9.9", "job_finished", R"({"result":"failed","exit_code":1})"));
  files.summary = Summary(
      R"({"job_id":"j","result":"failed","exit_code":1,"wall_time_s":185.2,"nodes":2,)"
      R"("world_size":8,"samples":0,"samples_per_sec":0,"restarts":1,"max_restarts":3,)"
      R"("root_cause":{"class":"worker crash","rank":3,"description":"rank 3 on n1 exited )"
      R"(with code 1"},"consequences":[],"ranks_succeeded":7})");
  return files;
}

TEST(FormatJobStatusTest, AFinishedJobInWordsNotJson) {
  const std::string text =
      FormatJobStatus("/p/runs/j", absl::NotFoundError("x"), std::nullopt, FailedJob(), 0);
  EXPECT_NE(text.find("wall time  3m05s\n"), std::string::npos) << text;
  EXPECT_NE(text.find("nodes      2\n"), std::string::npos) << text;
  EXPECT_NE(text.find("ranks      8, 7 succeeded\n"), std::string::npos) << text;
  EXPECT_NE(text.find("summary:\n  result: failed (exit 1)\n"
                      "  root cause: rank 3 on n1 exited with code 1\n"
                      "  restarts: 1 of 3\n"),
            std::string::npos)
      << text;
  EXPECT_EQ(text.find('{'), std::string::npos) << text;
  // No rank reported: the throughput is not known, so it is not shown as 0.
  EXPECT_EQ(text.find("samples"), std::string::npos) << text;
  EXPECT_NE(text.find("  summary  /p/runs/j/summary.json\n"), std::string::npos) << text;
}

TEST(FormatJobStatusTest, ThroughputShownOnceARankReportedEvenWhenZero) {
  JobFiles files = FailedJob();
  files.summary->mutable_final_loss()->set_value(2.3);
  const std::string text =
      FormatJobStatus("/p/runs/j", absl::NotFoundError("x"), std::nullopt, files, 0);
  EXPECT_NE(text.find("  samples: 0 at 0 samples/s\n  final loss: 2.3\n"), std::string::npos)
      << text;
}

TEST(FormatJobStatusTest, NestedEventValuesInWordsNotJson) {
  JobFiles files;
  files.events_present = true;
  files.events = {
      Event("2.0", "node_joined",
            R"({"host":"n0","checks":[)"
            R"({"name":"gpus","verdict":"PASSED","detail":"sees 4, \"ok\", 4"},)"
            R"({"name":"disk","verdict":"PASSED","detail":"74 GiB free"},)"
            R"({"name":"clock","verdict":"SKIPPED","detail":"none"}]})"),
      Event("9.0", "failure_detected",
            R"({"failure":{"failure_class":"worker crash","rank":3,"host":"n1",)"
            R"("description":"rank 3 on n1 exited with code 1","log_tail":"Traceback ..."}})")};
  const std::string text = FormatJobStatus("j", absl::NotFoundError("x"), std::nullopt, files, 10);
  EXPECT_NE(text.find("node_joined round=0 host=n0 slots=0 joined=0 checks=[3 entries] expected=0\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("failure=\"rank 3 on n1 exited with code 1\""), std::string::npos) << text;
  EXPECT_EQ(text.find('{'), std::string::npos) << text;
}

TEST(FormatJobStatusJsonTest, TheFilesAsWrittenForScripts) {
  JobFiles files = FailedJob();
  files.events_present = true;
  files.summary_json = "{\"result\":\"failed\",\"exit_code\":1}\n";
  EXPECT_EQ(FormatJobStatusJson("/p/runs/j", absl::NotFoundError("x"), "", files),
            "{\"job_id\":\"j\",\"directory\":\"/p/runs/j\",\"state\":\"failed (exit 1)\","
            "\"started\":\"1.5\",\"ended\":true,\"submit\":null,"
            "\"summary\":{\"result\":\"failed\",\"exit_code\":1}}\n");
}

}  // namespace
}  // namespace dlaunch

namespace dlaunch {
namespace {

TEST(FormatJobStatusTest, ShowsTheGoodputAccountOfSummaryJson) {
  v1::GoodputAccount a;
  a.set_wall_s(100);
  a.set_goodput(0.8);
  a.mutable_split()->mutable_productive()->set_seconds(80);
  a.mutable_split()->mutable_failure()->set_seconds(20);
  for (int r = 0; r < 2; ++r) {
    v1::RoundGoodput* round = a.add_rounds();
    round->set_round(r);
    round->set_begin_s(50 * r);
    round->set_end_s(50 * r + 50);
    round->set_ended_by(r == 0 ? "failure: worker crash" : "finished");
  }
  absl::StatusOr<std::string> json = GoodputJson(a);
  ASSERT_TRUE(json.ok());
  JobFiles files;
  files.summary = Summary(absl::StrCat(R"({"result":"succeeded","goodput":)", *json, "}"));
  const std::string text = FormatJobStatus("j", absl::NotFoundError("x"), std::nullopt, files, 1);
  EXPECT_NE(text.find("  goodput 80.0% of 100.0 s: failures 20.0 s\n"), std::string::npos) << text;
  EXPECT_NE(text.find("    round 0: 0.0-50.0 s, failure: worker crash\n"), std::string::npos) << text;
  files.summary->clear_goodput();
  files.summary->set_wall_time_s(12.5);
  EXPECT_NE(FormatJobStatus("j", absl::NotFoundError("x"), std::nullopt, files, 1)
                .find("  goodput: not in summary.json; `dlaunch trace JOB` computes it\n"),
            std::string::npos);
  files.goodput_error = "goodput: wall_s is not a number";
  EXPECT_NE(FormatJobStatus("j", absl::NotFoundError("x"), std::nullopt, files, 1)
                .find("  goodput: unreadable (goodput: wall_s is not a number)\n"),
            std::string::npos);
}

}  // namespace
}  // namespace dlaunch
