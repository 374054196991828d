"""A PEP 517 backend that packs src/dlaunch into a pure-Python wheel with the standard library.

The package has no dependencies and no compiled parts; a backend of its own keeps
`pip install ./python` and scripts/python-wheel.sh working offline (no setuptools download).
"""

import base64
import hashlib
import io
import os
import re
import tarfile
import zipfile

_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_SRC = os.path.join(_ROOT, "src")
_NAME = "dlaunch"
_FIXED_TIME = (1980, 1, 1, 0, 0, 0)  # the same bytes for the same sources


def _version():
    with open(os.path.join(_SRC, _NAME, "__init__.py"), encoding="utf-8") as f:
        return re.search(r'^__version__ = "([^"]+)"', f.read(), re.M).group(1)


def _metadata():
    return (
        "Metadata-Version: 2.1\n"
        f"Name: {_NAME}\n"
        f"Version: {_version()}\n"
        "Summary: Progress reports from PyTorch training scripts to the dlaunch launcher\n"
        "License: Apache-2.0\n"
        "Requires-Python: >=3.8\n"
        "Provides-Extra: lightning\n"
        'Requires-Dist: lightning>=2.0; extra == "lightning"\n'
        "Provides-Extra: hf\n"
        'Requires-Dist: transformers>=4.30; extra == "hf"\n'
    )


def _sources():
    """(path in the wheel, bytes) of every module, sorted."""
    out = []
    for dirpath, dirnames, filenames in os.walk(os.path.join(_SRC, _NAME)):
        dirnames[:] = sorted(d for d in dirnames if d != "__pycache__")
        for fn in sorted(filenames):
            if fn.endswith(".py") or fn == "py.typed":
                full = os.path.join(dirpath, fn)
                with open(full, "rb") as f:
                    out.append((os.path.relpath(full, _SRC).replace(os.sep, "/"), f.read()))
    return out


def _write_wheel(wheel_directory, files, tag="py3-none-any", extra_dist_info=()):
    """Files are (path, bytes) or (path, bytes, mode)."""
    dist_info = f"{_NAME}-{_version()}.dist-info"
    purelib = "true" if tag.endswith("-any") else "false"
    files = list(files) + [
        (f"{dist_info}/METADATA", _metadata().encode()),
        (f"{dist_info}/WHEEL", (f"Wheel-Version: 1.0\nGenerator: dlaunch_build\n"
                                f"Root-Is-Purelib: {purelib}\nTag: {tag}\n").encode()),
        (f"{dist_info}/top_level.txt", f"{_NAME}\n".encode()),
    ] + [(f"{dist_info}/{name}", data) for name, data in extra_dist_info]
    record = []
    for path, data, *_ in files:
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        record.append(f"{path},sha256={digest},{len(data)}")
    record.append(f"{dist_info}/RECORD,,")
    files.append((f"{dist_info}/RECORD", ("\n".join(record) + "\n").encode()))
    name = f"{_NAME}-{_version()}-{tag}.whl"
    with zipfile.ZipFile(os.path.join(wheel_directory, name), "w", zipfile.ZIP_DEFLATED) as z:
        for path, data, *mode in files:
            info = zipfile.ZipInfo(path, _FIXED_TIME)
            # A regular file's type bits too: pip keeps the x bits only of an S_ISREG mode.
            info.external_attr = (0o100000 | (mode[0] if mode else 0o644)) << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            z.writestr(info, data)
    return name


def build_platform_wheel(wheel_directory, tree, platform):
    """The package with a relocatable dlaunch install tree (scripts/release-tarball.sh) inside it
    as dlaunch/_bin/, and console scripts that exec its binaries (dlaunch/_cli.py). `platform` is
    the wheel's platform tag, e.g. manylinux_2_31_x86_64. Returns the wheel's file name."""
    files = _sources()
    for dirpath, dirnames, filenames in os.walk(tree):
        dirnames.sort()
        for fn in sorted(filenames):
            full = os.path.join(dirpath, fn)
            if os.path.islink(full):
                raise ValueError(f"{full} is a symbolic link: a wheel cannot hold one")
            with open(full, "rb") as f:
                data = f.read()
            mode = 0o755 if os.access(full, os.X_OK) else 0o644
            rel = os.path.relpath(full, tree).replace(os.sep, "/")
            files.append((f"{_NAME}/_bin/{rel}", data, mode))
    scripts = "".join(f"{name} = dlaunch._cli:{func}\n" for name, func in _CONSOLE_SCRIPTS)
    return _write_wheel(wheel_directory, files, f"py3-none-{platform}",
                        [("entry_points.txt", f"[console_scripts]\n{scripts}".encode())])


# The platform wheel's commands, each an exec of dlaunch/_bin/bin/<name>.
_CONSOLE_SCRIPTS = [("dlaunch", "dlaunch"), ("dlaunch-agent", "agent"), ("dlaunch-relay", "relay")]


def get_requires_for_build_wheel(config_settings=None):
    return []


def get_requires_for_build_sdist(config_settings=None):
    return []


def get_requires_for_build_editable(config_settings=None):
    return []


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    return _write_wheel(wheel_directory, _sources())


def build_editable(wheel_directory, config_settings=None, metadata_directory=None):
    # A .pth file that puts src/ on sys.path: edits take effect without reinstalling.
    return _write_wheel(wheel_directory, [(f"_{_NAME}_editable.pth", (_SRC + "\n").encode())])


def build_sdist(sdist_directory, config_settings=None):
    base = f"{_NAME}-{_version()}"
    name = f"{base}.tar.gz"
    with tarfile.open(os.path.join(sdist_directory, name), "w:gz", format=tarfile.PAX_FORMAT) as t:
        members = [("pyproject.toml", None), ("build_backend/dlaunch_build.py", None)]
        members += [(os.path.join("src", p), data) for p, data in _sources()]
        members.append(("PKG-INFO", _metadata().encode()))
        for rel, data in members:
            if data is None:
                with open(os.path.join(_ROOT, rel), "rb") as f:
                    data = f.read()
            info = tarfile.TarInfo(f"{base}/{rel}")
            info.size = len(data)
            info.mode = 0o644
            t.addfile(info, io.BytesIO(data))
    return name
