#include "launcher/spec/job_spec_parser.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "launcher/spec/spec_reader.h"
#include "launcher/spec/yaml_guard.h"

namespace dlaunch {

absl::StatusOr<JobSpec> ParseJobSpec(const std::string& yaml_text, const std::string& file_name) {
  JobSpec spec;
  spec.source_path = file_name;
  if (absl::Status single = CheckYamlDocument(yaml_text, file_name); !single.ok()) {
    return single;
  }
  YAML::Node document;
  try {
    document = YAML::Load(yaml_text);
  } catch (const YAML::Exception& e) {
    return YamlExceptionStatus(file_name, e);
  }
  SpecReader reader;
  try {
    reader.Read(document, &spec);
  } catch (const YAML::Exception& e) {
    // Not a syntax error: the document loaded, a value then could not be converted.
    return absl::InvalidArgumentError(absl::StrCat(YamlPosition(file_name, e.mark), e.msg));
  }
  std::vector<SpecReadProblem>& problems = reader.problems();
  if (problems.empty()) return spec;
  std::stable_sort(problems.begin(), problems.end(),
                   [](const SpecReadProblem& a, const SpecReadProblem& b) {
    const int a_line = a.mark.is_null() ? 0 : a.mark.line;
    const int b_line = b.mark.is_null() ? 0 : b.mark.line;
    if (a_line != b_line) return a_line < b_line;
    return (a.mark.is_null() ? 0 : a.mark.column) < (b.mark.is_null() ? 0 : b.mark.column);
  });
  std::vector<std::string> lines;
  for (const SpecReadProblem& problem : problems) {
    lines.push_back(absl::StrCat(YamlPosition(file_name, problem.mark), problem.message));
  }
  return absl::InvalidArgumentError(absl::StrJoin(lines, "\n"));
}

absl::StatusOr<JobSpec> LoadJobSpec(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return absl::NotFoundError(
        absl::StrCat("cannot read job file '", path, "': ", std::strerror(errno)));
  }
  // One byte past the bound is enough to refuse a file too large, without reading all of it.
  std::string text(kMaxYamlBytes + 1, '\0');
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  text.resize(static_cast<size_t>(in.gcount()));
  if (text.size() > kMaxYamlBytes) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": more than the ", kMaxYamlBytes,
                                                   " bytes (", kMaxYamlBytes >> 10,
                                                   " KiB) a job file may hold"));
  }
  return ParseJobSpec(text, path);
}

}  // namespace dlaunch
