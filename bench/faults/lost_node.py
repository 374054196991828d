#!/usr/bin/python3
"""A lost node's next round: how soon after a node is lost the next round's first worker starts,
and whether the lost node's workers were gone before it, for two builds side by side.

Runs the fault suite's own scenarios on its three network-namespace hosts (needs root; see
tests/cluster/fault_test.cc): `PartitionedNodeDropsOutAndTheJobGoesOn` (h2's link cut while
every rank runs; heartbeat 1 s x 3, grace 2 s, nodes 2:3, one restart) and
`KilledAgentsNodeDropsOutAndTheJobGoesOn` (h2's agent SIGKILLed). The test binary is this
checkout's; the dlaunch binaries are each build's (DLAUNCH_TEST_BIN_DIR), so both builds run the
very same scenario and measurement, interleaved run by run. Each run prints one `lost-node`
line (named, workers gone, round 1 started: from the fault; round 1: from the naming).

  lost_node.py --before OLD_BUILD/bin --after build/bin [--reps 20] [--grace 2s] [--json FILE]

--grace sets the jobs' stop.grace (DLAUNCH_FAULT_STOP_GRACE; the suite's own is 2 s, dlaunch's
default 10 s): the build before waited a grace for a cut-off node, this one does not.
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TESTS = {
    "partition": "FaultTest.PartitionedNodeDropsOutAndTheJobGoesOn",
    "agent-killed": "FaultTest.KilledAgentsNodeDropsOutAndTheJobGoesOn",
}
LINE = re.compile(r"lost-node (\S+): named ([0-9.]+) s, workers gone ([0-9.]+) s, round 1 "
                  r"started ([0-9.]+) s after the fault; (-?[0-9.]+) s after it was named")


def RunOnce(test_bin, bin_dir, scenario, grace):
    env = dict(os.environ, DLAUNCH_TEST_BIN_DIR=os.path.abspath(bin_dir),
               DLAUNCH_FAULT_SUITE="full", DLAUNCH_FAULT_STOP_GRACE=grace)
    r = subprocess.run([test_bin, f"--gtest_filter={TESTS[scenario]}"], env=env,
                       capture_output=True, text=True, timeout=300)
    m = LINE.search(r.stdout)
    passed = r.returncode == 0
    if not m:
        return {"passed": passed, "error": r.stdout[-2000:]}
    named, gone, round1, after_named = (float(x) for x in m.groups()[1:])
    return {"passed": passed, "named": named, "gone": gone, "round1": round1,
            "after_named": after_named, "overlap": gone >= round1}


def Summary(runs, key):
    vals = [r[key] for r in runs if key in r]
    if not vals:
        return "-"
    return f"{statistics.median(vals):.2f} ({min(vals):.2f}-{max(vals):.2f})"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--before", required=True, help="the other build's bin/")
    ap.add_argument("--after", default=os.path.join(ROOT, "build", "bin"))
    ap.add_argument("--test-bin", default=os.path.join(ROOT, "build", "bin", "cluster_test"))
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--scenarios", default="partition,agent-killed")
    ap.add_argument("--grace", default="2s")
    ap.add_argument("--json", default="")
    args = ap.parse_args()
    results = {}
    for scenario in args.scenarios.split(","):
        for rep in range(args.reps):
            for build, bin_dir in (("before", args.before), ("after", args.after)):
                r = RunOnce(args.test_bin, bin_dir, scenario, args.grace)
                results.setdefault(scenario, {}).setdefault(build, []).append(r)
                print(f"{scenario} {build} {rep + 1}/{args.reps}: {json.dumps(r)[:300]}",
                      file=sys.stderr, flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)
    # "test passed" is the after build's proof (the before build fails the test's new check
    # that a fenced agent kills its workers); "overlaps" counts runs where the lost node's
    # workers were not yet gone when round 1's first worker started.
    print("| fault | build | runs measured | test passed | named after the fault, s "
          "| round 1 after named, s | lost node's workers gone after the fault, s | overlaps |")
    print("|---|---|---|---|---|---|---|---|")
    for scenario, builds in results.items():
        for build, runs in builds.items():
            measured = sum(1 for r in runs if "named" in r)
            passed = sum(1 for r in runs if r["passed"])
            overlaps = sum(1 for r in runs if r.get("overlap"))
            print(f"| {scenario} | {build} | {measured}/{len(runs)} | {passed}/{len(runs)} | "
                  f"{Summary(runs, 'named')} | {Summary(runs, 'after_named')} | "
                  f"{Summary(runs, 'gone')} | {overlaps} |")


if __name__ == "__main__":
    main()
