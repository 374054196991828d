#include "agent/health/flight_record.h"

#include <google/protobuf/util/json_util.h>

#include <algorithm>
#include <string>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "dlaunch/flight_recorder.pb.h"

namespace dlaunch {

absl::StatusOr<v1::FlightRecord> FlightRecordOf(absl::string_view json) {
  fr::Dump dump;
  google::protobuf::util::JsonParseOptions options;
  options.ignore_unknown_fields = true;  // tensor sizes, stack frames, later versions' fields
  const auto parsed = google::protobuf::util::JsonStringToMessage(std::string(json), &dump, options);
  if (!parsed.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("not a flight recorder dump: ", std::string(parsed.message())));
  }
  if (dump.version().empty()) {
    return absl::InvalidArgumentError("not a flight recorder dump: no version");
  }
  v1::FlightRecord record;
  record.set_entries(dump.entries_size());
  // The ring buffer keeps the newest entries; the highest sequence number is the newest.
  for (const fr::Entry& e : dump.entries()) {
    const bool in_default = e.process_group_size() > 0 ? e.process_group(0) == kDefaultProcessGroup
                                                       : e.pg_id() == 0;
    if (!in_default || e.is_p2p() || e.collective_seq_id() < record.last_seq()) continue;
    record.set_last_seq(e.collective_seq_id());
    record.set_last_collective(e.profiling_name());
  }
  // The group's status counts what the ring may have dropped already.
  auto status = dump.pg_status().find(kDefaultProcessGroup);
  int64_t enqueued = 0;
  if (status != dump.pg_status().end() &&
      absl::SimpleAtoi(status->second.last_enqueued_collective(), &enqueued) &&
      enqueued > record.last_seq()) {
    record.set_last_seq(enqueued);
    record.clear_last_collective();  // the entry itself is gone from the ring
  }
  return record;
}

}  // namespace dlaunch
