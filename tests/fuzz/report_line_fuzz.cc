// A worker's report line on the agent's socket (protobuf JSON of v1::WorkerReport): what parses
// prints as JSON that parses to the same report.
#include <google/protobuf/util/json_util.h>

#include <string>

#include "agent/workers/report_server.h"
#include "tests/fuzz/fuzz_target.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string line(reinterpret_cast<const char*>(data), size);
  dlaunch::v1::WorkerReport report;
  const absl::Status parsed = dlaunch::ParseReportLine(line, &report);
  if (!parsed.ok()) {
    FUZZ_CHECK(parsed.code() == absl::StatusCode::kInvalidArgument, parsed.ToString());
    return 0;
  }
  std::string json;
  const auto printed = google::protobuf::util::MessageToJsonString(report, &json);
  FUZZ_CHECK(printed.ok(), std::string(printed.message()));
  dlaunch::v1::WorkerReport again;
  const absl::Status reparsed = dlaunch::ParseReportLine(json, &again);
  FUZZ_CHECK(reparsed.ok(), reparsed.ToString() + "\n" + json);
  // Bytes, not MessageDifferencer: a NaN loss is the same report but never equal to itself.
  FUZZ_CHECK(report.SerializeAsString() == again.SerializeAsString(), line + "\n-> " + json);
  return 0;
}
