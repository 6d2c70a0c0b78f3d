# SPDX-License-Identifier: GPL-2.0
"""Table of scripts/bench-lookup results: scripts/ecnproxy bench-lookup-table OUTDIR

Reads OUTDIR/raw.txt, the log lines of kmod/selftest/flowbench.c, one per
table and round: "size=N round=R hit_ns=H miss_ns=M base_ns=B mem_ns=X
buckets=K" (ns per operation; the tables measured in turn in each round).
Per size: the medians over rounds of a lookup of a flow in the table
(hit), of a key not in it (miss), of the loop without the lookup (base)
and of one read at a random place in a buffer as large as the table's
flows (mem); the lookup's own cost (hit - base); and its ratio to the
smallest table's own cost, from the rounds' paired ratios (the tables of
one round ran one after another): their median with its exact
order-statistic interval (analysis/stats.py; the level it really
has at this many rounds is printed); and the own cost in memory reads
(own cost / mem, per round): a lookup that reads a bucket and a flow
costs about two reads of memory of its table's size, whatever the size,
if its chains stay short.  When the module logged hot_ns (lookups among a
fixed active set of flows spread over the table; raw files from before
2026-11-27 lack it), the same own cost and paired ratio for those: what
the table's size costs a lookup when the caches hold the active flows.
Then the issue's goal: the cost at 10^6 flows within 1.2 x the cost at
10^3, judged for each kind of lookup on its whole interval (met, NOT met
or undecided: analysis.stats.goal_verdict()).
"""
import os
import re
import statistics
import sys

from ..analysis.stats import goal_verdict, median_ci

LINE = re.compile(r"size=(\d+) round=(\d+) hit_ns=(\d+) miss_ns=(\d+) base_ns=(\d+) "
                  r"mem_ns=(\d+) buckets=(\d+)(?: hot_ns=(\d+))?$")
GOAL = 1.2


def rounds(path):
    """-> {size: {round: (hit, miss, base, mem, buckets, hot or None)}}."""
    out = {}
    for line in open(path):
        m = LINE.match(line.strip())
        if m:
            g = m.groups()
            size, rnd, hit, miss, base, mem, buckets = map(int, g[:7])
            hot = int(g[7]) if g[7] is not None else None
            out.setdefault(size, {})[rnd] = (hit, miss, base, mem, buckets, hot)
    return out


def paired_ratio(own, s, ref):
    """Median of the rounds' paired ratios own[s][r] / own[ref][r] and its
    exact interval: (m, lo, hi, level)."""
    paired = [own[s][r] / own[ref][r] for r in own[s] if r in own[ref] and own[ref][r] > 0]
    return median_ci(paired)


def ratio_cell(own, s, ref, res):
    """The table cell of size s's paired ratio to ref ("1" for ref itself);
    the ratio goes to res[s]."""
    if s == ref:
        return "1"
    res[s] = paired_ratio(own, s, ref)
    return "%.2f [%.2f, %.2f] (%.0f %%)" % (res[s][0], res[s][1], res[s][2], 100 * res[s][3])


def main(out):
    raw = os.path.join(out, "raw.txt")
    by = rounds(raw)
    if not by:
        sys.exit("bench_lookup_table: no rounds in %s" % raw)
    accel = "?"
    if os.path.exists(os.path.join(out, "accel")):
        accel = open(os.path.join(out, "accel")).read().strip()
    clock = "real"
    if os.path.exists(os.path.join(out, "clock")):
        clock = open(os.path.join(out, "clock")).read().strip()
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
          "of the rounds' paired ratios with its exact interval.  Guest accel %s.%s\n"
          % (n, ref, accel,
             "  Guest clock counting instructions (QEMU -icount shift=0, one CPU): every "
             "\"ns\" below is an instruction executed, so this is the lookup's work without "
             "what memory costs." if clock == "icount" else ""))
    print("| flows | buckets | load | hit ns | miss ns | base ns | mem ns | own cost ns "
          "| own cost / %d flows [interval] (level) | own cost in memory reads |" % ref)
    print("|---|---|---|---|---|---|---|---|---|---|")
    own = {s: {r: v[0] - v[2] for r, v in by[s].items()} for s in sizes}
    res = {}
    for s in sizes:
        rs = by[s]
        buckets = statistics.median(v[4] for v in rs.values())
        med = statistics.median(own[s].values())
        rat = ratio_cell(own, s, ref, res)
        reads = statistics.median(own[s][r] / v[3] for r, v in rs.items() if v[3] > 0)
        print("| %d | %d | %.2f | %.0f | %.0f | %.0f | %.0f | %.0f | %s | %.1f |" % (
            s, buckets, s / buckets if buckets else float("nan"),
            statistics.median(v[0] for v in rs.values()),
            statistics.median(v[1] for v in rs.values()),
            statistics.median(v[2] for v in rs.values()),
            statistics.median(v[3] for v in rs.values()), med, rat, reads))
    hot = all(v[5] is not None for s in sizes for v in by[s].values())
    hres = {}
    if hot:
        print("\nHot lookups: keys drawn among a fixed active set of flows spread evenly "
              "over the table (flowbench's hot parameter: TB_BENCH_HOT in command.txt), so "
              "that the active flows fit in the caches at every size; own cost = hot - "
              "base.\n")
        print("| flows | hot ns | own cost ns | own cost / %d flows [interval] (level) |"
              % ref)
        print("|---|---|---|---|")
        hown = {s: {r: v[5] - v[2] for r, v in by[s].items()} for s in sizes}
        for s in sizes:
            print("| %d | %.0f | %.0f | %s |" % (
                s, statistics.median(v[5] for v in by[s].values()),
                statistics.median(hown[s].values()), ratio_cell(hown, s, ref, hres)))
    print("\n### Goal\n")
    big = [s for s in sizes if s >= 1000000]
    if ref <= 1000 and big:
        for name, r in (("every flow active (hit)", res), ("a fixed active set of flows (hot)", hres)):
            if big[0] not in r:
                continue
            m, lo, hi, cov = r[big[0]]
            print("- lookup cost at %d flows, %s: %.2f x [%.2f, %.2f] its cost at %d, "
                  "goal <= %.1f x: %s" % (big[0], name, m, lo, hi, ref, GOAL,
                                          goal_verdict(lo, hi, at_most=GOAL)))
    else:
        print("- not measured (no table of at most 10^3 or none of 10^6 flows)")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else ".")
