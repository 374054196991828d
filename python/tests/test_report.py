"""The public API against a real Unix socket server, a missing one, and a stuck one."""

import json
import os
import socket
import tempfile
import threading
import time
import types
import unittest
from unittest import mock

import dlaunch
from report_server import FakeClock, LineServer


class Base(unittest.TestCase):
    def setUp(self):
        self.servers = []

    def tearDown(self):
        dlaunch.init(socket_path="")  # inactive again
        for s in self.servers:
            s.close()

    def server(self, read=True):
        s = LineServer(read=read)
        self.servers.append(s)
        return s

    def start(self, path, rank=3):
        self.assertTrue(dlaunch.init(socket_path=path, rank=rank))
        self.clock = FakeClock()
        dlaunch._reporter.sender._clock = self.clock
        return dlaunch._reporter.sender


class InactiveTest(unittest.TestCase):
    def test_without_the_variable_every_call_does_nothing(self):
        os.environ.pop(dlaunch.SOCKET_ENV, None)
        self.assertFalse(dlaunch.init())
        self.assertFalse(dlaunch.is_active())
        self.assertIsNone(dlaunch.stats())
        self.assertIsNone(dlaunch.report(step=1, samples=2, loss=float("nan")))
        dlaunch.total_steps(10)
        dlaunch.checkpoint_saved(1)
        with dlaunch.phase("checkpoint") as p:
            pass
        p.end()
        self.assertEqual(dlaunch.rank(), 0)

    def test_the_variable_makes_it_active_with_the_rank_from_RANK(self):
        env = dict(os.environ)
        try:
            os.environ[dlaunch.SOCKET_ENV] = "/nonexistent/report.sock"
            os.environ["RANK"] = "5"
            self.assertTrue(dlaunch.init())
            self.assertEqual(dlaunch.rank(), 5)
        finally:
            os.environ.clear()
            os.environ.update(env)
            dlaunch.init(socket_path="")


class ReportTest(Base):
    def test_reports_arrive_as_the_agent_reads_them(self):
        srv = self.server()
        self.start(srv.path, rank=3)
        dlaunch.total_steps(100)
        dlaunch.report(step=10, samples=640, loss=0.5, lr=1e-3)
        lines = srv.wait_for(2)
        self.assertEqual(lines[0], {"kind": "PHASE", "total_steps": 100, "rank": 3})
        step = lines[1]
        self.assertEqual(step["kind"], "STEP")
        self.assertEqual((step["step"], step["samples"], step["loss"], step["rank"]),
                         (10, 640, 0.5, 3))
        self.assertEqual(step["total_steps"], 100)
        self.assertEqual(step["lr"], 1e-3)
        self.assertGreaterEqual(step["interval_s"], 0.0)
        self.assertNotIn("phase", step)  # nothing said: the agent takes it as training
        self.assertEqual(dlaunch.stats()["sent"], 2)

    def test_a_phase_block_says_begin_then_end_and_what_holds_after(self):
        srv = self.server()
        self.start(srv.path)
        dlaunch.report(step=7, samples=1)
        with dlaunch.phase("eval"):
            dlaunch.report(step=7, samples=0, val_loss=0.1)
            with dlaunch.phase("checkpoint"):
                pass
        dlaunch.checkpoint_saved()
        lines = srv.wait_for(7)
        begin_eval, in_eval, begin_ckpt, end_ckpt, end_eval, saved = lines[1:7]
        self.assertEqual((begin_eval["kind"], begin_eval["phase"], begin_eval["phase_name"],
                          begin_eval["phase_event"], begin_eval["step"]),
                         ("PHASE", "EVALUATING", "eval", "begin", 7))
        self.assertAlmostEqual(begin_eval["t"], time.time(), delta=60)
        self.assertEqual(in_eval["phase"], "EVALUATING")
        self.assertEqual((begin_ckpt["phase"], begin_ckpt["phase_event"]),
                         ("CHECKPOINTING", "begin"))
        # The end of a phase names the one that holds again: the agent keeps the last it heard.
        self.assertEqual((end_ckpt["phase_name"], end_ckpt["phase_event"], end_ckpt["phase"]),
                         ("checkpoint", "end", "EVALUATING"))
        self.assertGreaterEqual(end_ckpt["phase_s"], 0.0)
        self.assertEqual((end_eval["phase_name"], end_eval["phase"]), ("eval", "TRAINING"))
        self.assertEqual((saved["kind"], saved["checkpoint_step"]), ("PHASE", 7))

    def test_a_phase_is_left_out_of_the_next_reports_interval(self):
        # The interval is the time the samples took: the goodput account finds where a rank's
        # steps began from it, so a start-up phase or a checkpoint must not be inside it.
        srv = self.server()
        now = [100.0]
        fake = types.SimpleNamespace(monotonic=lambda: now[0], time=time.time)
        with mock.patch.object(dlaunch, "time", fake):
            self.start(srv.path)
            now[0] = 101.0
            with dlaunch.phase("process_group"):
                now[0] = 104.0
            now[0] = 104.5
            dlaunch.report(step=1, samples=8)
            now[0] = 105.0
            with dlaunch.phase("checkpoint"):
                now[0] = 107.0
            now[0] = 107.25
            dlaunch.report(step=2, samples=8)
            with dlaunch.phase("eval"):
                now[0] = 108.0
                dlaunch.report(step=2, samples=0)  # inside the phase: all of it was the phase's
                now[0] = 109.0
            now[0] = 109.5
            dlaunch.report(step=3, samples=8)
        lines = srv.wait_for(9)
        steps = [l for l in lines if l["kind"] == "STEP"]
        self.assertEqual([s["interval_s"] for s in steps], [1.5, 0.75, 0.75, 0.5])
        ends = [l for l in lines if l.get("phase_event") == "end"]
        self.assertEqual([(e["phase_name"], e["phase_s"]) for e in ends],
                         [("process_group", 3.0), ("checkpoint", 2.0), ("eval", 1.75)])

    def test_a_plain_phase_call_holds_until_the_next(self):
        srv = self.server()
        self.start(srv.path)
        dlaunch.phase("data")
        dlaunch.report(step=1, samples=1)
        dlaunch.phase("warmup")  # a name of the script's own: no enum, the agent keeps its phase
        lines = srv.wait_for(3)
        self.assertEqual(lines[0]["phase"], "LOADING_DATA")
        self.assertEqual(lines[1]["phase"], "LOADING_DATA")
        self.assertEqual((lines[2]["phase_name"], lines[2]["phase_event"]), ("warmup", "begin"))
        self.assertNotIn("phase", lines[2])

    def test_many_threads_never_tear_a_line(self):
        srv = self.server()
        self.start(srv.path)
        per_thread, threads = 300, 4

        def work(t):
            for i in range(per_thread):
                dlaunch.report(step=i, samples=1, thread=t, pad="x" * 200)

        ts = [threading.Thread(target=work, args=(t,)) for t in range(threads)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        sent = dlaunch.stats()["sent"]
        self.assertGreater(sent, 0)
        lines = srv.wait_for(sent)
        self.assertEqual(len(lines), sent)
        self.assertEqual(srv.raw_errors, [])
        for t in range(threads):  # each thread's lines in its own order
            steps = [d["step"] for d in lines if d["thread"] == t]
            self.assertEqual(steps, sorted(steps))


class BrokenSocketTest(Base):
    def test_a_missing_socket_is_tried_again_only_every_few_seconds(self):
        path = os.path.join(tempfile.mkdtemp(), "absent.sock")
        sender = self.start(path)
        for i in range(100):
            dlaunch.report(step=i, samples=1)
        self.assertEqual(sender.failed_connects, 1)
        self.assertEqual(sender.dropped, 100)
        self.clock.now += sender.reconnect_s
        dlaunch.report(step=100, samples=1)
        self.assertEqual(sender.failed_connects, 2)

    def test_wrong_paths_never_raise(self):
        regular = tempfile.NamedTemporaryFile()
        for path in (regular.name, "/", "x" * 300, "\0bad"):
            self.start(path)
            dlaunch.report(step=1, samples=1)
            with dlaunch.phase("eval"):
                pass
            self.assertEqual(dlaunch.stats()["sent"], 0, path)
            self.assertEqual(dlaunch.stats()["dropped"], 3, path)

    def test_an_agent_that_goes_away_and_comes_back(self):
        srv = self.server()
        sender = self.start(srv.path)
        dlaunch.report(step=1, samples=1)
        self.assertEqual(srv.wait_for(1)[0]["step"], 1)
        srv.close()
        for i in range(2, 12):
            dlaunch.report(step=i, samples=1)  # EPIPE, then no connection: dropped, no error
        self.assertGreaterEqual(sender.dropped, 9)
        back = LineServer()
        self.servers.append(back)
        os.rename(back.path, srv.path)
        self.clock.now += sender.reconnect_s
        dlaunch.report(step=12, samples=1)
        line = back.wait_for(1)[0]
        self.assertEqual(line["step"], 12)
        # The agent learns how many reports it missed.
        self.assertEqual(line["reports_dropped"], sender.dropped)

    def test_an_agent_that_does_not_read_never_blocks_training(self):
        srv = self.server(read=False)
        sender = self.start(srv.path)
        n = 3000
        worst = 0.0
        start = time.monotonic()
        for i in range(n):
            t0 = time.monotonic()
            dlaunch.report(step=i, samples=1, pad="y" * 1000)
            worst = max(worst, time.monotonic() - t0)
        total = time.monotonic() - start
        self.assertGreater(sender.dropped, 0, "the socket buffer never filled")
        self.assertLess(worst, 0.5)  # a blocking send would wait here forever
        self.assertLess(total, 20.0)
        srv.may_read.set()
        lines = srv.wait_for(sender.sent)
        self.assertEqual(srv.raw_errors, [])  # a line the socket took in part was finished
        steps = [d["step"] for d in lines]
        self.assertEqual(steps, sorted(steps))
        self.assertEqual(len(lines) + sender.dropped, n)


    def test_a_line_the_socket_takes_in_part_is_finished_before_the_next(self):
        # A stream socket takes part of a line only when the line is bigger than what fits at
        # once; the rest must go out before any other line or the agent reads a torn line.
        srv = self.server(read=False)
        sender = self.start(srv.path)
        n = 40
        partial = 0
        for i in range(n):
            dlaunch.report(step=i, samples=1, pad="z" * 300_000)
            partial += bool(sender._pending)
        self.assertGreater(partial, 0, "no line was taken in part")
        srv.may_read.set()
        i, deadline = n, time.monotonic() + 30
        while sender.sent < 6 and time.monotonic() < deadline:  # the tails go out first
            dlaunch.report(step=i, samples=1, pad="z" * 300_000)
            i += 1
            # A training step between reports. The reader here is a thread of this process, not
            # an agent: a loop that only builds 300 KB lines holds the GIL for most of each
            # switch interval, and once in 20 runs the reader had not read a line in 30 s.
            time.sleep(0.001)
        lines = srv.wait_for(sender.sent - bool(sender._pending))
        self.assertEqual(srv.raw_errors, [])
        self.assertGreaterEqual(len(lines), 5)
        steps = [d["step"] for d in lines]
        self.assertEqual(steps, sorted(steps))


class ForkTest(Base):
    @unittest.skipUnless(hasattr(os, "fork"), "needs fork")
    def test_a_forked_child_is_silent_and_leaves_the_parents_connection(self):
        srv = self.server()
        sender = self.start(srv.path)
        dlaunch.report(step=1, samples=1)
        srv.wait_for(1)
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:  # a DataLoader worker
            try:
                os.close(r)
                dlaunch.report(step=99, samples=1)
                with dlaunch.phase("data"):
                    pass
                os.write(w, b"1" if not dlaunch.is_active() else b"0")
            finally:
                os._exit(0)
        os.close(w)
        verdict = os.read(r, 1)
        os.close(r)
        os.waitpid(pid, 0)
        self.assertEqual(verdict, b"1")
        dlaunch.report(step=2, samples=1)
        lines = srv.wait_for(2)
        self.assertEqual([d["step"] for d in lines], [1, 2])
        self.assertEqual(sender.connects, 1)  # the same connection, still open
        self.assertEqual(srv.connections, 1)


if __name__ == "__main__":
    unittest.main()
