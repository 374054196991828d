// Shared by the job.yaml parser's tests: parse text that must be valid, or must not be.
#pragma once

#include <string>

#include <gtest/gtest.h>

#include "launcher/spec/job_spec_parser.h"

namespace dlaunch::spec_testing {

inline JobSpec Parse(const std::string& text) {
  absl::StatusOr<JobSpec> spec = ParseJobSpec(text, "job.yaml");
  EXPECT_TRUE(spec.ok()) << spec.status();
  return spec.ok() ? *spec : JobSpec{};
}

// The whole error message (every problem, one per line).
inline std::string Errors(const std::string& text) {
  absl::StatusOr<JobSpec> spec = ParseJobSpec(text, "job.yaml");
  EXPECT_FALSE(spec.ok()) << text;
  EXPECT_EQ(spec.status().code(), absl::StatusCode::kInvalidArgument);
  return std::string(spec.status().message());
}

}  // namespace dlaunch::spec_testing
