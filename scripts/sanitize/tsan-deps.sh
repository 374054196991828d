#!/usr/bin/env bash
# Builds the Debian release of abseil and gRPC that dlaunch links against, from Debian's own
# source packages (the same versions as the installed -dev packages, with Debian's patches),
# under ThreadSanitizer, into a prefix of their own; prints that prefix. Debian's binaries are
# not instrumented: TSan cannot see the completion queue's and absl::Mutex's synchronisation
# inside them, so every gRPC operation completed on another thread looks like a race to it.
# Built once per version pair (about an hour on 2 cores; the prefix holds `.done` when whole);
# `scripts/sanitize.sh tsan` calls it and links the tests against the prefix.
#   scripts/sanitize/tsan-deps.sh            build if missing, print the prefix
# TSAN_DEPS overrides the prefix (default: ~/.cache/dlaunch/tsan-deps/grpc-V-absl-V).
set -euo pipefail

grpc_ver=$(dpkg-query -W -f='${source:Version}' libgrpc++-dev)
absl_ver=$(dpkg-query -W -f='${source:Version}' libabsl-dev)
prefix=${TSAN_DEPS:-${XDG_CACHE_HOME:-$HOME/.cache}/dlaunch/tsan-deps/grpc-$grpc_ver-absl-$absl_ver}
if [ -f "$prefix/.done" ]; then echo "$prefix"; exit 0; fi

# gRPC's CMake links its code-generator support library even when the generators are not built.
dpkg -s libprotoc-dev >/dev/null 2>&1 || DEBIAN_FRONTEND=noninteractive apt-get install -y -q libprotoc-dev >&2

flags="-fsanitize=thread -O1 -g1 -fno-omit-frame-pointer"
jobs=${JOBS:-$(nproc)}
work="$prefix.src"
rm -rf "$work" "$prefix"
mkdir -p "$work/lists/partial" "$work/sources"
# Debian's source index, in a private apt state: the system's sources list is left as it is.
cat > "$work/sources/debian-src.sources" <<'EOF'
Types: deb-src
URIs: http://deb.debian.org/debian
Suites: bookworm bookworm-updates
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
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="$flags" -DCMAKE_EXE_LINKER_FLAGS=-fsanitize=thread
  -DCMAKE_SHARED_LINKER_FLAGS=-fsanitize=thread)
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
