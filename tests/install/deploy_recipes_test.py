#!/usr/bin/env python3
"""Checks the Spack recipe and the Apptainer definition against the build's real dependencies,
without Spack or Apptainer (Debian packages neither).

The dependencies are read from the CMake files (find_package, pkg_check_modules, find_program);
DEPENDENCIES below says what each one is called in Debian and in Spack, so a new dependency fails
here until both recipes know it. The recipes of deploy/spack (a Spack package repository) are
imported with a stand-in `spack.package` module that records their directives.
tests/install/spack_test.sh builds them with a real Spack where there is one. deploy/container/dlaunch.def must install
its packages through scripts/install-deps.sh, with groups that hold every dependency, and copy
every folder the Release build reads.

    tests/install/deploy_recipes_test.py SOURCE_DIR
"""

import importlib.util
import re
import sys
import types
import unittest
from pathlib import Path

SRC = Path(sys.argv.pop(1) if len(sys.argv) > 1 else Path(__file__).resolve().parents[2])

# CMake name -> (Debian packages, Spack package or None, what the Spack dependency must say).
# "always": a link/run dependency of every build; "build": type="build"; "test": type="test";
# "+worker": only with the worker variant.
DEPENDENCIES = {
    "Threads": ((), None, None),
    # Optional: `dlaunch --version` names the commit with it, "unknown" without.
    "git": ((), None, None),
    "PkgConfig": (("pkg-config",), "pkgconfig", "build"),
    "Protobuf": (("libprotobuf-dev", "protobuf-compiler"), "protobuf", "always"),
    "grpc++": (("libgrpc++-dev",), "grpc", "always"),
    "grpc_cpp_plugin": (("protobuf-compiler-grpc",), "grpc", "always"),
    "absl": (("libabsl-dev",), "abseil-cpp", "always"),
    "yaml-cpp": (("libyaml-cpp-dev",), "yaml-cpp", "always"),
    "Boost": (("libboost-dev",), "boost", "always"),
    "hwloc": (("libhwloc-dev",), "hwloc", "always"),
    # The control channel's per-job TLS key and certificate (libcrypto).
    "OpenSSL": (("libssl-dev",), "openssl", "always"),
    # dlaunch_worker_core (checkpoint files) is built with or without LibTorch.
    "ZLIB": (("zlib1g-dev",), "zlib-api", "always"),
    "GTest": (("libgtest-dev", "libgmock-dev"), "googletest", "test"),
    # Debian's libtorch-dev needs libgloo-dev for the Gloo headers.
    "Torch": (("libtorch-dev", "libgloo-dev"), "py-torch", "+worker"),
}
# Not found through CMake: the toolchain, and the header-only kainjow/mustache (its recipe is in
# deploy/spack beside dlaunch's, as Spack's builtin repository has none).
TOOLCHAIN = {"cxx": ("build-essential",), "cmake": ("cmake",), "kainjow-mustache": ()}
MUSTACHE_DEBIAN = "libkainjow-mustache-dev"


def cmake_dependencies():
    """Names of what the non-test CMake files look for, with the file that looks."""
    found = {}
    pattern = re.compile(
        r"\b(?:find_package\(\s*([\w+-]+)|pkg_check_modules\(\s*\w+[^)]*?IMPORTED_TARGET\s+([\w+-]+)"
        r"|find_program\(\s*\w+\s+([\w+-]+))")
    for cmake in sorted(SRC.rglob("CMakeLists.txt")) + sorted(SRC.rglob("*.cmake")):
        rel = cmake.relative_to(SRC)
        if rel.parts[0] in ("tests", "bench") or rel.parts[0].startswith(("build", ".")):
            continue
        for match in pattern.finditer(cmake.read_text()):
            found[next(g for g in match.groups() if g)] = str(rel)
    return found


class Directive:
    def __init__(self, recorder, name):
        self.recorder, self.name = recorder, name

    def __call__(self, *args, **kwargs):
        self.recorder.append((self.name, args, kwargs))


def load_spack_recipe(package="dlaunch"):
    """Imports deploy/spack's recipe of `package` with a stand-in spack.package; returns (the
    recipe's class, its recorded directives)."""
    calls = []
    stub = types.ModuleType("spack.package")
    for name in ("version", "variant", "depends_on", "conflicts", "resource", "patch",
                 "provides", "requires", "license", "maintainers"):
        setattr(stub, name, Directive(calls, name))

    class CMakePackage:
        def define(self, name, value):
            return (name, value)

    class InstallError(Exception):
        pass

    stub.CMakePackage = CMakePackage
    stub.Package = type("Package", (), {})
    stub.mkdirp = stub.install = lambda *a, **k: None
    stub.InstallError = InstallError
    stub.join_path = lambda *parts: "/".join(parts)
    stub.run_after = lambda *a, **k: (lambda f: f)
    stub.run_before = stub.run_after
    stub.on_package_attributes = lambda **k: (lambda f: f)
    stub.__all__ = [n for n in vars(stub) if not n.startswith("_")]
    spack = types.ModuleType("spack")
    spack.package = stub
    saved = {k: sys.modules.get(k) for k in ("spack", "spack.package")}
    sys.modules.update({"spack": spack, "spack.package": stub})
    try:
        spec = importlib.util.spec_from_file_location(
            "spack_recipe_" + package.replace("-", "_"),
            SRC / "deploy/spack/packages" / package / "package.py")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    finally:
        for k, v in saved.items():
            if v is None:
                sys.modules.pop(k, None)
            else:
                sys.modules[k] = v
    name = "".join(part.capitalize() for part in package.split("-"))
    return getattr(module, name), calls


def install_deps_groups():
    """scripts/install-deps.sh's GROUP table: group -> set of packages."""
    text = (SRC / "scripts/install-deps.sh").read_text()
    return {g: set(pkgs.split()) for g, pkgs in re.findall(r'GROUP\[(\w+)\]="([^"]*)"', text)}


def def_sections(text):
    """An Apptainer definition's %sections: name -> body."""
    sections, name = {}, None
    for line in text.splitlines():
        m = re.match(r"%(\w+)\s*$", line)
        if m:
            name = m.group(1)
            sections[name] = []
        elif name:
            sections[name].append(line)
    return {k: "\n".join(v) for k, v in sections.items()}


class CMakeDependenciesTest(unittest.TestCase):
    def test_every_cmake_dependency_is_in_the_table_and_every_row_is_used(self):
        found = cmake_dependencies()
        self.assertIn("Protobuf", found)  # the scan itself works
        unknown = {n: f for n, f in found.items() if n not in DEPENDENCIES}
        self.assertEqual(unknown, {}, "new CMake dependencies: add them to DEPENDENCIES, to "
                         "deploy/spack/packages/dlaunch/package.py and to scripts/install-deps.sh")
        self.assertEqual(sorted(set(DEPENDENCIES) - set(found)), [],
                         "DEPENDENCIES names what no CMake file looks for any more")


class SpackRecipeTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.cls, cls.calls = load_spack_recipe()
        cls.depends = {}
        for name, args, kwargs in cls.calls:
            if name == "depends_on":
                spec = args[0]
                pkg = re.match(r"[\w-]+", spec).group(0)
                cls.depends.setdefault(pkg, []).append((spec, kwargs))

    def test_is_a_cmake_package_with_a_version(self):
        self.assertEqual(self.cls.__name__, "Dlaunch")
        self.assertIn("cmake_args", vars(self.cls))
        self.assertTrue(any(n == "version" for n, _, _ in self.calls))
        self.assertTrue(any(n == "variant" and a[0] == "worker" for n, a, _ in self.calls))

    def test_depends_on_exactly_the_builds_dependencies(self):
        want = {s for _, s, _ in DEPENDENCIES.values() if s} | set(TOOLCHAIN)
        self.assertEqual(sorted(self.depends), sorted(want))

    def test_dependency_types_and_conditions(self):
        for cmake, (_, spack, kind) in DEPENDENCIES.items():
            if not spack:
                continue
            with self.subTest(cmake=cmake, spack=spack):
                for spec, kwargs in self.depends[spack]:
                    when, dtype = kwargs.get("when"), kwargs.get("type")
                    if kind == "+worker":
                        self.assertEqual(when, "+worker")
                    else:
                        self.assertIsNone(when, f"{spec}: needed by every build, not only {when}")
                    if kind in ("build", "test"):
                        self.assertEqual(dtype, kind, spec)
                    else:
                        self.assertNotIn(dtype, ("build", "test"), f"{spec} is linked, not {dtype}")
        for tool in TOOLCHAIN:
            self.assertEqual([k.get("type") for _, k in self.depends[tool]], ["build"])

    def test_mustache_comes_from_the_recipe_beside_it(self):
        self.assertEqual([n for n, _, _ in self.calls if n == "resource"], [],
                         "a resource is fetched at build time and cannot be an external")
        cls, calls = load_spack_recipe("kainjow-mustache")
        self.assertIn("install", vars(cls))
        versions = [(a, k) for n, a, k in calls if n == "version"]
        self.assertEqual([a[0] for a, _ in versions], ["4.1"])
        self.assertRegex(versions[0][1].get("commit", ""), r"^[0-9a-f]{40}$",
                         "a git version is pinned to its commit")
        repo = (SRC / "deploy/spack/repo.yaml").read_text()
        self.assertRegex(repo, r"namespace:\s*dlaunch\b")

    def test_cmake_args_build_the_worker_only_with_the_variant(self):
        class Spec:
            def __init__(self, worker):
                self.worker = worker

            def satisfies(self, s):
                return s == "+worker" and self.worker

        for worker in (False, True):
            pkg = self.cls()
            pkg.spec = Spec(worker)
            pkg.run_tests = False
            pkg.stage = types.SimpleNamespace(source_path="/stage")
            torch = types.SimpleNamespace(cmake_prefix_paths=["/torch/share/cmake"])
            Spec.__getitem__ = lambda self, name: types.SimpleNamespace(
                package=torch) if name == "py-torch" else None
            args = dict(pkg.cmake_args())
            self.assertEqual(args["DLAUNCH_BUILD_WORKER"], "ON" if worker else "OFF")
            self.assertEqual(args["DLAUNCH_BUILD_TESTS"], False)
            self.assertEqual("Torch_DIR" in args, worker)


class ApptainerDefinitionTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.text = (SRC / "deploy/container/dlaunch.def").read_text()
        cls.sections = def_sections(cls.text)
        cls.groups = install_deps_groups()

    def post_commands(self):
        return "\n".join(l for l in self.sections["post"].splitlines()
                         if not l.strip().startswith("#"))

    def install_deps_calls(self):
        return re.findall(r"scripts/install-deps\.sh((?:[ \t]+[\w-]+)*)", self.post_commands())

    def test_packages_come_from_install_deps_only(self):
        calls = self.install_deps_calls()
        self.assertEqual(len(calls), 1, "%post runs scripts/install-deps.sh once, with its groups")
        self.assertNotRegex(self.post_commands(), r"apt(-get)?\s+install",
                            "packages outside scripts/install-deps.sh")
        self.assertRegex(self.post_commands(), r"SKIP_DEPS=1\s.*deploy/install\.sh")

    def test_its_groups_hold_every_build_and_worker_dependency(self):
        groups = self.install_deps_calls()[0].split()
        for g in groups:
            self.assertIn(g, self.groups, f"install-deps.sh has no group {g}")
        packages = set().union(*(self.groups[g] for g in groups))
        need = {MUSTACHE_DEBIAN}.union(*TOOLCHAIN.values())
        for debian, _, kind in DEPENDENCIES.values():
            if kind != "test":
                need.update(debian)
        self.assertEqual(sorted(need - packages), [])
        # The image builds the worker, so it must fail rather than quietly leave it out.
        self.assertRegex(self.post_commands(), r"DLAUNCH_BUILD_WORKER=ON")

    def test_files_copy_every_folder_the_release_build_reads(self):
        copied = {line.split()[0] for line in self.sections["files"].splitlines() if line.strip()}
        top = (SRC / "CMakeLists.txt").read_text()
        # Leave out what only a build with tests reads.
        top = re.sub(r"if\(DLAUNCH_BUILD_TESTS\)\n\s+add_subdirectory.*?endif\(\)", "", top,
                     flags=re.S)
        need = {"CMakeLists.txt", "scripts", "deploy"}
        need |= {d.split("/")[0] for d in re.findall(r"add_subdirectory\((\S+?)\)", top)}
        need |= {d.split("/")[0] for d in re.findall(r"install\(DIRECTORY (\S+?)/", top)}
        self.assertNotIn("tests", need)
        self.assertEqual(sorted(need - copied), [])
        for path in copied:
            self.assertTrue((SRC / path).exists(), f"%files names {path}, which does not exist")

    def test_runscript_and_test_run_dlaunch(self):
        self.assertIn('exec dlaunch "$@"', self.sections["runscript"])
        self.assertIn("dlaunch script /usr/local/share/dlaunch/examples/local.yaml",
                      self.sections["test"])
        self.assertTrue((SRC / "examples/local.yaml").exists())


if __name__ == "__main__":
    unittest.main(verbosity=2)
