"""What naming the rank that stopped costs: an unmodified DDP script (tests/integration/
ddp_stopped_rank.py: gloo, no reports) on 2 local nodes x 2 ranks, one rank stopped in its own
code while its peers wait in backward, run under `dlaunch run` with the stacks taken by py-spy
and, with py-spy off the agents' reach, by gdb. From each job's events.jsonl: the seconds from
the stall's detection (hang_detected) to the last rank's stacks (stacks_recorded) and to the
root cause (root_cause, which before the stall inquiry was written at the detection itself), and
whether the root cause named the stopped rank. Python standard library only.

    bench/faults/stall_verdict.py [--runs 5] [--build build] [--py-spy build/tools/py-spy/bin/py-spy]
                                  [--label NAME]

Against the build before the stall inquiry, build that commit in a second checkout and pass its
build folder with --build (py-spy from this one).
"""
import argparse
import datetime
import json
import os
import statistics
import subprocess
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(ROOT, "tests", "integration", "ddp_stopped_rank.py")


def stamp(text):
    return datetime.datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


def one_run(dlaunch, stopped, env):
    with tempfile.TemporaryDirectory(prefix="stall-verdict-") as tmp:
        job_dir = os.path.join(tmp, "job")
        subprocess.run([dlaunch, "run", "--nnodes", "2", "--nproc-per-node", "2", "--job-dir",
                        job_dir, "--heartbeat", "1", "--grace", "2", "--stall-timeout", "8",
                        "--no-preflight", "--", "/usr/bin/python3", SCRIPT, str(stopped)],
                       cwd=tmp, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                       timeout=240, check=False)
        detected = stacks = cause = None
        named = None
        sources = set()
        with open(os.path.join(job_dir, "events.jsonl")) as f:
            for line in f:
                e = json.loads(line)
                if "hang_detected" in e and detected is None:
                    detected = stamp(e["time"])
                elif "stacks_recorded" in e:
                    stacks = stamp(e["time"])
                    sources.add(e["stacks_recorded"].get("source", ""))
                elif "root_cause" in e and cause is None:
                    cause = stamp(e["time"])
                    named = e["root_cause"]["failure"].get("rank")
        return {"to_stacks_s": stacks - detected, "to_cause_s": cause - detected,
                "right": named == stopped, "sources": sorted(sources)}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--py-spy", default=None)
    ap.add_argument("--label", default="", help="the build's name in the table")
    args = ap.parse_args()
    dlaunch = os.path.join(args.build, "bin", "dlaunch")
    py_spy = args.py_spy or os.path.join(args.build, "tools", "py-spy", "bin", "py-spy")
    base = {k: v for k, v in os.environ.items() if k != "DLAUNCH_PY_SPY"}
    # py-spy off PATH as well, so that gdb is the only source.
    base["PATH"] = ":".join(p for p in base.get("PATH", "").split(":")
                            if not os.path.exists(os.path.join(p, "py-spy")))
    modes = {"py-spy": dict(base, DLAUNCH_PY_SPY=py_spy), "gdb": base}
    print("| build | stacks from | runs | right | detection -> last stacks (median, max) | "
          "detection -> root cause (median, max) |")
    print("|---|---|---|---|---|---|")
    for mode, env in modes.items():
        results = [one_run(dlaunch, 1 + i % 2, env) for i in range(args.runs)]
        stacks = [r["to_stacks_s"] for r in results]
        cause = [r["to_cause_s"] for r in results]
        right = sum(r["right"] for r in results)
        print(f"| {args.label or args.build} | {mode} ({', '.join(sorted(set(s for r in results for s in r['sources'])))}) | "
              f"{len(results)} | {right} | {statistics.median(stacks):.2f} s, {max(stacks):.2f} s | "
              f"{statistics.median(cause):.2f} s, {max(cause):.2f} s |", flush=True)


if __name__ == "__main__":
    main()
