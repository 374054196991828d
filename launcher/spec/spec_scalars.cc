#include "launcher/spec/spec_scalars.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"

namespace dlaunch {
namespace {

// Shortest plain decimal (no exponent, which durations do not accept) that reads back as
// exactly `value`. The smallest doubles need over a thousand decimals (a duration of 1e-46 s
// was written as 0 with 40).
std::string ShortestDecimal(double value) {
  std::string text;
  for (int precision = 0; precision <= 1100; ++precision) {
    text = absl::StrFormat("%.*f", precision, value);
    double back = 0;
    if (absl::SimpleAtod(text, &back) && back == value) break;
  }
  return text;
}

// Walltimes beyond this (about 31 years) are typos, and larger values would overflow an int.
constexpr long long kMaxWalltimeS = 1000000000;

// A non-empty run of at most nine digits (so the value fits any field arithmetic below).
bool DigitsValue(absl::string_view text, long long* value) {
  if (text.empty() || text.size() > 9 ||
      text.find_first_not_of("0123456789") != absl::string_view::npos) {
    return false;
  }
  return absl::SimpleAtoi(text, value);
}

}  // namespace

absl::StatusOr<double> ParseDuration(std::string_view text_view) {
  absl::string_view text(text_view.data(), text_view.size());
  const absl::string_view original = text;
  text = absl::StripAsciiWhitespace(text);
  auto bad = [&] {
    return absl::InvalidArgumentError(absl::StrCat(
        "\"", original, "\" is not a duration (seconds, or e.g. \"30s\", \"5m\", \"1h\", \"250ms\")"));
  };
  bool negative = false;
  if (!text.empty() && text[0] == '-') {
    negative = true;
    text.remove_prefix(1);
  }
  if (text.empty()) return bad();
  double plain = 0;
  if (absl::ascii_isdigit(static_cast<unsigned char>(text[0])) || text[0] == '.') {
    // A bare number is seconds.
    bool only_number = true;
    for (char c : text) {
      if (!absl::ascii_isdigit(static_cast<unsigned char>(c)) && c != '.') only_number = false;
    }
    if (only_number) {
      if (!absl::SimpleAtod(text, &plain) || !std::isfinite(plain)) return bad();
      return negative ? -plain : plain;
    }
  }
  double total = 0;
  size_t i = 0;
  while (i < text.size()) {
    const size_t number_start = i;
    while (i < text.size() &&
           (absl::ascii_isdigit(static_cast<unsigned char>(text[i])) || text[i] == '.')) {
      ++i;
    }
    double number = 0;
    if (i == number_start || !absl::SimpleAtod(text.substr(number_start, i - number_start), &number)) {
      return bad();
    }
    const size_t unit_start = i;
    while (i < text.size() && absl::ascii_isalpha(static_cast<unsigned char>(text[i]))) ++i;
    const absl::string_view unit = text.substr(unit_start, i - unit_start);
    if (unit == "ms") {
      total += number / 1000;
    } else if (unit == "s") {
      total += number;
    } else if (unit == "m") {
      total += number * 60;
    } else if (unit == "h") {
      total += number * 3600;
    } else {
      return bad();
    }
  }
  if (!std::isfinite(total)) return bad();
  return negative ? -total : total;
}

std::string FormatDuration(double seconds) {
  if (!std::isfinite(seconds)) return absl::StrCat(seconds);
  if (seconds < 0) return absl::StrCat("-", FormatDuration(-seconds));
  if (seconds == 0) return "0s";
  // Prefer the largest unit that states the value exactly, then check it reads back the same.
  struct Unit {
    double scale;
    const char* suffix;
  };
  for (const Unit unit : {Unit{3600, "h"}, Unit{60, "m"}, Unit{1, "s"}, Unit{0.001, "ms"}}) {
    const double count = unit.scale >= 1 ? seconds / unit.scale : seconds * 1000;
    if (count < 1 || count != std::floor(count) || count > 1e15) continue;
    std::string text = absl::StrCat(static_cast<long long>(count), unit.suffix);
    absl::StatusOr<double> back = ParseDuration(text);
    if (back.ok() && *back == seconds) return text;
  }
  return absl::StrCat(ShortestDecimal(seconds), "s");
}

absl::StatusOr<int64_t> ParseByteSize(std::string_view text_view) {
  const absl::string_view text =
      absl::StripAsciiWhitespace(absl::string_view(text_view.data(), text_view.size()));
  auto bad = [&] {
    return absl::InvalidArgumentError(absl::StrCat(
        "\"", absl::CHexEscape(text),
        "\" is not a size (bytes, or e.g. \"512MiB\", \"1GiB\", \"2G\", \"500MB\")"));
  };
  size_t i = 0;
  while (i < text.size() && (absl::ascii_isdigit(static_cast<unsigned char>(text[i])) || text[i] == '.')) {
    ++i;
  }
  double number = 0;
  if (i == 0 || !absl::SimpleAtod(text.substr(0, i), &number) || !std::isfinite(number)) {
    return bad();
  }
  const std::string unit = absl::AsciiStrToUpper(absl::StripLeadingAsciiWhitespace(text.substr(i)));
  static const std::map<std::string, double>* const kUnits = new std::map<std::string, double>{
      {"", 1},          {"B", 1},           {"K", 1024.0},    {"KIB", 1024.0},
      {"M", 1 << 20},   {"MIB", 1 << 20},   {"G", 1 << 30},   {"GIB", 1 << 30},
      {"T", 1LL << 40}, {"TIB", 1LL << 40}, {"KB", 1e3},      {"MB", 1e6},
      {"GB", 1e9},      {"TB", 1e12}};
  auto it = kUnits->find(unit);
  if (it == kUnits->end()) return bad();
  const double bytes = std::round(number * it->second);
  if (bytes > static_cast<double>(int64_t{1} << 62)) return bad();
  return static_cast<int64_t>(bytes);
}

std::string FormatByteSize(int64_t bytes) {
  struct Unit {
    int64_t scale;
    const char* suffix;
  };
  for (const Unit unit : {Unit{int64_t{1} << 40, "TiB"}, Unit{int64_t{1} << 30, "GiB"},
                          Unit{int64_t{1} << 20, "MiB"}, Unit{int64_t{1} << 10, "KiB"}}) {
    if (bytes >= unit.scale && bytes % unit.scale == 0) {
      return absl::StrCat(bytes / unit.scale, unit.suffix);
    }
  }
  return absl::StrCat(bytes);
}

absl::StatusOr<int> ParseWalltime(std::string_view text_view) {
  const absl::string_view text =
      absl::StripAsciiWhitespace(absl::string_view(text_view.data(), text_view.size()));
  auto bad = [&] {
    return absl::InvalidArgumentError(absl::StrCat(
        "walltime \"", absl::CHexEscape(text),
        "\" is not HH:MM:SS, MM:SS, D-HH[:MM[:SS]], a number of minutes or a duration such as "
        "\"2h\""));
  };
  if (text.empty()) return bad();
  const bool clock_form = text.find_first_not_of("0123456789:-") == absl::string_view::npos;
  if (!clock_form) {
    // Units are what make a duration unambiguous: a bare "1.5" could be minutes or seconds.
    if (std::none_of(text.begin(), text.end(),
                     [](char c) { return absl::ascii_isalpha(static_cast<unsigned char>(c)); })) {
      return bad();
    }
    absl::StatusOr<double> duration = ParseDuration(std::string_view(text.data(), text.size()));
    if (!duration.ok() || *duration < 0 || *duration != std::floor(*duration) ||
        *duration > kMaxWalltimeS) {
      return bad();
    }
    return static_cast<int>(*duration);
  }
  long long days = 0;
  absl::string_view clock = text;
  const size_t dash = text.find('-');
  if (dash != absl::string_view::npos) {
    if (!DigitsValue(text.substr(0, dash), &days)) return bad();
    clock = text.substr(dash + 1);
  }
  const std::vector<absl::string_view> parts = absl::StrSplit(clock, ':');
  if (parts.size() > 3) return bad();
  long long fields[3] = {0, 0, 0};
  for (size_t i = 0; i < parts.size(); ++i) {
    if (!DigitsValue(parts[i], &fields[i])) return bad();
    // Every field after the first is a 0..59 clock field.
    if (i > 0 && fields[i] > 59) return bad();
  }
  long long seconds = 0;
  if (dash != absl::string_view::npos) {
    seconds = days * 86400 + fields[0] * 3600 + fields[1] * 60 + fields[2];  // D-HH[:MM[:SS]]
  } else if (parts.size() == 1) {
    seconds = fields[0] * 60;  // bare number: minutes
  } else if (parts.size() == 2) {
    seconds = fields[0] * 60 + fields[1];  // MM:SS
  } else {
    seconds = fields[0] * 3600 + fields[1] * 60 + fields[2];
  }
  if (seconds > kMaxWalltimeS) return bad();
  return static_cast<int>(seconds);
}

std::string FormatWalltime(int seconds) {
  return absl::StrFormat("%02d:%02d:%02d", seconds / 3600, seconds / 60 % 60, seconds % 60);
}

std::string FormatWalltimeHms(int seconds) {
  return absl::StrFormat("%d:%02d:%02d", seconds / 3600, seconds / 60 % 60, seconds % 60);
}

absl::StatusOr<std::vector<std::string>> SplitCommandLine(std::string_view text_view) {
  const absl::string_view text(text_view.data(), text_view.size());
  std::vector<std::string> words;
  std::string word;
  bool in_word = false;
  auto refuse = [&](char c) {
    return absl::InvalidArgumentError(absl::StrCat(
        "'", std::string(1, c),
        "' needs a shell, and dlaunch runs the program directly; write the command as a list, "
        "e.g. [bash, -c, \"...\"]"));
  };
  size_t i = 0;
  while (i < text.size()) {
    const char c = text[i];
    if (absl::ascii_isspace(static_cast<unsigned char>(c))) {
      if (in_word) words.push_back(std::move(word));
      word.clear();
      in_word = false;
      ++i;
    } else if (c == '\'') {
      const size_t close = text.find('\'', i + 1);
      if (close == absl::string_view::npos) {
        return absl::InvalidArgumentError("unterminated single quote");
      }
      absl::StrAppend(&word, text.substr(i + 1, close - i - 1));
      in_word = true;
      i = close + 1;
    } else if (c == '"') {
      in_word = true;
      ++i;
      while (true) {
        if (i >= text.size()) return absl::InvalidArgumentError("unterminated double quote");
        const char q = text[i];
        if (q == '"') {
          ++i;
          break;
        }
        if (q == '$' || q == '`') return refuse(q);
        if (q == '\\' && i + 1 < text.size() &&
            (text[i + 1] == '"' || text[i + 1] == '\\' || text[i + 1] == '$' ||
             text[i + 1] == '`')) {
          word.push_back(text[i + 1]);
          i += 2;
          continue;
        }
        word.push_back(q);
        ++i;
      }
    } else if (c == '\\') {
      if (i + 1 >= text.size()) return absl::InvalidArgumentError("trailing backslash");
      word.push_back(text[i + 1]);
      in_word = true;
      i += 2;
    } else if (absl::string_view("|&;<>()$`").find(c) != absl::string_view::npos) {
      return refuse(c);
    } else {
      word.push_back(c);
      in_word = true;
      ++i;
    }
  }
  if (in_word) words.push_back(std::move(word));
  return words;
}

// Linux numbers at most 8192 CPUs; larger ids are typos, and a range of them ("0-2147483647")
// would take gigabytes and overflow the loop that expands it.
constexpr int kMaxCpuId = 65535;

absl::StatusOr<std::vector<int>> ParseCpuList(std::string_view std_text) {
  const absl::string_view text(std_text.data(), std_text.size());
  // Digits only: SimpleAtoi alone would take "+3" and " 3".
  const auto cpu_id = [](absl::string_view digits, int* out) {
    return !digits.empty() &&
           std::all_of(digits.begin(), digits.end(),
                       [](unsigned char c) { return absl::ascii_isdigit(c); }) &&
           absl::SimpleAtoi(digits, out);
  };
  std::vector<int> cpus;
  for (absl::string_view item : absl::StrSplit(text, ',')) {
    item = absl::StripAsciiWhitespace(item);
    const size_t dash = item.find('-');
    int first = 0;
    int last = 0;
    const bool ok = dash == absl::string_view::npos
                        ? cpu_id(item, &first) && cpu_id(item, &last)
                        : cpu_id(item.substr(0, dash), &first) &&
                              cpu_id(item.substr(dash + 1), &last) && first <= last;
    if (!ok) {
      return absl::InvalidArgumentError(absl::StrCat(
          "\"", text, "\" is not a CPU list (CPU ids and ranges such as \"0-7,32-39\")"));
    }
    if (last > kMaxCpuId || cpus.size() + static_cast<size_t>(last - first) >= kMaxCpuId + 1) {
      return absl::InvalidArgumentError(
          absl::StrCat("\"", text.substr(0, 80), "\" names CPU ids past ", kMaxCpuId,
                       " or more than ", kMaxCpuId + 1, " CPUs"));
    }
    for (int cpu = first; cpu <= last; ++cpu) cpus.push_back(cpu);
  }
  return cpus;
}

std::string FormatCpuList(const std::vector<int>& cpus) {
  std::string out;
  for (size_t i = 0; i < cpus.size();) {
    size_t j = i;
    while (j + 1 < cpus.size() && cpus[j + 1] == cpus[j] + 1) ++j;
    if (!out.empty()) out += ",";
    absl::StrAppend(&out, cpus[i]);
    if (j > i) absl::StrAppend(&out, "-", cpus[j]);
    i = j + 1;
  }
  return out;
}

}  // namespace dlaunch
