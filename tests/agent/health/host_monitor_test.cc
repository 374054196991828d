// HostMonitor: load, memory and memory pressure parsed from /proc texts, and a real sample of
// this machine with the free space of a directory.
#include "agent/health/host_monitor.h"

#include <gtest/gtest.h>

namespace dlaunch {
namespace {

TEST(HostMonitorTest, ParsesLoadMemoryAndPressure) {
  EXPECT_DOUBLE_EQ(ParseLoad1("2.14 1.90 1.50 3/812 12345\n"), 2.14);
  EXPECT_DOUBLE_EQ(ParseLoad1(""), -1);
  v1::HostSample s;
  ParseMeminfo("MemTotal:       24576000 kB\nMemFree:  100 kB\nMemAvailable:   1536000 kB\n", &s);
  EXPECT_EQ(s.mem_total_kb(), 24576000);
  EXPECT_EQ(s.mem_available_kb(), 1536000);
  EXPECT_DOUBLE_EQ(ParseMemoryPressure("some avg10=12.50 avg60=3.00 avg300=1.00 total=99\n"
                                       "full avg10=1.00 avg60=0.00 avg300=0.00 total=9\n"),
                   12.5);
  EXPECT_DOUBLE_EQ(ParseMemoryPressure(""), -1);
}

TEST(HostMonitorTest, ASampleOfThisMachine) {
  v1::HostSample s = HostMonitor({"/tmp", "/no/such/dir"}).Sample();
  EXPECT_GT(s.cpus(), 0);
  EXPECT_GT(s.mem_total_kb(), 0);
  EXPECT_GT(s.mem_available_kb(), 0);
  EXPECT_LE(s.mem_available_kb(), s.mem_total_kb());
  ASSERT_EQ(s.disks_size(), 1);  // a directory that is not there is left out
  EXPECT_EQ(s.disks(0).path(), "/tmp");
  EXPECT_GT(s.disks(0).total_bytes(), 0);
  EXPECT_LE(s.disks(0).free_bytes(), s.disks(0).total_bytes());
}

}  // namespace
}  // namespace dlaunch
