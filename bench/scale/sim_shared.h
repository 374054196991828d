// What load_agents' simulated agents share (bench/scale/load_agents.cc, sim_agent.h): the
// options, the counters, the windows the bench measures, and the starts held for later.
#pragma once

#include <atomic>
#include <chrono>
#include <iostream>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace dlaunch::load {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

struct Options {
  int agents = 0;
  int slots = 4;
  double run_s = 20;
  double lose_at_s = 8;
  int channels = 8;
  double log_lines_per_s = 0;
  int silent_connections = 0;  // raw TCP connections that never send a byte
  int slow_readers = 0;        // agents (the first ones) that read one command every 2 s
  bool batch = true;           // queued messages go up in one AgentBatch, as the agent sends them
  int start_threads = 4;       // threads that start the held rounds due at one moment
  std::string summary;
  std::string control;
  std::string token_file;
  std::string control_fallback;  // the launcher itself, when --control names relays
  double join_timeout_s = 300;
};

struct Counters {
  std::atomic<long> joins_answered{0}, join_errors{0}, spares{0};
  std::atomic<long> sessions_opened{0}, sessions_ok{0}, sessions_error{0}, sessions_lost{0};
  std::atomic<long> messages_sent{0}, write_failures{0};
  std::atomic<long> pings{0}, stops{0}, stops_exit{0}, starts{0}, stale_commands{0};
  std::atomic<long> cancelled_after_close{0};
  std::atomic<long> slow_reads{0};
  // Sessions that broke (their relay went) and moved to --control-fallback; moves the launcher
  // answered (its first command on the new session).
  std::atomic<long> sessions_moved{0}, moves_answered{0};
};

inline Counters g;
// The launcher's heartbeat interval, from the first JoinResponse; the ticker paces by it.
inline std::atomic<int> g_heartbeat_ms{1000};
// When the node was lost (Unix time, s): the bench measures the launcher's detection from it.
inline std::atomic<double> g_lost_at_unix{0};
// The first session that broke and the last moved session the launcher answered (Unix time, s).
inline std::atomic<double> g_first_break_unix{0}, g_last_move_answered_unix{0};
inline std::mutex g_log_mu;

inline double UnixNow() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// When the first and the last agent received a stop (Unix time, s), apart for the stops that end
// a round for a restart and the ones that end the job (exit): the bench measures the fan-out from
// the launcher's stop_requested event to the last of them.
struct StopWindow {
  std::atomic<double> first{0}, last{0};
  void Saw(double t) {
    double f = first.load();
    while ((f == 0 || t < f) && !first.compare_exchange_weak(f, t)) {
    }
    double l = last.load();
    while (t > l && !last.compare_exchange_weak(l, t)) {
    }
  }
};
inline StopWindow g_round_stops, g_exit_stops;
// The same for the StartRounds of a restart (received), and for their starts (STARTED handed to
// gRPC, at once or once a round sent ahead is due): where a restart's last second goes here.
inline StopWindow g_restart_received, g_restart_started;

inline void Note(const std::string& line) {
  std::lock_guard<std::mutex> lock(g_log_mu);
  std::cerr << "load_agents: " << line << std::endl;
}

inline int64_t SteadyMs() {
  return std::chrono::duration_cast<milliseconds>(Clock::now().time_since_epoch()).count();
}

// Rounds whose StartRound came ahead of their start (start_after_ms): the agent's index and
// when its ranks start. The ticker starts them once due, as the agent's timer does.
struct HeldStarts {
  std::mutex mu;
  std::vector<std::pair<Clock::time_point, int>> due;
  void Add(Clock::time_point at, int agent) {
    std::lock_guard<std::mutex> lock(mu);
    due.emplace_back(at, agent);
  }
  // Removes and returns the agents whose start is due at `now`.
  std::vector<int> TakeDue(Clock::time_point now) {
    std::vector<int> out;
    std::lock_guard<std::mutex> lock(mu);
    for (size_t i = 0; i < due.size();) {
      if (due[i].first > now) {
        ++i;
        continue;
      }
      out.push_back(due[i].second);
      due[i] = due.back();
      due.pop_back();
    }
    return out;
  }
};
inline HeldStarts g_held_starts;

}  // namespace dlaunch::load
