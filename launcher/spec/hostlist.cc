#include "launcher/spec/hostlist.h"

#include <algorithm>
#include <cctype>
#include <cstdint>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"

namespace dlaunch {
namespace {

absl::Status BadHostlist(absl::string_view hostlist, absl::string_view reason) {
  // A hostlist can be megabytes long; the message quotes its start.
  const bool cut = hostlist.size() > 200;
  return absl::InvalidArgumentError(absl::StrCat(
      "bad hostlist \"", hostlist.substr(0, 200), cut ? "...\": " : "\": ", reason));
}

bool AllDigits(absl::string_view s) {
  if (s.empty()) return false;
  for (char c : s) {
    if (!absl::ascii_isdigit(static_cast<unsigned char>(c))) return false;
  }
  return true;
}

// `value` written with at least `width` digits.
std::string Padded(uint64_t value, size_t width) {
  std::string digits = absl::StrCat(value);
  if (digits.size() < width) digits.insert(0, width - digits.size(), '0');
  return digits;
}

// Splits on commas that are outside brackets, checking bracket balance on the way.
absl::StatusOr<std::vector<absl::string_view>> SplitItems(absl::string_view hostlist) {
  std::vector<absl::string_view> items;
  size_t start = 0;
  bool in_bracket = false;
  size_t open_at = 0;
  for (size_t i = 0; i < hostlist.size(); ++i) {
    const char c = hostlist[i];
    if (c == '[') {
      if (in_bracket) {
        return BadHostlist(hostlist, absl::StrCat("nested '[' at offset ", i));
      }
      in_bracket = true;
      open_at = i;
    } else if (c == ']') {
      if (!in_bracket) {
        return BadHostlist(hostlist, absl::StrCat("']' at offset ", i, " has no matching '['"));
      }
      in_bracket = false;
    } else if (c == ',' && !in_bracket) {
      items.push_back(hostlist.substr(start, i - start));
      start = i + 1;
      if (items.size() >= kMaxHostlistHosts) {
        return BadHostlist(hostlist, absl::StrCat("more than ", kMaxHostlistHosts, " hosts"));
      }
    }
  }
  if (in_bracket) {
    return BadHostlist(hostlist, absl::StrCat("'[' at offset ", open_at, " has no matching ']'"));
  }
  items.push_back(hostlist.substr(start));
  return items;
}

// The numbers inside one bracket group, e.g. "001-004,007" -> 001 002 003 004 007.
absl::StatusOr<std::vector<std::string>> ExpandRanges(absl::string_view hostlist,
                                                      absl::string_view ranges) {
  std::vector<std::string> out;
  if (ranges.empty()) return BadHostlist(hostlist, "empty brackets");
  for (absl::string_view range : absl::StrSplit(ranges, ',')) {
    std::vector<absl::string_view> ends = absl::StrSplit(range, absl::MaxSplits('-', 1));
    const absl::string_view lo_text = ends[0];
    const absl::string_view hi_text = ends.size() > 1 ? ends[1] : ends[0];
    if (!AllDigits(lo_text) || !AllDigits(hi_text)) {
      return BadHostlist(hostlist,
                         absl::StrCat("'", range, "' is not a number or a lo-hi range of numbers"));
    }
    uint64_t lo = 0;
    uint64_t hi = 0;
    if (lo_text.size() > 18 || hi_text.size() > 18 || !absl::SimpleAtoi(lo_text, &lo) ||
        !absl::SimpleAtoi(hi_text, &hi)) {
      return BadHostlist(hostlist, absl::StrCat("'", range, "' is out of range"));
    }
    if (lo > hi) {
      return BadHostlist(hostlist, absl::StrCat("range '", range, "' runs backwards"));
    }
    if (hi - lo >= kMaxHostlistHosts || out.size() + (hi - lo + 1) > kMaxHostlistHosts) {
      return BadHostlist(hostlist, absl::StrCat("more than ", kMaxHostlistHosts, " hosts"));
    }
    for (uint64_t v = lo; v <= hi; ++v) out.push_back(Padded(v, lo_text.size()));
  }
  return out;
}

// The longest name `item` expands to: its literal text and, per bracket group, the widest
// number a range in it writes (the item's brackets are balanced, SplitItems checked).
size_t LongestName(absl::string_view item) {
  size_t length = 0;
  size_t i = 0;
  while (i < item.size()) {
    if (item[i] != '[') {
      ++length;
      ++i;
      continue;
    }
    const size_t close = item.find(']', i);
    size_t widest = 0;
    for (absl::string_view number : absl::StrSplit(item.substr(i + 1, close - i - 1),
                                                   absl::ByAnyChar(",-"))) {
      widest = std::max(widest, number.size());
    }
    length += widest;
    i = close + 1;
  }
  return length;
}

// `bytes`: the characters of `hosts` so far.
absl::Status ExpandItem(absl::string_view hostlist, absl::string_view item,
                        std::vector<std::string>* hosts, size_t* bytes) {
  const size_t longest = LongestName(item);
  if (longest > kMaxHostNameLength) {
    return BadHostlist(hostlist, absl::StrCat("'", item.substr(0, 40),
                                              "...' names a host of more than ",
                                              kMaxHostNameLength, " characters"));
  }
  // Product of the literal pieces and bracket groups, leftmost group varying slowest.
  std::vector<std::string> partial = {""};
  size_t i = 0;
  while (i < item.size()) {
    if (item[i] == '[') {
      const size_t close = item.find(']', i);
      absl::StatusOr<std::vector<std::string>> numbers =
          ExpandRanges(hostlist, item.substr(i + 1, close - i - 1));
      if (!numbers.ok()) return numbers.status();
      if (partial.size() * numbers->size() + hosts->size() > kMaxHostlistHosts) {
        return BadHostlist(hostlist, absl::StrCat("more than ", kMaxHostlistHosts, " hosts"));
      }
      // Many short groups multiply as one large range does, with longer names.
      if (partial.size() * numbers->size() * longest + *bytes > kMaxHostlistBytes) {
        return BadHostlist(hostlist, absl::StrCat("more than ", kMaxHostlistBytes >> 20,
                                                  " MiB of host names"));
      }
      std::vector<std::string> next;
      next.reserve(partial.size() * numbers->size());
      for (const std::string& prefix : partial) {
        for (const std::string& number : *numbers) next.push_back(prefix + number);
      }
      partial = std::move(next);
      i = close + 1;
    } else {
      const size_t next_bracket = std::min(item.find('[', i), item.size());
      const absl::string_view literal = item.substr(i, next_bracket - i);
      for (std::string& prefix : partial) absl::StrAppend(&prefix, literal);
      i = next_bracket;
    }
  }
  if (hosts->size() + partial.size() > kMaxHostlistHosts) {
    return BadHostlist(hostlist, absl::StrCat("more than ", kMaxHostlistHosts, " hosts"));
  }
  for (std::string& host : partial) {
    *bytes += host.size();
    hosts->push_back(std::move(host));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::vector<std::string>> ExpandHostlist(std::string_view hostlist_view) {
  const absl::string_view hostlist(hostlist_view.data(), hostlist_view.size());
  const absl::string_view trimmed = absl::StripAsciiWhitespace(hostlist);
  if (trimmed.empty()) return BadHostlist(hostlist, "no hosts");
  absl::StatusOr<std::vector<absl::string_view>> items = SplitItems(trimmed);
  if (!items.ok()) return items.status();
  std::vector<std::string> hosts;
  size_t bytes = 0;
  for (absl::string_view raw_item : *items) {
    const absl::string_view item = absl::StripAsciiWhitespace(raw_item);
    if (item.empty()) return BadHostlist(hostlist, "empty host name");
    for (char c : item) {
      if (absl::ascii_isspace(static_cast<unsigned char>(c))) {
        return BadHostlist(hostlist, absl::StrCat("'", item, "' contains whitespace"));
      }
    }
    if (absl::Status status = ExpandItem(hostlist, item, &hosts, &bytes); !status.ok()) {
      return status;
    }
  }
  return hosts;
}

}  // namespace dlaunch
