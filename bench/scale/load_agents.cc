// A load generator for the launcher's control plane: N simulated agents in one process, against a
// real `dlaunch run` over loopback TCP. It is started as the node launcher's one process
// (`--launcher mpiexec --launcher-cmd "load_agents --agents N ... "`) and reads --control and
// --token-file from the agent argv that follows. Each simulated agent joins as host h<i>, opens
// its session, reports STARTED for its ranks, then a heartbeat with one STEP report per rank every
// heartbeat_ms; it answers stops and StartRound as agent/core/agent_state.cc does. One agent (the last)
// cancels its session at --lose-at-s (a lost node); at --run-s every rank succeeds. There are no
// worker processes: what is measured is the launcher, not the agents.
//
//   load_agents --agents N [--slots 4] [--run-s 20] [--lose-at-s 8] [--channels 8]
//               [--log-lines-per-s 0] [--silent-connections 0] [--slow-readers 0]
//               [--no-batch] [--start-threads 4] [--summary FILE] [--] <agent argv>
//
// Messages queued together go up in one AgentBatch, as a real agent sends them (proto/
// agent_batch.h); --no-batch sends each alone, as agents before batching did.
//
// A restart's StartRound comes ahead of its start (start_after_ms), so every agent starts its
// ranks at the same moment, each on its own node. The held starts due at one moment, and every
// rank's success at --run-s, are shared out over --start-threads threads (1: the ticker alone,
// one agent after another, about 40 us each, which spreads 10,000 agents' STARTED over 0.4 s
// that real agents do not take, and holds heartbeats back meanwhile).
//
// Overload: --silent-connections K opens K TCP connections to the launcher first that never send
// a byte (the summary says how many the launcher closed); --slow-readers K makes the first K
// agents read one command from the launcher every 2 s.
//
// With relays the agent argv carries --control-fallback (the launcher itself): a simulated agent
// whose session breaks (its relay killed) opens a session there as the real agent moves its own
// (docs/relays.md), without numbering or re-sending messages; the summary counts the moves.
//
// --lose-at-s and --run-s count from the first JoinResponse (round 0 closed); --lose-at-s 0
// loses no node. A round still starting at --run-s (a slow restart) succeeds as soon as it runs. Prints one line at the end (also written to --summary FILE).
#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <fstream>
#include <functional>
#include <iostream>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <netdb.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <grpcpp/grpcpp.h>

#include "absl/strings/str_split.h"
#include "agent/agent_flags.h"
#include "proto/control_credentials.h"
#include "bench/scale/sim_agent.h"
#include "dlaunch/control.grpc.pb.h"

namespace dlaunch::load {
namespace {

// fn(0) .. fn(n - 1), shared out over `threads` threads when there are many: what real agents
// do at the same moment on their own nodes (start a held round, report their ranks' success).
void InParallel(size_t n, int threads, const std::function<void(size_t)>& fn) {
  if (n < 64 || threads <= 1) {
    for (size_t k = 0; k < n; ++k) fn(k);
    return;
  }
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      for (size_t k = t; k < n; k += threads) fn(k);
    });
  }
  for (std::thread& th : pool) th.join();
}

[[noreturn]] void Usage(const std::string& why) {
  std::cerr << "load_agents: " << why
            << "\nusage: load_agents --agents N [--slots 4] [--run-s 20] [--lose-at-s 8] "
               "[--channels 8] [--log-lines-per-s 0] [--summary FILE] -- <agent argv>\n";
  std::exit(2);
}

Options ParseArgs(int argc, char** argv) {
  Options o;
  int i = 1;
  auto value = [&](const std::string& flag) -> std::string {
    if (i + 1 >= argc) Usage(flag + " needs a value");
    return argv[++i];
  };
  for (; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--") {
      ++i;
      break;
    }
    if (a.rfind("--", 0) != 0) break;  // the agent's program: its argv starts here
    if (a == "--agents") {
      o.agents = std::atoi(value(a).c_str());
    } else if (a == "--slots") {
      o.slots = std::atoi(value(a).c_str());
    } else if (a == "--run-s") {
      o.run_s = std::atof(value(a).c_str());
    } else if (a == "--lose-at-s") {
      o.lose_at_s = std::atof(value(a).c_str());
    } else if (a == "--channels") {
      o.channels = std::atoi(value(a).c_str());
    } else if (a == "--log-lines-per-s") {
      o.log_lines_per_s = std::atof(value(a).c_str());
    } else if (a == "--silent-connections") {
      o.silent_connections = std::atoi(value(a).c_str());
    } else if (a == "--slow-readers") {
      o.slow_readers = std::atoi(value(a).c_str());
    } else if (a == "--no-batch") {
      o.batch = false;
    } else if (a == "--start-threads") {
      o.start_threads = std::max(1, std::atoi(value(a).c_str()));
    } else if (a == "--summary") {
      o.summary = value(a);
    } else {
      Usage("unknown flag " + a);
    }
  }
  // The agent argv as the launcher passes it: program, then its flags.
  for (int k = i; k < argc; ++k) {
    const std::string a = argv[k];
    if (k + 1 >= argc) break;
    if (a == "--control") o.control = argv[k + 1];
    if (a == "--token-file") o.token_file = argv[k + 1];
    if (a == "--join-timeout") o.join_timeout_s = std::atof(argv[k + 1]);
    if (a == "--control-fallback") o.control_fallback = argv[k + 1];
  }
  if (o.agents <= 0) Usage("--agents must be positive");
  if (o.channels <= 0) Usage("--channels must be positive");
  if (o.control.empty() || o.token_file.empty()) {
    Usage("no --control / --token-file in the agent argv after --");
  }
  return o;
}

// K connections to `control` (HOST:PORT) that never send: file descriptors, -1 where connect failed.
std::vector<int> OpenSilentConnections(const std::string& control, int k) {
  std::vector<int> fds;
  const size_t colon = control.rfind(':');
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  if (k <= 0 || colon == std::string::npos ||
      getaddrinfo(control.substr(0, colon).c_str(), control.substr(colon + 1).c_str(), &hints,
                  &res) != 0) {
    return fds;
  }
  for (int i = 0; i < k; ++i) {
    int fd = socket(res->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd >= 0 && connect(fd, res->ai_addr, res->ai_addrlen) != 0) {
      close(fd);
      fd = -1;
    }
    fds.push_back(fd);
  }
  freeaddrinfo(res);
  return fds;
}

// How many of them the other side has closed (a read would return 0 or an error).
int ClosedByPeer(const std::vector<int>& fds) {
  int closed = 0;
  for (int fd : fds) {
    if (fd < 0) continue;
    pollfd p{fd, POLLIN, 0};
    char c;
    closed += poll(&p, 1, 0) == 1 && recv(fd, &c, 1, MSG_DONTWAIT) <= 0;
  }
  return closed;
}

// The launcher stops its node launchers with SIGTERM when agents do not end in time: the
// summary is still written.
std::atomic<bool> g_terminated{false};

int Main(int argc, char** argv) {
  const Options opt = ParseArgs(argc, argv);
  struct sigaction sa {};
  sa.sa_handler = [](int) { g_terminated = true; };
  sigaction(SIGTERM, &sa, nullptr);
  // The token file as the real agent reads it.
  absl::StatusOr<JobCredentials> read = ReadAgentCredentials(opt.token_file, nullptr);
  if (!read.ok()) Usage(std::string(read.status().message()));
  const std::string token = read->token;

  // Separate TCP connections: each channel keeps its own subchannel pool. With relays
  // (--control A,B,...) agent i talks to relay i % R, as `dlaunch run` deals them, over
  // --channels / R connections per relay.
  const std::vector<std::string> targets = absl::StrSplit(opt.control, ',');
  const int per_target = std::max(1, opt.channels / static_cast<int>(targets.size()));
  std::vector<std::shared_ptr<grpc::Channel>> channels;
  std::vector<std::unique_ptr<v1::Control::Stub>> stubs;
  for (int c = 0; c < per_target * static_cast<int>(targets.size()); ++c) {
    grpc::ChannelArguments args;
    args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
    args.SetInt("dlaunch.load_channel", c);
    args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 100);
    args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 1000);
    // TLS pinned to the job's certificate, as the real agents connect.
    channels.push_back(ControlChannel(targets[c % targets.size()], *read, args));
    stubs.push_back(v1::Control::NewStub(channels.back()));
  }

  // With relays, the launcher itself, for the sessions of a relay that goes: as many
  // connections as one relay's agents had.
  std::vector<std::shared_ptr<grpc::Channel>> fallback_channels;
  std::vector<std::unique_ptr<v1::Control::Stub>> fallback_stubs;
  for (int c = 0; !opt.control_fallback.empty() && c < per_target; ++c) {
    grpc::ChannelArguments args;
    args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
    args.SetInt("dlaunch.load_fallback_channel", c);
    fallback_channels.push_back(ControlChannel(opt.control_fallback, *read, args));
    fallback_stubs.push_back(v1::Control::NewStub(fallback_channels.back()));
  }

  const std::vector<int> silent = OpenSilentConnections(targets[0], opt.silent_connections);
  const long silent_open = std::count_if(silent.begin(), silent.end(), [](int fd) { return fd >= 0; });
  if (opt.silent_connections > 0) {
    Note("opened " + std::to_string(silent_open) + " of " + std::to_string(opt.silent_connections) +
         " silent connections");
  }
  const Clock::time_point t0 = Clock::now();
  std::vector<std::unique_ptr<SimAgent>> agents;
  agents.reserve(opt.agents);
  for (int i = 0; i < opt.agents; ++i) {
    // Channel c goes to targets[c % R]: agent i (relay i % R) takes one of those.
    const int r = i % static_cast<int>(targets.size());
    const int c = r + static_cast<int>(targets.size()) * ((i / static_cast<int>(targets.size())) % per_target);
    agents.push_back(std::make_unique<SimAgent>(i, opt, stubs[c].get(), token));
    if (!fallback_stubs.empty()) agents.back()->SetFallback(fallback_stubs[i % per_target].get());
  }
  for (auto& a : agents) a->StartJoin();
  Note("started " + std::to_string(opt.agents) + " joins over " + std::to_string(channels.size()) +
       " channels to " + opt.control);

  // The summary line: written at the end, and also every few sweeps once the ranks succeed,
  // because a launcher that gives up on stopping its node launchers kills them with SIGKILL.
  const auto summary_line = [&](const std::vector<int>& silent, long silent_open) {
    std::ostringstream line;
    line << "load_agents: agents " << opt.agents << ", joins answered " << g.joins_answered
           << " (spares " << g.spares << "), sessions " << g.sessions_opened << " (ok "
           << g.sessions_ok << ", lost " << g.sessions_lost << ", error " << g.sessions_error
           << ", cancelled after close " << g.cancelled_after_close << "), messages sent "
           << g.messages_sent << ", commands received "
           << (g.pings + g.stops + g.starts) << " (pings " << g.pings << ", stops " << g.stops
           << " of which exit " << g.stops_exit << ", starts " << g.starts << ", stale "
           << g.stale_commands << "), errors "
           << (g.join_errors + g.sessions_error + g.write_failures) << " (join " << g.join_errors
           << ", session " << g.sessions_error << ", write " << g.write_failures << "), "
           << std::chrono::duration<double>(Clock::now() - t0).count() << " s, lost at unix "
           << std::fixed << g_lost_at_unix.load() << ", round stops at unix " << g_round_stops.first.load()
           << " to " << g_round_stops.last.load() << ", exit stops at unix " << g_exit_stops.first.load()
           << " to " << g_exit_stops.last.load() << ", restart starts received at unix "
           << g_restart_received.first.load() << " to " << g_restart_received.last.load()
           << ", started at unix " << g_restart_started.first.load() << " to "
           << g_restart_started.last.load() << ", silent connections " << silent_open
           << " (closed by the launcher " << ClosedByPeer(silent) << "), slow readers "
           << std::min(opt.slow_readers, opt.agents) << " (reads " << g.slow_reads << ")"
           << ", sessions moved " << g.sessions_moved << " (answered " << g.moves_answered
           << "), first break at unix " << g_first_break_unix.load()
           << ", last move answered at unix " << g_last_move_answered_unix.load();
    return line.str();
  };
  const auto write_summary = [&](const std::string& line) {
    if (opt.summary.empty()) return;
    const std::string tmp = opt.summary + ".tmp";
    std::ofstream(tmp) << line << "\n";
    std::rename(tmp.c_str(), opt.summary.c_str());
  };

  // The ticker: heartbeats spread over the interval in 50 slices, so the agents are not in step.
  constexpr int kSlices = 50;
  Clock::time_point round0_closed{};
  bool lost = false, succeeded = false;
  int slice = 0;
  long sweeps = 0;
  const Clock::time_point give_up = t0 + std::chrono::seconds(static_cast<int64_t>(
                                             opt.join_timeout_s + opt.run_s + 600));
  for (;;) {
    std::this_thread::sleep_for(milliseconds(std::max(1, g_heartbeat_ms.load() / kSlices)));
    const Clock::time_point now = Clock::now();
    if (round0_closed == Clock::time_point{} && g.joins_answered.load() > 0) {
      round0_closed = now;
      Note("first join answered after " +
           std::to_string(std::chrono::duration<double>(now - t0).count()) + " s");
    }
    for (int i = slice; i < opt.agents; i += kSlices) agents[i]->Current()->Tick();
    const std::vector<int> due = g_held_starts.TakeDue(now);
    InParallel(due.size(), opt.start_threads,
               [&](size_t k) { agents[due[k]]->Current()->StartHeld(); });
    slice = (slice + 1) % kSlices;
    if (slice == 0 && ++sweeps % 2 == 0) {  // every 2 heartbeats
      for (int i = 0; i < std::min(opt.slow_readers, opt.agents); ++i) {
        agents[i]->Current()->ResumeSlowRead();
      }
    }
    if (round0_closed != Clock::time_point{}) {
      const double since = std::chrono::duration<double>(now - round0_closed).count();
      if (!lost && opt.lose_at_s > 0 && since >= opt.lose_at_s) {
        lost = true;
        Note("losing agent " + std::to_string(opt.agents - 1));
        agents.back()->Current()->Lose();
      }
      if (since >= opt.run_s) {
        if (!succeeded) Note("every rank succeeds");
        succeeded = true;
        // Each sweep: a round that started after --run-s (a late restart) succeeds too.
        if (slice % 10 == 0) {
          InParallel(agents.size(), opt.start_threads,
                     [&](size_t k) { agents[k]->Current()->Succeed(); });
        }
        if (slice == 0) write_summary(summary_line(silent, silent_open));
      }
    }
    if (slice % 10 == 0) {
      bool all_done = true;
      for (auto& a : agents) {
        a->Current()->MaybeCancelLingering(now);
        all_done = all_done && a->Current()->finished();
      }
      if (all_done) break;
      if (g_terminated) {
        Note("terminated: not every session ended");
        break;
      }
      if (now > give_up) {
        Note("giving up: not every session ended");
        break;
      }
    }
  }
  for (auto& a : agents) a->Current()->MaybeCancelLingering(Clock::now() + std::chrono::hours(1));

  const std::string line = summary_line(silent, silent_open);
  std::cout << line << std::endl;
  write_summary(line);
  const bool errors = g.join_errors + g.sessions_error + g.write_failures > 0;
  // The reactors may still hold gRPC state; exiting without destructors avoids a teardown race.
  std::_Exit(errors ? 1 : 0);
}

}  // namespace
}  // namespace dlaunch::load

int main(int argc, char** argv) {
  dlaunch::TurnOffLockOrderChecks();  // as dlaunch-agent does
  return dlaunch::load::Main(argc, argv);
}
