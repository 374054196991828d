// LiveTerminal: keeps a table drawn at the bottom of a terminal while other text (rank output,
// `[dlaunch]` lines) scrolls above it, with plain ANSI cursor movement. Its out() and err()
// streams erase the table, write what was flushed to them, and draw the table again, so a
// writer flushing whole lines (as JobController does) needs no change. One thread.
#pragma once

#include <ostream>
#include <streambuf>
#include <string>
#include <vector>

namespace dlaunch {

class LiveTerminal {
 public:
  // `out_fd` is the terminal the table is drawn on; `err_fd` may be the same terminal.
  LiveTerminal(int out_fd, int err_fd);
  ~LiveTerminal();
  LiveTerminal(const LiveTerminal&) = delete;
  LiveTerminal& operator=(const LiveTerminal&) = delete;

  std::ostream& out() { return out_; }
  std::ostream& err() { return err_; }
  // The terminal's size now (80x24 when it cannot be read).
  int width() const;
  int height() const;
  // Replaces the table; each line must fit the width (a wrapped line would throw off the
  // erase that follows).
  void Draw(std::vector<std::string> lines);
  // Erases the table for good: later text just scrolls.
  void Close();

 private:
  class Buffer : public std::streambuf {
   public:
    Buffer(LiveTerminal* terminal, int fd) : terminal_(terminal), fd_(fd) {}

   protected:
    int_type overflow(int_type c) override;
    std::streamsize xsputn(const char* s, std::streamsize n) override;
    int sync() override;

   private:
    LiveTerminal* terminal_;
    int fd_;
    std::string pending_;
  };

  // Erases the table, writes `text` to `fd`, draws the table again.
  void WriteAbove(int fd, const std::string& text);
  std::string EraseSequence() const;
  std::string TableText() const;

  const int out_fd_;
  std::vector<std::string> table_;
  int drawn_lines_ = 0;   // lines of the table now on the screen
  bool closed_ = false;
  Buffer out_buf_, err_buf_;
  std::ostream out_, err_;
};

}  // namespace dlaunch
