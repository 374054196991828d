// Reading a trace.json back in tests: the parsed events, the structure every trace must have
// (each event has ph/ts/pid/tid, spans have dur >= 0, spans on one track nest, tracks are named),
// and finding events by name or track.
#pragma once

#include <google/protobuf/struct.pb.h>
#include <google/protobuf/util/json_util.h>

#include <algorithm>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace dlaunch::testing {

struct ParsedEvent {
  std::string name, cat, ph, scope;
  double ts = 0, dur = 0;
  int pid = -1, tid = -1;
  google::protobuf::Struct args;
  bool has_ts = false, has_pid = false, has_tid = false, has_dur = false;
};

struct ParsedTrace {
  bool ok = false;
  std::string error;
  google::protobuf::Struct metadata;
  std::string display_time_unit;
  std::vector<ParsedEvent> events;

  std::vector<const ParsedEvent*> Named(const std::string& prefix,
                                        const std::string& ph = "") const {
    std::vector<const ParsedEvent*> out;
    for (const ParsedEvent& e : events) {
      if (absl::StartsWith(e.name, prefix) && (ph.empty() || e.ph == ph)) out.push_back(&e);
    }
    return out;
  }
  // The name a thread_name or process_name metadata event gives the track.
  std::string TrackName(int pid, int tid) const {
    for (const ParsedEvent& e : events) {
      if (e.ph != "M" || e.pid != pid) continue;
      if ((tid < 0 && e.name == "process_name") ||
          (tid >= 0 && e.name == "thread_name" && e.tid == tid)) {
        auto it = e.args.fields().find("name");
        if (it != e.args.fields().end()) return it->second.string_value();
      }
    }
    return "";
  }
  std::vector<std::string> Notes() const {
    std::vector<std::string> out;
    auto it = metadata.fields().find("notes");
    if (it == metadata.fields().end()) return out;
    for (const auto& v : it->second.list_value().values()) out.push_back(v.string_value());
    return out;
  }
};

inline ParsedTrace ParseTrace(const std::string& json) {
  ParsedTrace t;
  google::protobuf::Struct root;
  auto st = google::protobuf::util::JsonStringToMessage(json, &root);
  if (!st.ok()) {
    t.error = st.ToString();
    return t;
  }
  const auto& f = root.fields();
  if (!f.count("traceEvents") || !f.at("traceEvents").has_list_value()) {
    t.error = "no traceEvents list";
    return t;
  }
  if (f.count("displayTimeUnit")) t.display_time_unit = f.at("displayTimeUnit").string_value();
  if (f.count("metadata")) t.metadata = f.at("metadata").struct_value();
  for (const auto& v : f.at("traceEvents").list_value().values()) {
    const auto& e = v.struct_value().fields();
    ParsedEvent p;
    auto str = [&](const char* k) { return e.count(k) ? e.at(k).string_value() : std::string(); };
    p.name = str("name");
    p.cat = str("cat");
    p.ph = str("ph");
    p.scope = str("s");
    p.has_ts = e.count("ts") && e.at("ts").has_number_value();
    p.has_pid = e.count("pid") && e.at("pid").has_number_value();
    p.has_tid = e.count("tid") && e.at("tid").has_number_value();
    p.has_dur = e.count("dur") && e.at("dur").has_number_value();
    if (p.has_ts) p.ts = e.at("ts").number_value();
    if (p.has_dur) p.dur = e.at("dur").number_value();
    if (p.has_pid) p.pid = static_cast<int>(e.at("pid").number_value());
    if (p.has_tid) p.tid = static_cast<int>(e.at("tid").number_value());
    if (e.count("args")) p.args = e.at("args").struct_value();
    t.events.push_back(std::move(p));
  }
  t.ok = true;
  return t;
}

// Every problem with the trace's structure; empty when it is well formed.
inline std::vector<std::string> StructureProblems(const ParsedTrace& t) {
  std::vector<std::string> problems;
  if (!t.ok) return {"does not parse: " + t.error};
  if (t.display_time_unit.empty()) problems.push_back("no displayTimeUnit");
  if (!t.metadata.fields().count("size_limit_bytes"))
    problems.push_back("metadata lacks size_limit_bytes");
  std::map<std::pair<int, int>, std::vector<const ParsedEvent*>> spans;
  std::map<int, bool> named_process;
  std::map<int, int> tid_pid;
  for (const ParsedEvent& e : t.events) {
    if (e.ph.empty() || !e.has_ts || !e.has_pid || !e.has_tid) {
      problems.push_back(absl::StrCat("event without ph/ts/pid/tid: ", e.name));
      continue;
    }
    // Perfetto keeps pid and tid 0 for the idle process and thread, and takes a tid seen in a
    // second process for a reused one.
    if (e.pid == 0 || e.tid == 0) problems.push_back(absl::StrCat("pid or tid 0: ", e.name));
    if (auto [it, added] = tid_pid.emplace(e.tid, e.pid); !added && it->second != e.pid) {
      problems.push_back(absl::StrCat("tid ", e.tid, " in processes ", it->second, " and ", e.pid));
    }
    if (e.ph == "X") {
      if (!e.has_dur || e.dur < 0)
        problems.push_back(absl::StrCat("span without dur >= 0: ", e.name));
      spans[{e.pid, e.tid}].push_back(&e);
    }
    if (e.ph == "M" && e.name == "process_name") named_process[e.pid] = true;
  }
  for (const ParsedEvent& e : t.events) {
    if (e.ph == "M") continue;
    if (!named_process[e.pid]) problems.push_back(absl::StrCat("process ", e.pid, " has no name"));
    if (t.TrackName(e.pid, e.tid).empty()) {
      problems.push_back(absl::StrCat("track ", e.pid, "/", e.tid, " has no name (", e.name, ")"));
    }
  }
  // Spans on one track either nest or follow each other: Perfetto draws nothing else right.
  for (auto& [track, list] : spans) {
    std::stable_sort(list.begin(), list.end(), [](const ParsedEvent* a, const ParsedEvent* b) {
      return a->ts < b->ts || (a->ts == b->ts && a->dur > b->dur);
    });
    std::vector<const ParsedEvent*> open;
    for (const ParsedEvent* e : list) {
      while (!open.empty() && open.back()->ts + open.back()->dur <= e->ts) open.pop_back();
      if (!open.empty() && e->ts + e->dur > open.back()->ts + open.back()->dur) {
        problems.push_back(absl::StrCat("on track ", track.first, "/", track.second, " '", e->name,
                                        "' overlaps '", open.back()->name, "' without nesting"));
      }
      open.push_back(e);
    }
  }
  return problems;
}

}  // namespace dlaunch::testing
