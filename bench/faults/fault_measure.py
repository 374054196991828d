"""What one run of fault_bench.py measured: from the workers' stamps, the times from the fault to
the first and the last peer's SIGTERM and to round 1 running; from dlaunch's events.jsonl or
torchrun's and ft_launcher's log, the detection and the root cause named; from /proc, the
orphans left behind (Measure). Python standard library only.
"""
import calendar
import json
import os
import re
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fault_run import NODES, NPROC, SCENARIOS, SELF_FAULT_STAMP, ProcsWithEnv, ReadStamps, WaitFor  # noqa: E402


def Measure(run, finished):
    """The result of one run: what its stamps, the launcher's events or log and /proc show."""
    stamps = ReadStamps(run.stamps)
    fault = run.fault_time
    if fault is None and run.scenario in SELF_FAULT_STAMP:
        what = SELF_FAULT_STAMP[run.scenario]
        times = [s[3] for s in stamps if s[0] == what and s[2] == 0]
        fault = min(times) if times else None
    result = {"kind": run.kind, "scenario": run.scenario, "detected": False}
    if fault is None:
        result["error"] = "fault not seen"
        return result
    expected = SCENARIOS[run.scenario][2]
    # The ranks that should be told to stop: all but the faulty rank, or but the faulty
    # node's ranks when the whole node is the fault (they are frozen or gone).
    node_fault = expected is not None and expected[1] is None
    peers = [r for r in range(NODES * NPROC)
             if not (expected and (r == expected[1] or (node_fault and r // NPROC == expected[2])))]
    if run.scenario == "exit-hang":
        peers = [expected[1]]  # the others exited 0; the hung rank is the one to stop
    told = {}
    for event, rank, round_, t in stamps:
        if event == "sigterm" and round_ == 0 and rank in peers:
            told.setdefault(rank, t)
    if told:
        result["stop_s"] = min(told.values()) - fault
    if len(told) == len(peers):
        result["all_stop_s"] = max(told.values()) - fault
    starts = [s for s in stamps if s[0] == "start" and s[2] == 1]
    # Every launcher goes on without a lost node (nodes 2:3): round 1 has one node fewer.
    world_after = NODES * NPROC - (NPROC if node_fault else 0)
    if len({s[1] for s in starts}) == world_after:
        result["restart_s"] = max(s[3] for s in starts) - fault
    if run.kind == "dlaunch":
        MeasureDlaunch(run, fault, expected, result)
    else:
        MeasureTorchrun(run, fault, expected, result, bool(told))
    # Restart time as the issue counts it: from the decision to every new worker running.
    # torchrun records no decision; its first SIGTERM is the earliest sign of one.
    decided = result.get("detect_s", result.get("stop_s"))
    if "restart_s" in result and decided is not None:
        result["restart_after_detect_s"] = result["restart_s"] - decided
    if run.scenario == "launcher-sigkill":
        result["detected"] = hasattr(run, "gone_s")
        if result["detected"]:
            result["stop_s"] = run.gone_s
    # Orphans: anything of the job alive 5 s after the launcher ended (or was killed). A
    # launcher still running at the cap has no orphans yet: the job itself never ended.
    result["ended"] = finished
    if finished:
        # Once none is left, none can come back: no need to wait the 5 s out.
        WaitFor(lambda: not ProcsWithEnv(run.tag), max(0.0, run.ended + 5 - time.time()),
                period=0.1)
        result["orphans"] = len(ProcsWithEnv(run.tag))
    result["exit_codes"] = [p.poll() for p in run.procs]
    return result


def MeasureDlaunch(run, fault, expected, result):
    try:
        with open(os.path.join(run.job_dir, "events.jsonl")) as f:
            events = [json.loads(line) for line in f if line.strip()]
    except (OSError, ValueError):
        events = []
    detected = [e for e in events if "failure_detected" in e]
    if detected:
        stamp = detected[0]["time"]  # 2026-11-23T19:05:01.123Z
        t = calendar.timegm(time.strptime(stamp[:19], "%Y-%m-%dT%H:%M:%S"))
        t += float("0." + stamp[20:23])
        result["detect_s"] = t - fault
        result["detected"] = result["detect_s"] <= run.args.cap
    causes = [e["root_cause"] for e in events if "root_cause" in e]
    if expected and causes:
        f = causes[0]["failure"]
        cls, rank, node = expected
        result["cause_ok"] = (f.get("failure_class") == cls and f.get("node_rank") == node and
                              (rank is None or f.get("rank") == rank))
        result["cause"] = f.get("description", "")


def MeasureTorchrun(run, fault, expected, result, stopped):
    result["detected"] = stopped or result.get("restart_s") is not None
    with open(os.path.join(run.dir, "launcher.out"), errors="replace") as f:
        out = f.read()
    logged = [t for t in LogTimes(out, fault) if t >= fault - 0.001]
    if logged:
        result["detect_s"] = min(logged) - fault
    if not expected:
        return
    m = re.search(r"Root Cause \(first observed failure\):.*?rank\s*:\s*(\d+)", out, re.S)
    # ft_launcher's rank monitor names the rank whose heartbeats stopped.
    hung = re.search(r"RankMonServer\d+@[^:]*:(\d+)\] Did not get", out)
    named = m or hung
    if named:
        result["cause_ok"] = expected[1] is not None and int(named.group(1)) == expected[1]


# The first trace of a failure in torchrun's and ft_launcher's logs: a failed worker, a missed
# rank heartbeat, a stop of the workers.
FAILURE_LOG = re.compile(r"failed \(exitcode|Did not get (initial|subsequent) heartbeat|"
                         r"closing signal SIGTERM|FT timeout elapsed")
# ft_launcher: [2026-11-27 01:02:41,371]; torch.distributed.elastic: E1127 01:03:40.639000
LOG_TIME = re.compile(r"^\[(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d),(\d{3})\]|"
                      r"^[EWI](\d{4} \d\d:\d\d:\d\d)\.(\d{6})")


def LogTimes(out, near):
    """Unix times (local time, millisecond resolution) of the log lines in FAILURE_LOG."""
    year = time.localtime(near).tm_year
    times = []
    for line in out.splitlines():
        m = LOG_TIME.match(line)
        if not m or not FAILURE_LOG.search(line):
            continue
        if m.group(1):
            t = time.mktime(time.strptime(m.group(1), "%Y-%m-%d %H:%M:%S")) + int(m.group(2)) / 1e3
        else:
            t = time.mktime(time.strptime(f"{year}{m.group(3)}", "%Y%m%d %H:%M:%S"))
            t += int(m.group(4)) / 1e6
        times.append(t)
    return times
