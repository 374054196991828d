// The stacks of a hung plain Python rank (no PyTorch): dlaunch takes them with py-spy before it
// stops the rank, and the root-cause line and summary.json name the function and file:line it
// is stuck in, for a stall and for a hang at exit. py-spy is the build tree's (scripts/py-spy.sh,
// DLAUNCH_PY_SPY set by ctest); without it these tests are skipped.
#include <stdlib.h>
#include <unistd.h>

#include <optional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "tests/integration/test_process.h"

namespace dlaunch::testing {
namespace {

using std::chrono::seconds;

const std::string kBin = DLAUNCH_BIN_DIR;
const std::string kScript = std::string(DLAUNCH_SOURCE_DIR) + "/tests/integration/stuck_rank.py";

// The line of the script that carries `marker`: where the rank is stuck.
int LineOf(const std::string& marker) {
  int n = 0;
  for (absl::string_view line : absl::StrSplit(ReadFile(kScript), '\n')) {
    ++n;
    if (absl::StrContains(line, marker)) return n;
  }
  return -1;
}

class PythonStacksTest : public ::testing::Test {
 public:
  struct Case {
    std::string python = "/usr/bin/python3";
    std::string script = kScript;
    std::string mode;
    std::vector<std::string> flags;
    std::string cls;       // the failure class of rank 0
    std::string function;  // where it is stuck: at the line marked "stuck here (<marker>)"
    std::string marker;
    std::string source = "py-spy";
    std::vector<std::string> env;
  };

 protected:
  void SetUp() override {
    const char* py_spy = getenv("DLAUNCH_PY_SPY");
    if (py_spy == nullptr || access(py_spy, X_OK) != 0) {
      GTEST_SKIP() << "no py-spy at DLAUNCH_PY_SPY (" << (py_spy ? py_spy : "unset")
                   << "); scripts/py-spy.sh installs it";
    }
  }

  // Runs stuck_rank.py under dlaunch and checks that the job failed as `c` says.
  void RunAndCheck(const Case& c) {
    const std::string tmp = MakeTempDir();
    const std::string job_id = tmp.substr(tmp.rfind('/') + 1);
    const std::string job_dir = tmp + "/" + job_id;
    std::vector<std::string> argv = {kBin + "/dlaunch", "run", "--nnodes", "1", "--job-dir",
                                     job_dir, "--heartbeat", "1", "--grace", "2"};
    argv.insert(argv.end(), c.flags.begin(), c.flags.end());
    for (const std::string& a : {std::string("--"), c.python, c.script, c.mode}) argv.push_back(a);
    std::vector<std::string> env = c.env;
    for (std::string& e : env) e = absl::StrReplaceAll(e, {{"$TMP", tmp}});
    ChildProcess run(argv, tmp, env);
    auto code = run.Wait(seconds(120));
    ASSERT_TRUE(code.has_value()) << run.Stderr();
    EXPECT_EQ(*code, 1) << run.Stderr();

    const int line = LineOf(absl::StrCat("stuck here (", c.marker, ")"));
    ASSERT_GT(line, 0);
    const std::string where = absl::StrCat(c.function, " (", kScript, ":", line, ")");
    EXPECT_TRUE(absl::StrContains(run.Stderr(), absl::StrCat("[dlaunch] root cause: ", c.cls, ": rank 0 ")))
        << run.Stderr();
    EXPECT_TRUE(absl::StrContains(run.Stderr(), absl::StrCat(", in ", where, "\n"))) << run.Stderr();

    const std::string summary = ReadFile(job_dir + "/summary.json");
    EXPECT_TRUE(absl::StrContains(summary, absl::StrCat("\"root_cause\":{\"failure_class\":\"", c.cls, "\",\"rank\":0")))
        << summary;
    EXPECT_TRUE(absl::StrContains(
        summary, absl::StrCat("\"stuck_at\":{\"function\":\"", c.function, "\",\"file\":\"", kScript,
                              "\",\"line\":", line, ",\"source\":\"", c.source,
                              "\",\"stacks\":\"stacks/rank-0.txt\"}")))
        << summary;
    const std::string stacks = ReadFile(job_dir + "/stacks/rank-0.txt");
    EXPECT_TRUE(absl::StrContains(stacks, "Python stacks of every thread, from " + c.source)) << stacks;
    EXPECT_TRUE(absl::StrContains(stacks, "# stuck in " + where)) << stacks;
    EXPECT_TRUE(WaitFor(
        [&] { return FindProcesses("DLAUNCH_JOB_ID=" + job_id, job_dir + "/token").empty(); },
        seconds(10)));
  }
};

// stuck_rank.py `mode` on rank 0 of `flags`, stuck in `function`.
PythonStacksTest::Case Stuck(const std::string& mode, std::vector<std::string> flags,
                             const std::string& cls, const std::string& function) {
  PythonStacksTest::Case c;
  c.mode = mode;
  c.flags = std::move(flags);
  c.cls = cls;
  c.function = function;
  c.marker = mode;
  return c;
}

TEST_F(PythonStacksTest, AStalledPlainPythonRankIsNamedWithTheFunctionItIsStuckIn) {
  RunAndCheck(Stuck("stall", {"--nproc-per-node", "1", "--stall-timeout", "3"}, "stall",
                    "wait_for_data"));
}

// What a user who built with scripts/demo.sh or scripts/test.sh gets: neither DLAUNCH_PY_SPY nor
// a py-spy on PATH, so the agent must find the build tree's own beside its bin/
// (<build>/libexec/dlaunch/py-spy, linked there by scripts/py-spy.sh).
TEST_F(PythonStacksTest, TheBuildTreesAgentFindsItsPySpyWithoutPathOrDlaunchPySpy) {
  for (const char* system : {"/usr/bin/py-spy", "/bin/py-spy"}) {
    if (access(system, X_OK) == 0) GTEST_SKIP() << system << " would be found on PATH instead";
  }
  const std::string saved_spy = getenv("DLAUNCH_PY_SPY");
  const char* path = getenv("PATH");
  const std::string saved_path = path ? path : "";
  unsetenv("DLAUNCH_PY_SPY");  // the launcher and its agents inherit this environment
  setenv("PATH", "/usr/bin:/bin", 1);
  RunAndCheck(Stuck("stall", {"--nproc-per-node", "1", "--stall-timeout", "3"}, "stall",
                    "wait_for_data"));
  setenv("DLAUNCH_PY_SPY", saved_spy.c_str(), 1);
  setenv("PATH", saved_path.c_str(), 1);
}

TEST_F(PythonStacksTest, ARankHungAtExitIsNamedWithTheThreadThatHoldsItUp) {
  RunAndCheck(Stuck("exit-hang", {"--nproc-per-node", "2", "--exit-timeout", "3"}, "hang at exit",
                    "drain_queue"));
}

TEST_F(PythonStacksTest, APyTorchRankServingItsStacksIsAskedThroughItsWorkerServer) {
  // The PyTorch 2.x that scripts/torch-venv.sh makes, as WorkerStoreTest finds it.
  const std::string python = std::string(DLAUNCH_SOURCE_DIR) + "/build-torch2/venv/bin/python";
  const std::string tmp = MakeTempDir();
  std::optional<int> code = 1;
  if (access(python.c_str(), X_OK) == 0) {
    ChildProcess probe({python, "-c", "import torch.distributed.elastic.control_plane"}, tmp);
    code = probe.Wait(seconds(180));
  }
  if (!code.has_value() || *code != 0) {
    GTEST_SKIP() << python << " cannot import torch's control_plane: no PyTorch 2.x to test "
                 << "against (scripts/torch-venv.sh makes it)";
  }
  // No preflight: importing torch can take longer than its time on a busy machine. Without
  // warnings the import prints nothing, so the rank's progress starts with its steps.
  Case c = Stuck("stall", {"--nproc-per-node", "1", "--stall-timeout", "3", "--no-preflight"},
                 "stall", "wait_for_data");
  c.python = python;
  c.script = std::string(DLAUNCH_SOURCE_DIR) + "/tests/integration/stuck_torch_rank.py";
  c.source = "worker server";
  c.env = {"TORCH_WORKER_SERVER_SOCKET=$TMP/worker.sock", "PYTHONWARNINGS=ignore"};
  RunAndCheck(c);
}

// An unmodified DDP script (torch, gloo, 2 nodes x 2 ranks, no reports): one rank stops in its
// own code while its peers block in the next collective. The rank the launcher heard from last
// is the stopped one, so the rank silent longest is a waiting peer; every rank's stacks, on
// both nodes, show which stopped. Once for a rank of each node.
class StoppedRankTest : public PythonStacksTest, public ::testing::WithParamInterface<int> {};

TEST_P(StoppedRankTest, TheRankOutsideTheCollectiveIsNamedNotAWaitingPeer) {
  const int stopped = GetParam();
  const std::string python = "/usr/bin/python3";
  const std::string tmp = MakeTempDir();
  {
    ChildProcess probe({python, "-c", "import torch.distributed"}, tmp);
    auto code = probe.Wait(seconds(120));
    if (!code.has_value() || *code != 0) {
      GTEST_SKIP() << "python3-torch is not installed (scripts/install-deps.sh installs it)";
    }
  }
  const std::string script = std::string(DLAUNCH_SOURCE_DIR) + "/tests/integration/ddp_stopped_rank.py";
  const std::string job_id = tmp.substr(tmp.rfind('/') + 1);
  const std::string job_dir = tmp + "/" + job_id;
  // No preflight: importing torch can take longer than its time on a busy machine.
  ChildProcess run({kBin + "/dlaunch", "run", "--nnodes", "2", "--nproc-per-node", "2", "--job-dir",
                    job_dir, "--heartbeat", "1", "--grace", "2", "--stall-timeout", "8",
                    "--no-preflight", "--", python, script, std::to_string(stopped)},
                   tmp);
  auto code = run.Wait(seconds(240));
  ASSERT_TRUE(code.has_value()) << run.Stderr();
  EXPECT_EQ(*code, 1) << run.Stderr();
  const std::string err = run.Stderr();

  int line = 0, n = 0;
  for (absl::string_view l : absl::StrSplit(ReadFile(script), '\n')) {
    ++n;
    if (absl::StrContains(l, "stuck here (load_batch)")) line = n;
  }
  ASSERT_GT(line, 0);
  const std::string where = absl::StrCat("load_batch (", script, ":", line, ")");
  // Named once, as the stopped rank: never a waiting peer first.
  EXPECT_TRUE(absl::StrContains(err, absl::StrCat("[dlaunch] error: stall: rank ", stopped, " (local ",
                                                  stopped % 2, ", node ", stopped / 2, ", host ")))
      << err;
  EXPECT_TRUE(absl::StrContains(err, absl::StrCat("outside any collective, in ", where, "; stopping all workers")))
      << err;
  EXPECT_FALSE(absl::StrContains(err, "(the failure reported above is a consequence)"))
      << "no other rank was named first\n" << err;
  EXPECT_TRUE(absl::StrContains(err, absl::StrCat("[dlaunch] root cause: stall: rank ", stopped, " "))) << err;
  // Every other rank, on both nodes, waits for it in a collective.
  for (int rank = 0; rank < 4; ++rank) {
    if (rank == stopped) continue;
    EXPECT_TRUE(absl::StrContains(err, absl::StrCat("[dlaunch] rank ", rank, ": waits in "))) << err;
  }
  EXPECT_TRUE(absl::StrContains(err, " for it\n")) << err;
  const std::string summary = ReadFile(job_dir + "/summary.json");
  EXPECT_TRUE(absl::StrContains(summary, absl::StrCat("\"root_cause\":{\"failure_class\":\"stall\",\"rank\":", stopped)))
      << summary;
  for (int rank = 0; rank < 4; ++rank) {
    EXPECT_EQ(access(absl::StrCat(job_dir, "/stacks/rank-", rank, ".txt").c_str(), R_OK), 0) << rank;
  }
  EXPECT_TRUE(WaitFor(
      [&] { return FindProcesses("DLAUNCH_JOB_ID=" + job_id, job_dir + "/token").empty(); },
      seconds(10)));
}

// The same job on PyTorch 2.x (gloo, CPU) with its flight recorder on (TORCH_FR_BUFFER_SIZE)
// and served by worker_main(): each rank's recorder is read through its worker server after its
// stacks, and its sequence numbers name the rank that never entered the all-reduce its peers
// are in; the journal and stacks/ keep what each recorder said. PyTorch 2.x's import is silent
// for longer than 8 s on a busy machine, hence the longer stall limit.
TEST_P(StoppedRankTest, TheFlightRecordersNameTheRankThatNeverEnteredTheCollective) {
  const int stopped = GetParam();
  const std::string python = std::string(DLAUNCH_SOURCE_DIR) + "/build-torch2/venv/bin/python";
  const std::string tmp = MakeTempDir();
  std::optional<int> probed = 1;
  if (access(python.c_str(), X_OK) == 0) {
    ChildProcess probe({python, "-c", "import torch.distributed.elastic.control_plane"}, tmp);
    probed = probe.Wait(seconds(180));
  }
  if (!probed.has_value() || *probed != 0) {
    GTEST_SKIP() << python << " cannot import torch's control_plane: no PyTorch 2.x to test "
                 << "against (scripts/torch-venv.sh makes it)";
  }
  const std::string script = std::string(DLAUNCH_SOURCE_DIR) + "/tests/integration/ddp_stopped_rank.py";
  const std::string job_id = tmp.substr(tmp.rfind('/') + 1);
  const std::string job_dir = tmp + "/" + job_id;
  ChildProcess run({kBin + "/dlaunch", "run", "--nnodes", "2", "--nproc-per-node", "2", "--job-dir",
                    job_dir, "--heartbeat", "1", "--grace", "2", "--stall-timeout", "30",
                    "--no-preflight", "--", python, script, std::to_string(stopped),
                    "--worker-main"},
                   tmp, {"TORCH_FR_BUFFER_SIZE=2000", "PYTHONWARNINGS=ignore"});
  auto code = run.Wait(seconds(240));
  ASSERT_TRUE(code.has_value()) << run.Stderr();
  EXPECT_EQ(*code, 1) << run.Stderr();
  const std::string err = run.Stderr();
  // One line from the recorders: the others in one all-reduce, the stopped rank one behind.
  std::vector<std::string> ahead;
  for (int rank = 0; rank < 4; ++rank) {
    if (rank != stopped) ahead.push_back(std::to_string(rank));
  }
  const std::string said = absl::StrCat("[dlaunch] flight recorder: ranks ", ahead[0], ", ", ahead[1],
                                        " and ", ahead[2], " entered collective ");
  EXPECT_TRUE(absl::StrContains(err, said)) << err;
  EXPECT_TRUE(absl::StrContains(err, absl::StrCat(" (gloo:all_reduce); rank ", stopped, " at ")))
      << err;
  EXPECT_TRUE(absl::StrContains(err, ": it never entered it\n")) << err;
  EXPECT_TRUE(absl::StrContains(err, absl::StrCat("[dlaunch] error: stall: rank ", stopped, " (local ",
                                                  stopped % 2, ", node ", stopped / 2, ", host ")))
      << err;
  EXPECT_TRUE(absl::StrContains(err, "its peers are in (flight recorder), in load_batch")) << err;
  EXPECT_TRUE(absl::StrContains(err, absl::StrCat("[dlaunch] root cause: stall: rank ", stopped, " ")))
      << err;
  for (int rank = 0; rank < 4; ++rank) {
    const std::string fr = ReadFile(absl::StrCat(job_dir, "/stacks/rank-", rank, ".fr.json"));
    EXPECT_TRUE(absl::StrContains(fr, "\"profiling_name\":\"gloo:all_reduce\"")) << rank;
  }
  const std::string events = ReadFile(job_dir + "/events.jsonl");
  EXPECT_TRUE(absl::StrContains(events, "\"recorder_last_seq\"")) << events;
  EXPECT_TRUE(WaitFor(
      [&] { return FindProcesses("DLAUNCH_JOB_ID=" + job_id, job_dir + "/token").empty(); },
      seconds(10)));
}

INSTANTIATE_TEST_SUITE_P(OnEachNode, StoppedRankTest, ::testing::Values(1, 2),
                         [](const ::testing::TestParamInfo<int>& p) {
                           return absl::StrCat("Rank", p.param);
                         });

}  // namespace
}  // namespace dlaunch::testing
