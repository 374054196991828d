// Host lines of metrics.jsonl as counter tracks under each node's process in trace.json.
#include "launcher/trace/host_counters.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "launcher/jobdir/journal.h"
#include "launcher/trace/trace_builder.h"

namespace dlaunch {
namespace {

using ::testing::HasSubstr;

TEST(HostCountersTest, EachHostLineIsLoadMemoryAndPressureOnItsNode) {
  // Reports and host lines in one metrics.jsonl: the reader keeps them apart.
  MetricJournal j = ParseMetricJournal(
      "{\"time\":\"2026-11-25T10:00:01Z\",\"nodeId\":1,\"round\":0,\"report\":{\"rank\":2,\"step\":5}}\n"
      "{\"time\":\"2026-11-25T10:00:02Z\",\"nodeId\":1,\"round\":0,\"host\":{\"load1\":2.5,\"cpus\":8,"
      "\"memTotalKb\":8388608,\"memAvailableKb\":2097152,\"memPressurePct\":-1}}\n"
      "{\"time\":\"2026-11-25T10:00:03Z\",\"nodeId\":0,\"round\":0,\"host\":{\"load1\":1,\"cpus\":8,"
      "\"memTotalKb\":8388608,\"memAvailableKb\":1048576,\"memPressurePct\":7.5}}\n");
  ASSERT_EQ(j.metrics.size(), 1u);
  ASSERT_EQ(j.hosts.size(), 2u);
  EXPECT_EQ(j.bad_lines, 0);
  const int64_t origin = 1795600800000000;  // 2026-11-25T10:00:00Z
  std::vector<TraceEvent> c = HostCounters(j.hosts, origin);
  ASSERT_EQ(c.size(), 5u);  // node 1 has no PSI: two counters; node 0 three
  EXPECT_EQ(c[0].ph, 'C');
  EXPECT_EQ(c[0].pid, NodePid(1));
  EXPECT_EQ(c[0].name, "load (1 min)");
  EXPECT_EQ(c[0].ts_us, 2000000);
  EXPECT_EQ(c[1].name, "memory available (GiB)");
  EXPECT_EQ(c[1].args_json, "{\"value\":2.000}");
  EXPECT_EQ(c[4].name, "memory pressure (%)");
  EXPECT_EQ(c[4].pid, NodePid(0));
  EXPECT_THAT(TraceEventJson(c[4]), HasSubstr("\"ph\":\"C\""));
}

}  // namespace
}  // namespace dlaunch
