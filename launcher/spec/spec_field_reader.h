// SpecFieldReader: reads typed values out of YAML nodes, keeping the position of every key it
// meets and collecting each problem with its place instead of stopping at the first. The base
// that SpecReader builds the job's sections from (internal to the spec library).
#pragma once

#include <yaml-cpp/yaml.h>

#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "launcher/spec/job_spec_checks.h"

namespace dlaunch {

// One key of a mapping as the reader met it.
struct SpecField {
  std::string path;
  YAML::Node value;
  YAML::Mark mark;  // where the value is, or its key when the value is left empty
};

// A problem found while reading, placed in the file.
struct SpecReadProblem {
  YAML::Mark mark;
  std::string message;
};

// How a value is named in "got ..." messages: nothing, a list, a mapping, 8 or "text".
std::string DescribeYamlValue(const YAML::Node& node);

// Each method reads one field into *out, or reports why it cannot and leaves *out as it was.
class SpecFieldReader {
 public:
  std::vector<SpecReadProblem>& problems() { return problems_; }

 protected:
  // `path`, when given, is not reported again by the value checks.
  void Report(const YAML::Mark& mark, const std::string& path, std::string message) {
    problems_.push_back({mark, std::move(message)});
    if (!path.empty()) bad_paths_.insert(path);
  }
  // Remembers where `path` is written, for placing the value checks' problems.
  void Place(const std::string& path, const YAML::Mark& mark) { marks_[path] = mark; }
  void WrongType(const SpecField& field, absl::string_view expected);
  // The keys of `section` (a key of SchemaKeys()) found in `map`; unknown and repeated keys are
  // reported, with the key meant where one is near.
  std::map<std::string, SpecField> Fields(const YAML::Node& map, const std::string& section,
                                          const YAML::Mark& map_mark);
  bool Scalar(const SpecField& field, absl::string_view expected, std::string* out);
  void String(const SpecField& field, std::string* out);
  void Int(const SpecField& field, int* out);
  void Duration(const SpecField& field, double* out);
  void Number(const SpecField& field, double* out);
  void ByteSize(const SpecField& field, int64_t* out);
  // A duration, or one of `words` (e.g. "off"), which sets *out to that word's value and
  // *word to the word ("" for a duration).
  void DurationOrWord(const SpecField& field, const std::map<std::string, double>& words,
                      double* out, std::string* word);
  // One of `words`, with the word meant when the value is near one.
  bool OneOf(const SpecField& field, const std::vector<std::string>& words, std::string* out);
  void StringList(const SpecField& field, std::vector<std::string>* out, bool split_command);
  void StringMap(const SpecField& field, std::map<std::string, std::string>* out);
  // Places each problem of the value checks at its key's position, else at its nearest written
  // parent's, else at `root_mark`; a path already reported while reading is not reported again.
  void ReportChecked(const std::vector<SpecProblem>& checked, const YAML::Mark& root_mark);

 private:
  std::vector<SpecReadProblem> problems_;
  std::map<std::string, YAML::Mark> marks_;  // every path read, for placing value problems
  std::set<std::string> bad_paths_;          // paths already reported, not to report twice
};

}  // namespace dlaunch
