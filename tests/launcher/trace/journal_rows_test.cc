#include "launcher/trace/journal_rows.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <string>

namespace dlaunch {
namespace {

TEST(ScanJsonObjectTest, ReadsStringsAndNumbersAndSkipsTheRest) {
  std::map<std::string, std::string> seen;
  const bool ok = ScanJsonObject(
      "{\"a\":\"x\\\"y\",\"n\":-1.5e2, "
      "\"o\":{\"k\":[1,{\"z\":\"}\"}]},\"t\":true,\"l\":[],\"e\":7}",
      [&](absl::string_view key, const JsonScalar& v) {
        seen[std::string(key)] = v.kind == JsonScalar::kString   ? "s:" + v.text
                                 : v.kind == JsonScalar::kNumber ? "n:" + std::to_string(v.number)
                                                                 : "other";
      });
  ASSERT_TRUE(ok);
  EXPECT_EQ(seen["a"], "s:x\"y");
  EXPECT_EQ(seen["n"], "n:-150.000000");
  EXPECT_EQ(seen["o"], "other");
  EXPECT_EQ(seen["t"], "other");
  EXPECT_EQ(seen["l"], "other");
  EXPECT_EQ(seen["e"], "n:7.000000");
}

TEST(ScanJsonObjectTest, RefusesWhatIsNotOneWholeObject) {
  auto ignore = [](absl::string_view, const JsonScalar&) {};
  EXPECT_FALSE(ScanJsonObject("{\"time\":\"2026-11-23T10:00:0", ignore));
  EXPECT_FALSE(ScanJsonObject("[1,2]", ignore));
  EXPECT_FALSE(ScanJsonObject("{\"a\":1} trailing", ignore));
  EXPECT_FALSE(ScanJsonObject("{\"a\" 1}", ignore));
  EXPECT_TRUE(ScanJsonObject("  {}  ", ignore));
}

TEST(JournalRowsTest, StepTraceLinesBecomeRowsAndTheHeaderItsRule) {
  RankStepTrace t = ParseStepTrace(
      "{\"trace\":\"dlaunch-step-trace\",\"version\":1,\"rank\":0,\"sampling\":\"every step\"}\n"
      "{\"step\":7,\"ts\":1795428001000000,\"data\":50,\"forward\":250,\"backward\":600,"
      "\"optimizer\":100,\"stride\":2}\n"
      "{\"span\":\"checkpoint\",\"step\":8,\"ts\":1795428002000000,\"dur\":4000,\"stride\":1}\n"
      "{\"step\":9,\"ts\":17954");
  EXPECT_EQ(t.sampling, "every step");
  EXPECT_EQ(t.bad_lines, 1);
  ASSERT_EQ(t.rows.size(), 2u);
  EXPECT_EQ(t.rows[0].step, 7);
  EXPECT_EQ(t.rows[0].ts_us, 1795428001000000);
  EXPECT_EQ(t.rows[0].backward_us, 600);
  EXPECT_EQ(t.rows[0].stride, 2);
  EXPECT_TRUE(t.rows[0].span.empty());
  EXPECT_EQ(t.rows[1].span, "checkpoint");
  EXPECT_EQ(t.rows[1].dur_us, 4000);
}

TEST(JournalRowsTest, AStepTraceLineWithInvalidUtf8IsBadNotCopiedIntoTheTrace) {
  RankStepTrace t = ParseStepTrace(
      "{\"span\":\"ch\xffpoint\",\"step\":8,\"ts\":1795428002000000,\"dur\":4000}\n"
      "{\"span\":\"\xed\xa0\x80\",\"step\":9,\"ts\":1795428002000000,\"dur\":4000}\n"
      "{\"span\":\"caf\xc3\xa9\",\"step\":10,\"ts\":1795428003000000,\"dur\":4000}\n");
  EXPECT_EQ(t.bad_lines, 2);
  ASSERT_EQ(t.rows.size(), 1u);
  EXPECT_EQ(t.rows[0].span, "caf\xc3\xa9");
}

// Found by fuzzing: a number no int64 holds was converted anyway (undefined behaviour).
TEST(JournalRowsTest, AStepTraceLineWithANumberNoInt64HoldsIsBad) {
  RankStepTrace t = ParseStepTrace(
      "{\"step\":1.79562e+63,\"ts\":1795428002000000,\"dur\":4000}\n"
      "{\"step\":3,\"ts\":-1e300,\"dur\":4000}\n"
      "{\"step\":4,\"ts\":1795428003000000,\"dur\":4000}\n");
  EXPECT_EQ(t.bad_lines, 2);
  ASSERT_EQ(t.rows.size(), 1u);
  EXPECT_EQ(t.rows[0].step, 4);
}

}  // namespace
}  // namespace dlaunch
