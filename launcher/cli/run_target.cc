#include "launcher/cli/run_target.h"

#include <unistd.h>

#include <filesystem>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/file_io.h"
#include "common/process.h"
#include "launcher/spec/yaml_guard.h"

namespace dlaunch {
namespace {

namespace fs = std::filesystem;

// A job.yaml is a few KB; anything over the spec reader's bound cannot be one.
bool HoldsYamlMapping(const std::string& path) {
  std::error_code ec;
  const uintmax_t size = fs::file_size(path, ec);
  if (ec || size > kMaxYamlBytes) return false;
  absl::StatusOr<std::string> text = ReadFile(path);
  return text.ok() && IsYamlMapping(*text);
}

}  // namespace

absl::StatusOr<RunTargetKind> ClassifyRunTarget(const std::string& target,
                                                const std::string& path_var) {
  if (absl::EndsWith(target, ".yaml") || absl::EndsWith(target, ".yml")) {
    return RunTargetKind::kJobSpec;
  }
  std::error_code ec;
  const fs::file_status status = fs::status(target, ec);
  const bool exists = !ec && fs::exists(status);
  if (absl::EndsWith(target, ".py")) {
    if (!exists || fs::is_directory(status)) {
      return absl::InvalidArgumentError(absl::StrCat(target, ": no such Python script"));
    }
    return RunTargetKind::kPythonScript;
  }
  if (exists && fs::is_directory(status)) {
    return absl::InvalidArgumentError(absl::StrCat(
        target, " is a directory: give a job.yaml, a script (train.py) or a command after `--`"));
  }
  if (exists && access(target.c_str(), X_OK) == 0) return RunTargetKind::kProgram;
  if (exists) {
    if (HoldsYamlMapping(target)) return RunTargetKind::kJobSpec;
    return absl::InvalidArgumentError(absl::StrCat(
        target, " is neither a job.yaml (it holds no YAML mapping), a Python script (.py) nor an "
        "executable: say what runs it, e.g. `dlaunch run [options] -- python3 ", target, "`"));
  }
  if (target.find('/') == std::string::npos && !FindProgram(target, path_var).empty()) {
    return RunTargetKind::kProgram;
  }
  return absl::InvalidArgumentError(absl::StrCat(
      target, ": no such file, and no program of that name on PATH: give a job.yaml, a script "
      "(train.py) or a command after `--`"));
}

}  // namespace dlaunch
