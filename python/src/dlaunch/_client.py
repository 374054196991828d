"""ReportSender: writes report lines to the agent's Unix socket without ever blocking or raising.

A line that cannot be written at once (no agent, a full socket buffer, a closed peer) is dropped
and counted: training must not wait for its own monitoring. After a failure the sender tries to
connect again at most every `reconnect_s` seconds. A stream socket may take only part of a line;
the rest is kept and written before anything else, so the agent never reads a torn line. Methods
may be called from any thread.
"""

import socket
import threading
import time

_MSG_FLAGS = getattr(socket, "MSG_NOSIGNAL", 0) | getattr(socket, "MSG_DONTWAIT", 0)


class ReportSender:
    def __init__(self, path, reconnect_s=2.0, clock=time.monotonic):
        self.path = path
        self.reconnect_s = reconnect_s
        self._clock = clock
        self._lock = threading.Lock()
        self._sock = None
        self._pending = b""  # the unwritten tail of a line the socket took only part of
        self._next_connect = 0.0
        self.sent = 0
        self.dropped = 0
        self.connects = 0
        self.failed_connects = 0

    def send(self, line):
        """Writes `line` (bytes ending in a newline) now, or drops it; True when written whole."""
        with self._lock:
            try:
                return self._send_locked(line)
            except Exception:  # never let monitoring break training
                self._close_locked()
                self.dropped += 1
                return False

    def drop_if_waiting(self):
        """Counts a report as dropped without building it when no connection may be tried yet
        (no agent): True then."""
        if self._sock is None and self._clock() < self._next_connect:
            self.dropped += 1
            return True
        return False

    def close(self):
        with self._lock:
            self._close_locked()

    def after_fork_in_child(self):
        # The lock may have been held by another thread of the parent at fork time; the socket
        # is the parent's connection, which must not see bytes from two processes.
        self._lock = threading.Lock()
        if self._sock is not None:
            try:
                self._sock.detach()  # leave the parent's connection open; just forget it here
            except OSError:
                pass
        self._sock = None
        self._pending = b""

    def stats(self):
        return {"sent": self.sent, "dropped": self.dropped, "connects": self.connects,
                "failed_connects": self.failed_connects}

    def _send_locked(self, line):
        if self._sock is None and not self._connect_locked():
            self.dropped += 1
            return False
        if self._pending and not self._write_locked(self._pending, is_tail=True):
            self.dropped += 1
            return False
        if not self._write_locked(line, is_tail=False):
            # Either the whole line is lost or its tail waits in _pending; count it as dropped
            # only when nothing of it went out.
            if not self._pending:
                self.dropped += 1
                return False
        self.sent += 1
        return not self._pending

    def _write_locked(self, data, is_tail):
        """Writes what the socket takes now; keeps the tail of a started line in _pending."""
        try:
            n = self._sock.send(data, _MSG_FLAGS)
        except (BlockingIOError, InterruptedError):
            n = 0
        except OSError:  # EPIPE, ECONNRESET, ...: the agent is gone
            self._close_locked()
            return False
        if n == len(data):
            self._pending = b""
            return True
        # A line of which nothing went out is simply lost; a started one must be finished.
        self._pending = data[n:] if n > 0 or is_tail else b""
        return False

    def _connect_locked(self):
        now = self._clock()
        if now < self._next_connect:
            return False
        self._next_connect = now + self.reconnect_s
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM | socket.SOCK_NONBLOCK
                          | socket.SOCK_CLOEXEC)
        try:
            s.connect(self.path)
        except Exception:  # no agent yet or any more, a wrong path, a full backlog: try later
            s.close()
            self.failed_connects += 1
            return False
        self._sock = s
        self._pending = b""
        self.connects += 1
        return True

    def _close_locked(self):
        if self._sock is not None:
            try:
                self._sock.close()
            except OSError:
                pass
        self._sock = None
        self._pending = b""
        self._next_connect = max(self._next_connect, self._clock() + self.reconnect_s)

