// The preflight's checks that meet the machine: the command check finds the program on PATH and
// runs Python's imports in the job's directory and environment, cut at the timeout; the ports
// check binds the port it asks about.
#include "agent/health/preflight.h"

#include <netinet/in.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/agent/preflight_plans.h"

namespace dlaunch {
namespace {

using ::testing::HasSubstr;

std::string TempDir() {
  std::string tmpl = (std::filesystem::temp_directory_path() / "preflight-test-XXXXXX").string();
  char* made = mkdtemp(tmpl.data());
  return made ? made : "";
}

void WriteFile(const std::string& path, const std::string& text) {
  std::ofstream(path) << text;
}

using preflight_testing::CommandPlan;

TEST(PreflightCommandTest, AProgramNotOnPathFails) {
  v1::CheckResult r =
      CheckCommand(CommandPlan({"no-such-program-xyz"}, "/"), {{"PATH", "/usr/bin:/bin"}});
  EXPECT_EQ(r.verdict(), v1::CheckResult::FAILED);
  EXPECT_EQ(r.detail(), "no-such-program-xyz: not found or not executable on PATH");
  EXPECT_EQ(CheckCommand(CommandPlan({"true"}, "/"), {{"PATH", "/usr/bin:/bin"}}).verdict(),
            v1::CheckResult::PASSED);
}

TEST(PreflightCommandTest, AMissingWorkingDirectoryFails) {
  v1::CheckResult r = CheckCommand(CommandPlan({"true"}, "/no/such/dir"), {{"PATH", "/usr/bin"}});
  EXPECT_EQ(r.verdict(), v1::CheckResult::FAILED);
  EXPECT_THAT(r.detail(), HasSubstr("/no/such/dir does not exist"));
}

TEST(PreflightCommandTest, PythonThatCannotImportAModuleFailsWithTheException) {
  const std::string dir = TempDir();
  WriteFile(dir + "/train.py", "\n");
  v1::CheckResult r = CheckCommand(
      CommandPlan({"python3", "train.py"}, dir, {"no_such_mod_xyz"}, /*import_them=*/true),
      {{"PATH", "/usr/bin:/bin"}});
  EXPECT_EQ(r.verdict(), v1::CheckResult::FAILED);
  EXPECT_THAT(r.detail(), HasSubstr("import no_such_mod_xyz"));
  // Named as the interpreter the ranks will run, not as the spec spelled it.
  EXPECT_THAT(r.detail(), ::testing::StartsWith("/usr/bin/python3 -c 'import no_such_mod_xyz'"));
  EXPECT_THAT(r.detail(), HasSubstr("ModuleNotFoundError: No module named 'no_such_mod_xyz'"));
  std::filesystem::remove_all(dir);
}

TEST(PreflightCommandTest, PythonImportsRunInTheJobsWorkdirAndEnvironment) {
  const std::string dir = TempDir();
  WriteFile(dir + "/site_mod.py", "VALUE = 1\n");
  WriteFile(dir + "/train.py", "\n");
  v1::CheckResult r = CheckCommand(
      CommandPlan({"python3", "train.py"}, dir, {"site_mod"}, /*import_them=*/true),
      {{"PATH", "/usr/bin:/bin"}, {"PYTHONPATH", dir}});
  EXPECT_EQ(r.verdict(), v1::CheckResult::PASSED) << r.detail();
  EXPECT_THAT(r.detail(), HasSubstr("Python 3."));
  EXPECT_THAT(r.detail(), HasSubstr("import site_mod in "));
  std::filesystem::remove_all(dir);
}

// By default the modules are found, never run: the ranks pay torch's import once, not twice.
TEST(PreflightCommandTest, PythonLooksForItsModulesWithoutRunningThem) {
  const std::string dir = TempDir();
  const std::string marker = dir + "/module-ran";
  // Importing either would leave the marker, and the second hangs past the check's timeout.
  WriteFile(dir + "/site_mod.py", "open('" + marker + "', 'w')\n");
  std::filesystem::create_directories(dir + "/site_pkg/sub");
  WriteFile(dir + "/site_pkg/__init__.py", "open('" + marker + "', 'w')\nimport time\ntime.sleep(60)\n");
  WriteFile(dir + "/site_pkg/sub/__init__.py", "\n");
  WriteFile(dir + "/train.py", "\n");
  v1::PreflightPlan plan =
      CommandPlan({"python3", "train.py"}, dir, {"site_mod", "site_pkg.sub", "os.path"});
  plan.set_timeout_ms(10000);
  v1::CheckResult r = CheckCommand(plan, {{"PATH", "/usr/bin:/bin"}, {"PYTHONPATH", dir}});
  EXPECT_EQ(r.verdict(), v1::CheckResult::PASSED) << r.detail();
  EXPECT_THAT(r.detail(), ::testing::MatchesRegex(
                              "/usr/bin/python3: Python 3\\.[0-9.]+, found site_mod, site_pkg\\.sub, "
                              "os\\.path \\(not imported\\) in [0-9.]+ s"));
  EXPECT_FALSE(std::filesystem::exists(marker));

  // A submodule that is not there fails as the import would, naming what was looked for.
  r = CheckCommand(CommandPlan({"python3", "train.py"}, dir, {"site_pkg.nope", "no_such_mod_xyz"}),
                   {{"PATH", "/usr/bin:/bin"}, {"PYTHONPATH", dir}});
  EXPECT_EQ(r.verdict(), v1::CheckResult::FAILED);
  EXPECT_EQ(r.detail(), "/usr/bin/python3 looking for site_pkg.nope, no_such_mod_xyz (without "
                        "importing) failed (exit 1): ModuleNotFoundError: No module named "
                        "'site_pkg.nope'");
  EXPECT_FALSE(std::filesystem::exists(marker));
  std::filesystem::remove_all(dir);
}

// torch is found with its version, and a torch whose compiled core is missing is refused.
TEST(PreflightCommandTest, TorchIsFoundWithItsVersionAndNeedsItsCompiledCore) {
  const std::string dir = TempDir();
  WriteFile(dir + "/train.py", "import torch\n");
  const EnvMap env = {{"PATH", "/usr/bin:/bin"}};
  // Debian's python3-torch, where it is installed (importing it to find out costs seconds).
  if (std::filesystem::exists("/usr/lib/python3/dist-packages/torch/__init__.py")) {
    v1::CheckResult r = CheckCommand(CommandPlan({"python3", "train.py"}, dir, {"torch"}), env);
    EXPECT_EQ(r.verdict(), v1::CheckResult::PASSED) << r.detail();
    EXPECT_THAT(r.detail(), ::testing::ContainsRegex("found torch [0-9]+\\.[0-9]+"));
  }
  std::filesystem::create_directories(dir + "/fake/torch");
  WriteFile(dir + "/fake/torch/__init__.py", "\n");
  v1::CheckResult r = CheckCommand(CommandPlan({"python3", "train.py"}, dir, {"torch"}),
                                   {{"PATH", "/usr/bin:/bin"}, {"PYTHONPATH", dir + "/fake"}});
  EXPECT_EQ(r.verdict(), v1::CheckResult::FAILED) << r.detail();
  EXPECT_THAT(r.detail(), HasSubstr("ModuleNotFoundError: No module named 'torch._C'"));
  std::filesystem::remove_all(dir);
}

TEST(PreflightCommandTest, APythonScriptThatIsNotThereFails) {
  const std::string dir = TempDir();
  v1::CheckResult r = CheckCommand(CommandPlan({"python3", "-u", "train.py", "--epochs", "3"}, dir),
                                   {{"PATH", "/usr/bin:/bin"}});
  EXPECT_EQ(r.verdict(), v1::CheckResult::FAILED);
  EXPECT_EQ(r.detail(), "/usr/bin/python3 " + dir + "/train.py: no such file");
  std::filesystem::create_directory(dir + "/train.py");
  EXPECT_THAT(CheckCommand(CommandPlan({"python3", "train.py"}, dir), {{"PATH", "/usr/bin:/bin"}}).detail(),
              HasSubstr("train.py: not a regular file"));
  std::filesystem::remove_all(dir);
}

TEST(PreflightCommandTest, AnImportThatHangsIsCutAtTheTimeout) {
  const std::string dir = TempDir();
  WriteFile(dir + "/slow_mod.py", "import time\ntime.sleep(60)\n");
  WriteFile(dir + "/train.py", "\n");
  v1::PreflightPlan plan = CommandPlan({"python3", "train.py"}, dir, {"slow_mod"}, true);
  plan.set_timeout_ms(1000);
  const auto start = std::chrono::steady_clock::now();
  v1::CheckResult r = CheckCommand(plan, {{"PATH", "/usr/bin:/bin"}, {"PYTHONPATH", dir}});
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(30));
  EXPECT_EQ(r.verdict(), v1::CheckResult::FAILED);
  EXPECT_THAT(r.detail(), HasSubstr("did not finish within 1 s"));
  std::filesystem::remove_all(dir);
}

TEST(PreflightPortsTest, APortAnotherProcessListensOnFails) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_ANY);
  ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  ASSERT_EQ(listen(fd, 1), 0);
  socklen_t len = sizeof(addr);
  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  const int port = ntohs(addr.sin_port);
  v1::CheckResult taken = CheckPorts({port});
  EXPECT_EQ(taken.verdict(), v1::CheckResult::FAILED);
  EXPECT_THAT(taken.detail(), HasSubstr("port " + std::to_string(port) + " is in use"));
  close(fd);
  EXPECT_EQ(CheckPorts({port}).verdict(), v1::CheckResult::PASSED);
  EXPECT_EQ(CheckPorts({}).verdict(), v1::CheckResult::SKIPPED);
}

}  // namespace
}  // namespace dlaunch
