"""A stand-in for the agent's report socket: a Unix stream server that keeps every line."""

import json
import os
import socket
import tempfile
import threading


class LineServer:
    """Accepts connections on a fresh Unix socket and collects their lines (parsed JSON)."""

    def __init__(self, read=True):
        self.dir = tempfile.mkdtemp(prefix="dlaunch-test-")
        self.path = os.path.join(self.dir, "report.sock")
        self.lines = []  # (connection number, dict)
        self.raw_errors = []
        self.connections = 0
        self.may_read = threading.Event()
        if read:
            self.may_read.set()
        self._cond = threading.Condition()
        self._listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._listener.bind(self.path)
        self._listener.listen(16)
        self._conns = []
        self._closed = False
        self._thread = threading.Thread(target=self._accept, daemon=True)
        self._thread.start()

    def _accept(self):
        while True:
            try:
                conn, _ = self._listener.accept()
            except OSError:
                return
            with self._cond:
                self.connections += 1
                number = self.connections
                self._conns.append(conn)
            threading.Thread(target=self._read, args=(conn, number), daemon=True).start()

    def _read(self, conn, number):
        self.may_read.wait()
        buf = b""
        while True:
            try:
                data = conn.recv(65536)
            except OSError:
                return
            if not data:
                return
            buf += data
            *complete, buf = buf.split(b"\n")
            with self._cond:
                for raw in complete:
                    try:
                        self.lines.append((number, json.loads(raw)))
                    except ValueError:
                        self.raw_errors.append(raw)
                self._cond.notify_all()

    def wait_for(self, count, timeout=10.0):
        """The first `count` lines, waiting for them up to `timeout` seconds."""
        with self._cond:
            self._cond.wait_for(lambda: len(self.lines) >= count, timeout)
            return [d for _, d in self.lines]

    def close(self):
        """Closes the listener and every connection, like an agent that exited."""
        self._listener.close()
        with self._cond:
            for c in self._conns:
                try:
                    c.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
                c.close()
        self.may_read.set()
        try:
            os.unlink(self.path)
        except FileNotFoundError:
            pass


class FakeClock:
    def __init__(self):
        self.now = 1000.0

    def __call__(self):
        return self.now
