// StackDumper with a fake process launcher, a manual clock and a made-up view of the targets:
// which source each rank's stacks come from (worker server, py-spy, gdb), the files and frames
// they give, and the budget that bounds each source and the whole dump, with no process and no
// sleeping. The worker server is a real Unix socket served on the test's loop.
#include "agent/stack_dumper.h"

#include <signal.h>
#include <sys/wait.h>

#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/fake_agent_clock.h"
#include "tests/testing/fake_process_launcher.h"
#include "tests/testing/test_files.h"

namespace dlaunch {
namespace {

using std::chrono::milliseconds;
using ::testing::Contains;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;

class StackDumperTest : public ::testing::Test {
 protected:
  StackDumperTest()
      : dumper_(io_, clock_, [this](const std::string& l) { log_.push_back(l); },
                SupervisorSeams{&launcher_, &clock_},
                StackDumper::Probe{
                    [this](pid_t pid) { return python_.count(pid) > 0; },
                    [this](pid_t pid) { return servers_.count(pid) ? servers_[pid] : ""; },
                    [this](std::string* why) {
                      if (py_spy_.empty()) *why = "py-spy is not on PATH";
                      return py_spy_;
                    },
                    [this](pid_t pid) { return stopped_.count(pid) > 0; }}) {}

  void Settle() {
    for (int i = 0; i < 10; ++i) {
      io_.restart();
      if (io_.poll() == 0) return;
    }
  }
  void Start(const std::vector<StackDumper::Target>& targets, int budget_ms = 10000) {
    dumper_.Start(targets, stacks_, milliseconds(budget_ms), [this](auto results) {
      ++done_;
      results_ = std::move(results);
    });
    Settle();
  }
  std::string Stacks(int rank) const {
    return ReadFile(stacks_ + "/rank-" + std::to_string(rank) + ".txt");
  }

  boost::asio::io_context io_;
  FakeProcessLauncher launcher_;
  ManualTimerClock clock_;
  ScratchDir dir_;
  std::string stacks_ = dir_.path() + "/stacks";
  std::vector<std::string> log_;
  std::set<pid_t> python_;
  std::set<pid_t> stopped_;
  std::map<pid_t, std::string> servers_;
  std::string py_spy_ = "/opt/py-spy/bin/py-spy";
  int done_ = 0;
  std::vector<StackDumper::Result> results_;
  StackDumper dumper_;
};

TEST_F(StackDumperTest, OneGdbPerRankAndDoneOnceTheLastEnded) {
  Start({{1, 4242}, {3, 4343}});
  // The fake numbers its children from 1000, in the order they were started.
  EXPECT_THAT(launcher_.options(1000).argv,
              ElementsAre("gdb", "-batch", "-nx", "-p", "4242", "-ex", "thread apply all bt"));
  EXPECT_EQ(launcher_.options(1001).argv[4], "4343");
  EXPECT_TRUE(dumper_.busy());

  launcher_.Write(1000, "Thread 1 (LWP 4242):\n#0 poll ()\n");
  launcher_.Exit(1000, W_EXITCODE(0, 0));
  Settle();
  EXPECT_EQ(done_, 0) << "rank 3's gdb still runs";
  EXPECT_THAT(Stacks(1), HasSubstr("#0 poll ()"));

  launcher_.Write(1001, "Thread 1 (LWP 4343):\n", true);
  launcher_.Exit(1001, W_EXITCODE(0, 0));
  Settle();
  EXPECT_EQ(done_, 1);
  EXPECT_FALSE(dumper_.busy());
  EXPECT_THAT(Stacks(3), HasSubstr("LWP 4343"));
  clock_.Advance(milliseconds(20000));
  Settle();
  EXPECT_EQ(done_, 1) << "the budget timer of a finished dump is gone";
}

TEST_F(StackDumperTest, TheBudgetEndsTheDumpAndKillsWhatStillRuns) {
  Start({{2, 5000}}, 3000);
  launcher_.Write(1000, "Thread 1 (LWP 5000):\n");
  Settle();
  clock_.Advance(milliseconds(2999));
  Settle();
  EXPECT_EQ(done_, 0);
  clock_.Advance(milliseconds(1));
  Settle();
  EXPECT_EQ(done_, 1);
  EXPECT_EQ(launcher_.SignalsWhileRunning(1000, SIGKILL), 1);
  EXPECT_THAT(Stacks(2), HasSubstr("LWP 5000"));
  EXPECT_THAT(Stacks(2), HasSubstr("no time left"));
  // The killed gdb's exit comes later and changes nothing.
  launcher_.Exit(1000, W_EXITCODE(0, SIGKILL));
  Settle();
  EXPECT_EQ(done_, 1);
}

TEST_F(StackDumperTest, AGdbThatCannotStartLeavesWhyAndTheDumpStillEnds) {
  launcher_.FailFork("gdb", absl::NotFoundError("gdb: not found on PATH"));
  dumper_.Start({{0, 77}}, stacks_, milliseconds(10000), [this](auto) { ++done_; });
  EXPECT_EQ(done_, 0) << "never from inside Start";
  clock_.Advance(milliseconds(0));
  Settle();
  EXPECT_EQ(done_, 1);
  EXPECT_THAT(Stacks(0), HasSubstr("not found on PATH"));
}

TEST_F(StackDumperTest, ANewDumpDropsTheOneBeforeWithoutCallingIt) {
  int first_done = 0;
  dumper_.Start({{0, 10}}, stacks_, milliseconds(10000), [&](auto) { ++first_done; });
  Settle();
  Start({{0, 20}});
  EXPECT_EQ(launcher_.SignalsWhileRunning(1000, SIGKILL), 1);
  launcher_.Exit(1000, W_EXITCODE(0, SIGKILL));
  Settle();
  EXPECT_EQ(done_, 0) << "the dropped gdb's exit is not the new dump's end";
  launcher_.Exit(1001, W_EXITCODE(0, 0));
  Settle();
  EXPECT_EQ(done_, 1);
  EXPECT_EQ(first_done, 0);
}

std::string Fixture(const std::string& name) {
  return ReadFile(std::string(DLAUNCH_SOURCE_DIR) + "/tests/agent/stacks/" + name);
}

TEST_F(StackDumperTest, APythonRanksStacksComeFromPySpyWithTheFrameItIsStuckIn) {
  python_ = {4242};
  Start({{1, 4242}});
  EXPECT_THAT(launcher_.options(1000).argv,
              ElementsAre(py_spy_, "dump", "--pid", "4242", "--full-filenames"));
  launcher_.Write(1000, Fixture("plain_stall.py-spy.txt"));
  launcher_.Exit(1000, W_EXITCODE(0, 0));
  Settle();
  ASSERT_EQ(done_, 1);
  ASSERT_EQ(results_.size(), 1u);
  EXPECT_EQ(results_[0].source, "py-spy");
  ASSERT_TRUE(results_[0].stuck_at.has_value());
  EXPECT_EQ(DescribeFrame(*results_[0].stuck_at), "wait_for_data (/home/user/project/stall.py:4)");
  EXPECT_THAT(Stacks(1), HasSubstr("Python stacks of every thread, from py-spy"));
  EXPECT_THAT(Stacks(1), HasSubstr("# stuck in wait_for_data (/home/user/project/stall.py:4)"));
  EXPECT_THAT(Stacks(1), HasSubstr("    train_step (/home/user/project/stall.py:7)"));
  const v1::RankStacks up = RankStacksOf(results_[0], dir_.path());
  EXPECT_EQ(up.path(), "stacks/rank-1.txt");
  EXPECT_EQ(up.stuck_at().function(), "wait_for_data");
  EXPECT_EQ(up.stuck_at().line(), 4);
}

TEST_F(StackDumperTest, APySpyThatFailsLeavesWhyAndGdbTakesTheStacks) {
  python_ = {4242};
  Start({{1, 4242}});
  launcher_.Write(1000, "Error: Permission denied (os error 13)\n\nStack backtrace:\n   9: main\n", true);
  launcher_.Exit(1000, W_EXITCODE(1, 0));
  Settle();
  EXPECT_EQ(done_, 0);
  EXPECT_EQ(launcher_.options(1001).argv[0], "gdb");
  launcher_.Write(1001, "Thread 1 (LWP 4242):\n#0 poll ()\n");
  launcher_.Exit(1001, W_EXITCODE(0, 0));
  Settle();
  ASSERT_EQ(done_, 1);
  EXPECT_EQ(results_[0].source, "gdb");
  EXPECT_FALSE(results_[0].stuck_at.has_value());
  EXPECT_THAT(Stacks(1), HasSubstr("native stacks of every thread, from gdb"));
  EXPECT_THAT(Stacks(1), HasSubstr("# py-spy dump --pid 4242: exit code 1: Error: Permission denied"));
  EXPECT_THAT(Stacks(1), HasSubstr("#0 poll ()"));
}

TEST_F(StackDumperTest, APySpyPastItsShareOfTheBudgetIsKilledAndGdbHasTheRest) {
  python_ = {4242};
  Start({{1, 4242}}, 10000);
  clock_.Advance(milliseconds(3999));
  Settle();
  EXPECT_EQ(launcher_.SignalsWhileRunning(1000, SIGKILL), 0);
  clock_.Advance(milliseconds(1));
  Settle();
  EXPECT_EQ(launcher_.SignalsWhileRunning(1000, SIGKILL), 1);
  EXPECT_EQ(launcher_.options(1001).argv[0], "gdb");
  // The killed py-spy's last words and exit belong to no source.
  launcher_.Write(1000, "late\n");
  launcher_.Exit(1000, W_EXITCODE(0, SIGKILL));
  Settle();
  EXPECT_EQ(done_, 0);
  clock_.Advance(milliseconds(6000));
  Settle();
  ASSERT_EQ(done_, 1) << "gdb had the rest of the budget, no more";
  EXPECT_THAT(Stacks(1), HasSubstr("py-spy: no answer within 4.0 s"));
  EXPECT_THAT(Stacks(1), HasSubstr("gdb -p 4242: no time left (killed)"));
  EXPECT_THAT(Stacks(1), Not(HasSubstr("late")));
}

TEST_F(StackDumperTest, AStoppedRankIsReadWithoutPausingIt) {
  // py-spy cannot pause a process that SIGSTOP stopped already ("Failed to suspend process").
  python_ = {4242, 4343};
  stopped_ = {4343};
  Start({{1, 4242}, {2, 4343}});
  EXPECT_THAT(launcher_.options(1000).argv, Not(Contains("--nonblocking")));
  EXPECT_THAT(launcher_.options(1001).argv,
              ElementsAre(py_spy_, "dump", "--pid", "4343", "--full-filenames", "--nonblocking"));
}

TEST_F(StackDumperTest, WithoutPySpyAPythonRankGetsGdbAndTheFileSaysWhy) {
  python_ = {4242};
  py_spy_.clear();
  Start({{1, 4242}});
  EXPECT_EQ(launcher_.options(1000).argv[0], "gdb");
  launcher_.Exit(1000, W_EXITCODE(0, 0));
  Settle();
  ASSERT_EQ(done_, 1);
  EXPECT_THAT(Stacks(1), HasSubstr("# py-spy: py-spy is not on PATH"));
}

// A worker server on a Unix socket of the test's loop: answers each request for a handler of
// `bodies` with its body, and any other with 404, as torch's does.
class FakeWorkerServer {
 public:
  FakeWorkerServer(boost::asio::io_context& io, const std::string& path,
                   std::map<std::string, std::string> bodies)
      : io_(io), acceptor_(io, boost::asio::local::stream_protocol::endpoint(path)),
        bodies_(std::move(bodies)) {
    Accept();
  }
  // All requests, one after the other.
  const std::string& asked() const { return asked_; }

 private:
  struct Connection {
    explicit Connection(boost::asio::io_context& io) : socket(io) {}
    boost::asio::local::stream_protocol::socket socket;
    boost::asio::streambuf request;
  };
  void Accept() {
    auto c = std::make_shared<Connection>(io_);
    acceptor_.async_accept(c->socket, [this, c](const boost::system::error_code& ec) {
      if (ec) return;
      Accept();
      boost::asio::async_read_until(c->socket, c->request, "\r\n\r\n",
                                    [this, c](const boost::system::error_code& rec, size_t) {
                                      if (!rec) Answer(*c);
                                    });
    });
  }
  void Answer(Connection& c) {
    const std::string request(boost::asio::buffer_cast<const char*>(c.request.data()), c.request.size());
    asked_ += request;
    std::string status = "404 Not Found", body = "handler not found";
    for (const auto& [handler, text] : bodies_) {
      if (absl::StrContains(request, "/handler/" + handler + " ")) {
        status = "200 OK";
        body = text;
      }
    }
    const std::string answer = "HTTP/1.1 " + status + "\r\nContent-Type: text/plain\r\nContent-Length: " +
                               std::to_string(body.size()) + "\r\n\r\n" + body;
    boost::asio::write(c.socket, boost::asio::buffer(answer));
    c.socket.close();
  }

  boost::asio::io_context& io_;
  boost::asio::local::stream_protocol::acceptor acceptor_;
  std::map<std::string, std::string> bodies_;
  std::string asked_;
};

TEST_F(StackDumperTest, ARankRunningPyTorchsWorkerServerIsAskedFirst) {
  python_ = {4242};
  servers_[4242] = dir_.path() + "/worker.sock";
  FakeWorkerServer server(io_, servers_[4242],
                          {{"dump_traceback", Fixture("torch_init.faulthandler.txt")}});
  Start({{0, 4242}});
  for (int i = 0; i < 100 && done_ == 0; ++i) {
    io_.restart();
    io_.run_one_for(milliseconds(50));
  }
  ASSERT_EQ(done_, 1);
  EXPECT_THAT(server.asked(), HasSubstr("POST /handler/dump_traceback HTTP/1.1\r\n"));
  EXPECT_THAT(server.asked(), HasSubstr("Content-Length: 0\r\n"));
  EXPECT_EQ(results_[0].source, "worker server");
  ASSERT_TRUE(results_[0].stuck_at.has_value());
  EXPECT_EQ(DescribeFrame(*results_[0].stuck_at), "setup (/home/user/project/train.py:11)");
  EXPECT_FALSE(launcher_.started(1000)) << "no py-spy, no gdb";
  EXPECT_THAT(Stacks(0), HasSubstr("from worker server"));
  // Its flight recorder was asked for too; a torch without the handler leaves why.
  EXPECT_THAT(server.asked(), HasSubstr("POST /handler/fr_trace_json HTTP/1.1\r\n"));
  ASSERT_TRUE(results_[0].flight_record.has_value());
  EXPECT_THAT(results_[0].flight_record->why_none(), HasSubstr("404"));
  EXPECT_EQ(results_[0].flight_record->last_seq(), 0);
}

// The recorder of a rank stopped before its peers' fourth all-reduce (PyTorch 2.11, Gloo):
// read after its stacks, kept as torch wrote it beside them, and summed up for the launcher.
TEST_F(StackDumperTest, AWorkerServersFlightRecorderIsReadAfterTheStacksAndKept) {
  python_ = {4242};
  servers_[4242] = dir_.path() + "/worker.sock";
  const std::string dump = Fixture("fr_gloo_rank1.json");
  FakeWorkerServer server(io_, servers_[4242],
                          {{"dump_traceback", Fixture("torch_init.faulthandler.txt")},
                           {"fr_trace_json", dump}});
  Start({{1, 4242}});
  for (int i = 0; i < 100 && done_ == 0; ++i) {
    io_.restart();
    io_.run_one_for(milliseconds(50));
  }
  ASSERT_EQ(done_, 1);
  ASSERT_TRUE(results_[0].flight_record.has_value());
  const v1::FlightRecord& fr = *results_[0].flight_record;
  EXPECT_EQ(fr.why_none(), "");
  EXPECT_EQ(fr.entries(), 3);
  EXPECT_EQ(fr.last_seq(), 3);
  EXPECT_EQ(fr.last_collective(), "gloo:all_reduce");
  EXPECT_EQ(ReadFile(stacks_ + "/rank-1.fr.json"), dump);
  const v1::RankStacks m = RankStacksOf(results_[0], dir_.path());
  EXPECT_EQ(m.flight_record().path(), "stacks/rank-1.fr.json");
  EXPECT_EQ(m.flight_record().last_seq(), 3);
}

// A CUDA build keeps NCCL's entries in a recorder of their own, served by dump_nccl_trace_json:
// asked for when fr_trace_json holds nothing. (The NCCL dump here is written by hand in the
// documented schema: no GPU took it.)
TEST_F(StackDumperTest, WhereTheCpuRecorderIsEmptyNcclsIsAskedFor) {
  python_ = {4242};
  servers_[4242] = dir_.path() + "/worker.sock";
  const std::string nccl = R"({"version": "2.10", "entries": [{"collective_seq_id": 41,
      "pg_id": 0, "process_group": ["0", "default_pg"], "profiling_name": "nccl:all_reduce",
      "state": "started", "is_p2p": false}], "pg_status": {"0": {"last_enqueued_collective": "41"}}})";
  FakeWorkerServer server(io_, servers_[4242],
                          {{"dump_traceback", Fixture("torch_init.faulthandler.txt")},
                           {"fr_trace_json", R"({"version": "2.10", "entries": []})"},
                           {"dump_nccl_trace_json", nccl}});
  Start({{0, 4242}});
  for (int i = 0; i < 100 && done_ == 0; ++i) {
    io_.restart();
    io_.run_one_for(milliseconds(50));
  }
  ASSERT_EQ(done_, 1);
  EXPECT_THAT(server.asked(), HasSubstr("POST /handler/dump_nccl_trace_json HTTP/1.1\r\n"));
  ASSERT_TRUE(results_[0].flight_record.has_value());
  EXPECT_EQ(results_[0].flight_record->last_seq(), 41);
  EXPECT_EQ(results_[0].flight_record->last_collective(), "nccl:all_reduce");
  EXPECT_EQ(results_[0].flight_record->why_none(), "");
  EXPECT_EQ(ReadFile(stacks_ + "/rank-0.fr.json"), nccl);
}

// A worker server that gives the stacks but never answers for its recorder costs the
// recorder's share of the budget, not the dump.
TEST_F(StackDumperTest, ARecorderThatDoesNotAnswerIsGivenUpOnItsShare) {
  python_ = {4242};
  servers_[4242] = dir_.path() + "/worker.sock";
  // Answers the stacks; the second connection is accepted and never answered.
  boost::asio::local::stream_protocol::acceptor acceptor(
      io_, boost::asio::local::stream_protocol::endpoint(servers_[4242]));
  boost::asio::local::stream_protocol::socket first(io_), second(io_);
  const std::string body = Fixture("torch_init.faulthandler.txt");
  const std::string answer = "HTTP/1.1 200 OK\r\nContent-Length: " + std::to_string(body.size()) +
                             "\r\n\r\n" + body;
  boost::asio::streambuf request;
  acceptor.async_accept(first, [&](const boost::system::error_code& ec) {
    if (ec) return;
    boost::asio::async_read_until(first, request, "\r\n\r\n",
                                  [&](const boost::system::error_code& rec, size_t) {
                                    if (rec) return;
                                    boost::asio::write(first, boost::asio::buffer(answer));
                                    first.close();
                                    acceptor.async_accept(second, [](const boost::system::error_code&) {});
                                  });
  });
  Start({{0, 4242}});
  for (int i = 0; i < 100 && log_.empty(); ++i) {
    io_.restart();
    io_.run_one_for(milliseconds(50));
  }
  for (int i = 0; i < 20; ++i) {  // the recorder's request reaches the server
    io_.restart();
    io_.run_one_for(milliseconds(10));
  }
  EXPECT_EQ(done_, 0);
  clock_.Advance(milliseconds(2500));  // the worker server's share: a quarter of 10 s
  Settle();
  ASSERT_EQ(done_, 1);
  EXPECT_EQ(results_[0].source, "worker server");
  ASSERT_TRUE(results_[0].flight_record.has_value());
  EXPECT_THAT(results_[0].flight_record->why_none(), HasSubstr("did not answer in time"));
}

TEST_F(StackDumperTest, AWorkerServerThatIsGoneFallsBackToPySpy) {
  python_ = {4242};
  servers_[4242] = dir_.path() + "/no-such.sock";
  Start({{0, 4242}});
  for (int i = 0; i < 100 && !launcher_.started(1000); ++i) {
    io_.restart();
    io_.run_one_for(milliseconds(50));
  }
  ASSERT_TRUE(launcher_.started(1000));
  EXPECT_EQ(launcher_.options(1000).argv[0], py_spy_);
  launcher_.Write(1000, Fixture("exit_thread.py-spy.txt"));
  launcher_.Exit(1000, W_EXITCODE(0, 0));
  Settle();
  ASSERT_EQ(done_, 1);
  EXPECT_EQ(DescribeFrame(*results_[0].stuck_at), "drain_queue (/home/user/project/exit_thread.py:4)");
  EXPECT_THAT(Stacks(0), HasSubstr("# worker server " + servers_[4242] + ": connect"));
}

}  // namespace
}  // namespace dlaunch
