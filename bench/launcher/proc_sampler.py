"""/proc sampling of launcher_bench.py: the processes of a run, their memory, and which of them
make up a node.

ReadStatus, ProcTable, Children and Descendants read the process tree; NodeRoots and NodeProcesses
find each node's agent and its launcher processes in it; SmapsByMapping, SmapsRollup,
ResidentFrames and NodeSnapshot measure their memory; Sampler polls all of it while a run lasts
and keeps each node's peaks. Python standard library only.
"""

import array
import os
import threading

# The kinds that run dlaunch (this build and --baseline's): their nodes are dlaunch-agent processes.
DLAUNCH_KINDS = ("dlaunch", "baseline")
# The worker is stamp_worker.sh, which runs `date` and may `exec sleep`: none of them is a launcher.
WORKER_COMMS = {"stamp_worker.sh", "date", "sleep"}


def ReadStatus(pid):
    """Returns {VmHWM, VmRSS, Threads} (kB / count) of a live process, or None."""
    try:
        with open(f"/proc/{pid}/status") as f:
            out = {}
            for line in f:
                key, _, rest = line.partition(":")
                if key in ("VmHWM", "VmRSS", "Threads"):
                    out[key] = int(rest.split()[0])
            return out
    except (FileNotFoundError, ProcessLookupError, ValueError):
        return None


def ProcTable():
    """Maps pid -> (ppid, comm) for every process."""
    table = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        # comm is parenthesised and may contain spaces; fields after the last ')' are fixed.
        lpar, rpar = stat.find("("), stat.rfind(")")
        table[int(name)] = (int(stat[rpar + 2:].split()[1]), stat[lpar + 1:rpar])
    return table


def Children(table):
    children = {}
    for pid, (ppid, _) in table.items():
        children.setdefault(ppid, []).append(pid)
    return children


def Descendants(roots, children, skip=lambda pid: False):
    """Every descendant of roots; a skipped process is left out with its own descendants."""
    out, todo = [], list(roots)
    while todo:
        for c in children.get(todo.pop(), []):
            if not skip(c):
                out.append(c)
                todo.append(c)
    return out


def NodeRoots(kind, roots, table, children):
    """The one process per node that is its agent: dlaunch-agent, or the node's launcher process.
    A child that still has its parent's name is a fork that has not exec'd yet: not an agent."""
    def Forked(pid):
        return table.get(table[pid][0], (0, ""))[1] == table[pid][1]

    if kind in DLAUNCH_KINDS:
        return [pid for pid in Descendants(roots, children) if table[pid][1] == "dlaunch-agent" and not Forked(pid)]
    if kind == "torchx":  # the torchx CLI's children are the replicas, one torchrun per node
        return [pid for pid in children.get(roots[0], []) if table[pid][1] not in WORKER_COMMS and not Forked(pid)]
    return [pid for pid in roots if pid in table]


def NodeProcesses(root, table, children):
    """A node's launcher processes: its agent and the agent's helpers, not the workers."""
    return [root] + Descendants([root], children, skip=lambda pid: table[pid][1] in WORKER_COMMS)


def SmapsByMapping(pid):
    """Sums Rss (kB) of a process's mappings by what they map (library, [heap], anon, ...)."""
    sums, current = {}, None
    try:
        with open(f"/proc/{pid}/smaps") as f:
            for line in f:
                first = line.split(maxsplit=1)[0]
                if "-" in first and not first.endswith(":"):
                    parts = line.split(maxsplit=5)
                    current = parts[5].strip() if len(parts) > 5 else "[anon]"
                    current = os.path.basename(current) if current.startswith("/") else current
                elif first == "Rss:" and current is not None:
                    sums[current] = sums.get(current, 0) + int(line.split()[1])
    except OSError:
        return {}
    return dict(sorted(((k, v) for k, v in sums.items() if v), key=lambda kv: -kv[1]))


def SmapsRollup(pid):
    """Returns Rss, Pss, Anonymous, Shared_Clean, Private_Dirty (kB) of a process."""
    out = {}
    try:
        with open(f"/proc/{pid}/smaps_rollup") as f:
            for line in f:
                key, _, rest = line.partition(":")
                if key in ("Rss", "Pss", "Anonymous", "Shared_Clean", "Private_Clean", "Private_Dirty"):
                    out[key] = int(rest.split()[0])
    except OSError:
        pass
    return out


PAGE_KB = os.sysconf("SC_PAGE_SIZE") // 1024
PFN_MASK = (1 << 55) - 1


def ResidentFrames(pid):
    """The physical frame numbers of a process's resident pages (empty without root: PFNs read 0)."""
    frames = set()
    try:
        with open(f"/proc/{pid}/maps") as maps, open(f"/proc/{pid}/pagemap", "rb") as pagemap:
            for line in maps:
                lo, hi = (int(x, 16) for x in line.split(maxsplit=1)[0].split("-"))
                if lo >= 1 << 47:  # [vsyscall]
                    continue
                pagemap.seek(lo // 4096 * 8)
                entries = array.array("Q", pagemap.read((hi - lo) // 4096 * 8))
                frames.update(e & PFN_MASK for e in entries if e >> 63)
    except OSError:
        return set()
    frames.discard(0)
    return frames


def NodeSnapshot(root, table, children):
    """A node's launcher processes now: how many, their summed Rss kB, and the kB of the distinct
    physical pages they map together (None where pagemap hides frame numbers)."""
    pids = [pid for pid in NodeProcesses(root, table, children) if SmapsRollup(pid)]
    rss = sum(SmapsRollup(pid).get("Rss", 0) for pid in pids)
    frames = set().union(*(ResidentFrames(pid) for pid in pids))
    return {"procs": len(pids), "rss": rss, "unique": len(frames) * PAGE_KB if frames else None}


def NewPeak():
    return {"hwm": 0, "rss": 0, "threads": 0}


def MergePeak(acc, st):
    acc["hwm"] = max(acc["hwm"], st.get("VmHWM", 0))
    acc["rss"] = max(acc["rss"], st.get("VmRSS", 0))
    acc["threads"] = max(acc["threads"], st.get("Threads", 0))


class Sampler(threading.Thread):
    """Polls /proc for the nodes of a run until stopped; keeps each node's peak numbers."""

    def __init__(self, kind, roots, launcher_pid=None, period_s=0.02, smaps_when=None):
        super().__init__(daemon=True)
        self.kind, self.roots, self.launcher_pid, self.period_s = kind, roots, launcher_pid, period_s
        self.smaps_when = smaps_when  # callable: True once the agents should be snapshotted
        self.agents = {}  # node root pid -> peak of the agent process itself
        self.launcher = NewPeak()
        self.smaps = self.rollup = self.node = None
        self.stop = threading.Event()

    def _Tick(self):
        table = ProcTable()
        children = Children(table)
        for root in NodeRoots(self.kind, self.roots, table, children):
            st = ReadStatus(root)
            if st:
                MergePeak(self.agents.setdefault(root, NewPeak()), st)
        st = ReadStatus(self.launcher_pid) if self.launcher_pid else None
        if st:
            MergePeak(self.launcher, st)
        if self.smaps is None and self.smaps_when is not None and self.agents and self.smaps_when():
            first = min(self.agents)
            self.smaps, self.rollup = SmapsByMapping(first), SmapsRollup(first)
            self.node = NodeSnapshot(first, table, children)

    def run(self):
        while not self.stop.is_set():
            self._Tick()
            self.stop.wait(self.period_s)

    def AgentPeak(self):
        if not self.agents:
            return None
        return {k: max(a[k] for a in self.agents.values()) for k in ("hwm", "rss", "threads")}
