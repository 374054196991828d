#include "launcher/trace/journal_events.h"

#include <google/protobuf/util/json_util.h>

#include "absl/strings/str_cat.h"
#include "launcher/trace/json_lines.h"

namespace dlaunch {

int64_t MetricMicros(const v1::MetricLine& m) { return ParseTimeMicros(m.time()).value_or(0); }

EventPlace PlaceOf(const v1::FailureRecord& f) { return {f.rank(), f.node_id(), f.host()}; }

EventPlace PlaceOf(const v1::JobEvent& e) {
  switch (e.event_case()) {
    case v1::JobEvent::kWorkerStarted: {
      const auto& w = e.worker_started();
      return {w.rank(), w.node_id(), w.host()};
    }
    case v1::JobEvent::kWorkerEnded: {
      const auto& w = e.worker_ended();
      return {w.rank(), w.node_id(), w.host()};
    }
    case v1::JobEvent::kWorkerFailed: {
      const auto& w = e.worker_failed();
      return {w.rank(), w.node_id(), w.host()};
    }
    case v1::JobEvent::kHangDetected: {
      const auto& h = e.hang_detected();
      return {h.rank(), h.node_id(), h.host()};
    }
    case v1::JobEvent::kStacksRecorded: {
      const auto& s = e.stacks_recorded();
      return {s.rank(), s.node_id(), s.host()};
    }
    case v1::JobEvent::kFailureDetected: return PlaceOf(e.failure_detected().failure());
    case v1::JobEvent::kNodeLost: return {-1, e.node_lost().node_id(), e.node_lost().host()};
    case v1::JobEvent::kSessionResumed:
      return {-1, e.session_resumed().node_id(), e.session_resumed().host()};
    case v1::JobEvent::kSpareJoined: return {-1, e.spare_joined().node_id(), e.spare_joined().host()};
    case v1::JobEvent::kSparePromoted:
      return {-1, e.spare_promoted().node_id(), e.spare_promoted().host()};
    case v1::JobEvent::kNodeExcluded: return {-1, e.node_excluded().node_id(), e.node_excluded().host()};
    case v1::JobEvent::kNodeDropped: return {-1, e.node_dropped().node_id(), e.node_dropped().host()};
    case v1::JobEvent::kSpareLost: return {-1, e.spare_lost().node_id(), e.spare_lost().host()};
    case v1::JobEvent::kStragglerDetected:
      return {-1, e.straggler_detected().node_id(), e.straggler_detected().host()};
    case v1::JobEvent::kStragglerCleared:
      return {-1, e.straggler_cleared().node_id(), e.straggler_cleared().host()};
    case v1::JobEvent::kExclusionSkipped: return {-1, e.exclusion_skipped().node_id(), ""};
    default: return {};
  }
}

std::string EventArgs(const v1::JobEvent& e) {
  v1::JobEvent body = e;
  body.clear_time();
  body.clear_round();
  std::string json;
  google::protobuf::util::JsonPrintOptions options;
  options.preserve_proto_field_names = true;
  options.always_print_primitive_fields = true;
  (void)google::protobuf::util::MessageToJsonString(body, &json, options);
  // {"<name>":{...}} -> {"round":N,...}
  const size_t open = json.find('{', 1);
  const std::string fields =
      open == std::string::npos || json.size() < open + 3 ? "" : json.substr(open + 1, json.size() - open - 3);
  return absl::StrCat("{\"round\":", e.round(), fields.empty() ? "" : ",", fields, "}");
}

}  // namespace dlaunch
