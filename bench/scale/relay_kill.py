"""scale_bench's --kill-relay-at-s: SIGKILL relay 0 once round 0 has run that long, then read
from the journal whether its agents' sessions moved to the launcher (docs/relays.md).
Standard library only."""

import json
import os
import signal
import threading
import time

import procfs


class RelayKiller(threading.Thread):
    """Waits for round 0's workers_started in `job_dir`'s journal, `at_s` more, then kills
    relay 0 and notes the time (killed_at, Unix seconds)."""

    def __init__(self, job_dir, at_s):
        super().__init__(daemon=True)
        self.job_dir, self.at_s = job_dir, at_s
        self.killed_at = None
        self.stop = threading.Event()

    def run(self):
        path = os.path.join(self.job_dir, "events.jsonl")
        offset = 0
        while not self.stop.is_set():  # follows the journal: it grows to many MB at 10,000 nodes
            try:
                with open(path, "rb") as f:
                    f.seek(offset)
                    chunk = f.read()
                    offset += chunk.rfind(b"\n") + 1
                if b'"workers_started"' in chunk:
                    break
            except OSError:
                pass
            time.sleep(0.2)
        if self.stop.wait(self.at_s):
            return
        port_file = os.path.join(self.job_dir, "relays", "relay-0.port")
        for pid in procfs.Pids(port_file):
            with open(f"/proc/{pid}/comm") as f:
                if f.read().strip() != "dlaunch-relay":
                    continue
            os.kill(pid, signal.SIGKILL)
            self.killed_at = time.time()


def Summarize(events_path, killed_at):
    """moved (session_resumed events), named (the sessions relay_lost found still on the relay:
    an agent quicker than the launcher moved first), lost_s (the kill -> relay_lost), back_s
    (relay_lost -> the last node back), nodes_lost (node_lost events), rounds (the last round)."""
    out = {"moved": "-", "nodes_lost": 0, "rounds": 0}
    resumed, relay_nodes, lost_at, back = 0, None, None, None
    try:
        f = open(events_path)
    except OSError:
        return out
    with f:
        for line in f:
            if '"relay_lost"' not in line and '"session_resumed"' not in line and \
               '"node_lost"' not in line and '"round_started"' not in line:
                continue
            d = json.loads(line)
            if "relay_lost" in d:
                relay_nodes = d["relay_lost"].get("nodes", 0)
                lost_at = procfs.ParseTime(d["time"])
            elif "session_resumed" in d:
                resumed += 1
                back = max(back or 0, d["session_resumed"].get("after_s", 0))
            elif "node_lost" in d:
                out["nodes_lost"] += 1
            else:
                out["rounds"] = max(out["rounds"], d.get("round", 0))
    out["moved"] = resumed
    out["named"] = relay_nodes if relay_nodes is not None else "-"
    if killed_at and lost_at:
        out["lost_s"] = lost_at - killed_at
    out["back_s"] = back
    return out
