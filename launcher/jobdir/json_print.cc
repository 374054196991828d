#include "launcher/jobdir/json_print.h"

#include <algorithm>
#include <cfloat>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "absl/strings/str_cat.h"

namespace dlaunch {
namespace {

using google::protobuf::Descriptor;
using google::protobuf::EnumValueDescriptor;
using google::protobuf::FieldDescriptor;
using google::protobuf::Message;
using google::protobuf::Reflection;

// Printable ASCII that protobuf's escaper writes as it is; '"' and '\\' get a backslash.
// Anything else (control characters, '<', '>', '&', '=', '\'', bytes past 0x7e) is left to
// protobuf, whose escapes for them are its own.
bool AppendString(const std::string& s, std::string* out) {
  out->push_back('"');
  for (char c : s) {
    if (c < 0x20 || c > 0x7e || c == '<' || c == '>' || c == '&' || c == '=' || c == '\'') {
      return false;
    }
    if (c == '"' || c == '\\') out->push_back('\\');
    out->push_back(c);
  }
  out->push_back('"');
  return true;
}

// protobuf's SimpleDtoa: printf's %.15g when it reads back as the same double, else %.17g.
// std::to_chars gives the same digits as printf for a given precision, without the locale.
bool AppendDouble(double v, std::string* out) {
  if (!std::isfinite(v)) return false;
  if (v == std::trunc(v) && std::fabs(v) < 1e15 && !(v == 0 && std::signbit(v))) {
    absl::StrAppend(out, static_cast<int64_t>(v));  // what %.15g prints for these
    return true;
  }
  char buf[40];
  for (int precision : {DBL_DIG, DBL_DIG + 2}) {
#if defined(__cpp_lib_to_chars) && __cpp_lib_to_chars >= 201611L
    const std::to_chars_result r =
        std::to_chars(buf, buf + sizeof(buf), v, std::chars_format::general, precision);
    if (r.ec != std::errc()) return false;
    const char* end = r.ptr;
    double back = 0;
    std::from_chars(buf, end, back);
#else
    // libstdc++ before GCC 11 (Debian 11's) has no floating-point to_chars; dlaunch never
    // sets a locale, so printf's "C" locale gives the same text.
    const int n = std::snprintf(buf, sizeof(buf), "%.*g", precision, v);
    if (n <= 0 || n >= static_cast<int>(sizeof(buf))) return false;
    const char* end = buf + n;
    const double back = std::strtod(buf, nullptr);
#endif
    if (back == v || precision == DBL_DIG + 2) {
      out->append(buf, static_cast<size_t>(end - buf));
      return true;
    }
  }
  return false;
}

bool AppendMessage(const Message& m, std::string* out);

// One value of `f` (the element `index` of a repeated field, or -1 for a singular one).
bool AppendValue(const Message& m, const FieldDescriptor* f, int index, std::string* out) {
  const Reflection* r = m.GetReflection();
  const bool rep = index >= 0;
  switch (f->cpp_type()) {
    case FieldDescriptor::CPPTYPE_INT32:
      absl::StrAppend(out, rep ? r->GetRepeatedInt32(m, f, index) : r->GetInt32(m, f));
      return true;
    case FieldDescriptor::CPPTYPE_UINT32:
      absl::StrAppend(out, rep ? r->GetRepeatedUInt32(m, f, index) : r->GetUInt32(m, f));
      return true;
    case FieldDescriptor::CPPTYPE_INT64:  // 64-bit integers are strings in proto3's JSON
      absl::StrAppend(out, "\"", rep ? r->GetRepeatedInt64(m, f, index) : r->GetInt64(m, f), "\"");
      return true;
    case FieldDescriptor::CPPTYPE_UINT64:
      absl::StrAppend(out, "\"", rep ? r->GetRepeatedUInt64(m, f, index) : r->GetUInt64(m, f),
                      "\"");
      return true;
    case FieldDescriptor::CPPTYPE_BOOL:
      out->append((rep ? r->GetRepeatedBool(m, f, index) : r->GetBool(m, f)) ? "true" : "false");
      return true;
    case FieldDescriptor::CPPTYPE_DOUBLE:
      return AppendDouble(rep ? r->GetRepeatedDouble(m, f, index) : r->GetDouble(m, f), out);
    case FieldDescriptor::CPPTYPE_ENUM: {
      const int number = rep ? r->GetRepeatedEnumValue(m, f, index) : r->GetEnumValue(m, f);
      const EnumValueDescriptor* v = f->enum_type()->FindValueByNumber(number);
      return v != nullptr && AppendString(v->name(), out);
    }
    case FieldDescriptor::CPPTYPE_STRING:
      if (f->type() == FieldDescriptor::TYPE_BYTES) return false;  // base64: protobuf's
      return AppendString(rep ? r->GetRepeatedString(m, f, index) : r->GetString(m, f), out);
    case FieldDescriptor::CPPTYPE_MESSAGE:
      return AppendMessage(rep ? r->GetRepeatedMessage(m, f, index) : r->GetMessage(m, f), out);
    default:  // float: protobuf prints it through a float's own shortest form
      return false;
  }
}

bool AppendField(const Message& m, const FieldDescriptor* f, bool* first, std::string* out) {
  if (!*first) out->push_back(',');
  *first = false;
  absl::StrAppend(out, "\"", f->name(), "\":");
  if (!f->is_repeated()) return AppendValue(m, f, -1, out);
  out->push_back('[');
  const int n = m.GetReflection()->FieldSize(m, f);
  for (int k = 0; k < n; ++k) {
    if (k > 0) out->push_back(',');
    if (!AppendValue(m, f, k, out)) return false;
  }
  out->push_back(']');
  return true;
}

// protobuf's order: the fields outside any oneof in declaration order (primitive and repeated
// ones always, messages when set), then the set members of oneofs, proto3 optional fields
// included, in field-number order (the order they are read off the wire).
bool AppendMessage(const Message& m, std::string* out) {
  const Descriptor* d = m.GetDescriptor();
  if (d->well_known_type() != Descriptor::WELLKNOWNTYPE_UNSPECIFIED) return false;
  const Reflection* r = m.GetReflection();
  out->push_back('{');
  bool first = true;
  for (int i = 0; i < d->field_count(); ++i) {
    const FieldDescriptor* f = d->field(i);
    if (f->is_map()) return false;
    if (f->containing_oneof() != nullptr) continue;
    if (!f->is_repeated() && f->has_presence() && !r->HasField(m, f)) continue;
    if (!AppendField(m, f, &first, out)) return false;
  }
  const FieldDescriptor* set[16];  // one per oneof at most
  int n = 0;
  for (int i = 0; i < d->oneof_decl_count(); ++i) {
    const FieldDescriptor* f = r->GetOneofFieldDescriptor(m, d->oneof_decl(i));
    if (f == nullptr) continue;
    if (n == 16) return false;
    set[n++] = f;
  }
  std::sort(set, set + n, [](const FieldDescriptor* a, const FieldDescriptor* b) {
    return a->number() < b->number();
  });
  for (int i = 0; i < n; ++i) {
    if (!AppendField(m, set[i], &first, out)) return false;
  }
  out->push_back('}');
  return true;
}

}  // namespace

bool QuickJson(const Message& message, std::string* out) { return AppendMessage(message, out); }

}  // namespace dlaunch
