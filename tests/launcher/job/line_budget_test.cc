#include "launcher/job/line_budget.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace dlaunch {
namespace {

using ::testing::HasSubstr;
using ::testing::IsEmpty;

TEST(LineBudgetTest, PrintsUpToTheRateAndCountsTheRest) {
  LineBudget b(100);
  EXPECT_EQ(b.Take(60, 0.0), 60);
  EXPECT_EQ(b.Take(60, 0.5), 40);  // 100 in the second that started at 0
  EXPECT_EQ(b.Take(10, 0.9), 0);
  EXPECT_EQ(b.held_back(), 30);
  // Said at once the first time, then at most once a second, each time what was not said yet.
  EXPECT_THAT(b.Note(0.9), HasSubstr("30 line(s) of the workers' output not shown (more than 100 "
                                     "a second; 30 in all)"));
  EXPECT_EQ(b.Take(150, 1.0), 100);  // a new second
  EXPECT_THAT(b.Note(1.2), IsEmpty());
  EXPECT_THAT(b.Note(1.95), HasSubstr("50 line(s) of the workers' output not shown (more than 100 "
                                      "a second; 80 in all)"));
  EXPECT_THAT(b.Note(3.0), IsEmpty()) << "nothing new to say";
  EXPECT_EQ(b.Take(5, 3.1), 5);
  b.Take(200, 3.2);
  EXPECT_THAT(b.Note(3.3, /*force=*/true), HasSubstr("105 line(s)"));  // the job's end
}

}  // namespace
}  // namespace dlaunch
