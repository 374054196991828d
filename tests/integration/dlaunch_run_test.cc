// `dlaunch run` end to end: real launcher, real agents, real worker processes on loopback.
#include <signal.h>
#include <sys/stat.h>

#include <cstring>
#include <iostream>
#include <map>
#include <set>
#include <sstream>

#include <google/protobuf/util/json_util.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "dlaunch/control.grpc.pb.h"
#include "dlaunch/goodput.pb.h"
#include "proto/control_credentials.h"
#include "launcher/jobdir/journal.h"
#include "tests/integration/test_process.h"

namespace dlaunch::testing {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

const std::string kBin = DLAUNCH_BIN_DIR;

std::map<std::string, std::string> ParseEnvFile(const std::string& text) {
  std::map<std::string, std::string> env;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    auto eq = line.find('=');
    if (eq != absl::string_view::npos) env[std::string(line.substr(0, eq))] = std::string(line.substr(eq + 1));
  }
  return env;
}

class RunTest : public ::testing::Test {
 protected:
  void SetUp() override {
    tmp_ = MakeTempDir();
    job_id_ = tmp_.substr(tmp_.rfind('/') + 1);
    job_dir_ = tmp_ + "/" + job_id_;
  }

  // Heartbeats every second: an agent or the launcher counts as lost after 3 s of silence, which
  // a loaded 2-core machine does not reach by accident (0.25 s gave 0.75 s).
  static constexpr const char* kHeartbeat = "1";

  // dlaunch run with a short grace, for a job of the probe program.
  std::unique_ptr<ChildProcess> Start(int nodes, int nproc, const std::vector<std::string>& probe_args,
                                      const std::vector<std::string>& extra_flags = {},
                                      const std::vector<std::string>& env = {}) {
    std::vector<std::string> argv = {kBin + "/dlaunch", "run", "--nnodes", std::to_string(nodes),
                                     "--nproc-per-node", std::to_string(nproc), "--job-dir", job_dir_,
                                     "--heartbeat", kHeartbeat, "--grace", "2"};
    argv.insert(argv.end(), extra_flags.begin(), extra_flags.end());
    argv.push_back("--");
    argv.push_back(kBin + "/dlaunch-test-probe");
    argv.insert(argv.end(), probe_args.begin(), probe_args.end());
    return std::make_unique<ChildProcess>(argv, tmp_, env);
  }

  // What is left of the job, described for a failure message.
  std::string Leftovers() const {
    std::string out;
    for (pid_t p : JobProcesses()) {
      std::string cmd = ReadFile(absl::StrCat("/proc/", p, "/cmdline"));
      for (auto& c : cmd) if (c == '\0') c = ' ';
      out += absl::StrCat(p, ": ", ReadFile(absl::StrCat("/proc/", p, "/stat")).substr(0, 60), " | ", cmd, "\n");
    }
    return out;
  }

  std::vector<pid_t> JobProcesses() const {
    // Workers carry the job id in their environment; agents carry the job dir on their command line.
    return FindProcesses("DLAUNCH_JOB_ID=" + job_id_, job_dir_ + "/token");
  }

  bool WorkersStarted() const {
    return ReadFile(job_dir_ + "/events.jsonl").find("\"workers_started\"") != std::string::npos;
  }

  std::string tmp_, job_id_, job_dir_;
};

TEST_F(RunTest, EveryRankGetsTheTorchrunEnvironment) {
  std::string env_dir = tmp_ + "/env";
  mkdir(env_dir.c_str(), 0755);
  auto run = Start(3, 2, {"--env-dir", env_dir, "--barrier"}, {},
                   {"DLAUNCH_IT_PASSTHROUGH=kept", "OMP_NUM_THREADS="});
  auto code = run->Wait(seconds(60));
  ASSERT_TRUE(code.has_value()) << "dlaunch run did not finish";
  ASSERT_EQ(*code, 0) << run->Stdout() << run->Stderr();
  EXPECT_NE(run->Stdout().find("barrier: rank 0 saw 5 of 5 peers"), std::string::npos) << run->Stdout();

  std::set<std::string> master_ports;
  for (int rank = 0; rank < 6; ++rank) {
    SCOPED_TRACE(absl::StrCat("rank ", rank));
    auto env = ParseEnvFile(ReadFile(absl::StrCat(env_dir, "/rank-", rank, ".env")));
    ASSERT_FALSE(env.empty());
    EXPECT_EQ(env["RANK"], std::to_string(rank));
    EXPECT_EQ(env["LOCAL_RANK"], std::to_string(rank % 2));
    EXPECT_EQ(env["WORLD_SIZE"], "6");
    EXPECT_EQ(env["LOCAL_WORLD_SIZE"], "2");
    EXPECT_EQ(env["GROUP_RANK"], std::to_string(rank / 2));
    EXPECT_EQ(env["GROUP_WORLD_SIZE"], "3");
    EXPECT_EQ(env["ROLE_RANK"], std::to_string(rank));
    EXPECT_EQ(env["ROLE_NAME"], "default");
    EXPECT_EQ(env["ROLE_WORLD_SIZE"], "6");
    EXPECT_EQ(env["MASTER_ADDR"], "127.0.0.1");
    master_ports.insert(env["MASTER_PORT"]);
    EXPECT_GT(std::stoi(env["MASTER_PORT"]), 0);
    EXPECT_EQ(env["TORCHELASTIC_RESTART_COUNT"], "0");
    EXPECT_EQ(env["TORCHELASTIC_MAX_RESTARTS"], "0");
    EXPECT_EQ(env["TORCHELASTIC_RUN_ID"], job_id_);
    EXPECT_EQ(env["TORCHELASTIC_ERROR_FILE"].rfind(job_dir_, 0), 0u) << env["TORCHELASTIC_ERROR_FILE"];
    EXPECT_EQ(env["OMP_NUM_THREADS"], "1");  // set but empty in the launcher's env -> the default
    EXPECT_EQ(env["TORCH_NCCL_ASYNC_ERROR_HANDLING"], "1");
    EXPECT_EQ(env["DLAUNCH_JOB_ID"], job_id_);
    EXPECT_EQ(env["DLAUNCH_JOB_DIR"], job_dir_);
    EXPECT_EQ(env["REPORT_SOCKET_IS_SOCKET"], "1") << env["DLAUNCH_REPORT_SOCKET"];
    EXPECT_EQ(env["DLAUNCH_IT_PASSTHROUGH"], "kept");
    EXPECT_EQ(env.count("DLAUNCH_TOKEN"), 0u);
    EXPECT_TRUE(env.count("DLAUNCH_CPUS"));
    EXPECT_TRUE(env.count("DLAUNCH_GPU"));
    // Each rank's output also lands in its own log.
    EXPECT_NE(ReadFile(absl::StrCat(job_dir_, "/logs/rank-", rank, ".log")).find(absl::StrCat("probe rank ", rank, " of 6")),
              std::string::npos);
  }
  EXPECT_EQ(master_ports.size(), 1u) << "every rank must get the same MASTER_PORT";
  EXPECT_NE(ReadFile(job_dir_ + "/summary.json").find("\"result\":\"succeeded\""), std::string::npos);
  EXPECT_TRUE(JobProcesses().empty()) << Leftovers();
}

TEST_F(RunTest, FailingRankStopsEveryNodeAndIsNamed) {
  auto run = Start(3, 2, {"--fail-rank", "3", "--exit-code", "3", "--sleep", "60"});
  auto code = run->Wait(seconds(60));
  ASSERT_TRUE(code.has_value());
  EXPECT_EQ(*code, 1);
  std::string err = run->Stderr();
  EXPECT_NE(err.find("error: worker crash: rank 3 (local 1, node 1, host "), std::string::npos) << err;
  EXPECT_NE(err.find("exited with code 3"), std::string::npos) << err;
  EXPECT_NE(err.find("failing on purpose with exit code 3"), std::string::npos) << "last log lines: " << err;
  EXPECT_NE(ReadFile(job_dir_ + "/events.jsonl").find("\"worker_failed\""), std::string::npos);
  EXPECT_TRUE(JobProcesses().empty()) << Leftovers();
}

// Seconds from the job's start to an event of events.jsonl, as its "detected_at_s" says.
double DetectedAt(const std::string& events, const std::string& event) {
  size_t at = events.find("\"" + event + "\":{");
  if (at == std::string::npos) return -1;
  size_t key = events.find("\"detected_at_s\":", at);
  if (key == std::string::npos) return -1;
  return std::atof(events.c_str() + key + std::strlen("\"detected_at_s\":"));
}

TEST_F(RunTest, HangAtExitIsDetectedAtTheExitTimeoutAndNamesTheHungRank) {
  // Rank 1 finishes at once; rank 0 sleeps on, as Gloo teardown can at interpreter exit.
  auto started = std::chrono::steady_clock::now();
  auto run = Start(2, 1, {"--barrier", "--fail-rank", "1", "--exit-code", "0", "--sleep", "120"},
                   {"--exit-timeout", "2"});
  auto code = run->Wait(seconds(20));
  auto took = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  ASSERT_TRUE(code.has_value()) << run->Stderr();
  EXPECT_EQ(*code, 1);
  std::string err = run->Stderr();
  EXPECT_NE(err.find("error: hang at exit: rank 0 (local 0, node 0, host "), std::string::npos) << err;
  std::string summary = ReadFile(job_dir_ + "/summary.json");
  EXPECT_NE(summary.find("\"root_cause\":{\"failure_class\":\"hang at exit\",\"rank\":0,\"local_rank\":0,"
                         "\"node_id\":0,\"node_rank\":0"),
            std::string::npos) << summary;
  EXPECT_NE(summary.find("\"ranks_succeeded\":1"), std::string::npos) << summary;
  std::string stacks = ReadFile(job_dir_ + "/stacks/rank-0.txt");
  EXPECT_NE(stacks.find("Thread 1"), std::string::npos) << "gdb's backtrace of the hung rank:\n" << stacks;
  std::string events = ReadFile(job_dir_ + "/events.jsonl");
  double detected = DetectedAt(events, "hang_detected");
  EXPECT_GT(detected, 2) << events;
  std::cout << "hang at exit detected at " << detected << " s, job ended after " << took << " s\n";
  EXPECT_TRUE(WaitFor([&] { return JobProcesses().empty(); }, seconds(2))) << Leftovers();
}

TEST_F(RunTest, KilledRankIsTheRootCauseNotThePeerThatFailedAfterIt) {
  // Rank 1 (node 1) dies by SIGKILL; rank 0 (node 0) then fails as Gloo does when its peer is
  // gone. Whichever event reaches the launcher first, the killed rank is the cause.
  auto run = Start(2, 1, {"--barrier", "--kill-rank", "1", "--peer-fail", "--sleep", "60"});
  auto code = run->Wait(seconds(30));
  ASSERT_TRUE(code.has_value()) << run->Stderr();
  EXPECT_EQ(*code, 1);
  std::string err = run->Stderr();
  EXPECT_NE(err.find("error: worker crash: rank 1 (local 0, node 1, host "), std::string::npos) << err;
  EXPECT_NE(err.find("killed by signal 9"), std::string::npos) << err;
  EXPECT_EQ(err.find("error: worker crash: rank 0"), std::string::npos) << "a consequence named as the cause: " << err;
  std::string summary = ReadFile(job_dir_ + "/summary.json");
  EXPECT_NE(summary.find("\"root_cause\":{\"failure_class\":\"worker crash\",\"rank\":1,\"local_rank\":0,"
                         "\"node_id\":1,\"node_rank\":1"),
            std::string::npos) << summary;
  EXPECT_TRUE(WaitFor([&] { return JobProcesses().empty(); }, seconds(2))) << Leftovers();
}

TEST_F(RunTest, StalledRankIsNamedAndStopped) {
  // Both ranks report every 0.2 s; rank 1 stops itself (SIGSTOP) after 3 reports.
  auto started = std::chrono::steady_clock::now();
  auto run = Start(1, 2, {"--report", "--report-every", "0.2", "--stop-rank", "1", "--sleep", "120"},
                   {"--stall-timeout", "3"});
  auto code = run->Wait(seconds(30));
  auto took = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  ASSERT_TRUE(code.has_value()) << run->Stderr();
  EXPECT_EQ(*code, 1);
  std::string err = run->Stderr();
  EXPECT_NE(err.find("error: stall: rank 1 (local 1, node 0, host "), std::string::npos) << err;
  std::string summary = ReadFile(job_dir_ + "/summary.json");
  EXPECT_NE(summary.find("\"root_cause\":{\"failure_class\":\"stall\",\"rank\":1"), std::string::npos) << summary;
  std::string stacks = ReadFile(job_dir_ + "/stacks/rank-1.txt");
  EXPECT_NE(stacks.find("Thread 1"), std::string::npos) << "gdb's backtrace of the stalled rank:\n" << stacks;
  std::cout << "stall detected at " << DetectedAt(ReadFile(job_dir_ + "/events.jsonl"), "hang_detected")
            << " s, job ended after " << took << " s\n";
  EXPECT_TRUE(WaitFor([&] { return JobProcesses().empty(); }, seconds(2))) << Leftovers();
}

TEST_F(RunTest, CtrlCStopsEverythingAndExits130) {
  auto run = Start(2, 2, {"--sleep", "120"});
  ASSERT_TRUE(WaitFor([&] { return WorkersStarted(); }, seconds(30))) << run->Stderr();
  EXPECT_EQ(JobProcesses().size(), 6u) << "2 agents and 4 workers while running";
  run->Signal(SIGINT);
  auto code = run->Wait(seconds(30));
  ASSERT_TRUE(code.has_value());
  EXPECT_EQ(*code, 130) << run->Stderr();
  EXPECT_TRUE(JobProcesses().empty()) << Leftovers();
}

TEST_F(RunTest, WorkerIgnoringSigtermIsKilledAfterTheGrace) {
  // A shell that ignores SIGTERM must be killed by its agent once the grace has passed. The
  // launcher would kill the agent (and the kernel the shell with it) only at its own deadline,
  // grace + 3 heartbeats + 5 s = 9 s; the agent's escalation ends the job well before that, and
  // only the agent, alive to see it, records the rank ending by SIGKILL.
  constexpr auto kGrace = seconds(1);
  std::vector<std::string> argv = {kBin + "/dlaunch", "run", "--nnodes", "1", "--nproc-per-node", "2",
                                   "--job-dir", job_dir_, "--heartbeat", kHeartbeat, "--grace", "1",
                                   "--", "/bin/sh", "-c",
                                   "trap '' TERM; echo ignoring-term; while :; do sleep 0.1; done"};
  ChildProcess run(argv, tmp_);
  // Started is not enough: a Ctrl-C before the shell has run its `trap` ends it by SIGTERM.
  auto ignoring = [&](int rank) {
    return ReadFile(absl::StrCat(job_dir_, "/logs/rank-", rank, ".log")).find("ignoring-term") !=
           std::string::npos;
  };
  ASSERT_TRUE(WaitFor([&] { return ignoring(0) && ignoring(1); }, seconds(30)));
  auto interrupted = std::chrono::steady_clock::now();
  run.Signal(SIGINT);
  auto code = run.Wait(seconds(30));
  auto took = std::chrono::steady_clock::now() - interrupted;
  ASSERT_TRUE(code.has_value());
  EXPECT_EQ(*code, 130);
  EXPECT_LT(std::chrono::duration_cast<milliseconds>(took).count(),
            std::chrono::duration_cast<milliseconds>(kGrace + seconds(4)).count())
      << "ms from Ctrl-C to the end: the launcher's deadline, not the agent, ended the job";
  std::string agent_log = ReadFile(job_dir_ + "/logs/agent-0.log");
  for (int rank = 0; rank < 2; ++rank) {
    EXPECT_NE(agent_log.find(absl::StrCat("rank ", rank, " pid ")), std::string::npos) << agent_log;
  }
  size_t killed = 0;
  for (size_t pos = 0; (pos = agent_log.find("ended: signal 9 (Killed) (stopped)", pos)) != std::string::npos; ++pos) {
    ++killed;
  }
  EXPECT_EQ(killed, 2u) << "each rank must end by the agent's SIGKILL:\n" << agent_log;
  EXPECT_TRUE(WaitFor([&] { return JobProcesses().empty(); }, seconds(2)));
}

TEST_F(RunTest, KilledAgentIsNoticedAndNothingIsLeft) {
  auto run = Start(2, 2, {"--sleep", "120"});
  ASSERT_TRUE(WaitFor([&] { return WorkersStarted(); }, seconds(30))) << run->Stderr();
  auto agents = FindProcesses("", job_dir_ + "/token");
  ASSERT_EQ(agents.size(), 2u);
  kill(agents[0], SIGKILL);
  auto code = run->Wait(seconds(30));
  ASSERT_TRUE(code.has_value());
  EXPECT_EQ(*code, 1);
  EXPECT_NE(run->Stderr().find("lost"), std::string::npos) << run->Stderr();
  // The killed agent's workers get SIGKILL from the kernel (PR_SET_PDEATHSIG) when it dies,
  // asynchronously to the launcher's exit; under load their exit can trail it by a moment.
  EXPECT_TRUE(WaitFor([&] { return JobProcesses().empty(); }, seconds(5))) << Leftovers();
}

TEST_F(RunTest, KilledLauncherTakesAgentsAndWorkersWithIt) {
  auto run = Start(2, 2, {"--sleep", "120"});
  ASSERT_TRUE(WaitFor([&] { return WorkersStarted(); }, seconds(30))) << run->Stderr();
  ASSERT_EQ(JobProcesses().size(), 6u);
  run->Signal(SIGKILL);
  auto code = run->Wait(seconds(10));
  ASSERT_TRUE(code.has_value());
  // Local agents die with the launcher (PR_SET_PDEATHSIG), their workers with them; remote
  // agents see the session end. Both are asynchronous to the launcher's death.
  EXPECT_TRUE(WaitFor([&] { return JobProcesses().empty(); }, seconds(10))) << Leftovers();
}

TEST_F(RunTest, TokenStaysOffCommandLinesAndWrongTokenIsRefused) {
  auto run = Start(1, 1, {"--sleep", "3"});
  ASSERT_TRUE(WaitFor([&] { return WorkersStarted(); }, seconds(30))) << run->Stderr();
  std::string token = ReadFile(job_dir_ + "/token");
  token = token.substr(0, token.find('\n'));
  ASSERT_EQ(token.size(), 32u);
  struct stat st;
  ASSERT_EQ(stat((job_dir_ + "/token").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  EXPECT_TRUE(FindProcesses("", token).empty()) << "the token is visible on a command line";

  std::string launcher = ReadFile(job_dir_ + "/launcher.json");
  auto pos = launcher.find("\"address\":\"");
  ASSERT_NE(pos, std::string::npos) << launcher;
  std::string address = launcher.substr(pos + 11, launcher.find('"', pos + 11) - pos - 11);
  // A stranger over plain TCP gets no answer at all from the TLS endpoint; over TLS pinned to
  // the job's certificate, without the token, only UNAUTHENTICATED and nothing of the job.
  auto creds = ReadJobCredentials(job_dir_ + "/token");
  ASSERT_TRUE(creds.ok()) << creds.status();
  ASSERT_FALSE(creds->fingerprint.empty()) << "TLS is on by default";
  {
    auto plain = v1::Control::NewStub(grpc::CreateChannel(address, grpc::InsecureChannelCredentials()));
    grpc::ClientContext ctx;
    ctx.AddMetadata("x-dlaunch-token", token);
    ctx.set_deadline(std::chrono::system_clock::now() + seconds(5));
    v1::PreflightPlan plan;
    grpc::Status s = plain->Preflight(&ctx, v1::PreflightRequest(), &plan);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::UNAVAILABLE) << s.error_message();
  }
  auto stub = v1::Control::NewStub(ControlChannel(address, *creds));
  for (const std::string& bad : {std::string(), std::string("0123456789abcdef0123456789abcdef")}) {
    grpc::ClientContext ctx;
    if (!bad.empty()) ctx.AddMetadata("x-dlaunch-token", bad);
    ctx.set_deadline(std::chrono::system_clock::now() + seconds(5));
    v1::JoinRequest req;
    req.set_agent_id("intruder");
    req.set_host("intruder");
    req.set_slots(1);
    v1::JoinResponse resp;
    grpc::Status s = stub->Join(&ctx, req, &resp);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::UNAUTHENTICATED) << s.error_message();
    EXPECT_EQ(s.error_message(), "missing or wrong job token");
  }
  auto code = run->Wait(seconds(30));
  ASSERT_TRUE(code.has_value());
  EXPECT_EQ(*code, 0) << "the refused calls must not affect the job: " << run->Stderr();
  EXPECT_NE(run->Stderr().find("refused Join"), std::string::npos);
  // The plain-TCP stranger is counted, not printed line by line into the job's terminal.
  EXPECT_EQ(run->Stderr().find("Handshake failed"), std::string::npos) << run->Stderr();
  EXPECT_NE(run->Stderr().find("failed the TLS handshake"), std::string::npos) << run->Stderr();
  std::string events = ReadFile(job_dir_ + "/events.jsonl");
  EXPECT_NE(events.find("\"call_refused\""), std::string::npos);
  EXPECT_EQ(events.find("intruder"), std::string::npos) << "a refused join must not reach the rendezvous";
}

TEST_F(RunTest, WorkerReportsReachTheLauncher) {
  auto run = Start(2, 1, {"--report"});
  auto code = run->Wait(seconds(60));
  ASSERT_TRUE(code.has_value());
  ASSERT_EQ(*code, 0) << run->Stderr();
  std::string metrics = ReadFile(job_dir_ + "/metrics.jsonl");
  EXPECT_NE(metrics.find("\"rank\":0"), std::string::npos) << metrics;
  EXPECT_NE(metrics.find("\"rank\":1"), std::string::npos) << metrics;
  EXPECT_NE(metrics.find("\"samples\":\"64\""), std::string::npos) << metrics;
  EXPECT_NE(ReadFile(job_dir_ + "/summary.json").find("\"samples\":\"128\""), std::string::npos);
  EXPECT_NE(run->Stdout().find("throughput:"), std::string::npos) << run->Stdout();
}

// The dlaunch Python package (python/) in a plain script on 2 nodes x 2 ranks: its reports and
// its checkpoint's step reach metrics.jsonl, the summary counts their samples, and the goodput
// account has measured productive time. Its phases, the checkpoint far shorter than a
// heartbeat among them, reach the journal with their lengths, and the account splits the
// checkpoint and the start-up by them.
TEST_F(RunTest, ThePythonPackagesReportsReachTheJournalAndTheAccount) {
  const std::string src = DLAUNCH_SOURCE_DIR;
  ChildProcess run({kBin + "/dlaunch", "run", "--nnodes", "2", "--nproc-per-node", "2",
                    "--job-dir", job_dir_, "--heartbeat", kHeartbeat, "--grace", "2", "--no-preflight",
                    "--", "/usr/bin/python3", src + "/tests/integration/package_reports.py"},
                   tmp_, {"PYTHONPATH=" + src + "/python/src"});
  auto code = run.Wait(seconds(120));
  ASSERT_TRUE(code.has_value());
  ASSERT_EQ(*code, 0) << run.Stderr();
  absl::StatusOr<MetricJournal> metrics = ReadMetricJournal(job_dir_);
  ASSERT_TRUE(metrics.ok()) << metrics.status();
  std::map<int, int64_t> last_step, checkpoint_step, total_steps;
  for (const v1::MetricLine& m : metrics->metrics) {
    const v1::WorkerReport& r = m.report();
    last_step[r.rank()] = std::max<int64_t>(last_step[r.rank()], r.step());
    checkpoint_step[r.rank()] = std::max<int64_t>(checkpoint_step[r.rank()], r.checkpoint_step());
    total_steps[r.rank()] = std::max<int64_t>(total_steps[r.rank()], r.total_steps());
  }
  const std::map<int, int64_t> every_rank = {{0, 20}, {1, 20}, {2, 20}, {3, 20}};
  EXPECT_EQ(last_step, every_rank);
  EXPECT_EQ(total_steps, every_rank);
  EXPECT_EQ(checkpoint_step, (std::map<int, int64_t>{{0, 10}, {1, 10}, {2, 10}, {3, 10}}));
  const std::string summary = ReadFile(job_dir_ + "/summary.json");
  EXPECT_TRUE(absl::StrContains(summary, "\"samples\":\"2560\"")) << summary;  // 4 ranks x 20 x 32
  EXPECT_TRUE(absl::StrContains(summary, "\"goodput\":{")) << summary;
  EXPECT_TRUE(absl::StrContains(run.Stderr() + run.Stdout(), "[dlaunch] goodput ")) << run.Stderr();
  EXPECT_FALSE(absl::StrContains(run.Stderr() + run.Stdout(), "goodput not known")) << run.Stderr();

  // Every rank's phases, each begun and ended once, with the lengths it slept at least.
  std::map<int, std::map<std::string, double>> ended;
  std::map<int, int> begun;
  for (const v1::MetricLine& m : metrics->metrics) {
    for (const v1::PhaseEvent& e : m.report().phase_log().events()) {
      if (e.end()) {
        ended[m.report().rank()][e.name()] += e.seconds();
      } else {
        ++begun[m.report().rank()];
      }
    }
  }
  EXPECT_EQ(begun, (std::map<int, int>{{0, 2}, {1, 2}, {2, 2}, {3, 2}}));
  ASSERT_EQ(ended.size(), 4u);
  for (const auto& [rank, phases] : ended) {
    ASSERT_EQ(phases.size(), 2u) << "rank " << rank;
    EXPECT_GE(phases.at("setup"), 0.3) << "rank " << rank;
    EXPECT_GE(phases.at("checkpoint"), 0.2) << "rank " << rank;
  }
  const size_t at = summary.find("\"goodput\":");
  ASSERT_NE(at, std::string::npos);
  v1::GoodputAccount account;
  google::protobuf::util::JsonParseOptions options;
  options.ignore_unknown_fields = true;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(
                  summary.substr(at + 10, summary.rfind('}') - at - 10), &account, options)
                  .ok());
  EXPECT_EQ(account.split().checkpoint().basis(), v1::MEASURED);
  EXPECT_GE(account.split().checkpoint().seconds(), 0.2);
  EXPECT_EQ(account.split().evaluation().basis(), v1::NOT_KNOWN);  // the script says none
  ASSERT_EQ(account.rounds_size(), 1);
  std::map<std::string, int> startup_ranks;
  for (const v1::GoodputPhase& p : account.rounds(0).startup_phases()) {
    startup_ranks[p.name()] = p.ranks();
    if (p.name() == "setup") {
      EXPECT_GE(p.seconds(), 0.3);
    }
  }
  EXPECT_EQ(startup_ranks.at("setup"), 4) << summary;
  EXPECT_EQ(startup_ranks.count("checkpoint"), 0u) << "a checkpoint between steps is not start-up";
  EXPECT_TRUE(absl::StrContains(run.Stderr() + run.Stdout(), "round 0 start-up: launch "))
      << run.Stderr();
}

TEST_F(RunTest, HeartbeatsCarryEachNodesHealthIntoTheJournalAndTheTrace) {
  auto run = Start(2, 1, {"--report", "--sleep", "1"});
  auto code = run->Wait(seconds(60));
  ASSERT_TRUE(code.has_value());
  ASSERT_EQ(*code, 0) << run->Stderr();
  absl::StatusOr<MetricJournal> metrics = ReadMetricJournal(job_dir_);
  ASSERT_TRUE(metrics.ok()) << metrics.status();
  std::set<int> nodes;
  for (const v1::MetricLine& m : metrics->hosts) {
    nodes.insert(m.node_id());
    EXPECT_GT(m.host().mem_total_kb(), 0);
    EXPECT_GT(m.host().cpus(), 0);
    ASSERT_GE(m.host().disks_size(), 1);
    // The job directory, as the launcher resolved it.
    EXPECT_TRUE(absl::EndsWith(m.host().disks(0).path(), job_dir_.substr(job_dir_.rfind('/'))))
        << m.host().disks(0).path();
  }
  EXPECT_EQ(nodes, (std::set<int>{0, 1}));
  EXPECT_EQ(metrics->metrics.size(), 2u);  // the two reports, apart from the host lines
  EXPECT_NE(ReadFile(job_dir_ + "/trace.json").find("memory available (GiB)"), std::string::npos);
}

TEST_F(RunTest, JoinTimeoutNamesTheMissingNodes) {
  // The "node launcher" starts a single agent although two nodes are expected.
  auto run = Start(2, 1, {"--sleep", "1"},
                   {"--launcher", "mpiexec", "--launcher-cmd", "/bin/sh -c 'exec \"$0\" \"$@\"'",
                    "--join-timeout", "2"});
  auto code = run->Wait(seconds(60));
  ASSERT_TRUE(code.has_value());
  EXPECT_EQ(*code, 3) << run->Stderr();
  EXPECT_NE(run->Stderr().find("rendezvous timed out"), std::string::npos) << run->Stderr();
  EXPECT_NE(run->Stderr().find("1 of 2"), std::string::npos) << run->Stderr();
  EXPECT_TRUE(JobProcesses().empty()) << Leftovers();
}

TEST_F(RunTest, MissingWorkerProgramIsNamedByThePreflight) {
  ChildProcess run({kBin + "/dlaunch", "run", "--nnodes", "2", "--nproc-per-node", "2", "--job-dir",
                    job_dir_, "--heartbeat", kHeartbeat, "--", "/nonexistent/train"},
                   tmp_);
  auto code = run.Wait(seconds(60));
  ASSERT_TRUE(code.has_value());
  EXPECT_EQ(*code, 3);
  EXPECT_TRUE(absl::StrContains(run.Stderr(), "command: /nonexistent/train: not found or not executable"))
      << run.Stderr();
  EXPECT_TRUE(JobProcesses().empty()) << Leftovers();
}

TEST_F(RunTest, MissingWorkerProgramIsNamed) {
  ChildProcess run({kBin + "/dlaunch", "run", "--nnodes", "2", "--nproc-per-node", "2", "--job-dir",
                    job_dir_, "--heartbeat", kHeartbeat, "--no-preflight", "--", "/nonexistent/train"},
                   tmp_);
  auto code = run.Wait(seconds(60));
  ASSERT_TRUE(code.has_value());
  EXPECT_EQ(*code, 1);
  EXPECT_NE(run.Stderr().find("cannot execute '/nonexistent/train': No such file or directory"),
            std::string::npos)
      << run.Stderr();
  EXPECT_TRUE(JobProcesses().empty()) << Leftovers();
}

// Debian's python3-torch is importable by /usr/bin/python3 (the python3 first on PATH may be
// another interpreter); false when `module` is not.
bool DebianPythonImports(const std::string& module, const std::string& dir) {
  ChildProcess probe({"/usr/bin/python3", "-c", "import " + module}, dir);
  auto importable = probe.Wait(seconds(120));
  return importable.has_value() && *importable == 0;
}

TEST_F(RunTest, UnmodifiedPyTorchScriptRunsUnderDlaunch) {
  const std::string python = "/usr/bin/python3";
  if (!DebianPythonImports("torch.distributed", tmp_)) {
    GTEST_SKIP() << "python3-torch is not installed (scripts/install-deps.sh test installs it)";
  }
  ChildProcess run({kBin + "/dlaunch", "run", "--nnodes", "2", "--nproc-per-node", "2", "--job-dir",
                    job_dir_, "--heartbeat", kHeartbeat, "--", python,
                    std::string(DLAUNCH_SOURCE_DIR) + "/tests/integration/torch_allreduce.py"},
                   tmp_);
  auto code = run.Wait(seconds(240));
  ASSERT_TRUE(code.has_value()) << "dlaunch run did not finish";
  ASSERT_EQ(*code, 0) << run.Stdout() << run.Stderr();
  for (int rank = 0; rank < 4; ++rank) {
    EXPECT_NE(run.Stdout().find(absl::StrCat("rank ", rank, " of 4: all_reduce 6, DDP gradients agree")),
              std::string::npos)
        << run.Stdout();
  }
  EXPECT_TRUE(JobProcesses().empty()) << Leftovers();
}

// torch's @record writes the failing rank's TORCHELASTIC_ERROR_FILE; the root cause names the
// exception and the frame that raised it, not only the exit code.
TEST_F(RunTest, ARecordedPythonExceptionIsNamedInTheRootCause) {
  const std::string python = "/usr/bin/python3";
  if (!DebianPythonImports("torch.distributed.elastic.multiprocessing.errors", tmp_)) {
    GTEST_SKIP() << "python3-torch is not installed (scripts/install-deps.sh test installs it)";
  }
  const std::string script = std::string(DLAUNCH_SOURCE_DIR) + "/tests/integration/torch_record_fail.py";
  ChildProcess run({kBin + "/dlaunch", "run", "--nnodes", "2", "--job-dir", job_dir_, "--heartbeat",
                    kHeartbeat, "--", python, script},
                   tmp_);
  auto code = run.Wait(seconds(240));
  ASSERT_TRUE(code.has_value()) << "dlaunch run did not finish";
  EXPECT_EQ(*code, 1) << run.Stdout() << run.Stderr();
  const std::string raised =
      absl::StrCat("exited with code 1: RuntimeError: batch 3 is corrupt (at ", script, ":11, in load_batch)");
  EXPECT_NE(run.Stderr().find("root cause: worker crash: rank 1 "), std::string::npos) << run.Stderr();
  EXPECT_NE(run.Stderr().find(raised), std::string::npos) << run.Stderr();
  EXPECT_NE(ReadFile(job_dir_ + "/summary.json").find("RuntimeError: batch 3 is corrupt (at "),
            std::string::npos)
      << ReadFile(job_dir_ + "/summary.json");
  EXPECT_TRUE(JobProcesses().empty()) << Leftovers();
}

TEST_F(RunTest, BadUsageExitsTwo) {
  ChildProcess run({kBin + "/dlaunch", "run", "--nnodes", "zero", "--", "/bin/true"}, tmp_);
  auto code = run.Wait(seconds(30));
  ASSERT_TRUE(code.has_value());
  EXPECT_EQ(*code, 2);
  EXPECT_NE(run.Stderr().find("--nnodes"), std::string::npos) << run.Stderr();
}

}  // namespace
}  // namespace dlaunch::testing
