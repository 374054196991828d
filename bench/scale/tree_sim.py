#!/usr/bin/python3
"""The control plane at 10,000 to 1,000,000 agents: today's flat star against a tree of aggregators.

A model, not a measurement. Every per-message cost below comes from a run of this repository's own
benchmarks (MEASURED, each with its source); what no run measured is an ASSUMPTION, named as one.
The one-shot phases (rendezvous, stop fan-out, restart round) are simulated message by message
over the tree (FIFO service at each node, a random network delay per hop with a fixed seed); the
steady state (1 Hz heartbeats) is rates times costs. `--check` prints the flat star's prediction at
the sizes measured over gRPC next to the measurement. Standard library only:

  /usr/bin/python3 bench/scale/tree_sim.py [--sizes 10000,100000,1000000] [--fanouts 32,64,128,256]
                                           [--seed 1] [--check]
"""

import argparse
import math
import random
import statistics

# name: (value, source). "today" = bench/scale/run.sh on the 2-CPU VM, 2026-11-26, load average 3-7
# (other work beside it): `--sizes 2000 --run-s 20 --lose-at-s 0 --slots S` (S = 1, 4, 8; one build
# of dlaunch and load_agents for the three) and `--sizes 1000 --run-s 20 --lose-at-s 8` (slots 4).
MEASURED = {
    # (slots, launcher CPU % of a core over the heartbeat phase) at 2,000 agents, today.
    "cpu_by_slots_2000": ([(1, 17.2), (4, 27.0), (8, 43.2)], "today, 2,000 agents"),
    # (slots, rendezvous s, all started s) at 2,000 agents, today.
    "start_by_slots_2000": ([(1, 1.146, 1.583), (4, 0.478, 1.812), (8, 0.626, 2.848)],
                            "today, 2,000 agents"),
    "js_heartbeat_us": (6.3, "BENCHMARKS, launcher's decisions: heartbeat with 4 reports, 10,000 nodes"),
    "js_tick_us_per_node": (0.76, "BENCHMARKS, launcher's decisions: tick 7.62 ms at 10,000 nodes"),
    "js_snapshot_us_per_node": (1.29, "BENCHMARKS, launcher's decisions: snapshot 12.9 ms at 10,000"),
    "js_start_us_per_node": (4.8, "BENCHMARKS, launcher's decisions: start 0.048 s at 10,000 nodes"),
    "js_restart_us_per_node": (4.3, "BENCHMARKS, launcher's decisions: restart 0.043 s at 10,000"),
    "js_node_kb": (2.5, "today: job_state_bench 1000 vs 10000, max RSS 9.9 vs 32.7 MB (/usr/bin/time)"),
    "tls_conn_cpu_ms": (1.1, "BENCHMARKS, TLS: launcher CPU per agent connection (plain TCP: 0.3)"),
    "tls_conn_wall_ms": (1.14, "BENCHMARKS, TLS: rendezvous of 1,000 own connections, TLS - plain"),
    "plain_conn_wall_ms": (0.83, "BENCHMARKS, TLS: rendezvous, 1,000 plain connections - 8"),
    "tls_conn_kb": (85, "BENCHMARKS, TLS: launcher RSS 168 MB (1,000 TLS conns) - 83 MB (8 conns)"),
    "agent_tls_cpu_ms": (6.0, "BENCHMARKS, TLS: an agent's OpenSSL start-up and handshake"),
    "agent_rss_mb": (20.6, "BENCHMARKS, TLS: agent RSS with TLS (17.1 plain)"),
    "launcher_base_mb": (22.4, "BENCHMARKS, TLS: launcher RSS of a 1-node job"),
    "launcher_rss_4000_mb": (364, "BENCHMARKS, gRPC load generator: 4,000 agents, max RSS"),
    "grace_s": (10.0, "job-spec default stop.grace; the gRPC load runs use it"),
    "kill_slack_s": (0.5, "common/liveness_policy.h kKillSlack"),
    "min_lease_s": (5.0, "common/liveness_policy.h kMinLease"),
    "report_line_b": (330, "docs/journal.md: the example metrics.jsonl report line"),
    "host_line_b": (330, "docs/journal.md: the example host line"),
    "event_line_b": (160, "docs/journal.md: the example worker_failed line"),
}
# Values for the settings of the gRPC load runs (heartbeat 1 s x 3, 4 ranks per node).
SETTINGS = {"hb_s": 1.0, "misses": 3, "slots": 4, "summary_interval_s": 5.0, "tick_s": 1.0}
ASSUMPTIONS = {
    "net_us": (60.0, "one hop's network delay, median; lognormal, sigma 0.5 (fixed seed)"),
    "root_cores": (2, "the launcher's cores: the VM the costs were measured on"),
    "agg_cores": (1, "an aggregator gets one core of its node"),
    "summary_period_s": (0.5, "an aggregator sends its subtree's summary up every 0.5 s"),
    "send_cost": ("msg", "a command sent costs what a message received does (per-message part)"),
    "entry_cost": ("report", "one entry of a batch costs what one report in a heartbeat does"),
    "root_fanout": (512, "the launcher takes up to 512 aggregators itself before a level is added"),
    "reparent_safety_s": (0.5, "slack kept between a re-parented agent's new echo and its lease"),
    "summary_entries": (16, "a summary's entries the parent processes (counts, top-5 lists)"),
}


def Fit(points):
    """Least squares y = a + b x over (x, y) pairs."""
    xs, ys = [p[0] for p in points], [p[1] for p in points]
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    b = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sum((x - mx) ** 2 for x in xs)
    return my - b * mx, b


def Costs():
    """Per-message costs at the launcher (µs), fitted from MEASURED."""
    n = 2000
    a, b = Fit(MEASURED["cpu_by_slots_2000"][0])
    msg_us, report_us = a / 100 / n * 1e6, b / 100 / n * 1e6
    runs = MEASURED["start_by_slots_2000"][0]
    join_us = statistics.median(r[1] for r in runs) / n * 1e6
    sa, sb = Fit([(r[0], r[2] - r[1]) for r in runs])
    per_agent_kb = (MEASURED["launcher_rss_4000_mb"][0] - MEASURED["launcher_base_mb"][0]) / 4000 * 1024
    return {"msg_us": msg_us, "report_us": report_us, "join_us": join_us,
            "session_us": sa / n * 1e6, "started_us": sb / n * 1e6, "session_kb": per_agent_kb}


# ---- wire sizes (protobuf encoding, computed field by field) ----

def Varint(v):
    return max(1, math.ceil(max(v, 1).bit_length() / 7))


def Field(payload):            # tag + payload of a scalar: tag 1 byte (field < 16)
    return 1 + payload


def Sub(body):                 # tag + length + body of a sub-message or string
    return 1 + Varint(body) + body


def HeartbeatBytes(slots, node_id):
    """AgentMessage{heartbeat} as a real agent sends it: reports, output_lines, 4 GPUs, host."""
    report = (Field(1) + Field(Varint(node_id * slots)) + Field(3) + Field(1) + Field(2) +
              3 * Field(8) + Sub(5 * Field(8)) + Field(3) + Field(3) + Field(1))
    line_entry = Sub(Field(Varint(node_id * slots)) + Field(3))
    gpu = Sub(Sub(1) + Field(8) + Field(3) + Field(3))
    disk = Sub(Sub(24) + Field(6) + Field(6))
    host = Sub(Field(8) + Field(1) + Field(5) + Field(5) + Field(8) + 2 * disk)
    hb = Field(6) + Field(1) + slots * Sub(report) + slots * line_entry + 4 * gpu + host
    return Field(Varint(node_id)) + Sub(30) + Sub(hb) + Field(1) + Field(5)


def SummaryBytes():
    """Proposed SubtreeSummary: counts, sums, min/max step, GPU totals, top-5 lists, no per node."""
    counts = 9 * Field(3)
    sums = 6 * Field(8)
    top = 3 * 5 * Sub(Field(3) + Field(4) + Field(8))
    return Field(3) + Field(1) + Field(5) + Sub(counts) + sums + top + Field(5)


def Framed(body, tls):
    """gRPC's 5-byte prefix, HTTP/2's 9-byte DATA frame, a TLS 1.3 record's 22 bytes."""
    return body + 5 + 9 + (22 if tls else 0)


# ---- the tree ----

def Levels(n, k):
    """Node counts from the leaves up: [n agents, level-1 aggregators, ...]; the last fits the root."""
    levels = [n]
    while k and (len(levels) == 1 or levels[-1] > max(k, A("root_fanout"))):
        levels.append(math.ceil(levels[-1] / k))
    return levels


class Net:
    def __init__(self, seed):
        self.rng = random.Random(seed)
        self.mu = math.log(ASSUMPTIONS["net_us"][0] * 1e-6)

    def hop(self):
        return self.rng.lognormvariate(self.mu, 0.5)


def Serve(arrivals, service, cores):
    """FIFO service of (arrival, cost) pairs on `cores` equal cores; returns the last finish time."""
    free = [0.0] * cores
    last = 0.0
    for t, cost in sorted(zip(arrivals, service)):
        i = min(range(cores), key=free.__getitem__)
        free[i] = max(free[i], t) + cost
        last = max(last, free[i])
    return last


def Gather(levels, k, leaf_ready, leaf_cost, batch_cost, root_cost, net, cores):
    """Every leaf sends one message up; each aggregator, once all its children's are in, sends one
    batch up. leaf_cost: s per leaf message at its parent; batch_cost(entries): s per batch at an
    aggregator; root_cost(entries): s per message at the root. Returns when the root has all."""
    ready, sizes = leaf_ready, [1] * len(leaf_ready)
    for depth in range(1, len(levels)):
        nxt, nsizes = [], []
        for g in range(levels[depth]):
            kids = range(g * k, min((g + 1) * k, len(ready)))
            arr = [ready[c] + net.hop() for c in kids]
            cost = [leaf_cost if depth == 1 else batch_cost(sizes[c]) for c in kids]
            nxt.append(Serve(arr, cost, ASSUMPTIONS["agg_cores"][0]))
            nsizes.append(sum(sizes[c] for c in kids))
        ready, sizes = nxt, nsizes
    arr = [t + net.hop() for t in ready]
    first = len(levels) == 1
    cost = [leaf_cost if first else root_cost(s) for s in sizes]
    return Serve(arr, cost, cores)


def Scatter(levels, k, start, root_send, agg_send, net):
    """The root sends one message per child (root_send(leaves under it) s each, one after
    another), each aggregator one per child (agg_send). Returns when the last leaf has its own."""
    top = len(levels) - 1
    t, heads = start, []
    for _ in range(levels[top]):
        t += root_send(levels[0] / levels[top])
        heads.append(t + net.hop())
    for depth in range(top, 0, -1):
        below = levels[0] / levels[depth - 1]
        nxt = []
        for i, t in enumerate(heads):
            for _ in range(min(k, levels[depth - 1] - i * k)):
                t += agg_send(below)
                nxt.append(t + net.hop())
        heads = nxt
    return max(heads)


# ---- the phases ----

def M(name):
    return MEASURED[name][0]


def A(name):
    return ASSUMPTIONS[name][0]


class Model:
    """One shape: n agents, fan-out k (0: the flat star), TLS on every connection."""

    def __init__(self, n, k, costs, seed, tls=True):
        self.n, self.k, self.c, self.tls, self.seed = n, k, costs, tls, seed
        self.levels = Levels(n, k)
        self.net = Net(seed)
        self.us = lambda v: v * 1e-6
        self.flat = k == 0

    def children_of_root(self):
        return self.levels[-1]

    def batch(self, entries):
        return self.us(self.c["msg_us"] + entries * self.c["report_us"])

    def summary(self, _entries=None):
        return self.batch(A("summary_entries"))

    def send(self, _entries=None):
        cores = A("root_cores") if self.flat else 1
        return self.us(self.c["msg_us"]) / cores

    def rendezvous(self):
        """All agents start at 0 and join at once; returns (round closed at the root, every agent
        holds its place)."""
        tls_ms = M("tls_conn_cpu_ms") if self.tls else 0.0
        ready = [M("agent_tls_cpu_ms") * 1e-3 if self.tls else 0.0] * self.n
        if self.flat:
            leaf = self.us(self.c["join_us"]) + tls_ms * 1e-3 / A("root_cores")
            closed = Gather(self.levels, 0, ready, leaf, None, None, self.net, 1)
            return closed, Scatter(self.levels, 0, closed, self.send, self.send, self.net)
        leaf = tls_ms * 1e-3 + self.us(self.c["msg_us"])
        per_node = self.c["report_us"] + M("js_start_us_per_node")
        root = lambda e: self.us(self.c["msg_us"] + e * per_node)
        closed = Gather(self.levels, self.k, ready, leaf, self.batch, root, self.net, 1)
        # The places go down as a RoundPlan: the subtree's first node rank and rank offset.
        return closed, Scatter(self.levels, self.k, closed, self.summary, self.send, self.net)

    def stop_fanout(self):
        if self.flat:
            return Scatter(self.levels, 0, 0.0, self.send, self.send, self.net)
        return Scatter(self.levels, self.k, 0.0, self.send, self.send, self.net)

    def restart(self):
        """One node's stream ends at 0 (as in the gRPC load runs): stop every member, collect
        RoundEnded (4 STOPPED + RoundEnded per agent), wait until the lost node's workers are
        surely gone (end + grace + kill slack), decide, StartRound, every rank STARTED."""
        slots, c = SETTINGS["slots"], self.c
        stopped = self.stop_fanout()
        wait = M("grace_s") + M("kill_slack_s")
        ready = [stopped] * self.n
        if self.flat:
            leaf = self.us((slots + 1) * c["started_us"])
            ended = Gather(self.levels, 0, ready, leaf, None, None, self.net, 1)
            go = max(wait, ended) + self.us(M("js_restart_us_per_node") * self.n)
            placed = Scatter(self.levels, 0, go, self.send, self.send, self.net)
            leaf = self.us(slots * c["started_us"])
            return Gather(self.levels, 0, [placed] * self.n, leaf, None, None, self.net, 1)
        leaf = self.us((slots + 1) * c["msg_us"])
        ended = Gather(self.levels, self.k, ready, leaf, self.summary, self.summary, self.net, 1)
        go = max(wait, ended) + self.us(M("js_restart_us_per_node") * self.n)
        placed = Scatter(self.levels, self.k, go, self.summary, self.send, self.net)
        leaf = self.us(slots * c["msg_us"])
        return Gather(self.levels, self.k, [placed] * self.n, leaf, self.summary, self.summary,
                      self.net, 1)

    def hops(self):
        return len(self.levels) - 1

    def steady(self):
        """1 Hz heartbeats: the launcher's CPU (cores), its loop's share, bytes/s, journal B/s."""
        n, c, slots, hb = self.n, self.c, SETTINGS["slots"], SETTINGS["hb_s"]
        per_node_loop = M("js_tick_us_per_node") + M("js_snapshot_us_per_node")
        ping = Framed(Field(Varint(int(1e9))), True)
        journal_metrics = (n * slots * M("report_line_b") / hb +
                           n * M("host_line_b") / SETTINGS["summary_interval_s"])
        if self.flat:
            cpu = n * (c["msg_us"] + slots * c["report_us"]) / hb * 1e-6
            loop = n * (M("js_heartbeat_us") / hb + per_node_loop) * 1e-6
            wire = n * (Framed(HeartbeatBytes(slots, n), True) + ping) / hb
            return {"cpu": cpu, "cpu_msgs": cpu, "loop": loop, "wire": wire,
                    "journal": journal_metrics,
                    "rss_mb": M("launcher_base_mb") + n * (self.c["session_kb"] +
                                                           M("tls_conn_kb") * self.tls) / 1024}
        kids, period = self.children_of_root(), A("summary_period_s")
        cpu = kids * (c["msg_us"] + A("summary_entries") * c["report_us"]) / period * 1e-6
        loop = cpu + n * per_node_loop * 1e-6
        wire = kids * (Framed(SummaryBytes(), True) + ping) / period
        journal = kids * 2 * M("report_line_b") / SETTINGS["summary_interval_s"]
        rss = (M("launcher_base_mb") + n * M("js_node_kb") / 1024 +
               kids * (self.c["session_kb"] + M("tls_conn_kb")) / 1024)
        return {"cpu": cpu + n * per_node_loop * 1e-6, "cpu_msgs": cpu, "loop": loop, "wire": wire,
                "journal": journal, "rss_mb": rss, "shard": journal_metrics / self.levels[1]}

    def detection(self, draws=2000):
        """A node lost without a word: (mean, p99) s from its last message to the launcher's
        failure; the flat star's loop queue (M/D/1) adds its wait, the tree its hops up."""
        lost = SETTINGS["hb_s"] * SETTINGS["misses"]
        st = self.steady()
        # The tree's root judges no node's silence itself: its tick need not visit every node.
        rho = st["loop"] if self.flat else st["cpu_msgs"]
        if rho >= 1 or st["cpu_msgs"] > A("root_cores"):
            return math.inf, math.inf
        rng = random.Random(self.seed)
        out = []
        for _ in range(draws):
            t = lost + rng.uniform(0, SETTINGS["tick_s"])
            if self.flat:
                s = M("js_heartbeat_us") * 1e-6
                t += self.net.hop() + rho / (2 * (1 - rho)) * s + s
            else:
                for _ in range(self.hops()):
                    t += self.net.hop() + self.us(self.c["msg_us"])
                t += self.net.hop() + self.us(self.c["msg_us"])
            out.append(t)
        out.sort()
        return statistics.fmean(out), out[int(0.99 * len(out))]

    def aggregator(self):
        """A level-1 aggregator: its CPU share and memory; the oldest echo an agent holds; what a
        lost aggregator costs its k children (re-parent onto a sibling, lease margin)."""
        c, k, slots, hb = self.c, self.k, SETTINGS["slots"], SETTINGS["hb_s"]
        cpu = k * (c["msg_us"] + slots * c["report_us"]) / hb * 1e-6
        cpu += (c["msg_us"] + A("summary_entries") * c["report_us"]) / A("summary_period_s") * 1e-6
        rss = M("agent_rss_mb") + k * (c["session_kb"] + M("tls_conn_kb")) / 1024
        net = A("net_us") * 1e-6
        echo_age = hb + self.hops() * (A("summary_period_s") + 2 * net)
        arrivals = [self.net.hop() + M("agent_tls_cpu_ms") * 1e-3 for _ in range(k)]
        cost = [M("tls_conn_cpu_ms") * 1e-3 + self.us(c["msg_us"])] * k
        reparent = Serve(arrivals, cost, A("agg_cores")) + A("summary_period_s") + 2 * net * self.hops()
        lost = SETTINGS["hb_s"] * SETTINGS["misses"]
        lease = max(lost, M("min_lease_s"))
        need = echo_age + lost + reparent + A("reparent_safety_s")
        # From a silent node's detection to the next round: L + lease + 1 interval + grace + slack.
        hold = lambda l: l + hb + M("grace_s") + M("kill_slack_s") - lost - SETTINGS["tick_s"] / 2
        return {"cpu": cpu, "rss_mb": rss, "echo_age": echo_age, "reparent": reparent,
                "margin_crash": lease - echo_age - net - reparent,
                "margin_silent": lease - echo_age - lost - reparent,
                "lease_need": max(lease, need), "hold_today": hold(lease),
                "hold_tree": hold(max(lease, need))}


# ---- tables ----

def Fmt(v, spec="{:.2f}"):
    if v is None:
        return "-"
    return "saturated" if v == math.inf else spec.format(v)


def Shape(k, levels):
    if k == 0:
        return "flat star"
    return f"tree k={k} ({' / '.join(str(x) for x in levels[1:])})"


def Row(n, k, costs, seed):
    m = Model(n, k, costs, seed)
    closed, placed = m.rendezvous()
    st = m.steady()
    # "*": the launcher cannot keep up with the messages themselves; the figures after it assume
    # it could. "(over)": over the root's cores only with today's per-node tick and snapshot.
    star = "*" if st["cpu_msgs"] > A("root_cores") or (m.flat and st["loop"] >= 1) else ""
    cpu = f"{100 * st['cpu']:.1f}{star}"
    if not m.flat:
        over = " (over)" if st["cpu"] > A("root_cores") else ""
        cpu = f"{100 * st['cpu']:.1f}{over} / {100 * st['cpu_msgs']:.1f}"
    det = m.detection()
    return (f"| {n:,} | {Shape(k, m.levels)} | {closed:.2f} / {placed:.2f} | {cpu} | "
            f"{st['loop']:.2f} | {st['rss_mb']:,.0f} | {st['wire'] / 1e6:.3f} | "
            f"{st['journal'] / 1e6:.3f} | {m.stop_fanout():.3f}{star} | "
            f"{Fmt(det[0])} / {Fmt(det[1])} | {Fmt(m.restart())}{star} |")


def MainTable(sizes, fanouts, costs, seed):
    print("| N | shape (aggregators per level) | round 0 closed, root / every agent (s) | "
          "launcher CPU, % of a core (tree: with / without the per-node tick and snapshot) | "
          "launcher loop busy | launcher RSS (MB) | bytes/s at the root (MB/s) | "
          "root journal (MB/s) | stop fan-out (s) | silent node detected, mean / p99 (s) | "
          "restart (s) |")
    print("|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for n in sizes:
        for k in [0] + fanouts:
            print(Row(n, k, costs, seed))


def TreeTable(sizes, fanouts, costs, seed):
    print("| N | k | level-1 aggregator CPU, % of a core | its RSS (MB) | its metrics shard (KB/s) | "
          "oldest echo an agent holds (s) | re-parent k children (s) | lease margin at today's "
          "5 s lease, aggregator crashed / silent (s) | lease needed (s) | silent node: detection "
          "to next round, today's lease / needed (s) |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for n in sizes:
        for k in fanouts:
            m = Model(n, k, costs, seed)
            a, st = m.aggregator(), m.steady()
            print(f"| {n:,} | {k} | {100 * a['cpu']:.1f} | {a['rss_mb']:.0f} | "
                  f"{st['shard'] / 1e3:.0f} | {a['echo_age']:.2f} | {a['reparent']:.2f} | "
                  f"{a['margin_crash']:.2f} / {a['margin_silent']:.2f} | {a['lease_need']:.2f} | "
                  f"{a['hold_today']:.2f} / {a['hold_tree']:.2f} |")


# (N, source, rendezvous s, all started s, CPU % r0 (r1 where r0 is missing), RSS MB, restart s);
# None: not measured. The 2,000-agent row is the run the per-message costs were fitted on.
MEASURED_FLAT = [
    (1000, "BENCHMARKS (loaded)", 0.18, 0.96, 27, 105, 11.21),
    (1000, "today, run 1", 0.30, 0.97, 21, 82, 10.79),
    (1000, "today, run 2", 0.32, 0.85, None, None, 10.83),
    (2000, "today (fit)", 0.48, 1.81, 27, 72, None),
    (4000, "BENCHMARKS (fits RSS)", 0.61, 3.09, 93, 364, 11.94),
    (10000, "BENCHMARKS", 2.08, 10.44, 133, 822, 17.64),
]
# failure_detected -> the last agent's round stop, today's run 2 at 1,000 agents (load_agents' clock).
STOP_FANOUT_1000_S = 0.119


def Cell(model, measured):
    if measured is None:
        return f"{model:.2f} / -"
    return f"{model:.2f} / {measured:g} ({100 * (model - measured) / measured:+.0f}%)"


def CheckTable(costs, seed):
    """The flat star as the gRPC load runs have it: 8 connections (no TLS handshake per agent)."""
    print("| N | measured | rendezvous (s), model / measured | all started (s) | "
          "launcher CPU (%) | launcher RSS (MB) | restart (s) |")
    print("|---:|---|---:|---:|---:|---:|---:|")
    slots = SETTINGS["slots"]
    for n, src, rdv, started, cpu, rss, rst in MEASURED_FLAT:
        m = Model(n, 0, costs, seed, tls=False)
        closed, _ = m.rendezvous()
        leaf = m.us(costs["session_us"] + slots * costs["started_us"])
        all_started = Gather(m.levels, 0, [closed] * n, leaf, None, None, m.net, 1)
        st = m.steady()
        cells = [(closed, rdv), (all_started, started), (100 * st["cpu"], cpu),
                 (st["rss_mb"], rss), (m.restart(), rst)]
        print(f"| {n:,} | {src} | " + " | ".join(Cell(a, b) for a, b in cells) + " |")
    fan = Model(1000, 0, costs, seed, tls=False).stop_fanout()
    print(f"\nRound stop fan-out at 1,000 agents: model {fan:.3f} s, measured {STOP_FANOUT_1000_S} s")


def Inputs(costs):
    print("Fitted per-message costs at the launcher (µs): " +
          ", ".join(f"{k} {v:.1f}" for k, v in costs.items()))
    print(f"Heartbeat as a real agent sends it: {HeartbeatBytes(SETTINGS['slots'], 100000)} B "
          f"({Framed(HeartbeatBytes(SETTINGS['slots'], 100000), True)} B framed, TLS); "
          f"proposed SubtreeSummary: {SummaryBytes()} B ({Framed(SummaryBytes(), True)} B framed)")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", default="10000,100000,1000000")
    ap.add_argument("--fanouts", default="32,64,128,256")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--check", action="store_true", help="the flat star against the measured runs")
    args = ap.parse_args()
    costs = Costs()
    sizes = [int(x) for x in args.sizes.split(",")]
    fanouts = [int(x) for x in args.fanouts.split(",")]
    Inputs(costs)
    if args.check:
        print()
        CheckTable(costs, args.seed)
        return
    print()
    MainTable(sizes, fanouts, costs, args.seed)
    print()
    TreeTable(sizes, fanouts, costs, args.seed)


if __name__ == "__main__":
    main()
