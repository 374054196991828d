// SpecReader: reads one YAML document into a JobSpec, collecting every problem (with its
// position) instead of stopping at the first. Internal to the spec library; ParseJobSpec
// (job_spec_parser.h) is the public entry.
#pragma once

#include <yaml-cpp/yaml.h>

#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "launcher/spec/job_spec.h"

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

// Reads one document into a JobSpec, collecting every problem instead of stopping at the first.
class SpecReader {
 public:
  void Read(const YAML::Node& root, JobSpec* spec);
  std::vector<SpecReadProblem>& problems() { return problems_; }

 private:
  void Report(const YAML::Mark& mark, const std::string& path, std::string message) {
    problems_.push_back({mark, std::move(message)});
    if (!path.empty()) bad_paths_.insert(path);
  }
  void WrongType(const SpecField& field, absl::string_view expected);
  std::map<std::string, SpecField> Fields(const YAML::Node& map, const std::string& section,
                                      const YAML::Mark& map_mark);
  bool Scalar(const SpecField& field, absl::string_view expected, std::string* out);
  void String(const SpecField& field, std::string* out);
  void Int(const SpecField& field, int* out);
  void Duration(const SpecField& field, double* out);
  // A duration, or one of `words` (e.g. "off"), which sets *out to that word's value and
  // *word to the word ("" for a duration).
  void DurationOrWord(const SpecField& field, const std::map<std::string, double>& words,
                      double* out, std::string* word);
  void StringList(const SpecField& field, std::vector<std::string>* out, bool split_command);
  void StringMap(const SpecField& field, std::map<std::string, std::string>* out);
  void Nodes(const SpecField& field, JobSpec* spec);
  void NprocPerNode(const SpecField& field, JobSpec* spec);
  void Hosts(const SpecField& field, JobSpec* spec);
  void Ranks(const SpecField& field, JobSpec* spec);
  void Scheduler(const SpecField& field, SchedulerSpec* scheduler);
  void Cpus(const SpecField& field, JobSpec* spec);
  void CpuMap(const SpecField& field, std::vector<CpuMapEntry>* map);
  void CpuList(const SpecField& field, std::vector<int>* cpus);
  void ScaleList(const SpecField& field, std::vector<int>* counts);
  void CheckValues(const JobSpec& spec, const YAML::Mark& root_mark);

  std::vector<SpecReadProblem> problems_;
  std::map<std::string, YAML::Mark> marks_;  // every path read, for placing value problems
  std::set<std::string> bad_paths_;          // paths already reported, not to report twice
};

}  // namespace dlaunch
