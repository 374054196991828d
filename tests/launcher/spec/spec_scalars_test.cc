// The scalar forms: durations, the one walltime grammar, command splitting, and the name lists.
#include "launcher/spec/spec_scalars.h"

#include <string_view>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "launcher/spec/names.h"

namespace dlaunch {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(DurationTest, ParsesUnitsAndNumbers) {
  auto seconds = [](std::string_view text) {
    absl::StatusOr<double> value = ParseDuration(text);
    EXPECT_TRUE(value.ok()) << text << ": " << value.status();
    return value.ok() ? *value : -12345.0;
  };
  EXPECT_EQ(seconds("30"), 30);
  EXPECT_EQ(seconds("0.5"), 0.5);
  EXPECT_EQ(seconds("30s"), 30);
  EXPECT_EQ(seconds("5m"), 300);
  EXPECT_EQ(seconds("1h"), 3600);
  EXPECT_EQ(seconds("250ms"), 0.25);
  EXPECT_EQ(seconds("1h30m"), 5400);
  EXPECT_EQ(seconds("1.5s"), 1.5);
  EXPECT_EQ(seconds(" 2m "), 120);
  EXPECT_EQ(seconds("-3s"), -3);
  for (std::string_view bad : {"", "s", "5x", "5 m", "m5", "1e3", "nan", "inf", "--1", "5m5"}) {
    EXPECT_FALSE(ParseDuration(bad).ok()) << bad;
  }
  EXPECT_EQ(ParseDuration("abc").status().message(),
            "\"abc\" is not a duration (seconds, or e.g. \"30s\", \"5m\", \"1h\", \"250ms\")");
}

TEST(DurationTest, FormatsReadBackExactly) {
  EXPECT_EQ(FormatDuration(0), "0s");
  EXPECT_EQ(FormatDuration(0.25), "250ms");
  EXPECT_EQ(FormatDuration(30), "30s");
  EXPECT_EQ(FormatDuration(300), "5m");
  EXPECT_EQ(FormatDuration(7200), "2h");
  EXPECT_EQ(FormatDuration(90), "90s");
  EXPECT_EQ(FormatDuration(1.5), "1500ms");
  EXPECT_EQ(FormatDuration(-10), "-10s");
  for (double value : {0.1, 1.0 / 3, 1e-7, 123456.789, 0.0005, 86400.0 * 365}) {
    absl::StatusOr<double> back = ParseDuration(FormatDuration(value));
    ASSERT_TRUE(back.ok()) << FormatDuration(value);
    EXPECT_EQ(*back, value) << FormatDuration(value);
  }
}

TEST(DurationTest, TheSmallestDurationsReadBackToo) {
  // Found by fuzzing: 1e-46 s was written as "0.000...0s" (40 decimals), which reads as 0.
  for (double value : {1e-46, 5e-324, 1.2345678901234567e-300}) {
    absl::StatusOr<double> back = ParseDuration(FormatDuration(value));
    ASSERT_TRUE(back.ok()) << FormatDuration(value);
    EXPECT_EQ(*back, value) << FormatDuration(value);
  }
}

TEST(WalltimeTest, ParsesSchedulerForms) {
  EXPECT_EQ(*ParseWalltime("01:00:00"), 3600);
  EXPECT_EQ(*ParseWalltime("1:02:03"), 3723);
  EXPECT_EQ(*ParseWalltime("30:00"), 1800);
  EXPECT_EQ(*ParseWalltime("45"), 2700);
  EXPECT_EQ(*ParseWalltime("2-01:00:00"), 2 * 86400 + 3600);
  EXPECT_EQ(*ParseWalltime("90m"), 5400);
  EXPECT_EQ(*ParseWalltime("100:00:00"), 360000);
  for (std::string_view bad : {"", "1:60:00", "1:2:3:4", "a:b", "1.5", "-5", "0.5s", ":30"}) {
    EXPECT_FALSE(ParseWalltime(bad).ok()) << bad;
  }
  EXPECT_EQ(FormatWalltime(3723), "01:02:03");
  EXPECT_EQ(FormatWalltime(360000), "100:00:00");
  EXPECT_EQ(FormatWalltime(0), "00:00:00");
}

// One grammar for job.yaml and site profiles: the union of what each accepted before, where the
// reading is unambiguous.
TEST(WalltimeTest, AcceptsEveryUnambiguousForm) {
  EXPECT_EQ(*ParseWalltime("0:30:00"), 1800);       // H:MM:SS, hours unpadded
  EXPECT_EQ(*ParseWalltime("72:00:00"), 72 * 3600);  // hours beyond a day
  EXPECT_EQ(*ParseWalltime("10"), 600);              // bare number: minutes
  EXPECT_EQ(*ParseWalltime("1-2"), 86400 + 7200);    // Slurm D-HH
  EXPECT_EQ(*ParseWalltime("1-02:30"), 86400 + 9000);  // Slurm D-HH:MM
  EXPECT_EQ(*ParseWalltime("1-02:00:00"), 93600);    // Slurm D-HH:MM:SS
  EXPECT_EQ(*ParseWalltime("2h"), 7200);              // durations with units
  EXPECT_EQ(*ParseWalltime("1h30m"), 5400);
  EXPECT_EQ(*ParseWalltime("1.5h"), 5400);
  EXPECT_EQ(*ParseWalltime("5400s"), 5400);
  EXPECT_EQ(*ParseWalltime("  01:00:00 "), 3600);    // surrounding blanks
  EXPECT_EQ(*ParseWalltime("0:00"), 0);              // zero parses; callers require positive
}

TEST(WalltimeTest, RefusesAmbiguousAndMalformedForms) {
  for (std::string_view bad :
       {"abc", "1::0", "1:00:00\nid", "forever", "1 hour", "0.5", "60.0", "1-", "-", "1-2-3",
        "1-1:60", "1-2h", "2d", "1000000000000", "40000000h", "-1h"}) {
    EXPECT_FALSE(ParseWalltime(bad).ok()) << bad;
  }
}

TEST(WalltimeTest, ErrorNamesTheTextAndTheAcceptedForms) {
  const absl::Status status = ParseWalltime("1:00:00\nid").status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(status.message(),
            "walltime \"1:00:00\\nid\" is not HH:MM:SS, MM:SS, D-HH[:MM[:SS]], a number of "
            "minutes or a duration such as \"2h\"");
}

TEST(WalltimeTest, TwoWrittenFormsReadBack) {
  EXPECT_EQ(FormatWalltimeHms(1800), "0:30:00");
  EXPECT_EQ(FormatWalltimeHms(86400 + 61), "24:01:01");
  for (int seconds : {1, 59, 1800, 3723, 86400 + 61, 360000}) {
    EXPECT_EQ(*ParseWalltime(FormatWalltime(seconds)), seconds);
    EXPECT_EQ(*ParseWalltime(FormatWalltimeHms(seconds)), seconds);
  }
}

TEST(CpuListTest, TasksetFormsParseAndFormatBack) {
  EXPECT_THAT(*ParseCpuList("0-3,8, 10-11"), ElementsAre(0, 1, 2, 3, 8, 10, 11));
  EXPECT_THAT(*ParseCpuList("5"), ElementsAre(5));
  EXPECT_THAT(*ParseCpuList("9,4"), ElementsAre(9, 4));
  for (const char* bad : {"", "a", "-1", "3-1", "1-", "+2", "1,,2", "0-3-5"}) {
    EXPECT_EQ(ParseCpuList(bad).status().code(), absl::StatusCode::kInvalidArgument) << bad;
  }
  EXPECT_EQ(FormatCpuList({0, 1, 2, 3, 8, 10, 11}), "0-3,8,10-11");
  EXPECT_EQ(FormatCpuList({9, 4}), "9,4");
  EXPECT_EQ(FormatCpuList({}), "");
}

TEST(CpuListTest, IdsAndCountsAreBounded) {
  // "0-2147483647" overflowed the expanding loop (and wanted 8 GB on the way).
  EXPECT_EQ(ParseCpuList("0-2147483647").status().message(),
            "\"0-2147483647\" names CPU ids past 65535 or more than 65536 CPUs");
  EXPECT_EQ(ParseCpuList("65536").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ParseCpuList("0-65535")->size(), 65536u);
  EXPECT_EQ(ParseCpuList("0-65535,0").status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(SplitCommandLineTest, QuotesAndEscapes) {
  EXPECT_THAT(*SplitCommandLine("  a   b\tc "), ElementsAre("a", "b", "c"));
  EXPECT_THAT(*SplitCommandLine("a'b c'd"), ElementsAre("ab cd"));
  EXPECT_THAT(*SplitCommandLine("'' \"\""), ElementsAre("", ""));
  EXPECT_THAT(*SplitCommandLine("\"a \\\" \\\\ b\""), ElementsAre("a \" \\ b"));
  EXPECT_THAT(*SplitCommandLine("'$HOME'"), ElementsAre("$HOME"));
  EXPECT_THAT(*SplitCommandLine(""), ElementsAre());
  EXPECT_EQ(SplitCommandLine("a \"b").status().message(), "unterminated double quote");
  EXPECT_EQ(SplitCommandLine("a\\").status().message(), "trailing backslash");
  EXPECT_THAT(std::string(SplitCommandLine("run $HOME/x").status().message()),
              HasSubstr("'$' needs a shell"));
  EXPECT_THAT(std::string(SplitCommandLine("a \"$X\"").status().message()),
              HasSubstr("'$' needs a shell"));
  EXPECT_THAT(std::string(SplitCommandLine("a | b").status().message()),
              HasSubstr("'|' needs a shell"));
  EXPECT_THAT(std::string(SplitCommandLine("a; b").status().message()),
              HasSubstr("';' needs a shell"));
}

TEST(NamesTest, OneListForSchedulersAndLaunchers) {
  EXPECT_THAT(SchedulerTypeNames(), ElementsAre("pbs", "cobalt", "slurm", "local"));
  EXPECT_THAT(NodeLauncherNames(),
              ElementsAre("auto", "local", "ssh", "mpiexec", "mpirun", "srun"));
  EXPECT_THAT(ConcreteNodeLauncherNames(),
              ElementsAre("local", "ssh", "mpiexec", "mpirun", "srun"));
  EXPECT_TRUE(IsSchedulerTypeName("slurm"));
  EXPECT_FALSE(IsSchedulerTypeName("auto"));
  EXPECT_TRUE(IsNodeLauncherName("auto"));
  EXPECT_FALSE(IsConcreteNodeLauncherName("auto"));
  EXPECT_TRUE(IsConcreteNodeLauncherName("srun"));
}

TEST(ByteSizeTest, UnitsArePowersOf1024ExceptTheDecimalOnes) {
  EXPECT_EQ(*ParseByteSize("0"), 0);
  EXPECT_EQ(*ParseByteSize("4096"), 4096);
  EXPECT_EQ(*ParseByteSize("1GiB"), int64_t{1} << 30);
  EXPECT_EQ(*ParseByteSize("1G"), int64_t{1} << 30);
  EXPECT_EQ(*ParseByteSize("512 MiB"), int64_t{512} << 20);
  EXPECT_EQ(*ParseByteSize("1.5g"), int64_t{3} << 29);
  EXPECT_EQ(*ParseByteSize("2TB"), 2000000000000);
  EXPECT_EQ(*ParseByteSize("10k"), 10240);
  for (const char* bad : {"", "G", "-1G", "1 GiBs", "1e3", "99999999999TiB", "1..5G"}) {
    EXPECT_FALSE(ParseByteSize(bad).ok()) << bad;
  }
  for (int64_t bytes : {int64_t{0}, int64_t{1} << 30, int64_t{3} << 29, int64_t{12345}}) {
    EXPECT_EQ(*ParseByteSize(FormatByteSize(bytes)), bytes) << FormatByteSize(bytes);
  }
  EXPECT_EQ(FormatByteSize(int64_t{1} << 30), "1GiB");
}

}  // namespace
}  // namespace dlaunch
