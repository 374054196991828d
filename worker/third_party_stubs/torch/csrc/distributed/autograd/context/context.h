// Declaration-only stand-in for a header that Debian's libtorch-dev 1.13 references from
// torch/csrc/distributed/c10d/reducer.hpp but does not ship. The Reducer only names these two
// types in signatures that dlaunch-worker never calls (distributed autograd / RPC), so the
// declarations are enough to compile and link. Added to the include path only for LibTorch 1.x.
#pragma once

#include <functional>
#include <memory>

#include <ATen/core/Tensor.h>

namespace torch {
namespace distributed {
namespace autograd {

class DistAutogradContext {
 public:
  using GradCallback = std::function<bool(at::Tensor&)>;
};
using ContextPtr = std::shared_ptr<DistAutogradContext>;

}  // namespace autograd
}  // namespace distributed
}  // namespace torch
