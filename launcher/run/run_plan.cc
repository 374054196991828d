#include "launcher/run/run_plan.h"

#include <algorithm>

#include "common/host_identity.h"
#include "common/python_command.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace dlaunch {

RendezvousConfig MakeRendezvousConfig(const JobSpec& spec, const HostPlan& plan) {
  RendezvousConfig rc;
  rc.min_nodes = plan.min_nodes;
  rc.max_nodes = plan.max_nodes;
  for (const auto& h : plan.hosts) rc.host_order.push_back(ShortHostName(h));
  rc.join_timeout_s = spec.join_timeout_s;
  rc.last_call_s = spec.last_call_s;
  rc.master_port = spec.master_port;
  rc.expected_agents = static_cast<int>(plan.AgentHosts().size());
  return rc;
}

RestartSettings MakeRestartSettings(const JobSpec& spec) {
  RestartSettings r;
  r.max_restarts = spec.max_restarts;
  r.backoff_initial_s = spec.restart_backoff_s;
  r.backoff_max_s = spec.restart_backoff_max_s;
  r.crash_loop_limit = spec.crash_loop_limit;
  r.node_failure_limit = spec.node_failure_limit;
  return r;
}

JobConfig MakeJobConfig(const JobSpec& spec, const HostPlan& plan, const std::string& job_id,
                        const std::string& job_dir) {
  JobConfig job;
  job.job_id = job_id;
  job.job_dir = job_dir;
  job.hosts = plan.hosts;
  job.node_launcher = plan.node_launcher;
  job.heartbeat_s = spec.heartbeat_interval_s;
  job.heartbeat_misses = spec.heartbeat_misses;
  job.stop_grace_s = spec.stop_grace_s;
  job.summary_interval_s = spec.summary_interval_s;
  job.progress.exit_timeout_s = spec.exit_timeout_s;
  job.progress.stall_detection = spec.stall_detection;
  job.progress.stall_timeout_s = spec.stall_timeout_s;
  // No start-up limit is an allowance that never runs out.
  job.progress.startup_timeout_s = spec.startup_timeout_s > 0 ? spec.startup_timeout_s : 1e12;
  job.restarts = MakeRestartSettings(spec);
  job.min_nodes = plan.min_nodes;
  job.master_port = spec.master_port;
  job.stragglers.enabled = spec.stragglers.policy != "off";
  job.stragglers.threshold = spec.stragglers.threshold;
  job.stragglers.interval_s = spec.stragglers.interval_s;
  job.stragglers.persist = spec.stragglers.intervals;
  job.stragglers.warmup_steps = spec.stragglers.warmup_steps;
  job.exclude_stragglers = spec.stragglers.policy == "exclude";
  return job;
}

bool WarmStartWanted(const JobSpec& spec) {
  if (spec.warm_start == "auto") return spec.max_restarts > 0 || spec.spare_nodes > 0;
  return spec.warm_start == "on";
}

v1::JoinResponse MakeJoinTemplate(const JobSpec& spec, const JobPlacement& placement) {
  v1::JoinResponse t;
  t.set_job_id(placement.job_id);
  t.set_job_dir(placement.job_dir);
  v1::WorkerTemplate* w = t.mutable_worker();
  for (const auto& a : placement.worker_argv) w->add_argv(a);
  for (const auto& [k, v] : spec.env) (*w->mutable_env())[k] = v;
  w->set_workdir(placement.workdir);
  w->set_isolate_gpus(spec.isolate_gpus);
  w->set_gpus_per_proc(spec.gpus_per_proc);
  w->set_cpu_binding_none(spec.cpu_binding_none);
  w->set_agent_store(spec.agent_store);
  w->set_warm_start(WarmStartWanted(spec));
  for (const CpuMapEntry& entry : spec.cpu_map) {
    v1::RankCpus* rank = w->add_cpu_map();
    for (int cpu : entry.cpus) rank->add_cpus(cpu);
    rank->set_gpu(entry.gpu);
  }
  t.set_heartbeat_ms(static_cast<int>(spec.heartbeat_interval_s * 1000));
  t.set_heartbeat_misses(spec.heartbeat_misses);
  t.set_grace_ms(static_cast<int>(spec.stop_grace_s * 1000));
  t.set_max_restarts(spec.max_restarts);
  t.set_restart_in_process(spec.restart_in_process);
  t.set_forward_all(spec.show_all_ranks);
  for (int r : spec.show_ranks) t.add_forward_ranks(r);
  return t;
}

v1::PreflightPlan MakePreflightPlan(const JobSpec& spec, const v1::JoinResponse& join_template) {
  v1::PreflightPlan plan;
  const PreflightSpec& p = spec.preflight;
  plan.set_enabled(p.enabled);
  if (!p.enabled) return plan;
  plan.set_gpus(spec.gpus_per_node);
  auto need = [&](const std::string& path, const std::string& what) {
    v1::PathNeed* n = plan.add_paths();
    n->set_path(path);
    n->set_what(what);
    n->set_min_free_bytes(p.min_free_bytes);
  };
  need(join_template.job_dir(), "job directory");
  auto tmpdir = spec.env.find("TMPDIR");
  need(tmpdir != spec.env.end() && !tmpdir->second.empty() ? tmpdir->second : "/tmp", "TMPDIR");
  for (size_t i = 0; i < p.paths.size(); ++i) {
    need(p.paths[i], "preflight.paths[" + std::to_string(i) + "]");
  }
  *plan.mutable_worker() = join_template.worker();
  plan.set_python_imports_auto(p.imports_auto);
  for (const std::string& m : p.imports) plan.add_python_imports(m);
  plan.set_import_python_modules(p.import_modules);
  if (spec.master_port != 0) plan.add_ports(spec.master_port);
  plan.set_max_clock_offset_ms(static_cast<int>(p.max_clock_offset_s * 1000));
  plan.set_timeout_ms(static_cast<int>(p.timeout_s * 1000));
  v1::CollectivePlan* c = plan.mutable_collective();
  c->set_enabled(p.collective);
  c->set_budget_ms(static_cast<int>(p.collective_budget_s * 1000));
  c->set_bytes(p.collective_bytes);
  c->set_slow_share(p.slow_share);
  c->set_group(kCollectiveGroup);
  c->set_compute_ms(kCollectiveComputeMs);
  c->set_engine(p.collective_tcp ? "tcp" : "auto");
  return plan;
}

void FitCollectiveCheckToHosts(const JobSpec& spec, const HostPlan& plan,
                               v1::PreflightPlan* preflight) {
  if (!spec.preflight.collective_auto) return;
  const std::vector<std::string> hosts = plan.AgentHosts();
  const bool one_host = plan.node_launcher == "local" ||
                        std::all_of(hosts.begin(), hosts.end(),
                                    [&](const std::string& h) { return h == hosts.front(); });
  if (one_host) preflight->mutable_collective()->set_enabled(false);
}

v1::PreflightPlan MakeJobPreflightPlan(const JobSpec& spec, const HostPlan& plan,
                                       const JobPlacement& placement) {
  v1::PreflightPlan preflight = MakePreflightPlan(spec, MakeJoinTemplate(spec, placement));
  FitCollectiveCheckToHosts(spec, plan, &preflight);
  return preflight;
}

v1::JoinResponse MakeJoinResponse(const v1::JoinResponse& response_template,
                                  const RoundResult& round, const NodeAssignment& assignment) {
  v1::JoinResponse r = response_template;
  r.set_round(round.round);
  r.set_node_rank(assignment.node_rank);
  r.set_node_id(assignment.node_rank);  // round 0: the identity is the first node rank
  r.set_nnodes(static_cast<int>(round.nodes.size()));
  r.set_rank_offset(assignment.rank_offset);
  r.set_local_world_size(assignment.local_world_size);
  r.set_world_size(round.world_size);
  r.set_master_addr(round.master_addr);
  r.set_master_port(round.master_port);
  return r;
}

std::vector<std::string> MakeAgentArgv(const std::string& agent_program,
                                       const std::string& control_address,
                                       const std::string& token_file, const JobSpec& spec,
                                       const std::string& fallback_address) {
  std::vector<std::string> argv = {agent_program, "--control", control_address,
                                   "--token-file", token_file,
                                   "--nproc", std::to_string(spec.nproc_per_node),
                                   "--join-timeout", std::to_string(spec.join_timeout_s),
                                   "--tail-lines", std::to_string(spec.tail_lines)};
  if (!fallback_address.empty()) {
    argv.push_back("--control-fallback");
    argv.push_back(fallback_address);
  }
  return argv;
}

std::string PreflightNote(const v1::PreflightPlan& plan, int nodes) {
  if (!plan.enabled()) return "";
  const v1::WorkerTemplate& w = plan.worker();
  std::vector<std::string> imports(plan.python_imports().begin(), plan.python_imports().end());
  if (plan.python_imports_auto()) {
    imports = PythonImportsFor({w.argv().begin(), w.argv().end()}, w.workdir());
  }
  if (imports.empty()) {
    return absl::StrCat("preflight: ", nodes, " node(s) check themselves before they join "
                        "(--no-preflight skips it)");
  }
  if (!plan.import_python_modules()) {
    // Found, not imported: a fraction of a second, nothing to warn of.
    return absl::StrCat("preflight: ", nodes, " node(s) check themselves and look for ",
                        absl::StrJoin(imports, ", "), " before they join (--no-preflight skips it)");
  }
  return absl::StrCat("preflight: importing ", absl::StrJoin(imports, ", "), " on ", nodes,
                      " node(s) before they join: seconds per node, more on a parallel file "
                      "system (--no-preflight skips it)");
}

}  // namespace dlaunch
