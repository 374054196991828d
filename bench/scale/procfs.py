"""What bench/scale's scripts read from /proc and the journal. Standard library only."""

import datetime
import os

TICKS = os.sysconf("SC_CLK_TCK")


def CpuTicks(pid):
    """utime + stime of a live process, in clock ticks, or None."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return int(fields[11]) + int(fields[12])
    except (OSError, IndexError, ValueError):
        return None


def ParseTime(s):
    """An events.jsonl time (RFC 3339, UTC) as Unix seconds."""
    return datetime.datetime.fromisoformat(s.replace("Z", "+00:00")).timestamp()


def Pids(needle):
    """Processes whose command line or environment holds `needle`."""
    out = []
    for p in os.listdir("/proc"):
        if not p.isdigit():
            continue
        for what in ("cmdline", "environ"):
            try:
                with open(f"/proc/{p}/{what}", "rb") as f:
                    if needle.encode() in f.read():
                        out.append(int(p))
                        break
            except OSError:
                pass
    return out
