#include "launcher/trace/json_lines.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace dlaunch {
namespace {

TEST(JsonLinesTest, TornAndBlankLinesAreCountedNotFatal) {
  JsonLines lines = ParseJsonLines("{\"a\":1}\n\n{\"b\":\"x\"}\n{\"c\":");
  ASSERT_EQ(lines.records.size(), 2u);
  EXPECT_EQ(lines.bad_lines, 1);
  EXPECT_EQ(NumberField(lines.records[0], "a"), 1.0);
  EXPECT_EQ(StringField(lines.records[1], "b"), "x");
  EXPECT_EQ(NumberField(lines.records[1], "b"), std::nullopt);
  EXPECT_EQ(StringField(lines.records[1], "missing"), "");
}

TEST(JsonLinesTest, ObjectsGoBackToJsonWithSortedKeysAndTheirTypes) {
  JsonLines lines = ParseJsonLines(
      "{\"z\":[1,\"two\",true,null],\"a\":{\"n\":1.5,\"big\":1795428000123456},\"s\":\"q\\\"\"}");
  ASSERT_EQ(lines.records.size(), 1u);
  EXPECT_EQ(
      ObjectJson(lines.records[0]),
      "{\"a\":{\"big\":1795428000123456,\"n\":1.5},\"s\":\"q\\\"\",\"z\":[1,\"two\",true,null]}");
  ASSERT_NE(ObjectField(lines.records[0], "a"), nullptr);
  EXPECT_EQ(ObjectField(lines.records[0], "s"), nullptr);
}

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
