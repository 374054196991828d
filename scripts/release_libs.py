#!/usr/bin/env python3
"""Makes an installed dlaunch tree relocatable: copies into <tree>/lib every shared library its
executables load that a base Linux system does not provide, points their run paths there
($ORIGIN), and prints what it did as JSON (the libraries bundled, the highest GLIBC_, GLIBCXX_
and CXXABI_ symbol versions any file of the tree needs, and the glibc version its manylinux tag
can name: GLIBC_'s, or higher where the GLIBCXX_ needed is newer than that policy's libstdc++).

What counts as part of the base system is auditwheel's manylinux policy (its lib_whitelist):
glibc's libraries, libgcc_s, libstdc++, libz and libexpat. Everything else (gRPC, protobuf,
abseil, yaml-cpp, hwloc, OpenSSL, c-ares, re2, libudev, libatomic...) is bundled. The run paths
are DT_RPATH, not DT_RUNPATH (patchelf --force-rpath, as auditwheel does): an RPATH is searched
before LD_LIBRARY_PATH, so a conda environment's own libprotobuf or libssl on LD_LIBRARY_PATH
cannot replace the bundled copies the binaries were built against. The libraries keep their
names: they are loaded by dlaunch's own executables, never into a Python process that may hold
other copies, so auditwheel's renaming is not needed.

    scripts/release_libs.py TREE        (run where the binaries were built: ldd finds the libraries)
Standard library only; needs ldd, patchelf and objdump.
"""

import json
import os
import re
import shutil
import subprocess
import sys

# auditwheel's manylinux lib_whitelist and the dynamic loader itself, less libatomic.so.1: newer
# auditwheel lists it, but a minimal system (Debian's minbase, where the release is tested) does
# not have it, and gRPC needs it.
BASE_SYSTEM = {
    "libc.so.6", "libm.so.6", "libdl.so.2", "librt.so.1", "libpthread.so.0", "libutil.so.1",
    "libnsl.so.1", "libanl.so.1", "libresolv.so.2", "libgcc_s.so.1", "libstdc++.so.6",
    "libz.so.1", "libexpat.so.1", "ld-linux-x86-64.so.2",
    "libX11.so.6", "libXext.so.6", "libXrender.so.1", "libICE.so.6", "libSM.so.6", "libGL.so.1",
    "libgobject-2.0.so.0", "libgthread-2.0.so.0", "libglib-2.0.so.0",
}


# The libstdc++ stays the system's, so the tag must also promise one new enough: the oldest
# manylinux policy of auditwheel's (x86_64) whose GLIBCXX_ list reaches each version.
GLIBCXX_POLICY = [((3, 4, 19), (2, 17)), ((3, 4, 22), (2, 24)), ((3, 4, 28), (2, 31)),
                  ((3, 4, 30), (2, 35))]


def is_dynamic_elf(path):
    with open(path, "rb") as f:
        if f.read(4) != b"\x7fELF":
            return False
    out = subprocess.run(["objdump", "-p", path], capture_output=True, text=True).stdout
    return "NEEDED" in out


def loaded_libraries(path):
    """{soname: resolved path} of every library `path` loads, transitively (ldd)."""
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin")}  # no LD_LIBRARY_PATH
    out = subprocess.run(["ldd", path], capture_output=True, text=True, env=env, check=True).stdout
    libs = {}
    for line in out.splitlines():
        m = re.match(r"\s*(\S+) => (\S+)", line)
        if not m:
            continue
        if m.group(2) == "not":
            sys.exit(f"release_libs: {path} needs {m.group(1)}, which is not found")
        libs[m.group(1)] = m.group(2)
    return libs


def symbol_versions(path):
    """The versions (GLIBC_2.28, GLIBCXX_3.4.26...) of the symbols `path` takes from others."""
    out = subprocess.run(["objdump", "-T", path], capture_output=True, text=True, check=True).stdout
    return set(re.findall(r"\b((?:GLIBC|GLIBCXX|CXXABI)_[0-9.]+)\b", " ".join(
        line for line in out.splitlines() if "*UND*" in line)))


def highest(versions, prefix):
    """The highest of `versions` that starts with `prefix`_, as a tuple; () when none."""
    nums = [tuple(int(x) for x in v[len(prefix) + 1:].split(".")) for v in versions
            if v.startswith(prefix + "_")]
    return max(nums) if nums else ()


def dotted(version):
    return ".".join(map(str, version))


def tag_glibc(glibc, glibcxx):
    """The manylinux glibc version the tree can be tagged with: its own GLIBC_ need, raised to
    the first policy whose libstdc++ has the GLIBCXX_ version it needs."""
    for bound, policy in GLIBCXX_POLICY:
        if glibcxx <= bound:
            return max(glibc, policy)
    sys.exit(f"release_libs: GLIBCXX_{dotted(glibcxx)} is newer than any manylinux policy known here")


def patch(path, rpath):
    subprocess.run(["patchelf", "--remove-rpath", path], check=True)
    subprocess.run(["patchelf", "--force-rpath", "--set-rpath", rpath, path], check=True)


def main(tree):
    libdir = os.path.join(tree, "lib")
    exes = []
    for sub in ("bin", "libexec/dlaunch"):
        d = os.path.join(tree, sub)
        if os.path.isdir(d):
            exes += [os.path.join(d, f) for f in sorted(os.listdir(d))
                     if os.path.isfile(os.path.join(d, f)) and is_dynamic_elf(os.path.join(d, f))]
    if not exes:
        sys.exit(f"release_libs: no dynamically linked executable under {tree}/bin")
    bundled = {}
    for exe in exes:
        for soname, path in loaded_libraries(exe).items():
            if soname not in BASE_SYSTEM and not path.startswith(os.path.abspath(tree) + "/"):
                bundled[soname] = os.path.realpath(path)
    os.makedirs(libdir, exist_ok=True)
    for soname, path in sorted(bundled.items()):
        dest = os.path.join(libdir, soname)
        shutil.copyfile(path, dest)
        os.chmod(dest, 0o755)
        patch(dest, "$ORIGIN")
    for exe in exes:
        rel = os.path.relpath(libdir, os.path.dirname(exe))
        patch(exe, "$ORIGIN/" + rel)
    # Every file now loads its libraries from the tree or from the base system.
    versions = set()
    for f in exes + [os.path.join(libdir, s) for s in bundled]:
        for soname, path in loaded_libraries(f).items():
            if soname not in BASE_SYSTEM and not os.path.realpath(path).startswith(
                    os.path.realpath(libdir) + "/"):
                sys.exit(f"release_libs: {f} still loads {soname} from {path}")
        versions |= symbol_versions(f)
    json.dump({
        "executables": [os.path.relpath(e, tree) for e in exes],
        "bundled": {s: os.path.basename(p) for s, p in sorted(bundled.items())},
        "glibc": dotted(highest(versions, "GLIBC")),
        "glibcxx": dotted(highest(versions, "GLIBCXX")),
        "cxxabi": dotted(highest(versions, "CXXABI")),
        "tag_glibc": dotted(tag_glibc(highest(versions, "GLIBC"), highest(versions, "GLIBCXX"))),
    }, sys.stdout, indent=1)
    print()


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(sys.argv[1])
