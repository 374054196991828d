#!/usr/bin/env bash
# Installs the Debian packages dlaunch needs. Idempotent: when everything is present it
# only runs dpkg-query and returns in well under a second.
#   scripts/install-deps.sh [build] [worker] [test] [cluster] [bench] [study] [stacks] [release]
#                           [torch2] [fuzz]
#                           [grpc-source]
#   (default: all but torch2, fuzz and grpc-source)
set -euo pipefail

declare -A GROUP
GROUP[build]="build-essential cmake ninja-build pkg-config git ca-certificates ccache
  libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler libabsl-dev libssl-dev
  libboost-dev libyaml-cpp-dev libkainjow-mustache-dev procps libhwloc-dev hwloc-nox"
GROUP[worker]="libtorch-dev libgloo-dev zlib1g-dev dataset-fashion-mnist"
GROUP[test]="libgtest-dev libgmock-dev python3 python3-torch gdb gnuplot-nox
  chromium-headless-shell lmod mmdebstrap"
GROUP[cluster]="iproute2 util-linux munge slurmctld slurmd slurm-client openmpi-bin mpich"
GROUP[bench]="python3-torch hyperfine"
# scripts/release-tarball.sh: patchelf sets the bundled libraries' run paths (objdump and strip are
# build-essential's binutils); tests/install/release_test.sh installs the wheel into a venv.
GROUP[release]="patchelf python3-venv"
# scripts/py-spy.sh: a venv for py-spy, which takes the Python stacks of hung ranks.
GROUP[stacks]="python3 python3-venv"
# The PyTorch 2.x build of dlaunch-worker (scripts/torch-venv.sh, scripts/test-torch2.sh): a venv
# for the wheel, binutils for the linkage check, curl and xz for scripts/nvml-library.sh. Not part
# of the default set.
GROUP[torch2]="python3-venv binutils curl xz-utils"
# scripts/fuzz.sh: clang with libFuzzer and the sanitizers' runtimes. Not part of the default set.
GROUP[fuzz]="clang libclang-rt-dev"
# scripts/grpc-from-debian-source.sh: dpkg-source unpacks Debian's source packages (xz), and
# gRPC's CMake links its code-generator support library even with the generators off. Not part
# of the default set.
GROUP[grpc-source]="dpkg-dev xz-utils libprotoc-dev"
# `dlaunch scale` draws its plots with gnuplot (pngcairo and svg terminals, no X).
GROUP[study]="gnuplot-nox"

groups=("$@")
[ ${#groups[@]} -gt 0 ] || groups=(build worker test cluster bench study stacks release)

want=()
for g in "${groups[@]}"; do
  [ -n "${GROUP[$g]:-}" ] || { echo "install-deps: unknown group '$g'" >&2; exit 2; }
  for p in ${GROUP[$g]}; do want+=("$p"); done
done

missing=()
for p in "${want[@]}"; do
  status=$(dpkg-query -W -f='${db:Status-Abbrev}' "$p" 2>/dev/null || true)
  [[ "$status" == ii* ]] || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

if [ "$(id -u)" -ne 0 ]; then
  SUDO=sudo
  command -v sudo >/dev/null || { echo "install-deps: need root to install: ${missing[*]}" >&2; exit 3; }
else
  SUDO=
fi
echo "install-deps: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
# Daemons from these packages must not start on install (the tests start their own).
if [ ! -e /usr/sbin/policy-rc.d ] && [ -z "$SUDO" ]; then
  printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d && chmod +x /usr/sbin/policy-rc.d
fi
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
