#!/usr/bin/env python3
"""Writes the hand-built hwloc XML test topologies (polaris.xml, dgx-a100.xml) next to this file.

Each node is Machine > Package > one Group per NUMA domain; a Group holds its NUMANode, its
cores (two hardware threads each, numbered the Linux way: core c has PUs c and c + ncores) and
the PCI devices (GPUs) whose locality is that NUMA domain. Run it again after changing a table.
"""
import os

HERE = os.path.dirname(os.path.abspath(__file__))


def mask(bits):
    """hwloc XML bitmap: 32-bit hex words, most significant first."""
    value = 0
    for b in bits:
        value |= 1 << b
    words = []
    while True:
        words.append(value & 0xFFFFFFFF)
        value >>= 32
        if value == 0:
            break
    return ",".join("0x%08x" % w for w in reversed(words))


class Writer:
    def __init__(self):
        self.lines = []
        self.gp = 0

    def gp_index(self):
        self.gp += 1
        return self.gp

    def open(self, depth, attrs, close=False):
        text = " ".join('%s="%s"' % kv for kv in attrs)
        self.lines.append("  " * depth + "<object %s%s>" % (text, "/" if close else ""))

    def close(self, depth):
        self.lines.append("  " * depth + "</object>")


def sets(cpus, nodes):
    return [("cpuset", mask(cpus)), ("complete_cpuset", mask(cpus)),
            ("nodeset", mask(nodes)), ("complete_nodeset", mask(nodes))]


def node(name, packages, numa_per_package, cores_per_numa, gpus):
    """gpus: list of (pci bus id, numa domain), in NVML (PCI bus) order."""
    ncores = packages * numa_per_package * cores_per_numa
    nnuma = packages * numa_per_package
    all_pus = list(range(2 * ncores))
    w = Writer()
    w.lines += ['<?xml version="1.0" encoding="UTF-8"?>',
                '<!DOCTYPE topology SYSTEM "hwloc2.dtd">', '<topology version="2.0">']
    w.open(1, [("type", "Machine"), ("os_index", 0)] + sets(all_pus, range(nnuma)) +
           [("allowed_cpuset", mask(all_pus)), ("allowed_nodeset", mask(range(nnuma))),
            ("gp_index", w.gp_index())])
    for p in range(packages):
        numas = range(p * numa_per_package, (p + 1) * numa_per_package)
        cores = range(numas[0] * cores_per_numa, (numas[-1] + 1) * cores_per_numa)
        pus = list(cores) + [c + ncores for c in cores]
        w.open(2, [("type", "Package"), ("os_index", p)] + sets(pus, numas) +
               [("gp_index", w.gp_index())])
        for n in numas:
            ncores_here = range(n * cores_per_numa, (n + 1) * cores_per_numa)
            npus = list(ncores_here) + [c + ncores for c in ncores_here]
            w.open(3, [("type", "Group")] + sets(npus, [n]) + [("gp_index", w.gp_index()),
                                                              ("kind", 1000)])
            w.open(4, [("type", "NUMANode"), ("os_index", n)] + sets(npus, [n]) +
                   [("gp_index", w.gp_index()), ("local_memory", 68719476736)], close=True)
            for c in ncores_here:
                w.open(4, [("type", "Core"), ("os_index", c)] + sets([c, c + ncores], [n]) +
                       [("gp_index", w.gp_index())])
                for pu in (c, c + ncores):
                    w.open(5, [("type", "PU"), ("os_index", pu)] + sets([pu], [n]) +
                           [("gp_index", w.gp_index())], close=True)
                w.close(4)
            for busid, numa in gpus:
                if numa != n:
                    continue
                bus = busid.split(":")[1]
                w.open(4, [("type", "Bridge"), ("gp_index", w.gp_index()), ("bridge_type", "0-1"),
                           ("depth", 0), ("bridge_pci", "0000:[%s-%s]" % (bus, bus))])
                # class 0302 (3D controller), vendor 10de (NVIDIA), device 20b0 (A100 SXM4).
                w.open(5, [("type", "PCIDev"), ("gp_index", w.gp_index()), ("pci_busid", busid),
                           ("pci_type", "0302 [10de:20b0] [10de:134f] a1"),
                           ("pci_link_speed", "31.507692")], close=True)
                w.close(4)
            w.close(3)
        w.close(2)
    w.close(1)
    w.lines.append("</topology>")
    with open(os.path.join(HERE, name), "w") as f:
        f.write("\n".join(w.lines) + "\n")


# Polaris (ALCF): one AMD EPYC 7543P, 32 cores, SMT 2, NPS-4 (4 NUMA domains of 8 cores), 4 A100.
# ALCF's `nvidia-smi topo -m` listing: GPU0 NUMA 3 (CPUs 24-31,56-63), GPU1 NUMA 2, GPU2 NUMA 1,
# GPU3 NUMA 0, i.e. GPU order runs against NUMA order.
node("polaris.xml", 1, 4, 8,
     [("0000:07:00.0", 3), ("0000:46:00.0", 2), ("0000:85:00.0", 1), ("0000:c7:00.0", 0)])

# ThetaGPU (ALCF): an NVIDIA DGX A100, two AMD EPYC 7742 (64 cores each, SMT 2), NPS-4 (8 NUMA
# domains of 16 cores), 8 A100. NVIDIA's DGX A100 `nvidia-smi topo -m`: GPU0,1 NUMA 3; GPU2,3
# NUMA 1; GPU4,5 NUMA 7; GPU6,7 NUMA 5 (two GPUs per PCIe switch, one switch per odd domain).
node("dgx-a100.xml", 2, 4, 16,
     [("0000:07:00.0", 3), ("0000:0f:00.0", 3), ("0000:47:00.0", 1), ("0000:4e:00.0", 1),
      ("0000:87:00.0", 7), ("0000:90:00.0", 7), ("0000:b7:00.0", 5), ("0000:bd:00.0", 5)])
