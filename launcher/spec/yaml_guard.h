// Guards around yaml-cpp for the spec reader: a file must hold exactly one YAML document, checked
// before yaml-cpp loads it, and yaml-cpp's exceptions become statuses placed at FILE:LINE:COL.
#pragma once

#include <yaml-cpp/yaml.h>

#include <string>

#include "absl/status/status.h"

namespace dlaunch {

// "FILE:LINE:COL: " for a yaml-cpp mark (line 1, column 1 when the mark is unknown).
std::string YamlPosition(const std::string& file_name, const YAML::Mark& mark);

// OK when `yaml_text` holds at most one document. yaml-cpp 0.7's LoadAll never returns on some
// malformed input, so documents are counted with a guard before the first is loaded; a stuck
// parser or a second document is InvalidArgument at its position.
absl::Status CheckSingleDocument(const std::string& yaml_text, const std::string& file_name);

// A yaml-cpp exception as InvalidArgument at its position (syntax errors say so).
absl::Status YamlExceptionStatus(const std::string& file_name, const YAML::Exception& e);

}  // namespace dlaunch
