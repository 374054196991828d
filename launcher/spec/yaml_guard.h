// Guards around yaml-cpp for the spec reader: a file must hold exactly one YAML document, of
// bounded size, depth and alias expansion, checked before yaml-cpp loads it; and yaml-cpp's
// exceptions become statuses placed at FILE:LINE:COL.
#pragma once

#include <yaml-cpp/yaml.h>

#include <cstddef>
#include <string>

#include "absl/status/status.h"

namespace dlaunch {

// "FILE:LINE:COL: " for a yaml-cpp mark (line 1, column 1 when the mark is unknown).
std::string YamlPosition(const std::string& file_name, const YAML::Mark& mark);

// What reading one YAML file (a job.yaml, a site profile) may cost. Real files are a few KB,
// a few levels deep and use an alias or two; anything far beyond is a mistake or an attack.
// The size bound also bounds yaml-cpp's own cost: its scanner queues every token of a flow
// collection before the guard sees it, about 250 bytes each (256 KiB of '[': 0.5 s, 65 MB).
inline constexpr size_t kMaxYamlBytes = 256 << 10;
inline constexpr int kMaxYamlDepth = 64;
// Values (scalars, lists, mappings) of the document with every alias expanded, so an alias
// bomb (ten aliases of ten aliases of ...) is refused before anything walks it.
inline constexpr size_t kMaxYamlValues = 100000;

// OK when `yaml_text` holds at most one document and stays within the bounds above, each
// problem InvalidArgument at its position. yaml-cpp 0.7's LoadAll never returns on some
// malformed input, so documents are counted with a guard before the first is loaded; a stuck
// parser or a second document is refused at its position. `what` names the file's kind in
// messages ("a job file holds one YAML document").
absl::Status CheckYamlDocument(const std::string& yaml_text, const std::string& file_name,
                               const std::string& what = "a job file");

// True when `yaml_text` is one YAML document, within the bounds above, whose top level is a
// mapping: what a job.yaml is, and what a Python or shell script almost never is. Never throws.
bool IsYamlMapping(const std::string& yaml_text);

// A yaml-cpp exception as InvalidArgument at its position (syntax errors say so).
absl::Status YamlExceptionStatus(const std::string& file_name, const YAML::Exception& e);

}  // namespace dlaunch
