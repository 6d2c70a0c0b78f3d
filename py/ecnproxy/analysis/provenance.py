# SPDX-License-Identifier: GPL-2.0
"""Who made a results directory's records (issue 45): the hosts and guest
sessions named by each record's "origin" (stamped by the guest from the
host's session.json, host/shard.py), the shards, a merge's flags, and the
host's load the records carry ("host_load": the host's samples at each
run's start and end).  One Markdown line for each report's "How this was
made"."""
import json
import os


def read_meta(d):
    """D/meta.json ({} without one)."""
    try:
        with open(os.path.join(d, "meta.json")) as f:
            return json.load(f)
    except (OSError, ValueError):
        return {}


# a run was made on a busy host when other work on it (anything but the
# QEMU guests) took more than this share of the host's CPU time during the
# run: TCG guests have no steal time, so a busy host slows the guest's
# packet path and timers without the guest seeing it.  Counted in the
# report; scripts/ecnproxy redo moves such runs aside to be made again.
HOST_BUSY = 0.10


def host_busy_share(rec):
    """The share of the host's CPU time that processes other than QEMU
    took between the first and the last of a record's host samples (each
    {"cpus", "sample": [epoch, ...], "other_cpu_s"}: host/shard.py), or
    None without two samples that carry it and are apart in time.  None
    too when fewer QEMU processes ran at the end than at the start (JOBS=2:
    the other guest ended during the run): the ended QEMU's CPU time then
    counts as its parent's reaped children's, which is not other work."""
    s = [x for x in rec.get("host_load") or [] if x and x.get("other_cpu_s") is not None
         and x.get("cpus") and x.get("sample")]
    if len(s) < 2:
        return None
    (t0, o0), (t1, o1) = [(x["sample"][0], x["other_cpu_s"]) for x in (s[0], s[-1])]
    if t1 <= t0:
        return None
    q0, q1 = (x["sample"][2] if len(x["sample"]) > 2 else None for x in (s[0], s[-1]))
    if q0 is not None and q1 is not None and q1 < q0:
        return None
    return round(max(0.0, o1 - o0) / ((t1 - t0) * s[-1]["cpus"]), 4)


def host_load_per_cpu(rec):
    """The highest 1-minute load average per host CPU the run's samples
    show (None without samples)."""
    vals = [s["sample"][1] / s["cpus"] for s in rec.get("host_load") or []
            if s and s.get("cpus") and s.get("sample")]
    return round(max(vals), 3) if vals else None


def summary(recs, meta=None):
    """{"hosts": [...], "guests": N, "records": N, "without_origin": N,
    "shards": [...], "merged_from": N, "flags": [...], "load_max": x,
    "loaded": N}: the records' origin and host load, and meta.json's shards
    and merge."""
    meta = meta or {}
    hosts, guests, bare = set(), set(), 0
    for r in recs:
        o = r.get("origin")
        if o:
            hosts.add(o.get("host"))
            guests.add(o.get("session_id"))
        else:
            bare += 1
    loads = [x for x in (host_load_per_cpu(r) for r in recs) if x is not None]
    others = [x for x in (host_busy_share(r) for r in recs) if x is not None]
    merge = meta.get("merge") or {}
    return {"hosts": sorted(h for h in hosts if h), "guests": len(guests), "records": len(recs),
            "without_origin": bare, "shards": meta.get("shards") or [],
            "merged_from": len(merge.get("sources") or []), "flags": merge.get("flags") or [],
            "load_max": max(loads) if loads else None,
            "loaded": sum(1 for x in loads if x > 1.0), "with_load": len(loads),
            "other_max": max(others) if others else None,
            "busy": sum(1 for x in others if x > HOST_BUSY), "with_other": len(others)}


def line(recs, meta=None):
    """"- made by ...": one list item for "How this was made"."""
    s = summary(recs, meta)
    if not s["guests"]:
        out = "- made by: not recorded (records without an origin, made before issue 45)"
    else:
        out = "- made by %d guest session%s on %d host%s (%s)" % (
            s["guests"], "" if s["guests"] == 1 else "s", len(s["hosts"]),
            "" if len(s["hosts"]) == 1 else "s", ", ".join(s["hosts"]))
        if s["without_origin"]:
            out += ", and %d records that name none" % s["without_origin"]
    if s["shards"]:
        out += "; shards %s" % ", ".join(s["shards"])
    if s["merged_from"]:
        out += "; merged from %d directories (`scripts/ecnproxy merge`, `meta.json` " \
               "\"merge\")" % s["merged_from"]
    if s["with_load"]:
        out += "; host load average per CPU at the runs' start and end: up to %.2f%s" % (
            s["load_max"], ", above 1 in %d of %d runs (a starved host slows a TCG guest "
            "without showing in its CPU counters)" % (s["loaded"], s["with_load"])
            if s["loaded"] else "")
    if s["with_other"]:
        out += "; other work on the host took up to %.0f %% of its CPU time during a run%s" % (
            100 * s["other_max"], ", more than %.0f %% in %d of %d runs (a busy host: "
            "`scripts/ecnproxy redo` makes them again)" % (
                100 * HOST_BUSY, s["busy"], s["with_other"]) if s["busy"] else "")
    if s["flags"]:
        out += "\n- **merged despite**: " + "; ".join(s["flags"])
    return out
