# Fresh minimal Debian chroots for install_test.sh's full variant (sourced, not run): a user's
# node with only dlaunch's runtime packages and a module system, and a way to run a login
# session in one with an installed prefix mounted. Needs root and mmdebstrap.

CHROOT_SUITE=${CHROOT_SUITE:-bookworm}
CHROOT_MIRROR=${DLAUNCH_DEBIAN_MIRROR:-http://deb.debian.org/debian}
CHROOT_CACHE=${DLAUNCH_CHROOT_CACHE:-/var/cache/dlaunch/chroot}
# Part of the cache key: change it when the way a chroot is made changes.
CHROOT_RECIPE="minbase no-recommends opt/dlaunch home/session etc/hosts v2"

# The Debian packages that hold the shared libraries the given binaries load (ldd), one line.
# dpkg knows a file by the path its package installed, which since the /usr merge may be the
# /lib or the /usr/lib spelling of what ldd prints, so each library is asked for in every
# spelling, all in one dpkg call.
runtime_packages() {
  local libs lib owners pkg pkgs=()
  libs=$(ldd "$@" | awk '$2 == "=>" && $3 ~ /^\// {print $3}' | sort -u) || return 1
  owners=$(for lib in $libs; do spellings "$lib"; spellings "$(readlink -f "$lib")"; done |
           sort -u | xargs dpkg -S 2>/dev/null || true)
  for lib in $libs; do
    pkg=$(awk -F': ' -v a="$(spellings "$lib" "$(readlink -f "$lib")" | tr '\n' ' ')" \
            'index(" " a, " " $2 " ") {sub(/[:,].*/, "", $1); print $1; exit}' <<<"$owners")
    [ -n "$pkg" ] || { echo "runtime_packages: no Debian package holds $lib" >&2; return 1; }
    pkgs+=("$pkg")
  done
  printf '%s\n' "${pkgs[@]}" | sort -u | tr '\n' ' '
}

# A path in its /usr and its non-/usr spelling.
spellings() {
  local p
  for p in "$@"; do
    case $p in /usr/*) printf '%s\n%s\n' "$p" "${p#/usr}" ;; *) printf '%s\n%s\n' "$p" "/usr$p" ;; esac
  done
}

# Prints the path of a chroot holding exactly these packages (and Debian's minbase), made with
# mmdebstrap on the first call and kept under $CHROOT_CACHE, keyed by the package list. The
# downloaded .debs are kept beside it, so a chroot with another module system mostly reuses them.
cached_chroot() {
  local list key root debs
  list=$(printf '%s\n' "$@" | sort -u | tr '\n' ' ')
  key=$(printf '%s\n' "$CHROOT_SUITE" "$CHROOT_MIRROR" "$CHROOT_RECIPE" "$list" | sha256sum | cut -c1-16)
  root=$CHROOT_CACHE/$1-$key
  debs=$CHROOT_CACHE/debs
  mkdir -p "$CHROOT_CACHE" "$debs"
  (
    flock 9
    [ -e "$root/.dlaunch-chroot" ] && exit 0
    rm -rf "$root.new"
    echo "making $root: minbase + $(wc -w <<<"$list") packages" >&2
    mmdebstrap --quiet --variant=minbase --aptopt='APT::Install-Recommends "false"' \
      --include="$(tr ' ' ',' <<<"$list")" --skip=essential/unlink \
      --setup-hook='mkdir -p "$1"/var/cache/apt/archives/' \
      --setup-hook="sync-in $debs /var/cache/apt/archives/" \
      --customize-hook="sync-out /var/cache/apt/archives $debs" \
      --customize-hook='mkdir -p "$1"/opt/dlaunch "$1"/home/session && touch "$1"/etc/hosts' \
      "$CHROOT_SUITE" "$root.new" "$CHROOT_MIRROR" >&2 || exit 1
    echo "$list" >"$root.new/.dlaunch-chroot"
    mv "$root.new" "$root"
  ) 9>"$CHROOT_CACHE/.lock" || return 1
  echo "$root"
}

# Runs a command in the chroot as nobody, in a clean environment, with the prefix mounted
# read-only at /opt/dlaunch and the work folder at /home/session (its HOME). The mounts live in a
# private mount namespace, so they go with the command and the cached tree stays as it was.
#   run_in_chroot ROOT PREFIX WORK COMMAND...
run_in_chroot() {
  unshare --mount --propagation private -- bash -c '
    set -e
    root=$1 prefix=$2 work=$3; shift 3
    mount --bind "$prefix" "$root/opt/dlaunch"
    mount -o remount,bind,ro "$root/opt/dlaunch"
    mount --bind "$work" "$root/home/session"
    mount -t proc proc "$root/proc"
    mount -t tmpfs -o mode=1777 tmpfs "$root/tmp"
    mount -t tmpfs -o mode=1777 tmpfs "$root/dev/shm"
    mount --bind /etc/hosts "$root/etc/hosts"
    exec chroot --userspec=65534:65534 "$root" /usr/bin/env -i HOME=/home/session USER=nobody \
      LOGNAME=nobody PATH=/usr/local/bin:/usr/bin:/bin LANG=C.UTF-8 TERM=dumb "$@"
  ' run_in_chroot "$@"
}

# What a user's node would not have: the build tree, compilers, build tools, -dev packages.
# And what it must have: every library the installed binaries load.
#   chroot_checks ROOT PREFIX BUILD
chroot_checks() {
  local root=$1 prefix=$2 build=$3 t dev libs
  [ ! -e "$root$build" ] || fail "the chroot holds the build tree $build"
  for t in cmake ninja c++ g++ gcc cc ld make protoc grpc_cpp_plugin; do
    [ ! -e "$root/usr/bin/$t" ] || fail "the chroot has /usr/bin/$t: not a runtime package set"
  done
  dev=$(chroot "$root" dpkg-query -W -f '${Package}\n' | grep -E -- '-dev(:|$)' || true)
  [ -z "$dev" ] || fail "the chroot has development packages: $dev"
  libs=$(run_in_chroot "$root" "$prefix" "$tmp/home" sh -c 'ldd /opt/dlaunch/bin/*' 2>&1) ||
    fail "ldd in the chroot: $libs"
  ! grep -q 'not found' <<<"$libs" || fail "in the chroot, a library is not found: $libs"
  echo "chroot: $(chroot "$root" dpkg-query -W -f '${Package}\n' | wc -l) packages," \
       "$(du -sm "$root" | cut -f1) MB, no build tools, every library found"
}
