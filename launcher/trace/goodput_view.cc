#include "launcher/trace/goodput_view.h"

#include <google/protobuf/util/json_util.h>

#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "common/json_line.h"
#include "launcher/trace/goodput_split.h"

namespace dlaunch {
namespace {


std::string BasisName(v1::GoodputBasis b) {
  switch (b) {
    case v1::MEASURED: return "measured";
    case v1::BOUND: return "bound";
    case v1::NOT_KNOWN: return "not known";
    default: return "";
  }
}

}  // namespace

std::string GoodputHeadline(const v1::GoodputAccount& a) {
  std::vector<std::string> parts;
  for (const auto& [name, f] : GoodputFigures(a.split())) {
    if (name == "productive") continue;
    if (f->seconds() >= 0.05) parts.push_back(absl::StrFormat("%s %.1f s", name, f->seconds()));
  }
  const v1::GoodputFigure& productive = a.split().productive();
  std::string line = absl::StrFormat("goodput %.1f%% of %.1f s", a.goodput() * 100, a.wall_s());
  if (productive.basis() == v1::NOT_KNOWN && productive.seconds() == 0) {
    // Nothing productive was measured because nothing could be: not 0 %.
    const std::string note =
        a.split().not_split().seconds() > 0 ? std::string(kGoodputNoReports) : productive.note();
    absl::string_view why = note;
    absl::ConsumePrefix(&why, "not known: ");
    line = absl::StrFormat("goodput not known of %.1f s (%s)", a.wall_s(), why);
  } else if (productive.basis() == v1::BOUND) {
    absl::StrAppend(&line, " (at least)");
  }
  if (!parts.empty()) absl::StrAppend(&line, ": ", absl::StrJoin(parts, ", "));
  return line;
}

std::vector<std::string> GoodputReport(const v1::GoodputAccount& a) {
  std::vector<std::string> lines = {GoodputHeadline(a)};
  lines.push_back("  category        seconds   share  basis");
  const double wall = a.wall_s();
  for (const auto& [name, f] : GoodputFigures(a.split())) {
    if (name == "not split" && f->seconds() == 0) continue;
    std::string line = absl::StrFormat("  %-13s %9.1f  %5.1f%%  %s", name, f->seconds(),
                                       wall > 0 ? 100 * f->seconds() / wall : 0.0,
                                       BasisName(f->basis()));
    if (f->basis() != v1::MEASURED && !f->note().empty()) {
      absl::string_view note = f->note();
      absl::ConsumePrefix(&note, "not known: ");
      absl::StrAppend(&line, " (", note, ")");
    }
    lines.push_back(line);
  }
  if (a.rounds_size() > 1) {
    for (const v1::RoundGoodput& r : a.rounds()) {
      std::string line = absl::StrFormat("  round %d: %.1f-%.1f s, %s", r.round(), r.begin_s(),
                                         r.end_s(), r.ended_by());
      if (r.last_step() > 0) absl::StrAppendFormat(&line, ", steps %d-%d", r.first_step(), r.last_step());
      if (r.redone_steps() > 0) {
        absl::StrAppendFormat(&line, ", resumed at %d, %d step(s) redone (%.1f s)", r.resumed_at_step(),
                              r.redone_steps(), r.split().redone().seconds());
      }
      lines.push_back(line);
    }
  }
  for (const v1::RoundGoodput& r : a.rounds()) {
    if (r.startup_phases().empty()) continue;
    std::vector<std::string> parts;
    for (const v1::GoodputPhase& p : r.startup_phases()) {
      parts.push_back(absl::StrFormat("%s %.2f s", p.name(), p.seconds()));
    }
    lines.push_back(absl::StrFormat("  round %d start-up: launch %.2f s, then in the ranks (the "
                                    "slowest in each): %s",
                                    r.round(), r.launch_s(), absl::StrJoin(parts, ", ")));
  }
  const v1::CheckpointAdvice& c = a.checkpoint_advice();
  if (c.basis() == v1::MEASURED) {
    std::string line = absl::StrFormat(
        "  checkpoint interval that loses least (Young/Daly): %.1f s (checkpoint %.2f s, %d "
        "failure(s), one per %.1f s)", c.optimal_interval_s(), c.checkpoint_cost_s(), c.failures(),
        c.mtbf_s());
    if (c.optimal_interval_steps() > 0) {
      absl::StrAppendFormat(&line, ", about %d steps", c.optimal_interval_steps());
      if (c.used_interval_steps() > 0) absl::StrAppendFormat(&line, " (this job: %d)", c.used_interval_steps());
    }
    lines.push_back(line);
  } else if (!c.note().empty()) {
    lines.push_back("  checkpoint interval (Young/Daly): " + c.note());
  }
  for (const std::string& n : a.notes()) lines.push_back("  note: " + n);
  return lines;
}

std::vector<TraceEvent> GoodputTraceEvents(const v1::GoodputAccount& a, int64_t origin_unix_us) {
  std::vector<TraceEvent> out;
  if (a.rounds().empty()) return out;
  out.push_back(ThreadName(kLauncherPid, kGoodputTid, "goodput"));
  out.push_back(ThreadSortIndex(kLauncherPid, kGoodputTid, 1));
  const int64_t shift = a.start_unix_us() - origin_unix_us;
  for (const v1::RoundGoodput& r : a.rounds()) {
    for (const v1::GoodputSpan& s : r.spans()) {
      JsonLine args;
      args.Add("round", r.round()).Add("seconds", s.end_s() - s.begin_s());
      if (s.name() == "training") {
        for (const auto& [name, f] : GoodputFigures(r.split())) {
          if (name == "productive" || name == "evaluation" || name == "checkpoint" ||
              name == "slowest rank") {
            args.Add(absl::StrCat(name, "_s"), f->seconds());
          }
        }
      }
      if (s.name() == "redone") args.Add("steps", r.redone_steps()).Add("resumed_at", r.resumed_at_step());
      if (s.name() == "detection" || s.name() == "stop and wait") args.Add("ended_by", r.ended_by());
      out.push_back(Span(s.name(), "goodput", kLauncherPid, kGoodputTid,
                         shift + GoodputMicros(s.begin_s()), shift + GoodputMicros(s.end_s()), args.str()));
    }
  }
  return out;
}

absl::StatusOr<std::string> GoodputJson(const v1::GoodputAccount& account) {
  google::protobuf::util::JsonPrintOptions options;
  options.preserve_proto_field_names = true;
  options.always_print_primitive_fields = true;
  std::string out;
  const auto st = google::protobuf::util::MessageToJsonString(account, &out, options);
  if (!st.ok()) return absl::InternalError(absl::StrCat("goodput account: ", st.ToString()));
  return out;
}

absl::StatusOr<v1::GoodputAccount> ParseGoodputJson(const std::string& json) {
  v1::GoodputAccount account;
  google::protobuf::util::JsonParseOptions options;
  options.ignore_unknown_fields = true;
  const auto st = google::protobuf::util::JsonStringToMessage(json, &account, options);
  if (!st.ok()) return absl::DataLossError(absl::StrCat("goodput account: ", st.ToString()));
  return account;
}

absl::StatusOr<std::string> SummaryWithGoodput(const std::string& summary_json,
                                               const v1::GoodputAccount& account) {
  absl::StatusOr<std::string> json = GoodputJson(account);
  if (!json.ok()) return json.status();
  std::string s = summary_json;
  // The account is always the last key: one written before is cut off and written again.
  if (const size_t at = s.find(",\"goodput\":"); at != std::string::npos) {
    s.resize(at);
  } else {
    while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
    if (s.empty() || s.back() != '}') return absl::DataLossError("summary.json is not one JSON object");
    s.pop_back();
  }
  if (s.empty() || s.front() != '{') {
    return absl::DataLossError("summary.json is not one JSON object");
  }
  const bool empty_object = s == "{";
  return absl::StrCat(s, empty_object ? "" : ",", "\"goodput\":", *json, "}");
}

}  // namespace dlaunch
