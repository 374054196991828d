#!/usr/bin/env bash
# Unpacks Debian's environment-modules (Environment Modules 5.2, the Tcl `module` command) into a
# folder and prints the path of its modulecmd.tcl, so that the install test can load dlaunch's
# Tcl module file on a machine that has Lmod installed: Debian's lmod and environment-modules
# packages conflict, so only one of them can be installed. The .deb comes from apt (which checks
# its hash against the archive's index) and is unpacked with dpkg -x, never installed; it needs
# tclsh, which lmod depends on.
#   scripts/environment-modules.sh [DIR]     (default: ${BUILD_DIR:-build}/environment-modules)
# Use it as:  module() { eval "$(tclsh "$modulecmd" bash "$@")"; }
set -euo pipefail
cd "$(dirname "$0")/.."
DIR=${1:-${BUILD_DIR:-build}/environment-modules}
cmd=$(find "$DIR/root" -name modulecmd.tcl -path '*/lib/*-linux-gnu/*' 2>/dev/null | head -n 1 || true)
if [ -z "$cmd" ]; then
  mkdir -p "$DIR"
  rm -rf "$DIR/root" "$DIR"/environment-modules_*.deb
  # apt drops privileges to _apt for downloads, which cannot write into a root-owned folder.
  (cd "$DIR" && apt-get download -qq -o APT::Sandbox::User=root environment-modules)
  dpkg -x "$DIR"/environment-modules_*.deb "$DIR/root"
  cmd=$(find "$DIR/root" -name modulecmd.tcl -path '*/lib/*-linux-gnu/*' | head -n 1)
  [ -n "$cmd" ] || { echo "environment-modules: no modulecmd.tcl in the package" >&2; exit 3; }
fi
echo "$(cd "$(dirname "$cmd")" && pwd)/$(basename "$cmd")"
