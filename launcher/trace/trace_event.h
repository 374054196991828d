// One event of the Chrome trace event format (the JSON that Perfetto's UI and chrome://tracing
// open) and its JSON text. Times are integral microseconds since the job started.
#pragma once

#include <cstdint>
#include <string>

namespace dlaunch {

struct TraceEvent {
  std::string name;
  std::string cat;  // launcher, node, worker, report, step, phase, meta
  char ph = 'i';    // 'X' complete span, 'i' instant, 'M' metadata
  int64_t ts_us = 0;
  int64_t dur_us = 0;  // 'X' only
  int pid = 0;
  int tid = 0;
  char scope = 't';       // 'i' only: thread, process or global
  std::string args_json;  // a JSON object, or "" for none
};

TraceEvent Span(std::string name, std::string cat, int pid, int tid, int64_t begin_us,
                int64_t end_us, std::string args_json = "");
TraceEvent Instant(std::string name, std::string cat, int pid, int tid, int64_t ts_us,
                   std::string args_json = "");
// process_name / thread_name / *_sort_index metadata, which name and order the tracks.
TraceEvent ProcessName(int pid, const std::string& name);
TraceEvent ThreadName(int pid, int tid, const std::string& name);
TraceEvent ProcessSortIndex(int pid, int sort_index);
TraceEvent ThreadSortIndex(int pid, int tid, int sort_index);

std::string TraceEventJson(const TraceEvent& e);

}  // namespace dlaunch
