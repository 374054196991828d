"""Progress reports from a training script to its dlaunch agent.

    import dlaunch
    dlaunch.total_steps(10_000)
    for step, batch in enumerate(loader, 1):
        loss = train_step(batch)
        dlaunch.report(step=step, samples=len(batch), loss=loss)
    with dlaunch.phase("checkpoint"):
        save(model)
    dlaunch.checkpoint_saved(step)

Every call does nothing when the script runs without dlaunch (no DLAUNCH_REPORT_SOCKET), never
raises, and never blocks: a report the agent cannot take at once is dropped and counted. Each
rank reports for itself; a process forked from a rank (a DataLoader worker) stays silent until
it calls init(). The wire format is in docs/python.md.
"""

import os
import time

from dlaunch import _wire
from dlaunch._client import ReportSender

__all__ = ["report", "phase", "total_steps", "checkpoint_saved", "is_active", "rank", "init",
           "stats"]
__version__ = "0.1.0"

SOCKET_ENV = "DLAUNCH_REPORT_SOCKET"


class _Reporter:
    """What one process has told its agent: the step, total, phase and the last report's time."""

    def __init__(self, path, rank, reconnect_s):
        self.sender = ReportSender(path, reconnect_s=reconnect_s)
        self.rank = rank
        self.pid = os.getpid()
        self.step = None
        self.total_steps = None
        self.phase = None  # the current phase's name, None: not said (training)
        self.last_report = time.monotonic()
        self.dropped_told = 0

    def send(self, fields):
        if self.sender.drop_if_waiting():
            return
        fields["rank"] = self.rank
        dropped = self.sender.dropped
        if dropped != self.dropped_told:  # tells the agent that it missed reports
            fields["reports_dropped"] = dropped
        if self.sender.send(_wire.encode(fields)):
            self.dropped_told = dropped


_reporter = None


def init(socket_path=None, rank=None, reconnect_s=2.0):
    """(Re)reads DLAUNCH_REPORT_SOCKET and RANK, or takes the given ones; True when active.

    Called once at import. Call it again in a process forked from a rank that should report
    too, or to point reports at another socket (tests)."""
    global _reporter
    if _reporter is not None:
        _reporter.sender.close()
        _reporter = None
    path = socket_path if socket_path is not None else os.environ.get(SOCKET_ENV, "")
    if not path:
        return False
    if rank is None:
        try:
            rank = int(os.environ.get("RANK", "0"))
        except ValueError:
            rank = 0
    _reporter = _Reporter(path, int(rank), reconnect_s)
    return True


def is_active():
    """True when this process sends reports (it runs under dlaunch)."""
    return _reporter is not None


def rank():
    """This process's global rank as dlaunch reports it (RANK), 0 without dlaunch."""
    return _reporter.rank if _reporter is not None else 0


def stats():
    """Counters of the reports this process sent and dropped (None when not active)."""
    r = _reporter
    return None if r is None else r.sender.stats()


def report(step=None, samples=None, loss=None, interval_s=None, **extra):
    """Reports training progress: the global step, the samples this rank processed since its
    previous report, and the loss. `interval_s` (the time those samples took) defaults to the
    time since the previous report of this process (or since init()), less the time spent in
    phases ended since (`with phase(...)`). Any other keyword travels as an extra JSON
    field (the agent keeps the ones proto/report.proto names: epoch, accuracy, message, ...)."""
    r = _reporter
    if r is None:
        return
    try:
        now = time.monotonic()
        if interval_s is None and samples is not None:
            interval_s = now - r.last_report
        r.last_report = now
        fields = {"kind": "STEP", "step": step, "samples": samples, "interval_s": interval_s,
                  "loss": loss}
        fields.update(extra)
        if step is not None:
            try:
                r.step = int(_wire._scalar(step))
            except (TypeError, ValueError, OverflowError):
                pass
        if r.total_steps and "total_steps" not in fields:
            fields["total_steps"] = r.total_steps
        if r.phase is not None and "phase" not in fields:
            fields["phase"] = r.phase
        r.send(fields)
    except Exception:
        pass


def total_steps(n):
    """Tells the agent the step training ends at (its progress bar and ETA); later reports
    carry it too."""
    r = _reporter
    if r is None:
        return
    try:
        r.total_steps = int(n)
        r.send(_progress_only(r, {}))
    except Exception:
        pass


def checkpoint_saved(step=None):
    """Tells the agent that a complete checkpoint of `step` (default: the last reported step)
    is on disk; the launcher tells a crash loop from progress by it."""
    r = _reporter
    if r is None:
        return
    try:
        s = r.step if step is None else int(step)
        if s is not None:
            r.send(_progress_only(r, {"checkpoint_step": s}))
    except Exception:
        pass


def _progress_only(r, fields):
    # A PHASE report: the agent merges it without touching samples, loss or throughput.
    fields["kind"] = "PHASE"
    if r.step is not None:
        fields.setdefault("step", r.step)
    if r.total_steps:
        fields.setdefault("total_steps", r.total_steps)
    return fields


class _Phase:
    """A phase begun by phase(); ends it on leaving a `with` block."""

    __slots__ = ("name", "previous", "begun")

    def __init__(self, name, previous, begun):
        self.name = name
        self.previous = previous
        self.begun = begun

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        now = time.monotonic()
        _leave_phase_time_out(self.begun, now)
        _send_phase(self.name, "end", self.previous, now - self.begun)
        return False

    def end(self):
        """Ends the phase without a `with` block."""
        self.__exit__(None, None, None)


class _NoPhase:
    __slots__ = ()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def end(self):
        pass


_NO_PHASE = _NoPhase()


def phase(name):
    """Says that the rank now does `name` ("data", "train", "eval", "checkpoint" or a name of
    the script's own). As a context manager, it ends on leaving the block and the previous
    phase holds again; as a plain call, it holds until the next phase()."""
    r = _reporter
    if r is None:
        return _NO_PHASE
    try:
        name = str(name)
        previous = r.phase
        _send_phase(name, "begin", None, None)
        return _Phase(name, previous, time.monotonic())
    except Exception:
        return _NO_PHASE


def _leave_phase_time_out(begun, now):
    # The next report's interval is the time its samples took: a phase (a checkpoint, an
    # evaluation, the start-up's) since the previous report is left out of it.
    r = _reporter
    if r is not None:
        r.last_report = now if begun < r.last_report else r.last_report + (now - begun)


def _send_phase(name, event, restored, seconds):
    r = _reporter
    if r is None:
        return
    try:
        if event == "begin":
            r.phase = name
            shown = name
        else:
            r.phase = restored
            # Back to what held before; nothing said before means training (the agent keeps the
            # last phase it was told, so "end" must name the next one).
            shown = restored if restored is not None else "train"
        fields = {"phase_name": name, "phase_event": event, "t": time.time()}
        enum = _wire.phase_enum(shown)
        if enum is not None:
            fields["phase"] = enum
        if seconds is not None:
            fields["phase_s"] = seconds
        r.send(_progress_only(r, fields))
    except Exception:
        pass


def _after_fork_in_child():
    # A DataLoader worker or any other fork of a rank: silent, and without the parent's socket.
    global _reporter
    r = _reporter
    if r is not None:
        r.sender.after_fork_in_child()
        _reporter = None


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)

init()
