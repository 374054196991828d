#include "launcher/spec/yaml_guard.h"

#include <yaml-cpp/eventhandler.h>

#include <sstream>
#include <vector>

#include "absl/strings/str_cat.h"

namespace dlaunch {
namespace {

// Sees only where documents start. yaml-cpp 0.7's LoadAll never returns on some malformed
// input (a stray ',' in block context yields an empty document forever, allocating as it goes).
class DocumentStarts : public YAML::EventHandler {
 public:
  std::vector<YAML::Mark> starts;

  void OnDocumentStart(const YAML::Mark& mark) override { starts.push_back(mark); }
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark&, YAML::anchor_t) override {}
  void OnAlias(const YAML::Mark&, YAML::anchor_t) override {}
  void OnScalar(const YAML::Mark&, const std::string&, YAML::anchor_t,
                const std::string&) override {}
  void OnSequenceStart(const YAML::Mark&, const std::string&, YAML::anchor_t,
                       YAML::EmitterStyle::value) override {}
  void OnSequenceEnd() override {}
  void OnMapStart(const YAML::Mark&, const std::string&, YAML::anchor_t,
                  YAML::EmitterStyle::value) override {}
  void OnMapEnd() override {}
};

}  // namespace

std::string YamlPosition(const std::string& file_name, const YAML::Mark& mark) {
  const int line = mark.is_null() ? 1 : mark.line + 1;
  const int column = mark.is_null() ? 1 : mark.column + 1;
  return absl::StrCat(file_name, ":", line, ":", column, ": ");
}

absl::Status YamlExceptionStatus(const std::string& file_name, const YAML::Exception& e) {
  if (dynamic_cast<const YAML::ParserException*>(&e) != nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat(YamlPosition(file_name, e.mark), "YAML syntax error: ", e.msg));
  }
  return absl::InvalidArgumentError(absl::StrCat(YamlPosition(file_name, e.mark), e.msg));
}

absl::Status CheckSingleDocument(const std::string& yaml_text, const std::string& file_name) {
  try {
    std::istringstream stream(yaml_text);
    YAML::Parser parser(stream);
    DocumentStarts documents;
    // Two documents are enough to know the file is wrong; a document that starts where the
    // previous one did means the parser is stuck on a character it cannot use.
    while (documents.starts.size() < 3 && parser.HandleNextDocument(documents)) {
      const size_t n = documents.starts.size();
      if (n >= 2 && documents.starts[n - 1].pos == documents.starts[n - 2].pos) {
        const YAML::Mark& stuck = documents.starts[n - 1];
        const size_t pos = static_cast<size_t>(stuck.pos);
        return absl::InvalidArgumentError(absl::StrCat(
            YamlPosition(file_name, stuck), "YAML syntax error: unexpected '",
            pos < yaml_text.size() ? yaml_text.substr(pos, 1) : std::string(), "'"));
      }
    }
    if (documents.starts.size() > 1) {
      return absl::InvalidArgumentError(absl::StrCat(
          YamlPosition(file_name, documents.starts[1]),
          "a job file holds one YAML document, found a second one here"));
    }
  } catch (const YAML::Exception& e) {
    return YamlExceptionStatus(file_name, e);
  }
  return absl::OkStatus();
}

}  // namespace dlaunch
