// StackDumper: records the stacks of hung worker processes (gdb's "thread apply all bt") in the
// job directory as stacks/rank-N.txt. Each gdb is a supervised child, so the agent's loop (and
// its heartbeats) goes on while they run; the whole dump is bounded by a budget, after which
// what still runs is killed and its rank's file says so. One dump at a time: a new one drops
// the one before without calling its `done`. Runs on the io_context's thread.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <boost/asio.hpp>

#include "common/child_supervisor.h"
#include "common/clock.h"

namespace dlaunch {

class StackDumper {
 public:
  struct Target {
    int rank = -1;
    pid_t pid = -1;
  };
  using LogFn = std::function<void(const std::string&)>;

  // gdb is looked up on PATH. `clock` must outlive the dumper; seams as for ChildSupervisor.
  StackDumper(boost::asio::io_context& io, TimerClock& clock, LogFn log,
              SupervisorSeams seams = {});
  ~StackDumper();

  // Starts one gdb per target; `done` runs once every file is written, or once `budget` has
  // passed (never from inside this call).
  void Start(const std::vector<Target>& targets, const std::string& stacks_dir,
             std::chrono::milliseconds budget, std::function<void()> done);
  bool busy() const { return done_ != nullptr; }

 private:
  struct Dump {
    int rank = -1;
    pid_t target = -1;
    std::string text;
  };
  void OnOutput(pid_t gdb, std::vector<std::string> lines);
  void OnExit(const ChildExit& e);
  void Record(const Dump& d, const std::string& text);
  void OnBudgetSpent();
  void Finish();

  boost::asio::io_context& io_;
  TimerClock& clock_;
  LogFn log_;
  std::unique_ptr<ChildSupervisor> gdbs_;
  std::string dir_;
  std::map<pid_t, Dump> running_;  // by gdb's pid
  std::optional<TimerClock::TimerId> budget_timer_;
  std::function<void()> done_;
};

}  // namespace dlaunch
