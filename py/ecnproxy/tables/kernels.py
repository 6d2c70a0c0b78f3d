# SPDX-License-Identifier: GPL-2.0
"""The same matrix on two guest kernels, cell by cell:

  scripts/ecnproxy kernel-table A B [--configs A,B,...] [--direction D]

A and B are analysed matrix directories of one profile and seed (the same
plan), made on different kernels (KVER=6.1, KVER=6.12), normally from the
same commit.  For each cell (direction, cross traffic, added delay, load)
and configuration: the runs on each kernel, the median completion time on
each, the ratio B / A (Hodges-Lehmann estimate with its exact interval,
its real level in parentheses when the runs cannot reach 95 %), the same
ratio of the transfer times alone (connection set-up excluded: a SYN lost
on one kernel and not the other is a lottery, not a difference), and
medians of what TCP did on each (A -> B): the sender's retransmitted
segments and RTOs per run, SYN retransmissions per run, CE marks per MB.
A ratio B / A far from 1 in the configurations without the proxy is
Linux's TCP changing between the kernels, not the modules.  Then the
configurations' ratio B / A over all cells (geometric mean of the cells'
estimates, with the range of the cells).

Medians and exact intervals; no verdicts: which kernel is "right" is not
a question a ratio answers.
"""
import argparse
import json
import math
import os
import sys

from ..analysis.schema import load_order
from ..analysis.fairness import fmt_interval
from ..analysis.stats import hl_ratio
from .mechanism import read_runs

CONFIGS = ("noecn", "bothecn", "srvecn+proxy")
# (heading, runs.csv column, per MB, format)
COUNTS = (("rexmit/run", "snd_retrans_segs", False, "%.0f"),
          ("RTOs/run", "snd_rtos", False, "%.1f"),
          ("SYN rexmit/run", "snd_syn_retrans", False, "%.1f"),
          ("marks/MB", "red_marked", True, "%.1f"))


def meta_of(results):
    """(profile, seed, kernels, commits) of RESULTS: the plan from
    meta.json, the guest kernels from the run records (env.kernel), the
    commits from its sessions."""
    with open(os.path.join(results, "meta.json")) as f:
        m = json.load(f)
    prof = m.get("profile")
    if isinstance(prof, dict):
        prof = prof.get("name")
    kernels = set()
    for name in sorted(os.listdir(os.path.join(results, "runs"))):
        if name.endswith(".json"):
            with open(os.path.join(results, "runs", name)) as f:
                k = json.load(f).get("env", {}).get("kernel")
            if k:
                kernels.add(k)
    commits = {s.get("git_commit", "?")[:8] for s in m.get("sessions", [])}
    return prof, m.get("seed"), ", ".join(sorted(kernels)) or "?", \
        ", ".join(sorted(commits)) or "?"


def median_of(runs, col, per_mb):
    if col not in runs or runs[col].isna().all():
        return None
    v = runs[col] / (runs["total_bytes"] / 1e6) if per_mb else runs[col]
    return float(v.median())


def rows(da, db, configs, direction=None):
    """[(setting title, [table row]...)] and {config: [cell estimates]}."""
    da, db = da[da["use"].astype(bool)], db[db["use"].astype(bool)]
    out, ests = [], {c: [] for c in configs}
    keys = ["direction", "cross", "delay_ms"]
    settings = sorted({tuple(r) for r in da[keys].itertuples(index=False)} &
                      {tuple(r) for r in db[keys].itertuples(index=False)},
                      key=lambda s: (s[0], s[1] != "on", s[2]))
    for d, c, delay in settings:
        if direction and d != direction:
            continue
        sa = da[(da.direction == d) & (da.cross == c) & (da.delay_ms == delay)]
        sb = db[(db.direction == d) & (db.cross == c) & (db.delay_ms == delay)]
        lines = []
        for load in load_order(sa["load"]):
            for cfg in configs:
                ra = sa[(sa["load"] == load) & (sa.config == cfg)]
                rb = sb[(sb["load"] == load) & (sb.config == cfg)]
                if ra.empty or rb.empty:
                    continue
                r = hl_ratio(list(rb["completion_s"]), list(ra["completion_s"]))
                if not math.isnan(r[0]):
                    ests[cfg].append(r[0])
                rt = (float("nan"),) * 3 + (0.0,)
                if "transfer_s" in ra and "transfer_s" in rb:
                    rt = hl_ratio(list(rb["transfer_s"].dropna()), list(ra["transfer_s"].dropna()))
                cells = []
                for _h, col, per_mb, f in COUNTS:
                    a, b = median_of(ra, col, per_mb), median_of(rb, col, per_mb)
                    cells.append("-" if a is None or b is None else
                                 "%s -> %s" % (f % a, f % b))
                lines.append(["load %s" % load if load != "series" else "series", cfg,
                              "%d / %d" % (len(ra), len(rb)),
                              "%.2f" % ra["completion_s"].median(),
                              "%.2f" % rb["completion_s"].median(),
                              fmt_interval(*r), fmt_interval(*rt)] + cells)
        if lines:
            title = "%s, cross traffic %s" % (d, c)
            if delay >= 0:
                title += ", %d ms added" % delay
            out.append((title, lines))
    return out, ests


def main(argv):
    ap = argparse.ArgumentParser(prog="scripts/ecnproxy kernel-table",
                                 description=__doc__.split("\n\n")[0])
    ap.add_argument("a")
    ap.add_argument("b")
    ap.add_argument("--configs", default=",".join(CONFIGS))
    ap.add_argument("--direction", choices=("download", "upload"))
    a = ap.parse_args(argv)
    try:
        ma, mb = meta_of(a.a), meta_of(a.b)
        da, db = read_runs(a.a), read_runs(a.b)
    except (OSError, ValueError) as e:
        print("kernel-table: %s" % e, file=sys.stderr)
        return 1
    if ma[:2] != mb[:2]:
        print("kernel-table: not the same plan: %s seed %s against %s seed %s"
              % (ma[0], ma[1], mb[0], mb[1]), file=sys.stderr)
        return 1
    configs = tuple(a.configs.split(","))
    tabs, ests = rows(da, db, configs, a.direction)
    if not tabs:
        print("kernel-table: no cell with runs on both", file=sys.stderr)
        return 1
    print("Profile `%s` (seed %s): A = %s (kernel %s, commit %s), B = %s (kernel %s, "
          "commit %s).  Completion times, the ratio B / A with its exact interval; "
          "medians A -> B." % (ma[0], ma[1], a.a, ma[2], ma[3], a.b, mb[2], mb[3]))
    head = ["cell", "configuration", "runs A / B", "A s", "B s", "B / A",
            "transfer B / A"] + \
        [h for h, *_ in COUNTS]
    for title, lines in tabs:
        print("\n%s:\n" % title.capitalize())
        print("| " + " | ".join(head) + " |")
        print("| " + " | ".join(["---"] * len(head)) + " |")
        for r in lines:
            print("| " + " | ".join(r) + " |")
    print("\nOver all cells (geometric mean of the cells' B / A; range):\n")
    for cfg in configs:
        e = ests[cfg]
        if e:
            gm = math.exp(sum(math.log(x) for x in e) / len(e))
            print("- `%s`: %.3f over %d cells (%.2f-%.2f)" % (cfg, gm, len(e), min(e), max(e)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
