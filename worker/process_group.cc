#include "worker/process_group.h"

#include <torch/csrc/distributed/c10d/HashStore.hpp>
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>
#ifdef USE_C10D_NCCL
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>
#endif

#include <cstdlib>

#include "absl/strings/str_cat.h"
#include "absl/strings/match.h"
#include "worker/tcp_probe.h"

namespace dlaunch::worker {
namespace {

std::shared_ptr<::gloo::transport::Device> GlooDevice(const DistributedEnv& env) {
  // Same precedence as torch.distributed: an explicit interface wins. Otherwise a loopback
  // rendezvous means all ranks are local, so bind loopback rather than whatever the hostname
  // resolves to (which inside network namespaces or containers may be unreachable).
  if (const char* ifname = std::getenv("GLOO_SOCKET_IFNAME"); ifname && *ifname) {
    return c10d::ProcessGroupGloo::createDeviceForInterface(ifname);
  }
  if (env.master_addr == "localhost" || absl::StartsWith(env.master_addr, "127.")) {
    return c10d::ProcessGroupGloo::createDeviceForHostname("127.0.0.1");
  }
  return c10d::ProcessGroupGloo::createDefaultDevice();
}

#if TORCH_VERSION_MAJOR >= 2
// LibTorch 2.x splits the user-facing ProcessGroup from its per-device Backend objects.
c10::intrusive_ptr<c10d::ProcessGroup> WrapBackend(
    const c10::intrusive_ptr<c10d::Store>& store, const DistributedEnv& env,
    c10d::ProcessGroup::BackendType type, c10::DeviceType device,
    c10::intrusive_ptr<c10d::Backend> backend, std::chrono::milliseconds timeout) {
#if TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR < 2
  auto options = c10::make_intrusive<c10d::ProcessGroup::Options>(
      c10d::ProcessGroup::backendTypeToString(type), timeout);
  auto group = c10::make_intrusive<c10d::ProcessGroup>(store, env.rank, env.world_size, options);
#else
  auto group = c10::make_intrusive<c10d::ProcessGroup>(store, env.rank, env.world_size);
#endif
  group->setBackend(device, type, backend);
  group->setDefaultBackend(type);
  return group;
}
#endif

// The group's store: a HashStore for one rank asked for no rendezvous, else the TCPStore at
// MASTER_ADDR:MASTER_PORT (served by rank 0 unless the agent serves it).
absl::StatusOr<c10::intrusive_ptr<c10d::Store>> MakeStore(const DistributedEnv& env,
                                                          std::chrono::milliseconds store_timeout) {
  try {
    if (env.world_size == 1 && env.master_port == 0) {
      // Alone and not asked to rendezvous: no port to take.
      return c10::intrusive_ptr<c10d::Store>(c10::make_intrusive<c10d::HashStore>());
    }
    {
      const bool serve = env.rank == 0 && !env.use_agent_store;
      if (!serve) {
        if (absl::Status s = WaitForTcpListener(env.master_addr, env.master_port, store_timeout);
            !s.ok()) {
          return absl::DeadlineExceededError(absl::StrCat(
              "rank ", env.rank, ": cannot reach the TCPStore at ", env.master_addr, ":",
              env.master_port, " (--store-timeout; are MASTER_ADDR/MASTER_PORT right and rank 0 "
              "started?): ", s.message()));
        }
      }
      c10d::TCPStoreOptions opts;
      opts.port = static_cast<std::uint16_t>(env.master_port);
      opts.isServer = serve;
      opts.numWorkers = env.world_size;
      opts.waitWorkers = true;  // rank 0 returns only when everyone has connected
      opts.timeout = store_timeout;
      // The prefix keeps the group's keys apart from a launcher agent's own keys in a shared
      // store, as torch.distributed does.
      return c10::intrusive_ptr<c10d::Store>(c10::make_intrusive<c10d::PrefixStore>(
          "dlaunch_worker/", c10::make_intrusive<c10d::TCPStore>(env.master_addr, opts)));
    }
  } catch (const std::exception& e) {
    return absl::DeadlineExceededError(absl::StrCat(
        "rank ", env.rank, ": cannot rendezvous through the TCPStore at ", env.master_addr, ":",
        env.master_port, " within ", store_timeout.count() / 1000.0,
        " s (--store-timeout; are MASTER_ADDR/MASTER_PORT right and all ", env.world_size,
        " ranks started?): ", e.what()));
  }
}

}  // namespace

absl::StatusOr<ProcessGroupHandle> CreateProcessGroup(const DistributedEnv& env,
                                                      const std::string& backend_flag,
                                                      bool use_cuda,
                                                      std::chrono::milliseconds store_timeout,
                                                      std::chrono::milliseconds collective_timeout) {
  ProcessGroupHandle handle;
  handle.backend = backend_flag == "auto" ? (use_cuda ? "nccl" : "gloo") : backend_flag;
  if (handle.backend == "nccl") {
#ifndef USE_C10D_NCCL
    return absl::FailedPreconditionError(
        "--backend nccl: this dlaunch-worker was built against a LibTorch without NCCL");
#else
    if (!use_cuda) return absl::FailedPreconditionError("--backend nccl needs a CUDA device");
#endif
  }

  absl::StatusOr<c10::intrusive_ptr<c10d::Store>> store = MakeStore(env, store_timeout);
  if (!store.ok()) return store.status();
  handle.store = *std::move(store);
  handle.store->setTimeout(store_timeout);

  try {
    if (handle.backend == "gloo") {
      auto options = c10d::ProcessGroupGloo::Options::create(collective_timeout);
      options->devices.push_back(GlooDevice(env));
      options->threads = 2;
      auto gloo = c10::make_intrusive<c10d::ProcessGroupGloo>(handle.store, env.rank,
                                                              env.world_size, options);
#if TORCH_VERSION_MAJOR >= 2
      handle.group = WrapBackend(handle.store, env, c10d::ProcessGroup::BackendType::GLOO,
                                 c10::DeviceType::CPU, gloo, collective_timeout);
#else
      handle.group = gloo;
#endif
    } else {
#ifdef USE_C10D_NCCL
      auto options = c10d::ProcessGroupNCCL::Options::create();
      options->timeout = collective_timeout;
      auto nccl = c10::make_intrusive<c10d::ProcessGroupNCCL>(handle.store, env.rank,
                                                              env.world_size, options);
#if TORCH_VERSION_MAJOR >= 2
      handle.group = WrapBackend(handle.store, env, c10d::ProcessGroup::BackendType::NCCL,
                                 c10::DeviceType::CUDA, nccl, collective_timeout);
#else
      handle.group = nccl;
#endif
#endif
    }
  } catch (const std::exception& e) {
    return absl::UnavailableError(absl::StrCat("rank ", env.rank, ": cannot create the ",
                                               handle.backend, " process group: ", e.what()));
  }
  return handle;
}

void ShutdownProcessGroup(ProcessGroupHandle& pg) {
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 6)
  if (pg.group && pg.backend == "nccl") pg.group->shutdown();
#else
  (void)pg;
#endif
}

void AllReduceMean(const ProcessGroupHandle& pg, torch::Tensor& values) {
  if (pg.group->getSize() == 1) return;
  std::vector<torch::Tensor> tensors = {values};
  pg.group->allreduce(tensors)->wait();
  values.div_(pg.group->getSize());
}

}  // namespace dlaunch::worker
