"""The TCP connections of the process groups a training function made, so that an in-process
restart can cut them when the round stops (dlaunch.inprocess).

Why: a Gloo collective cannot be aborted from another thread (abort(), shutdown() and
destroy_process_group() all return and leave it blocked, docs/restarts.md), and destroying an
abandoned group does not close its connections either: the group lives on in references held
from C++ (measured with PyTorch 2.11: a kept rank's socket count is the same before and after
destroy_process_group()). So a rank blocked on a peer that is alive - a kept rank that is itself
blocked, or already left - stays blocked until that peer's process ends. Shutting the group's
connections down frees both sides at once: the local collective fails ("Connection closed by
peer") and so does every peer's that waits on this rank.

Which connections: those opened while torch.distributed made a process group (its private
_new_process_group_helper, which init_process_group and new_group both call; init_process_group
itself where that is absent). The rendezvous store's connection is made before and is left
alone, and so is any connection the job opens itself. A group made lazily (TORCH_GLOO_LAZY_INIT)
connects later and is not cut: its collectives end at the group's timeout as before.
"""
import os
import socket
import threading

_lock = threading.Lock()
_tracked = {}  # fd -> socket inode of a connection a process group opened
_patched = False


def _socket_inodes():
    """fd -> inode of every socket of this process."""
    out = {}
    try:
        fds = os.listdir("/proc/self/fd")
    except OSError:
        return out
    for fd in fds:
        try:
            link = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            continue
        if link.startswith("socket:["):
            out[int(fd)] = link[8:-1]
    return out


def _tcp_inodes():
    inodes = set()
    for name in ("/proc/self/net/tcp", "/proc/self/net/tcp6"):
        try:
            with open(name) as f:
                next(f, None)
                for line in f:
                    cols = line.split()
                    if len(cols) > 9 and cols[3] != "0A":  # 0A: LISTEN, nothing to cut
                        inodes.add(cols[9])
        except OSError:
            pass
    return inodes


def _recording(make):
    def made(*args, **kwargs):
        before = _socket_inodes()
        try:
            return make(*args, **kwargs)
        finally:
            after = _socket_inodes()
            tcp = _tcp_inodes()
            with _lock:
                for fd, inode in after.items():
                    if before.get(fd) != inode and inode in tcp:
                        _tracked[fd] = inode
    made.__wrapped__ = make
    return made


def track():
    """Records the connections of the process groups made from now on. True if it could (torch
    imported, its group factory found); once per process."""
    global _patched
    if _patched:
        return True
    c10d = __import__("sys").modules.get("torch.distributed.distributed_c10d")
    if c10d is None:
        return False
    name = "_new_process_group_helper" if hasattr(c10d, "_new_process_group_helper") else None
    if name is None:
        return False
    setattr(c10d, name, _recording(getattr(c10d, name)))
    _patched = True
    return True


def cut():
    """Shuts down every connection recorded (safe from any thread); returns how many. The fds
    stay open (the groups that own them close them, if they are ever freed)."""
    with _lock:
        tracked = dict(_tracked)
        _tracked.clear()
    now = _socket_inodes()
    n = 0
    for fd, inode in tracked.items():
        if now.get(fd) != inode:
            continue  # closed already, the fd reused: not ours any more
        try:
            s = socket.socket(fileno=fd)
        except OSError:
            continue
        try:
            s.shutdown(socket.SHUT_RDWR)
            n += 1
        except OSError:
            pass
        finally:
            s.detach()
    return n
