// Writes the agent_messages target's seeds: jobs as agents live them, in the target's input
// form (agent_messages_input.h). Run when that form changes:
//   seed_agent_messages tests/fuzz/corpus/agent_messages
#include <cstdio>
#include <fstream>
#include <string>

#include "dlaunch/control.pb.h"

namespace {

using dlaunch::v1::AgentMessage;
using dlaunch::v1::WorkerEvent;

class Seed {
 public:
  explicit Seed(uint8_t config) { bytes_.push_back(static_cast<char>(config)); }

  Seed& Message(int node, const AgentMessage& m) {
    const std::string body = m.SerializeAsString();
    Op(0, node);
    bytes_.push_back(static_cast<char>(body.size() >> 8));
    bytes_.push_back(static_cast<char>(body.size() & 0xff));
    bytes_ += body;
    return *this;
  }
  Seed& Tick(int quarter_seconds) { return Op(2, 0).Arg(quarter_seconds).Arg(0); }
  Seed& SessionEnded(int node) { return Op(3, node).Arg(node); }
  Seed& HealthCheck() { return Op(5, 0); }
  Seed& StopDeadline() { return Op(6, 0); }
  Seed& Signal() { return Op(7, 0).Arg(1); }
  Seed& LauncherExited(int index, int code) { return Op(8, index).Arg(code); }

  void Write(const std::string& path) const {
    std::ofstream(path, std::ios::binary) << bytes_;
  }

 private:
  Seed& Op(int op, int node) { return Arg(op).Arg(node); }
  Seed& Arg(int v) {
    bytes_.push_back(static_cast<char>(v));
    return *this;
  }
  std::string bytes_;
};

AgentMessage Worker(int round, int rank, WorkerEvent::State state, int exit_code = 0) {
  AgentMessage m;
  m.set_round(round);
  m.mutable_worker()->set_rank(rank);
  m.mutable_worker()->set_state(state);
  m.mutable_worker()->set_exit_code(exit_code);
  return m;
}

AgentMessage Beat(int round, int rank, int step) {
  AgentMessage m;
  m.set_round(round);
  m.set_sent_ms(1000 * step);
  dlaunch::v1::Heartbeat* hb = m.mutable_heartbeat();
  hb->set_workers_running(1);
  dlaunch::v1::WorkerReport* r = hb->add_reports();
  r->set_kind(dlaunch::v1::WorkerReport::STEP);
  r->set_rank(rank);
  r->set_step(step);
  r->set_samples(64);
  r->set_interval_s(1);
  r->set_loss(0.5);
  r->set_total_steps(100);
  return m;
}

AgentMessage Ended(int round, int port) {
  AgentMessage m;
  m.set_round(round);
  m.mutable_round_ended()->set_round(round);
  m.mutable_round_ended()->set_worker_port(port);
  return m;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s CORPUS_DIR\n", argv[0]);
    return 2;
  }
  const std::string dir = argv[1];
  // Config 0x01: two nodes of one slot, no restarts. Both ranks run, report and succeed.
  Seed(0x01)
      .Message(0, Worker(0, 0, WorkerEvent::STARTED)).Message(1, Worker(0, 1, WorkerEvent::STARTED))
      .Tick(4).Message(0, Beat(0, 0, 10)).Message(1, Beat(0, 1, 10)).Tick(4)
      .Message(0, Worker(0, 0, WorkerEvent::SUCCEEDED))
      .Message(1, Worker(0, 1, WorkerEvent::SUCCEEDED))
      .SessionEnded(0).SessionEnded(1).LauncherExited(0, 0).LauncherExited(1, 0)
      .Write(dir + "/two-nodes-succeed");
  // Config 0x11: two nodes, one restart. Rank 1 fails, the round ends, a second round runs.
  Seed(0x11)
      .Message(0, Worker(0, 0, WorkerEvent::STARTED)).Message(1, Worker(0, 1, WorkerEvent::STARTED))
      .Tick(4).Message(1, Worker(0, 1, WorkerEvent::FAILED, 3)).Tick(2)
      .Message(0, Ended(0, 40000)).Message(1, Ended(0, 40001)).HealthCheck().Tick(8)
      .Message(0, Worker(1, 0, WorkerEvent::STARTED)).Message(1, Worker(1, 1, WorkerEvent::STARTED))
      .Message(0, Beat(1, 0, 5)).Message(0, Worker(1, 0, WorkerEvent::SUCCEEDED))
      .Message(1, Worker(1, 1, WorkerEvent::SUCCEEDED)).SessionEnded(0).SessionEnded(1)
      .Write(dir + "/restart-round");
  // Config 0x02: three nodes; node 2 goes silent and is lost; a signal stops the rest.
  Seed(0x02)
      .Message(0, Worker(0, 0, WorkerEvent::STARTED)).Message(1, Worker(0, 1, WorkerEvent::STARTED))
      .Message(2, Worker(0, 2, WorkerEvent::STARTED)).Tick(4).Message(0, Beat(0, 0, 3))
      .Message(1, Beat(0, 1, 3)).Tick(40).Signal().StopDeadline().Tick(40)
      .Write(dir + "/node-lost-and-signal");
  return 0;
}
