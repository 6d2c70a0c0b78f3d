# SPDX-License-Identifier: GPL-2.0
"""Runs to make again: move their records aside, so that the next resume
(make matrix with the same PROFILE and FEEDBACK) makes them again.

  scripts/ecnproxy redo RESULTS_DIR [--flag FLAG]... [--id RUN_ID]... [--dry-run]

A record is chosen when it was made on a busy host (other work took more
than provenance.HOST_BUSY of the host's CPU time during the run, from its
host_load samples), when its fidelity flags (its own and those the
analysis derives: analysis/fidelity.py) include a --flag, or when its id
is an --id.  Each chosen
runs/ID.json moves to redone/ID.json (redone/ID.N.json when that exists):
nothing is deleted, and the report counts the records kept there.  Prints
one line per record moved and a total; exit status 0 (2 on bad usage).
"""
import argparse
import json
import os
import sys

from ..analysis import fidelity
from ..analysis.provenance import HOST_BUSY, host_busy_share


def chosen(d, flags, ids):
    """[(run id, reason)] of the records of D/runs/ to make again."""
    out = []
    rdir = os.path.join(d, "runs")
    for name in sorted(os.listdir(rdir)):
        if not name.endswith(".json"):
            continue
        rid = name[:-len(".json")]
        with open(os.path.join(rdir, name)) as f:
            rec = json.load(f)
        hit = sorted(set(fidelity.flags(rec)) & set(flags))
        busy = host_busy_share(rec)
        if rid in ids:
            out.append((rid, "asked for"))
        elif busy is not None and busy > HOST_BUSY:
            out.append((rid, "busy host (other work took %.0f %% of its CPU)" % (100 * busy)))
        elif hit:
            out.append((rid, ",".join(hit)))
    return out


def move_aside(d, rid):
    """runs/RID.json to redone/RID.json (or RID.N.json); the new path."""
    dst_dir = os.path.join(d, "redone")
    os.makedirs(dst_dir, exist_ok=True)
    dst, n = os.path.join(dst_dir, rid + ".json"), 1
    while os.path.exists(dst):
        dst = os.path.join(dst_dir, "%s.%d.json" % (rid, n))
        n += 1
    os.rename(os.path.join(d, "runs", rid + ".json"), dst)
    return dst


def main(argv=None):
    p = argparse.ArgumentParser(prog="redo", description=__doc__.split("\n")[0])
    p.add_argument("results")
    p.add_argument("--flag", action="append")
    p.add_argument("--id", action="append", default=[])
    p.add_argument("--dry-run", action="store_true")
    a = p.parse_args(sys.argv[1:] if argv is None else argv)
    if not os.path.isdir(os.path.join(a.results, "runs")):
        print("redo: %s has no runs/" % a.results, file=sys.stderr)
        return 2
    flags = a.flag or []
    todo = chosen(a.results, flags, set(a.id))
    missing = set(a.id) - {r for r, _ in todo}
    if missing:
        print("redo: no record %s in %s/runs" % (", ".join(sorted(missing)), a.results),
              file=sys.stderr)
        return 2
    for rid, why in todo:
        where = "(dry run)" if a.dry_run else move_aside(a.results, rid)
        print("%s: %s -> %s" % (rid, why, where))
    print("redo: %d record%s %s" % (len(todo), "" if len(todo) == 1 else "s",
                                    "would move" if a.dry_run else "moved to redone/"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
