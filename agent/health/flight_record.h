// FlightRecordOf: what a rank's PyTorch flight recorder says, from its JSON dump (the worker
// server's fr_trace_json handler, torch's `_dump_fr_trace_json`): how many entries it holds and
// the newest collective it entered in the default process group (its collective_seq_id and
// name). Across ranks that number tells the rank that stopped from those waiting for it (the
// launcher's StallInquiry). Pure: text in, summary out.
#pragma once

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "dlaunch/control.pb.h"

namespace dlaunch {

// The default process group's name in the dump: every rank is in it, so its sequence numbers
// compare across ranks.
inline constexpr char kDefaultProcessGroup[] = "0";

// The summary of `json` (path left empty); InvalidArgument when it is not a flight recorder
// dump.
absl::StatusOr<v1::FlightRecord> FlightRecordOf(absl::string_view json);

}  // namespace dlaunch
