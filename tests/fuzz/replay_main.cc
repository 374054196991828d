// The driver of a fuzz target where libFuzzer is not available (the default gcc build): runs
// every seed of the corpus, then a bounded, reproducible run of mutated seeds (bit flips, byte
// changes, insertions, deletions, repeated spans, splices of two seeds). An input that crashes,
// fails a check or runs past the time limit is written to fuzz-failure-<target> in the working
// directory and named on stderr, so it can be added to the corpus once fixed.
//
//   <target> [--mutations=N] [--seconds=S] [--input-timeout=S] [--max-len=BYTES] PATH...
//
// PATHs are seed files or directories of them. Prints what ran in one line.
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "tests/fuzz/fuzz_target.h"

namespace {

namespace fs = std::filesystem;

// The input running now, for the signal handlers.
const std::string* g_current = nullptr;
char g_failure_path[512] = "fuzz-failure";

// Async-signal-safe: only open/write/close.
void SaveCurrentInput(const char* why) {
  const std::string* input = g_current;
  if (input != nullptr) {
    const int fd = ::open(g_failure_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd >= 0) {
      ssize_t ignored = ::write(fd, input->data(), input->size());
      (void)ignored;
      ::close(fd);
    }
  }
  const char* parts[] = {"fuzz: ", why, "; the input is in ", g_failure_path, "\n"};
  for (const char* p : parts) {
    ssize_t ignored = ::write(STDERR_FILENO, p, std::strlen(p));
    (void)ignored;
  }
}

void OnFatalSignal(int sig) {
  SaveCurrentInput(sig == SIGALRM ? "an input ran past --input-timeout" : "an input crashed");
  ::signal(SIGABRT, SIG_DFL);
  ::abort();
}

void InstallHandlers(const char* argv0) {
  std::snprintf(g_failure_path, sizeof(g_failure_path), "fuzz-failure-%s",
                fs::path(argv0).filename().c_str());
  for (int sig : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT, SIGALRM}) ::signal(sig, OnFatalSignal);
}

std::string ReadWhole(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

std::vector<std::string> ReadSeeds(const std::vector<std::string>& paths) {
  std::vector<fs::path> files;
  for (const std::string& p : paths) {
    if (fs::is_directory(p)) {
      for (const auto& entry : fs::directory_iterator(p)) {
        if (entry.is_regular_file()) files.push_back(entry.path());
      }
    } else {
      files.push_back(p);
    }
  }
  std::sort(files.begin(), files.end());  // the same order, so the same mutations, every run
  std::vector<std::string> seeds;
  for (const fs::path& f : files) seeds.push_back(ReadWhole(f));
  return seeds;
}

// One mutation of `input`, `other` being a second seed for splices.
void Mutate(std::string& input, const std::string& other, std::mt19937_64& rng, size_t max_len) {
  auto pick = [&rng](size_t n) { return n == 0 ? size_t{0} : static_cast<size_t>(rng() % n); };
  static const char* const kTokens[] = {"\n", "\0", "[", "]", "{", "}", ",", ":", "-", "\"",
                                        "&a ", "*a", "9999999999", "-1", "0", "\\u0000", "\xff"};
  switch (rng() % 7) {
    case 0:
      if (!input.empty()) input[pick(input.size())] ^= static_cast<char>(1u << (rng() % 8));
      break;
    case 1:
      if (!input.empty()) input[pick(input.size())] = static_cast<char>(rng());
      break;
    case 2: {
      const char* token = kTokens[pick(sizeof(kTokens) / sizeof(kTokens[0]))];
      input.insert(pick(input.size() + 1), token, std::max<size_t>(std::strlen(token), 1));
      break;
    }
    case 3:
      if (!input.empty()) {
        const size_t at = pick(input.size());
        input.erase(at, 1 + pick(std::min<size_t>(input.size() - at, 16)));
      }
      break;
    case 4:
      if (!input.empty()) {
        const size_t at = pick(input.size());
        const std::string span = input.substr(at, 1 + pick(32));
        input.insert(pick(input.size() + 1), span);
      }
      break;
    case 5:
      if (!other.empty()) {
        const size_t from = pick(other.size());
        input.insert(pick(input.size() + 1), other.substr(from, 1 + pick(64)));
      }
      break;
    default:
      input.insert(pick(input.size() + 1), 1, static_cast<char>('0' + rng() % 10));
      break;
  }
  if (input.size() > max_len) input.resize(max_len);
}

void RunOne(const std::string& input, unsigned timeout_s) {
  g_current = &input;
  ::alarm(timeout_s);
  LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(input.data()), input.size());
  ::alarm(0);
  g_current = nullptr;
}

}  // namespace

int main(int argc, char** argv) {
  long mutations = 2000;
  double seconds = 3;
  unsigned input_timeout_s = 10;
  size_t max_len = 64 * 1024;
  std::vector<std::string> paths;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg.rfind("--mutations=", 0) == 0) {
      mutations = std::stol(arg.substr(12));
    } else if (arg.rfind("--seconds=", 0) == 0) {
      seconds = std::stod(arg.substr(10));
    } else if (arg.rfind("--input-timeout=", 0) == 0) {
      input_timeout_s = static_cast<unsigned>(std::stoul(arg.substr(16)));
    } else if (arg.rfind("--max-len=", 0) == 0) {
      max_len = std::stoul(arg.substr(10));
    } else if (arg.rfind("--", 0) == 0) {
      std::fprintf(stderr, "%s: unknown flag %s\n", argv[0], arg.c_str());
      return 2;
    } else {
      paths.push_back(arg);
    }
  }
  InstallHandlers(argv[0]);
  const std::vector<std::string> seeds = ReadSeeds(paths);
  if (seeds.empty()) {
    std::fprintf(stderr, "%s: no seeds (give the corpus directory)\n", argv[0]);
    return 2;
  }
  const auto start = std::chrono::steady_clock::now();
  for (const std::string& seed : seeds) RunOne(seed, input_timeout_s);
  std::mt19937_64 rng(20261125);
  long done = 0;
  const auto elapsed = [&start] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  };
  for (; done < mutations && elapsed() < seconds; ++done) {
    std::string input = seeds[rng() % seeds.size()];
    const std::string& other = seeds[rng() % seeds.size()];
    const int rounds = 1 + static_cast<int>(rng() % 8);
    for (int r = 0; r < rounds; ++r) Mutate(input, other, rng, max_len);
    RunOne(input, input_timeout_s);
  }
  std::printf("%s: %zu seeds and %ld mutated inputs in %.2f s, no failure\n",
              fs::path(argv[0]).filename().c_str(), seeds.size(), done, elapsed());
  return 0;
}
