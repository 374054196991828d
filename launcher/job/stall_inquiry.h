// StallInquiry: after a stall, which rank stopped. In a data-parallel job one rank that stops in
// its own code (a stuck data load, a sleep, a deadlock of its own) stalls every peer in the next
// collective, and the peers go silent too, often before it does in the launcher's eyes (a rank
// prints and reports after its collective). So the stall's first-silent rank is only a suspect:
// the launcher asks for every rank's stacks, on every node, and the ranks whose stacks show them
// outside a collective are the ones that stopped; those waiting in one (a Gloo or NCCL call, a
// barrier, a backward waiting on DDP's reducer, a store wait) are their victims. Where the ranks'
// PyTorch flight recorders were read (RankStacks.flight_record), their sequence numbers decide
// instead of frames: the ranks whose newest collective is behind their peers' never entered the
// one the others wait in. Pure: the stacks come in as messages, time as seconds.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "dlaunch/control.pb.h"
#include "launcher/job/failure.h"

namespace dlaunch {

class StallInquiry {
 public:
  // A stall was detected at `now_s`, `suspect` silent longest: the stacks of `ranks` were asked
  // for, and are due by `due_s` (the agents' dump budget and some slack). `silent_s`: each
  // rank's silence then.
  void Begin(const std::vector<int>& ranks, int suspect, std::map<int, double> silent_s,
             double now_s, double due_s);
  int suspect() const { return suspect_; }
  // One rank's stacks (RankStacks); those of a rank not asked for, or twice, change nothing.
  // True when the terminal should say them: at thousands of ranks a line per rank would bury
  // the answer, so the first kSayWaiting waiting ranks are said, and the first kSayOthers of
  // the rest (outside a collective, or without stacks); the verdict names them all.
  bool Note(const v1::RankStacks& stacks);
  static constexpr int kSayWaiting = 3;
  static constexpr int kSayOthers = 16;
  // Every rank asked for has answered.
  bool complete() const { return open_ && answered_.size() == asked_.size(); }
  bool open() const { return open_; }
  double due_s() const { return due_s_; }
  double detected_at_s() const { return detected_at_s_; }
  // Done with: its verdict was given.
  void Close() { open_ = false; }
  void Clear();

  // Ranks whose stacks were taken and show them outside a collective: the ones that stopped.
  std::vector<int> Outside() const;
  // Ranks whose stacks show them waiting on their peers.
  std::vector<int> Waiting() const;
  // Ranks with no stacks (none could be taken), or that did not answer.
  std::vector<int> Unknown() const;
  const v1::RankStacks* StacksOf(int rank) const;
  double SilentFor(int rank) const;

  // The victims in one clause: "ranks 0, 1 and 3 wait in backward (torch/autograd/...:197)";
  // the frame named is the one most of them wait in. "" when none waits.
  std::string WaitingClause() const { return WaitingClause(Waiting()); }
  // The same for `waiting`; those whose stacks name no frame are said by their flight
  // recorder's collective ("wait in collective 14 (gloo:all_reduce)").
  std::string WaitingClause(const std::vector<int>& waiting) const;

  // What the flight recorders say, when two or more ranks' were read and their newest
  // collectives differ: the ranks at the highest sequence number wait in it, those behind
  // stopped before it.
  struct RecorderVerdict {
    int64_t seq = 0;             // the newest collective any rank entered
    std::string collective;      // its name: "gloo:all_reduce"
    std::vector<int> ahead;      // the ranks in it
    std::vector<int> behind;     // the ranks that never entered it
    std::vector<int> unread;     // ranks whose recorder was not read
  };
  std::optional<RecorderVerdict> Recorder() const;

 private:
  bool open_ = false;
  double detected_at_s_ = 0;
  double due_s_ = 0;
  int suspect_ = -1;
  std::vector<int> asked_;
  std::map<int, double> silent_s_;
  std::map<int, v1::RankStacks> answered_;
  int said_waiting_ = 0;
  int said_others_ = 0;
};

// Where a rank's stacks say it is stuck, with where they came from; nullopt when they name no
// frame of the user's code.
std::optional<StuckAt> StuckAtOf(const v1::RankStacks& stacks);

// The terminal's line for a rank's stacks: "rank 3: stopped in load_batch (...), outside any
// collective (stacks/rank-3.txt, from py-spy)"; `inquiring`: they answer a stall's inquiry, so
// a rank not waiting is said to be outside any collective.
std::string StacksLine(const v1::RankStacks& stacks, bool inquiring);

// "flight recorder: ranks 0, 1 and 3 entered collective 14 (gloo:all_reduce); rank 2 only 13":
// the line the terminal and the journal get for a verdict.
std::string RecorderLine(const StallInquiry::RecorderVerdict& verdict, const StallInquiry& inquiry);

// "ranks 0, 1 and 3", "rank 2"; more than `max` are cut: "ranks 0, 1, 2, ... (12 in all)".
std::string RankList(const std::vector<int>& ranks, size_t max = 8);

// "backward (torch/autograd/__init__.py:197)": the frame with its file shortened to the
// package's own path (from the last "site-packages/", "dist-packages/" or "lib/").
std::string DescribeWaitFrame(const v1::StackFrame& frame);

}  // namespace dlaunch
