#include "launcher/trace/json_lines.h"

#include <google/protobuf/util/json_util.h>

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "absl/strings/str_split.h"
#include "absl/time/civil_time.h"
#include "absl/time/time.h"
#include "common/json_line.h"

namespace dlaunch {

using google::protobuf::Value;

const JsonRecord* ObjectField(const JsonRecord& r, const std::string& key) {
  auto it = r.fields().find(key);
  if (it == r.fields().end() || it->second.kind_case() != Value::kStructValue) return nullptr;
  return &it->second.struct_value();
}

namespace {

// "YYYY-MM-DDTHH:MM:SS.mmmZ", the form dlaunch writes (NowRfc3339), read without absl's general
// parser, which costs more than the rest of a metrics line together.
std::optional<int64_t> ParseJournalTime(const std::string& s) {
  if (s.size() != 24 || s[4] != '-' || s[7] != '-' || s[10] != 'T' || s[13] != ':' ||
      s[16] != ':' || s[19] != '.' || s[23] != 'Z') {
    return std::nullopt;
  }
  auto num = [&](int pos, int len, int* out) {
    *out = 0;
    for (int i = pos; i < pos + len; ++i) {
      if (s[i] < '0' || s[i] > '9') return false;
      *out = *out * 10 + (s[i] - '0');
    }
    return true;
  };
  int y, mo, d, h, mi, sec, ms;
  if (!num(0, 4, &y) || !num(5, 2, &mo) || !num(8, 2, &d) || !num(11, 2, &h) ||
      !num(14, 2, &mi) || !num(17, 2, &sec) || !num(20, 3, &ms)) {
    return std::nullopt;
  }
  const absl::Time t =
      absl::FromCivil(absl::CivilSecond(y, mo, d, h, mi, sec), absl::UTCTimeZone());
  return absl::ToUnixMicros(t) + int64_t{ms} * 1000;
}

}  // namespace

std::optional<int64_t> ParseTimeMicros(const std::string& rfc3339) {
  if (std::optional<int64_t> fast = ParseJournalTime(rfc3339)) return fast;
  absl::Time t;
  std::string err;
  if (!absl::ParseTime(absl::RFC3339_full, rfc3339, &t, &err)) return std::nullopt;
  return absl::ToUnixMicros(t);
}

}  // namespace dlaunch
