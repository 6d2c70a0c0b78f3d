# SPDX-License-Identifier: GPL-2.0
"""The README's per-cell tables, from a matrix directory's ratios.csv.

  scripts/ecnproxy cell-table RESULTS [--direction D] [--metric M] [--check FILE]
  scripts/ecnproxy cell-table --sessions RESULTS... [--direction D] [--metric M]

RESULTS is an analysed matrix directory (scripts/ecnproxy analyze): its
ratios.csv, or one ratios.csv per added delay in RESULTS/delay-*ms/
(PROFILE=parity).  For each direction, prints one Markdown table with a
row per (cross traffic, added delay) and a column per load, of

  - srvecn+proxy / bothecn, the proxy against end-to-end ECN, with its
    95 % interval (its real level where too few runs cannot reach 95 %)
    and the report's verdict on the goal (at most 1.05);
  - no harm: srvecn+proxy / noecn against max(1, bothecn / noecn), the
    proxy against no proxy, allowed to be as much slower as end-to-end
    ECN itself is (issue 40's second rule), judged on the interval by the
    report's rule (met: upper end at or below the bound; NOT met: lower
    end above it; undecided otherwise);
  - srvecn+proxy+drop / bothecn, srvecn+proxy+rwnd / bothecn and
    srvecn+proxy+fast / bothecn where the directory has `drop`,
    `dupack-rwnd` or `dupack-fast` beside the plan's mode.

Every figure is a row of ratios.csv; nothing is recomputed here, so the
table says what summary.md says.  With --check FILE, the table is
compared with the block of FILE between the lines
"<!-- cell-table RESULTS ... -->" and "<!-- /cell-table -->" (the
README's), and the exit status is 1 when they differ (the test suite runs
this, so a README table cannot drift from its data).
"""
import argparse
import csv
import glob
import json
import os
import re
import sys

from ..analysis.schema import CONFIG_FEEDBACK, load_order
from ..analysis.report import fmt_cov
from ..analysis.stats import CONF, goal_verdict

PROXY, ECN, PLAIN = "srvecn+proxy", "bothecn", "noecn"
# srvecn+proxy with another feedback mode, set per run (schema.CONFIG_FEEDBACK)
MODES = tuple(CONFIG_FEEDBACK)
GOAL = 1.05
BEGIN = re.compile(r"^<!-- cell-table (\S+)(.*?) -->\s*$")
END = "<!-- /cell-table -->"


def read_ratios(results):
    """{(delay_ms, metric, direction, cross, load, num, den): row} from
    RESULTS/ratios.csv (delay None) or RESULTS/delay-*ms/ratios.csv."""
    files = [(None, os.path.join(results, "ratios.csv"))]
    for path in glob.glob(os.path.join(results, "delay-*ms", "ratios.csv")):
        m = re.search(r"delay-(\d+)ms", path)
        files.append((int(m.group(1)), path))
    out = {}
    for delay, path in files:
        if not os.path.exists(path):
            continue
        with open(path, newline="") as f:
            for r in csv.DictReader(f):
                key = (delay, r["metric"], r["direction"], r["cross"], r["load"], r["num"],
                       r["den"])
                out[key] = r
    if not out:
        raise FileNotFoundError("%s: no ratios.csv (run scripts/ecnproxy analyze %s)"
                                % (results, results))
    return out


def fmt_ratio(r):
    """'0.99 [0.94, 1.04]', and the interval's real level where the runs
    cannot reach 95 % (' (67 %)', as summary.md prints it)."""
    return "%.2f [%.2f, %.2f]%s" % (float(r["ratio"]), float(r["low"]), float(r["high"]),
                                    fmt_cov(float(r["coverage"])))


def harm_verdict(proxy_plain, ecn_plain):
    """Issue 40's no-harm rule on srvecn+proxy / noecn: bound max(1,
    bothecn / noecn), judged on the interval; (verdict, bound)."""
    bound = max(1.0, float(ecn_plain["ratio"]))
    if float(proxy_plain["coverage"]) < CONF - 1e-9:
        return "undecided", bound
    return goal_verdict(float(proxy_plain["low"]), float(proxy_plain["high"]),
                        at_most=bound), bound


def bold(text, v):
    return "**%s**" % text if v == "NOT met" else text


def cell(rows, key, num, den):
    return rows.get(key + (num, den))


def table(rows, direction, metric="completion_s"):
    """The Markdown lines of one direction's table (empty: no such runs)."""
    settings = sorted({(k[3], k[0]) for k in rows if k[2] == direction and k[1] == metric
                       and k[5:] == (PROXY, ECN) and k[4] != "all"},
                      key=lambda s: (s[0] != "on", s[1] or 0))
    if not settings:
        return []
    loads = load_order(k[4] for k in rows if k[2] == direction and k[1] == metric
                       and k[4] != "all")
    modes = [m for m in MODES if any(k[5:] == (m, ECN) for k in rows)]
    head = ["cross traffic", "added delay", "ratio"] + [
        ("load %s" % l) if l != "series" else "series of 8" for l in loads]
    out = ["| " + " | ".join(head) + " |", "| " + " | ".join(["---"] * len(head)) + " |"]
    for cross, delay in settings:
        base = (delay, metric, direction, cross)
        lines = [("`%s / %s` (goal <= %.2f)" % (PROXY, ECN, GOAL), []),
                 ("no harm: `%s / %s` <= max(1, `%s / %s`)" % (PROXY, PLAIN, ECN, PLAIN), [])]
        lines += [("`%s / %s`" % (m, ECN), []) for m in modes]
        for l in loads:
            k = base + (l,)
            r = cell(rows, k, PROXY, ECN)
            lines[0][1].append(bold(("%s %s" % (fmt_ratio(r), r["verdict"])).strip(),
                                    r["verdict"]) if r else "-")
            pp, ep = cell(rows, k, PROXY, PLAIN), cell(rows, k, ECN, PLAIN)
            if pp and ep:
                v, b = harm_verdict(pp, ep)
                lines[1][1].append(bold("%s vs %.2f %s" % (fmt_ratio(pp), b, v), v))
            else:
                lines[1][1].append("-")
            for i, m in enumerate(modes):
                d = cell(rows, k, m, ECN)
                lines[2 + i][1].append(fmt_ratio(d) if d else "-")
        for i, (label, cells) in enumerate(lines):
            first = [cross if i == 0 else "", ("%d ms" % delay if delay is not None else "-")
                     if i == 0 else ""]
            out.append("| " + " | ".join(first + [label] + cells) + " |")
    return out


def render(results, directions=None, metric="completion_s"):
    rows = read_ratios(results)
    dirs = directions or sorted({k[2] for k in rows})
    out = []
    for d in dirs:
        t = table(rows, d, metric)
        if t:
            if out:
                out.append("")
            out += ["%ss (`%s`, Hodges-Lehmann ratios with exact 95 %% intervals; "
                    "in parentheses the real level of one that too few runs cannot "
                    "bring to 95 %%):" % (d.capitalize(), metric), ""] + t
    return "\n".join(out) + "\n"


def sessions(dirs, direction, metric="completion_s"):
    """One row per directory (a guest session each): its commit (about.json,
    else meta.json's), and per load each proxied configuration's ratio to
    end-to-end ECN, so that sessions of one profile can be read side by
    side (a cell that one session meets and another misses is not
    decided by either)."""
    per = []
    for d in dirs:
        rows = read_ratios(d)
        commit = None
        for name in ("about.json", "meta.json"):
            path = os.path.join(d, name)
            if not commit and os.path.exists(path):
                with open(path) as f:
                    commit = json.load(f).get("commit")
        per.append((d, (commit or "?")[:8], rows))
    keys = sorted({(k[0], k[3], k[4], k[5]) for _d, _c, rows in per for k in rows
                   if k[1] == metric and k[2] == direction and k[6] == ECN
                   and k[5] in (PROXY,) + MODES and k[4] != "all"},
                  key=lambda k: (k[0] or 0, k[1] != "on", k[3] != PROXY, k[3],
                                 k[2] == "series", int(k[2]) if k[2].isdigit() else 0))
    head = ["session", "commit"] + ["%s`%s / %s` load %s%s" % (
        "" if cross == "on" else "cross off, ", num, ECN, load,
        "" if delay is None else ", %d ms" % delay) for delay, cross, load, num in keys]
    out = ["| " + " | ".join(head) + " |", "| " + " | ".join(["---"] * len(head)) + " |"]
    for d, commit, rows in per:
        cells = []
        for delay, cross, load, num in keys:
            r = rows.get((delay, metric, direction, cross, load, num, ECN))
            cells.append(fmt_ratio(r) if r else "-")
        out.append("| `%s` | %s | %s |" % (os.path.basename(os.path.normpath(d)), commit,
                                          " | ".join(cells)))
    return "\n".join(out) + "\n"


def blocks(text):
    """[(results, args, start, end)] of the cell-table blocks of a file's
    lines (start: the BEGIN line's index, end: the END line's)."""
    lines = text.split("\n")
    out, i = [], 0
    while i < len(lines):
        m = BEGIN.match(lines[i])
        if m:
            j = i + 1
            while j < len(lines) and lines[j].strip() != END:
                j += 1
            if j == len(lines):
                raise ValueError("line %d: cell-table block without %s" % (i + 1, END))
            out.append((m.group(1), m.group(2).split(), i, j))
            i = j
        i += 1
    return out


def parse(argv):
    p = argparse.ArgumentParser(prog="cell-table", description=__doc__.split("\n")[0])
    p.add_argument("results", nargs="?")
    p.add_argument("--direction", action="append", choices=("upload", "download"))
    p.add_argument("--metric", default="completion_s", choices=("completion_s", "transfer_s"))
    p.add_argument("--check", metavar="FILE")
    p.add_argument("--root", default=".", help="directory the blocks' paths are relative to")
    p.add_argument("--sessions", nargs="+", metavar="RESULTS",
                   help="one row per directory: its proxied ratios to bothecn per load")
    return p.parse_args(argv)


def check(path, root):
    """0 when every cell-table block of PATH equals its regeneration."""
    with open(path) as f:
        text = f.read()
    lines, bad = text.split("\n"), 0
    found = blocks(text)
    if not found:
        print("%s: no cell-table block" % path, file=sys.stderr)
        return 1
    for results, args, start, end in found:
        a = parse([os.path.join(root, results)] + args)
        want = render(a.results, a.direction, a.metric).rstrip("\n").split("\n")
        have = lines[start + 1:end]
        if have != want:
            bad += 1
            print("%s:%d: the table of %s differs from its data; regenerate it with "
                  "scripts/ecnproxy cell-table %s %s" % (path, start + 1, results, results,
                                                          " ".join(args)), file=sys.stderr)
    return 1 if bad else 0


def main(argv=None):
    a = parse(sys.argv[1:] if argv is None else argv)
    if a.check:
        return check(a.check, a.root)
    if a.sessions:
        try:
            sys.stdout.write(sessions(a.sessions, (a.direction or ["upload"])[0], a.metric))
        except FileNotFoundError as e:
            print("cell-table: %s" % e, file=sys.stderr)
            return 1
        return 0
    if not a.results:
        print("cell-table: RESULTS, --sessions RESULTS... or --check FILE", file=sys.stderr)
        return 2
    try:
        sys.stdout.write(render(a.results, a.direction, a.metric))
    except FileNotFoundError as e:
        print("cell-table: %s" % e, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
