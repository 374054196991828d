// The trace's reading of the journal's events (proto/journal.proto): where each happened (a
// rank and the node, by id, it ran on) and its fields as trace-event args. Pure.
#pragma once

#include <cstdint>
#include <string>

#include "dlaunch/journal.pb.h"

namespace dlaunch {

// Where an event happened, as it names it: a rank and the node (by id) it was on, and the
// node's host. -1: not named (a version-1 journal named a hang's or failure's node by rank).
struct EventPlace {
  int rank = -1;
  int node_id = -1;
  std::string host;
};

EventPlace PlaceOf(const v1::FailureRecord& f);
EventPlace PlaceOf(const v1::JobEvent& e);

// A metrics record's receipt time as Unix microseconds (0: unreadable; MakeTraceInput drops such
// records).
int64_t MetricMicros(const v1::MetricLine& m);

// An event's round and own fields, flat, as the args of its trace event.
std::string EventArgs(const v1::JobEvent& e);

}  // namespace dlaunch
