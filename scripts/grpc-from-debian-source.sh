#!/usr/bin/env bash
# Builds the Debian release of abseil and gRPC that dlaunch links against, from Debian's own
# source packages (the same versions as the installed -dev packages, with Debian's patches),
# into a prefix of their own, and prints that prefix. Built once per flavour and version pair
# (the prefix holds `.done` when whole); about 18 minutes on 2 cores.
#   scripts/grpc-from-debian-source.sh tsan      under ThreadSanitizer (-O1). Debian's binaries
#       are not instrumented: TSan cannot see the completion queue's and absl::Mutex's
#       synchronisation inside them. `scripts/sanitize.sh tsan` links this one.
#   scripts/grpc-from-debian-source.sh release   -O2 with NDEBUG. Debian builds gRPC without
#       NDEBUG, and its completion queue then checks every completed operation against every
#       outstanding one (docs/BENCHMARKS.md, the control plane at 10,000 agents). A launcher
#       for thousands of agents links this one: `GRPC_RELEASE=1 deploy/install.sh`.
# GRPC_PREFIX overrides the prefix (default: ~/.cache/dlaunch/grpc-FLAVOUR/grpc-V-absl-V).
set -euo pipefail

flavour=${1:-}
case "$flavour" in
  tsan) flags="-fsanitize=thread -O1 -g1 -fno-omit-frame-pointer" ldflags=-fsanitize=thread ;;
  release) flags="-O2 -g1 -DNDEBUG" ldflags="" ;;
  *) echo "usage: scripts/grpc-from-debian-source.sh tsan|release" >&2; exit 2 ;;
esac
"$(dirname "$0")/install-deps.sh" build grpc-source >&2
grpc_ver=$(dpkg-query -W -f='${source:Version}' libgrpc++-dev)
absl_ver=$(dpkg-query -W -f='${source:Version}' libabsl-dev)
cache=${XDG_CACHE_HOME:-$HOME/.cache}/dlaunch
prefix=${GRPC_PREFIX:-$cache/grpc-$flavour/grpc-$grpc_ver-absl-$absl_ver}
if [ -f "$prefix/.done" ]; then echo "$prefix"; exit 0; fi

jobs=${JOBS:-$(nproc)}
work="$prefix.src"
rm -rf "$work" "$prefix"
mkdir -p "$work/lists/partial" "$work/sources"
# Debian's source index, in a private apt state: the system's sources list is left as it is.
codename=$(. /etc/os-release && echo "$VERSION_CODENAME")
cat > "$work/sources/debian-src.sources" <<EOF
Types: deb-src
URIs: http://deb.debian.org/debian
Suites: $codename $codename-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOF
apt_opts=(-o Dir::Etc::SourceList=/dev/null -o "Dir::Etc::SourceParts=$work/sources"
  -o "Dir::State::Lists=$work/lists" -o APT::Sandbox::User=root)
{
  apt-get "${apt_opts[@]}" update
  # dpkg-source -x unpacks each source with Debian's patches applied.
  (cd "$work" && apt-get "${apt_opts[@]}" source "abseil=$absl_ver" "grpc=$grpc_ver")
} >&2

# Shared libraries, as Debian ships them, so that every test binary and each library between
# them share one copy of absl's and gRPC's globals.
common=(-G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_INSTALL_PREFIX="$prefix"
  -DCMAKE_INSTALL_LIBDIR=lib -DBUILD_SHARED_LIBS=ON -DCMAKE_POSITION_INDEPENDENT_CODE=ON
  -DCMAKE_CXX_STANDARD=17 -DCMAKE_C_FLAGS_RELWITHDEBINFO="$flags"
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="$flags" -DCMAKE_EXE_LINKER_FLAGS="$ldflags"
  -DCMAKE_SHARED_LINKER_FLAGS="$ldflags")
absl_src=$(find "$work" -mindepth 1 -maxdepth 1 -type d -name 'abseil-*' | head -1)
grpc_src=$(find "$work" -mindepth 1 -maxdepth 1 -type d -name 'grpc-*' | head -1)
{
  cmake -S "$absl_src" -B "$work/absl-build" "${common[@]}" -DABSL_PROPAGATE_CXX_STD=ON \
    -DBUILD_TESTING=OFF
  cmake --build "$work/absl-build" -j "$jobs"
  cmake --install "$work/absl-build"
  # Every other dependency (protobuf, c-ares, re2, OpenSSL, zlib) is Debian's: gRPC's data does
  # not cross threads through them. The code generators are Debian's too (same version).
  cmake -S "$grpc_src" -B "$work/grpc-build" "${common[@]}" -DCMAKE_PREFIX_PATH="$prefix" \
    -DgRPC_INSTALL=ON -DgRPC_BUILD_TESTS=OFF -DgRPC_ABSL_PROVIDER=package \
    -DgRPC_CARES_PROVIDER=package -DgRPC_PROTOBUF_PROVIDER=package -DgRPC_RE2_PROVIDER=package \
    -DgRPC_SSL_PROVIDER=package -DgRPC_ZLIB_PROVIDER=package -DgRPC_BUILD_CODEGEN=OFF \
    -DgRPC_BUILD_CSHARP_EXT=OFF -DgRPC_BACKWARDS_COMPATIBILITY_MODE=OFF
  cmake --build "$work/grpc-build" -j "$jobs"
  cmake --install "$work/grpc-build"
} >&2
touch "$prefix/.done"
rm -rf "$work"
echo "$prefix"
