# SPDX-License-Identifier: GPL-2.0
"""Check that a matrix results directory is complete and well formed.

  scripts/ecnproxy check RESULTS_DIR

Prints one "ok - CHECK" / "not ok - CHECK # why" line per check (the test
runner counts them); exit 1 if any failed.  Used by the smoke test in
`make test` (PROFILE=smoke) and usable on any published result.
"""
import csv
import glob
import json
import os
import sys

from ..analysis.schema import check_plan, validate

failed = 0


def check(ok, name, why=""):
    global failed
    if ok:
        print("ok - " + name)
    else:
        failed += 1
        print("not ok - %s # %s" % (name, why))


def check_fairness(d, plan):
    """A fairness results directory (PROFILE=fairness*)."""
    ids = [r["id"] for r in plan["runs"]]
    missing = [i for i in ids if not os.path.exists(os.path.join(d, "runs", i + ".json"))]
    check(not missing, "every run of the plan has a record (%d)" % len(ids),
          "%d missing, e.g. %s" % (len(missing), missing[:3]))
    recs = []
    for f in sorted(glob.glob(os.path.join(d, "runs", "*.json"))):
        with open(f) as fh:
            recs.append(json.load(fh))
    bad = [r["id"] for r in recs if r.get("schema") != "ecnproxy-fairness-run/1"
           or set(r.get("flows", {})) != {"A", "B"}]
    check(not bad, "every record is a fairness record with flows A and B", ", ".join(bad[:3]))
    flagged = ["%s (%s)" % (r["id"], ",".join(r["fidelity"]["flags"])) for r in recs
               if r["fidelity"]["flags"]]
    check(not flagged, "no run flagged (roles, transfers, captures, CPU)",
          ", ".join(flagged[:5]))
    for name in ("summary.md", "runs.csv", "README.md", "meta.json", "headline.json"):
        p = os.path.join(d, name)
        check(os.path.exists(p) and os.path.getsize(p) > 0, "%s exists" % name)
    for name in ("cwnd.png", "share.png"):
        p = os.path.join(d, name)
        ok = os.path.exists(p) and open(p, "rb").read(8) == b"\x89PNG\r\n\x1a\n"
        check(ok, "%s is a PNG" % name)
    pc = glob.glob(os.path.join(d, "**", "*.pcap"), recursive=True)
    check(not pc, "no pcaps left behind", "%d pcaps" % len(pc))
    return 1 if failed else 0


def main():
    d = os.path.abspath(sys.argv[1])
    try:
        with open(os.path.join(d, "plan.json")) as f:
            plan = json.load(f)
        errs = check_plan(plan)
    except (OSError, ValueError) as e:
        plan, errs = None, [str(e)]
    check(not errs, "plan.json is valid", "; ".join(errs))
    if plan is None:
        return 1
    prof = plan["profile"]
    if prof.get("kind", "matrix") == "fairness":
        return check_fairness(d, plan)
    ids = [r["id"] for r in plan["runs"]]
    missing = [i for i in ids if not os.path.exists(os.path.join(d, "runs", i + ".json"))]
    check(not missing, "every run of the plan has a record (%d)" % len(ids),
          "%d missing, e.g. %s" % (len(missing), missing[:3]))
    bad, recs = [], []
    for f in sorted(glob.glob(os.path.join(d, "runs", "*.json"))):
        try:
            with open(f) as fh:
                rec = json.load(fh)
            e = validate(rec)
        except ValueError as ex:
            e = [str(ex)]
        if e:
            bad.append("%s: %s" % (os.path.basename(f), e[:2]))
        else:
            recs.append(rec)
    check(not bad, "every record matches the schema", "; ".join(bad[:3]))
    notok = [r["id"] for r in recs if not r["ok"] and not r["transfer"].get("timeout")]
    check(not notok, "every transfer completed with every byte (or hit its deadline)",
          ", ".join(notok[:5]))
    tmo = [r["id"] for r in recs if r["transfer"].get("timeout")]
    if tmo:
        print("# %d runs hit their deadline: %s" % (len(tmo), ", ".join(tmo[:5])))
    flows = sum(len(r["capture"]["server_side"]["flows"]) for r in recs)
    # connections that never got a local port (cut by the run deadline
    # before connecting) cannot be matched to a capture
    conns = sum(1 for r in recs for c in r["transfer"]["conns"] if c.get("port"))
    check(flows == conns and conns > 0,
          "the captures found every connection (%d of %d)" % (flows, conns))
    check(all(r["env"]["accel"] in ("kvm", "tcg") for r in recs),
          "records name the accelerator")
    for name in ("summary.md", "summary.csv", "runs.csv", "README.md", "meta.json",
                 "timeseries.png"):
        p = os.path.join(d, name)
        check(os.path.exists(p) and os.path.getsize(p) > 0, "%s exists" % name)
    for di in prof["directions"]:
        for c in prof["cross"]:
            p = os.path.join(d, "boxplot_%s_cross-%s.png" % (di, c))
            ok = os.path.exists(p) and open(p, "rb").read(8) == b"\x89PNG\r\n\x1a\n"
            check(ok, "box plot %s / cross %s is a PNG" % (di, c))
    probed = [r["id"] for r in recs if (r["ok"] or r["transfer"].get("timeout")) and (
        (r.get("probes") or {}).get("rtt") or {}).get("p95_ms") is not None]
    if probed:
        p = os.path.join(d, "delay.png")
        ok = os.path.exists(p) and open(p, "rb").read(8) == b"\x89PNG\r\n\x1a\n"
        check(ok, "delay.png is a PNG (%d runs with probes)" % len(probed))
    try:
        with open(os.path.join(d, "summary.csv")) as f:
            rows = list(csv.DictReader(f))
    except OSError:
        rows = []
    ncells = len({(r["config"], r["direction"], r["cross"], r["load"]) for r in plan["runs"]})
    check(len(rows) == ncells, "summary.csv has one row per cell (%d)" % ncells,
          "%d rows" % len(rows))
    try:
        md = open(os.path.join(d, "summary.md")).read()
    except OSError:
        md = ""
    check("## Headline" in md and "srvecn+proxy / bothecn" in md and prof["note"] in md,
          "summary.md has the headline ratios and the profile note")
    # records made before stalls.py have no breakdown: counted, not judged
    nsc = sum(1 for r in recs if all("stall_causes" in r["capture"][s]["totals"]
                                     for s in ("client_side", "server_side")))
    print("# %d of %d records have the stall-cause breakdown" % (nsc, len(recs)))
    check("## Stall causes" in md and (nsc == 0 or "| config | runs | `" in md
                                       or "No stalls." in md),
          "summary.md has the stall causes")
    pc = glob.glob(os.path.join(d, "**", "*.pcap"), recursive=True)
    check(not pc, "no pcaps left behind", "%d pcaps" % len(pc))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
