// Python stacks as py-spy and PyTorch's worker server print them, from real dumps of stuck
// processes (tests/agent/stacks/, captured with py-spy 0.4.3 and torch 2.11's dump_traceback,
// paths made neutral), and the frame each rank is stuck in.
#include "agent/health/python_stack.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/test_files.h"

namespace dlaunch {
namespace {

using ::testing::ElementsAre;
using ::testing::Field;
using ::testing::SizeIs;

std::string Fixture(const std::string& name) {
  std::string text = ReadFile(std::string(DLAUNCH_SOURCE_DIR) + "/tests/agent/stacks/" + name);
  EXPECT_FALSE(text.empty()) << name;
  return text;
}

std::string Stuck(const std::vector<PyThread>& threads) {
  std::optional<PyFrame> f = StuckFrame(threads);
  return f ? DescribeFrame(*f) : "(none)";
}

TEST(PythonStackTest, PySpyDumpOfAPlainScriptStalledInAFunction) {
  const std::vector<PyThread> threads = ParsePySpyDump(Fixture("plain_stall.py-spy.txt"));
  ASSERT_THAT(threads, SizeIs(1));
  EXPECT_TRUE(threads[0].main) << "its id is the process's pid";
  EXPECT_THAT(threads[0].frames,
              ElementsAre(Field(&PyFrame::function, "wait_for_data"),
                          Field(&PyFrame::function, "train_step"), Field(&PyFrame::function, "<module>")));
  EXPECT_EQ(threads[0].frames[1].file, "/home/user/project/stall.py");
  EXPECT_EQ(threads[0].frames[1].line, 7);
  EXPECT_EQ(Stuck(threads), "wait_for_data (/home/user/project/stall.py:4)");
}

TEST(PythonStackTest, PySpySkipsTheLibrariesAndNamesTheMainThreadsOwnCode) {
  const std::vector<PyThread> threads = ParsePySpyDump(Fixture("torch_init.py-spy.txt"));
  ASSERT_THAT(threads, SizeIs(2));
  EXPECT_TRUE(threads[0].main);
  EXPECT_EQ(threads[0].name, "MainThread");
  EXPECT_FALSE(threads[1].main);
  EXPECT_EQ(threads[1].name, "prefetch");
  // A function name with spaces of its own kind: "_time_logger.<locals>.wrapper".
  EXPECT_EQ(threads[0].frames[3].function, "_time_logger.<locals>.wrapper");
  // Stuck inside torch (site-packages), called from the user's setup(); the prefetch thread's
  // own frame is not the stuck one.
  EXPECT_EQ(Stuck(threads), "setup (/home/user/project/train.py:11)");
}

TEST(PythonStackTest, APythonExitHeldUpByAThreadNamesThatThread) {
  // The main thread waits in threading._shutdown (the standard library): the non-daemon
  // thread it waits for is where the rank hangs.
  const std::vector<PyThread> threads = ParsePySpyDump(Fixture("exit_thread.py-spy.txt"));
  ASSERT_THAT(threads, SizeIs(2));
  EXPECT_TRUE(threads[0].main);
  EXPECT_EQ(Stuck(threads), "drain_queue (/home/user/project/exit_thread.py:4)");
}

TEST(PythonStackTest, AnAtexitHandlerThatNeverReturns) {
  EXPECT_EQ(Stuck(ParsePySpyDump(Fixture("atexit_hang.py-spy.txt"))),
            "flush_checkpoint (/home/user/project/atexit_hang.py:4)");
}

TEST(PythonStackTest, TheWorkerServersFaultHandlerForm) {
  const std::vector<PyThread> threads = ParseFaultHandlerDump(Fixture("torch_init.faulthandler.txt"));
  // The server's own "Current thread" has no frames and is left out; the main thread is last.
  ASSERT_THAT(threads, SizeIs(2));
  EXPECT_FALSE(threads[0].main);
  EXPECT_TRUE(threads[1].main);
  EXPECT_THAT(threads[0].frames, SizeIs(6));
  EXPECT_EQ(threads[1].frames[0].function, "_create_c10d_store");
  EXPECT_EQ(threads[1].frames[0].line, 199);
  EXPECT_EQ(Stuck(threads), "setup (/home/user/project/train.py:11)");
}

TEST(PythonStackTest, LibraryFiles) {
  EXPECT_TRUE(IsLibraryFile("/usr/lib/python3.11/threading.py"));
  EXPECT_TRUE(IsLibraryFile("/opt/conda/lib/python3.10/queue.py"));
  EXPECT_TRUE(IsLibraryFile("/usr/lib64/python3/json/decoder.py"));
  EXPECT_TRUE(IsLibraryFile("/home/u/venv/lib/python3.11/site-packages/torch/nn/module.py"));
  EXPECT_TRUE(IsLibraryFile("/usr/lib/python3/dist-packages/numpy/core.py"));
  EXPECT_TRUE(IsLibraryFile("<frozen importlib._bootstrap>"));
  EXPECT_FALSE(IsLibraryFile("<string>")) << "python -c";
  EXPECT_FALSE(IsLibraryFile("/home/u/project/train.py"));
  EXPECT_FALSE(IsLibraryFile("/home/u/lib/python_tools/train.py")) << "not lib/pythonX.Y/";
  EXPECT_FALSE(IsLibraryFile("/srv/lib/python3.11.py"));
}

TEST(PythonStackTest, NoUserFrameAnywhere) {
  EXPECT_EQ(Stuck(ParsePySpyDump("Process 7: python3\n\nThread 7 (idle)\n"
                                 "    _shutdown (/usr/lib/python3.11/threading.py:1583)\n")),
            "(none)");
  EXPECT_THAT(ParsePySpyDump("Error: Failed to find python version from target process\n"),
              SizeIs(0));
  EXPECT_THAT(ParseFaultHandlerDump(""), SizeIs(0));
}


// Real dumps of a DDP job (torch 1.13, gloo, two ranks) in which one rank stopped in its own
// code (load_batch, or after its step) while its peer waited for it.
std::string Waiting(const std::vector<PyThread>& threads) {
  std::optional<PyFrame> f = CollectiveWait(threads);
  return f ? DescribeFrame(*f) : "(none)";
}

TEST(PythonStackTest, ARankWaitingForItsPeerInDdpsBackwardWaitsInACollective) {
  const std::vector<PyThread> threads = ParsePySpyDump(Fixture("ddp_backward_wait.py-spy.txt"));
  EXPECT_EQ(Waiting(threads),
            "backward (/usr/lib/python3/dist-packages/torch/autograd/__init__.py:197)");
  EXPECT_EQ(Stuck(threads), "main (/home/user/project/ddp_stall.py:18)");
}

TEST(PythonStackTest, ARankWaitingInAnExplicitAllReduceWaitsInACollective) {
  const std::vector<PyThread> threads = ParsePySpyDump(Fixture("ddp_allreduce_wait.py-spy.txt"));
  EXPECT_EQ(Waiting(threads),
            "all_reduce (/usr/lib/python3/dist-packages/torch/distributed/distributed_c10d.py:1541)");
}

TEST(PythonStackTest, TheRankStoppedInItsOwnCodeIsNotInACollective) {
  const std::vector<PyThread> threads = ParsePySpyDump(Fixture("ddp_load_stall.py-spy.txt"));
  EXPECT_EQ(Waiting(threads), "(none)");
  EXPECT_EQ(Stuck(threads), "load_batch (/home/user/project/ddp_stall.py:7)");
}

TEST(PythonStackTest, InitProcessGroupWaitingForItsPeersIsAWaitToo) {
  // The rendezvous of init_process_group waits on the store for the ranks not there yet.
  EXPECT_EQ(Waiting(ParsePySpyDump(Fixture("torch_init.py-spy.txt"))),
            "_create_c10d_store (/home/user/venv/lib/python3.11/site-packages/torch/distributed/"
            "rendezvous.py:199)");
  // A library frame under the user's innermost frame does not count: the user's code called
  // it and is what runs now.
  PyThread t{"1", "MainThread", true,
             {{"sleep_a_while", "/home/u/train.py", 3},
              {"all_reduce", "/x/site-packages/torch/distributed/distributed_c10d.py", 9}}};
  EXPECT_EQ(Waiting({t}), "(none)");
  // Nor does a plain script's stall, or a data loader's queue.
  EXPECT_EQ(Waiting(ParsePySpyDump(Fixture("plain_stall.py-spy.txt"))), "(none)");
}

TEST(PythonStackTest, GdbsMainThreadShowsTheNativeWaitOfACollective) {
  std::optional<PyFrame> backward =
      NativeCollectiveWait(Fixture("ddp_backward_wait.gdb.txt"), 8809);
  ASSERT_TRUE(backward.has_value());
  EXPECT_EQ(backward->function, "c10d::Reducer::finalize_backward");
  EXPECT_EQ(backward->file, "/lib/x86_64-linux-gnu/libtorch_cpu.so.1.13");
  std::optional<PyFrame> all_reduce =
      NativeCollectiveWait(Fixture("ddp_allreduce_wait.gdb.txt"), 11147);
  ASSERT_TRUE(all_reduce.has_value());
  EXPECT_EQ(all_reduce->function, "c10d::Work::wait");
  // The stopped rank's main thread sleeps in Python; its Gloo threads wait as they always do,
  // and do not count.
  EXPECT_FALSE(NativeCollectiveWait(Fixture("ddp_load_stall.gdb.txt"), 8810).has_value());
  // Another pid's main thread is not in the text.
  EXPECT_FALSE(NativeCollectiveWait(Fixture("ddp_backward_wait.gdb.txt"), 1).has_value());
}

}  // namespace
}  // namespace dlaunch
