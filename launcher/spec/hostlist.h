// Slurm-style hostlists ("nid[001-004,007]", "rack[1-2]-n[01-02]"), as found in
// SLURM_JOB_NODELIST and accepted by --hosts and job.yaml `hosts:`.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace dlaunch {

// Expands a hostlist into host names, in order. Items are separated by commas outside brackets;
// a bracket holds comma-separated numbers and lo-hi ranges, zero padding follows the low end
// ("[08-10]" gives 08, 09, 10); several bracket groups in one item multiply, leftmost slowest,
// as Slurm does. Malformed input (unbalanced or nested brackets, empty items, decreasing or
// non-numeric ranges, more than kMaxHostlistHosts hosts, a name longer than
// kMaxHostNameLength, more than kMaxHostlistBytes of names) is InvalidArgument naming the problem.
absl::StatusOr<std::vector<std::string>> ExpandHostlist(std::string_view hostlist);

// The hosts a job.yaml may list: ten times the largest machines' node counts.
inline constexpr size_t kMaxJobHosts = 100000;
// Upper bound on one expansion, so a typo like "n[0-999999999]" fails fast instead of
// exhausting memory: no list a job can use names more hosts than a job may have.
inline constexpr size_t kMaxHostlistHosts = kMaxJobHosts;
// A host name longer than DNS allows is a mistake; with kMaxHostlistHosts it also bounds an
// expansion's memory (a long name times a large range).
inline constexpr size_t kMaxHostNameLength = 255;
// The characters of all names of one expansion: the most hosts, at 80 characters each.
inline constexpr size_t kMaxHostlistBytes = 8 << 20;


}  // namespace dlaunch
