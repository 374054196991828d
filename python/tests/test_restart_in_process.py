"""dlaunch.inprocess.wrap against a stand-in agent socket: the hello, the stop that interrupts the
function, "left" only after it stopped, the new place in os.environ, "ready", the second call;
atomic sections; the function's own errors; no socket."""

import os
import threading
import time
import unittest
from unittest import mock

import dlaunch.inprocess as inprocess
from report_server import LineServer


class InProcessTest(unittest.TestCase):
    def setUp(self):
        self.server = LineServer()
        self.env = mock.patch.dict(os.environ, {"DLAUNCH_REPORT_SOCKET": self.server.path,
                                                "DLAUNCH_ROUND": "0", "RANK": "3"})
        self.env.start()

    def tearDown(self):
        self.env.stop()
        self.server.close()

    def send(self, line):
        """From the agent to the (only) connection."""
        deadline = time.monotonic() + 10
        while not self.server._conns and time.monotonic() < deadline:
            time.sleep(0.01)
        self.server._conns[0].sendall((line + "\n").encode())

    def wait_line(self, kind, timeout=60.0):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for _, d in list(self.server.lines):
                if d.get("restart") == kind:
                    return d
            time.sleep(0.01)
        self.fail(f"no {kind!r} line; got {self.server.lines}")

    def test_a_stop_interrupts_the_function_and_the_next_round_calls_it_again(self):
        calls = []
        looping = threading.Event()

        @inprocess.wrap
        def train(info):
            calls.append((info.round, info.restarts, os.environ["RANK"]))
            if info.restarts == 0:
                looping.set()
                while True:  # a training loop that never ends on its own
                    time.sleep(0.001)
            return "done"

        result = []
        t = threading.Thread(target=lambda: result.append(train()))
        t.start()
        self.assertEqual(self.wait_line("hello")["in_process"], True)
        self.assertTrue(looping.wait(10))
        self.send('{"restart": "leave", "round": 0}')
        self.assertEqual(self.wait_line("left")["round"], 0)
        self.send('{"restart": "join", "round": 1, "rank": 5, "local_rank": 1, "world_size": 6, '
                  '"local_world_size": 2, "node_rank": 2, "master_addr": "10.0.0.9", '
                  '"master_port": 29555}')
        self.assertEqual(self.wait_line("ready")["round"], 1)
        t.join(10)
        self.assertEqual(result, ["done"])
        self.assertEqual(calls, [(0, 0, "3"), (1, 1, "5")])
        self.assertEqual(os.environ["MASTER_PORT"], "29555")
        self.assertEqual(os.environ["WORLD_SIZE"], "6")
        self.assertEqual(os.environ["DLAUNCH_ROUND"], "1")
        self.assertEqual(os.environ["GROUP_RANK"], "2")

    def test_an_atomic_section_is_never_cut(self):
        inside = threading.Event()
        go_on = threading.Event()
        done = []

        @inprocess.wrap
        def train(info):
            if info.restarts:
                return done
            with info.atomic():
                inside.set()
                go_on.wait(10)
                time.sleep(0.05)  # bytecodes run here: an interrupt would land
                done.append("section")
            while True:
                time.sleep(0.001)

        t = threading.Thread(target=train)
        t.start()
        self.assertTrue(inside.wait(10))
        self.send('{"restart": "leave", "round": 0}')
        time.sleep(0.1)  # the reader thread has seen the stop (nothing to wait for: no line)
        go_on.set()
        self.wait_line("left")
        self.assertEqual(done, ["section"])
        self.send('{"restart": "join", "round": 1, "rank": 0}')
        t.join(10)
        self.assertFalse(t.is_alive())

    def test_a_failed_collective_waits_for_the_stop_and_the_next_call_runs_whole(self):
        sections = []

        @inprocess.wrap
        def train(info):
            if info.restarts == 0:
                # A peer died under a collective; the agent's stop comes after.
                raise RuntimeError("[gloo/transport/tcp/pair.cc:547] Connection closed by peer")
            with info.atomic():
                time.sleep(0.05)
            sections.append("first step")
            time.sleep(0.05)  # bytecodes after the section: a stale stop would land here
            return "done"

        result = []
        t = threading.Thread(target=lambda: result.append(train()))
        t.start()
        self.wait_line("hello")
        time.sleep(0.1)  # the function failed and the wrapper waits for the stop
        self.send('{"restart": "leave", "round": 0}')
        self.assertEqual(self.wait_line("left")["round"], 0)
        self.send('{"restart": "join", "round": 1, "rank": 0}')
        t.join(10)
        self.assertEqual(result, ["done"])
        self.assertEqual(sections, ["first step"])

    def test_the_functions_own_error_is_not_a_restart(self):
        @inprocess.wrap
        def train(info):
            raise ValueError("a bug in the script")

        with self.assertRaises(ValueError):
            train()
        self.wait_line("hello")
        self.assertFalse([d for _, d in self.server.lines if d.get("restart") == "left"])

    def test_cannot_tells_the_agent(self):
        @inprocess.wrap
        def train(info):
            inprocess.cannot("a NaN in the parameters")
            return 1

        self.assertEqual(train(), 1)
        self.assertEqual(self.wait_line("cannot")["why"], "a NaN in the parameters")

    def test_without_an_agent_the_function_is_called_once(self):
        with mock.patch.dict(os.environ, {"DLAUNCH_REPORT_SOCKET": ""}):
            self.assertEqual(inprocess.wrap(lambda info: (info.round, info.restarts))(), (0, 0))


if __name__ == "__main__":
    unittest.main()
