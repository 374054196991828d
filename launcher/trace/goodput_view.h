// The goodput account as the user sees it: the headline and table of `dlaunch run`'s end,
// `status` and `dlaunch trace`, its JSON in summary.json, and its spans on the trace's goodput
// track (docs/goodput.md). Pure.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "dlaunch/goodput.pb.h"
#include "launcher/trace/goodput.h"
#include "launcher/trace/trace_event.h"

namespace dlaunch {

// "goodput 87.3% of 412.0 s: start-up 12.1 s, checkpoint 4.0 s, failures 30.2 s, ..."
std::string GoodputHeadline(const v1::GoodputAccount& account);
// The headline, then a short table: one line per category with seconds, share and basis, one
// line per round when there were several, the notes and the checkpoint advice. No prefix.
std::vector<std::string> GoodputReport(const v1::GoodputAccount& account);

// The account as trace events on the launcher's "goodput" track (kGoodputTid): one span per
// stretch of each round (start-up, redone, training, detection, stop and wait, tail), with the
// round's figures on its training span. `origin_unix_us` is the trace's time 0.
std::vector<TraceEvent> GoodputTraceEvents(const v1::GoodputAccount& account,
                                           int64_t origin_unix_us);

// The account in protobuf's JSON mapping (field names as in the .proto), one line.
absl::StatusOr<std::string> GoodputJson(const v1::GoodputAccount& account);
absl::StatusOr<v1::GoodputAccount> ParseGoodputJson(const std::string& json);

// summary.json's object with "goodput": <account> added (replaced when it is there already).
absl::StatusOr<std::string> SummaryWithGoodput(const std::string& summary_json,
                                               const v1::GoodputAccount& account);

}  // namespace dlaunch
