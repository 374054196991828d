// The launcher's handling of what agents send: a JobState of a few nodes, its rendezvous
// closed, driven by a sequence of events decoded from the input, each agent message parsed
// from the input's bytes as a serialized v1::AgentMessage (what the control service hands
// JobState after gRPC decoded it). Every journal record it asks for must be writable, and the
// job finishes at most once.
//
// Input: a config byte (nodes, slots, restarts), then records of an opcode byte and its
// operands (see Step); seed_agent_messages.cc writes the seeds in this form.
#include <csignal>
#include <string>
#include <variant>

#include "launcher/jobdir/journal.h"
#include "launcher/job/job_state.h"
#include "tests/fuzz/agent_messages_input.h"
#include "tests/fuzz/fuzz_target.h"

namespace {

using dlaunch::JobActions;
using dlaunch::fuzz::AgentInput;

struct Run {
  dlaunch::JobState state;
  double now = 0;
  int finishes = 0;
};

void Check(Run& run, const JobActions& actions) {
  for (const dlaunch::JobAction& action : actions) {
    if (const auto* event = std::get_if<dlaunch::AppendEvent>(&action)) {
      absl::StatusOr<std::string> line = dlaunch::EventJournalLine(event->event);
      FUZZ_CHECK(line.ok(), line.status().ToString());
    } else if (std::holds_alternative<dlaunch::FinishJob>(action)) {
      ++run.finishes;
      FUZZ_CHECK(run.finishes == 1, "the job finished twice");
    }
  }
}

void Step(Run& run, AgentInput& in, int nodes) {
  const uint8_t op = in.Byte();
  // Node ids one past the job's, so messages of unknown nodes come too.
  const int node = in.Byte() % (nodes + 1);
  switch (op % 9) {
    case 0:
    case 1: {
      dlaunch::v1::AgentMessage message;
      const std::string_view bytes = in.Chunk();
      if (!message.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) return;
      Check(run, run.state.OnAgentMessage(node, message, run.now));
      break;
    }
    case 2:
      run.now += in.Byte() * 0.25;
      Check(run, run.state.OnTick(run.now, in.Byte() * 0.01));
      break;
    case 3:
      Check(run, run.state.OnSessionEnded(node, in.Byte() % 4, run.now));
      break;
    case 4:
      Check(run, run.state.OnSessionOpened(node, in.Byte() % 4, run.now));
      break;
    case 5:
      Check(run, run.state.OnHealthCheck(run.now));
      break;
    case 6:
      Check(run, run.state.OnStopDeadline(run.now));
      break;
    case 7:
      Check(run, run.state.OnSignal(in.Byte() % 2 ? SIGINT : SIGTERM, run.now));
      break;
    default:
      Check(run, run.state.OnLauncherExited(node, in.Byte() << 8, {"last line"}, run.now));
      break;
  }
  (void)run.state.Snapshot(run.now);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  AgentInput in(data, size);
  const uint8_t config = in.Byte();
  const int nodes = 1 + config % 4;
  const int slots = 1 + (config >> 2) % 3;
  dlaunch::JobConfig c = dlaunch::fuzz::AgentJobConfig(nodes, (config >> 4) % 3);
  Run run{dlaunch::JobState(c)};
  std::vector<std::string> launchers(static_cast<size_t>(nodes), "ssh");
  Check(run, run.state.OnStarted(launchers, 0));
  std::vector<dlaunch::Participant> places;
  for (int i = 0; i < nodes; ++i) places.push_back(dlaunch::fuzz::AgentPlace(i, slots));
  Check(run, run.state.OnRendezvousClosed(dlaunch::AssignRound(0, places, 29500), 1));
  for (int i = 0; i < nodes; ++i) Check(run, run.state.OnSessionOpened(i, i, 1));
  run.now = 1;
  // Bounded, so a long input is not a slow one.
  for (int steps = 0; !in.empty() && steps < 512; ++steps) Step(run, in, nodes);
  return 0;
}
