// ScratchDir: a fresh directory under the system temp dir for one test, removed with it.
#pragma once

#include <stdlib.h>

#include <filesystem>
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

}  // namespace dlaunch
