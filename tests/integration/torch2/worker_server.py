"""A main under torch.distributed.elastic.control_plane.worker_main(), which serves torch's debug
handlers on TORCH_WORKER_SERVER_SOCKET: the rank asks its own server for a ping and for its
Python tracebacks, as the agent's stack dumper would, and checks it sees its own frame."""
import os
import socket
import stat
import sys

from torch.distributed.elastic.control_plane import worker_main


def ask(path, handler):
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(30)
        s.connect(path)
        s.sendall(f"POST /handler/{handler} HTTP/1.0\r\nHost: rank\r\n"
                  "Content-Length: 0\r\n\r\n".encode())
        reply = b""
        while chunk := s.recv(65536):
            reply += chunk
    return reply.decode(errors="replace")


def check_own_server():
    path = os.environ["TORCH_WORKER_SERVER_SOCKET"]
    parent = os.stat(os.path.dirname(path))
    if stat.S_IMODE(parent.st_mode) & 0o077:
        return f"{os.path.dirname(path)} is open to others: {oct(parent.st_mode)}"
    if not ask(path, "ping").endswith("pong"):
        return f"{path}: no pong"
    if "check_own_server" not in ask(path, "dump_traceback"):
        return f"{path}: the tracebacks lack this rank's frame"
    return ""


def main():
    with worker_main():
        problem = check_own_server()
    if problem:
        print(f"rank {os.environ['RANK']}: {problem}", file=sys.stderr)
        return 1
    path = os.environ["TORCH_WORKER_SERVER_SOCKET"]
    print(f"worker_server: rank {os.environ['RANK']} ok at {path}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
