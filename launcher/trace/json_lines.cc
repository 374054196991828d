#include "launcher/trace/json_lines.h"

#include <google/protobuf/util/json_util.h>

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "absl/strings/str_split.h"
#include "absl/time/time.h"
#include "common/json_line.h"

namespace dlaunch {

using google::protobuf::Value;

JsonLines ParseJsonLines(absl::string_view text) {
  JsonLines out;
  google::protobuf::util::JsonParseOptions options;
  options.ignore_unknown_fields = true;
  for (absl::string_view line : absl::StrSplit(text, '\n', absl::SkipWhitespace())) {
    JsonRecord r;
    if (!google::protobuf::util::JsonStringToMessage(std::string(line), &r, options).ok()) {
      ++out.bad_lines;
      continue;
    }
    out.records.push_back(std::move(r));
  }
  return out;
}

std::optional<double> NumberField(const JsonRecord& r, const std::string& key) {
  auto it = r.fields().find(key);
  if (it == r.fields().end() || it->second.kind_case() != Value::kNumberValue) return std::nullopt;
  return it->second.number_value();
}

std::string StringField(const JsonRecord& r, const std::string& key) {
  auto it = r.fields().find(key);
  if (it == r.fields().end()) return "";
  if (it->second.kind_case() == Value::kStringValue) return it->second.string_value();
  return ValueJson(it->second);
}

const JsonRecord* ObjectField(const JsonRecord& r, const std::string& key) {
  auto it = r.fields().find(key);
  if (it == r.fields().end() || it->second.kind_case() != Value::kStructValue) return nullptr;
  return &it->second.struct_value();
}

std::string ValueJson(const Value& v) {
  switch (v.kind_case()) {
    case Value::kStringValue:
      return JsonQuote(v.string_value());
    case Value::kBoolValue:
      return v.bool_value() ? "true" : "false";
    case Value::kNumberValue: {
      const double d = v.number_value();
      if (!std::isfinite(d)) return "null";
      char buf[32];
      if (d == std::floor(d) && std::abs(d) < 1e15) {
        std::snprintf(buf, sizeof(buf), "%lld", static_cast<long long>(d));
      } else {
        std::snprintf(buf, sizeof(buf), "%.17g", d);
      }
      return buf;
    }
    case Value::kStructValue:
      return ObjectJson(v.struct_value());
    case Value::kListValue: {
      std::string out = "[";
      for (int i = 0; i < v.list_value().values_size(); ++i) {
        if (i > 0) out += ",";
        out += ValueJson(v.list_value().values(i));
      }
      return out + "]";
    }
    default:
      return "null";
  }
}

std::string ObjectJson(const JsonRecord& r) {
  // protobuf's map has no stable order; sorted keys keep trace.json reproducible.
  std::vector<std::string> keys;
  for (const auto& [key, value] : r.fields()) keys.push_back(key);
  std::sort(keys.begin(), keys.end());
  std::string out = "{";
  for (const std::string& key : keys) {
    if (out.size() > 1) out += ",";
    out += JsonQuote(key) + ":" + ValueJson(r.fields().at(key));
  }
  return out + "}";
}

std::optional<int64_t> ParseTimeMicros(const std::string& rfc3339) {
  absl::Time t;
  std::string err;
  if (!absl::ParseTime(absl::RFC3339_full, rfc3339, &t, &err)) return std::nullopt;
  return absl::ToUnixMicros(t);
}

}  // namespace dlaunch
