// ValidateJobSpec: the value rules applied to specs built from command-line flags.
#include "launcher/spec/job_spec_checks.h"

#include <gtest/gtest.h>

namespace dlaunch {
namespace {

TEST(ValidateJobSpecTest, FlagBuiltSpecs) {
  JobSpec spec;
  spec.command = {"train"};
  EXPECT_TRUE(ValidateJobSpec(spec).ok());
  spec.command.clear();
  spec.min_nodes = 3;
  spec.max_nodes = 2;
  spec.control_port = -5;
  spec.node_launcher = "srn";
  spec.heartbeat_interval_s = 0;
  const absl::Status status = ValidateJobSpec(spec);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(status.message(),
            "nodes.max (2) must not be less than nodes.min (3)\n"
            "command must not be empty\n"
            "launcher must be one of auto, local, ssh, mpiexec, mpirun, srun, got \"srn\" (did "
            "you mean 'srun'?)\n"
            "rendezvous.port must be in 0..65535, got -5\n"
            "heartbeat.interval must be positive, got 0s");
}

TEST(ValidateJobSpecTest, NodesAutoSkipsTheCountChecks) {
  JobSpec spec;
  spec.command = {"train"};
  spec.nodes_auto = true;
  spec.min_nodes = 0;
  EXPECT_TRUE(ValidateJobSpec(spec).ok());
}

}  // namespace
}  // namespace dlaunch
