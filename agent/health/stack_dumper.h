// StackDumper: records the stacks of hung worker processes in the job directory as
// stacks/rank-N.txt, each from the first source that gives them: for a Python rank, the PyTorch
// worker server it runs (its dump_traceback handler), then py-spy; gdb's native frames for the
// rest, and when those gave nothing. For a Python rank it also names the frame of the user's
// code the rank is stuck in, and where its worker server gave the stacks, reads its PyTorch
// flight recorder through it too (fr_trace_json or dump_nccl_trace_json; stacks/rank-N.fr.json). Every source runs beside the agent's loop (py-spy and gdb as
// supervised children, the worker server's answer read on the loop), so its heartbeats go on;
// each has a share of the budget that bounds the whole dump, after which what still runs is
// killed and its rank's file says so. One dump at a time: a new one drops the one before
// without calling its `done`. Runs on the io_context's thread.
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

#include "absl/status/statusor.h"
#include "agent/health/python_stack.h"
#include "agent/workers/worker_server_request.h"
#include "common/child_supervisor.h"
#include "common/clock.h"
#include "dlaunch/control.pb.h"

namespace dlaunch {

class StackDumper {
 public:
  struct Target {
    int rank = -1;
    pid_t pid = -1;
  };
  // What one rank's dump gave.
  struct Result {
    int rank = -1;
    std::string source;  // "worker server", "py-spy" or "gdb"; "" when none gave stacks
    std::string path;    // its file
    std::optional<PyFrame> stuck_at;  // a Python rank's frame of the user's code
    // The frame it waits on its peers in (CollectiveWait, NativeCollectiveWait); unset when
    // its stacks show it elsewhere, or when none were taken.
    std::optional<PyFrame> waiting_in;
    std::string why_none;  // no stacks: why, a line per source tried
    // Its flight recorder, asked for when its worker server gave the stacks; unset otherwise.
    std::optional<v1::FlightRecord> flight_record;
  };
  // How the dumper looks at a process and finds py-spy (agent/health/python_process.h); tests give
  // their own.
  struct Probe {
    std::function<bool(pid_t)> is_python;
    std::function<std::string(pid_t)> worker_server_socket;  // "" when it runs none
    std::function<std::string(std::string* why)> find_py_spy;
    // Stopped already: py-spy reads it as it is (--nonblocking), as it cannot pause it again.
    std::function<bool(pid_t)> is_stopped;
  };
  static Probe SystemProbe();
  using LogFn = std::function<void(const std::string&)>;
  using DoneFn = std::function<void(std::vector<Result>)>;

  // gdb is looked up on PATH. `clock` must outlive the dumper; seams as for ChildSupervisor.
  StackDumper(boost::asio::io_context& io, TimerClock& clock, LogFn log,
              SupervisorSeams seams = {}, Probe probe = SystemProbe());
  ~StackDumper();

  // Takes every target's stacks; `done` runs once every file is written, or once `budget` has
  // passed (never from inside this call), with one result per target.
  void Start(const std::vector<Target>& targets, const std::string& stacks_dir,
             std::chrono::milliseconds budget, DoneFn done);
  bool busy() const { return done_ != nullptr; }

  // The share of the budget the worker server and py-spy each have at most; gdb, the last
  // source, has what is left.
  static constexpr double kWorkerServerShare = 0.25;
  static constexpr double kPySpyShare = 0.4;

 private:
  enum class Source { kWorkerServer, kPySpy, kGdb };
  static const char* SourceName(Source s);
  struct Dump {
    int rank = -1;
    pid_t target = -1;
    std::vector<Source> next;  // sources not tried yet, in order
    Source current = Source::kGdb;
    std::string socket;        // the worker server's
    std::string notes;         // why the sources tried before gave nothing, a line each
    std::string text;          // what the running source wrote
    int key = -1;              // the running py-spy's or gdb's key in children_
    pid_t child = -1;          // and its pid
    std::shared_ptr<WorkerServerRequest> request;
    bool recorder = false;     // its stacks are recorded; the request asks its flight recorder
    std::string recorder_handler;  // the handler asked: fr_trace_json, then dump_nccl_trace_json
    std::string recorder_notes;    // why the handlers asked gave no entries, "handler: why; "
    std::optional<TimerClock::TimerId> slice;  // the running source's share of the budget
  };

  // Starts the next source of `target` (or records that none is left, and forgets it).
  void Advance(pid_t target);
  // Starts source `s` of `d`; false (with a note) when it could not start.
  bool StartSource(Dump& d, Source s);
  void ArmSlice(Dump& d, double share);
  void OnAnswer(pid_t target, absl::StatusOr<std::string> body);
  // After a worker server gave `d`'s stacks: asks it for the rank's flight recorder with
  // `handler`: fr_trace_json (the CPU recorder: Gloo), and where that holds nothing,
  // dump_nccl_trace_json (NCCL's own, served by a CUDA build).
  void AskRecorder(Dump& d, const std::string& handler);
  void OnRecorder(pid_t target, absl::StatusOr<std::string> body);
  // The recorded result of `rank`, to which the flight recorder is added.
  Result* ResultOf(int rank);
  void OnOutput(int key, std::vector<std::string> lines);
  void OnExit(const ChildExit& e);
  void OnSliceSpent(pid_t target);
  // Stops what `d` runs now (its child, its request, its slice timer).
  void Halt(Dump& d);
  // Writes the rank's file: the stacks `source` gave (none: only the notes).
  void Record(const Dump& d, std::optional<Source> source, const std::string& text);
  void OnBudgetSpent();
  void Finish();
  // Finish once no rank's dump runs.
  void MaybeFinish();
  Dump* ByKey(int key);

  boost::asio::io_context& io_;
  TimerClock& clock_;
  LogFn log_;
  Probe probe_;
  std::unique_ptr<ChildSupervisor> children_;
  std::string dir_;
  std::string py_spy_;       // found at each Start
  std::string py_spy_why_;   // why it was not
  std::chrono::milliseconds budget_{0};
  SteadyTime deadline_{};
  int next_key_ = 0;
  std::map<pid_t, Dump> running_;  // by the target's pid
  std::vector<Result> results_;
  std::optional<TimerClock::TimerId> budget_timer_;
  DoneFn done_;
};

// The result as it goes to the launcher, its path relative to `job_dir`.
v1::RankStacks RankStacksOf(const StackDumper::Result& result, const std::string& job_dir);

}  // namespace dlaunch
