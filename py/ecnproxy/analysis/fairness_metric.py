# SPDX-License-Identifier: GPL-2.0
"""The fairness report's reductions per CE-marked round trip, decomposed:
the proxied sender's value as a ratio to the control's under each choice
of CE marks and window, from a fairness results directory's records.

  scripts/ecnproxy fairness-metric RESULTS_DIR [DIRECTION]

DIRECTION: upload (default) or download.  Per feedback mode of
proxy-vs-ecn, against the control ecn-vs-ecn: the Hodges-Lehmann ratio
of A's reductions per CE-marked round trip with its exact interval
(stats.hl_ratio, as in the report's goal table), and both medians, for

  marks    all: every CE mark after the bottleneck (the definition
           before 2026-12-02); new: the marks on new data only
           (analysis/fairness.py new_ce(): from ce_new_times, or in an
           older record the marks at an episode's start taken out)
  window   own: each flow's own median sRTT (before 2026-12-02);
           probe: the run's RTT probe p50; B: B's median sRTT (the
           report's choice since 2026-12-02 is probe, else B);
           25ms: a fixed 25 ms

In results/fairness-rtt20-20261201 this puts the dupack ratio at 0.95
with all marks in the own window and at 1.00 with new marks in the
probe's: kmod/ecn_proxy/DUPACK.md, "Stale TSecrs at N".
"""
import glob
import json
import os
import statistics
import sys

from . import fairness, stats

WINDOWS = ("own", "probe", "B", "25ms")


def values(rec):
    """{(marks, window): A's reductions per CE-marked round trip} of one
    run record (no entry where a window or the marks are missing)."""
    row = fairness.run_row(rec)
    marks = fairness.steady_ce(rec, "A")
    red = row.get("reductions_A")
    if not marks or red is None:
        return {}
    srtt = row.get("srtt_ms_A")
    win = {"own": srtt / 1e3 if srtt else None,
           "probe": (((rec.get("probes") or {}).get("rtt") or {}).get("p50_ms") or 0) / 1e3,
           "B": (row.get("srtt_ms_B") or 0) / 1e3, "25ms": 0.025}
    out = {}
    for mk, times in (("all", marks[0]), ("new", marks[1])):
        for w in WINDOWS:
            if win[w]:
                n = fairness.ce_round_trips(times, win[w])
                if n:
                    out[(mk, w)] = red / n
    return out


def main(argv):
    if not argv or argv[0].startswith("-"):
        print(__doc__, file=sys.stderr)
        return 2
    direction = argv[1] if len(argv) > 1 else "upload"
    cells = {}
    for f in sorted(glob.glob(os.path.join(argv[0], "runs", "*.json"))):
        with open(f) as fh:
            rec = json.load(fh)
        p = rec["params"]
        if p["direction"] != direction:
            continue
        key = "control" if p["pair"] == "ecn-vs-ecn" else (
            p["feedback"] if p["pair"] == "proxy-vs-ecn" else None)
        if key is None:
            continue
        for v, x in values(rec).items():
            cells.setdefault(key, {}).setdefault(v, []).append(x)
    ctl = cells.pop("control", None)
    if not ctl or not cells:
        print("fairness-metric: no %s runs of both proxy-vs-ecn and ecn-vs-ecn in %s"
              % (direction, argv[0]), file=sys.stderr)
        return 1
    print("%s: A's reductions per CE-marked round trip, proxy-vs-ecn against the control "
          "ecn-vs-ecn (%s)" % (os.path.basename(os.path.abspath(argv[0])), direction))
    print("%-8s %-5s %-6s %6s %8s  %s" % ("feedback", "marks", "window", "A", "control",
                                          "ratio [interval] (coverage)"))
    for fb in sorted(cells):
        for mk in ("all", "new"):
            for w in WINDOWS:
                a, c = cells[fb].get((mk, w)), ctl.get((mk, w))
                if not a or not c:
                    continue
                est, lo, hi, cov = stats.hl_ratio(a, c)
                print("%-8s %-5s %-6s %6.3f %8.3f  %s" % (
                    fb, mk, w, statistics.median(a), statistics.median(c),
                    fairness.fmt_interval(est, lo, hi, cov, "%.3f")))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
