# SPDX-License-Identifier: GPL-2.0
"""How often each fairness sender's cwnd was 1, 2, 3 ... segments
(make fairness records: each flow's iperf3 intervals of 200 ms, whose
snd_cwnd is the sender's cwnd in bytes at the interval's end).  At a
window of a few segments the share of the link follows these: a sender
at 3 beside one at 2 takes 3/5.  Standard library only.

  dist(recs, frm)   {(pair, feedback, flow): (samples, {segments: share})}
                    over the intervals ending at frm s or later (the
                    profile's steady_from_s), the segment size per run
                    the greatest common divisor of its cwnd values
  main: scripts/ecnproxy cwnd-dist RESULTS... [--from S]
"""
import argparse
import collections
import glob
import json
import math
import os
import sys

TOP_BIN = 6     # 6 stands for "6 or more"


def run_mss(series):
    """The sender's segment size: the gcd of its cwnd values (bytes)."""
    g = 0
    for s in series:
        if s[2]:
            g = math.gcd(g, int(s[2]))
    return g


def dist(recs, frm):
    count = collections.defaultdict(collections.Counter)
    for r in recs:
        p = r["params"]
        for name, fl in (r.get("flows") or {}).items():
            series = fl.get("series") or []
            mss = run_mss(series)
            if not mss:
                continue
            key = (p["pair"], p["feedback"], name)
            for s in series:
                if s[0] >= frm and s[2]:
                    count[key][min(round(s[2] / mss), TOP_BIN)] += 1
    out = {}
    for key, c in count.items():
        n = sum(c.values())
        out[key] = (n, {k: c[k] / n for k in sorted(c)})
    return out


def fmt(d, label=""):
    lines = ["| results | pair | feedback | flow | samples | " +
             " | ".join("cwnd %s" % (k if k < TOP_BIN else "%d+" % k)
                        for k in range(1, TOP_BIN + 1)) + " |",
             "|---|---|---|---|---:|" + "---:|" * TOP_BIN]
    for (pair, fb, flow), (n, sh) in sorted(d.items()):
        lines.append("| %s | %s | %s | %s | %d | %s |" % (
            label, pair, fb, flow, n,
            " | ".join("%.2f" % sh.get(k, 0) for k in range(1, TOP_BIN + 1))))
    return lines


def main(argv=None):
    ap = argparse.ArgumentParser(prog="cwnd-dist", description=(
        "how often each fairness sender's cwnd was 1, 2, 3 ... segments"))
    ap.add_argument("results", nargs="+", help="make fairness directories")
    ap.add_argument("--from", dest="frm", type=float, metavar="S",
                    help="from S s on (default: the profile's steady_from_s)")
    a = ap.parse_args(argv)
    bad = [d for d in a.results if not os.path.isdir(os.path.join(d, "runs"))]
    if bad:
        ap.error("no runs/ in %s" % ", ".join(bad))
    out = []
    for d in a.results:
        recs = []
        for f in sorted(glob.glob(os.path.join(d, "runs", "*.json"))):
            with open(f) as fh:
                recs.append(json.load(fh))
        start = a.frm if a.frm is not None else min(
            (r["params"].get("steady_from_s") or 0 for r in recs), default=0)
        t = fmt(dist(recs, start), os.path.basename(os.path.normpath(d)))
        out += t if not out else t[2:]
    print("Share of each sender's 200 ms cwnd samples from the steady state on, "
          "by cwnd in segments:\n")
    print("\n".join(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
