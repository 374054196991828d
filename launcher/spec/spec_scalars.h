// The scalar forms job.yaml, site profiles and the command line share: durations, the one
// walltime grammar (and its two written forms), and splitting a one-line command into argv.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace dlaunch {

// Durations as job.yaml writes them: a number of seconds (30, "0.5") or numbers with units,
// possibly several ("250ms", "30s", "5m", "1h", "1h30m"). InvalidArgument otherwise.
absl::StatusOr<double> ParseDuration(std::string_view text);

// A short text that ParseDuration reads back as exactly `seconds` ("250ms", "30s", "5m",
// "1.5s"); used by ResolvedJobYaml and in messages.
std::string FormatDuration(double seconds);

// Sizes as job.yaml writes them: a number of bytes, or a number with a unit. K, M, G, T and
// KiB, MiB, GiB, TiB are powers of 1024 (as Slurm reads --mem); KB, MB, GB, TB are powers of
// 1000. "1GiB", "512M", "1.5G", "0". InvalidArgument otherwise (negative, no number, unknown
// unit, past 2^62).
absl::StatusOr<int64_t> ParseByteSize(std::string_view text);

// A short text that ParseByteSize reads back as `bytes`: the largest binary unit that states it
// exactly ("1GiB", "512MiB"), else a number of bytes.
std::string FormatByteSize(int64_t bytes);

// The walltime grammar of job.yaml (`scheduler.walltime`) and of site profiles (`max_walltime`,
// `defaults.walltime`), in whole seconds:
//   "HH:MM:SS", "MM:SS"            clock forms; hours may exceed 23, later fields are 0..59
//   "D-HH", "D-HH:MM", "D-HH:MM:SS" Slurm's day forms
//   "90"                           a bare number is minutes, as PBS, Cobalt and Slurm read it
//   "2h", "1h30m", "5400s"         a duration with units (see ParseDuration), whole seconds
// A bare decimal ("1.5") is refused: minutes or seconds would both be a guess. Zero parses
// ("0:00"); whether zero is allowed is the caller's rule (a job's walltime must be positive).
// InvalidArgument names the accepted forms.
absl::StatusOr<int> ParseWalltime(std::string_view text);

// Two written forms of one walltime. Every supported scheduler reads both; they differ because
// each is what its reader has always been shown:
//   FormatWalltime:    "01:02:03" -- the normal form job.yaml is written back in (resolved
//                      spec, `dlaunch validate`), fixed width so equal values compare equal;
//   FormatWalltimeHms: "1:02:03"  -- the batch-script directive form (`walltime_hms` in the
//                      templates, `#PBS -l walltime=0:30:00`) and site-limit messages.
// Hours are not wrapped into days in either (100 h is "100:00:00").
std::string FormatWalltime(int seconds);
std::string FormatWalltimeHms(int seconds);

// CPU lists as `taskset -c` and /proc's Cpus_allowed_list write them: "0-7,32-39", "3", "0,2".
// Ids in the order written, ranges expanded. InvalidArgument for anything else (a negative id,
// a reversed range, an empty item).
absl::StatusOr<std::vector<int>> ParseCpuList(std::string_view text);

// The compact form ParseCpuList reads back: ascending runs as ranges ("0-3,8").
std::string FormatCpuList(const std::vector<int>& cpus);

// Splits a one-line command into argv the way a POSIX shell splits words (single and double
// quotes, backslash escapes), without running a shell: pipes, redirections, `;`, `&` and `$`
// expansions are refused with a message rather than passed on as literal arguments.
absl::StatusOr<std::vector<std::string>> SplitCommandLine(std::string_view text);

}  // namespace dlaunch
