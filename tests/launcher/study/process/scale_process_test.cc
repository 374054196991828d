// `dlaunch scale` as a user runs it: real `dlaunch run`s of dlaunch-worker (synthetic data, a few
// steps) and of plain shell commands, gnuplot drawing the plots, and the bad inputs.
#include <unistd.h>

#include <filesystem>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "absl/strings/str_cat.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "common/command_runner.h"
#include "common/file_io.h"

namespace dlaunch {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::StartsWith;

class ScaleProcessTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (fs::temp_directory_path() / "dlaunch-scale-XXXXXX").string();
    dir_ = ::mkdtemp(tmpl.data());
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }

  std::string WriteSpec(const std::string& command) {
    const std::string path = dir_ + "/job.yaml";
    const std::string text = absl::StrCat(
        "name: scale-test\nnodes: 1\nlauncher: local\ncommand: ", command,
        "\nstop:\n  grace: 5s\nheartbeat:\n  interval: 0.5s\n");
    EXPECT_TRUE(WriteFileAtomically(path, text, {.fsync = false}).ok());
    return path;
  }

  // dlaunch with `args`, from the scratch directory; `env` entries go before it ("K=V").
  CommandResult Dlaunch(const std::vector<std::string>& args,
                        const std::vector<std::string>& env = {}) {
    std::vector<std::string> argv = {"env", "-C", dir_};
    argv.insert(argv.end(), env.begin(), env.end());
    argv.push_back(std::string(DLAUNCH_BIN_DIR) + "/dlaunch");
    argv.insert(argv.end(), args.begin(), args.end());
    absl::StatusOr<CommandResult> r = RunCommand(argv, 600);
    EXPECT_TRUE(r.ok()) << r.status();
    return r.ok() ? *r : CommandResult{-1, "", ""};
  }

  std::string Read(const std::string& name) {
    absl::StatusOr<std::string> text = ReadFile(dir_ + "/study/" + name);
    EXPECT_TRUE(text.ok()) << name << ": " << text.status();
    return text.ok() ? *text : "";
  }

  std::vector<std::string> CsvRows() {
    return absl::StrSplit(Read("scaling.csv"), '\n', absl::SkipEmpty());
  }

  std::string dir_;
};

TEST_F(ScaleProcessTest, WorkerStudyWritesTablePlotsAndReport) {
  if (access((std::string(DLAUNCH_BIN_DIR) + "/dlaunch-worker").c_str(), X_OK) != 0) {
    GTEST_SKIP() << "dlaunch-worker is not built (LibTorch missing)";
  }
  const std::string spec = WriteSpec(
      "[dlaunch-worker, --model, mlp, --dataset, synthetic, --synthetic-samples, 256, --epochs, 2,"
      " --batch-size, 16, --report-every, 2, --lr, 0.01, --warmup-epochs, 1]");
  CommandResult r = Dlaunch({"scale", spec, "--procs", "1,2", "--job-dir", "study"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_THAT(r.out, HasSubstr("| n1-p2 |"));
  std::vector<std::string> rows = CsvRows();
  ASSERT_EQ(rows.size(), 3u) << Read("scaling.csv");
  EXPECT_THAT(rows[1], StartsWith("n1-p1,1,1,1,ok,"));
  EXPECT_THAT(rows[2], StartsWith("n1-p2,1,2,2,ok,"));
  for (const std::string& row : {rows[1], rows[2]}) {
    std::vector<std::string> cells = absl::StrSplit(row, ',');
    ASSERT_EQ(cells.size(), 14u);
    // Throughput to test accuracy, and goodput: the worker reports its steps.
    for (int c : {5, 6, 7, 8, 9, 10, 11, 12}) EXPECT_NE(cells[c], "n/a") << row << " column " << c;
  }
  EXPECT_THAT(rows[1], HasSubstr(",1.00,100.00,"));  // the baseline against itself
  for (const char* plot : {"throughput", "efficiency", "accuracy", "loss"}) {
    const std::string png = Read(absl::StrCat(plot, ".png"));
    EXPECT_THAT(png, StartsWith("\x89PNG\r\n\x1a\n")) << plot;
    EXPECT_GT(png.size(), 5000u) << plot;
    const std::string svg = Read(absl::StrCat(plot, ".svg"));
    EXPECT_THAT(svg, HasSubstr("<svg")) << plot;
    EXPECT_THAT(svg, HasSubstr("</svg>")) << plot;
    EXPECT_THAT(Read("report.html"), HasSubstr(absl::StrCat("<img src=\"", plot, ".png\"")));
  }
  EXPECT_THAT(Read("report.html"), HasSubstr("<td>n1-p2</td>"));
  EXPECT_THAT(Read("study.json"), HasSubstr("\"run_dir\":\"n1-p2\""));
  EXPECT_TRUE(fs::exists(dir_ + "/study/n1-p2/summary.json"));
  EXPECT_TRUE(fs::exists(dir_ + "/study/n1-p1/metrics.jsonl"));
}

TEST_F(ScaleProcessTest, CommandWithoutReportsStillGetsWallTimes) {
  const std::string spec = WriteSpec("[/bin/sh, -c, 'sleep 0.2']");
  CommandResult r = Dlaunch({"scale", spec, "--procs", "1,2", "--job-dir", "study"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  std::vector<std::string> rows = CsvRows();
  ASSERT_EQ(rows.size(), 3u);
  for (const std::string& row : {rows[1], rows[2]}) {
    EXPECT_THAT(row, HasSubstr(",ok,n/a,n/a,n/a,n/a,n/a,n/a,n/a,")) << row;
    std::vector<std::string> cells = absl::StrSplit(row, ',');
    double wall = 0;
    ASSERT_TRUE(absl::SimpleAtod(cells.back(), &wall)) << row;
    EXPECT_GT(wall, 0.1) << row;
  }
  EXPECT_THAT(Read("report.html"), HasSubstr("Not drawn: throughput and efficiency"));
}

TEST_F(ScaleProcessTest, FailingScaleIsMarkedAndTheStudyGoesOn) {
  // Exits 3 at two workers only.
  const std::string spec = WriteSpec("[/bin/sh, -c, 'test \"$WORLD_SIZE\" != 2 || exit 3']");
  CommandResult r = Dlaunch({"scale", spec, "--procs", "1,2,3", "--job-dir", "study"});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  std::vector<std::string> rows = CsvRows();
  ASSERT_EQ(rows.size(), 4u) << Read("scaling.csv");
  EXPECT_THAT(rows[1], HasSubstr(",ok,"));
  EXPECT_THAT(rows[2], HasSubstr(",failed (exit 1),"));
  EXPECT_THAT(rows[3], StartsWith("n1-p3,1,3,3,ok,"));
  EXPECT_THAT(Read("study.json"), HasSubstr("\"result\":\"failed\""));
}

TEST_F(ScaleProcessTest, EveryScaleRunsTheSpecAsTheStudyStarted) {
  // The first scale overwrites the original job.yaml with one that does not parse; the second
  // scale must still run, from the study's own copy.
  const std::string spec = WriteSpec(
      "[/bin/sh, -c, 'test \"$WORLD_SIZE\" != 1 || echo \"nodes: [\" > job.yaml']");
  CommandResult r = Dlaunch({"scale", spec, "--procs", "1,2", "--job-dir", "study"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  absl::StatusOr<std::string> original = ReadFile(spec);
  ASSERT_TRUE(original.ok());
  EXPECT_EQ(*original, "nodes: [\n");  // the first scale did overwrite it
  std::vector<std::string> rows = CsvRows();
  ASSERT_EQ(rows.size(), 3u) << Read("scaling.csv");
  EXPECT_THAT(rows[2], StartsWith("n1-p2,1,2,2,ok,"));
  EXPECT_THAT(Read("job.yaml"), HasSubstr("name: scale-test"));
}

TEST_F(ScaleProcessTest, BadListsAreUsageErrors) {
  const std::string spec = WriteSpec("[\"true\"]");
  for (const char* list : {"", "1,,2", "one", "0"}) {
    CommandResult r = Dlaunch({"scale", spec, "--nodes", list});
    EXPECT_EQ(r.exit_code, 2) << list;
    EXPECT_THAT(r.err, HasSubstr("--nodes: ")) << list;
  }
  CommandResult none = Dlaunch({"scale", spec});
  EXPECT_EQ(none.exit_code, 2);
  EXPECT_THAT(none.err, HasSubstr("give --nodes and/or --procs"));
  EXPECT_FALSE(fs::exists(dir_ + "/runs"));
}

TEST_F(ScaleProcessTest, MoreNodesThanTheAllocationNamesBoth) {
  const std::string spec = WriteSpec("[\"true\"]");
  ASSERT_TRUE(WriteFileAtomically(dir_ + "/nodefile", "nid001\nnid001\nnid002\n", {.fsync = false}).ok());
  CommandResult r = Dlaunch({"scale", spec, "--nodes", "1,2,4"},
                            {"PBS_NODEFILE=" + dir_ + "/nodefile", "PBS_JOBID=7.pbs"});
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_THAT(r.err, HasSubstr("asks for 4 nodes, but the allocation has 2"));
  EXPECT_FALSE(fs::exists(dir_ + "/runs"));
}

}  // namespace
}  // namespace dlaunch
