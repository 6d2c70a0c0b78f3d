#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""Table of scripts/bench-hook results: bench_hook_table.py OUTDIR

Reads OUTDIR/runs.jsonl and OUTDIR/meta.json (written in the guest) and
prints, per packet size, each configuration's forwarding rate (packets per
second through the proxy node, median of the interleaved repetitions), its
ratio to "no module" (Hodges-Lehmann estimate with the exact 95 %
distribution-free interval, scripts/analysis/stats.py; its true level when
the repetitions cannot reach 95 %), the cost per packet in ns of guest CPU
(median of CPUs x busy share / rate, minus the same for no module) and the
guest's median CPU idle share.  One flow is forwarded by one CPU's softirq,
so the guest is not fully busy: the limit is that CPU and the other
endpoints' work on it, not a link (no qdisc, veth).  Then
the issue's goals, each with the numbers it is judged on: met when the
whole interval meets it, not met when none of it does, undecided when the
interval spans the goal (the point estimate alone decides nothing); the
strip rule against TCPOPTSTRIP by the ratio of their rates in the same
run, with its interval.
"""
import json
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from analysis.stats import hl_ratio  # noqa: E402

LABEL = {
    "nomod": "no module",
    "proxy-off": "ecn_proxy loaded, enabled=0",
    "proxy-neither": "proxy on, neither end ECN",
    "proxy-both": "proxy on, both ends ECN",
    "proxy-drop": "proxy on, proxied flow, drop",
    "proxy-dupack": "proxy on, proxied flow, dupack",
    "impair-norules": "impair loaded, no rules",
    "impair-strip-ts": "impair `strip timestamp`",
    "xt-tcpoptstrip-ts": "xt TCPOPTSTRIP --strip-options timestamp",
    "nft-reset-ts": "nft `reset tcp option timestamp`",
    "impair-ecn-bleach": "impair `ecn-bleach`",
    "nft-ecn-set": "nft `ip ecn set not-ect`",
    "conntrack": "conntrack alone (nft `ct state`)",
}


def decide(lo, hi, lim):
    """A goal "ratio >= lim" judged on an interval [lo, hi]."""
    if lo >= lim:
        return "met"
    if hi < lim:
        return "NOT met"
    return "undecided (the interval spans %.2f)" % lim


def main(out):
    meta = json.load(open(os.path.join(out, "meta.json")))
    runs = [json.loads(line) for line in open(os.path.join(out, "runs.jsonl")) if line.strip()]
    cpus = meta.get("cpus", 2)
    print("Forwarding rate of the proxy node (iperf3 upload, no qdisc or link limit on "
          "the path), %d interleaved repetitions of %d s, %d guest CPUs (TCG), kernel %s.\n"
          % (meta["reps"], meta["secs"], cpus, meta["kernel"]))
    res = {}
    rates = {}

    def cpu_ns(r):
        """guest CPU time per forwarded packet, ns (busy share x CPUs / rate)"""
        return cpus * (1 - r["cpu_idle"]) / r["pps"] * 1e9

    for size in ("full", "small"):
        rs = [r for r in runs if r["size"] == size and r["ok"] and r["pps"] > 0]
        base = [r["pps"] for r in rs if r["config"] == "nomod"]
        if not base:
            continue
        bmed = statistics.median(base)
        print("### %s packets (%s)\n" % (size, "MSS 1448" if size == "full" else "MSS 88"))
        print("| configuration | runs | packets/s (median) | ratio to no module [95 % interval] "
              "| CPU ns per packet vs no module | CPU idle |")
        print("|---|---|---|---|---|---|")
        for cfg in meta["configs"]:
            x = [r["pps"] for r in rs if r["config"] == cfg]
            idle = [r["cpu_idle"] for r in rs if r["config"] == cfg]
            if not x:
                print("| %s | 0 | - | - | - | - |" % LABEL.get(cfg, cfg))
                continue
            med = statistics.median(x)
            rates[(cfg, size)] = x
            est, lo, hi, cov = hl_ratio(x, base)
            lvl = "" if cov >= 0.95 - 1e-9 else " (%.0f %%)" % (100 * cov)
            ns = (statistics.median(cpu_ns(r) for r in rs if r["config"] == cfg) -
                  statistics.median(cpu_ns(r) for r in rs if r["config"] == "nomod"))
            res[(cfg, size)] = (est, lo, hi, ns)
            print("| %s | %d | %.0f | %.3f [%.3f, %.3f]%s | %s | %.3f |" % (
                LABEL.get(cfg, cfg), len(x), med, est, lo, hi, lvl,
                "-" if cfg == "nomod" else "%+.0f" % ns, statistics.median(idle)))
        print()

    def g(cfg, size):
        return res.get((cfg, size))

    print("### Goals\n")
    for size in ("full", "small"):
        if not g("nomod", size):
            continue
        for cfg, lim in (("proxy-off", 0.99), ("proxy-neither", 0.99), ("proxy-both", 0.99),
                         ("proxy-drop", 0.97), ("proxy-dupack", 0.97)):
            r = g(cfg, size)
            if r:
                print("- %s, %s: ratio %.3f [%.3f, %.3f], goal >= %.2f: %s" % (
                    LABEL[cfg], size, r[0], r[1], r[2], lim,
                    decide(r[1], r[2], lim)))
        a, b = rates.get(("impair-strip-ts", size)), rates.get(("xt-tcpoptstrip-ts", size))
        if a and b:
            est, lo, hi, _ = hl_ratio(a, b)
            print("- impair strip / xt TCPOPTSTRIP rate, %s: %.3f [%.3f, %.3f], goal >= 1 "
                  "(costs no more): %s" % (size, est, lo, hi, decide(lo, hi, 1.0)))
        a, b = g("impair-ecn-bleach", size), g("nft-ecn-set", size)
        if a and b:
            print("- impair ecn-bleach vs nft ip ecn set, %s: %.3f vs %.3f" % (size, a[0], b[0]))


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(sys.argv[1])
