// Reading the job directory's JSON-lines files (events.jsonl, metrics.jsonl, trace/rank-N.jsonl)
// as protobuf Structs, so the trace keeps every field's JSON type, and writing a field back as
// JSON. Pure: text in, records out.
#pragma once

#include <google/protobuf/struct.pb.h>

#include <optional>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"

namespace dlaunch {

using JsonRecord = google::protobuf::Struct;

struct JsonLines {
  std::vector<JsonRecord> records;
  // Lines that are not JSON objects (a process killed mid-write leaves a torn last line).
  int bad_lines = 0;
};

JsonLines ParseJsonLines(absl::string_view text);

// A field as a number, or nullopt when it is absent or not a number.
std::optional<double> NumberField(const JsonRecord& r, const std::string& key);
// A field as a string ("" when absent; numbers and the like as their JSON text).
std::string StringField(const JsonRecord& r, const std::string& key);
// A field that is itself an object, or nullptr.
const JsonRecord* ObjectField(const JsonRecord& r, const std::string& key);

// JSON text of a value or object (integral numbers without a fraction, others with 17 digits).
std::string ValueJson(const google::protobuf::Value& v);
std::string ObjectJson(const JsonRecord& r);

// RFC 3339 time ("2026-11-23T19:04:32.123Z") as microseconds since the Unix epoch.
std::optional<int64_t> ParseTimeMicros(const std::string& rfc3339);

}  // namespace dlaunch
