#include "launcher/spec/spec_field_reader.h"

#include <algorithm>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/did_you_mean.h"
#include "launcher/spec/job_spec_schema.h"
#include "launcher/spec/spec_scalars.h"

namespace dlaunch {
namespace {

using Keys = std::vector<std::string>;

std::string Join(const std::string& section, const std::string& key) {
  return section.empty() ? key : absl::StrCat(section, ".", key);
}

bool LooksNumeric(const std::string& text) {
  double ignored;
  return absl::SimpleAtod(text, &ignored);
}

// "unknown key 'x' in 'section'", with the key probably meant: a near name, a name from another
// tool, or the same key of another section ("port" at the top is rendezvous.port).
std::string UnknownKeyMessage(const std::string& name, const std::string& section,
                              const Keys& allowed) {
  std::string where = section.empty() ? "" : absl::StrCat(" in '", section, "'");
  std::string suggestion = ClosestMatch(name, allowed);
  if (suggestion.empty() && section.empty()) {
    if (auto alias = KnownAliases().find(name); alias != KnownAliases().end()) {
      suggestion = alias->second;
    }
  }
  if (suggestion.empty()) {
    for (const auto& [other, keys] : SchemaKeys()) {
      if (other != section && std::find(keys.begin(), keys.end(), name) != keys.end()) {
        suggestion = Join(other, name);
        break;
      }
    }
  }
  std::string message = absl::StrCat("unknown key '", name, "'", where);
  if (!suggestion.empty()) absl::StrAppend(&message, " (did you mean '", suggestion, "'?)");
  return message;
}

}  // namespace

std::string DescribeYamlValue(const YAML::Node& node) {
  switch (node.Type()) {
    case YAML::NodeType::Null:
    case YAML::NodeType::Undefined:
      return "nothing";
    case YAML::NodeType::Sequence:
      return "a list";
    case YAML::NodeType::Map:
      return "a mapping";
    case YAML::NodeType::Scalar:
      if (node.Tag() != "!" && LooksNumeric(node.Scalar())) return node.Scalar();
      return absl::StrCat("\"", node.Scalar(), "\"");
  }
  return "?";
}

void SpecFieldReader::WrongType(const SpecField& field, absl::string_view expected) {
  Report(field.mark, field.path,
         absl::StrCat(field.path, " must be ", expected, ", got ", DescribeYamlValue(field.value)));
}

std::map<std::string, SpecField> SpecFieldReader::Fields(const YAML::Node& map,
                                                         const std::string& section,
                                                         const YAML::Mark& map_mark) {
  std::map<std::string, SpecField> fields;
  if (map.IsNull()) return fields;
  const Keys& allowed = SchemaKeys().at(section);
  if (!map.IsMap()) {
    SpecField whole{section, map, map_mark};
    WrongType(whole, absl::StrCat("a mapping with keys ", absl::StrJoin(allowed, ", ")));
    return fields;
  }
  for (const auto& entry : map) {
    const YAML::Node& key = entry.first;
    const YAML::Node& value = entry.second;
    if (!key.IsScalar()) {
      Report(key.Mark(), "", "keys must be plain names");
      continue;
    }
    const std::string name = key.Scalar();
    const std::string path = Join(section, name);
    if (std::find(allowed.begin(), allowed.end(), name) == allowed.end()) {
      Report(key.Mark(), "", UnknownKeyMessage(name, section, allowed));
      continue;
    }
    if (auto first = fields.find(name); first != fields.end()) {
      Report(key.Mark(), "",
             absl::StrCat("duplicate key '", path, "' (first given on line ",
                          marks_[path].line + 1, ")"));
      continue;
    }
    // An empty value ("nodes:" then a newline) is positioned at the next line; point at the key.
    const YAML::Mark mark = value.IsNull() && value.Tag().empty() ? key.Mark() : value.Mark();
    marks_[path] = key.Mark();
    fields[name] = SpecField{path, value, mark};
  }
  // Later problems are placed at values, so keep value positions from here on; duplicates above
  // needed the key line of the first occurrence.
  for (const auto& [name, field] : fields) marks_[field.path] = field.mark;
  return fields;
}

bool SpecFieldReader::Scalar(const SpecField& field, absl::string_view expected,
                             std::string* out) {
  if (!field.value.IsScalar()) {
    WrongType(field, expected);
    return false;
  }
  *out = field.value.Scalar();
  return true;
}

void SpecFieldReader::String(const SpecField& field, std::string* out) {
  if (field.value.IsNull()) {
    out->clear();
    return;
  }
  Scalar(field, "a string", out);
}

void SpecFieldReader::Int(const SpecField& field, int* out) {
  std::string text;
  if (!Scalar(field, "an integer", &text)) return;
  if (!absl::SimpleAtoi(text, out)) WrongType(field, "an integer");
}

void SpecFieldReader::Number(const SpecField& field, double* out) {
  std::string text;
  if (!Scalar(field, "a number", &text)) return;
  if (!absl::SimpleAtod(text, out)) WrongType(field, "a number");
}

void SpecFieldReader::Duration(const SpecField& field, double* out) {
  constexpr absl::string_view kExpected =
      "a duration (seconds, or a string such as \"30s\", \"5m\", \"1h\", \"250ms\")";
  std::string text;
  if (!Scalar(field, kExpected, &text)) return;
  absl::StatusOr<double> seconds = ParseDuration(text);
  if (!seconds.ok()) {
    WrongType(field, kExpected);
    return;
  }
  *out = *seconds;
}

void SpecFieldReader::ByteSize(const SpecField& field, int64_t* out) {
  constexpr absl::string_view kExpected =
      "a size (bytes, or a string such as \"512MiB\", \"1GiB\", \"2G\", \"500MB\")";
  std::string text;
  if (!Scalar(field, kExpected, &text)) return;
  absl::StatusOr<int64_t> bytes = ParseByteSize(text);
  if (!bytes.ok()) {
    WrongType(field, kExpected);
    return;
  }
  *out = *bytes;
}

void SpecFieldReader::DurationOrWord(const SpecField& field,
                                     const std::map<std::string, double>& words, double* out,
                                     std::string* word) {
  std::string expected = "a duration (seconds, or a string such as \"30s\", \"5m\")";
  std::vector<std::string> names;
  for (const auto& [name, value] : words) {
    absl::StrAppend(&expected, " or \"", name, "\"");
    names.push_back(name);
  }
  std::string text;
  if (!Scalar(field, expected, &text)) return;
  if (auto it = words.find(text); it != words.end()) {
    *out = it->second;
    *word = text;
    return;
  }
  absl::StatusOr<double> seconds = ParseDuration(text);
  if (!seconds.ok()) {
    std::string message = absl::StrCat(field.path, " must be ", expected, ", got ",
                                       DescribeYamlValue(field.value));
    if (std::string near = ClosestMatch(text, names); !near.empty()) {
      absl::StrAppend(&message, "; did you mean \"", near, "\"?");
    }
    Report(field.mark, field.path, std::move(message));
    return;
  }
  *out = *seconds;
  word->clear();
}

bool SpecFieldReader::OneOf(const SpecField& field, const std::vector<std::string>& words,
                            std::string* out) {
  std::vector<std::string> quoted;
  for (const std::string& word : words) quoted.push_back(absl::StrCat("\"", word, "\""));
  const std::string expected = absl::StrJoin(quoted, " or ");
  std::string text;
  if (!Scalar(field, expected, &text)) return false;
  if (std::find(words.begin(), words.end(), text) == words.end()) {
    std::string message = absl::StrCat(field.path, " must be ", expected, ", got ",
                                       DescribeYamlValue(field.value));
    if (std::string near = ClosestMatch(text, words); !near.empty()) {
      absl::StrAppend(&message, " (did you mean '", near, "'?)");
    }
    Report(field.mark, field.path, std::move(message));
    return false;
  }
  *out = text;
  return true;
}

void SpecFieldReader::StringList(const SpecField& field, std::vector<std::string>* out,
                                 bool split_command) {
  if (field.value.IsNull()) return;
  if (field.value.IsScalar()) {
    if (!split_command) {
      out->push_back(field.value.Scalar());
      return;
    }
    absl::StatusOr<std::vector<std::string>> words = SplitCommandLine(field.value.Scalar());
    if (!words.ok()) {
      Report(field.mark, field.path, absl::StrCat(field.path, ": ", words.status().message()));
      return;
    }
    out->insert(out->end(), words->begin(), words->end());
    return;
  }
  if (!field.value.IsSequence()) {
    WrongType(field, "a list of strings");
    return;
  }
  for (size_t i = 0; i < field.value.size(); ++i) {
    const YAML::Node item = field.value[i];
    if (!item.IsScalar()) {
      Report(item.Mark(), field.path,
             absl::StrCat(field.path, "[", i, "] must be a string, got ", DescribeYamlValue(item)));
      continue;
    }
    out->push_back(item.Scalar());
  }
}

void SpecFieldReader::StringMap(const SpecField& field,
                                std::map<std::string, std::string>* out) {
  if (field.value.IsNull()) return;
  if (!field.value.IsMap()) {
    WrongType(field, "a mapping of names to values");
    return;
  }
  for (const auto& entry : field.value) {
    if (!entry.first.IsScalar()) {
      Report(entry.first.Mark(), field.path, "keys must be plain names");
      continue;
    }
    const std::string name = entry.first.Scalar();
    const std::string path = Join(field.path, name);
    marks_[path] = entry.first.Mark();
    if (out->count(name) > 0) {
      Report(entry.first.Mark(), path, absl::StrCat("duplicate key '", path, "'"));
      continue;
    }
    if (entry.second.IsNull()) {
      (*out)[name] = "";
    } else if (entry.second.IsScalar()) {
      (*out)[name] = entry.second.Scalar();
    } else {
      Report(entry.second.Mark(), path,
             absl::StrCat(path, " must be a string, got ", DescribeYamlValue(entry.second)));
    }
  }
}

void SpecFieldReader::ReportChecked(const std::vector<SpecProblem>& checked,
                                    const YAML::Mark& root_mark) {
  for (const SpecProblem& problem : checked) {
    // The key's own position, else its nearest written parent ("hosts[2]" -> "hosts"), else the
    // top of the file (a missing key has no position of its own).
    std::string path = problem.path;
    bool already_reported = false;
    YAML::Mark mark = root_mark;
    while (!path.empty()) {
      if (bad_paths_.count(path)) already_reported = true;
      if (auto found = marks_.find(path); found != marks_.end()) {
        mark = found->second;
        break;
      }
      const size_t cut = path.find_last_of(".[");
      path = cut == std::string::npos ? "" : path.substr(0, cut);
    }
    if (!already_reported && !bad_paths_.count(problem.path)) {
      problems_.push_back({mark, problem.message});
    }
  }
}

}  // namespace dlaunch
