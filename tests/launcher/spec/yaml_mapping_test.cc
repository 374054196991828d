// IsYamlMapping: how `dlaunch run X` tells a job.yaml without the extension from a script.
#include <gtest/gtest.h>

#include <string>

#include "launcher/spec/yaml_guard.h"

namespace dlaunch {
namespace {

TEST(IsYamlMappingTest, OnlyAMappingAtTheTopIsOne) {
  EXPECT_TRUE(IsYamlMapping("name: x\ncommand: [\"true\"]\n"));
  EXPECT_TRUE(IsYamlMapping("{command: [a]}"));
  EXPECT_FALSE(IsYamlMapping("import torch\nprint(torch.__version__)\n"));
  EXPECT_FALSE(IsYamlMapping("#!/bin/sh\necho hi\n"));
  EXPECT_FALSE(IsYamlMapping("- a\n- b\n"));
  EXPECT_FALSE(IsYamlMapping(""));
  // A script that trips the YAML parser is not a mapping, and does not throw.
  EXPECT_FALSE(IsYamlMapping("x: [1, 2\n"));
  EXPECT_FALSE(IsYamlMapping("a: 1\n---\nb: 2\n"));  // two documents
  EXPECT_FALSE(IsYamlMapping(std::string(300 << 10, 'a')));  // past the size bound
}

}  // namespace
}  // namespace dlaunch
