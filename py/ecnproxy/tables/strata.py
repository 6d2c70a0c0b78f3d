# SPDX-License-Identifier: GPL-2.0
"""A cell of parallel flows, split by how many of them negotiated ECN:

  scripts/ecnproxy strata-table RESULTS... [--direction D] [--cross C]
                                [--num CONFIG] [--den CONFIG]

Where a run has several flows (load 3 and 5, the series), a flow whose
ECN-setup SYN or SYN-ACK is lost goes on without ECN, in `bothecn`
(Linux retransmits the SYN without ECE and CWR) and through the proxy
alike (the proxy follows that fallback), and a flow without ECN loses
packets to RED where an ECN flow is marked.  A run's time then depends
mostly on how many of its flows kept ECN, a number that RED draws per
run: the cell is a mixture, and the ratio of two configurations' runs
compares their draws as much as their flows.  This table takes the
lottery out: per cell, the runs of the two configurations (NUM, default
`srvecn+proxy`, and DEN, default `bothecn`) grouped by the number of
flows that negotiated ECN on the server's side of the proxy (runs.csv's
`ss_ecn_negotiated`: the proxied flows for NUM, the end-to-end ones for
DEN), and in each group: the runs, their median completion time, the
median rate the UDP cross traffic got through the bottleneck, and the
ratio NUM / DEN of completion times (Hodges-Lehmann with its exact
interval, its real level in parentheses when the group's runs cannot
reach 95 %).

Several RESULTS directories are pooled cell by cell (a cell: direction,
cross traffic, added delay, load, flows and bytes; runs of another
feedback mode are not pooled): give only directories made from code
with the same proxy decisions.  The directories' commits are printed.
"""
import argparse
import json
import os
import sys

import pandas as pd

from ..analysis.fairness import fmt_interval
from ..analysis.schema import load_order
from ..analysis.stats import hl_ratio
from .kernels import meta_of
from .mechanism import read_runs

CELL = ["direction", "cross", "delay_ms", "load", "flows", "series", "total_bytes"]


def added_delay(results, run_id):
    """The delay a run's record says was added (params.delay_ms), -1 if
    it says none."""
    try:
        with open(os.path.join(results, "runs", run_id + ".json")) as f:
            d = json.load(f).get("params", {}).get("delay_ms")
    except (OSError, ValueError):
        return -1
    return int(d) if isinstance(d, (int, float)) else -1


def pooled(dirs):
    """The usable runs of DIRS in one frame, with a `results` column; a
    run of a directory without delay blocks gets the delay its record
    names, so that it pools with a delay block's runs of the same
    setting."""
    frames = []
    for d in dirs:
        df = read_runs(d)
        df = df[df["use"].astype(bool)].assign(results=d)
        own = df["delay_ms"] < 0
        df.loc[own, "delay_ms"] = [added_delay(d, i) for i in df.loc[own, "id"]]
        frames.append(df)
    return pd.concat(frames, ignore_index=True)


def mbit(v):
    return "-" if v is None or v != v else "%.2f" % (v / 1e6)


def strata(runs, num, den):
    """[(ECN flows, [row cells])] for one cell's RUNS, fewest ECN flows
    first."""
    out = []
    runs = runs[runs.config.isin((num, den))].dropna(subset=["ss_ecn_negotiated"])
    for k in sorted(runs["ss_ecn_negotiated"].astype(int).unique()):
        g = runs[runs["ss_ecn_negotiated"].astype(int) == k]
        a, b = g[g.config == num], g[g.config == den]
        row = []
        for part in (a, b):
            udp = part["udp_rate_bps"].median() if "udp_rate_bps" in part else None
            row += ["%d" % len(part),
                    "%.2f" % part["completion_s"].median() if len(part) else "-",
                    mbit(udp) if len(part) else "-"]
        r = hl_ratio(list(a["completion_s"]), list(b["completion_s"])) \
            if len(a) and len(b) else (float("nan"),) * 3 + (0.0,)
        out.append((k, row + [fmt_interval(*r)]))
    return out


def tables(runs, num, den, direction=None, cross=None):
    """[(cell title, flows, [(k, row)])] for the cells of RUNS with more
    than one flow (parallel flows or a series)."""
    out = []
    multi = runs[(runs["flows"] > 1) | (runs["series"] > 0)]
    if direction:
        multi = multi[multi.direction == direction]
    if cross:
        multi = multi[multi.cross == cross]
    feedbacks = multi["feedback"].dropna().unique() if "feedback" in multi else []
    for fb in sorted(feedbacks) or [None]:
        part = multi if fb is None else multi[multi.feedback == fb]
        order = list(load_order(part["load"]))
        keys = sorted({tuple(r) for r in part[CELL].itertuples(index=False)},
                      key=lambda c: (c[0], c[1] != "on", c[2], order.index(c[3])))
        for d, c, delay, load, flows, series, nbytes in keys:
            cell = part[(part.direction == d) & (part.cross == c) & (part.delay_ms == delay) &
                        (part["load"] == load) & (part.flows == flows) &
                        (part.series == series) & (part.total_bytes == nbytes)]
            lines = strata(cell, num, den)
            if not lines:
                continue
            title = "%s, cross traffic %s, %s" % (
                d, c, "series of %d" % series if series else "load %s" % load)
            if delay >= 0:
                title += ", %d ms added" % delay
            if fb:
                title += ", feedback %s" % fb
            out.append((title, series or flows, lines))
    return out


def main(argv):
    ap = argparse.ArgumentParser(prog="scripts/ecnproxy strata-table",
                                 description=__doc__.split("\n\n")[0])
    ap.add_argument("results", nargs="+")
    ap.add_argument("--direction", choices=("download", "upload"))
    ap.add_argument("--cross", choices=("on", "off"))
    ap.add_argument("--num", default="srvecn+proxy")
    ap.add_argument("--den", default="bothecn")
    a = ap.parse_args(argv)
    try:
        metas = [meta_of(d) for d in a.results]
        runs = pooled(a.results)
    except (OSError, ValueError) as e:
        print("strata-table: %s" % e, file=sys.stderr)
        return 1
    if "ss_ecn_negotiated" not in runs:
        print("strata-table: runs.csv has no ss_ecn_negotiated column "
              "(run scripts/ecnproxy analyze again)", file=sys.stderr)
        return 1
    tabs = tables(runs, a.num, a.den, a.direction, a.cross)
    if not tabs:
        print("strata-table: no cell of several flows with `%s` or `%s` runs"
              % (a.num, a.den), file=sys.stderr)
        return 1
    print("Runs pooled from: %s." % "; ".join(
        "%s (profile %s, kernel %s, commit %s)" % (d, m[0], m[2], m[3])
        for d, m in zip(a.results, metas)))
    print("Per cell, the runs grouped by how many of their flows negotiated ECN "
          "(server side); completion time in s, the UDP cross traffic's rate through "
          "the bottleneck in Mbit/s (medians), and `%s / %s` within the group."
          % (a.num, a.den))
    head = ["flows with ECN", "runs %s" % a.num, "s", "UDP Mbit/s", "runs %s" % a.den,
            "s", "UDP Mbit/s", "%s / %s" % (a.num, a.den)]
    for title, flows, lines in tabs:
        print("\n%s:\n" % (title[0].upper() + title[1:]))
        print("| " + " | ".join(head) + " |")
        print("| " + " | ".join(["---"] * len(head)) + " |")
        for k, row in lines:
            print("| %d of %d | " % (k, flows) + " | ".join(row) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
