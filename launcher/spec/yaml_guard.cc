#include "launcher/spec/yaml_guard.h"

#include <yaml-cpp/eventhandler.h>

#include <algorithm>
#include <map>
#include <sstream>
#include <vector>

#include "absl/strings/str_cat.h"

namespace dlaunch {
namespace {

// Thrown out of the event handler to stop the parse at the first bound passed.
struct OverBound {
  YAML::Mark mark;
  std::string message;
};

// Sees where documents start, how deep they nest and how many values they hold once aliases
// are expanded (each anchor's expanded size is remembered for its aliases). yaml-cpp 0.7's
// LoadAll never returns on some malformed input (a stray ',' in block context yields an empty
// document forever, allocating as it goes).
class DocumentShape : public YAML::EventHandler {
 public:
  std::vector<YAML::Mark> starts;

  void OnDocumentStart(const YAML::Mark& mark) override {
    starts.push_back(mark);
    open_.clear();
    anchor_values_.clear();
  }
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark& mark, YAML::anchor_t anchor) override { Add(mark, 1, anchor); }
  void OnAlias(const YAML::Mark& mark, YAML::anchor_t anchor) override {
    const auto found = anchor_values_.find(anchor);
    Add(mark, found == anchor_values_.end() ? 1 : found->second, 0);
  }
  void OnScalar(const YAML::Mark& mark, const std::string&, YAML::anchor_t anchor,
                const std::string&) override {
    Add(mark, 1, anchor);
  }
  void OnSequenceStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t anchor,
                       YAML::EmitterStyle::value) override {
    Open(mark, anchor);
  }
  void OnSequenceEnd() override { Close(); }
  void OnMapStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t anchor,
                  YAML::EmitterStyle::value) override {
    Open(mark, anchor);
  }
  void OnMapEnd() override { Close(); }

 private:
  struct Collection {
    YAML::Mark mark;
    YAML::anchor_t anchor;
    size_t values;  // itself and everything in it, aliases expanded
  };

  void Open(const YAML::Mark& mark, YAML::anchor_t anchor) {
    if (open_.size() >= static_cast<size_t>(kMaxYamlDepth)) {
      throw OverBound{mark, absl::StrCat("lists and mappings nest more than ", kMaxYamlDepth,
                                         " levels deep")};
    }
    open_.push_back({mark, anchor, 1});
  }
  void Close() {
    if (open_.empty()) return;
    const Collection done = open_.back();
    open_.pop_back();
    Add(done.mark, done.values, done.anchor);
  }
  // A value of `values` values (1 for a scalar) ends at `mark`.
  void Add(const YAML::Mark& mark, size_t values, YAML::anchor_t anchor) {
    if (anchor != 0) anchor_values_[anchor] = values;
    const size_t total = open_.empty() ? values : (open_.back().values += values);
    if (total > kMaxYamlValues) {
      throw OverBound{mark, absl::StrCat("the document holds more than ", kMaxYamlValues,
                                         " values once its aliases are expanded")};
    }
  }

  std::vector<Collection> open_;
  std::map<YAML::anchor_t, size_t> anchor_values_;
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

absl::Status CheckYamlDocument(const std::string& yaml_text, const std::string& file_name,
                               const std::string& what) {
  if (yaml_text.size() > kMaxYamlBytes) {
    return absl::InvalidArgumentError(absl::StrCat(
        file_name, ": ", yaml_text.size(), " bytes is more than the ", kMaxYamlBytes,
        " bytes (", kMaxYamlBytes >> 10, " KiB) ", what, " may hold"));
  }
  try {
    std::istringstream stream(yaml_text);
    YAML::Parser parser(stream);
    DocumentShape documents;
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
          what, " holds one YAML document, found a second one here"));
    }
  } catch (const OverBound& over) {
    return absl::InvalidArgumentError(
        absl::StrCat(YamlPosition(file_name, over.mark), over.message));
  } catch (const YAML::Exception& e) {
    return YamlExceptionStatus(file_name, e);
  }
  return absl::OkStatus();
}

bool IsYamlMapping(const std::string& yaml_text) {
  if (!CheckYamlDocument(yaml_text, "").ok()) return false;
  try {
    return YAML::Load(yaml_text).IsMap();
  } catch (const YAML::Exception&) {
    return false;
  }
}

}  // namespace dlaunch
