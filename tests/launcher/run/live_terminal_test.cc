#include "launcher/run/live_terminal.h"

#include <fcntl.h>
#include <unistd.h>

#include <gtest/gtest.h>

namespace dlaunch {
namespace {

// The terminal writes into pipes here; what a terminal would get is read back from them.
class LiveTerminalTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(pipe(out_), 0);
    ASSERT_EQ(pipe(err_), 0);
    fcntl(out_[0], F_SETFL, O_NONBLOCK);
    fcntl(err_[0], F_SETFL, O_NONBLOCK);
  }
  void TearDown() override {
    for (int fd : {out_[0], out_[1], err_[0], err_[1]}) close(fd);
  }
  static std::string Drain(int fd) {
    std::string text;
    char buf[4096];
    for (ssize_t n; (n = read(fd, buf, sizeof(buf))) > 0;) text.append(buf, static_cast<size_t>(n));
    return text;
  }
  int out_[2];
  int err_[2];
};

TEST_F(LiveTerminalTest, TextScrollsAboveTheTableWhichIsRedrawnBelowIt) {
  LiveTerminal t(out_[1], err_[1]);
  t.Draw({"table 1", "row a"});
  EXPECT_EQ(Drain(out_[0]), "table 1\nrow a\n");
  t.out() << "[rank 0] hello\n" << std::flush;
  // Up two lines, clear to the end of the screen, the text, the table again.
  EXPECT_EQ(Drain(out_[0]), "\r\x1b[2A\x1b[J[rank 0] hello\ntable 1\nrow a\n");
  t.Draw({"table 2"});
  EXPECT_EQ(Drain(out_[0]), "\r\x1b[2A\x1b[Jtable 2\n");
}

TEST_F(LiveTerminalTest, PartialLinesWaitForTheirNewline) {
  LiveTerminal t(out_[1], err_[1]);
  t.Draw({"table"});
  Drain(out_[0]);
  t.out() << "half" << std::flush;
  EXPECT_EQ(Drain(out_[0]), "");
  t.out() << " line\nnext" << std::flush;
  EXPECT_EQ(Drain(out_[0]), "\r\x1b[1A\x1b[Jhalf line\ntable\n");
}

TEST_F(LiveTerminalTest, StderrTextGoesToItsOwnStreamAroundTheTable) {
  LiveTerminal t(out_[1], err_[1]);
  t.Draw({"table"});
  Drain(out_[0]);
  t.err() << "[dlaunch] error: x\n" << std::flush;
  EXPECT_EQ(Drain(err_[0]), "[dlaunch] error: x\n");
  EXPECT_EQ(Drain(out_[0]), "\r\x1b[1A\x1b[Jtable\n");
}

TEST_F(LiveTerminalTest, CloseErasesTheTableForGood) {
  LiveTerminal t(out_[1], err_[1]);
  t.Draw({"a", "b", "c"});
  Drain(out_[0]);
  t.Close();
  EXPECT_EQ(Drain(out_[0]), "\r\x1b[3A\x1b[J");
  t.Draw({"ignored"});
  t.out() << "after\n" << std::flush;
  EXPECT_EQ(Drain(out_[0]), "after\n");
}

}  // namespace
}  // namespace dlaunch
