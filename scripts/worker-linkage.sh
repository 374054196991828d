#!/usr/bin/env bash
# Shows which LibTorch a dlaunch-worker binary was linked against and what it needs from it:
# the shared libraries, and how many of its undefined symbols are NCCL process-group (c10d
# ProcessGroupNCCL), CUDA runtime and Gloo ones.
#   scripts/worker-linkage.sh BIN [--expect-cuda]
# With --expect-cuda it fails unless the binary needs ProcessGroupNCCL and the CUDA runtime.
set -euo pipefail
bin=${1:?usage: worker-linkage.sh BIN [--expect-cuda]}
expect=${2:-}
needed=$(readelf -d "$bin" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | grep -E 'torch|c10|cuda|nccl' | tr '\n' ' ')
undef=$(nm -D --undefined-only "$bin" | awk '{print $2}' | c++filt)
nccl=$(grep -c 'c10d::ProcessGroupNCCL' <<<"$undef" || true)
cuda=$(grep -cE '^cuda[A-Z]|c10::cuda::' <<<"$undef" || true)
gloo=$(grep -c 'c10d::ProcessGroupGloo' <<<"$undef" || true)
echo "worker-linkage: $bin"
echo "  needs: $needed"
echo "  undefined symbols: $nccl c10d::ProcessGroupNCCL, $cuda CUDA runtime/c10::cuda, $gloo c10d::ProcessGroupGloo"
grep -E 'c10d::ProcessGroupNCCL::ProcessGroupNCCL|^cudaGetDeviceCount|c10::cuda::set_device' <<<"$undef" \
  | sed 's/^/    /' | head -n 5
if [ "$expect" = "--expect-cuda" ] && { [ "$nccl" -eq 0 ] || [ "$cuda" -eq 0 ]; }; then
  echo "worker-linkage: expected a CUDA build with NCCL, but the binary needs neither" >&2
  exit 1
fi
