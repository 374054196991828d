"""In-process restart for a PyTorch training function under dlaunch (job.yaml: `restart: in_process`).

    import dlaunch.inprocess

    state = {}                      # lives as long as the process: kept across restarts

    @dlaunch.inprocess.wrap
    def train(restart):
        dist.init_process_group("gloo")          # env:// from the round's environment
        if "model" not in state:
            state["model"], state["opt"] = build()
        step = dlaunch.inprocess.sync_state(state["model"], state["opt"], state.get("step", 0))
        for step in range(step + 1, total + 1):
            ...                                  # one step
            state["step"] = step
        dist.destroy_process_group()

    train()

When the round stops for a failure elsewhere, the agent tells this rank to leave it: the wrapper
interrupts the function (at the next Python bytecode, or when its blocked collective fails:
it cuts the connections of the process groups the function made, which frees its own collective
and every peer's that waits on it; _group_sockets), says it left, destroys the process group,
waits for its place in the next round, puts the round's RANK, LOCAL_RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT,
GROUP_RANK and DLAUNCH_ROUND in os.environ, says it is ready and calls the function again. What
the function kept (the `state` above) is there; a rank started anew has nothing, and
sync_state() gives it the parameters and optimizer state of the lowest rank that has the newest
step (a broadcast, no checkpoint read). The contract is that of nvidia-resiliency-ext's
inprocess.Wrapper: the function is called again with the same arguments, so it must be safe to
call twice in one process.

An exception of the function's own (not the round's stop) ends the process as without the
wrapper: that rank failed. `cannot(why)` tells the agent this process must not be kept (a NaN in
its state, a CUDA error): it is ended and started anew at the next restart. Without dlaunch (no
DLAUNCH_REPORT_SOCKET) or without `restart: in_process`, the function is called once.

Protocol (one JSON object per line on the report socket, its own connection): docs/restarts.md.
"""

import contextlib
import ctypes
import functools
import gc
import json
import os
import socket
import sys
import threading
import time

from dlaunch import _group_sockets

__all__ = ["wrap", "Restart", "RestartInfo", "sync_state", "cannot"]

SOCKET_ENV = "DLAUNCH_REPORT_SOCKET"


class Restart(BaseException):
    """Raised in the training thread when its round stops: the function is abandoned where it is.
    A BaseException, so that a training loop's `except Exception` does not swallow it."""


class _Channel:
    """The wrapper's own connection to the agent: lines out, a reader thread for lines in."""

    def __init__(self, path):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.connect(path)
        self.lock = threading.Lock()
        self.cond = threading.Condition()
        self.inbox = []
        self.closed = False
        self.on_leave = None
        threading.Thread(target=self._read, name="dlaunch-inprocess", daemon=True).start()

    def send(self, **fields):
        with self.lock:
            self.sock.sendall((json.dumps(fields) + "\n").encode())

    def _read(self):
        buf = b""
        while True:
            try:
                chunk = self.sock.recv(65536)
            except OSError:
                chunk = b""
            if not chunk:
                with self.cond:
                    self.closed = True
                    self.cond.notify_all()
                return
            buf += chunk
            while b"\n" in buf:
                line, buf = buf.split(b"\n", 1)
                try:
                    msg = json.loads(line)
                except ValueError:
                    continue
                if msg.get("restart") == "leave" and self.on_leave:
                    self.on_leave(msg)
                with self.cond:
                    self.inbox.append(msg)
                    self.cond.notify_all()

    def wait_for(self, kind, timeout_s):
        """The first message of `kind` (removed from the inbox), or None after timeout_s or when
        the agent closed the connection."""
        end = time.monotonic() + timeout_s
        with self.cond:
            while True:
                for i, msg in enumerate(self.inbox):
                    if msg.get("restart") == kind:
                        return self.inbox.pop(i)
                left = end - time.monotonic()
                if self.closed or left <= 0:
                    return None
                self.cond.wait(left)


_channel = None


def _interrupt(thread_id):
    # Delivered when the thread next runs Python bytecode: at once between steps, or when a
    # blocked C call (a collective waiting for a dead peer) returns.
    ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(thread_id), ctypes.py_object(Restart))


def _track_groups():
    # Once torch is imported: record the connections of the groups the function makes, to cut
    # them when the round stops (_group_sockets says why).
    if "torch" in sys.modules and "torch.distributed.distributed_c10d" not in sys.modules:
        try:
            import torch.distributed.distributed_c10d  # noqa: F401
        except Exception:  # noqa: BLE001: a torch without distributed has no group to cut
            return
    _group_sockets.track()


def _destroy_process_group():
    """Destroys the default process group, if there is one. Says what it did."""
    t = time.monotonic()
    dist = sys.modules.get("torch.distributed")
    if dist is None:  # the function never imported it: no group to leave
        return "no process group"
    if dist.is_available() and dist.is_initialized():
        try:
            dist.destroy_process_group()
        except Exception:  # a group whose peers are gone may fail to shut down cleanly
            pass
    return f"group destroyed in {time.monotonic() - t:.2f} s"


def _free_frames():
    """On a GPU, frees the abandoned call's frames now: its DDP's buckets are memory the next
    call needs. A full collection costs 0.1-0.5 s with torch's modules in the heap (measured on
    a loaded 2-core machine), so only where memory is at stake, and after the rank answered its
    place (the agent's bound on that answer is for a local round trip). On the CPU the
    interpreter's own collections free them later."""
    cuda = getattr(sys.modules.get("torch"), "cuda", None)
    if cuda is not None and cuda.is_initialized():
        gc.collect()


def _take_place(msg):
    env = os.environ
    env["RANK"] = str(msg.get("rank", 0))
    env["LOCAL_RANK"] = str(msg.get("local_rank", 0))
    env["WORLD_SIZE"] = str(msg.get("world_size", 1))
    env["LOCAL_WORLD_SIZE"] = str(msg.get("local_world_size", 1))
    env["GROUP_RANK"] = env["DLAUNCH_NODE_RANK"] = str(msg.get("node_rank", 0))
    env["MASTER_ADDR"] = msg.get("master_addr", "127.0.0.1")
    env["MASTER_PORT"] = str(msg.get("master_port", 0))
    env["DLAUNCH_ROUND"] = env["TORCHELASTIC_RESTART_COUNT"] = str(msg.get("round", 0))


def _is_distributed_error(exc):
    # A collective that failed because a peer died, or the group was torn down under it.
    names = {c.__name__ for c in type(exc).__mro__}
    if names & {"DistError", "DistBackendError", "DistNetworkError"}:
        return True
    text = str(exc)
    return isinstance(exc, RuntimeError) and any(
        s in text for s in ("Connection closed by peer", "Connection reset", "Gloo", "gloo",
                            "NCCL", "ProcessGroup", "process group"))


def cannot(why):
    """This process must not be kept for the next round (its state cannot be trusted)."""
    if _channel is not None:
        _channel.send(restart="cannot", why=str(why))


class _Runner:
    """Runs the function in this thread and restarts it; the reader thread interrupts it."""

    def __init__(self, channel):
        self.ch = channel
        self.main = threading.get_ident()
        self.lock = threading.Lock()
        self.running = False    # the function runs: an interrupt may be delivered
        self.atomic_depth = 0   # inside RestartInfo.atomic(): the interrupt waits for its end
        self.pending = False    # a stop came inside an atomic section
        self.stopped_round = None
        self.cut = 0            # connections of the round's groups cut at its stop
        channel.on_leave = self.on_leave

    def on_leave(self, msg):
        with self.lock:
            self.stopped_round = msg.get("round", 0)
            if self.running and self.atomic_depth == 0:
                # A collective in flight fails at once, here and in each peer that waits on
                # this rank; otherwise the interrupt comes at the next bytecode.
                self.cut += _group_sockets.cut()
                _interrupt(self.main)
            else:
                self.pending = True

    def call(self, fn, info, args, kwargs):
        _track_groups()
        with self.lock:
            if self.stopped_round is not None:  # the stop came before the call began
                raise Restart()
            self.running = True
        try:
            return fn(info, *args, **kwargs)
        finally:
            self.disarm()

    def disarm(self):
        # No interrupt after this; one set but not yet delivered is withdrawn.
        while True:
            try:
                with self.lock:
                    self.running = False
                    self.pending = False
                    ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(self.main), None)
                return
            except Restart:
                continue

    def enter_atomic(self):
        with self.lock:
            self.atomic_depth += 1

    def leave_atomic(self):
        with self.lock:
            self.atomic_depth -= 1
            fire = self.atomic_depth == 0 and self.pending and self.running
            self.pending = self.pending and not fire
        if fire:
            raise Restart()


class RestartInfo:
    """What the function is called with: the round, how many times it was restarted in this
    process, and atomic(): a section the round's stop does not interrupt (the optimizer's step
    and the bookkeeping of the step that goes with it), so kept state is never half updated."""

    def __init__(self, round_, restarts, runner=None):
        self.round = round_
        self.restarts = restarts  # in this process (0: its first call)
        self._runner = runner

    @contextlib.contextmanager
    def atomic(self):
        if self._runner is None:
            yield
            return
        self._runner.enter_atomic()
        try:
            yield
        finally:
            self._runner.leave_atomic()


def wrap(fn, leave_wait_s=30.0, join_wait_s=600.0):
    """`fn(info, *args, **kwargs)` called until it returns, again in the same process after each
    stop of its round; `info` is a RestartInfo.

    leave_wait_s: after a collective failed, how long to wait for the agent's stop before the
    error counts as this rank's own. join_wait_s: how long to wait between rounds for the next
    one (the agent ends a kept rank itself when the job ends instead)."""

    @functools.wraps(fn)
    def run(*args, **kwargs):
        global _channel
        path = os.environ.get(SOCKET_ENV)
        round_ = int(os.environ.get("DLAUNCH_ROUND", "0"))
        if not path:
            return fn(RestartInfo(round_, 0), *args, **kwargs)
        _channel = ch = _Channel(path)
        runner = _Runner(ch)
        ch.send(restart="hello", in_process=True)
        restarts = 0
        while True:
            try:
                return runner.call(fn, RestartInfo(round_, restarts, runner), args, kwargs)
            except Restart:
                pass
            except Exception as exc:  # noqa: BLE001: sorted below
                if not _is_distributed_error(exc):
                    raise
                # A peer died under a collective: the round's stop is on its way. Cut now, so
                # that the peers waiting on this rank do not wait for the stop to reach it.
                with runner.lock:
                    runner.cut += _group_sockets.cut()
                if ch.wait_for("leave", leave_wait_s) is None and runner.stopped_round is None:
                    raise
            # Out of the round once its connections are cut: it can neither send nor receive in
            # it any more, so it says so before the (slower) clean-up.
            t = time.monotonic()
            with runner.lock:
                runner.cut += _group_sockets.cut()
                cut, runner.cut = runner.cut, 0
            left = runner.stopped_round if runner.stopped_round is not None else round_
            ch.wait_for("leave", 0)  # drop it from the inbox if it is still there
            ch.send(restart="left", round=left)
            cut_s = time.monotonic() - t
            done = _destroy_process_group()
            sys.stderr.write(f"dlaunch.inprocess: left round {left} ({cut} connection(s) of its "
                             f"process groups cut in {cut_s:.3f} s; {done})\n")
            msg = ch.wait_for("join", join_wait_s)
            if msg is None:
                raise SystemExit("dlaunch: no next round came for this rank kept in its process")
            with runner.lock:
                # The stop is handled: one that came while the function was not running must
                # not interrupt its next call.
                runner.stopped_round = None
                runner.pending = False
            _take_place(msg)
            round_ = int(msg.get("round", 0))
            restarts += 1
            ch.send(restart="ready", round=round_)
            _free_frames()

    return run


def sync_state(model, optimizer=None, step=0):
    """After (re)initialising the process group: every rank gets the parameters, buffers and
    optimizer state of the lowest rank with the newest `step`, by broadcast. Returns that step.
    A rank that kept its state in its process sends it; one started anew (step 0) receives it.

    Tensors go by dist.broadcast on the process group's device (the current CUDA device under
    NCCL); only the optimizer state's small skeleton (its keys, numbers and the tensors' shapes)
    is pickled. Neither needs NumPy, which dist.broadcast_object_list does."""
    import torch
    import torch.distributed as dist

    device = _collective_device()
    world = dist.get_world_size()
    steps = torch.tensor([int(step)], dtype=torch.int64, device=device)
    gathered = [torch.zeros(1, dtype=torch.int64, device=device) for _ in range(world)]
    dist.all_gather(gathered, steps)
    values = [int(t.item()) for t in gathered]
    newest = max(values)
    if all(v == newest for v in values):
        return newest  # nothing to send: every rank is at the same step
    src = values.index(newest)
    with torch.no_grad():
        for t in list(model.parameters()) + list(model.buffers()):
            _broadcast_tensor(t.data, src, device)
    if optimizer is not None:
        sending = dist.get_rank() == src
        optimizer.load_state_dict(
            _broadcast_state(optimizer.state_dict() if sending else None, src, device))
    return newest


def _collective_device():
    """Where the default group's collectives take tensors: the current CUDA device when its
    backend is NCCL alone, the CPU otherwise (Gloo, or a group with a CPU backend too)."""
    import torch
    import torch.distributed as dist

    backend = str(dist.get_backend()).lower()
    if "nccl" in backend and "cpu" not in backend and torch.cuda.is_available():
        return torch.device("cuda", torch.cuda.current_device())
    return torch.device("cpu")


def _broadcast_tensor(t, src, device):
    """Broadcasts `t` in place, through a copy on `device` where it lives elsewhere."""
    import torch.distributed as dist

    if t.device == device and t.is_contiguous():
        dist.broadcast(t, src)
        return
    staged = t.detach().to(device).contiguous()
    dist.broadcast(staged, src)
    t.copy_(staged)


class _Slot:
    """A tensor's place in a broadcast state's skeleton: what the receivers allocate."""
    __slots__ = ("shape", "dtype", "cuda")

    def __init__(self, t):
        self.shape, self.dtype, self.cuda = tuple(t.shape), t.dtype, t.is_cuda


def _map_tensors(o, fn, leaf):
    """`o` (nested dicts, lists and tuples) with each `leaf` in it replaced by fn(leaf), in a
    fixed order: a dict's insertion order, a sequence's."""
    if isinstance(o, leaf):
        return fn(o)
    if isinstance(o, dict):
        return type(o)((k, _map_tensors(v, fn, leaf)) for k, v in o.items())
    if isinstance(o, (list, tuple)):
        return type(o)(_map_tensors(v, fn, leaf) for v in o)
    return o


def _broadcast_state(state, src, device):
    """`state` (a nested dict/list/tuple with tensors: an optimizer's state_dict) from rank
    `src` to every rank; the others pass None and get a copy. The skeleton (the state with each
    tensor replaced by its _Slot) goes pickled in a uint8 tensor, then each tensor by itself,
    in the order both sides walk the skeleton."""
    import pickle

    import torch
    import torch.distributed as dist

    if dist.get_rank() == src:
        tensors = []

        def strip(t):
            tensors.append(t)
            return _Slot(t)

        blob = pickle.dumps(_map_tensors(state, strip, torch.Tensor))
        dist.broadcast(torch.tensor([len(blob)], dtype=torch.int64, device=device), src)
        dist.broadcast(torch.frombuffer(bytearray(blob), dtype=torch.uint8).to(device), src)
        for t in tensors:
            _broadcast_tensor(t, src, device)
        return state

    size = torch.zeros(1, dtype=torch.int64, device=device)
    dist.broadcast(size, src)
    buf = torch.empty(int(size.item()), dtype=torch.uint8, device=device)
    dist.broadcast(buf, src)
    skeleton = pickle.loads(bytes(buf.cpu().tolist()))

    def receive(slot):
        home = device if slot.cuda and device.type == "cuda" else torch.device("cpu")
        t = torch.empty(slot.shape, dtype=slot.dtype, device=home)
        _broadcast_tensor(t, src, device)
        return t

    return _map_tensors(skeleton, receive, _Slot)
