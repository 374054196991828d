#include "launcher/jobdir/journal.h"

#include <algorithm>

#include <google/protobuf/struct.pb.h>
#include <google/protobuf/util/json_util.h>

#include <optional>

#include "absl/strings/str_cat.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "common/file_io.h"
#include "launcher/jobdir/job_record.h"
#include "launcher/jobdir/json_print.h"

namespace dlaunch {
namespace {

using google::protobuf::Descriptor;
using google::protobuf::FieldDescriptor;
using google::protobuf::Message;
using google::protobuf::Struct;
using google::protobuf::Value;
namespace pbutil = google::protobuf::util;

absl::StatusOr<std::string> ToLine(const Message& m, const char* what) {
  std::string quick;
  if (QuickJson(m, &quick)) return quick;
  pbutil::JsonPrintOptions options;
  options.preserve_proto_field_names = true;
  options.always_print_primitive_fields = true;
  std::string line;
  auto st = pbutil::MessageToJsonString(m, &line, options);
  if (!st.ok()) {
    return absl::InternalError(absl::StrCat("cannot write ", what, " line: ", st.ToString()));
  }
  return line;
}

bool Parse(absl::string_view json, Message* m, bool ignore_unknown) {
  pbutil::JsonParseOptions options;
  options.ignore_unknown_fields = ignore_unknown;
  return pbutil::JsonStringToMessage(std::string(json), m, options).ok();
}

std::string Json(const Message& m) {
  std::string out;
  (void)pbutil::MessageToJsonString(m, &out);
  return out;
}

void Rename(Struct& s, const std::string& from, const std::string& to) {
  auto& f = *s.mutable_fields();
  auto it = f.find(from);
  if (it == f.end()) return;
  Value v = it->second;
  f.erase(it);
  f[to] = std::move(v);
}

// Version 1 wrote a failure's node *rank* under "node", and its class under "class".
void UpgradeV1FailureObject(Struct& f) {
  Rename(f, "node", "node_rank");
  Rename(f, "class", "failure_class");
}

void UpgradeV1Failure(Struct& s, const std::string& key) {
  auto it = s.mutable_fields()->find(key);
  if (it == s.mutable_fields()->end() || !it->second.has_struct_value()) return;
  UpgradeV1FailureObject(*it->second.mutable_struct_value());
}

// Node fields version 1 did not write are unknown (-1), not node 0.
void MarkUnwrittenNodes(const Struct& given, Message* m) {
  const Descriptor* d = m->GetDescriptor();
  for (const char* name : {"node_id", "node_rank"}) {
    const FieldDescriptor* f = d->FindFieldByName(name);
    if (f != nullptr && !f->is_repeated() && f->cpp_type() == FieldDescriptor::CPPTYPE_INT32 &&
        !given.fields().count(name)) {
      m->GetReflection()->SetInt32(m, f, -1);
    }
  }
  for (int i = 0; i < d->field_count(); ++i) {
    const FieldDescriptor* f = d->field(i);
    auto it = given.fields().find(f->name());
    if (f->cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE && !f->is_repeated() &&
        it != given.fields().end() && it->second.has_struct_value()) {
      MarkUnwrittenNodes(it->second.struct_value(), m->GetReflection()->MutableMessage(m, f));
    }
  }
}

// A version-1 line (`{"time":..,"event":"<name>",...}`) as the typed event it stands for.
std::optional<v1::JobEvent> UpgradeV1Event(const Struct& line) {
  auto field = [&](const char* key) -> const Value* {
    auto it = line.fields().find(key);
    return it == line.fields().end() ? nullptr : &it->second;
  };
  const Value* name = field("event");
  const FieldDescriptor* f =
      name ? v1::JobEvent::descriptor()->FindFieldByName(name->string_value()) : nullptr;
  if (f == nullptr || f->containing_oneof() == nullptr) return std::nullopt;
  v1::JobEvent e;
  if (const Value* t = field("time")) e.set_time(t->string_value());
  if (const Value* r = field("round")) e.set_round(static_cast<int>(r->number_value()));
  Struct payload = line;
  for (const char* key : {"time", "event", "round"}) payload.mutable_fields()->erase(key);
  const std::string event = f->name();
  if (event == "hang_detected") {
    Rename(payload, "node", "node_rank");
    Rename(payload, "class", "failure_class");
  } else if (event == "failure_detected" || event == "root_cause") {
    UpgradeV1Failure(payload, "failure");
  } else if (event == "restart_decision") {
    UpgradeV1Failure(payload, "root_cause");
  } else if (event == "restart" || event == "round_started") {
    Rename(payload, "nodes", "node_ids");
  } else {
    Rename(payload, "node", "node_id");  // elsewhere version 1's "node" was the node id
  }
  Message* body = e.GetReflection()->MutableMessage(&e, f);
  if (!Parse(Json(payload), body, /*ignore_unknown=*/true)) return std::nullopt;
  MarkUnwrittenNodes(payload, body);
  if (e.has_rendezvous_closed()) {
    // Round 0's node ids are its node ranks.
    for (int i = 0; i < e.rendezvous_closed().node_order_size(); ++i)
      e.mutable_rendezvous_closed()->add_node_ids(i);
  }
  return e;
}

// A version-1 metrics line: the report's fields flat beside "time" and "node" (the node id).
std::optional<v1::MetricLine> UpgradeV1Metric(const Struct& line) {
  Struct report = line;
  Struct top;
  auto& out = *top.mutable_fields();
  for (const char* key : {"time", "node"}) {
    auto it = report.fields().find(key);
    if (it == report.fields().end()) continue;
    out[std::string(key) == "node" ? "node_id" : key] = it->second;
    report.mutable_fields()->erase(key);
  }
  Struct timings;
  for (const char* key : {"data_ms", "forward_ms", "backward_ms", "comm_wait_ms", "optimizer_ms"}) {
    auto it = report.fields().find(key);
    if (it == report.fields().end()) continue;
    (*timings.mutable_fields())[key] = it->second;
    report.mutable_fields()->erase(key);
  }
  *(*report.mutable_fields())["timings"].mutable_struct_value() = std::move(timings);
  *out["report"].mutable_struct_value() = std::move(report);
  v1::MetricLine m;
  if (!Parse(Json(top), &m, /*ignore_unknown=*/true)) return std::nullopt;
  return m;
}

std::optional<Struct> ParseObject(absl::string_view line) {
  Struct s;
  if (!Parse(line, &s, false)) return std::nullopt;
  return s;
}

// An earlier dlaunch's summary.json (its failures as version 1 wrote them), or one whose
// goodput account does not read: what can be read of it.
absl::StatusOr<JobSummaryFile> UpgradeSummary(const Struct& given) {
  JobSummaryFile out;
  Struct s = given;
  auto& fields = *s.mutable_fields();
  UpgradeV1Failure(s, "root_cause");
  std::vector<Struct> consequences;
  if (auto it = fields.find("consequences"); it != fields.end() && it->second.has_list_value()) {
    for (Value& v : *it->second.mutable_list_value()->mutable_values()) {
      if (!v.has_struct_value()) continue;
      UpgradeV1FailureObject(*v.mutable_struct_value());
      consequences.push_back(v.struct_value());
    }
  }
  std::optional<Value> goodput;
  if (auto it = fields.find("goodput"); it != fields.end()) {
    goodput = it->second;
    fields.erase(it);
  }
  if (!Parse(Json(s), &out.summary, /*ignore_unknown=*/true)) {
    return absl::DataLossError("summary.json does not hold a job's summary");
  }
  // Node fields it did not write are unknown (-1), not node 0.
  if (auto it = fields.find("root_cause"); it != fields.end() && it->second.has_struct_value()) {
    MarkUnwrittenNodes(it->second.struct_value(), out.summary.mutable_root_cause());
  }
  for (int i = 0; i < out.summary.consequences_size() && i < static_cast<int>(consequences.size());
       ++i) {
    MarkUnwrittenNodes(consequences[i], out.summary.mutable_consequences(i));
  }
  if (goodput) {
    pbutil::JsonParseOptions options;
    options.ignore_unknown_fields = true;
    auto st = pbutil::JsonStringToMessage(Json(*goodput), out.summary.mutable_goodput(), options);
    if (!st.ok()) {
      out.summary.clear_goodput();
      out.goodput_error = std::string(st.message());
    }
  }
  return out;
}

// Each call of protobuf's JSON parser costs several times the parse of a metrics line.
constexpr size_t kMetricBatch = 1000;

// One metrics.jsonl line of any version into `j`, or counted as unreadable.
void ParseMetricLine(absl::string_view line, MetricJournal& j) {
  v1::MetricLine m;
  if (Parse(line, &m, /*ignore_unknown=*/false)) {
    j.metrics.push_back(std::move(m));
    return;
  }
  std::optional<Struct> s = ParseObject(line);
  std::optional<v1::MetricLine> read;
  if (s && s->fields().count("report")) {
    if (Parse(line, &m, /*ignore_unknown=*/true)) read = std::move(m);
  } else if (s && s->fields().count("rank")) {
    read = UpgradeV1Metric(*s);
  }
  if (read) {
    j.metrics.push_back(*std::move(read));
  } else {
    ++j.bad_lines;
  }
}

}  // namespace

absl::StatusOr<std::string> EventJournalLine(const v1::JobEvent& event) {
  return ToLine(event, "an events.jsonl");
}

absl::StatusOr<std::string> MetricJournalLine(const v1::MetricLine& metric) {
  return ToLine(metric, "a metrics.jsonl");
}

absl::StatusOr<std::string> JobSummaryJson(const v1::JobSummary& summary) {
  if (!summary.has_goodput()) return ToLine(summary, "summary.json's");
  // The account last, whatever order protobuf's printer gives the fields (it puts wrapper
  // fields after every other): a later account replaces it by cutting the object at its key.
  v1::JobSummary rest = summary;
  rest.clear_goodput();
  absl::StatusOr<std::string> head = ToLine(rest, "summary.json's");
  absl::StatusOr<std::string> account = ToLine(summary.goodput(), "summary.json's goodput");
  if (!head.ok()) return head.status();
  if (!account.ok()) return account.status();
  head->pop_back();  // its closing brace
  return absl::StrCat(*head, head->size() > 1 ? "," : "", "\"goodput\":", *account, "}");
}

absl::StatusOr<JobSummaryFile> ParseJobSummary(absl::string_view text) {
  JobSummaryFile out;
  if (Parse(text, &out.summary, /*ignore_unknown=*/false)) return out;
  std::optional<Struct> s = ParseObject(text);
  if (!s) return absl::DataLossError("summary.json is not a JSON object");
  return UpgradeSummary(*s);
}

absl::StatusOr<JobSummaryFile> ReadJobSummary(const std::string& job_dir) {
  absl::StatusOr<std::string> text = ReadFile(job_dir + "/summary.json");
  if (!text.ok()) return text.status();
  return ParseJobSummary(*text);
}

absl::StatusOr<EventJournal> ParseEventJournal(absl::string_view text, const std::string& file) {
  EventJournal j;
  bool versioned = false;
  for (absl::string_view line : absl::StrSplit(text, '\n', absl::SkipWhitespace())) {
    v1::JobEvent e;
    // A newer writer may add fields: known events are still read, unknown fields ignored.
    bool ok = Parse(line, &e, /*ignore_unknown=*/false) ||
              (line.find("\"event\":") == absl::string_view::npos && Parse(line, &e, true));
    if (!ok || e.event_case() == v1::JobEvent::EVENT_NOT_SET) {
      std::optional<Struct> s = ok ? std::nullopt : ParseObject(line);
      std::optional<v1::JobEvent> upgraded = s ? UpgradeV1Event(*s) : std::nullopt;
      if (!upgraded) {
        ++j.bad_lines;
        continue;
      }
      if (!versioned) j.schema_version = 1;
      versioned = true;
      e = *std::move(upgraded);
    } else if (e.has_journal_opened()) {
      j.schema_version = e.journal_opened().schema_version();
      versioned = true;
      if (j.schema_version > kJournalSchemaVersion) {
        return absl::FailedPreconditionError(absl::StrCat(
            file, ": journal schema version ", j.schema_version,
            " is newer than this dlaunch reads (", kJournalSchemaVersion, "); use a newer dlaunch"));
      }
    }
    j.events.push_back(std::move(e));
  }
  return j;
}

MetricJournal ParseMetricJournal(absl::string_view text) {
  MetricJournal j;
  std::vector<absl::string_view> batch;
  // Lines that look like objects are parsed kMetricBatch at a time, as one MetricLines; a batch
  // that does not parse whole (a torn line, a version-1 line) is read again line by line.
  const auto flush = [&] {
    if (batch.empty()) return;
    v1::MetricLines lines;
    if (Parse(absl::StrCat("{\"metrics\":[", absl::StrJoin(batch, ","), "]}"), &lines, false)) {
      for (v1::MetricLine& m : *lines.mutable_metrics()) j.metrics.push_back(std::move(m));
    } else {
      for (absl::string_view line : batch) ParseMetricLine(line, j);
    }
    batch.clear();
  };
  for (absl::string_view line : absl::StrSplit(text, '\n', absl::SkipWhitespace())) {
    line = absl::StripAsciiWhitespace(line);
    if (absl::StartsWith(line, "{") && absl::EndsWith(line, "}")) {
      batch.push_back(line);
      if (batch.size() == kMetricBatch) flush();
      continue;
    }
    flush();
    ParseMetricLine(line, j);
  }
  flush();
  // Host lines apart: every reader of reports finds only reports in `metrics`.
  auto host = std::stable_partition(j.metrics.begin(), j.metrics.end(),
                                    [](const v1::MetricLine& m) { return !m.has_host(); });
  j.hosts.assign(std::make_move_iterator(host), std::make_move_iterator(j.metrics.end()));
  j.metrics.erase(host, j.metrics.end());
  return j;
}

absl::StatusOr<EventJournal> ReadEventJournal(const std::string& job_dir) {
  const std::string path = job_dir + "/events.jsonl";
  absl::StatusOr<std::string> text = ReadFile(path);
  if (!text.ok()) return text.status();
  return ParseEventJournal(*text, path);
}

absl::StatusOr<MetricJournal> ReadMetricJournal(const std::string& job_dir) {
  absl::StatusOr<std::string> text = ReadFile(job_dir + "/metrics.jsonl");
  if (absl::IsNotFound(text.status())) return MetricJournal{};
  if (!text.ok()) return text.status();
  return ParseMetricJournal(*text);
}

std::string EventName(const v1::JobEvent& event) {
  const FieldDescriptor* f = event.GetReflection()->GetOneofFieldDescriptor(
      event, v1::JobEvent::descriptor()->FindOneofByName("event"));
  return f == nullptr ? "" : f->name();
}

std::vector<std::pair<std::string, std::string>> EventFields(const v1::JobEvent& event) {
  std::vector<std::pair<std::string, std::string>> out;
  out.emplace_back("round", absl::StrCat(event.round()));
  const FieldDescriptor* f = event.GetReflection()->GetOneofFieldDescriptor(
      event, v1::JobEvent::descriptor()->FindOneofByName("event"));
  if (f == nullptr) return out;
  const Message& body = event.GetReflection()->GetMessage(event, f);
  absl::StatusOr<std::string> json = ToLine(body, "an event's");
  std::optional<Struct> s = json.ok() ? ParseObject(*json) : std::nullopt;
  if (!s) return out;
  const Descriptor* d = body.GetDescriptor();
  for (int i = 0; i < d->field_count(); ++i) {
    auto it = s->fields().find(d->field(i)->name());
    if (it == s->fields().end()) continue;
    std::string text = JsonValueText(it->second);
    if (!text.empty() && text != "[]") out.emplace_back(it->first, std::move(text));
  }
  return out;
}

}  // namespace dlaunch
