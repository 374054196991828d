// Relays (docs/relays.md) with real processes: `dlaunch run --relay-fanout K` starts
// dlaunch-relay processes, the agents' sessions go through them, and the job runs, restarts and
// ends as without them; when a relay dies its agents move their sessions to the launcher with
// their workers running on (or, with no grace to move in, their nodes are lost); a call to a
// relay without the token is refused and journaled.
#include <signal.h>
#include <sys/stat.h>

#include <chrono>
#include <fstream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "dlaunch/control.grpc.pb.h"
#include "proto/control_credentials.h"
#include "proto/grpc_status.h"
#include "tests/integration/test_process.h"

namespace dlaunch::testing {
namespace {

using std::chrono::seconds;

const std::string kBin = DLAUNCH_BIN_DIR;

class RelayTest : public ::testing::Test {
 protected:
  void SetUp() override {
    tmp_ = MakeTempDir();
    job_id_ = tmp_.substr(tmp_.rfind('/') + 1);
    job_dir_ = tmp_ + "/" + job_id_;
  }
  void TearDown() override {
    // Nothing of the job is left: relays, agents and workers.
    EXPECT_TRUE(WaitFor([&] { return JobProcesses().empty(); }, seconds(10)))
        << JobProcesses().size() << " process(es) of the job left";
  }

  std::unique_ptr<ChildProcess> Start(int nodes, const std::vector<std::string>& flags,
                                      const std::vector<std::string>& command) {
    std::vector<std::string> argv = {kBin + "/dlaunch", "run", "--nnodes", std::to_string(nodes),
                                     "--nproc-per-node", "1", "--job-dir", job_dir_,
                                     "--heartbeat", "1", "--grace", "2"};
    argv.insert(argv.end(), flags.begin(), flags.end());
    argv.push_back("--");
    argv.insert(argv.end(), command.begin(), command.end());
    return std::make_unique<ChildProcess>(argv, tmp_);
  }

  std::vector<pid_t> JobProcesses() const {
    return FindProcesses("DLAUNCH_JOB_ID=" + job_id_, job_dir_ + "/token");
  }
  std::string Events() const { return ReadFile(job_dir_ + "/events.jsonl"); }
  std::string RelayLog(int i) const { return ReadFile(absl::StrCat(job_dir_, "/relays/relay-", i, ".log")); }
  // The number before `what` in relay i's closing line ("3 agent session(s)").
  int RelayCount(int i, const std::string& what) const {
    const std::string log = RelayLog(i);
    const size_t at = log.find(what);
    if (at == std::string::npos) return -1;
    const size_t start = log.rfind(' ', at - 2);
    int n = -1;
    return absl::SimpleAtoi(log.substr(start + 1, at - start - 2), &n) ? n : -1;
  }

  std::string tmp_, job_id_, job_dir_;
};

TEST_F(RelayTest, AJobThroughRelaysRunsAsWithoutThem) {
  for (const std::vector<std::string>& tls : {std::vector<std::string>{}, {"--no-tls"}}) {
    SCOPED_TRACE(tls.empty() ? "TLS" : "plain TCP");
    SetUp();
    std::vector<std::string> flags = {"--relay-fanout", "2"};
    flags.insert(flags.end(), tls.begin(), tls.end());
    auto run = Start(6, flags, {kBin + "/dlaunch-test-probe", "--report", "--sleep", "2"});
    ASSERT_EQ(run->Wait(seconds(120)), 0) << run->Stdout() << run->Stderr();
    EXPECT_NE(run->Stdout().find("3 relay(s) carry the agents' sessions"), std::string::npos)
        << run->Stdout();
    // Every agent's session went through a relay, two per relay, and reports came back up.
    int sessions = 0;
    for (int i = 0; i < 3; ++i) {
      EXPECT_EQ(RelayCount(i, "agent session(s)"), 2) << RelayLog(i);
      EXPECT_GT(RelayCount(i, "message(s) up"), 6) << RelayLog(i);
      sessions += RelayCount(i, "agent session(s)");
    }
    EXPECT_EQ(sessions, 6);
    const std::string metrics = ReadFile(job_dir_ + "/metrics.jsonl");
    for (int rank = 0; rank < 6; ++rank) {
      EXPECT_NE(metrics.find(absl::StrCat("\"rank\":", rank, ",")), std::string::npos)
          << "no report of rank " << rank;
    }
    EXPECT_TRUE(WaitFor([&] { return JobProcesses().empty(); }, seconds(10)));
  }
}

TEST_F(RelayTest, ARelayKilledMovesItsSessionsToTheLauncherAndNoRoundIsLost) {
  // The workers run until told to end (a file), so their SUCCEEDED events come after the move.
  const std::string go = tmp_ + "/go";
  auto run = Start(4, {"--relay-fanout", "2", "--max-restarts", "1"},
                   {"/bin/sh", "-c", "while [ ! -e " + go + " ]; do sleep 0.05; done; exit 0"});
  ASSERT_TRUE(WaitFor([&] { return absl::StrContains(Events(), "workers_started"); }, seconds(60)))
      << run->Stdout() << run->Stderr();
  std::vector<pid_t> relay0 = FindProcesses("", job_dir_ + "/relays/relay-0.port");
  ASSERT_EQ(relay0.size(), 1u);
  ASSERT_EQ(kill(relay0[0], SIGKILL), 0);
  // Nodes 0 and 2 (relay 0's) open sessions with the launcher itself, their workers running on.
  auto resumed = [&] {
    const std::string e = Events();
    int n = 0;
    for (size_t at = e.find("session_resumed"); at != std::string::npos;
         at = e.find("session_resumed", at + 1)) {
      ++n;
    }
    return n;
  };
  ASSERT_TRUE(WaitFor([&] { return resumed() == 2; }, seconds(30)))
      << Events() << run->Stdout() << run->Stderr();
  std::ofstream(go) << "";
  std::optional<int> code = run->Wait(seconds(60));
  ASSERT_EQ(code, 0) << run->Stdout() << run->Stderr();
  const std::string events = Events();
  EXPECT_TRUE(absl::StrContains(events, "\"relay_lost\"")) << events;
  // No node lost, no restart: every rank's success came in round 0, two of them after the move.
  EXPECT_FALSE(absl::StrContains(events, "node_lost")) << events;
  EXPECT_FALSE(absl::StrContains(events, "\"round\":1")) << events;
  // The launcher names the relay that went, and says when its nodes were back. It names the
  // sessions still on the relay when it saw it go: an agent may have moved before that.
  EXPECT_TRUE(absl::StrContains(run->Stdout(), "relay 0 (ipv4:127.0.0.1:")) << run->Stdout();
  EXPECT_TRUE(absl::StrContains(run->Stdout(), "node(s)' sessions: they keep their places")) << run->Stdout();
  EXPECT_TRUE(absl::StrContains(run->Stdout(), "is back, the last after")) << run->Stdout();
  EXPECT_NE(RelayLog(1).find("2 agent session(s)"), std::string::npos) << RelayLog(1);
}

TEST_F(RelayTest, ARelayKilledWithNoGraceToMoveInLosesItsNodesAndTheJobGoesOn) {
  // With no stop grace an agent cannot keep its workers while it moves: it stops them and
  // leaves, and the launcher loses those nodes by the loss rule. Round 1 ends at once.
  auto run = Start(4, {"--relay-fanout", "2", "--nnodes", "2:4", "--max-restarts", "1", "--grace", "0"},
                   {"/bin/sh", "-c", "[ \"$TORCHELASTIC_RESTART_COUNT\" = 0 ] && exec sleep 60; exit 0"});
  ASSERT_TRUE(WaitFor([&] { return absl::StrContains(Events(), "workers_started"); }, seconds(60)))
      << run->Stdout() << run->Stderr();
  std::vector<pid_t> relay0 = FindProcesses("", job_dir_ + "/relays/relay-0.port");
  ASSERT_EQ(relay0.size(), 1u);
  ASSERT_EQ(kill(relay0[0], SIGKILL), 0);
  std::optional<int> code = run->Wait(seconds(90));
  ASSERT_EQ(code, 0) << run->Stdout() << run->Stderr();
  const std::string events = Events();
  EXPECT_TRUE(absl::StrContains(events, "\"relay_lost\"")) << events;
  EXPECT_TRUE(absl::StrContains(events, "node_lost")) << events;
  EXPECT_FALSE(absl::StrContains(events, "session_resumed")) << events;
  EXPECT_TRUE(absl::StrContains(events, "\"round\":1")) << events;
}

TEST_F(RelayTest, RelaysKilledBeforeTheRoundClosesLetTheirAgentsJoinTheLauncher) {
  // Relay 1's agents start 6 s late, so relay 0's two wait in their Joins when it is killed,
  // and relay 1 is gone before its two ask for their preflight.
  const std::string wrapper = tmp_ + "/agent.sh";
  std::ofstream(wrapper) << "#!/bin/sh\n"
                         << "p=$(cat " << job_dir_ << "/relays/relay-1.port)\n"
                         << "case \" $* \" in *\":$p \"*) sleep 6;; esac\n"
                         << "exec " << kBin << "/dlaunch-agent \"$@\"\n";
  ASSERT_EQ(chmod(wrapper.c_str(), 0755), 0);
  std::vector<std::string> argv = {kBin + "/dlaunch", "run", "--nnodes", "4", "--nproc-per-node", "1",
                                   "--job-dir", job_dir_, "--heartbeat", "1", "--grace", "2",
                                   "--relay-fanout", "2", "--", "true"};
  ChildProcess run(argv, tmp_, {"DLAUNCH_AGENT=" + wrapper});
  auto joined = [&] {
    const std::string e = Events();
    int n = 0;
    for (size_t at = e.find("\"node_joined\""); at != std::string::npos; at = e.find("\"node_joined\"", at + 1)) ++n;
    return n;
  };
  ASSERT_TRUE(WaitFor([&] { return joined() >= 2; }, seconds(30))) << run.Stdout() << run.Stderr();
  for (const char* relay : {"relay-0", "relay-1"}) {
    std::vector<pid_t> pids = FindProcesses("", absl::StrCat(job_dir_, "/relays/", relay, ".port"));
    ASSERT_EQ(pids.size(), 1u) << relay;
    ASSERT_EQ(kill(pids[0], SIGKILL), 0);
  }
  // Well under the join timeout (the rendezvous' 300 s + 5 s) that relay 1's agents would wait
  // out if they waited for their relay to come back.
  ASSERT_EQ(run.Wait(seconds(90)), 0) << run.Stdout() << run.Stderr();
  EXPECT_TRUE(absl::StrContains(run.Stdout(), "world size 4")) << run.Stdout();
  std::string logs;
  for (int i = 0; i < 4; ++i) logs += ReadFile(absl::StrCat(job_dir_, "/logs/agent-", i, ".log"));
  EXPECT_TRUE(absl::StrContains(logs, "the join through ")) << logs;
  EXPECT_TRUE(absl::StrContains(logs, "the preflight through ")) << logs;
  EXPECT_TRUE(absl::StrContains(logs, "; going to ")) << logs;
}

TEST_F(RelayTest, ACallToARelayWithoutTheTokenIsRefusedAndJournaled) {
  auto run = Start(2, {"--relay-fanout", "1", "--no-tls"}, {"sleep", "60"});
  const std::string port_file = job_dir_ + "/relays/relay-1.port";
  ASSERT_TRUE(WaitFor([&] { return absl::StrContains(Events(), "workers_started"); }, seconds(60)))
      << run->Stdout() << run->Stderr();
  const std::string port(absl::StripAsciiWhitespace(ReadFile(port_file)));
  auto stub = v1::Control::NewStub(
      grpc::CreateChannel("127.0.0.1:" + port, grpc::InsecureChannelCredentials()));
  grpc::ClientContext ctx;
  ctx.AddMetadata(kTokenMetadataKey, "not-the-token");
  ctx.set_deadline(std::chrono::system_clock::now() + seconds(10));
  v1::PreflightPlan plan;
  grpc::Status st = stub->Preflight(&ctx, v1::PreflightRequest(), &plan);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::UNAUTHENTICATED) << st.error_message();
  EXPECT_TRUE(WaitFor([&] { return absl::StrContains(Events(), "via a relay"); }, seconds(10)))
      << Events();
  run->Signal(SIGINT);
  EXPECT_TRUE(run->Wait(seconds(60)).has_value());
}

TEST_F(RelayTest, ARelayThatDoesNotStartFailsTheJobBeforeAnyAgentStarts) {
  // A relay that exits at once: the launcher says which and why, and starts no agent.
  std::vector<std::string> argv = {kBin + "/dlaunch", "run", "--nnodes", "2", "--job-dir", job_dir_,
                                   "--relay-fanout", "1", "--", "true"};
  ChildProcess run(argv, tmp_, {"DLAUNCH_RELAY=/bin/false"});
  ASSERT_EQ(run.Wait(seconds(60)), 3) << run.Stdout() << run.Stderr();
  // Both exit at once; whichever is seen first is named.
  EXPECT_TRUE(absl::StrContains(run.Stderr(), "relays: relay 0 exited (exit code 1) before it listened") ||
              absl::StrContains(run.Stderr(), "relays: relay 1 exited (exit code 1) before it listened"))
      << run.Stderr();
  EXPECT_FALSE(absl::StrContains(Events(), "node_joined")) << Events();
}

TEST_F(RelayTest, TheLauncherSignsOneCertificatePerRelayAndNoMore) {
  auto run = Start(2, {"--relay-fanout", "1"}, {"sleep", "60"});
  ASSERT_TRUE(WaitFor([&] { return absl::StrContains(Events(), "workers_started"); }, seconds(60)))
      << run->Stdout() << run->Stderr();
  // Both relays have theirs; a third caller with the token, on this host, gets none.
  const std::string info = ReadFile(job_dir_ + "/launcher.json");
  const size_t at = info.find("\"address\":\"") + 11;
  const std::string address = info.substr(at, info.find('"', at) - at);
  const std::string port = address.substr(address.rfind(':') + 1);
  absl::StatusOr<JobCredentials> creds = ReadJobCredentials(job_dir_ + "/token");
  ASSERT_TRUE(creds.ok()) << creds.status();
  auto stub = v1::Control::NewStub(ControlChannel("127.0.0.1:" + port, *creds));
  absl::StatusOr<RelayKey> key = MakeRelayKey();
  ASSERT_TRUE(key.ok());
  grpc::ClientContext ctx;
  ctx.AddMetadata(kTokenMetadataKey, creds->token);
  ctx.set_deadline(std::chrono::system_clock::now() + seconds(10));
  v1::CertificateRequest req;
  req.set_public_key_pem(key->public_key_pem);
  v1::CertificateIssued issued;
  grpc::Status st = stub->IssueCertificate(&ctx, req, &issued);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::PERMISSION_DENIED) << st.error_message();
  EXPECT_TRUE(issued.certificate_pem().empty());
  EXPECT_TRUE(WaitFor([&] { return absl::StrContains(Events(), "IssueCertificate"); }, seconds(10)))
      << Events();
  run->Signal(SIGINT);
  EXPECT_TRUE(run->Wait(seconds(60)).has_value());
}

}  // namespace
}  // namespace dlaunch::testing
