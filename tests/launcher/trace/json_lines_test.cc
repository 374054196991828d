#include "launcher/trace/json_lines.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace dlaunch {
namespace {

TEST(JsonLinesTest, JournalTimesAreUnixMicroseconds) {
  EXPECT_EQ(ParseTimeMicros("2026-11-23T10:00:00.000Z"), 1795428000000000);
  EXPECT_EQ(ParseTimeMicros("2026-11-23T10:00:01.250Z"), 1795428001250000);
  EXPECT_EQ(ParseTimeMicros("2024-02-29T23:59:59.999Z"), 1709251199999000);
  EXPECT_EQ(ParseTimeMicros("2026-11-23T11:00:00.5+01:00"), 1795428000500000);  // general form
  EXPECT_EQ(ParseTimeMicros("2026-11-23T10:00:0x.000Z"), std::nullopt);
  EXPECT_EQ(ParseTimeMicros("yesterday"), std::nullopt);
}

}  // namespace
}  // namespace dlaunch
