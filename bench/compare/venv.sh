#!/usr/bin/env bash
# Makes the one virtual environment the comparisons with today's launchers run in: PyTorch 2.x
# (the pin of scripts/torch-venv.sh, the GPU machine's version), NVIDIA's resiliency extension
# (ft_launcher), DeepSpeed (its launcher only: no ops are built), TorchX and py-spy, all pinned,
# from PyPI, inside the build tree; never the system Python. Prints the versions it holds, one
# "name version" per line, and last the environment's python on a line of its own.
# Idempotent: quick when the pins are already there.
#   bench/compare/venv.sh [VENV_DIR]        (default: build-compare/venv)
set -euo pipefail
cd "$(dirname "$0")/../.."
VENV=${1:-build-compare/venv}
PINS=(
  "nvidia-resiliency-ext==0.4.1"
  "deepspeed==0.19.8"
  "torchx==0.7.0"
  "py-spy==0.4.3"
)
python=$(scripts/torch-venv.sh "$VENV")
missing=()
for pin in "${PINS[@]}"; do
  name=${pin%%==*}; want=${pin#*==}
  have=$("$python" -c "import importlib.metadata as m; print(m.version('$name'))" 2>/dev/null || true)
  [ "$have" = "$want" ] || missing+=("$pin")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "compare-venv: installing ${missing[*]} into $VENV" >&2
  # DeepSpeed's sdist would otherwise try to compile its CUDA ops at install time.
  DS_BUILD_OPS=0 DS_BUILD_AIO=0 DS_BUILD_SPARSE_ATTN=0 \
    "$python" -m pip install -q --disable-pip-version-check "${missing[@]}" >&2
fi
"$python" - <<'PY'
import importlib.metadata as m
for name in ("torch", "nvidia-resiliency-ext", "deepspeed", "torchx", "py-spy"):
    print(name, m.version(name))
PY
echo "$python"
