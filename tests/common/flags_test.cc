#include "common/flags.h"

#include "gtest/gtest.h"

namespace dlaunch {
namespace {

struct Opts {
  int port = -1;
  double grace = -1;
  std::string launcher;
  bool dry = false;
};

std::vector<Flag> Table(Opts* o) {
  return {
      {{"--port"}, true, IntFlag("--port", &o->port, 0, 65535)},
      {{"--grace"}, true, DoubleFlag("--grace", &o->grace, 0)},
      {{"--launcher"}, true, ChoiceFlag("--launcher", &o->launcher, {"local", "ssh"})},
      {{"--dry-run", "--dry_run"}, false, SwitchFlag(&o->dry)},
  };
}

TEST(ParseFlagsTest, AcceptsBothSpellingsPositionalsAndStopsAtDashes) {
  Opts o;
  ParsedArgs p;
  ASSERT_TRUE(ParseFlags({"job.yaml", "--port", "80", "--grace=2.5", "--dry_run", "--", "x", "--port"},
                         Table(&o), &p).ok());
  EXPECT_EQ(o.port, 80);
  EXPECT_DOUBLE_EQ(o.grace, 2.5);
  EXPECT_TRUE(o.dry);
  EXPECT_EQ(p.positional, std::vector<std::string>{"job.yaml"});
  EXPECT_TRUE(p.saw_dashes);
  EXPECT_EQ(p.after_dashes, (std::vector<std::string>{"x", "--port"}));
}

TEST(ParseFlagsTest, ErrorsNameTheFlagAndWhatItWants) {
  Opts o;
  ParsedArgs p;
  auto st = ParseFlags({"--port", "99999"}, Table(&o), &p);
  EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(st.message(), "--port: expected an integer in 0..65535, got '99999'");
  st = ParseFlags({"--launcher", "rsh"}, Table(&o), &p);
  EXPECT_EQ(st.message(), "--launcher: expected one of local, ssh, got 'rsh'");
  st = ParseFlags({"--grace"}, Table(&o), &p);
  EXPECT_EQ(st.message(), "--grace needs a value");
  st = ParseFlags({"--dry-run=yes"}, Table(&o), &p);
  EXPECT_EQ(st.message(), "--dry-run takes no value");
}

TEST(ParseFlagsTest, UnknownFlagGetsASuggestion) {
  Opts o;
  ParsedArgs p;
  auto st = ParseFlags({"--prot", "1"}, Table(&o), &p);
  EXPECT_EQ(st.message(), "unknown flag --prot (did you mean --port?)");
  st = ParseFlags({"--zzzzzzz"}, Table(&o), &p);
  EXPECT_EQ(st.message(), "unknown flag --zzzzzzz");
}

}  // namespace
}  // namespace dlaunch
