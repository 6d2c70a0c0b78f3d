# SPDX-License-Identifier: GPL-2.0
"""Analysis of a matrix results directory (run by scripts/matrix).

  scripts/ecnproxy analyze RESULTS_DIR

Writes summary.csv, runs.csv, summary.md, the box plots, timeseries.png and
README.md and headline.json into RESULTS_DIR (and, for a directory under
results/, rewrites the index results/README.md with scripts/results-index,
which lists the directory as wip until it has an about.json), then prints
the path of summary.md and the headline: every cell's ratio and verdict,
and the pooled figure where the cells agree.
"""
import json
import os
import subprocess
import sys

from ..analysis import experiments, fairness, report
from ..paths import RESULTS, python_env


def write_index(results):
    """results/README.md, by scripts/results-index (a failure there is
    reported, not fatal: the analysis is done)."""
    rc = subprocess.run([sys.executable, "-m", "ecnproxy", "results-index", "--results", results],
                        env=python_env()).returncode
    if rc:
        print("matrix: scripts/results-index failed (%d); run it again" % rc, file=sys.stderr)


def main():
    d = os.path.abspath(sys.argv[1])
    with open(os.path.join(d, "plan.json")) as f:
        kind = json.load(f)["profile"].get("kind", "matrix")
    results = RESULTS
    if kind == "impair":
        verdicts = experiments.report(d)
        if os.path.dirname(d) == results:
            write_index(results)
        print("matrix: %s" % os.path.join(d, "summary.md"))
        print("matrix:   claims: %s" % (", ".join(
            "%d %s" % (n, v) for v, n in sorted(verdicts.items())) or "none judged"))
        return 0
    if kind == "fairness":
        verdicts = fairness.report(d)
        if os.path.dirname(d) == results:
            write_index(results)
        print("matrix: %s" % os.path.join(d, "summary.md"))
        for k, v in verdicts.items():
            print("matrix:   %-18s A's share %.3f, control [%.3f, %.3f]: %s; shift %s: %s" % (
                k, v["share_A"], v["control"][0], v["control"][1],
                "inside" if v["inside"] else "OUTSIDE",
                fairness.fmt_interval(*v["shift"], v["shift_coverage"], "%+.3f"),
                v["verdict"].replace("*", "")))
        return 0
    delays = json.load(open(os.path.join(d, "plan.json")))["profile"].get("delays")
    if delays:
        # one report per added delay (PROFILE=parity), in RESULTS/delay-MSms/
        parts = []
        for ms in delays:
            out = os.path.join(d, "delay-%dms" % ms)
            os.makedirs(out, exist_ok=True)
            try:
                heads = report.report(d, out, lambda r, ms=ms: r["params"].get("delay_ms", 0) == ms)
            except SystemExit as e:  # no runs of this delay yet
                print("matrix: delay %d ms: %s" % (ms, e))
                continue
            parts.append((ms, out, heads))
        with open(os.path.join(d, "summary.md"), "w") as f:
            f.write("# %s\n\nOne report per added delay on the server's link "
                    "(the profile's `delays`):\n\n" % os.path.basename(d))
            for ms, out, _h in parts:
                f.write("- %d ms: [`delay-%dms/summary.md`](delay-%dms/summary.md)\n" % (ms, ms, ms))
    else:
        parts = [(None, d, report.report(d))]
    if os.path.dirname(d) == results:
        write_index(results)

    def plain(x):
        return x.replace("**", "")
    for ms, out, heads in parts:
        print("matrix: %s%s" % (os.path.join(out, "summary.md"),
                                "" if ms is None else " (added delay %d ms)" % ms))
        print_heads(heads, plain)
    return 0


def print_heads(heads, plain):
    for k, h in heads.items():
        print("matrix:   %s" % k)
        for load, c in h["cells"].items():
            print(plain("matrix:     %-8s %s%s" % (
                load, report.fmt_head_cell(c["ratio"], c["verdict"]),
                "; transfer only " + report.fmt_head_cell(c["transfer"], c["transfer_verdict"])
                if c["transfer"] else "")))
        if len(h["cells"]) > 1:
            print(plain("matrix:     %-8s %s" % ("pooled", report.fmt_head_pool(h["pooled"]))))


if __name__ == "__main__":
    sys.exit(main())
