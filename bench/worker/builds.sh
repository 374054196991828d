#!/usr/bin/env bash
# dlaunch-worker on two LibTorch builds, side by side on the CPU: Debian's 1.13 (build/) and
# PyTorch 2.x's CUDA LibTorch (build-torch2/, scripts/test-torch2.sh makes it) trained with Gloo.
# `dlaunch run` of 1 node x 2 ranks (each pinned to its own core by dlaunch), real Fashion-MNIST,
# STEPS steps, batch 64, alternating the two builds REPS times for the CNN and the MLP. Prints per
# run the job's samples/s (summary.json), then the medians and the 2.x / 1.13 ratio per model.
#
#   bench/worker/builds.sh          REPS=3 STEPS=300 OLD=build NEW=build-torch2
set -euo pipefail
cd "$(dirname "$0")/../.."
OLD=${OLD:-build}
NEW=${NEW:-build-torch2}
DLAUNCH=${DLAUNCH:-$OLD/bin/dlaunch}
REPS=${REPS:-3}
STEPS=${STEPS:-300}
OUT=${OUT:-$(mktemp -d /tmp/dlaunch-builds-bench.XXXXXX)}
for b in "$OLD" "$NEW"; do
  [ -x "$b/bin/dlaunch-worker" ] || { echo "builds.sh: $b/bin/dlaunch-worker not built" >&2; exit 2; }
done
[ -x "$DLAUNCH" ] || { echo "builds.sh: $DLAUNCH not built" >&2; exit 2; }
version() {  # the LibTorch a worker was built on, from the "trains on" line or its linkage
  readelf -d "$1/bin/dlaunch-worker" | grep -q 'libtorch_cuda' && echo "2.x CUDA" || echo "1.13 CPU"
}

printf '| run | model | build | samples/s |\n|---:|---|---|---:|\n'
for ((i = 1; i <= REPS; i++)); do
  for model in cnn mlp; do
    for b in "$OLD" "$NEW"; do
      worker=$(cd "$b/bin" && pwd)/dlaunch-worker
      dir="$OUT/$model-$(basename "$b")-$i"
      cat >"$dir.yaml" <<YAML
name: builds-bench
nodes: 1
nproc_per_node: 2
launcher: local
command: [$worker, --model, $model, --steps, $STEPS, --batch-size, 64, --report-every, 50,
          --no-eval, --device, cpu]
YAML
      "$DLAUNCH" run "$dir.yaml" --job-dir "$dir" >"$dir.out" 2>&1 ||
        { echo "builds.sh: run $dir failed; see $dir.out" >&2; exit 1; }
      sps=$(python3 -c 'import json,sys; print("%.1f" % json.load(open(sys.argv[1]))["samples_per_sec"])' "$dir/summary.json")
      printf '| %d | %s | %s (%s) | %s |\n' "$i" "$model" "$(basename "$b")" "$(version "$b")" "$sps"
      echo "$model $(basename "$b") $sps" >>"$OUT/samples"
    done
  done
done
python3 - "$OUT/samples" "$(basename "$OLD")" "$(basename "$NEW")" <<'PY'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1])]
old, new = sys.argv[2], sys.argv[3]
print()
for model in ("cnn", "mlp"):
    med = {b: statistics.median(float(s) for m, k, s in rows if m == model and k == b) for b in (old, new)}
    print(f"{model}: median samples/s {old} {med[old]:.1f}, {new} {med[new]:.1f}, "
          f"ratio {new}/{old} {med[new] / med[old]:.2f}")
PY
