// What went wrong in a job, in the launcher's words: the class of failure, where it happened
// (global, local and node rank, host), how it showed (exit code, signal) and the last lines of
// the rank's log. The root-cause and restart decisions work on these.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace dlaunch {

enum class FailureClass {
  kWorkerCrash,   // a worker exited non-zero or was killed by a signal
  kAgentLost,     // an agent's session broke (the agent process died)
  kNodeSilent,    // an agent stopped sending heartbeats (node frozen, agent stopped)
  kStall,         // a worker alive but making no progress
  kExitHang,      // a worker still running long after another exited 0
  kLaunchError,   // a node launcher or a worker could not be started
  kOutOfMemory,   // the kernel's OOM killer ended a worker (its cgroup's limit, or the node's)
};

// "worker crash", "agent lost", ... as shown to users and written to events.jsonl.
std::string FailureClassName(FailureClass c);

// Where a stalled or hung Python rank was stuck: the innermost frame of the user's own code in
// the stacks its agent took before the stop (RankStacks.stuck_at).
struct StuckAt {
  std::string function;
  std::string file;
  int line = 0;         // 0: not known
  std::string source;   // what gave the stacks: "worker server", "py-spy"
  std::string stacks;   // their file, relative to the job directory
};

// "train_step (/home/u/train.py:42)".
std::string DescribeStuckAt(const StuckAt& at);

struct Failure {
  FailureClass cls = FailureClass::kWorkerCrash;
  int node_rank = -1;     // in the round that failed
  int node_id = -1;       // the node's identity for the whole job (JoinResponse.node_id)
  std::string host;
  int global_rank = -1;   // -1 for a failure of a whole node
  int local_rank = -1;
  int exit_code = -1;     // -1 when it did not exit (signal, hang, lost node)
  int signal = 0;
  double detected_at_s = 0;   // on the launcher's clock, seconds since the job started
  bool after_stop = false;    // seen after the job had been told to stop
  std::vector<std::string> log_tail;
  std::string detail;         // e.g. "no progress for 61.0 s (limit 60.0 s)"
  std::optional<StuckAt> stuck_at;  // a stall or hang whose rank's stacks named a frame
  // A stall whose rank's stacks show it waiting on its peers in a collective: a victim of the
  // rank that stopped, not a cause (stall_inquiry.h).
  bool waits_on_peers = false;
};

// One line naming the failure: "worker crash: rank 3 (local 1, node 1, host h2) killed by
// signal 9 (Killed)"; a stall or hang ends with where it was stuck, ", in train_step (...)".
std::string DescribeFailure(const Failure& f);

// A stable key for "the same failure again" (crash-loop detection): class, global rank or node
// id (never node rank), and how it ended.
std::string FailureSignature(const Failure& f);

}  // namespace dlaunch
