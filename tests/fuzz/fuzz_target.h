// What every fuzz target shares: libFuzzer's entry point, which the target defines, and the
// checks a target makes of what a parser returned. A failed check prints what was wrong and
// aborts, so libFuzzer and the replay driver (replay_main.cc) both keep the input that did it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace dlaunch::fuzz {

[[noreturn]] inline void CheckFailed(const char* file, int line, const char* condition,
                                     const std::string& detail) {
  std::fprintf(stderr, "%s:%d: fuzz check failed: %s\n%s\n", file, line, condition,
               detail.c_str());
  std::abort();
}

// Several inputs in one: the parts between NUL bytes, at most `parts` of them (the last keeps
// any further NULs).
inline std::vector<std::string_view> SplitInput(std::string_view text, size_t parts) {
  std::vector<std::string_view> out;
  while (out.size() + 1 < parts) {
    const size_t nul = text.find('\0');
    if (nul == std::string_view::npos) break;
    out.push_back(text.substr(0, nul));
    text.remove_prefix(nul + 1);
  }
  out.push_back(text);
  out.resize(parts);
  return out;
}

}  // namespace dlaunch::fuzz

#define FUZZ_CHECK(condition, detail)                                           \
  do {                                                                          \
    if (!(condition)) {                                                         \
      ::dlaunch::fuzz::CheckFailed(__FILE__, __LINE__, #condition, (detail));  \
    }                                                                           \
  } while (0)
