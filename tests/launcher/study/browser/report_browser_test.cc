// report.html of a real `dlaunch scale` opened in Debian's headless Chromium: the page loads
// and every plot image is there and decoded (naturalWidth > 0), read back from the DOM.
#include <unistd.h>

#include <filesystem>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "common/command_runner.h"
#include "common/file_io.h"

namespace dlaunch {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::Not;

// Debian ships the headless shell as its own package; the full browser also runs headless.
std::string FindChromium() {
  for (const char* p : {"/usr/bin/chromium-headless-shell", "/usr/bin/chromium"}) {
    if (access(p, X_OK) == 0) return p;
  }
  return "";
}

// Appended to a copy of the report: after load, lists each image with its decoded size.
constexpr char kImageCheck[] = R"(<script>
window.addEventListener('load', () => {
  const out = document.createElement('pre');
  out.id = 'image-check';
  const imgs = Array.from(document.images);
  out.textContent = 'images=' + imgs.length + '\n' + imgs.map(i =>
      i.getAttribute('src') + ' ' + (i.complete && i.naturalWidth > 0 ? 'decoded ' +
      i.naturalWidth + 'x' + i.naturalHeight : 'BROKEN')).join('\n');
  document.body.appendChild(out);
});
</script>
</body>)";

TEST(ReportBrowserTest, ReportLoadsWithEveryPlotDecoded) {
  const std::string chromium = FindChromium();
  if (chromium.empty()) {
    GTEST_SKIP() << "no headless Chromium (install chromium-headless-shell: "
                    "scripts/install-deps.sh test)";
  }
  const std::string bin = DLAUNCH_BIN_DIR;
  if (access((bin + "/dlaunch-worker").c_str(), X_OK) != 0) {
    GTEST_SKIP() << "dlaunch-worker is not built (LibTorch missing)";
  }
  std::string tmpl = (fs::temp_directory_path() / "dlaunch-report-XXXXXX").string();
  const std::string dir = ::mkdtemp(tmpl.data());
  ASSERT_TRUE(WriteFileAtomically(
      dir + "/job.yaml",
      "name: report-test\nnodes: 1\nlauncher: local\n"
      "command: [dlaunch-worker, --model, mlp, --dataset, synthetic, --synthetic-samples, 128,"
      " --epochs, 2, --batch-size, 16, --report-every, 2]\n",
      {.fsync = false}).ok());
  absl::StatusOr<CommandResult> study = RunCommand(
      {"env", "-C", dir, bin + "/dlaunch", "scale", "job.yaml", "--procs", "1,2", "--job-dir",
       "study"},
      600);
  ASSERT_TRUE(study.ok()) << study.status();
  ASSERT_EQ(study->exit_code, 0) << study->out << study->err;

  absl::StatusOr<std::string> report = ReadFile(dir + "/study/report.html");
  ASSERT_TRUE(report.ok()) << report.status();
  const std::string page = dir + "/study/report-check.html";
  ASSERT_TRUE(WriteFileAtomically(page, absl::StrReplaceAll(*report, {{"</body>", kImageCheck}}),
                                  {.fsync = false}).ok());
  // --no-sandbox: tests run as root in CI, where Chromium's sandbox refuses to start.
  absl::StatusOr<CommandResult> dom = RunCommand(
      {chromium, "--headless", "--no-sandbox", "--disable-gpu", "--allow-file-access-from-files",
       "--virtual-time-budget=10000", "--user-data-dir=" + dir + "/chromium-profile", "--dump-dom",
       "file://" + page},
      120);
  ASSERT_TRUE(dom.ok()) << dom.status();
  ASSERT_EQ(dom->exit_code, 0) << dom->err;
  EXPECT_THAT(dom->out, HasSubstr("<h1>Scaling study study</h1>"));
  EXPECT_THAT(dom->out, HasSubstr("<td>n1-p2</td>"));
  // What the check script wrote into the page after load (the script's own text names BROKEN).
  const size_t at = dom->out.find("<pre id=\"image-check\">");
  ASSERT_NE(at, std::string::npos) << "the page did not finish loading:\n" << dom->out;
  const std::string check = dom->out.substr(at, dom->out.find("</pre>", at) - at);
  EXPECT_THAT(check, HasSubstr("images=4\n"));
  for (const char* plot : {"throughput", "efficiency", "accuracy", "loss"}) {
    EXPECT_THAT(check, HasSubstr(absl::StrCat(plot, ".png decoded 800x500"))) << check;
  }
  EXPECT_THAT(check, Not(HasSubstr("BROKEN")));
  std::error_code ec;
  fs::remove_all(dir, ec);
}

}  // namespace
}  // namespace dlaunch
