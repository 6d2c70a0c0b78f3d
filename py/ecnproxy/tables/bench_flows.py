# SPDX-License-Identifier: GPL-2.0
"""Table of scripts/bench-flows results: scripts/ecnproxy bench-flows-table OUTDIR

Reads OUTDIR/{meta,}.json, runs.jsonl and fills.jsonl (written in the
guest).  For each step (table size), the proxy node's small-packet
forwarding rate with the proxy on and with its hooks off (the table kept),
the ratio on/off (Hodges-Lehmann with its exact interval,
analysis/stats.py) and the proxy's cost per packet in ns of guest
CPU, CPUs x (1/rate on - 1/rate off) from the medians.  Then the memory per
flow from the 10^6 fill, and the issue's goals.
"""
import json
import os
import statistics
import sys

from ..analysis.stats import hl_ratio


def main(out):
    meta = json.load(open(os.path.join(out, "meta.json")))
    runs = [json.loads(x) for x in open(os.path.join(out, "runs.jsonl")) if x.strip()]
    fills = [json.loads(x) for x in open(os.path.join(out, "fills.jsonl")) if x.strip()]
    cpus = meta.get("cpus", 2)
    print("Small-packet (MSS 88) forwarding through the proxy node, CPU-bound, with "
          "the proxy's table holding N flows (SYNs of distinct connections); %d "
          "repetitions of %d s per step, proxy on and hooks off alternately; %d guest "
          "CPUs (TCG), kernel %s.\n" % (meta["reps"], meta["secs"], cpus, meta["kernel"]))
    print("| step | flows | on: packets/s | off: packets/s | on/off [95 % interval] "
          "| proxy ns per packet | CPU idle on |")
    print("|---|---|---|---|---|---|---|")
    cost = {}
    for f in fills:
        st = f["step"]
        on = [r["pps"] for r in runs if r["step"] == st and r["config"] == "proxy" and r["ok"]]
        off = [r["pps"] for r in runs if r["step"] == st and r["config"] == "off" and r["ok"]]
        if not on or not off:
            continue
        idle = statistics.median(r["cpu_idle"] for r in runs
                                 if r["step"] == st and r["config"] == "proxy")
        n = f["fill"]["flows_after"]
        est, lo, hi, cov = hl_ratio(on, off)
        ns = cpus * (1 / statistics.median(on) - 1 / statistics.median(off)) * 1e9
        cost[st] = (n, ns)
        lvl = "" if cov >= 0.95 - 1e-9 else " (%.0f %%)" % (100 * cov)
        print("| %s | %d | %.0f | %.0f | %.3f [%.3f, %.3f]%s | %.0f | %.3f |" % (
            st, n, statistics.median(on), statistics.median(off), est, lo, hi, lvl, ns, idle))
    print()
    big = max(fills, key=lambda f: f["fill"]["flows_after"] - f["fill"]["flows_before"])
    fb = big["fill"]
    added = fb["flows_after"] - fb["flows_before"]
    per = (fb["mem_used_kb_after"] - fb["mem_used_kb_before"]) * 1024 / added if added else 0
    print("Memory: %d flows added in step %s raised the guest's used memory by %.1f MiB: "
          "%.0f bytes per flow (flow_alloc_bytes, the slab object: %d).\n" % (
              added, big["step"], (fb["mem_used_kb_after"] - fb["mem_used_kb_before"]) / 1024,
              per, fb["flow_alloc_bytes"]))
    for f in fills:
        if f["fill"].get("flows_file_lines") is not None:
            print("- flows file at step %s: %d lines for %d flows" % (
                f["step"], f["fill"]["flows_file_lines"], f["fill"]["flows_after"]))
    print()
    print("### Goals\n")
    small = [v for k, v in cost.items() if v[0] < 5000]
    large = [v for k, v in cost.items() if v[0] >= 900000]
    if small and large:
        c_small = statistics.median(v[1] for v in small)
        c_large = statistics.median(v[1] for v in large)
        print("- cost per packet at %d flows %.0f ns vs %.0f ns at about 10^3: %.2f x, goal "
              "<= 1.2 x: %s" % (large[0][0], c_large, c_small, c_large / c_small,
                                "met" if c_large <= 1.2 * c_small else "NOT met"))
    print("- memory per flow %.0f bytes, goal <= 256: %s" % (per, "met" if per <= 256 else "NOT met"))


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(sys.argv[1])
