#include "agent/workers/torch_error_file.h"

#include <gtest/gtest.h>

namespace dlaunch {
namespace {

// What torch 1.13 and 2.x write (ErrorHandler.record_exception), with a real traceback.
constexpr char kRecorded[] = R"({"message": {"message": "RuntimeError: batch 3 is corrupt",
  "extraInfo": {"py_callstack": "Traceback (most recent call last):\n  File \"/usr/lib/python3/dist-packages/torch/distributed/elastic/multiprocessing/errors/__init__.py\", line 346, in wrapper\n    return f(*args, **kwargs)\n  File \"/job/train.py\", line 18, in main\n    load_batch(step)\n  File \"/job/train.py\", line 11, in load_batch\n    raise RuntimeError(f\"batch {step} is corrupt\")\nRuntimeError: batch 3 is corrupt\n",
  "timestamp": "1795733000"}}})";

TEST(TorchErrorFileTest, NamesTheExceptionAndItsInnermostFrame) {
  EXPECT_EQ(SummarizeTorchErrorFile(kRecorded),
            "RuntimeError: batch 3 is corrupt (at /job/train.py:11, in load_batch)");
}

TEST(TorchErrorFileTest, ReadsTheOtherFormsAndRefusesWhatIsNotOne) {
  // A message as a plain string (torch's C++ side), and a message without a traceback.
  EXPECT_EQ(SummarizeTorchErrorFile(R"({"message": "Traceback ...\nValueError: x\n"})"),
            "ValueError: x");
  EXPECT_EQ(SummarizeTorchErrorFile(R"({"message": {"message": "KeyError: 'lr'"}})"),
            "KeyError: 'lr'");
  // The exception taken from the traceback when the message is empty.
  EXPECT_EQ(SummarizeTorchErrorFile(
                R"({"message": {"message": "", "extraInfo": {"py_callstack": "  File \"a.py\", line 2, in f\nOSError: disk\n"}}})"),
            "OSError: disk (at a.py:2, in f)");
  for (const char* bad : {"", "not json", "[1, 2]", R"({"other": 1})", R"({"message": 7})",
                          R"({"message": {"message": ""}})"}) {
    EXPECT_EQ(SummarizeTorchErrorFile(bad), "") << bad;
  }
  EXPECT_EQ(ReadTorchError("/nonexistent-job-dir", 3), "");
  EXPECT_EQ(RankErrorFilePath("/runs/j", 6), "/runs/j/errors/rank-6.json");
}

}  // namespace
}  // namespace dlaunch
