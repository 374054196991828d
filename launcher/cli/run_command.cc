#include "launcher/cli/run_command.h"

#include <fcntl.h>
#include <ifaddrs.h>
#include <limits.h>
#include <netdb.h>
#include <arpa/inet.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <random>

#include <grpcpp/grpcpp.h>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "common/host_identity.h"
#include "common/process.h"
#include "launcher/run/allocation.h"
#include "launcher/run/control_service.h"
#include "launcher/spec/hostlist.h"
#include "launcher/run/job_controller.h"
#include "launcher/jobdir/job_record.h"
#include "launcher/spec/job_spec_parser.h"
#include "common/json_line.h"
#include "launcher/run/node_launch.h"

namespace dlaunch {

const char kRunUsage[] =
    "usage: dlaunch run [job.yaml] [options] [-- command [args...]]\n"
    "  --hosts LIST            hosts to run on (a,b,c or nid[001-004]); default: the allocation's\n"
    "  --nnodes N|MIN:MAX      number of nodes (locally: agents on this machine)\n"
    "  --nproc-per-node N      workers per node (default: one per visible GPU, else 1)\n"
    "  --launcher KIND         local, ssh, mpiexec, mpirun, srun (default: from the allocation)\n"
    "  --launcher-cmd PREFIX   exact command prefix that starts one agent per node\n"
    "  --job-dir DIR           job directory (default: <job root>/<job id>)\n"
    "  --job-root DIR          where job directories go (default: runs)\n"
    "  --name NAME             job name\n"
    "  --port P                launcher control port (default: a free one)\n"
    "  --control-addr ADDR     address agents use to reach the launcher\n"
    "  --show-ranks all|LIST   ranks whose output is shown (default: all)\n"
    "  --grace SECONDS         SIGTERM -> SIGKILL grace when stopping workers\n"
    "  --heartbeat SECONDS     agent heartbeat interval\n"
    "  --join-timeout SECONDS  how long to wait for every node to join\n";

namespace {

std::string SelfDir() {
  char buf[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  if (n <= 0) return ".";
  buf[n] = 0;
  return std::filesystem::path(buf).parent_path().string();
}

absl::Status WriteSecretFile(const std::string& path, const std::string& text) {
  int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) return absl::PermissionDeniedError(absl::StrCat("cannot write ", path, ": ", strerror(errno)));
  fchmod(fd, 0600);
  bool ok = write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  close(fd);
  if (!ok) return absl::DataLossError(absl::StrCat("short write to ", path));
  return absl::OkStatus();
}

int Fail(int code, const std::string& message) {
  std::cerr << "dlaunch: " << message << std::endl;
  return code;
}

}  // namespace

absl::StatusOr<RunFlags> ParseRunFlags(const std::vector<std::string>& args) {
  RunFlags f;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--") {
      f.command.assign(args.begin() + i + 1, args.end());
      break;
    }
    std::string name = a, value;
    bool has_inline = false;
    if (a.rfind("--", 0) == 0 && a.find('=') != std::string::npos) {
      name = a.substr(0, a.find('='));
      value = a.substr(a.find('=') + 1);
      has_inline = true;
    }
    auto take = [&]() -> absl::StatusOr<std::string> {
      if (has_inline) return value;
      if (i + 1 >= args.size()) return absl::InvalidArgumentError(absl::StrCat(name, " needs a value"));
      return args[++i];
    };
    auto num = [&](double* out) -> absl::Status {
      auto v = take();
      if (!v.ok()) return v.status();
      if (!absl::SimpleAtod(*v, out) || *out < 0) {
        return absl::InvalidArgumentError(absl::StrCat(name, ": not a non-negative number: '", *v, "'"));
      }
      return absl::OkStatus();
    };
    absl::StatusOr<std::string> v;
    if (name == "--hosts") {
      if (!(v = take()).ok()) return v.status();
      auto hosts = ExpandHostlist(*v);
      if (!hosts.ok()) return absl::InvalidArgumentError(absl::StrCat("--hosts: ", hosts.status().message()));
      f.hosts = *hosts;
    } else if (name == "--nnodes") {
      if (!(v = take()).ok()) return v.status();
      f.nnodes = *v;
    } else if (name == "--nproc-per-node" || name == "--nproc_per_node") {
      if (!(v = take()).ok()) return v.status();
      if (*v == "gpu" || *v == "auto") {
        f.nproc_per_node = 0;
      } else if (!absl::SimpleAtoi(*v, &f.nproc_per_node) || f.nproc_per_node < 1) {
        return absl::InvalidArgumentError(absl::StrCat("--nproc-per-node: expected a positive integer or 'gpu', got '", *v, "'"));
      }
    } else if (name == "--launcher") {
      if (!(v = take()).ok()) return v.status();
      f.launcher = *v;
    } else if (name == "--launcher-cmd") {
      if (!(v = take()).ok()) return v.status();
      f.launcher_cmd = *v;
    } else if (name == "--job-dir") {
      if (!(v = take()).ok()) return v.status();
      f.job_dir = *v;
    } else if (name == "--job-root") {
      if (!(v = take()).ok()) return v.status();
      f.job_root = *v;
    } else if (name == "--name") {
      if (!(v = take()).ok()) return v.status();
      f.name = *v;
    } else if (name == "--control-addr") {
      if (!(v = take()).ok()) return v.status();
      f.control_addr = *v;
    } else if (name == "--port") {
      if (!(v = take()).ok()) return v.status();
      if (!absl::SimpleAtoi(*v, &f.port) || f.port < 0 || f.port > 65535) {
        return absl::InvalidArgumentError(absl::StrCat("--port: expected 0..65535, got '", *v, "'"));
      }
    } else if (name == "--show-ranks") {
      if (!(v = take()).ok()) return v.status();
      f.show_ranks = *v;
    } else if (name == "--grace") {
      if (auto st = num(&f.grace_s); !st.ok()) return st;
    } else if (name == "--heartbeat") {
      if (auto st = num(&f.heartbeat_s); !st.ok()) return st;
    } else if (name == "--join-timeout") {
      if (auto st = num(&f.join_timeout_s); !st.ok()) return st;
    } else if (a.rfind("-", 0) == 0) {
      return absl::InvalidArgumentError(absl::StrCat("unknown option '", a, "'"));
    } else if (f.spec_path.empty()) {
      f.spec_path = a;
    } else {
      return absl::InvalidArgumentError(absl::StrCat(
          "unexpected argument '", a, "' (put the worker command after `--`)"));
    }
  }
  if (f.spec_path.empty() && f.command.empty()) {
    return absl::InvalidArgumentError("give a job.yaml or a command after `--`");
  }
  return f;
}

absl::StatusOr<JobSpec> BuildRunSpec(const RunFlags& f) {
  JobSpec spec;
  if (!f.spec_path.empty()) {
    auto loaded = LoadJobSpec(f.spec_path);
    if (!loaded.ok()) return loaded.status();
    spec = *loaded;
  } else {
    spec.nodes_auto = f.nnodes.empty();
  }
  if (!f.command.empty()) spec.command = f.command;
  if (!f.nnodes.empty()) {
    std::vector<std::string> parts = absl::StrSplit(f.nnodes, ':');
    int lo = 0, hi = 0;
    bool ok = parts.size() <= 2 && absl::SimpleAtoi(parts[0], &lo) &&
              absl::SimpleAtoi(parts.back(), &hi) && lo >= 1 && hi >= lo;
    if (!ok) return absl::InvalidArgumentError(absl::StrCat("--nnodes: expected N or MIN:MAX, got '", f.nnodes, "'"));
    spec.min_nodes = lo;
    spec.max_nodes = hi;
    spec.nodes_auto = false;
  }
  if (f.nproc_per_node >= 0) spec.nproc_per_node = f.nproc_per_node;
  if (!f.launcher.empty()) spec.node_launcher = f.launcher;
  if (!f.job_root.empty()) spec.job_root = f.job_root;
  if (!f.name.empty()) spec.name = f.name;
  if (f.port >= 0) spec.control_port = f.port;
  if (f.grace_s >= 0) spec.stop_grace_s = f.grace_s;
  if (f.heartbeat_s > 0) spec.heartbeat_interval_s = f.heartbeat_s;
  if (f.join_timeout_s > 0) spec.join_timeout_s = f.join_timeout_s;
  if (!f.show_ranks.empty()) {
    if (f.show_ranks == "all") {
      spec.show_all_ranks = true;
      spec.show_ranks.clear();
    } else {
      spec.show_all_ranks = false;
      spec.show_ranks.clear();
      for (absl::string_view p : absl::StrSplit(f.show_ranks, ',')) {
        int r;
        if (!absl::SimpleAtoi(p, &r) || r < 0) {
          return absl::InvalidArgumentError(absl::StrCat("--show-ranks: expected 'all' or ranks like 0,3, got '", f.show_ranks, "'"));
        }
        spec.show_ranks.push_back(r);
      }
    }
  }
  if (auto st = ValidateJobSpec(spec); !st.ok()) return st;
  return spec;
}

int RunValidateCommand(const std::vector<std::string>& args) {
  if (args.size() != 1 || args[0].rfind("-", 0) == 0) {
    return Fail(2, "usage: dlaunch validate job.yaml");
  }
  auto spec = LoadJobSpec(args[0]);
  if (!spec.ok()) {
    std::cerr << spec.status().message() << std::endl;
    return spec.status().code() == absl::StatusCode::kNotFound ? 2 : 2;
  }
  std::cout << ResolvedJobYaml(*spec);
  auto alloc = DetectAllocation();
  if (alloc.ok()) {
    auto plan = ResolveHosts(*spec, {}, *alloc, ShortHostName(LocalHostName()));
    if (plan.ok()) {
      std::cout << "# resolved here: " << plan->hosts.size() << " node(s) from " << plan->source
                << ": " << absl::StrJoin(plan->hosts, ",") << "\n";
    } else {
      std::cout << "# hosts cannot be resolved here: " << plan.status().message() << "\n";
    }
  }
  return 0;
}

int RunRunCommand(const std::vector<std::string>& args) {
  for (const auto& a : args) {
    if (a == "--") break;
    if (a == "-h" || a == "--help") {
      std::cout << kRunUsage;
      return 0;
    }
  }
  auto flags = ParseRunFlags(args);
  if (!flags.ok()) return Fail(2, absl::StrCat(flags.status().message(), "\n", kRunUsage));
  auto spec_or = BuildRunSpec(*flags);
  if (!spec_or.ok()) {
    std::cerr << spec_or.status().message() << std::endl;
    return 2;
  }
  JobSpec spec = *spec_or;

  const std::string self_host = LocalHostName();
  auto alloc = DetectAllocation();
  if (!alloc.ok()) return Fail(3, std::string(alloc.status().message()));
  auto plan = ResolveHosts(spec, flags->hosts, *alloc, ShortHostName(self_host));
  if (!plan.ok()) return Fail(plan.status().code() == absl::StatusCode::kInvalidArgument ? 2 : 3,
                              std::string(plan.status().message()));
  const std::string kind = plan->node_launcher;

  // Job directory, token, resolved spec.
  std::string job_id, job_dir;
  if (!flags->job_dir.empty()) {
    job_dir = flags->job_dir;
    job_id = std::filesystem::path(job_dir).filename().string();
    if (job_id.empty()) job_id = std::filesystem::path(job_dir).parent_path().filename().string();
  } else {
    std::random_device rd;
    job_id = MakeJobId(spec.name, absl::Now(), rd());
    job_dir = spec.job_root + "/" + job_id;
  }
  std::error_code ec;
  std::filesystem::create_directories(job_dir + "/logs", ec);
  if (ec) return Fail(3, absl::StrCat("cannot create job directory ", job_dir, ": ", ec.message()));
  job_dir = std::filesystem::absolute(job_dir).lexically_normal().string();
  const std::string token = RandomHex(32);
  if (auto st = WriteSecretFile(job_dir + "/token", token + "\n"); !st.ok()) return Fail(3, std::string(st.message()));
  if (!std::filesystem::exists(job_dir + "/job.yaml")) {
    (void)WriteTextFile(job_dir + "/job.yaml", ResolvedJobYaml(spec));
  }
  {
    std::ofstream hf(job_dir + "/hostfile");
    for (const auto& h : plan->hosts) hf << h << "\n";
  }

  // The worker program: a bare name that ships next to dlaunch (dlaunch-worker) is used from there.
  std::vector<std::string> argv = spec.command;
  if (!argv.empty() && argv[0].find('/') == std::string::npos) {
    std::string sibling = SelfDir() + "/" + argv[0];
    if (access(sibling.c_str(), X_OK) == 0) argv[0] = sibling;
  }
  std::string workdir = spec.workdir.empty() ? std::filesystem::current_path().string()
                                             : std::filesystem::absolute(spec.workdir).string();

  // Control endpoint.
  std::string listen_host = kind == "local" ? "127.0.0.1" : "0.0.0.0";
  std::string advertised = !flags->control_addr.empty() ? flags->control_addr
                           : listen_host == "127.0.0.1"  ? "127.0.0.1"
                                                         : AdvertisedAddress(self_host);

  RendezvousConfig rc;
  rc.min_nodes = plan->min_nodes;
  rc.max_nodes = plan->max_nodes;
  rc.host_order = plan->hosts;
  rc.join_timeout_s = spec.join_timeout_s;
  rc.last_call_s = spec.last_call_s;
  rc.master_port = spec.master_port;

  v1::JoinResponse tmpl;
  tmpl.set_job_id(job_id);
  tmpl.set_job_dir(job_dir);
  for (const auto& a : argv) tmpl.mutable_worker()->add_argv(a);
  for (const auto& [k, v] : spec.env) (*tmpl.mutable_worker()->mutable_env())[k] = v;
  tmpl.mutable_worker()->set_workdir(workdir);
  tmpl.mutable_worker()->set_isolate_gpus(spec.isolate_gpus);
  tmpl.mutable_worker()->set_gpus_per_proc(spec.gpus_per_proc);
  tmpl.set_heartbeat_ms(static_cast<int>(spec.heartbeat_interval_s * 1000));
  tmpl.set_grace_ms(static_cast<int>(spec.stop_grace_s * 1000));
  tmpl.set_max_restarts(spec.max_restarts);
  tmpl.set_forward_all(spec.show_all_ranks);
  for (int r : spec.show_ranks) tmpl.add_forward_ranks(r);

  boost::asio::io_context io;
  JobSettings settings;
  settings.spec = spec;
  settings.job_id = job_id;
  settings.job_dir = job_dir;
  settings.hosts = plan->hosts;
  settings.node_launcher = kind;
  JobController controller(io, settings, std::cout, std::cerr);
  ControlService service(token, rc, tmpl, &controller);
  controller.set_service(&service);

  grpc::ServerBuilder builder;
  int bound_port = 0;
  builder.AddListeningPort(absl::StrCat(listen_host, ":", spec.control_port),
                           grpc::InsecureServerCredentials(), &bound_port);
  builder.RegisterService(&service);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (!server || bound_port == 0) {
    return Fail(3, absl::StrCat("cannot listen on ", listen_host, ":", spec.control_port));
  }
  const std::string control = absl::StrCat(advertised, ":", bound_port);
  (void)WriteTextFile(job_dir + "/launcher.json", JsonLine()
                                                      .Add("pid", static_cast<int>(getpid()))
                                                      .Add("host", self_host)
                                                      .Add("address", control)
                                                      .str() + "\n");

  std::string agent = SelfDir() + "/dlaunch-agent";
  if (const char* a = std::getenv("DLAUNCH_AGENT")) agent = a;
  NodeLaunchInput nl;
  nl.kind = kind;
  nl.hosts = plan->hosts;
  nl.agent_argv = {agent, "--control", control, "--token-file", job_dir + "/token",
                   "--nproc", std::to_string(spec.nproc_per_node),
                   "--join-timeout", std::to_string(spec.join_timeout_s),
                   "--tail-lines", std::to_string(spec.tail_lines)};
  nl.hostfile = job_dir + "/hostfile";
  nl.workdir = workdir;
  if (const char* s = std::getenv("DLAUNCH_SSH")) nl.ssh = s;
  if (!flags->launcher_cmd.empty()) {
    auto prefix = SplitCommandLine(flags->launcher_cmd);
    if (!prefix.ok()) return Fail(2, absl::StrCat("--launcher-cmd: ", prefix.status().message()));
    nl.prefix = *prefix;
  }
  auto commands = BuildNodeLaunchCommands(nl);
  if (!commands.ok()) return Fail(2, std::string(commands.status().message()));

  if (auto st = controller.Start(*commands); !st.ok()) {
    server->Shutdown(std::chrono::system_clock::now());
    return Fail(3, std::string(st.message()));
  }
  io.run();
  service.Shutdown();
  server->Shutdown(std::chrono::system_clock::now() + std::chrono::milliseconds(500));
  return controller.exit_code();
}

}  // namespace dlaunch
