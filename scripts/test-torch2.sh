#!/usr/bin/env bash
# The second build of dlaunch-worker, on PyTorch 2.x's CUDA LibTorch (with NCCL), and its tests.
# Where nvcc is absent it says so in one line and does nothing else. .ci/run runs it after
# scripts/test.sh, whose Debian build (LibTorch 1.13, CPU) it tests against.
#   scripts/test-torch2.sh [ctest args...]
#
# On this build, without a GPU: the worker's pure tests; the process tests on the CPU with Gloo
# (bit-identical DDP, checkpoint save/load and bit-identical resume, a restarted dlaunch job
# resuming, a quick Fashion-MNIST accuracy check); both builds side by side (the same CNN loss
# curve, checkpoints crossing builds); --device cuda failing before training; the agent's NVML
# loader against NVIDIA's real NVML library on a machine without the driver; and the linkage
# check: the binary needs ProcessGroupNCCL and the CUDA runtime. Then (label torch2) unmodified
# PyTorch 2.x programs under dlaunch: what torchrun 2.x gives each rank, rank by rank beside
# torchrun itself, the worker server socket, and a @record error file in the root cause; and the
# Python package's Lightning and Hugging Face callbacks (label python).
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v nvcc >/dev/null && [ ! -x /usr/local/cuda/bin/nvcc ]; then
  echo "test-torch2: nvcc not found: skipping the PyTorch 2.x CUDA build of dlaunch-worker"
  exit 0
fi
scripts/install-deps.sh build worker test torch2
export BUILD_DIR=build-torch2
python=$(scripts/torch-venv.sh "$BUILD_DIR/venv")
# The torch2 tests run their PyTorch programs with this python.
export DLAUNCH_TORCH2_PYTHON=$(realpath -s "$python")  # -s: a venv python is a symlink
start=$(date +%s)
scripts/build.sh --torch-python "$python" dlaunch-worker worker_test worker_process_test agent_health_test \
  torch2_launcher_test
echo "test-torch2: build took $(( $(date +%s) - start )) s"
scripts/worker-linkage.sh "$BUILD_DIR/bin/dlaunch-worker" --expect-cuda

# The Debian build, when scripts/test.sh made it, is the other build of the side-by-side tests.
if [ -x build/bin/dlaunch-worker ]; then
  export DLAUNCH_OTHER_WORKER_BIN=$PWD/build/bin/dlaunch-worker
else
  echo "test-torch2: build/bin/dlaunch-worker not built: the side-by-side tests are skipped"
fi
# NVIDIA's own NVML library, unpacked (not installed): loads, and says the driver is not loaded.
nvml=$(scripts/nvml-library.sh "$BUILD_DIR/nvml") && export DLAUNCH_NVML_LIBRARY=$PWD/$nvml ||
  echo "test-torch2: could not fetch libnvidia-ml1: the NVML library test is skipped"
cd "$BUILD_DIR"
# The 2-epoch accuracy run is left to the Debian suite; the quick one runs here.
DLAUNCH_QUICK_TESTS=1 ctest --output-on-failure --timeout 900 -L worker "$@"
ctest --output-on-failure --timeout 120 -R "GpuMonitor" "$@"
ctest --output-on-failure --timeout 900 -L torch2 "$@"
# The Python package's Lightning and Hugging Face callbacks, in this environment (label python);
# scripts/test.sh ran before it existed and skipped them.
cd ..
if scripts/python-test-venv.sh "$BUILD_DIR/venv" >/dev/null; then
  (cd "$BUILD_DIR" && ctest --output-on-failure --timeout 600 -L python "$@")
else
  echo "test-torch2: lightning and transformers could not be installed: the callbacks' tests skip"
fi
# The stall tests that ask a PyTorch 2.x rank's worker server for its stacks and its flight
# recorder (integration_test of the Debian build): scripts/test.sh ran them before this
# environment existed, and they skipped.
if [ -x build/bin/integration_test ]; then
  (cd build && ctest --output-on-failure --timeout 900 \
    -R "APyTorchRankServingItsStacks|TheFlightRecordersName" "$@")
fi
