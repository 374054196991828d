// dlaunch-worker's trace/rank-N.jsonl (one line per recorded step), read into compact rows. A
// long job has millions of these lines: they are scanned by hand, flat, as a generic JSON
// parser (protobuf's Struct) is two orders of magnitude slower and larger. (metrics.jsonl is
// the journal's: launcher/jobdir/journal.h.)
// Pure: text in, rows out.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"

namespace dlaunch {

// One top-level field of a JSON object line: a string (unescaped), a number, or something
// else (true, false, null, an object or a list: skipped).
struct JsonScalar {
  enum Kind { kString, kNumber, kOther } kind = kOther;
  double number = 0;
  std::string text;
};

// Calls `field` for each top-level field of a one-line JSON object; false when the line is not
// one (torn, or not JSON).
bool ScanJsonObject(absl::string_view line,
                    const std::function<void(absl::string_view key, const JsonScalar&)>& field);

// trace/rank-N.jsonl: one recorded step (its phases, microseconds) or one span between steps
// (`span` names it: checkpoint, evaluate).
struct StepRow {
  int64_t step = 0;
  int64_t ts_us = 0;  // Unix microseconds
  int64_t data_us = 0, forward_us = 0, backward_us = 0, optimizer_us = 0;
  std::string span;
  int64_t dur_us = 0;  // spans only
  int64_t stride = 1;  // the steps this line stands for
};

struct RankStepTrace {
  std::vector<StepRow> rows;
  std::string sampling;  // the header's rule
  int bad_lines = 0;
};

RankStepTrace ParseStepTrace(absl::string_view text);

}  // namespace dlaunch
