#include "common/shell_quote.h"

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace dlaunch {
namespace {

// Characters bash treats as plain text in every position of an unquoted word
// ('=' only matters before the command name, '~' only at the start, so both are excluded).
bool IsPlainShellChar(char c) {
  return absl::ascii_isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' ||
         c == '.' || c == '/' || c == ':' || c == ',' || c == '+' || c == '@' || c == '%';
}

// A printable description of a character for error messages (newlines and tabs spelled out).
std::string DescribeChar(char c) {
  switch (c) {
    case '\n': return "a newline";
    case '\r': return "a carriage return";
    case '\t': return "a tab";
    case ' ': return "a space";
    default: break;
  }
  if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
    return absl::StrCat("control character 0x", absl::Hex(static_cast<unsigned char>(c)));
  }
  return absl::StrCat("'", std::string(1, c), "'");
}

}  // namespace

std::string ShellQuote(absl::string_view value) {
  if (value.empty()) return "''";
  bool plain = true;
  for (char c : value) {
    if (!IsPlainShellChar(c)) {
      plain = false;
      break;
    }
  }
  if (plain) return std::string(value);
  std::string out = "'";
  for (char c : value) {
    if (c == '\'') {
      out += "'\\''";
    } else {
      out += c;
    }
  }
  out += "'";
  return out;
}

std::string ShellJoin(const std::vector<std::string>& words) {
  return absl::StrJoin(words, " ", [](std::string* out, const std::string& w) {
    out->append(ShellQuote(w));
  });
}

bool IsShellVariableName(absl::string_view name) {
  if (name.empty()) return false;
  if (absl::ascii_isdigit(static_cast<unsigned char>(name[0]))) return false;
  for (char c : name) {
    if (!absl::ascii_isalnum(static_cast<unsigned char>(c)) && c != '_') return false;
  }
  return true;
}

absl::Status CheckDirectiveValue(absl::string_view what, absl::string_view value,
                                 absl::string_view extra) {
  if (value.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(what, " is empty"));
  }
  for (char c : value) {
    bool ok = absl::ascii_isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' ||
              c == '-' || extra.find(c) != absl::string_view::npos;
    if (!ok) {
      std::string allowed = absl::StrCat("letters, digits, '.', '_', '-'");
      for (char e : extra) absl::StrAppend(&allowed, ", '", std::string(1, e), "'");
      return absl::InvalidArgumentError(absl::StrCat(
          what, " \"", absl::CHexEscape(value), "\" contains ", DescribeChar(c),
          "; it becomes a scheduler directive, which has no quoting, so only ", allowed,
          " are allowed"));
    }
  }
  return absl::OkStatus();
}

}  // namespace dlaunch
