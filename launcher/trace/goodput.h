// The goodput account: every second of a job's wall time in one category (start-up, productive
// steps, evaluation, checkpoints, failures, redone work, waiting on the slowest rank, the tail),
// per job and per round, from the journal the trace reads (events, reports, dlaunch-worker's
// step traces). The categories add up to the wall time; what the journal cannot tell is marked
// not known instead of guessed (docs/goodput.md). Pure: the trace's input in, the account out.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "dlaunch/goodput.pb.h"
#include "launcher/trace/trace_builder.h"
#include "launcher/trace/trace_event.h"

namespace dlaunch {

v1::GoodputAccount ComputeGoodput(const TraceInput& input);

// The figures of a split in the order they are shown, with their names ("start-up",
// "productive", ...).
std::vector<std::pair<std::string, const v1::GoodputFigure*>> GoodputFigures(
    const v1::GoodputSplit& split);
// Their sum: the wall time the split covers.
double GoodputSum(const v1::GoodputSplit& split);

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
