#include "common/python_command.h"

#include <filesystem>
#include <fstream>
#include <optional>
#include <regex>

#include "absl/strings/match.h"

namespace dlaunch {
namespace {

bool UsesTorch(const std::string& code) {
  static const std::regex kImport(R"((^|\n)\s*(import|from)\s+torch\b)");
  return std::regex_search(code, kImport);
}

// Where a Python command names what it runs: the index of its script, or of -m / -c.
std::optional<size_t> PythonTargetIndex(const std::vector<std::string>& argv) {
  if (argv.empty() || !IsPythonProgram(argv[0])) return std::nullopt;
  for (size_t i = 1; i < argv.size(); ++i) {
    const std::string& a = argv[i];
    if (a == "-m" || a == "-c") return i + 1 < argv.size() ? std::optional<size_t>(i) : std::nullopt;
    if (a == "-W" || a == "-X") {  // interpreter options with a value of their own
      ++i;
      continue;
    }
    if (a == "-") return std::nullopt;        // the program on standard input
    if (a.empty() || a[0] == '-') continue;  // interpreter flags (-u, -O, ...)
    return i;
  }
  return std::nullopt;
}

}  // namespace

bool IsPythonProgram(const std::string& program) {
  const std::string base = std::filesystem::path(program).filename().string();
  static const std::regex kPython(R"(python[0-9.]*)");
  return std::regex_match(base, kPython);
}

std::string PythonScriptPath(const std::vector<std::string>& argv, const std::string& workdir) {
  std::optional<size_t> i = PythonTargetIndex(argv);
  if (!i || argv[*i] == "-m" || argv[*i] == "-c") return "";
  const std::string& a = argv[*i];
  return a[0] == '/' || workdir.empty() ? a : workdir + "/" + a;
}

std::vector<std::string> PythonImportsFor(const std::vector<std::string>& argv,
                                          const std::string& workdir) {
  std::optional<size_t> i = PythonTargetIndex(argv);
  if (!i) return {};
  const std::string& a = argv[*i];
  if (a == "-m" || a == "-c") {
    const std::string& what = argv[*i + 1];
    const bool torch = a == "-m" ? absl::StartsWith(what, "torch") : UsesTorch(what);
    return torch ? std::vector<std::string>{"torch"} : std::vector<std::string>{};
  }
  std::ifstream in(PythonScriptPath(argv, workdir));
  std::string head(64 * 1024, '\0');
  in.read(head.data(), static_cast<std::streamsize>(head.size()));
  head.resize(static_cast<size_t>(in.gcount()));
  return UsesTorch(head) ? std::vector<std::string>{"torch"} : std::vector<std::string>{};
}

}  // namespace dlaunch
