# SPDX-License-Identifier: GPL-2.0
"""Table of scripts/bench-hook and scripts/bench-hook-kernel results:
scripts/ecnproxy bench-hook-table OUTDIR

Reads OUTDIR/runs.jsonl and OUTDIR/meta.json (written in the guest) and
prints, per packet size, each configuration's forwarding rate (packets per
second through the proxy node, median of the interleaved repetitions), its
ratio to "no module" (Hodges-Lehmann estimate with the exact 95 %
distribution-free interval, analysis/stats.py; its true level when
the repetitions cannot reach 95 %), the cost per packet in ns of guest CPU
(median of CPUs x busy share / rate, minus the same for no module) and the
guest's median CPU idle share.  One flow is forwarded by one CPU's softirq,
so the guest is not fully busy: the limit is that CPU and the other
endpoints' work on it, not a link (no qdisc, veth).  Then
issue 42's goals, each with the figure it is judged on: instructions the
proxy adds per packet (icount runs only: an instruction count repeats
exactly, so a median decides), and impair's strip rule against the
in-tree targets by the ratio of the costs each adds on the same segments.

bench-hook-kernel's runs (meta "method": "kernel") carry each packet's
forwarding cost in ns timed in the kernel (kmod/selftest/hookbench.c);
their "pps" is what one CPU forwards at that cost (1e9 / ns), so the same
ratios apply, and the cost per packet is the median ns minus no module's.
"""
import json
import os
import statistics
import sys

from ..analysis.stats import hl_ratio

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
    "proxy-unseen": "proxy on, a connection it never saw open",
    "conntrack-proxy": "conntrack and proxy on, neither end ECN",
    "home": "home router (fw4 ruleset, conntrack, masquerade)",
    "home-proxy": "home router and proxy on, neither end ECN",
    "home-proxied": "home router and proxy on, proxied flow, dupack",
}

# Issue 42's goals: instructions per packet the proxy may add (icount runs),
# as (what, configuration, the configuration its cost is counted from,
# most instructions added).
ADDED_GOALS = (
    ("loaded, off in this netns", "proxy-off", "nomod", 5),
    ("a flow that needs nothing, conntrack present", "conntrack-proxy", "conntrack", 150),
    ("a flow that needs nothing, no conntrack", "proxy-neither", "nomod", 300),
    ("a flow that needs nothing, both ends ECN, no conntrack", "proxy-both", "nomod", 300),
    ("a connection it never saw open, no conntrack", "proxy-unseen", "nomod", 300),
    ("proxied flow, drop", "proxy-drop", "nomod", 700),
    ("proxied flow, dupack", "proxy-dupack", "nomod", 700),
)


def main(out):
    meta = json.load(open(os.path.join(out, "meta.json")))
    runs = [json.loads(line) for line in open(os.path.join(out, "runs.jsonl")) if line.strip()]
    cpus = meta.get("cpus", 2)
    kernel = meta.get("method") == "kernel"
    unit = "instructions" if meta.get("clock") == "icount" else "ns"
    if kernel:
        bad = [r for r in runs if not r["ok"]]
        clock = ("guest clock counting instructions (QEMU -icount shift=0): the costs are "
                 "instructions executed, not time" if unit == "instructions" else
                 "guest clock: ns")
        print("Forwarding cost of the proxy node per packet, timed in the kernel "
              "(kmod/selftest/hookbench.c: one TCP connection played through the node's "
              "receive path, %d timed packets per run, data and ACKs 2 to 1, dropped at the "
              "egress device's tc filter; %s), and the rate one CPU would forward at that "
              "cost (1e9 / cost); %d interleaved repetitions, %d guest CPUs (TCG), kernel "
              "%s.  Runs whose filters did not see every packet forwarded: %d of %d%s.\n"
              % (meta["packets"], clock, meta["reps"], cpus, meta["kernel"], len(bad),
                 len(runs),
                 "" if not bad else " (%s)" % ", ".join(sorted({"%s %s" % (r["config"], r["size"])
                                                             for r in bad}))))
    else:
        print("Forwarding rate of the proxy node (iperf3 upload, no qdisc or link limit on "
              "the path), %d interleaved repetitions of %d s, %d guest CPUs (TCG), "
              "kernel %s.\n" % (meta["reps"], meta["secs"], cpus, meta["kernel"]))
    res = {}
    base_cost = {}

    def cpu_ns(r):
        """guest CPU time per forwarded packet, ns (busy share x CPUs / rate,
        or as timed in the kernel)"""
        if kernel:
            return r["ns"]
        return cpus * (1 - r["cpu_idle"]) / r["pps"] * 1e9

    def idle(r):
        return "-" if kernel else "%.3f" % r

    for size in ("full", "small"):
        rs = [r for r in runs if r["size"] == size and r["ok"] and r["pps"] > 0]
        base = [r["pps"] for r in rs if r["config"] == "nomod"]
        if not base:
            continue
        bmed = statistics.median(base)
        if kernel:
            what = "%d data bytes" % meta["payload"][size]
        else:
            what = "MSS 1448" if size == "full" else "MSS 88"
        print("### %s packets (%s)\n" % (size, what))
        if kernel:
            base_cost[size] = statistics.median(cpu_ns(r) for r in rs if r["config"] == "nomod")
            print("No module: %.0f %s per packet forwarded.\n" % (base_cost[size], unit))
        print("| configuration | runs | packets/s (median) | ratio to no module [95 %% interval] "
              "| CPU %s per packet vs no module | CPU idle |" % unit)
        print("|---|---|---|---|---|---|")
        for cfg in meta["configs"]:
            x = [r["pps"] for r in rs if r["config"] == cfg]
            idles = [r.get("cpu_idle", 0) for r in rs if r["config"] == cfg]
            if not x:
                print("| %s | 0 | - | - | - | - |" % LABEL.get(cfg, cfg))
                continue
            med = statistics.median(x)
            est, lo, hi, cov = hl_ratio(x, base)
            lvl = "" if cov >= 0.95 - 1e-9 else " (%.0f %%)" % (100 * cov)
            ns = (statistics.median(cpu_ns(r) for r in rs if r["config"] == cfg) -
                  statistics.median(cpu_ns(r) for r in rs if r["config"] == "nomod"))
            res[(cfg, size)] = (est, lo, hi, ns)
            print("| %s | %d | %.0f | %.3f [%.3f, %.3f]%s | %s | %s |" % (
                LABEL.get(cfg, cfg), len(x), med, est, lo, hi, lvl,
                "-" if cfg == "nomod" else "%+.0f" % ns, idle(statistics.median(idles))))
        print()

    def g(cfg, size):
        return res.get((cfg, size))

    print("### Goals\n")
    if unit != "instructions":
        print("Issue 42's goals are instructions added per packet, judged on runs whose "
              "guest clock counts instructions (TB_BENCH_CLOCK=icount, the default of "
              "make bench-hook-kernel); this run's costs are %s: not judged.\n" % unit)
    for size in ("full", "small"):
        strip_goal(g, size)
        a, b = g("impair-ecn-bleach", size), g("nft-ecn-set", size)
        if a and b:
            print("- impair ecn-bleach vs nft ip ecn set, %s: %+.0f vs %+.0f %s per packet"
                  % (size, a[3], b[3], unit))
    if unit == "instructions":
        added_goals(g, base_cost)


def strip_goal(g, size):
    """Issue 42's strip goal: impair's strip rule adds no more than the
    in-tree targets (xt TCPOPTSTRIP, nft reset tcp option) on the same
    segments (NOP,NOP,TS here), as a ratio of the costs each adds."""
    a = g("impair-strip-ts", size)
    for cfg in ("xt-tcpoptstrip-ts", "nft-reset-ts"):
        b = g(cfg, size)
        if not a or not b or b[3] <= 0:
            continue
        r = a[3] / b[3]
        print("- impair `strip timestamp` vs %s, %s, NOP,NOP,TS segments: %+.0f vs %+.0f, "
              "%.2fx its added cost, goal <= 1.0x: %s" % (
                  LABEL[cfg], size, a[3], b[3], r, "met" if r <= 1.0 else "NOT met"))


def added_goals(g, base_cost):
    """Issue 42's goals in instructions added per packet (medians), and the
    proxy's share of the home router's path."""
    print("\n### Instructions the proxy adds (issue 42)\n")
    for size in ("full", "small"):
        for what, cfg, frm, lim in ADDED_GOALS:
            a, b = g(cfg, size), (0, 0, 0, 0) if frm == "nomod" else g(frm, size)
            if a and b:
                add = a[3] - b[3]
                print("- %s, %s: %+.0f, goal <= +%d: %s" % (
                    what, size, add, lim, "met" if add <= lim else "NOT met"))
        home = g("home", size)
        if not home or size not in base_cost:
            continue
        path = base_cost[size] + home[3]
        print("- the home router forwards a packet in %.0f instructions (%+.0f over no module)"
              % (path, home[3]) + ", %s" % size)
        for cfg in ("home-proxy", "home-proxied"):
            a = g(cfg, size)
            if a:
                add = a[3] - home[3]
                print("  - %s: %+.0f, %.1f %% of the home router's cost per packet"
                      % (LABEL[cfg], add, 100 * add / path))


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(sys.argv[1])
