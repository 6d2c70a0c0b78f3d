# SPDX-License-Identifier: GPL-2.0
"""Runs to make again: move their records aside, so that the next resume
(make matrix with the same PROFILE and FEEDBACK) makes them again.

  scripts/ecnproxy redo RESULTS_DIR [--flag FLAG]... [--id RUN_ID]... [--dry-run]

A record is chosen when its fidelity flags include a --flag (default:
host_busy, a run during which other work on the host took more than
provenance.HOST_BUSY of its CPU time) or its id is an --id.  Each chosen
runs/ID.json moves to redone/ID.json (redone/ID.N.json when that exists):
nothing is deleted, and the report counts the records kept there.  Prints
one line per record moved and a total; exit status 0 (2 on bad usage).
"""
import argparse
import json
import os
import sys


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
        hit = sorted(set(rec.get("fidelity", {}).get("flags") or []) & set(flags))
        if rid in ids:
            out.append((rid, "asked for"))
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
    flags = a.flag or ["host_busy"]
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
