#include "launcher/trace/journal_rows.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <optional>

#include "absl/strings/str_split.h"

namespace dlaunch {
namespace {

void SkipSpace(absl::string_view s, size_t& i) {
  while (i < s.size() && (s[i] == ' ' || s[i] == '\t' || s[i] == '\r')) ++i;
}

// A JSON string at s[i] (the opening quote), unescaped; i moves past its closing quote.
bool ReadString(absl::string_view s, size_t& i, std::string* out) {
  if (i >= s.size() || s[i] != '"') return false;
  out->clear();
  for (++i; i < s.size(); ++i) {
    char c = s[i];
    if (c == '"') {
      ++i;
      return true;
    }
    if (c != '\\') {
      out->push_back(c);
      continue;
    }
    if (++i >= s.size()) return false;
    switch (s[i]) {
      case 'n':
        out->push_back('\n');
        break;
      case 't':
        out->push_back('\t');
        break;
      case 'r':
        out->push_back('\r');
        break;
      case 'b':
        out->push_back('\b');
        break;
      case 'f':
        out->push_back('\f');
        break;
      case 'u':  // kept as written: names and times in the journal are ASCII
        out->append("\\u");
        break;
      default:
        out->push_back(s[i]);
    }
  }
  return false;
}

// Skips a value that is not a string or number: a literal, or a balanced object or list.
bool SkipOther(absl::string_view s, size_t& i) {
  int depth = 0;
  std::string ignored;
  while (i < s.size()) {
    char c = s[i];
    if (c == '"') {
      if (!ReadString(s, i, &ignored)) return false;
      if (depth == 0) return true;
      continue;
    }
    if (c == '{' || c == '[') ++depth;
    if (c == '}' || c == ']') {
      if (depth == 0) return true;  // the end of the enclosing object
      if (--depth == 0) {
        ++i;
        return true;
      }
    }
    if (depth == 0 && c == ',') return true;
    ++i;
  }
  return depth == 0;
}

}  // namespace

bool ScanJsonObject(absl::string_view s,
                    const std::function<void(absl::string_view key, const JsonScalar&)>& field) {
  size_t i = 0;
  SkipSpace(s, i);
  if (i >= s.size() || s[i] != '{') return false;
  ++i;
  std::string key;
  JsonScalar value;
  for (;;) {
    SkipSpace(s, i);
    if (i < s.size() && s[i] == '}') return true;
    if (!ReadString(s, i, &key)) return false;
    SkipSpace(s, i);
    if (i >= s.size() || s[i] != ':') return false;
    ++i;
    SkipSpace(s, i);
    if (i >= s.size()) return false;
    if (s[i] == '"') {
      value.kind = JsonScalar::kString;
      if (!ReadString(s, i, &value.text)) return false;
    } else if (s[i] == '-' || (s[i] >= '0' && s[i] <= '9')) {
      value.kind = JsonScalar::kNumber;
      const std::string number(s.substr(i, std::min<size_t>(64, s.size() - i)));
      char* end = nullptr;
      value.number = std::strtod(number.c_str(), &end);
      if (end == number.c_str()) return false;
      i += static_cast<size_t>(end - number.c_str());
    } else {
      value.kind = JsonScalar::kOther;
      if (!SkipOther(s, i)) return false;
    }
    field(key, value);
    SkipSpace(s, i);
    if (i >= s.size()) return false;
    if (s[i] == ',') {
      ++i;
      continue;
    }
    if (s[i] != '}') return false;
    ++i;
    SkipSpace(s, i);
    return i == s.size();
  }
}

// Well-formed UTF-8 (no overlong forms, surrogates or code points past U+10FFFF): what
// trace.json, a JSON file, may carry.
static bool ValidUtf8(absl::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    int more = 0;
    uint32_t cp = 0;
    if (c < 0x80) {
      ++i;
      continue;
    } else if ((c & 0xE0) == 0xC0) {
      more = 1, cp = c & 0x1F;
    } else if ((c & 0xF0) == 0xE0) {
      more = 2, cp = c & 0x0F;
    } else if ((c & 0xF8) == 0xF0) {
      more = 3, cp = c & 0x07;
    } else {
      return false;
    }
    for (int k = 1; k <= more; ++k) {
      if (i + k >= s.size()) return false;
      const unsigned char cc = static_cast<unsigned char>(s[i + k]);
      if ((cc & 0xC0) != 0x80) return false;
      cp = (cp << 6) | (cc & 0x3F);
    }
    static constexpr uint32_t kMin[] = {0, 0x80, 0x800, 0x10000};
    if (cp < kMin[more] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return false;
    i += more + 1;
  }
  return true;
}

RankStepTrace ParseStepTrace(absl::string_view text) {
  RankStepTrace out;
  for (absl::string_view line : absl::StrSplit(text, '\n', absl::SkipWhitespace())) {
    StepRow r;
    bool has_ts = false, header = false;
    std::string sampling;
    bool text_ok = true;  // its strings reach trace.json: a line with invalid UTF-8 is bad
    bool numbers_ok = true;
    const bool ok = ScanJsonObject(line, [&](absl::string_view key, const JsonScalar& v) {
      if (v.kind == JsonScalar::kString) {
        text_ok = text_ok && ValidUtf8(v.text);
        if (key == "trace")
          header = v.text == "dlaunch-step-trace";
        else if (key == "sampling")
          sampling = v.text;
        else if (key == "span")
          r.span = v.text;
        return;
      }
      if (v.kind != JsonScalar::kNumber) return;
      // A number no int64 holds (1e63 as a step, found by fuzzing) makes the line bad: the
      // conversion would be undefined.
      if (!(std::fabs(v.number) < 9.2e18)) {
        numbers_ok = false;
        return;
      }
      const int64_t n = static_cast<int64_t>(v.number);
      if (key == "ts") {
        r.ts_us = n;
        has_ts = true;
      } else if (key == "step")
        r.step = n;
      else if (key == "data")
        r.data_us = n;
      else if (key == "forward")
        r.forward_us = n;
      else if (key == "backward")
        r.backward_us = n;
      else if (key == "optimizer")
        r.optimizer_us = n;
      else if (key == "dur")
        r.dur_us = n;
      else if (key == "stride")
        r.stride = n > 0 ? n : 1;
    });
    if (ok && text_ok && numbers_ok && header) {
      out.sampling = sampling;
    } else if (ok && text_ok && numbers_ok && has_ts) {
      out.rows.push_back(std::move(r));
    } else {
      ++out.bad_lines;
    }
  }
  return out;
}

}  // namespace dlaunch
