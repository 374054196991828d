#include "launcher/trace/trace_event.h"

#include <algorithm>
#include <utility>

#include "common/json_line.h"

namespace dlaunch {

TraceEvent Span(std::string name, std::string cat, int pid, int tid, int64_t begin_us,
                int64_t end_us, std::string args_json) {
  TraceEvent e;
  e.name = std::move(name);
  e.cat = std::move(cat);
  e.ph = 'X';
  e.ts_us = begin_us;
  e.dur_us = std::max<int64_t>(0, end_us - begin_us);
  e.pid = pid;
  e.tid = tid;
  e.args_json = std::move(args_json);
  return e;
}

TraceEvent Instant(std::string name, std::string cat, int pid, int tid, int64_t ts_us,
                   std::string args_json) {
  TraceEvent e;
  e.name = std::move(name);
  e.cat = std::move(cat);
  e.ph = 'i';
  e.ts_us = ts_us;
  e.pid = pid;
  e.tid = tid;
  e.args_json = std::move(args_json);
  return e;
}

namespace {

TraceEvent Metadata(const char* name, int pid, int tid, std::string args_json) {
  TraceEvent e;
  e.name = name;
  e.cat = "meta";
  e.ph = 'M';
  e.pid = pid;
  e.tid = tid;
  e.args_json = std::move(args_json);
  return e;
}

}  // namespace

TraceEvent ProcessName(int pid, const std::string& name) {
  // Process metadata carries the process's main thread (tid == pid); 0 is Perfetto's idle one.
  return Metadata("process_name", pid, pid, JsonLine().Add("name", name).str());
}

TraceEvent ThreadName(int pid, int tid, const std::string& name) {
  return Metadata("thread_name", pid, tid, JsonLine().Add("name", name).str());
}

TraceEvent ProcessSortIndex(int pid, int sort_index) {
  return Metadata("process_sort_index", pid, pid, JsonLine().Add("sort_index", sort_index).str());
}

TraceEvent ThreadSortIndex(int pid, int tid, int sort_index) {
  return Metadata("thread_sort_index", pid, tid, JsonLine().Add("sort_index", sort_index).str());
}

std::string TraceEventJson(const TraceEvent& e) {
  JsonLine j;
  j.Add("name", e.name).Add("cat", e.cat).Add("ph", std::string(1, e.ph));
  // Metadata events carry ts 0 too: every event has ph, ts, pid and tid.
  j.Add("ts", e.ts_us);
  if (e.ph == 'X') j.Add("dur", e.dur_us);
  if (e.ph == 'i') j.Add("s", std::string(1, e.scope));
  j.Add("pid", e.pid).Add("tid", e.tid);
  if (!e.args_json.empty()) j.AddRaw("args", e.args_json);
  return j.str();
}

}  // namespace dlaunch
