// Shared by the batch-script tests (pure and process): the built-in site profiles, a training
// job, and the render context the golden scripts were made with.
#pragma once

#include <string>

#include <gtest/gtest.h>

#include "launcher/submit/batch_script.h"
#include "launcher/submit/site_profile.h"

namespace dlaunch {
namespace batch_script_fixtures {

inline SiteSearchPath BuiltinOnly() {
  return MakeSiteSearchPath("", "", "", {std::string(DLAUNCH_SOURCE_DIR) + "/templates"});
}

inline SiteProfile Profile(const std::string& name) {
  absl::StatusOr<SiteProfile> p = LoadSiteProfile(name, BuiltinOnly());
  EXPECT_TRUE(p.ok()) << p.status();
  return p.ok() ? *p : SiteProfile{};
}

inline JobSpec TrainingJob() {
  JobSpec spec;
  spec.name = "fmnist";
  spec.min_nodes = 2;
  spec.max_nodes = 2;
  spec.command = {"python3", "train.py", "--epochs", "5"};
  spec.env = {{"NCCL_DEBUG", "WARN"}};
  spec.scheduler.account = "MyProject";
  spec.scheduler.walltime = "0:30:00";
  spec.scheduler.setup = {"source /home/user/venv/bin/activate"};
  return spec;
}

inline RenderContext GoldenContext() {
  RenderContext ctx;
  ctx.job_id = "fmnist-20261121-101530-a3f9";
  ctx.job_dir = "/home/user/proj/runs/fmnist-20261121-101530-a3f9";
  ctx.dlaunch_binary = "/opt/dlaunch/bin/dlaunch";
  ctx.resolved_spec_path = ctx.job_dir + "/job.yaml";
  ctx.submit_cwd = "/home/user/proj";
  return ctx;
}

}  // namespace batch_script_fixtures
}  // namespace dlaunch
