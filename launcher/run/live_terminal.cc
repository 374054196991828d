#include "launcher/run/live_terminal.h"

#include <sys/ioctl.h>
#include <unistd.h>

#include <cerrno>
#include <utility>

#include "absl/strings/str_cat.h"

namespace dlaunch {
namespace {

// Writes all of `text`; a terminal that went away loses it, there is nowhere else to say so.
void WriteAll(int fd, const std::string& text) {
  size_t done = 0;
  while (done < text.size()) {
    ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    done += static_cast<size_t>(n);
  }
}

// Text kept back by a stream until it is flushed, beyond which it goes out anyway.
constexpr size_t kMaxPending = 1 << 16;

}  // namespace

LiveTerminal::LiveTerminal(int out_fd, int err_fd)
    : out_fd_(out_fd),
      out_buf_(this, out_fd),
      err_buf_(this, err_fd),
      out_(&out_buf_),
      err_(&err_buf_) {}

LiveTerminal::~LiveTerminal() {
  out_.flush();
  err_.flush();
}

int LiveTerminal::width() const {
  winsize ws{};
  return ::ioctl(out_fd_, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0 ? ws.ws_col : 80;
}

int LiveTerminal::height() const {
  winsize ws{};
  return ::ioctl(out_fd_, TIOCGWINSZ, &ws) == 0 && ws.ws_row > 0 ? ws.ws_row : 24;
}

std::string LiveTerminal::EraseSequence() const {
  // To the start of the table's first line, then clear to the end of the screen.
  return drawn_lines_ > 0 ? absl::StrCat("\r\x1b[", drawn_lines_, "A\x1b[J") : "";
}

std::string LiveTerminal::TableText() const {
  std::string text;
  for (const std::string& line : table_) absl::StrAppend(&text, line, "\n");
  return text;
}

void LiveTerminal::Draw(std::vector<std::string> lines) {
  if (closed_) return;
  std::string text = EraseSequence();
  table_ = std::move(lines);
  absl::StrAppend(&text, TableText());
  drawn_lines_ = static_cast<int>(table_.size());
  WriteAll(out_fd_, text);
}

void LiveTerminal::Close() {
  out_.flush();
  err_.flush();
  if (closed_) return;
  WriteAll(out_fd_, EraseSequence());
  drawn_lines_ = 0;
  table_.clear();
  closed_ = true;
}

void LiveTerminal::WriteAbove(int fd, const std::string& text) {
  if (closed_ || drawn_lines_ == 0) {
    WriteAll(fd, text);
    return;
  }
  if (fd == out_fd_) {
    WriteAll(fd, absl::StrCat(EraseSequence(), text, TableText()));
    return;
  }
  WriteAll(out_fd_, EraseSequence());
  WriteAll(fd, text);
  WriteAll(out_fd_, TableText());
}

LiveTerminal::Buffer::int_type LiveTerminal::Buffer::overflow(int_type c) {
  if (c != traits_type::eof()) pending_.push_back(traits_type::to_char_type(c));
  if (pending_.size() >= kMaxPending) sync();
  return traits_type::not_eof(c);
}

std::streamsize LiveTerminal::Buffer::xsputn(const char* s, std::streamsize n) {
  pending_.append(s, static_cast<size_t>(n));
  if (pending_.size() >= kMaxPending) sync();
  return n;
}

int LiveTerminal::Buffer::sync() {
  // Only whole lines go above the table; a partial one waits for its newline (or the limit).
  size_t end = pending_.rfind('\n');
  if (end == std::string::npos && pending_.size() < kMaxPending) return 0;
  end = end == std::string::npos ? pending_.size() : end + 1;
  terminal_->WriteAbove(fd_, pending_.substr(0, end));
  pending_.erase(0, end);
  return 0;
}

}  // namespace dlaunch
