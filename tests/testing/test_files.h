// File helpers shared by the launcher tests: a scratch directory removed with the test, and
// whole-file reads and writes.
#pragma once

#include <stdlib.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace dlaunch {

class ScratchDir {
 public:
  explicit ScratchDir(const std::string& prefix = "dlaunch-test") {
    std::string tmpl = (std::filesystem::temp_directory_path() / (prefix + "-XXXXXX")).string();
    path_ = ::mkdtemp(tmpl.data());
  }
  ~ScratchDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// In their own (inline) namespace: common/file_io.h declares dlaunch::ReadFile too, with the
// same parameters, and a library linked into the test that uses it would otherwise replace
// this one at link time (the return type is not part of a function's symbol).
inline namespace test_files {

// The file's contents, "" when it cannot be read.
inline std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

inline void WriteFile(const std::string& path, const std::string& text, int mode = 0644) {
  std::ofstream(path) << text;
  ::chmod(path.c_str(), mode);
}

}  // namespace test_files

}  // namespace dlaunch
