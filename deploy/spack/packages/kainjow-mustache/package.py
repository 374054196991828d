# Spack recipe for kainjow/mustache, the one-header template engine dlaunch renders batch scripts
# with. Spack's builtin repository has no package for it. Sites with Debian's or Ubuntu's
# libkainjow-mustache-dev can declare it as an external (prefix /usr) instead of fetching it.

from spack.package import *


class KainjowMustache(Package):
    """Mustache text templates for modern C++, in a single header (kainjow/mustache.hpp)."""

    homepage = "https://github.com/kainjow/Mustache"
    git = "https://github.com/kainjow/Mustache.git"

    license("BSL-1.0")

    version("4.1", tag="v4.1", commit="c66fdd87f01f0b2d1ba704192f27355b77746a5b")

    def install(self, spec, prefix):
        # Installed where Debian puts it, so `#include <kainjow/mustache.hpp>` reads the same.
        mkdirp(prefix.include.kainjow)
        install("mustache.hpp", prefix.include.kainjow)
