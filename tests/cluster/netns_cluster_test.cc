// The fixture itself: hosts are distinct, reachable over TCP, cuttable, and leave nothing
// behind; the MPI launchers and Slurm the dlaunch tests rely on work across them.
#include "netns_cluster.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <set>
#include <sstream>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "gtest/gtest.h"

namespace dlaunch {
namespace testing {
namespace {

std::string ReadFileOrEmpty(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Polls until `path` holds a line, or the deadline passes.
std::string WaitForLine(const std::string& path, absl::Duration timeout) {
  absl::Time deadline = absl::Now() + timeout;
  while (absl::Now() < deadline) {
    std::string text = ReadFileOrEmpty(path);
    if (text.find('\n') != std::string::npos) return std::string(absl::StripAsciiWhitespace(text));
    usleep(20000);
  }
  return "";
}

constexpr char kEchoServer[] = R"PY(
import socket, sys
s = socket.socket()
s.bind(("0.0.0.0", 0))
s.listen(8)
port_file = sys.argv[1]
with open(port_file + ".tmp", "w") as f:
    f.write("%d\n" % s.getsockname()[1])
import os
os.rename(port_file + ".tmp", port_file)
while True:
    c, addr = s.accept()
    c.sendall(("hello %s from %s\n" % (addr[0], socket.gethostname())).encode())
    c.close()
)PY";

std::string ClientCommand(const std::string& host, const std::string& port) {
  return absl::StrCat(
      "/usr/bin/python3 -c 'import socket; c = socket.create_connection((\"", host, "\", ",
      port, "), timeout=2); print(c.recv(100).decode().strip())'");
}

TEST(NetnsClusterTest, HostsTalkTcpAndLinksCanBeCut) {
  NETNS_CLUSTER_SKIP_IF_UNAVAILABLE();
  auto started = NetnsCluster::Start(3);
  ASSERT_TRUE(started.ok()) << started.status();
  NetnsCluster& cluster = **started;
  ASSERT_EQ(cluster.hosts(), (std::vector<std::string>{"h1", "h2", "h3"}));

  std::set<std::string> names;
  for (std::string host : {"head", "h1", "h2", "h3"}) {
    RunResult r = cluster.RunOn(host, "hostname", absl::Seconds(10));
    ASSERT_TRUE(r.ok()) << r.output;
    EXPECT_EQ(absl::StripAsciiWhitespace(r.output), host);
    names.insert(std::string(absl::StripAsciiWhitespace(r.output)));
  }
  EXPECT_EQ(names.size(), 4u);

  std::string script = cluster.dir() + "/echo_server.py";
  std::ofstream(script) << kEchoServer;
  std::string port_file = cluster.dir() + "/echo.port";
  pid_t server = cluster.SpawnOn("h2", "exec /usr/bin/python3 " + script + " " + port_file,
                                 cluster.dir() + "/echo.log");
  ASSERT_GT(server, 0);
  std::string port = WaitForLine(port_file, absl::Seconds(20));
  ASSERT_FALSE(port.empty()) << ReadFileOrEmpty(cluster.dir() + "/echo.log");

  // Across hosts, by name; the server sees the client's own address.
  RunResult hello = cluster.RunOn("h3", ClientCommand("h2", port), absl::Seconds(10));
  ASSERT_TRUE(hello.ok()) << hello.output;
  EXPECT_EQ(absl::StripAsciiWhitespace(hello.output),
            absl::StrCat("hello ", cluster.HostIp("h3"), " from h2"));

  ASSERT_TRUE(cluster.CutLink("h2").ok());
  RunResult cut = cluster.RunOn("h3", ClientCommand("h2", port), absl::Seconds(10));
  EXPECT_FALSE(cut.ok()) << "connect to a cut host succeeded: " << cut.output;
  EXPECT_FALSE(cut.timed_out);
  // The cut host's processes live on; only its network is gone.
  EXPECT_EQ(kill(server, 0), 0);

  ASSERT_TRUE(cluster.HealLink("h2").ok());
  RunResult healed = cluster.RunOn("h3", ClientCommand("h2", port), absl::Seconds(10));
  ASSERT_TRUE(healed.ok()) << healed.output;
  EXPECT_EQ(absl::StripAsciiWhitespace(healed.output),
            absl::StrCat("hello ", cluster.HostIp("h3"), " from h2"));

  // The root namespace cannot reach the cluster's subnet: a stray client fails fast.
  RunResult stray = RunCommand(
      {"/usr/bin/python3", "-c",
       absl::StrCat("import socket; socket.create_connection((\"", cluster.HostIp("h2"),
                    "\", ", port, "), timeout=2)")},
      absl::Seconds(10));
  EXPECT_FALSE(stray.ok());

  // Down leaves no namespace, link, route or process of this run.
  const std::string prefix = cluster.prefix();
  const std::string net = cluster.HostIp("head").substr(0, cluster.HostIp("head").rfind('.'));
  cluster.Stop();
  EXPECT_NE(kill(server, 0), 0) << "server pid " << server << " survived teardown";
  RunResult left = RunCommand(
      {"/bin/sh", "-c",
       absl::StrCat("ip netns list | grep '^", prefix, "-'; ip -o link | grep ' ", prefix,
                    "-'; ip route show table all | grep '", net, ".0/24'; true")},
      absl::Seconds(10));
  EXPECT_EQ(left.output, "") << "left behind by down";

  // Down again is harmless.
  RunResult again = cluster.Tool({"down"}, absl::Seconds(10));
  EXPECT_TRUE(again.ok()) << again.output;
}

TEST(NetnsClusterTest, ParallelClustersDoNotCollide) {
  NETNS_CLUSTER_SKIP_IF_UNAVAILABLE();
  auto a = NetnsCluster::Start(1);
  ASSERT_TRUE(a.ok()) << a.status();
  auto b = NetnsCluster::Start(1);
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_NE((*a)->prefix(), (*b)->prefix());
  EXPECT_NE((*a)->HostIp("h1"), (*b)->HostIp("h1"));
  RunResult ra = (*a)->RunOn("h1", "ip -4 -o addr show dev eth0", absl::Seconds(10));
  ASSERT_TRUE(ra.ok()) << ra.output;
  EXPECT_NE(ra.output.find((*a)->HostIp("h1") + "/24"), std::string::npos) << ra.output;
  // Interface names in the root namespace must fit IFNAMSIZ.
  EXPECT_LE((*a)->Namespace("head").size(), 15u);
}

TEST(NetnsClusterTest, MpiLaunchersStartOneProcessPerHost) {
  NETNS_CLUSTER_SKIP_IF_UNAVAILABLE();
  auto started = NetnsCluster::Start(3);
  ASSERT_TRUE(started.ok()) << started.status();
  NetnsCluster& cluster = **started;
  std::string nodefile = cluster.dir() + "/nodefile";
  std::ofstream(nodefile) << "h1\nh2\nh3\n";

  // MPICH hydra, spelled like PALS's mpiexec on Polaris.
  if (access("/usr/bin/mpiexec.hydra", X_OK) == 0) {
    RunResult hydra = cluster.RunOn(
        "h1",
        absl::StrCat("mpiexec.hydra -launcher ssh -launcher-exec ", cluster.RshPath(),
                     " -n 3 --ppn 1 --hostfile ", nodefile, " hostname"),
        absl::Seconds(60));
    ASSERT_TRUE(hydra.ok()) << hydra.output;
    std::vector<std::string> lines = absl::StrSplit(hydra.output, '\n', absl::SkipEmpty());
    EXPECT_EQ(std::set<std::string>(lines.begin(), lines.end()),
              (std::set<std::string>{"h1", "h2", "h3"}))
        << hydra.output;
  }
  // Open MPI with the rsh replacement as its ssh.
  if (access("/usr/bin/mpirun.openmpi", X_OK) == 0) {
    RunResult ompi = cluster.RunOn(
        "h1", absl::StrCat("mpirun.openmpi -np 3 -npernode 1 --hostfile ", nodefile, " hostname"),
        absl::Seconds(60),
        {{"OMPI_MCA_plm_rsh_agent", cluster.RshPath()},
         {"OMPI_ALLOW_RUN_AS_ROOT", "1"},
         {"OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1"}});
    ASSERT_TRUE(ompi.ok()) << ompi.output;
    std::vector<std::string> lines = absl::StrSplit(ompi.output, '\n', absl::SkipEmpty());
    // Open MPI's own diagnostics ("[h1:11265] plm:rsh: Warning: setpgid(...) failed", seen once
    // under load) start with "[host:pid]"; a host name never starts with '['.
    lines.erase(std::remove_if(lines.begin(), lines.end(),
                               [](const std::string& l) { return absl::StartsWith(l, "["); }),
                lines.end());
    EXPECT_EQ(std::set<std::string>(lines.begin(), lines.end()),
              (std::set<std::string>{"h1", "h2", "h3"}))
        << ompi.output;
  }
}

TEST(NetnsClusterTest, SlurmRunsABatchJobAcrossHosts) {
  NETNS_CLUSTER_SKIP_IF_UNAVAILABLE();
  auto started = NetnsCluster::Start(3);
  ASSERT_TRUE(started.ok()) << started.status();
  NetnsCluster& cluster = **started;
  absl::Status slurm = cluster.StartSlurm();
  if (absl::IsFailedPrecondition(slurm)) GTEST_SKIP() << slurm.message();
  ASSERT_TRUE(slurm.ok()) << slurm;

  std::string script = cluster.dir() + "/job.sh";
  std::ofstream(script) << "#!/bin/sh\n#SBATCH -N 3\n#SBATCH -o " << cluster.dir()
                        << "/job-%j.out\nsrun hostname\n";
  RunResult submit = cluster.RunOn("head", "sbatch --parsable " + script, absl::Seconds(30),
                                   {{"SLURM_CONF", cluster.SlurmConf()}});
  ASSERT_TRUE(submit.ok()) << submit.output;
  std::string job_id(absl::StripAsciiWhitespace(submit.output));

  absl::Time deadline = absl::Now() + absl::Seconds(60);
  std::string state;
  while (absl::Now() < deadline) {
    RunResult show = cluster.RunOn("head", "scontrol show job " + job_id + " -o",
                                   absl::Seconds(10), {{"SLURM_CONF", cluster.SlurmConf()}});
    size_t at = show.output.find("JobState=");
    state = at == std::string::npos ? "" : show.output.substr(at + 9, show.output.find(' ', at) - at - 9);
    if (state == "COMPLETED" || state == "FAILED" || state == "CANCELLED") break;
    usleep(200000);
  }
  ASSERT_EQ(state, "COMPLETED");
  std::string out = ReadFileOrEmpty(cluster.dir() + "/job-" + job_id + ".out");
  std::vector<std::string> lines = absl::StrSplit(out, '\n', absl::SkipEmpty());
  EXPECT_EQ(std::set<std::string>(lines.begin(), lines.end()),
            (std::set<std::string>{"h1", "h2", "h3"}))
      << out;
}

}  // namespace
}  // namespace testing
}  // namespace dlaunch
