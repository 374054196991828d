// What a Python worker command runs: its interpreter, its script, and whether it imports torch.
#include "common/python_command.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace dlaunch {
namespace {

using ::testing::IsEmpty;

std::string TempDir() {
  std::string tmpl = (std::filesystem::temp_directory_path() / "python-command-XXXXXX").string();
  return mkdtemp(tmpl.data());
}

void WriteFile(const std::string& path, const std::string& text) { std::ofstream(path) << text; }

TEST(PythonCommandTest, ProgramNamesOfPython) {
  EXPECT_TRUE(IsPythonProgram("/usr/bin/python3"));
  EXPECT_TRUE(IsPythonProgram("python3.11"));
  EXPECT_FALSE(IsPythonProgram("/usr/bin/pythonista"));
  EXPECT_FALSE(IsPythonProgram("/bin/sleep"));
}

TEST(PythonCommandTest, TorchIsCheckedWhenTheScriptImportsIt) {
  const std::string dir = TempDir();
  WriteFile(dir + "/ddp.py", "import os\nfrom torch import nn\n");
  WriteFile(dir + "/plain.py", "import os\n# import torch: a comment, not an import\n");
  EXPECT_THAT(PythonImportsFor({"python3", "-u", "ddp.py"}, dir), ::testing::ElementsAre("torch"));
  EXPECT_THAT(PythonImportsFor({"python3", "plain.py"}, dir), IsEmpty());
  EXPECT_THAT(PythonImportsFor({"python3", "-m", "torch.distributed.run", "x.py"}, dir),
              ::testing::ElementsAre("torch"));
  EXPECT_THAT(PythonImportsFor({"python3", "-c", "print(1)"}, dir), IsEmpty());
  EXPECT_THAT(PythonImportsFor({"/opt/venv/bin/python3.11", "-c", "import torch"}, dir),
              ::testing::ElementsAre("torch"));
  EXPECT_THAT(PythonImportsFor({"dlaunch-worker", "ddp.py"}, dir), IsEmpty());
  std::filesystem::remove_all(dir);
}

TEST(PythonCommandTest, TheScriptIsTheFirstArgumentThatIsNotAnInterpreterOption) {
  const std::string dir = "/w";
  // -m and -c name no file; -W takes a value of its own.
  EXPECT_EQ(PythonScriptPath({"python3", "-m", "torch.distributed.run"}, dir), "");
  EXPECT_EQ(PythonScriptPath({"python3", "-c", "print(1)"}, dir), "");
  EXPECT_EQ(PythonScriptPath({"python3", "-W", "ignore", "t.py"}, dir), dir + "/t.py");
  EXPECT_EQ(PythonScriptPath({"python3", "/abs/t.py"}, dir), "/abs/t.py");
  EXPECT_EQ(PythonScriptPath({"bash", "t.sh"}, dir), "");
}

}  // namespace
}  // namespace dlaunch
