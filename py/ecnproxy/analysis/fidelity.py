# SPDX-License-Identifier: GPL-2.0
"""Fidelity checks the host derives from a record's raw data, beside the
flags the guest wrote into it (`fidelity.flags`, guest/matrix.py).

`bottleneck_underdelivered`: while the transfer ran (the record's
`transfer.start` to `transfer.end`), the bottleneck's queue held packets
for at least UNDER_BACKLOG of the time (`probes.queue.samples`: [time,
backlog bytes, packets] about every 50 ms; each sample's state holds
until the next one, so a stretch without samples, as under a stalled TCG
guest, counts for its length), yet the link carried less than UNDER_UTIL
of its rate (`fidelity.bottleneck_utilisation`, cross traffic included).
A shaper with a backlog sends at its rate; one that does not was held
back by the guest (its timers or CPU under TCG), so the link was not the
limit.  RTOs and slow start lower the utilisation too, but they empty the
queue, which is why the backlog is part of the test.  Runs with fewer than
MIN_SAMPLES samples in the transfer (about 2 s) are not judged: their
utilisation is mostly handshake and slow start.

How the bounds were chosen, from the records in results/: docs/findings.md,
"The final code's 0 ms upload cells" (`scripts/ecnproxy fidelity-scan`).

Read by the matrix report (analysis/report.py) and scripts/ecnproxy redo;
the fairness and experiment reports read the guest's flags only.

  scripts/ecnproxy fidelity-scan RESULTS...
prints, for the records of RESULTS (runs/*.json), how many had a backlog
for at least UNDER_BACKLOG of the transfer, their utilisation's
percentiles, and the flagged runs.
"""
import argparse
import glob
import json
import os
import sys

from .schema import get, is_num

UNDER_BACKLOG = 0.90
UNDER_UTIL = 0.75
MIN_SAMPLES = 40


def backlog_share(rec):
    """The share of the transfer's time the bottleneck had a backlog, from
    the queue samples inside it; None with fewer than MIN_SAMPLES of them
    or without the transfer's times."""
    q = get(rec, "probes.queue.samples", None)
    t0, t1 = get(rec, "transfer.start", None), get(rec, "transfer.end", None)
    if not isinstance(q, list) or not is_num(t0) or not is_num(t1):
        return None
    pts = [(s[0], s[1]) for s in q if isinstance(s, (list, tuple)) and len(s) > 1
           and is_num(s[0]) and is_num(s[1]) and t0 <= s[0] <= t1]
    if len(pts) < MIN_SAMPLES:
        return None
    total = busy = 0.0
    for (ta, ba), (tb, _bb) in zip(pts, pts[1:]):
        d = max(0.0, tb - ta)
        total += d
        if ba > 0:
            busy += d
    return busy / total if total > 0 else None


def utilisation(rec):
    u = get(rec, "fidelity.bottleneck_utilisation", None)
    return u if is_num(u) else None


def underdelivered(rec):
    """True when the bottleneck had a backlog almost throughout the
    transfer and still carried less than UNDER_UTIL of its rate."""
    util, share = utilisation(rec), backlog_share(rec)
    return util is not None and share is not None and share >= UNDER_BACKLOG \
        and util < UNDER_UTIL


def flags(rec):
    """The record's own fidelity flags and the derived ones, in order."""
    own = get(rec, "fidelity.flags", None)
    out = [f for f in own if isinstance(f, str)] if isinstance(own, list) else []
    if underdelivered(rec) and "bottleneck_underdelivered" not in out:
        out.append("bottleneck_underdelivered")
    return out


def scan(dirs):
    """Markdown lines: the records of DIRS with enough samples, those with
    a backlog for at least UNDER_BACKLOG of the transfer and their
    utilisation's percentiles, and the flagged runs."""
    rows = []
    for d in dirs:
        for path in sorted(glob.glob(os.path.join(d, "runs", "*.json"))):
            try:
                with open(path) as f:
                    rec = json.load(f)
            except (OSError, ValueError):
                continue
            share, util = backlog_share(rec), utilisation(rec)
            if share is not None and util is not None:
                rows.append((util, share, os.path.basename(os.path.normpath(d)),
                             os.path.basename(path)[:-len(".json")]))
    full = sorted(r[0] for r in rows if r[1] >= UNDER_BACKLOG)

    def pct(p):
        return "%.2f" % full[min(len(full) - 1, int(p * len(full)))] if full else "-"
    lines = ["Records with %d or more queue samples in their transfer: %d, in %d directories."
             % (MIN_SAMPLES, len(rows), len({r[2] for r in rows})),
             "With a backlog for at least %.0f %% of the transfer: %d; their utilisation "
             "at the 1st, 5th and 50th percentile: %s, %s, %s."
             % (100 * UNDER_BACKLOG, len(full), pct(0.01), pct(0.05), pct(0.5)),
             "Flagged `bottleneck_underdelivered` (utilisation below %.2f): %d."
             % (UNDER_UTIL, sum(1 for r in rows if r[1] >= UNDER_BACKLOG and r[0] < UNDER_UTIL))]
    for util, share, d, rid in sorted(rows):
        if share >= UNDER_BACKLOG and util < UNDER_UTIL:
            lines.append("- %s `%s`: utilisation %.2f, backlog %.0f %% of the transfer"
                         % (d, rid, util, 100 * share))
    return lines


def main(argv=None):
    ap = argparse.ArgumentParser(prog="scripts/ecnproxy fidelity-scan",
                                 description="the derived bottleneck_underdelivered flag "
                                 "over the records of matrix results directories")
    ap.add_argument("results", nargs="+")
    a = ap.parse_args(argv)
    dirs = [d for d in a.results if os.path.isdir(os.path.join(d, "runs"))]
    if not dirs:
        ap.error("no directory with runs/ among %s" % " ".join(a.results))
    sys.stdout.write("\n".join(scan(dirs)) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
