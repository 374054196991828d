#include "common/flags.h"

#include <map>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/did_you_mean.h"

namespace dlaunch {
namespace {

absl::Status Bad(const std::string& name, const std::string& want, const std::string& value) {
  return absl::InvalidArgumentError(absl::StrCat(name, ": expected ", want, ", got '", value, "'"));
}

absl::Status Unknown(const std::string& name, const std::vector<Flag>& table) {
  std::vector<std::string> all;
  for (const Flag& f : table) all.insert(all.end(), f.names.begin(), f.names.end());
  std::string near = ClosestMatch(name, all);
  return absl::InvalidArgumentError(absl::StrCat(
      "unknown flag ", name, near.empty() ? "" : absl::StrCat(" (did you mean ", near, "?)")));
}

// The one parsing loop. With `stop_at_positional`, *stop is the index of the first positional
// argument (args.size() when there is none) and parsing ends there.
absl::Status Parse(const std::vector<std::string>& args, const std::vector<Flag>& table,
                   bool stop_at_positional, ParsedArgs* out, size_t* stop) {
  if (stop != nullptr) *stop = args.size();
  std::map<std::string, const Flag*> by_name;
  for (const Flag& f : table) {
    for (const std::string& n : f.names) by_name[n] = &f;
  }
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (arg == "--") {
      out->saw_dashes = true;
      out->after_dashes.assign(args.begin() + static_cast<long>(i) + 1, args.end());
      return absl::OkStatus();
    }
    if (arg.size() < 2 || arg[0] != '-') {
      if (stop_at_positional) {
        *stop = i;
        return absl::OkStatus();
      }
      out->positional.push_back(arg);
      continue;
    }
    std::string name = arg, value;
    bool inline_value = false;
    if (size_t eq = arg.find('='); eq != std::string::npos) {
      name = arg.substr(0, eq);
      value = arg.substr(eq + 1);
      inline_value = true;
    }
    auto it = by_name.find(name);
    if (it == by_name.end()) return Unknown(name, table);
    const Flag& flag = *it->second;
    if (!flag.takes_value) {
      if (inline_value) return absl::InvalidArgumentError(absl::StrCat(name, " takes no value"));
    } else if (!inline_value) {
      if (i + 1 >= args.size()) return absl::InvalidArgumentError(absl::StrCat(name, " needs a value"));
      value = args[++i];
    }
    if (absl::Status st = flag.set(value); !st.ok()) return st;
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status ParseFlags(const std::vector<std::string>& args, const std::vector<Flag>& table,
                        ParsedArgs* out) {
  return Parse(args, table, /*stop_at_positional=*/false, out, nullptr);
}

absl::Status ParseFlagsUntilPositional(const std::vector<std::string>& args,
                                       const std::vector<Flag>& table, ParsedArgs* out,
                                       size_t* first_positional) {
  return Parse(args, table, /*stop_at_positional=*/true, out, first_positional);
}

Flag::Setter StringFlag(const std::string& name, std::string* out) {
  return [name, out](const std::string& v) {
    if (v.empty()) return Bad(name, "a value", v);
    *out = v;
    return absl::OkStatus();
  };
}

Flag::Setter IntFlag(const std::string& name, int* out, int min, int max) {
  return [=](const std::string& v) {
    int x;
    if (!absl::SimpleAtoi(v, &x) || x < min || x > max) {
      return Bad(name, absl::StrCat("an integer in ", min, "..", max), v);
    }
    *out = x;
    return absl::OkStatus();
  };
}

Flag::Setter Int64Flag(const std::string& name, long long* out, long long min) {
  return [=](const std::string& v) {
    long long x;
    if (!absl::SimpleAtoi(v, &x) || x < min) return Bad(name, absl::StrCat("an integer >= ", min), v);
    *out = x;
    return absl::OkStatus();
  };
}

Flag::Setter DoubleFlag(const std::string& name, double* out, double min) {
  return [=](const std::string& v) {
    double x;
    if (!absl::SimpleAtod(v, &x) || !(x >= min)) return Bad(name, absl::StrCat("a number >= ", min), v);
    *out = x;
    return absl::OkStatus();
  };
}

Flag::Setter ChoiceFlag(const std::string& name, std::string* out,
                        const std::vector<std::string>& choices) {
  return [=](const std::string& v) {
    for (const std::string& c : choices) {
      if (v == c) {
        *out = v;
        return absl::OkStatus();
      }
    }
    return Bad(name, absl::StrCat("one of ", absl::StrJoin(choices, ", ")), v);
  };
}

Flag::Setter SwitchFlag(bool* out, bool value) {
  return [=](const std::string&) {
    *out = value;
    return absl::OkStatus();
  };
}

}  // namespace dlaunch
