#include "launcher/cli/cli_support.h"

#include <filesystem>
#include <iostream>

#include "absl/strings/str_cat.h"
#include "common/exit_codes.h"
#include "launcher/jobdir/job_record.h"

namespace dlaunch {

bool WantsHelp(const std::vector<std::string>& args) {
  for (const auto& a : args) {
    if (a == "--") return false;
    if (a == "-h" || a == "--help") return true;
  }
  return false;
}

int UsageError(const char* usage, const std::string& problem) {
  if (!problem.empty()) std::cerr << "dlaunch: " << problem << "\n";
  std::cerr << usage;
  return kExitUsage;
}

bool ParseCommandFlags(const std::vector<std::string>& args, const std::vector<Flag>& table,
                       size_t max_positional, const char* usage, ParsedArgs* parsed,
                       int* exit_code) {
  std::string problem;
  if (absl::Status st = ParseFlags(args, table, parsed); !st.ok()) {
    problem = std::string(st.message());
  } else if (parsed->saw_dashes) {
    problem = "unexpected '--'";
  } else if (parsed->positional.size() > max_positional) {
    problem = absl::StrCat("unexpected argument '", parsed->positional[max_positional], "'");
  }
  if (problem.empty()) return true;
  *exit_code = UsageError(usage, problem);
  return false;
}

bool ParseJobCommand(const std::vector<std::string>& args, const std::vector<Flag>& table,
                     const char* usage, std::string* job_dir, int* exit_code) {
  ParsedArgs parsed;
  if (!ParseCommandFlags(args, table, 1, usage, &parsed, exit_code)) return false;
  if (parsed.positional.empty()) {
    *exit_code = UsageError(usage, "no job given");
    return false;
  }
  absl::StatusOr<std::string> dir = ResolveJobDir(parsed.positional[0], DefaultJobRoot());
  if (!dir.ok()) {
    std::cerr << "dlaunch: " << dir.status().message() << "\n";
    *exit_code = kExitUsage;
    return false;
  }
  *job_dir = *std::move(dir);
  return true;
}

std::string AbsolutePath(const std::string& path) {
  std::error_code ec;
  return std::filesystem::absolute(path, ec).lexically_normal().string();
}

}  // namespace dlaunch
