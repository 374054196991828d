// The run plan: what `dlaunch run` derives from the job spec and the host plan before anything
// starts — the rendezvous configuration, the job-wide part of every JoinResponse, the agent's
// command line. Pure functions, unit-tested.
#pragma once

#include <string>
#include <vector>

#include "dlaunch/control.pb.h"
#include "launcher/run/allocation.h"
#include "launcher/job/job_state.h"
#include "launcher/job/restart_policy.h"
#include "launcher/spec/job_spec.h"
#include "rendezvous/rendezvous_state.h"

namespace dlaunch {

// Node counts and host order from the plan (short host names, as agents report them), timing
// from the spec.
RendezvousConfig MakeRendezvousConfig(const JobSpec& spec, const HostPlan& plan);

// max_restarts and the restarts: section.
RestartSettings MakeRestartSettings(const JobSpec& spec);

// The launcher's decisions' settings (JobState) from the spec and the host plan.
JobConfig MakeJobConfig(const JobSpec& spec, const HostPlan& plan, const std::string& job_id,
                        const std::string& job_dir);

// Where the job's files and worker program are, once resolved on the launcher's host.
struct JobPlacement {
  std::string job_id;
  std::string job_dir;
  std::vector<std::string> worker_argv;  // spec.command with its program resolved
  std::string workdir;                   // absolute
};

// The fields every node's JoinResponse shares: job, worker template, heartbeat, grace.
// restarts.warm_start resolved: "on", "off", or for "auto" whether the job can restart a rank
// (max_restarts > 0) or promote a spare. The agent also needs the command to be a Python script.
bool WarmStartWanted(const JobSpec& spec);

v1::JoinResponse MakeJoinTemplate(const JobSpec& spec, const JobPlacement& placement);

// What every node checks before it joins (docs/preflight.md): the GPU count, the job directory's,
// TMPDIR's and preflight.paths' free space, the worker command of `join_template`, the fixed
// master port, the clock. The launcher's clock is stamped as each agent asks.
// The collective check's all-reduce ring spans at most this many nodes (a ring's latency grows
// with its length: docs/stragglers.md), and its compute check runs this long on one core, in
// three windows of three periods of the kernel's CPU bandwidth control each, so that a cgroup's
// cpu.max quota shows in every window (shorter ones were seen to escape it at their start).
inline constexpr int kCollectiveGroup = 64;
inline constexpr int kCollectiveComputeMs = 900;

v1::PreflightPlan MakePreflightPlan(const JobSpec& spec, const v1::JoinResponse& join_template);
// `preflight.collective: auto` on the hosts of `plan`: the check is turned off when every agent
// runs on one host (their links and cores are that host's, shared: their figures would differ
// only by its load, and no node could be left out for them).
void FitCollectiveCheckToHosts(const JobSpec& spec, const HostPlan& plan,
                               v1::PreflightPlan* preflight);
// The plan every node of a job on `plan`'s hosts checks itself against: MakePreflightPlan with
// the job's worker template, fitted to the hosts (FitCollectiveCheckToHosts). `dlaunch run` and
// `dlaunch doctor` both send this one.
v1::PreflightPlan MakeJobPreflightPlan(const JobSpec& spec, const HostPlan& plan,
                                       const JobPlacement& placement);

// What the terminal says of the preflight before any node has joined: what the nodes look for,
// and, where preflight.import_check is `import`, that the seconds Python's import of torch takes
// on every node are not a hang ("preflight: importing torch on 2 node(s) before they join ...").
// "" when the preflight is off.
std::string PreflightNote(const v1::PreflightPlan& plan, int nodes);

// `response_template` completed with one node's place in a closed round.
v1::JoinResponse MakeJoinResponse(const v1::JoinResponse& response_template,
                                  const RoundResult& round, const NodeAssignment& assignment);

// dlaunch-agent's command line; the token travels in a file, never on the command line.
// `fallback_address` (the launcher's own, when `control_address` names relays) is where an
// agent moves its session when its relay goes.
std::vector<std::string> MakeAgentArgv(const std::string& agent_program,
                                       const std::string& control_address,
                                       const std::string& token_file, const JobSpec& spec,
                                       const std::string& fallback_address = "");

}  // namespace dlaunch
