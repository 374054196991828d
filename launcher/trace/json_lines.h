// What the trace reads of JSON beyond the journal: trace.json's own metadata (as a protobuf
// Struct) and the journal's RFC 3339 times. Pure.
#pragma once

#include <google/protobuf/struct.pb.h>

#include <cstdint>
#include <optional>
#include <string>

namespace dlaunch {

using JsonRecord = google::protobuf::Struct;

// A field that is itself an object, or nullptr.
const JsonRecord* ObjectField(const JsonRecord& r, const std::string& key);

// RFC 3339 time ("2026-11-23T19:04:32.123Z") as microseconds since the Unix epoch.
std::optional<int64_t> ParseTimeMicros(const std::string& rfc3339);

}  // namespace dlaunch
