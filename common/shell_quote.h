// Quoting and validation for values that travel from job.yaml into a shell script: everything a
// user writes either passes a strict character check or reaches bash single-quoted and inert.
#pragma once

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace dlaunch {

// Returns `value` as one bash word that expands to exactly `value`: unchanged when it holds only
// characters that bash never interprets, otherwise single-quoted ('\'' for embedded quotes).
// Newlines, $(), backticks, globs and semicolons inside the quotes are literal text.
std::string ShellQuote(absl::string_view value);

// ShellQuote of each word, joined by single spaces.
std::string ShellJoin(const std::vector<std::string>& words);

// True when `name` can be a shell variable name ([A-Za-z_][A-Za-z0-9_]*).
bool IsShellVariableName(absl::string_view name);

// Scheduler directives (#PBS, #COBALT, #SBATCH lines) are parsed by the scheduler, not by bash,
// and have no quoting at all, so a value is accepted only if it is non-empty and made of
// [A-Za-z0-9._-] plus the characters in `extra` (for example ":" in walltimes, "/" in paths).
// `what` names the field in the error, e.g. "name" or "scheduler.account".
absl::Status CheckDirectiveValue(absl::string_view what, absl::string_view value,
                                 absl::string_view extra = "");

}  // namespace dlaunch
