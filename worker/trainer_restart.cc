// Trainer's in-process restart (docs/restarts.md, "In-process restart"): when the round stops
// for a failure elsewhere, this rank abandons the step in flight, leaves the process group, keeps
// its model, optimizer and step in memory, takes its place in the next round and makes the group
// again; a rank started anew beside it gets the state from the newest replica by broadcast
// instead of reading the checkpoint (SyncState).
#include <cstdio>
#include <cstring>

#include <torch/torch.h>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "worker/checkpoint_io.h"
#include "worker/restart_resume.h"
#include "worker/trainer_internal.h"

namespace dlaunch::worker {
namespace {

// How long a rank whose collective failed waits for the agent's "leave" before the failure
// counts as its own (the agent learns of a peer's death through the launcher: well under this).
constexpr std::chrono::seconds kLeaveWait{30};
// How long a rank that left waits for its place in the next round; the agent ends it when the
// job ends instead.
constexpr std::chrono::minutes kJoinWait{10};

double MsSince(Clock::time_point t) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t).count();
}

// The first line of an exception's text (LibTorch 1.x appends its C++ stack trace).
std::string FirstLine(const std::string& text) { return text.substr(0, text.find('\n')); }

// A collective that failed because a peer died or the group was torn down under it, as the
// Python wrapper tells it (python/src/dlaunch/inprocess.py).
bool LooksLikePeerFailure(const std::string& error) {
  for (const char* s : {"Connection closed by peer", "Connection reset", "Gloo", "gloo", "NCCL",
                        "ProcessGroup", "process group", "Broken pipe", "Socket"}) {
    if (absl::StrContains(error, s)) return true;
  }
  return false;
}

}  // namespace

absl::Status Trainer::TrainUntilDone(Clock::time_point run_start) {
  for (;;) {
    std::string error;
    try {
      DLAUNCH_WORKER_RETURN_IF_ERROR(TrainLoop());
      return Finish(FinalThroughput(), run_start);
    } catch (const RoundStopped&) {
      // The agent's "leave", taken at a step boundary.
    } catch (const std::exception& e) {
      if (restart_ == nullptr) throw;
      error = FirstLine(e.what());
    }
    DLAUNCH_WORKER_RETURN_IF_ERROR(RestartInProcess(error));
  }
}

absl::Status Trainer::RestartInProcess(const std::string& error) {
  if (!error.empty()) {
    if (absl::StrContains(error, "CUDA error")) {
      // A CUDA error poisons the context: this process cannot take part again.
      restart_->Cannot("a CUDA error");
      return absl::InternalError(absl::StrCat("training failed: ", error));
    }
    // A peer that died fails this rank's collective before the agent's "leave" comes.
    if (!LooksLikePeerFailure(error) || !restart_->WaitForLeave(kLeaveWait)) {
      return absl::InternalError(absl::StrCat("training failed: ", error));
    }
  }
  std::optional<int> round = restart_->WaitForLeave(std::chrono::milliseconds(0));
  if (!round) return absl::InternalError("the agent's \"leave\" went missing");
  DLAUNCH_WORKER_RETURN_IF_ERROR(LeaveRound(*round));
  return JoinNextRound();
}

// A state that must not be carried into the next round: a NaN or infinity in the parameters (a
// diverged run, or a step cut half-way would show there).
std::optional<std::string> Trainer::WhyStateCannotBeKept() {
  torch::NoGradGuard no_grad;
  for (const torch::Tensor& p : params_) {
    if (!torch::isfinite(p).all().item<bool>()) return "a NaN or infinity in the parameters";
  }
  return std::nullopt;
}

absl::Status Trainer::LeaveRound(int round) {
  const auto t0 = Clock::now();
  // Gloo's blocked collectives cannot be aborted: their sockets are shut down instead, so that
  // the group's threads end now and peers blocked on this rank are freed.
  const int closed = ShutdownTcpConnections();
  ddp_.reset();
  pg_ = ProcessGroupHandle{};
  // The step in flight is abandoned: its partial gradients go, its parameters were not touched
  // (the optimizer runs only after a complete all-reduce).
  optimizer_->zero_grad();
  if (std::optional<std::string> why = WhyStateCannotBeKept()) {
    restart_->Cannot(*why);
    return absl::DataLossError(absl::StrCat("cannot restart in process: ", *why));
  }
  restart_->TakeLeave();
  restart_->Left(round);
  std::fprintf(stderr,
               "dlaunch-worker: rank %d left round %d at step %lld in %.0f ms (%d connection(s) "
               "closed); model and optimizer kept\n",
               env_.rank, round, static_cast<long long>(state_.step), MsSince(t0), closed);
  return absl::OkStatus();
}

absl::Status Trainer::JoinNextRound() {
  std::optional<RoundPlace> place = restart_->WaitForJoin(kJoinWait);
  if (!place) return absl::UnavailableError("no next round came for this rank kept in its process");
  // A "leave" of a round this rank already left (it came before this "join") is not this
  // round's stop.
  if (std::optional<int> stale = restart_->WaitForLeave(std::chrono::milliseconds(0));
      stale && *stale < place->round) {
    restart_->TakeLeave();
  }
  const auto t0 = Clock::now();
  const int old_rank = env_.rank;
  env_.rank = place->rank;
  env_.local_rank = place->local_rank;
  env_.world_size = place->world_size;
  env_.master_addr = place->master_addr;
  env_.master_port = place->master_port;
  env_.restart_count = place->round;
  restart_->Ready(place->round);
  DLAUNCH_WORKER_RETURN_IF_ERROR(InitProcessGroup());
  DLAUNCH_WORKER_RETURN_IF_ERROR(ShardData());
  ScaleLearningRate();
  DLAUNCH_WORKER_RETURN_IF_ERROR(SyncState());
  BuildReducer();
  if (step_trace_) step_trace_->Span("restart_in_process", state_.step, t0, Clock::now());
  std::fprintf(stderr,
               "dlaunch-worker: rank %d (was %d) joined round %d of %d rank(s) at step %lld in "
               "%.0f ms\n",
               env_.rank, old_rank, place->round, env_.world_size,
               static_cast<long long>(state_.step), MsSince(t0));
  return absl::OkStatus();
}

// Every rank's step, then: nobody has trained (a job's first round, or every rank started
// anew): rank 0's initial parameters, or the checkpoint on a restart, as without in-process
// restarts; every rank at the same step (all kept): nothing to send; else the lowest rank with
// the newest step sends its state to the ranks behind it.
absl::Status Trainer::SyncState() {
  const bool resume = PlanResume(options_, env_.restart_count).resume;
  if (restart_ == nullptr || env_.world_size == 1) {
    BroadcastModelState();
    return resume ? Resume() : absl::OkStatus();
  }
  torch::Tensor steps = torch::zeros({env_.world_size}, torch::kInt64);
  steps[env_.rank] = state_.step;
  steps = steps.to(device_);
  std::vector<torch::Tensor> t = {steps};
  pg_.group->allreduce(t)->wait();
  steps = steps.cpu();
  const int64_t newest = steps.max().item<int64_t>();
  if (newest == 0) {
    BroadcastModelState();
    return resume ? Resume() : absl::OkStatus();
  }
  if (steps.min().item<int64_t>() == newest) return absl::OkStatus();
  const int src = static_cast<int>(steps.eq(newest).nonzero()[0][0].item<int64_t>());
  BroadcastStateFrom(src, newest);
  return absl::OkStatus();
}

void Trainer::BroadcastStateFrom(int src, int64_t newest) {
  const auto t0 = Clock::now();
  const int64_t behind = state_.step;
  std::string payload;
  if (env_.rank == src) {
    absl::StatusOr<std::string> bytes = SerializeTrainingState(*model_, *optimizer_, state_);
    if (!bytes.ok()) throw std::runtime_error(std::string(bytes.status().message()));
    payload = *std::move(bytes);
  }
  c10d::BroadcastOptions from;
  from.rootRank = src;
  torch::Tensor length = torch::tensor({static_cast<int64_t>(payload.size())}, torch::kInt64);
  length = length.to(device_);
  std::vector<torch::Tensor> t = {length};
  pg_.group->broadcast(t, from)->wait();
  const int64_t n = length.cpu().item<int64_t>();
  torch::Tensor bytes = torch::empty({n}, torch::kUInt8);
  if (env_.rank == src) std::memcpy(bytes.data_ptr(), payload.data(), payload.size());
  bytes = bytes.to(device_);
  t = {bytes};
  pg_.group->broadcast(t, from)->wait();
  // A rank at the newest step holds that state already (every replica applies the same
  // averaged gradients); only one behind loads what was sent.
  if (state_.step == newest) return;
  bytes = bytes.cpu();
  payload.assign(static_cast<const char*>(bytes.data_ptr()), static_cast<size_t>(n));
  absl::StatusOr<ScalarTrainingState> state =
      DeserializeTrainingState(payload, *model_, *optimizer_, device_);
  if (!state.ok()) throw std::runtime_error(std::string(state.status().message()));
  state_ = *state;
  start_step_ = state_.step;
  std::fprintf(stderr,
               "dlaunch-worker: rank %d at step %lld took rank %d's state of step %lld by "
               "broadcast (%lld bytes, %.0f ms)\n",
               env_.rank, static_cast<long long>(behind), src,
               static_cast<long long>(state_.step), static_cast<long long>(n), MsSince(t0));
}

}  // namespace dlaunch::worker
