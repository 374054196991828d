// RelayMoves: the nodes whose sessions went with a lost relay (docs/relays.md), from the loss
// until each node's agent has opened a session with the launcher again. JobState keeps their
// places meanwhile; the live view shows them as "moving"; the journal says how long each took
// and when a relay's last node is back. A part of JobState: pure, time is an argument.
#pragma once

#include <map>
#include <string>
#include <vector>

namespace dlaunch {

class RelayMoves {
 public:
  // `relay` went with the sessions of `nodes` at `now_s`. A node already moving joins the new
  // group (its first relay's count no longer waits for it).
  void Lost(const std::string& relay, const std::vector<int>& nodes, double now_s);

  // What a node's resumed session closes: how long it moved, through which relay, and whether
  // it was that relay's last node to come back. All zero/empty for a node that was not moving
  // (its own stream broke before the launcher saw the end).
  struct Resumed {
    double after_s = 0;
    std::string relay;
    bool relay_back = false;
  };
  Resumed Resume(int node, double now_s);

  bool moving(int node) const { return group_of_.count(node) > 0; }
  size_t size() const { return group_of_.size(); }

 private:
  struct Group {
    std::string relay;
    double since_s = 0;
    int left = 0;  // its nodes not back yet
  };
  std::vector<Group> groups_;
  std::map<int, size_t> group_of_;  // node id -> its group in groups_
};

}  // namespace dlaunch
