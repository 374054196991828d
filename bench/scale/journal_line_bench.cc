// What one journal line costs to print: protobuf's JSON printer against QuickJson
// (launcher/jobdir/json_print.h), for the lines a large job writes most (a rank's STEP report in
// metrics.jsonl, a worker_started event in events.jsonl). Interleaved rounds; prints the median
// nanoseconds per line of each and their ratio.
//   journal_line_bench [lines per round, default 200000] [rounds, default 7]
#include <google/protobuf/util/json_util.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#include "dlaunch/journal.pb.h"
#include "launcher/jobdir/json_print.h"

namespace {

using Clock = std::chrono::steady_clock;

std::string Protobuf(const google::protobuf::Message& m) {
  google::protobuf::util::JsonPrintOptions options;
  options.preserve_proto_field_names = true;
  options.always_print_primitive_fields = true;
  std::string out;
  (void)google::protobuf::util::MessageToJsonString(m, &out, options);
  return out;
}

std::string Quick(const google::protobuf::Message& m) {
  std::string out;
  if (!dlaunch::QuickJson(m, &out)) std::abort();  // these lines must take the quick path
  return out;
}

double NsPerLine(const std::function<std::string(const google::protobuf::Message&)>& print,
                 const std::vector<dlaunch::v1::MetricLine>& lines) {
  size_t bytes = 0;
  const Clock::time_point t0 = Clock::now();
  for (const auto& l : lines) bytes += print(l).size();
  const double ns = std::chrono::duration<double, std::nano>(Clock::now() - t0).count();
  if (bytes == 0) std::abort();
  return ns / lines.size();
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  const int n = argc > 1 ? std::atoi(argv[1]) : 200000;
  const int rounds = argc > 2 ? std::atoi(argv[2]) : 7;
  std::vector<dlaunch::v1::MetricLine> lines(n);
  for (int i = 0; i < n; ++i) {
    auto& l = lines[i];
    l.set_time("2026-11-26T21:49:43.299Z");
    l.set_node_id(i / 4);
    auto* r = l.mutable_report();
    r->set_kind(dlaunch::v1::WorkerReport::STEP);
    r->set_rank(i);
    r->set_step(10 * (i % 1000));
    r->set_samples(640);
    r->set_interval_s(1.0);
    r->set_loss(1.0 / (1 + i % 1000 / 100.0));
    r->set_samples_per_sec(640.0 / (0.9 + (i % 7) / 70.0));
    r->set_total_steps(400);
    r->set_phase(dlaunch::v1::WorkerReport::TRAINING);
  }
  std::vector<double> pb, quick;
  for (int k = 0; k < rounds; ++k) {
    pb.push_back(NsPerLine(Protobuf, lines));
    quick.push_back(NsPerLine(Quick, lines));
  }
  std::printf("metric line (STEP report), %d lines x %d rounds: protobuf %.0f ns, quick %.0f ns "
              "per line (median), %.1fx\n",
              n, rounds, Median(pb), Median(quick), Median(pb) / Median(quick));
  return 0;
}
