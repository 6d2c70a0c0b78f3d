#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""Table of scripts/bench-lookup results: bench_lookup_table.py OUTDIR

Reads OUTDIR/raw.txt, the log lines of kmod/selftest/flowbench.c, one per
table and round: "size=N round=R hit_ns=H miss_ns=M base_ns=B mem_ns=X
buckets=K" (ns per operation; the tables measured in turn in each round).
Per size: the medians over rounds of a lookup of a flow in the table
(hit), of a key not in it (miss), of the loop without the lookup (base)
and of one read at a random place in a buffer as large as the table's
flows (mem); the lookup's own cost (hit - base); and its ratio to the
smallest table's own cost, from the rounds' paired ratios (the tables of
one round ran one after another): their median with its exact
order-statistic interval (scripts/analysis/stats.py; the level it really
has at this many rounds is printed); and the own cost in memory reads
(own cost / mem, per round): a lookup that reads a bucket and a flow
costs about two reads of memory of its table's size, whatever the size,
if its chains stay short.  Then the issue's goal: the cost at 10^6 flows
within 1.2 x the cost at 10^3.
"""
import os
import re
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from analysis.stats import median_ci  # noqa: E402

LINE = re.compile(r"size=(\d+) round=(\d+) hit_ns=(\d+) miss_ns=(\d+) base_ns=(\d+) "
                  r"mem_ns=(\d+) buckets=(\d+)")


def rounds(path):
    """-> {size: {round: (hit, miss, base, mem, buckets)}}."""
    out = {}
    for line in open(path):
        m = LINE.match(line.strip())
        if m:
            size, rnd, hit, miss, base, mem, buckets = map(int, m.groups())
            out.setdefault(size, {})[rnd] = (hit, miss, base, mem, buckets)
    return out


def main(out):
    raw = os.path.join(out, "raw.txt")
    by = rounds(raw)
    if not by:
        sys.exit("bench_lookup_table: no rounds in %s" % raw)
    accel = "?"
    if os.path.exists(os.path.join(out, "accel")):
        accel = open(os.path.join(out, "accel")).read().strip()
    sizes = sorted(by)
    ref = sizes[0]
    n = len(by[ref])
    print("One flow-table lookup (tcpfwd_flow_lookup(): an rhashtable of 200-byte flows "
          "from their own slab cache, as the proxy's), timed in the kernel by "
          "kmod/selftest/flowbench.c: one table per size, measured in turn in each of "
          "%d rounds; keys drawn at random among the table's flows (hit) or not in it "
          "(miss); base: the same loop without the lookup; mem: one read at a random "
          "place in a buffer as large as the table's flows.  ns per operation, medians "
          "over the rounds; own cost = hit - base; the ratio to %d flows is the median "
          "of the rounds' paired ratios with its exact interval.  Guest accel %s.\n"
          % (n, ref, accel))
    print("| flows | buckets | load | hit ns | miss ns | base ns | mem ns | own cost ns "
          "| own cost / %d flows [interval] (level) | own cost in memory reads |" % ref)
    print("|---|---|---|---|---|---|---|---|---|---|")
    own = {s: {r: v[0] - v[2] for r, v in by[s].items()} for s in sizes}
    res = {}
    for s in sizes:
        rs = by[s]
        buckets = statistics.median(v[4] for v in rs.values())
        med = statistics.median(own[s].values())
        if s == ref:
            rat = "1"
        else:
            paired = [own[s][r] / own[ref][r] for r in rs if r in own[ref] and own[ref][r] > 0]
            m, lo, hi, cov = median_ci(paired)
            rat = "%.2f [%.2f, %.2f] (%.0f %%)" % (m, lo, hi, 100 * cov)
            res[s] = m
        reads = statistics.median(own[s][r] / v[3] for r, v in rs.items() if v[3] > 0)
        print("| %d | %d | %.2f | %.0f | %.0f | %.0f | %.0f | %.0f | %s | %.1f |" % (
            s, buckets, s / buckets if buckets else float("nan"),
            statistics.median(v[0] for v in rs.values()),
            statistics.median(v[1] for v in rs.values()),
            statistics.median(v[2] for v in rs.values()),
            statistics.median(v[3] for v in rs.values()), med, rat, reads))
    print("\n### Goal\n")
    big = [s for s in sizes if s >= 1000000]
    if ref <= 1000 and big:
        print("- lookup cost at %d flows: %.2f x its cost at %d (median of the paired "
              "ratios), goal <= 1.2 x: %s" % (big[0], res[big[0]], ref,
                                               "met" if res[big[0]] <= 1.2 else "NOT met"))
    else:
        print("- not measured (no table of at most 10^3 or none of 10^6 flows)")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else ".")
