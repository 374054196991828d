// A quick JSON printer for the journal's messages (events.jsonl, metrics.jsonl): the bytes that
// protobuf's MessageToJsonString writes with preserve_proto_field_names and
// always_print_primitive_fields, at a fraction of its cost. protobuf's printer builds a tree of
// nodes per message; at 10,000 agents the launcher writes 40,000 metric lines a second and
// 40,000 worker events per round, and that tree was most of its CPU.
//
// The quick path walks the message by reflection and covers what the journal uses: scalars,
// enums with a name, strings of printable ASCII, finite doubles, nested and repeated messages,
// oneofs and proto3 optional fields. Anything else (a string with a byte that protobuf escapes
// its own way, NaN, a float, a map, a well-known type) makes it answer false, and the caller
// uses protobuf's printer: the output is the same either way.
#pragma once

#include <string>

#include <google/protobuf/message.h>

namespace dlaunch {

// Appends `message` as JSON to `out` and returns true, or returns false (and `out` holds
// unspecified bytes) when the message needs protobuf's printer.
bool QuickJson(const google::protobuf::Message& message, std::string* out);

}  // namespace dlaunch
