# SPDX-License-Identifier: GPL-2.0
"""Are the first runs of a guest session slower than the rest?

  scripts/ecnproxy session-start RESULTS... [--first K] [--above X]

A matrix is made in one or more guest sessions (a resume starts a new
one).  If a freshly booted guest ran slowly for a while (cold caches, a
translation cache still filling under TCG), the first runs of every
session would be slow, whatever the configuration, and a resume or a
redone run would be more likely to draw a bad time.  This table checks
that from the records alone.

For each record in RESULTS/runs/ with a completion time and a session id
(`origin.session_id`; older records have none and are left out), its
position in its session (by the guest's transfer start time) and its
completion time over the median of its cell (the run id without its
`_rNN` repetition, over the whole directory; cells with fewer than 3
runs are left out).  Records moved to redone/ are not read, so a run
made again moves to its new session and leaves a gap in its old one.  Per position 1..K and for
the later runs: the runs, the median of that ratio, how many are above X
(default 1.2), and those runs by name with their bottleneck utilisation.
Medians only, no test: the point is whether the first positions stand
out from the later ones.
"""
import argparse
import glob
import json
import os
import re
import statistics
import sys

from ..analysis.schema import get, is_num


def records(results):
    """[(session, start, cell, completion_s, utilisation, id)] of RESULTS."""
    out = []
    for path in sorted(glob.glob(os.path.join(results, "runs", "*.json"))):
        with open(path) as f:
            try:
                r = json.load(f)
            except ValueError:
                continue
        if not isinstance(r, dict):
            continue
        sess = get(r, "origin.session_id", None)
        comp = r.get("completion_s")
        start = get(r, "transfer.start", None)
        rid = r.get("id")
        if not sess or not is_num(comp) or not is_num(start) or not isinstance(rid, str):
            continue
        util = get(r, "fidelity.bottleneck_utilisation", None)
        out.append((sess, start, re.sub(r"_r\d+$", "", rid), comp,
                    util if is_num(util) else None, rid))
    return out


def positions(recs, min_cell=3):
    """[(position from 1, ratio to the cell's median, record)] of RECS."""
    cells = {}
    for rec in recs:
        cells.setdefault(rec[2], []).append(rec[3])
    sessions = {}
    for rec in recs:
        sessions.setdefault(rec[0], []).append(rec)
    out = []
    for runs in sessions.values():
        runs.sort(key=lambda rec: rec[1])
        for pos, rec in enumerate(runs, 1):
            times = cells[rec[2]]
            if len(times) < min_cell:
                continue
            med = statistics.median(times)
            if med > 0:
                out.append((pos, rec[3] / med, rec))
    return out


def table(dirs, first=4, above=1.2):
    """Markdown lines for DIRS."""
    rows = []
    nsess = 0
    used = []
    for d in dirs:
        recs = records(d)
        if not recs:
            continue
        used.append(os.path.basename(os.path.normpath(d)))
        nsess += len({rec[0] for rec in recs})
        rows += [(pos, ratio, rec, used[-1]) for pos, ratio, rec in positions(recs)]
    lines = ["Guest sessions: %d, in %d directories with session ids (%s)."
             % (nsess, len(used), ", ".join(used) or "none"), "",
             "| position in its session | runs | completion / cell median, median | max | above %.2f |" % above,
             "| --- | --- | --- | --- | --- |"]
    groups = [("%d" % p, [r for r in rows if r[0] == p]) for p in range(1, first + 1)]
    groups.append(("%d and later" % (first + 1), [r for r in rows if r[0] > first]))
    for name, grp in groups:
        if not grp:
            lines.append("| %s | 0 | - | - | - |" % name)
            continue
        ratios = [r[1] for r in grp]
        lines.append("| %s | %d | %.3f | %.2f | %d |"
                     % (name, len(grp), statistics.median(ratios), max(ratios),
                        sum(x > above for x in ratios)))
    slow = sorted((r for r in rows if r[1] > above), key=lambda r: (r[0], -r[1]))
    if slow:
        lines += ["", "Runs above %.2f of their cell's median:" % above, ""]
        for pos, ratio, rec, d in slow:
            util = "utilisation %.2f" % rec[4] if rec[4] is not None else "no utilisation"
            lines.append("- %s `%s`: position %d, %.2f (%.2f s), %s"
                         % (d, rec[5], pos, ratio, rec[3], util))
    return lines


def main(argv=None):
    ap = argparse.ArgumentParser(prog="scripts/ecnproxy session-start",
                                 description=__doc__.split("\n")[0])
    ap.add_argument("results", nargs="+", help="matrix results directories")
    ap.add_argument("--first", type=int, default=4, help="positions shown one by one (default 4)")
    ap.add_argument("--above", type=float, default=1.2,
                    help="list runs above this ratio to their cell's median (default 1.2)")
    a = ap.parse_args(argv)
    if a.first < 1 or a.above <= 0:
        ap.error("--first must be at least 1 and --above positive")
    for d in a.results:
        if not os.path.isdir(os.path.join(d, "runs")):
            ap.error("%s: no runs/ directory" % d)
    sys.stdout.write("\n".join(table(a.results, a.first, a.above)) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
