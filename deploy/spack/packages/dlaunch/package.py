# Spack recipe for dlaunch, in the package repository deploy/spack (`spack repo add deploy/spack`).
# Built from a checkout, in a Spack environment (deploy/README.md, "Spack", has the tested lines):
#
#   spack develop --path /path/to/dlaunch dlaunch@main
#   spack install
#
# Needs Spack 0.22 or newer (language dependencies, zlib-api). The project has no published
# release archive yet, so the only version is the branch, built from a checkout; add
# version("0.1.0", sha256=...) with a release tarball's URL once there is one.

import os

from spack.package import *


class Dlaunch(CMakePackage):
    """Job launcher for distributed (DDP) deep-learning training on HPC systems: renders and
    submits PBS Pro, Cobalt and Slurm batch scripts, starts one agent per node, rendezvous over
    gRPC, spawns workers with torchrun-compatible environment variables and streams their health
    and throughput back. The optional dlaunch-worker is a LibTorch DDP trainer."""

    version("main", branch="main")

    variant("worker", default=False,
            description="Build dlaunch-worker, the LibTorch DDP trainer (needs PyTorch)")

    depends_on("cxx", type="build")
    depends_on("cmake@3.22:", type="build")
    depends_on("pkgconfig", type="build")  # gRPC's C++ library is found through grpc++.pc

    depends_on("grpc@1.51:")      # libraries, and grpc_cpp_plugin at build time
    depends_on("protobuf@3.21:")  # libprotobuf and protoc
    depends_on("abseil-cpp@20220623:")
    depends_on("boost@1.74:")     # header-only parts (Asio); no compiled Boost library is used
    depends_on("yaml-cpp@0.7:")
    depends_on("hwloc@2:")        # the agent reads the node's topology for placement (hwloc.pc)
    depends_on("openssl@3:")      # the control channel's per-job TLS key and certificate
    # The worker's LibTorch-free core (checkpoint files) is built with or without +worker.
    depends_on("zlib-api")
    depends_on("googletest@1.12: +gmock", type="test")

    # The worker links LibTorch through Torch's CMake package, which py-torch installs under
    # its site-packages. A site LibTorch (e.g. from a framework module) can instead be declared
    # as an external py-torch in packages.yaml.
    depends_on("py-torch@1.13: +distributed", when="+worker")

    # The batch-script renderer's header-only template engine; Spack's builtin repository has no
    # package for it, this repository does (packages/kainjow-mustache), and it can be an external.
    depends_on("kainjow-mustache@4.1:", type="build")

    def cmake_args(self):
        spec = self.spec
        args = [
            self.define("DLAUNCH_BUILD_TESTS", self.run_tests),
            self.define("DLAUNCH_BUILD_WORKER", "ON" if spec.satisfies("+worker") else "OFF"),
        ]
        if spec.satisfies("+worker"):
            torch_cmake = join_path(spec["py-torch"].package.cmake_prefix_paths[0], "Torch")
            args.append(self.define("Torch_DIR", torch_cmake))
        return args

    @run_after("install")
    def check_installed_templates(self):
        # dlaunch finds its templates relative to its own executable.
        templates = join_path(self.prefix.share, "dlaunch", "templates")
        if not os.path.isfile(join_path(templates, "pbs.sh.mustache")):
            raise InstallError("templates were not installed in " + templates)

    def setup_run_environment(self, env):
        env.append_path("DLAUNCH_SITE_PATH", join_path(self.prefix, "etc", "dlaunch", "sites"))
