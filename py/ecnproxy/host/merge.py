# SPDX-License-Identifier: GPL-2.0
"""Merge results directories of one plan (shards: SHARD=i/N, issue 45).

  scripts/ecnproxy merge [--force] [--no-analyze] DEST SRC...

Copies every record SRC/runs/ID.json into DEST/runs/ (DEST is made from
the first SRC's plan.json when it does not exist; a record DEST has is
kept), each SRC's sessions/NN/ to the next free DEST/sessions/MM/ (by
session id: a session copied before is not copied again) with its
meta.json entry, and appends SRC/guest.log to DEST/guest.log.  Then, if
every run of the plan has a record, runs the analysis (scripts/ecnproxy
analyze DEST).

It first checks that every record came from the same plan, profile, code
and module build, and refuses (copies nothing, exit 1) when
  - a SRC's plan.json differs from DEST's (profile, seed, feedback, runs),
  - a record names another profile or seed, or its origin another plan,
  - the records were made from different code (git commit, or a different
    digest of the uncommitted changes under kmod/, vm-testbed/, scripts/,
    py/), or from modules of different sources (srcversion, vermagic),
  - two directories hold different records of one run.
--force merges anyway and writes each of these into DEST/meta.json
("merge": "flags"), which the report prints.  Flagged, not refused: a
module's binary differing where its sources do not (a build in another
directory), records without an origin (made before issue 45).

Exit 0 when DEST is complete and analysed, 1 when refused, incomplete
(it says how many runs are missing) or the analysis failed.
"""
import argparse
import datetime
import glob
import json
import os
import shutil
import subprocess
import sys

from ..analysis.provenance import read_meta
from ..analysis.schema import check_plan
from ..paths import python_env
from . import shard as shard_mod


def read(path):
    with open(path) as f:
        return json.load(f)


def records(d):
    """{id: (path, bytes)} of D/runs/*.json."""
    out = {}
    for p in sorted(glob.glob(os.path.join(d, "runs", "*.json"))):
        with open(p, "rb") as f:
            out[os.path.basename(p)[:-5]] = (p, f.read())
    return out


def audit(plan, dirs):
    """(refusals, flags, merged {id: (path, bytes)}, hosts, guests) of the
    records of DIRS (DEST first) against PLAN."""
    refuse, flags = [], []
    digest = shard_mod.plan_digest(plan)
    ids = {r["id"] for r in plan["runs"]}
    prof = plan["profile"]["name"]
    merged, codes, srcs, bins, bare = {}, {}, {}, {}, []
    hosts, guests = set(), set()
    for d in dirs:
        for rid, (path, data) in records(d).items():
            if rid in merged:
                if merged[rid][1] != data:
                    refuse.append("two different records of run %s (%s, %s)" % (
                        rid, merged[rid][0], path))
                continue
            merged[rid] = (path, data)
            try:
                rec = json.loads(data)
            except ValueError as e:
                refuse.append("%s: %s" % (path, e))
                continue
            if rid not in ids or rec.get("id") != rid:
                refuse.append("%s: run %s is not in the plan" % (path, rec.get("id")))
            if rec.get("profile") != prof or rec.get("seed") != plan["seed"]:
                refuse.append("%s: profile %s seed %s, the plan's are %s seed %s" % (
                    path, rec.get("profile"), rec.get("seed"), prof, plan["seed"]))
            o = rec.get("origin")
            if not o:
                bare.append(rid)
                continue
            hosts.add(o.get("host"))
            guests.add(o.get("session_id"))
            if o.get("plan_sha256") != digest:
                refuse.append("%s: made from another plan (origin.plan_sha256)" % path)
            code = "%s%s" % (o.get("git_commit"), " + changes %s" % o["git_dirty_sha256"][:12]
                             if o.get("git_dirty_sha256") else "")
            codes.setdefault(code, []).append(rid)
            for m, mi in sorted((o.get("modules") or {}).items()):
                if mi:
                    srcs.setdefault(m, {}).setdefault(
                        "%s %s" % (mi.get("srcversion"), mi.get("vermagic")), []).append(rid)
                    bins.setdefault(m, {}).setdefault(mi["sha256"], []).append(rid)
    if len(codes) > 1:
        refuse.append("the records were made from %d versions of the code: %s" % (
            len(codes), "; ".join("%s (%d runs)" % (c, len(r)) for c, r in codes.items())))
    for m, v in sorted(srcs.items()):
        if len(v) > 1:
            refuse.append("%s.ko was built from %d sources: %s" % (m, len(v), "; ".join(
                "srcversion/vermagic %s (%d runs)" % (k, len(r)) for k, r in v.items())))
        elif len(bins[m]) > 1:
            flags.append("%s.ko: %d binaries of the same sources (built in other "
                         "directories)" % (m, len(bins[m])))
    if bare:
        flags.append("%d records name no origin (made before issue 45), e.g. %s" % (
            len(bare), bare[0]))
    return refuse, flags, merged, hosts, guests


def copy_sessions(src, dest, meta, smeta):
    """SRC's sessions/NN/ and their meta.json entries into DEST as the
    next numbers; one copied before (same id) is skipped."""
    have = {s.get("id") for s in meta["sessions"] if s.get("id")}
    nums = [int(x) for x in os.listdir(os.path.join(dest, "sessions")) if x.isdigit()]
    nxt = max(nums + [s.get("n", 0) for s in meta["sessions"]], default=0) + 1
    by_n = {s.get("n"): s for s in smeta.get("sessions", [])}
    for sd in sorted(glob.glob(os.path.join(src, "sessions", "*"))):
        if not os.path.basename(sd).isdigit():
            continue
        n = int(os.path.basename(sd))
        try:
            sess = read(os.path.join(sd, "session.json"))
        except (OSError, ValueError):
            sess = {}
        sess = dict(by_n.get(n, {}), **sess)
        if sess.get("id") in have and sess.get("id"):
            continue
        sess.update(n=nxt, source_dir=os.path.abspath(src), source_n=n)
        out = os.path.join(dest, "sessions", "%02d" % nxt)
        shutil.copytree(sd, out)
        with open(os.path.join(out, "session.json"), "w") as f:
            json.dump(sess, f, indent=1)
        meta["sessions"].append(sess)
        nxt += 1


def main(argv=None):
    ap = argparse.ArgumentParser(prog="scripts/ecnproxy merge",
                                 description=__doc__.split("\n\n")[0])
    ap.add_argument("--force", action="store_true", help="merge despite the refusals, flagged")
    ap.add_argument("--no-analyze", action="store_true", help="do not run the analysis")
    ap.add_argument("dest")
    ap.add_argument("src", nargs="+")
    a = ap.parse_args(argv)
    dest = os.path.abspath(a.dest)
    srcs = [os.path.abspath(s) for s in a.src if os.path.abspath(s) != dest]
    for s in srcs:
        if not os.path.exists(os.path.join(s, "plan.json")):
            print("merge: %s has no plan.json" % s, file=sys.stderr)
            return 1
    ref = os.path.join(dest if os.path.exists(os.path.join(dest, "plan.json")) else srcs[0],
                       "plan.json")
    plan = read(ref)
    errs = check_plan(plan)
    if errs:
        print("merge: %s: %s" % (ref, "; ".join(errs)), file=sys.stderr)
        return 1
    refuse = ["%s/plan.json differs from %s (another profile, seed, feedback mode or plan)"
              % (s, ref) for s in srcs if read(os.path.join(s, "plan.json")) != plan]
    dirs = ([dest] if os.path.isdir(dest) else []) + srcs
    r2, flags, merged, hosts, guests = audit(plan, dirs)
    refuse += r2
    if refuse and not a.force:
        for r in refuse:
            print("merge: refused: %s" % r, file=sys.stderr)
        print("merge: nothing copied (--force merges anyway and records these in "
              "meta.json)", file=sys.stderr)
        return 1
    os.makedirs(os.path.join(dest, "runs"), exist_ok=True)
    os.makedirs(os.path.join(dest, "sessions"), exist_ok=True)
    if not os.path.exists(os.path.join(dest, "plan.json")):
        shutil.copyfile(ref, os.path.join(dest, "plan.json"))
    meta = read_meta(dest)
    meta.setdefault("sessions", [])
    mg = meta.setdefault("merge", {"sources": []})
    new = 0
    for rid, (path, data) in merged.items():
        out = os.path.join(dest, "runs", rid + ".json")
        if not os.path.exists(out):
            with open(out + ".tmp", "wb") as f:
                f.write(data)
            os.replace(out + ".tmp", out)
            new += 1
    for s in srcs:
        smeta = read_meta(s)
        for k in ("command", "profile", "seed", "feedback"):
            if k in smeta:
                meta.setdefault(k, smeta[k])
        if smeta.get("created") and smeta["created"] < meta.get("created", "~"):
            meta["created"] = smeta["created"]
        for sh in smeta.get("shards", []):
            if sh not in meta.setdefault("shards", []):
                meta["shards"].append(sh)
        copy_sessions(s, dest, meta, smeta)
        if s not in mg["sources"]:
            mg["sources"].append(s)
            if os.path.exists(os.path.join(s, "guest.log")):
                with open(os.path.join(s, "guest.log")) as f, \
                        open(os.path.join(dest, "guest.log"), "a") as g:
                    g.write("# merged from %s\n%s" % (s, f.read()))
    meta["shards"] = sorted(set(meta.get("shards", [])),
                            key=lambda x: tuple(int(v) for v in x.split("/")[::-1]))
    mg.update(time=datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
              hosts=sorted(h for h in hosts if h), guest_sessions=len(guests),
              flags=sorted(set(mg.get("flags", []) + flags + refuse)))
    with open(os.path.join(dest, "meta.json"), "w") as f:
        json.dump(meta, f, indent=1)
    missing = [r["id"] for r in plan["runs"]
               if not os.path.exists(os.path.join(dest, "runs", r["id"] + ".json"))]
    print("merge: %d records copied into %s (%d of %d runs; %d guest sessions on %d hosts)%s"
          % (new, dest, len(plan["runs"]) - len(missing), len(plan["runs"]), len(guests),
             len(hosts), "".join("\nmerge: flagged: " + f for f in flags + refuse)))
    if missing:
        print("merge: %d runs are missing, e.g. %s: run their shards again (they resume), "
              "then merge again" % (len(missing), missing[0]), file=sys.stderr)
        return 1
    if a.no_analyze:
        return 0
    rc = subprocess.run([sys.executable, "-m", "ecnproxy", "analyze", dest],
                        env=python_env()).returncode
    return 1 if rc else 0


if __name__ == "__main__":
    sys.exit(main())
