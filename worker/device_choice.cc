#include "worker/device_choice.h"

#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/host_identity.h"

namespace dlaunch::worker {
namespace {

std::vector<std::string> Entries(const std::string& list) {
  std::vector<std::string> out;
  for (absl::string_view e : absl::StrSplit(list, ',', absl::SkipWhitespace())) {
    out.emplace_back(absl::StripAsciiWhitespace(e));
  }
  return out;
}

absl::Status NoGpu(const DeviceRequest& req, const std::string& cause) {
  return absl::FailedPreconditionError(
      absl::StrCat("node ", req.host, ": --device cuda, but ", cause));
}

// Why a CUDA build sees no device, most specific first.
std::string NoDeviceCause(const DeviceRequest& req, const CudaProbe& probe) {
  if (req.cuda_visible_devices.has_value()) {
    const std::string v(absl::StripAsciiWhitespace(*req.cuda_visible_devices));
    if (v.empty() || v == "-1" || v == "NoDevFiles") {
      return absl::StrCat("CUDA_VISIBLE_DEVICES=\"", *req.cuda_visible_devices,
                          "\" hides every GPU");
    }
  }
  if (!probe.error.empty()) return absl::StrCat("the CUDA runtime finds no GPU: ", probe.error);
  return "the CUDA runtime finds no GPU";
}

// The device index of the rank: the position of its planned GPU in CUDA_VISIBLE_DEVICES (or the
// planned entry itself when that is unset), else LOCAL_RANK.
std::pair<int, std::string> PlannedIndex(const DeviceRequest& req) {
  const std::vector<std::string> planned = Entries(req.planned_gpus);
  if (!planned.empty()) {
    if (req.cuda_visible_devices.has_value()) {
      const std::vector<std::string> visible = Entries(*req.cuda_visible_devices);
      for (size_t i = 0; i < visible.size(); ++i) {
        if (visible[i] == planned[0]) {
          return {static_cast<int>(i), absl::StrCat("DLAUNCH_GPU=", req.planned_gpus,
                                                    ", CUDA_VISIBLE_DEVICES=",
                                                    *req.cuda_visible_devices)};
        }
      }
    } else if (int index = 0; absl::SimpleAtoi(planned[0], &index) && index >= 0) {
      return {index, absl::StrCat("DLAUNCH_GPU=", req.planned_gpus)};
    }
  }
  return {req.local_rank, absl::StrCat("LOCAL_RANK ", req.local_rank)};
}

}  // namespace

absl::StatusOr<DeviceChoice> ChooseDevice(const DeviceRequest& req, const CudaProbe& probe) {
  if (req.flag != "auto" && req.flag != "cpu" && req.flag != "cuda") {
    return absl::InvalidArgumentError(
        absl::StrCat("--device must be auto, cpu or cuda, got '", req.flag, "'"));
  }
  if (req.flag == "cpu") return DeviceChoice{DeviceKind::kCpu, 0, "cpu (--device cpu)"};
  if (!probe.built_with_cuda) {
    if (req.flag == "cuda") {
      return NoGpu(req, absl::StrCat("this dlaunch-worker is built on LibTorch ",
                                     probe.libtorch_version,
                                     " without CUDA (build it on a CUDA LibTorch: docs/worker.md)"));
    }
    return DeviceChoice{DeviceKind::kCpu, 0, "cpu (a LibTorch without CUDA)"};
  }
  if (probe.device_count <= 0) {
    if (req.flag == "cuda") return NoGpu(req, NoDeviceCause(req, probe));
    return DeviceChoice{DeviceKind::kCpu, 0, "cpu (no CUDA device)"};
  }
  const auto [index, from] = PlannedIndex(req);
  if (index >= probe.device_count) {
    return absl::FailedPreconditionError(absl::StrCat(
        "node ", req.host, ": ", from, " asks for CUDA device ", index, " but only ",
        probe.device_count, " ", probe.device_count == 1 ? "is" : "are", " visible",
        req.cuda_visible_devices ? absl::StrCat(" (CUDA_VISIBLE_DEVICES=",
                                                *req.cuda_visible_devices, ")")
                                 : ""));
  }
  return DeviceChoice{DeviceKind::kCuda, index, absl::StrCat("cuda:", index, " (", from, ")")};
}

DeviceRequest DeviceRequestFromEnv(const EnvLookup& lookup, std::string flag, int local_rank) {
  DeviceRequest req;
  req.flag = std::move(flag);
  req.local_rank = local_rank;
  req.cuda_visible_devices = lookup("CUDA_VISIBLE_DEVICES");
  req.planned_gpus = lookup("DLAUNCH_GPU").value_or("");
  req.host = ShortHostName(LocalHostName());
  return req;
}

}  // namespace dlaunch::worker
