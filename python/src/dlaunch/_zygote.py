"""dlaunch's warm process ("zygote"): started by a node's agent in the job's interpreter, it
imports the libraries the job's script imports (anywhere in it), then forks ranks on demand, so that a
rank started anew (a replaced rank, a promoted spare) skips the interpreter's start and the
imports. The agent embeds this file and runs it with `python [the job's flags] -c`; it needs
nothing but the standard library. docs/restarts.md, "Warm starts", says where it must not be
used and what it costs.

    python -c SRC SOCKET SCRIPT     (cwd: the job's working directory)

Protocol, one request per connection to SOCKET (a Unix stream socket, made only once the
imports are done, so a refused connect means "not warm yet"):
  agent -> zygote: 4-byte big-endian length, then that many bytes of NUL-separated fields
      b"dlaunch-zygote-1", cwd, cpus ("0,3,4" or ""), agent pid, death signal, traceable (0/1),
      argc, argv..., then every remaining field is one "K=V" of the rank's environment;
    with SCM_RIGHTS on the first byte: the rank's stdout and stderr (pipe write ends), and
    the workers' cgroup.procs when there is one.
  zygote -> agent: one line, b"pid N\\n" once the rank is the agent's child (below) and set
    up, or b"error TEXT\\n" when it could not be started.
The rank is forked twice: the middle process exits at once, so the rank is handed to the
agent (the subreaper of its descendants) and the agent reaps, signals and sweeps it as a child
it spawned. Only then does the rank set its parent-death signal, so that it fires when the
agent dies, not when the middle process exits.
"""

import array
import ast
import ctypes
import gc
import importlib.util
import os
import signal
import socket
import struct
import sys
import time
import traceback

PR_SET_PDEATHSIG = 1
PR_SET_PTRACER = 0x59616D61
MAGIC = b"dlaunch-zygote-1"
# What a library imports only at its first use, that every rank pays: torch 2.x's optimizers
# import torch._dynamo (sympy, mpmath: ~900 modules, 4 s here) when the first one is made.
LAZY_IMPORTS = {"torch": ["torch._dynamo"]}


def log(msg):
    print(f"dlaunch-zygote {os.getpid()}: {msg}", file=sys.stderr, flush=True)


def script_imports(script):
    """Absolute modules the script imports anywhere: at its top level, in functions and blocks
    (a script often imports torch inside main())."""
    with open(script, "rb") as f:
        tree = ast.parse(f.read(), script)
    names = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.append(node.module)
    return list(dict.fromkeys(names))


def is_outside(name, script_dir):
    """True when `name` resolves outside the script's own directory: a library, not the job's
    own module (whose import may read the rank's environment)."""
    try:
        spec = importlib.util.find_spec(name.split(".")[0])
    except (ImportError, ValueError):
        return False
    origin = getattr(spec, "origin", None) if spec else None
    if not origin or origin in ("built-in", "frozen"):
        return spec is not None
    return not os.path.realpath(origin).startswith(script_dir + os.sep)


def warm_up(script):
    """Imports the script's libraries; returns why forking is unsafe, or None."""
    script_dir = os.path.dirname(os.path.realpath(script))
    sys.path[0] = script_dir
    for name in script_imports(script):
        if not is_outside(name, script_dir):
            continue
        try:
            __import__(name)
        except BaseException as e:  # the rank imports it itself and fails there, as it would
            log(f"import {name} failed, left to the ranks: {e!r}")
    for lib, lazy in LAZY_IMPORTS.items():
        for name in lazy if lib in sys.modules else ():
            if importlib.util.find_spec(name) is None:  # torch 1.x has no _dynamo
                continue
            try:
                __import__(name)
            except BaseException as e:
                log(f"import {name} failed, left to the ranks: {e!r}")
    torch = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_initialized():
        return "CUDA was initialised at import: a forked rank could not use it"
    if threads() > 1:
        # A pool a fork handler stops is safe to fork: OpenBLAS (NumPy's, which torch imports)
        # starts its threads at load and stops them before a fork, and starts them again when
        # used. A throwaway fork runs those handlers; what still runs after it is not safe.
        pid = os.fork()
        if pid == 0:
            os._exit(0)
        os.waitpid(pid, 0)
    if threads() > 1:
        return f"{threads()} threads after the imports: a fork copies only one"
    # The imported objects are shared with every rank copy-on-write; a collection in a rank
    # would write to all of them (and copy their pages) unless they are out of its reach.
    gc.collect()
    gc.freeze()
    return None


def threads():
    return len(os.listdir("/proc/self/task"))


def recv_request(conn):
    fds = array.array("i")
    head, anc, _, _ = conn.recvmsg(4, socket.CMSG_SPACE(3 * fds.itemsize))
    for level, kind, data in anc:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
            fds.frombytes(data[: len(data) - len(data) % fds.itemsize])
    while len(head) < 4:
        more = conn.recv(4 - len(head))
        if not more:
            raise EOFError("short request")
        head += more
    (size,) = struct.unpack(">I", head)
    body = bytearray()
    while len(body) < size:
        more = conn.recv(min(1 << 20, size - len(body)))
        if not more:
            raise EOFError("short request")
        body += more
    fields = bytes(body).split(b"\0")
    if fields[0] != MAGIC:
        raise ValueError("not a dlaunch-zygote-1 request")
    cwd, cpus, agent, sig, traceable, argc = fields[1:7]
    argc = int(argc)
    req = {
        "cwd": cwd,
        "cpus": [int(c) for c in cpus.split(b",") if c],
        "agent": int(agent),
        "sig": int(sig),
        "traceable": traceable == b"1",
        "argv": [os.fsdecode(a) for a in fields[7 : 7 + argc]],
        "env": [e for e in fields[7 + argc :] if e],
        "fds": list(fds),
    }
    if len(req["fds"]) < 2:
        raise ValueError("no stdout/stderr descriptors")
    return req


def become_rank(req, ready_w):
    """In the rank (the grandchild): what common/process.cc's RunChild does before its exec.
    Reports a failure on `ready_w`; success is the pipe's b"k"."""
    os.setpgid(0, 0)
    if len(req["fds"]) > 2:
        try:
            os.write(req["fds"][2], b"0")
        except OSError:
            pass  # refused: as RunChild, the agent checked it may move processes there
    deadline = time.monotonic() + 5
    while os.getppid() != req["agent"]:  # the middle process is exiting
        if time.monotonic() > deadline:
            os._exit(127)
        time.sleep(0.0001)
    libc = ctypes.CDLL(None, use_errno=True)
    if req["sig"]:
        libc.prctl(PR_SET_PDEATHSIG, req["sig"], 0, 0, 0)
        if os.getppid() != req["agent"]:
            os._exit(127)
    if req["traceable"]:
        libc.prctl(PR_SET_PTRACER, req["agent"], 0, 0, 0)
    signal.pthread_sigmask(signal.SIG_SETMASK, [])
    signal.signal(signal.SIGINT, signal.default_int_handler)
    for s in (signal.SIGTERM, signal.SIGCHLD, signal.SIGHUP, signal.SIGQUIT):
        signal.signal(s, signal.SIG_DFL)
    devnull = os.open("/dev/null", os.O_RDONLY)
    os.dup2(devnull, 0)
    os.dup2(req["fds"][0], 1)
    os.dup2(req["fds"][1], 2)
    for fd in [devnull] + req["fds"]:
        os.close(fd)
    try:
        if req["cpus"]:
            os.sched_setaffinity(0, req["cpus"])
        if req["cwd"]:
            os.chdir(req["cwd"])
    except OSError as e:
        os.write(ready_w, b"e" + os.fsencode(f"{e.strerror}: {e.filename or ''}"))
        os._exit(127)
    os.environb.clear()
    for entry in req["env"]:
        key, _, value = entry.partition(b"=")
        if key:
            os.environb[key] = value
    os.write(ready_w, b"k")
    os.close(ready_w)


def script_index(argv):
    i = 1
    while i < len(argv):
        if argv[i] in ("-W", "-X"):
            i += 2
            continue
        if not argv[i].startswith("-"):
            return i
        i += 1
    return len(argv)


def fork_rank(req, listener, conn):
    """Returns the request in the rank; in the zygote, the rank's pid or raises with why not."""
    sys.stdout.flush()
    sys.stderr.flush()
    r, w = os.pipe()
    middle = os.fork()
    if middle == 0:  # never returns to the zygote's loop but as the rank
        try:
            rank = os.fork()
            if rank == 0:
                listener.close()
                conn.close()
                os.close(r)
                try:
                    become_rank(req, w)
                except BaseException:
                    traceback.print_exc()
                    os._exit(127)
                return req
            os.write(w, struct.pack("=i", rank))
        except BaseException:
            traceback.print_exc()
        os._exit(0)
    os.close(w)
    for fd in req["fds"]:
        os.close(fd)
    os.waitpid(middle, 0)
    with os.fdopen(r, "rb") as f:
        got = f.read(4)
        status = f.read()
    if len(got) < 4:
        raise OSError("the rank's fork failed")
    (pid,) = struct.unpack("=i", got)
    if not status.startswith(b"k"):
        raise OSError(status[1:].decode(errors="replace") or "the rank ended while it was set up")
    return pid


def serve(path):
    """Answers requests until the agent goes; returns the request in a forked rank."""
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen(16)
    log(f"warm: {len(sys.modules)} modules imported, serving {path}")
    while True:
        conn, _ = listener.accept()
        with conn:
            creds = conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
            if struct.unpack("3i", creds)[0] != os.getppid():
                continue  # only the agent that started this process may ask
            try:
                req = recv_request(conn)
            except (OSError, ValueError, EOFError) as e:
                log(f"bad request: {e}")
                continue
            try:
                got = fork_rank(req, listener, conn)
            except OSError as e:
                conn.sendall(f"error {e}\n".encode())
                continue
            if isinstance(got, dict):
                return got
            conn.sendall(f"pid {got}\n".encode())


def run(req):
    argv = req["argv"]
    i = script_index(argv)
    sys.argv = argv[i:]
    script = sys.argv[0]
    sys.path[0] = os.path.dirname(os.path.realpath(script))
    import runpy

    runpy.run_path(script, run_name="__main__")


def main():
    path, script = sys.argv[1], sys.argv[2]
    unsafe = warm_up(script)
    if unsafe:
        log(f"not serving: {unsafe}")
        sys.exit(3)
    run(serve(path))


if __name__ == "__main__":
    main()
