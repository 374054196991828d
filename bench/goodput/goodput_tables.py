"""The goodput bench's figures, from the job's own time stamps (ddp_job.py), alike for every
launcher; and its tables. Standard library only.

Rank 0's processes, in the order they started, make one chain of stamps from the launch command
to the launcher's exit; each stretch between two stamps goes to one category, so they add up to
the wall time:

  start-up     the command to rank 0's process start (launch), then its import, process group,
               model and checkpoint load and first step (round 0)
  restart      the same four phases of every later process of rank 0
  failure      a process's last stamp to the next one's start: the fault's detection, the stop,
               the back-off and the launch of the next round
  checkpoint   rank 0's checkpoint writes
  redone       steps a later process ran again (its checkpoint was older)
  productive   every other step (a process's first step is start-up: DDP's first iteration)
  tail         the last stamp to the launcher's exit
"""
import statistics

CATEGORIES = ("productive", "start-up", "restart", "failure", "checkpoint", "redone", "tail")
PHASES = (("imported", "import"), ("pg", "process group"), ("loaded", "load"))
RESTART_COLUMNS = ("fault to start", "import", "process group", "load", "first step",
                   "fault to stepping")


def _processes(records):
    """Rank 0's processes: their stamps in time order, the processes by start time."""
    by_pid = {}
    for r in records:
        if r.get("rank") == 0:
            by_pid.setdefault(r["pid"], []).append(r)
    procs = [sorted(v, key=lambda r: r["t"]) for v in by_pid.values()]
    return sorted(procs, key=lambda p: p[0]["t"])


def Analyse(kind, records, faults, invoked, ended, total_steps):
    out = {"kind": kind, "wall_s": ended - invoked, "faults": [f for f, _ in faults]}
    procs = _processes(records)
    cats = dict.fromkeys(CATEGORIES, 0.0)
    done = any(r["e"] == "done" for r in records if r.get("rank") == 0)
    out["finished"] = done
    if not procs:
        out["error"] = "rank 0 never started"
        return out
    # The last process that ran a step decides which steps were redone.
    last_run = {}
    for i, p in enumerate(procs):
        for r in p:
            if r["e"] == "step":
                last_run[r["step"]] = i
    restarts = []
    fault_times = [t for _, t in faults]
    prev = invoked
    for i, p in enumerate(procs):
        gap = p[0]["t"] - prev
        cats["start-up" if i == 0 else "failure"] += gap
        phase_cat = "start-up" if i == 0 else "restart"
        phases = {}
        last, first_step = p[0]["t"], True
        for r in p[1:]:
            d = r["t"] - last
            name = dict(PHASES).get(r["e"])
            if name:
                phases[name] = d
                cats[phase_cat] += d
            elif r["e"] == "step" and first_step:
                phases["first step"] = d
                cats[phase_cat] += d
                first_step = False
            elif r["e"] == "step":
                cats["redone" if last_run[r["step"]] != i else "productive"] += d
            elif r["e"] == "ckpt":
                cats["checkpoint"] += d
            else:  # done
                cats["productive"] += d
            last = r["t"]
        prev = last
        if i > 0:
            before = [t for t in fault_times if t <= p[0]["t"]]
            row = dict(phases)
            if before:
                row["fault to start"] = p[0]["t"] - before[-1]
                stepped = [r["t"] for r in p if r["e"] == "step"]
                if stepped:
                    row["fault to stepping"] = stepped[0] - before[-1]
                row["fault"] = faults[len(before) - 1][0]
            restarts.append(row)
        if i == 0:
            out["startup_phases"] = dict(phases, launch=gap)
    cats["tail"] += ended - prev
    out["split"] = cats
    out["goodput"] = cats["productive"] / out["wall_s"] if out["wall_s"] > 0 else 0
    out["restarts"] = restarts
    out["processes"] = len(procs)
    return out


def _median(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def _cell(v, fmt="{:.1f}"):
    return "-" if v is None else fmt.format(v)


def PrintTables(results):
    kinds = []
    for r in results:
        if r["kind"] not in kinds:
            kinds.append(r["kind"])
    ok = {k: [r for r in results if r["kind"] == k and "split" in r] for k in kinds}
    print("Goodput and where the seconds went (medians over runs; s):\n")
    print("| launcher | runs | finished | wall | goodput | " + " | ".join(CATEGORIES) + " |")
    print("|---|---:|---:|---:|---:|" + "---:|" * len(CATEGORIES))
    for k in kinds:
        rs = ok[k]
        fin = sum(1 for r in rs if r.get("finished"))
        cells = [_cell(_median([r["split"][c] for r in rs])) for c in CATEGORIES]
        print(f"| {k} | {len(rs)} | {fin} | {_cell(_median([r['wall_s'] for r in rs]))} | "
              f"{_cell(_median([100 * r['goodput'] for r in rs]), '{:.1f}%')} | "
              + " | ".join(cells) + " |")
    print("\nRound 0's start-up, phase by phase (rank 0; medians; s):\n")
    cols = ("launch", "import", "process group", "load", "first step")
    print("| launcher | " + " | ".join(cols) + " |")
    print("|---|" + "---:|" * len(cols))
    for k in kinds:
        cells = [_cell(_median([r.get("startup_phases", {}).get(c) for r in ok[k]]), "{:.2f}")
                 for c in cols]
        print(f"| {k} | " + " | ".join(cells) + " |")
    print("\nA restart, phase by phase, by fault (rank 0's next process; medians; s):\n")
    print("| launcher | fault | restarts | " + " | ".join(RESTART_COLUMNS) + " |")
    print("|---|---|---:|" + "---:|" * len(RESTART_COLUMNS))
    for k in kinds:
        faults = []
        for r in ok[k]:
            for row in r["restarts"]:
                if row.get("fault") and row["fault"] not in faults:
                    faults.append(row["fault"])
        for f in faults:
            rows = [row for r in ok[k] for row in r["restarts"] if row.get("fault") == f]
            cells = [_cell(_median([row.get(c) for row in rows]), "{:.2f}")
                     for c in RESTART_COLUMNS]
            print(f"| {k} | {f} | {len(rows)} | " + " | ".join(cells) + " |")
    accounts = [r for r in ok.get("dlaunch", []) if r.get("account")]
    if accounts:
        print("\ndlaunch's own account (summary.json) beside the stamps' (medians; s):\n")
        names = (("productive", "productive"), ("startup", "start-up"), ("failure", "failure"),
                 ("checkpoint", "checkpoint"), ("redone", "redone"), ("tail", "tail"))
        print("| | goodput | " + " | ".join(n for _, n in names) + " |")
        print("|---|---:|" + "---:|" * len(names))
        acc = [a["account"] for a in accounts]
        cells = [_cell(_median([a["split"].get(f, {}).get("seconds", 0) for a in acc]))
                 for f, _ in names]
        print(f"| account | {_cell(_median([100 * a['goodput'] for a in acc]), '{:.1f}%')} | "
              + " | ".join(cells) + " |")
        # The stamps' failure holds the restarts' start-up, as the account's does.
        cells = []
        for _, n in names:
            vals = [r["split"][n] + (r["split"]["restart"] if n == "failure" else 0)
                    for r in accounts]
            cells.append(_cell(_median(vals)))
        print(f"| stamps | {_cell(_median([100 * r['goodput'] for r in accounts]), '{:.1f}%')} | "
              + " | ".join(cells) + " |")
