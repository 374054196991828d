"""The platform wheel's console scripts (`dlaunch`, `dlaunch-agent`, `dlaunch-relay`): each
replaces itself with the binary of the same name bundled in dlaunch/_bin/bin/
(scripts/release-tarball.sh). exec, not a child: the launcher finds its agent, templates and
py-spy (../libexec/dlaunch/) from its own executable's path, and signals such as Ctrl-C reach it
directly."""

import os
import sys

_BIN = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_bin", "bin")


def _exec(name):
    path = os.path.join(_BIN, name)
    if not os.access(path, os.X_OK):
        sys.exit(f"{name}: {path} is missing: this dlaunch package has no bundled binaries "
                 "(install the platform wheel, dlaunch-*-manylinux_*.whl)")
    os.execv(path, [path] + sys.argv[1:])


def dlaunch():
    _exec("dlaunch")


def agent():
    _exec("dlaunch-agent")


def relay():
    _exec("dlaunch-relay")
