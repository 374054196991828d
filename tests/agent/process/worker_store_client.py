"""Drives the agent's workers' store as PyTorch's own TCPStore client does: every Store call
that init_process_group, barriers and scripts use, on the PyTorch this interpreter imports
(1.13 or 2.x). Prints "ok <torch version>" and exits 0, or raises.

    python worker_store_client.py HOST PORT
"""
import sys
import threading
import time
from datetime import timedelta

import torch
from torch.distributed import PrefixStore, TCPStore

host, port = sys.argv[1], int(sys.argv[2])
timeout = timedelta(seconds=30)
# As torch's env:// rendezvous makes it under TORCHELASTIC_USE_AGENT_STORE (world_size given,
# so the client adds itself to "init/").
# The version in the prefix: two clients of one server keep apart.
prefix = f"/worker/attempt_0/{torch.__version__}"
a = PrefixStore(prefix, TCPStore(host, port, 2, False, timeout))
b = PrefixStore(prefix, TCPStore(host, port, 2, False, timeout))

a.set("k", "v")
assert b.get("k") == b"v"
assert a.add("n", 5) == 5 and b.add("n", -2) == 3
assert a.compare_set("k", "v", "w") == b"w"
assert a.compare_set("k", "v", "x") == b"w"
assert a.compare_set("fresh", "", "y") == b"y"
assert a.num_keys() >= 3
assert a.delete_key("fresh") and not a.delete_key("fresh")

# A wait answered when another client sets the key.
got = []
waiter = threading.Thread(target=lambda: got.append(b.get("late")))
waiter.start()
time.sleep(0.2)
a.set("late", "here")
waiter.join(10)
assert got == [b"here"], got

# A wait that times out, then the same connection goes on working (2.x cancels the wait).
try:
    b.wait(["never"], timedelta(milliseconds=300))
    raise AssertionError("wait for a missing key returned")
except RuntimeError as e:  # DistStoreError derives from RuntimeError
    assert "imeout" in str(e) or "timeout" in str(e).lower(), e
if not torch.__version__.startswith("1."):
    assert b.get("k") == b"w"
    a.append("ap", "x")
    a.append("ap", "y")
    assert b.get("ap") == b"xy"
    a.multi_set(["m1", "m2"], ["v1", "v2"])
    assert b.multi_get(["m2", "m1"]) == [b"v2", b"v1"]
    assert b.check(["m1"]) and not b.check(["nope"])
    raw = TCPStore(host, port, None, False, timeout)
    raw.queue_push("q", "x")
    assert raw.queue_len("q") == 1 and raw.queue_pop("q") == b"x"
    assert "m1" in [k.split("/")[-1] for k in raw.list_keys()]
print("ok", torch.__version__)
