"""dlaunch._group_sockets with real TCP connections and a stand-in for torch's group factory
(the standard library only): what a group opens is recorded and cut, and a peer blocked reading
from it is freed; what the job opens itself, and the listening socket, are left alone."""
import socket
import sys
import threading
import types
import unittest

from dlaunch import _group_sockets


class GroupSocketsTest(unittest.TestCase):
    def setUp(self):
        self.server = socket.create_server(("127.0.0.1", 0))
        self.addr = self.server.getsockname()
        self.opened = []  # the stand-in group's connections, kept open as a live group keeps them
        c10d = types.ModuleType("torch.distributed.distributed_c10d")

        def make_group():
            conn = socket.create_connection(self.addr)
            self.opened.append(conn)
            return "group"

        c10d._new_process_group_helper = make_group
        self.c10d = c10d
        sys.modules["torch.distributed.distributed_c10d"] = c10d
        _group_sockets._patched = False
        _group_sockets._tracked.clear()

    def tearDown(self):
        sys.modules.pop("torch.distributed.distributed_c10d", None)
        _group_sockets._patched = False
        _group_sockets._tracked.clear()
        for s in self.opened:
            s.close()
        self.server.close()

    def test_without_torch_it_records_nothing(self):
        sys.modules.pop("torch.distributed.distributed_c10d")
        self.assertFalse(_group_sockets.track())
        self.assertEqual(_group_sockets.cut(), 0)

    def test_a_groups_connection_is_cut_and_frees_the_peer_blocked_on_it(self):
        self.assertTrue(_group_sockets.track())
        own = socket.create_connection(self.addr)  # the job's own: made outside any group
        self.addCleanup(own.close)
        own_peer, _ = self.server.accept()
        self.addCleanup(own_peer.close)
        self.assertEqual(self.c10d._new_process_group_helper(), "group")
        peer, _ = self.server.accept()
        self.addCleanup(peer.close)
        got = []
        reader = threading.Thread(target=lambda: got.append(peer.recv(1)))
        reader.start()  # blocked, as a peer's collective waiting on this rank
        self.assertEqual(_group_sockets.cut(), 1)
        reader.join(10)
        self.assertFalse(reader.is_alive())
        self.assertEqual(got, [b""])  # end of stream: the peer sees the connection closed
        # The job's own connection still works both ways; the fd of the cut one stays open.
        own.sendall(b"x")
        self.assertEqual(own_peer.recv(1), b"x")
        self.assertGreaterEqual(self.opened[0].fileno(), 0)
        self.assertEqual(_group_sockets.cut(), 0)  # cut once

    def test_a_closed_and_reused_fd_is_not_cut(self):
        _group_sockets.track()
        self.c10d._new_process_group_helper()
        self.server.accept()[0].close()
        fd = self.opened[0].fileno()
        self.opened.pop().close()  # the group freed it; the fd number may be reused
        other = socket.create_connection(self.addr)
        self.addCleanup(other.close)
        other_peer, _ = self.server.accept()
        self.addCleanup(other_peer.close)
        if other.fileno() != fd:
            self.skipTest("the fd number was not reused")
        self.assertEqual(_group_sockets.cut(), 0)
        other.sendall(b"y")
        self.assertEqual(other_peer.recv(1), b"y")


if __name__ == "__main__":
    unittest.main()
