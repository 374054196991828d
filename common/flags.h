// Table-driven command-line flags, one style for every dlaunch program: a table of flags, each
// with a setter that checks its value, parsed by one loop that accepts "--name value" and
// "--name=value", stops at "--", and answers an unknown flag with a did-you-mean.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "absl/status/status.h"

namespace dlaunch {

struct Flag {
  using Setter = std::function<absl::Status(const std::string& value)>;
  std::vector<std::string> names;   // "--nproc-per-node", and aliases such as "--nproc_per_node"
  bool takes_value = true;          // false: a switch; the setter gets ""
  Setter set;
};

struct ParsedArgs {
  std::vector<std::string> positional;  // arguments that are not flags, in order
  std::vector<std::string> after_dashes;  // everything after "--"
  bool saw_dashes = false;
};

// Parses `args` (without the program or command name). Errors are InvalidArgument and name the
// flag: "--port: expected 0..65535, got 'x'", "unknown flag --nnode (did you mean --nnodes?)".
absl::Status ParseFlags(const std::vector<std::string>& args, const std::vector<Flag>& table,
                        ParsedArgs* out);

// As ParseFlags, but stops at the first positional argument, as torchrun and env(1) do: what
// follows it belongs to a program, not to us. *first_positional is its index in `args`, or
// args.size() when there is none (after "--", out->after_dashes holds the rest as ParseFlags
// does). out->positional stays empty.
absl::Status ParseFlagsUntilPositional(const std::vector<std::string>& args,
                                       const std::vector<Flag>& table, ParsedArgs* out,
                                       size_t* first_positional);

// Setters for the common kinds of value. Each error names the flag and what it wants.
Flag::Setter StringFlag(const std::string& name, std::string* out);
Flag::Setter IntFlag(const std::string& name, int* out, int min, int max);
Flag::Setter Int64Flag(const std::string& name, long long* out, long long min);
Flag::Setter DoubleFlag(const std::string& name, double* out, double min);
Flag::Setter ChoiceFlag(const std::string& name, std::string* out,
                        const std::vector<std::string>& choices);
Flag::Setter SwitchFlag(bool* out, bool value = true);

}  // namespace dlaunch
