#include "launcher/cli/run_command.h"

#include <limits.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <optional>
#include <random>

#include <grpcpp/grpcpp.h>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "common/clock.h"
#include "common/exit_codes.h"
#include "common/host_identity.h"
#include "common/process.h"
#include "launcher/cli/cli_support.h"
#include "launcher/jobdir/job_directory.h"
#include "launcher/run/allocation.h"
#include "launcher/run/collective_check_host.h"
#include "launcher/control/control_service.h"
#include "launcher/run/doctor.h"
#include "launcher/run/job_controller.h"
#include "launcher/run/live_terminal.h"
#include "launcher/run/live_view.h"
#include "launcher/run/node_launch.h"
#include "launcher/run/relay_launch.h"
#include "launcher/run/run_plan.h"
#include "launcher/spec/job_spec_parser.h"
#include "launcher/trace/goodput_view.h"
#include "launcher/trace/job_trace.h"
#include "proto/callback_server.h"
#include "proto/control_credentials.h"

namespace dlaunch {
namespace {

std::string SelfDir() {
  char buf[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  if (n <= 0) return ".";
  buf[n] = 0;
  return std::filesystem::path(buf).parent_path().string();
}

int Fail(int code, absl::string_view message) {
  std::cerr << "dlaunch: " << message << std::endl;
  return code;
}

// The job directory (--job-dir, else <job root>/<new id>) with its token (and the launcher's
// certificate with TLS), job.yaml and hostfile.
absl::StatusOr<JobDirectory> PrepareJobDirectory(const RunFlags& flags, const JobSpec& spec,
                                                 const HostPlan& plan, const std::string& token,
                                                 const ControlIdentity* tls, std::string* job_id) {
  std::string path = flags.job_dir;
  if (path.empty()) {
    std::random_device rd;
    *job_id = MakeJobId(spec.name, absl::Now(), rd());
    path = spec.job_root + "/" + *job_id;
  } else {
    std::filesystem::path p(path);
    *job_id = p.filename().empty() ? p.parent_path().filename().string() : p.filename().string();
  }
  absl::StatusOr<JobDirectory> dir = JobDirectory::Create(path);
  if (!dir.ok()) return dir.status();
  for (absl::Status st : {dir->WriteCredentials(token, tls),
                          dir->WriteJobYamlIfAbsent(ResolvedJobYaml(spec)),
                          dir->WriteHostfile(plan.AgentHosts())}) {
    if (!st.ok()) return st;
  }
  return dir;
}

// The worker program (a bare name shipped next to dlaunch, like dlaunch-worker, is used from
// there) and its absolute working directory.
JobPlacement PlaceWorkers(const JobSpec& spec, const std::string& job_id, const JobDirectory& dir) {
  JobPlacement p{job_id, dir.path(), spec.command, ""};
  if (!p.worker_argv.empty() && p.worker_argv[0].find('/') == std::string::npos) {
    std::string sibling = SelfDir() + "/" + p.worker_argv[0];
    if (access(sibling.c_str(), X_OK) == 0) p.worker_argv[0] = sibling;
  }
  p.workdir = spec.workdir.empty() ? std::filesystem::current_path().string()
                                   : std::filesystem::absolute(spec.workdir).string();
  return p;
}

// One command per node launcher, each starting dlaunch-agent ($DLAUNCH_AGENT overrides it).
// With relays, agents reach the launcher through them (docs/relays.md): each node's agent is
// given its relay, or under an MPI launcher or srun the list, from which it picks by its rank.
absl::StatusOr<std::vector<std::vector<std::string>>> LaunchCommands(
    const RunFlags& flags, const JobSpec& spec, const HostPlan& plan, const JobDirectory& dir,
    const std::string& workdir, const std::string& control,
    const std::vector<std::string>& relays = {}) {
  const char* agent = std::getenv("DLAUNCH_AGENT");
  NodeLaunchInput nl;
  nl.kind = plan.node_launcher;
  nl.hosts = plan.AgentHosts();
  nl.agent_argv = MakeAgentArgv(agent ? agent : SelfDir() + "/dlaunch-agent",
                                relays.empty() ? control : absl::StrJoin(relays, ","),
                                dir.token_path(), spec, relays.empty() ? "" : control);
  for (size_t i = 0; !relays.empty() && i < nl.hosts.size(); ++i) {
    nl.control_per_node.push_back(relays[RelayOfNode(static_cast<int>(i), static_cast<int>(relays.size()))]);
  }
  nl.hostfile = dir.hostfile_path();
  nl.workdir = workdir;
  nl.scheduler = plan.scheduler;
  if (const char* s = std::getenv("DLAUNCH_SSH")) nl.ssh = s;
  if (!flags.launcher_cmd.empty()) {
    auto prefix = SplitCommandLine(flags.launcher_cmd);
    if (!prefix.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("--launcher-cmd: ", prefix.status().message()));
    }
    nl.prefix = *prefix;
  }
  return BuildNodeLaunchCommands(nl);
}

// What `run` and `doctor` set up before anything starts: the hosts, the token, the control
// channel's key and certificate, the job directory and where the workers run.
struct PreparedJob {
  std::string self_host;
  HostPlan plan;
  std::string token;
  std::optional<ControlIdentity> tls;  // none: rendezvous.tls off
  std::string job_id;
  JobDirectory dir;
  JobPlacement placement;
};

// InvalidArgument: the hosts asked for are wrong (a usage error); else a launch error.
absl::StatusOr<PreparedJob> PrepareJob(const RunFlags& flags, const JobSpec& spec) {
  const std::string self_host = LocalHostName();
  // --standalone: this machine, whatever allocation the shell is in.
  auto alloc = flags.standalone ? absl::StatusOr<Allocation>(Allocation{}) : DetectAllocation();
  if (!alloc.ok()) return absl::UnavailableError(alloc.status().message());
  auto plan = ResolveHosts(spec, flags.hosts, *alloc, ShortHostName(self_host));
  if (!plan.ok()) return plan.status();
  const std::string token = RandomHex(32);
  std::optional<ControlIdentity> tls;
  if (spec.control_tls) {
    absl::StatusOr<ControlIdentity> made = MakeControlIdentity();
    if (!made.ok()) return absl::UnavailableError(made.status().message());
    tls = *std::move(made);
  }
  std::string job_id;
  auto dir = PrepareJobDirectory(flags, spec, *plan, token, tls ? &*tls : nullptr, &job_id);
  if (!dir.ok()) return absl::UnavailableError(dir.status().message());
  JobPlacement placement = PlaceWorkers(spec, job_id, *dir);
  return PreparedJob{self_host,           *std::move(plan), token,
                     std::move(tls),      job_id,           *std::move(dir),
                     std::move(placement)};
}

// Where agents reach the control endpoint: --control-addr (with the bound port unless it names
// one: a forwarded port), loopback for local agents, else this host's address.
std::string AgentsControlAddress(const RunFlags& flags, bool local, const std::string& self_host,
                                 int port) {
  const size_t colon = flags.control_addr.rfind(':');
  if (colon != std::string::npos && colon + 1 < flags.control_addr.size() &&
      flags.control_addr.find_first_not_of("0123456789", colon + 1) == std::string::npos &&
      (flags.control_addr.find(':') == colon || flags.control_addr[colon - 1] == ']')) {
    return flags.control_addr;  // HOST:PORT or [IPv6]:PORT
  }
  const std::string host = !flags.control_addr.empty() ? flags.control_addr
                           : local                     ? "127.0.0.1"
                                                       : AdvertisedAddress(self_host);
  return absl::StrCat(host, ":", port);
}

// The job's relays: its agents per relay (rendezvous.relay_fanout, `auto` resolved by the number
// of agents) and how many relays that makes. The relays started and the certificates the
// launcher signs for them both come from here.
struct JobRelays {
  int fanout = 0;
  int count = 0;
};
JobRelays JobRelaysOf(const JobSpec& spec, const HostPlan& plan) {
  const int agents = static_cast<int>(plan.AgentHosts().size());
  const int fanout = EffectiveRelayFanout(agents, spec.relay_fanout, spec.relay_fanout_auto);
  return {fanout, RelayCount(agents, fanout)};
}

// With rendezvous.relay_fanout, the relays on this host (docs/relays.md); their addresses, or
// none. They reach the launcher on loopback; agents reach them at the host agents use for it.
absl::StatusOr<std::vector<std::string>> StartRelays(const JobSpec& spec, const HostPlan& plan,
                                                     const JobDirectory& dir, bool local,
                                                     const std::string& control, int port,
                                                     RelayGroup* group) {
  const auto [fanout, count] = JobRelaysOf(spec, plan);
  if (count == 0) return std::vector<std::string>{};
  RelayLaunch launch;
  const char* program = std::getenv("DLAUNCH_RELAY");
  launch.program = program ? program : SelfDir() + "/dlaunch-relay";
  launch.upstream = absl::StrCat("127.0.0.1:", port);
  launch.token_file = dir.token_path();
  launch.listen_host = control.substr(0, control.rfind(':'));
  launch.listen_all = !local;
  launch.dir = dir.path() + "/relays";
  launch.count = count;
  absl::StatusOr<std::vector<std::string>> addrs = group->Start(launch);
  if (!addrs.ok()) return absl::UnavailableError(absl::StrCat("relays: ", addrs.status().message()));
  std::cout << "[dlaunch] " << count << " relay(s) carry the agents' sessions, up to "
            << fanout << " agents each" << (spec.relay_fanout_auto ? " (relay_fanout: auto)" : "")
            << " (logs in " << launch.dir << ")" << std::endl;
  return addrs;
}

int FailPrepare(const absl::Status& status) {
  return Fail(status.code() == absl::StatusCode::kInvalidArgument ? kExitUsage : kExitLaunchError,
              status.message());
}

// Every agent holds a connection to the launcher: a batch system's usual soft limit of 1024 open
// files would refuse agents past about a thousand. The soft limit goes up to the hard one, and a
// hard limit too low for the job is said before any agent starts.
void RaiseOpenFileLimitFor(size_t agents) {
  const uint64_t limit = RaiseOpenFileLimit();
  const uint64_t needed = agents + 256;  // one connection per agent, and the launcher's own files
  if (limit < needed) {
    std::cerr << "[dlaunch] warning: this process may open " << limit << " files (ulimit -n), "
              << agents << " agents need about " << needed
              << ": agents past that will fail to connect; raise the limit (ulimit -Hn)\n";
  }
}

std::unique_ptr<CallbackServer> StartControlServer(const std::string& listen,
                                                  const PreparedJob& job, grpc::Service* service,
                                                  int* bound_port) {
  if (job.tls) CountFailedHandshakesQuietly();
  RaiseOpenFileLimitFor(job.plan.AgentHosts().size());
  grpc::ServerBuilder builder;
  // A connection that never completes its TLS handshake is dropped after 30 s instead of gRPC's
  // 120 s, so silent connections cannot pile up (docs/security.md).
  builder.AddChannelArgument(GRPC_ARG_SERVER_HANDSHAKE_TIMEOUT_MS, 30000);
  builder.AddListeningPort(listen, ControlServerCredentials(job.tls ? &*job.tls : nullptr),
                           bound_port);
  builder.RegisterService(service);
  std::unique_ptr<CallbackServer> server = CallbackServer::BuildAndStart(builder);
  if (*bound_port == 0) return nullptr;
  return server;
}

// The goodput account and the timeline, from the journal and the workers' step traces
// (docs/goodput.md, docs/trace.md), read once after the journal writer has flushed. A journal
// too big to read in a few seconds is left to `dlaunch trace`: at thousands of nodes the
// allocation would otherwise sit idle while the launcher reads it.
// DLAUNCH_TRACE_AT_EXIT_MB moves the bound (0: never at exit).
void WriteTimelineAtExit(const std::string& job_dir) {
  uint64_t limit = kTraceAtExitInputBytes;
  if (const char* mb = std::getenv("DLAUNCH_TRACE_AT_EXIT_MB"); mb != nullptr && *mb != '\0') {
    uint64_t v = 0;
    if (absl::SimpleAtoi(mb, &v)) limit = v << 20;
  }
  if (const uint64_t bytes = TraceInputBytes(job_dir); bytes > limit) {
    std::cout << "[dlaunch] timeline: not built at exit, the journal holds "
              << absl::StrFormat("%.1f", bytes / 1048576.0) << " MB (more than " << (limit >> 20)
              << " MB); `dlaunch trace " << job_dir << "` builds it\n"
              << "[dlaunch] goodput: not computed at exit for the same reason; `dlaunch trace "
              << job_dir << "` computes it and adds it to summary.json\n";
    return;
  }
  absl::StatusOr<TraceInput> input = LoadTraceInput(job_dir);
  if (!input.ok()) {
    std::cerr << "[dlaunch] error: cannot read the journal: " << input.status().message() << "\n";
    return;
  }
  const v1::GoodputAccount account = ComputeGoodput(*input);
  for (const std::string& line : GoodputReport(account)) std::cout << "[dlaunch] " << line << "\n";
  // No summary.json: the launcher could not write it and has said so already.
  if (absl::Status st = AddGoodputToSummary(job_dir, account); !st.ok() && !absl::IsNotFound(st)) {
    std::cerr << "[dlaunch] error: cannot add the goodput account to summary.json: " << st.message()
              << "\n";
  }
  absl::StatusOr<RenderedTrace> trace = WriteJobTrace(job_dir, *input, account);
  if (trace.ok()) std::cout << "[dlaunch] timeline: " << TracePath(job_dir) << "\n";
  else std::cerr << "[dlaunch] error: cannot write the timeline: " << trace.status().message() << "\n";
}

}  // namespace

const char kDoctorUsage[] =
    "usage: dlaunch doctor [job.yaml] [run options] [-- command [args...]]\n"
    "Starts an agent on every node the job would run on (the allocation's, --hosts, or local\n"
    "agents with --nnodes), runs the job's preflight there (GPUs, GPU processes, free space,\n"
    "the command and its Python imports, ports, clock) and prints a table; nothing else runs.\n"
    "Exit code 0 when every node answered and passed, 1 otherwise. Options as `dlaunch run`.\n";

int RunRunCommand(const std::vector<std::string>& args) {
  if (WantsRunHelp(args)) {
    std::cout << kRunUsage;
    return kExitOk;
  }
  if (args.empty()) {
    std::cerr << kRunUsage;
    return kExitUsage;
  }
  // One line that names the problem; `dlaunch run --help` has the rest.
  auto flags = ParseRunFlags(args);
  if (!flags.ok()) return Fail(kExitUsage, flags.status().message());
  auto spec = BuildRunSpec(*flags);
  if (!spec.ok()) {
    std::cerr << spec.status().message() << std::endl;
    return kExitUsage;
  }
  auto prepared = PrepareJob(*flags, *spec);
  if (!prepared.ok()) return FailPrepare(prepared.status());
  const std::string& self_host = prepared->self_host;
  const HostPlan* plan = &prepared->plan;
  const std::string& token = prepared->token;
  JobDirectory* dir = &prepared->dir;
  const JobPlacement& placement = prepared->placement;

  boost::asio::io_context io;
  const v1::PreflightPlan preflight = MakeJobPreflightPlan(*spec, *plan, placement);
  JobConfig job = MakeJobConfig(*spec, *plan, prepared->job_id, dir->path());
  job.preflight_note = PreflightNote(preflight, static_cast<int>(plan->AgentHosts().size()));
  // On a terminal the live table stays drawn below the output (docs/live-view.md).
  std::unique_ptr<LiveTerminal> terminal;
  if (isatty(STDOUT_FILENO)) terminal = std::make_unique<LiveTerminal>(STDOUT_FILENO, STDERR_FILENO);
  AsioTimerClock clock(io);  // the job's clock: the controller's timers and the rendezvous'
  v1::JoinResponse join_template = MakeJoinTemplate(*spec, placement);
  join_template.set_lease_ms(static_cast<int32_t>(JobState::Liveness(job).lease().count()));
  JobController controller(
      io, clock,
      JobSettings{job, *dir, MakeRendezvousConfig(*spec, *plan), std::move(join_template),
                  spec->max_restarts > 0 || !plan->spare_hosts.empty(), plan->AgentHosts()},
      terminal ? terminal->out() : std::cout,
      terminal && isatty(STDERR_FILENO) ? terminal->err() : std::cerr);
  LiveView live(io, [&controller] { return controller.Snapshot(); }, terminal.get());
  ControlService service(token, io, &controller);
  service.SetWatchHandler(&live);
  service.SetJobIdentity(prepared->tls ? &*prepared->tls : nullptr,  // signs relays' certificates
                         JobRelaysOf(*spec, *plan).count);
  service.SetPreflightPlan(preflight);
  std::ostream& said = terminal ? terminal->out() : std::cout;
  CollectiveCheckHost collective(
      io, {preflight.collective(), static_cast<int>(plan->AgentHosts().size()), spec->min_nodes},
      [&said](const std::string& line) { said << "[dlaunch] " << line << std::endl; });
  service.SetCollectiveCheckHandler(&collective);

  // The endpoint listens everywhere, so `dlaunch watch` reaches it from other hosts (the login
  // node); local agents still use loopback. With TLS (the default) nothing on the wire reads.
  const bool local = plan->node_launcher == "local";
  const std::string listen = absl::StrCat("0.0.0.0:", spec->control_port);
  int bound_port = 0;
  std::unique_ptr<CallbackServer> server =
      StartControlServer(listen, *prepared, &service, &bound_port);
  if (!server) return Fail(kExitLaunchError, absl::StrCat("cannot listen on ", listen));
  const std::string control = AgentsControlAddress(*flags, local, self_host, bound_port);
  const std::string reachable =
      local && flags->control_addr.empty()
          ? absl::StrCat(AdvertisedAddress(self_host), ":", bound_port)
          : control;
  absl::Status st = dir->WriteLauncherInfo({static_cast<int>(getpid()), self_host, reachable});
  RelayGroup relay_group;
  absl::StatusOr<std::vector<std::string>> relays =
      StartRelays(*spec, *plan, *dir, local, control, bound_port, &relay_group);
  if (st.ok() && !relays.ok()) st = relays.status();
  auto commands = LaunchCommands(*flags, *spec, *plan, *dir, placement.workdir, control,
                                 relays.ok() ? *relays : std::vector<std::string>{});
  if (st.ok() && !commands.ok()) st = commands.status();
  if (st.ok()) st = controller.Start(*commands);
  // A relay that dies is named, with the end of its log, once a second at most (its agents
  // move their sessions to the launcher: docs/relays.md).
  boost::asio::steady_timer relay_watch(io);
  std::function<void()> watch_relays = [&] {
    relay_watch.expires_after(std::chrono::seconds(1));
    relay_watch.async_wait([&](const boost::system::error_code& ec) {
      if (ec) return;
      std::ostream& err = terminal && isatty(STDERR_FILENO) ? terminal->err() : std::cerr;
      for (const std::string& line : relay_group.ReapExited()) err << "[dlaunch] " << line << std::endl;
      watch_relays();
    });
  };
  if (st.ok()) {
    if (relays.ok() && !relays->empty()) watch_relays();
    live.Start();
    io.run();
  }
  live.End(st.ok() ? controller.exit_code() : kExitLaunchError);
  // Answer what is still posted (waiting Joins get CANCELLED), then close the endpoint.
  service.StopPosting();
  io.restart();
  io.poll();
  server->Shutdown(std::chrono::system_clock::now() + std::chrono::milliseconds(500));
  relay_group.Stop();  // their streams ended with the server's: they are exiting
  if (int64_t strangers = FailedHandshakes(); strangers > 0) {
    std::cerr << "[dlaunch] refused " << strangers
              << " connection(s) to the control endpoint that failed the TLS handshake (not "
                 "holding the job's certificate)\n";
  }
  if (st.ok()) WriteTimelineAtExit(dir->path());
  if (!st.ok()) {
    return Fail(st.code() == absl::StatusCode::kInvalidArgument ? kExitUsage : kExitLaunchError,
                st.message());
  }
  return controller.exit_code();
}

int RunDoctorCommand(const std::vector<std::string>& args) {
  if (WantsRunHelp(args)) {
    std::cout << kDoctorUsage;
    return kExitOk;
  }
  // Without a job.yaml or command the nodes are checked for what any job needs; the command
  // check is then skipped.
  auto flags = ParseRunFlags(args);
  bool no_job = false;
  if (!flags.ok()) {
    std::vector<std::string> with_command = args;
    with_command.insert(with_command.end(), {"--", "true"});
    if (auto retried = ParseRunFlags(with_command); retried.ok()) {
      flags = std::move(retried);
      no_job = true;
    }
  }
  if (!flags.ok()) return Fail(kExitUsage, absl::StrCat(flags.status().message(), "\n", kDoctorUsage));
  auto spec = BuildRunSpec(*flags);
  if (!spec.ok()) {
    std::cerr << spec.status().message() << std::endl;
    return kExitUsage;
  }
  if (no_job) spec->command.clear();
  spec->preflight.enabled = true;
  spec->name += "-doctor";
  auto prepared = PrepareJob(*flags, *spec);
  if (!prepared.ok()) return FailPrepare(prepared.status());
  const std::string& self_host = prepared->self_host;
  const HostPlan* plan = &prepared->plan;
  JobDirectory* dir = &prepared->dir;
  if (absl::Status st = dir->WriteKind(kDoctorKind); !st.ok()) return Fail(kExitLaunchError, st.message());
  const JobPlacement& placement = prepared->placement;

  boost::asio::io_context io;
  const int expected = static_cast<int>(plan->AgentHosts().size());
  Doctor doctor(io, spec->join_timeout_s);
  ControlService service(prepared->token, io, &doctor);
  const v1::PreflightPlan preflight = MakeJobPreflightPlan(*spec, *plan, placement);
  service.SetPreflightPlan(preflight);
  // A slow node fails its link or compute check here, so that the table names it.
  CollectiveCheckHost collective(io, {preflight.collective(), expected, 1}, [](const std::string& line) {
    std::cout << "[dlaunch] " << line << std::endl;
  });
  service.SetCollectiveCheckHandler(&collective);
  const bool local = plan->node_launcher == "local";
  const std::string listen = absl::StrCat(local ? "127.0.0.1" : "0.0.0.0", ":", spec->control_port);
  int bound_port = 0;
  std::unique_ptr<CallbackServer> server =
      StartControlServer(listen, *prepared, &service, &bound_port);
  if (!server) return Fail(kExitLaunchError, absl::StrCat("cannot listen on ", listen));
  auto commands = LaunchCommands(*flags, *spec, *plan, *dir, placement.workdir,
                                 AgentsControlAddress(*flags, local, self_host, bound_port));
  absl::Status st = commands.ok() ? doctor.Start(*commands, dir->logs_dir()) : commands.status();
  if (!st.ok()) return Fail(kExitLaunchError, st.message());
  std::cout << "[dlaunch] doctor: checking " << expected << " node(s) via " << plan->node_launcher
            << " (agent logs in " << dir->logs_dir() << ")" << std::endl;
  io.run();
  service.StopPosting();
  io.restart();
  io.poll();
  server->Shutdown(std::chrono::system_clock::now() + std::chrono::milliseconds(500));
  std::cout << RenderDoctorReport(doctor.report(), expected);
  return DoctorExitCode(doctor.report(), expected);
}

}  // namespace dlaunch
