# SPDX-License-Identifier: GPL-2.0
"""Report of the Multipath TCP experiment (exp-mbtest-mptcp: kind "impair",
driver "mptcp"; guest/mptcp.py writes its records): MBtest's Table 1
beside ours, the evidence per configuration, the TCP extensions under
split and coalesce.

  scripts/ecnproxy analyze RESULTS          (analysis/experiments.py hands
                                             such a directory to report())
  python3 -m ecnproxy.analysis.mptcp RESULTS... [--out FILE]
                                            one table over several results
                                            directories (6.1 and 6.12), on
                                            stdout or in FILE

MBtest's rows and citation come from mbtest_table1.json (its cells are
null where the project has no source for them: then the verdict says so
rather than compare).  Per (configuration, direction, kernel), over the
unflagged runs:

  outcome   each run's: ok (byte-exact and still MPTCP at both ends),
            fallback (byte-exact, an end fell back to TCP), reset, broken
  ours      "works" (every run ok), "works, falls back to TCP" (every run
            fallback), "resets", "breaks", or "mixed" with the counts
  paths     the median number of paths that carried at least 2 % of the
            transfer (the client's per-interface byte counts)
  goodput   the median goodput over the reference configuration's
            (control; the row's "reference" where it names one), with the
            range of the runs' ratios
  verdict   against MBtest's cell: "agrees" when its works/fallback cells
            are what every run showed, "differs" when not, "MBtest's cell
            not available" when the data file has none; a cell taken from
            a statement that covers more than its row (the split variants:
            the authors' summary has one statement on splitting) says so

The evidence table sums, over the runs, what the kernel counted (the
MPTcpExt counters that moved at either end: the names are the checks in
net/mptcp that fired) and what the captures showed on the receiver's side
of each middle node: whether the initial subflow's SYN reached the server
with MP_CAPABLE and its SYN-ACK the client with it, joining subflows
(MP_JOIN SYN-ACKs that reached the client), data segments with and
without a DSS mapping, infinite mappings, MP_TCPRST and RSTs.
"""
import json
import os
import sys

from .. import impair_plan, paths
from . import stats
from . import fairness
from .mptcp_outcome import outcome

TABLE1 = os.path.join(os.path.dirname(os.path.abspath(__file__)), "mbtest_table1.json")
OUTCOMES = ("ok", "fallback", "reset", "broken")


def table1():
    with open(TABLE1) as f:
        return json.load(f)


def derive(rec):
    """The record with its result's outcome, fallback, reset and counters
    recomputed by the guest's own rule (mptcp_outcome.outcome()) from the
    raw data it keeps (transfer summaries, MPTcpExt deltas, the client's
    last `ss -Mi` sample), so that records made before a change of that
    rule are judged by the current one (on 6.1, without TCP_IS_MPTCP, the
    ss sample is what shows a receive-path fallback).  Changes the loaded
    copy only; a record without those parts is left as it is."""
    res, st = rec.get("result"), rec.get("settings")
    tr, mc = rec.get("transfer"), rec.get("mptcp_counters")
    if not (isinstance(res, dict) and isinstance(st, dict) and isinstance(tr, dict)
            and isinstance(mc, dict) and "transfer_bytes" in st):
        return rec
    ss = ((rec.get("ss") or {}).get("last") or {}).get("mptcp")
    out, _exact, fb, reset, why = outcome(
        st, rec["params"]["direction"], tr.get("client") or {}, tr.get("server") or {},
        mc.get("client") or {}, mc.get("server") or {}, ss)
    res.update(outcome=out, fallback=int(fb), reset=int(reset), counters_fired=why)
    return rec


def current(prof, key):
    """The current profile file's KEY, else the plan's copy of it.  For the
    report's grouping and its explanations ("table1", "explain"), which are
    analysis written after the runs, not what the runs did: a current
    "table1" is taken only if every configuration it names is the plan's."""
    path = os.path.join(paths.PROFILES, impair_plan.base_name(prof) + ".json")
    try:
        with open(path) as f:
            cur = json.load(f).get(key)
    except (OSError, ValueError):
        cur = None
    if key == "table1" and isinstance(cur, list):
        if not all(isinstance(r, dict) and set(r.get("configs", [])) <= set(prof["configs"])
                   for r in cur):
            cur = None
    return cur if cur else prof.get(key, {} if key == "explain" else [])


def load(d):
    return [derive(r) for r in fairness.load(d)]


def usable(rec):
    return bool(rec.get("ok")) and not rec["fidelity"]["flags"]


def groups(recs):
    """{(config, direction, kernel): [records]} of the unflagged runs."""
    g = {}
    for r in recs:
        if usable(r):
            k = (r["params"]["config"], r["params"]["direction"], r["env"].get("kernel", "?"))
            g.setdefault(k, []).append(r)
    return g


def counts(rs):
    c = {o: 0 for o in OUTCOMES}
    for r in rs:
        c[r["result"]["outcome"]] = c.get(r["result"]["outcome"], 0) + 1
    return c


def ours(rs):
    """-> (our verdict for a cell, byte-exact in every run, fell back in
    every run) (None, None, None without runs)."""
    if not rs:
        return None, None, None
    c = counts(rs)
    n = len(rs)
    exact = all(r["result"]["byte_exact"] for r in rs)
    fb = all(r["result"]["fallback"] for r in rs)
    if c["ok"] == n:
        v = "works"
    elif c["fallback"] == n:
        v = "works, falls back to TCP"
    elif c["reset"] == n:
        v = "resets"
    elif c["broken"] == n:
        v = "breaks"
    else:
        v = "mixed (%s)" % ", ".join("%s %d" % (o, c[o]) for o in OUTCOMES if c[o])
    return v, exact, fb


def compare(paper, exact, fb):
    """Our cell against MBtest's row {"works", "fallback"} (None: the
    cell is not available)."""
    if exact is None:
        return "not run"
    pw, pf = paper.get("works"), paper.get("fallback")
    if pw is None and pf is None:
        return "MBtest's cell not available"
    same = (pw is None or pw == exact) and (pf is None or pf == fb)
    v = "agrees" if same else "differs"
    return "%s (with its statement on %s)" % (v, paper["scope"]) if paper.get("scope") else v


def goodput_ratio(rs, ref):
    """'median ratio [min, max]' of the runs' goodputs over the reference
    runs' median; '-' without both."""
    g = [r["result"]["goodput_mbps"] for r in rs if r["result"]["goodput_mbps"]]
    gr = [r["result"]["goodput_mbps"] for r in ref if r["result"]["goodput_mbps"]]
    if not g or not gr:
        return "-"
    m = stats.median(gr)
    xs = [x / m for x in g]
    if len(xs) == 1:
        return "%.2f" % xs[0]
    return "%.2f [%.2f, %.2f]" % (stats.median(xs), min(xs), max(xs))


def med_paths(rs):
    xs = [r["result"]["n_paths_with_data"] for r in rs]
    return "%g" % stats.median(xs) if xs else "-"


def fmt_outcomes(rs):
    c = counts(rs)
    return ", ".join("%s %d" % (o, c[o]) for o in OUTCOMES if c[o]) or "-"


def sides(direction):
    """-> (the receiver's side suffix of a path's captures, the data's
    direction in a connection summary, the sender's side suffix)."""
    return ("s", "c2s", "c") if direction == "upload" else ("c", "s2c", "s")


def conns(rec, cap):
    return ((rec.get("captures") or {}).get(cap) or {}).get("conns") or {}


def evidence(rec):
    """What one run's captures show (see the module's docstring)."""
    rside, ddir, sside = sides(rec["params"]["direction"])
    ack_dir = "s2c" if ddir == "c2s" else "c2s"
    e = {"syn_mpc_at_server": None, "synack_mpc_at_client": None, "joins": 0,
         "dss_map": 0, "data_no_dss": 0, "infinite": 0, "tcprst": 0, "rst": 0,
         "mp_fail": 0, "tcprst_reasons": [],
         "syn_at_server": None, "synack_at_client": None, "data": 0, "data_ts": 0,
         "ack_sack": 0}
    for c in conns(rec, "p1s").values():
        if c["syn"] is not None and not c["join"]:
            e["syn_mpc_at_server"] = "mptcp:mp_capable" in c["syn"]
            e["syn_at_server"] = c["syn"]
    for c in conns(rec, "p1c").values():
        if c["synack"] is not None and not c["join"]:
            e["synack_mpc_at_client"] = "mptcp:mp_capable" in c["synack"]
            e["synack_at_client"] = c["synack"]
    for p in ("p1", "p2"):
        for c in conns(rec, p + "c").values():
            if c["join"] and c["synack"] and "mptcp:mp_join" in c["synack"]:
                e["joins"] += 1
        for c in conns(rec, p + rside).values():
            s = c[ddir]
            for k in ("dss_map", "data_no_dss", "infinite", "data", "data_ts"):
                e[k] += s[k]
            for d in ("c2s", "s2c"):
                for k in ("tcprst", "rst", "mp_fail"):
                    e[k] += c[d][k]
            e["tcprst_reasons"] += c.get("tcprst_reasons", [])
        for c in conns(rec, p + sside).values():
            e["ack_sack"] += c[ack_dir]["ack_sack"]
    return e


def fired(rs):
    """'Name xN' of the MPTcpExt counters that moved, summed over the runs,
    per end."""
    out = []
    for end in ("client", "server"):
        tot = {}
        for r in rs:
            for k, v in (r.get("mptcp_counters") or {}).get(end, {}).items():
                tot[k] = tot.get(k, 0) + v
        out.append("%s: %s" % (end, ", ".join("%s %d" % kv for kv in sorted(tot.items()))
                               or "none"))
    return "; ".join(out)


def yes_no(xs):
    xs = [x for x in xs if x is not None]
    if not xs:
        return "-"
    n = sum(1 for x in xs if x)
    return "yes" if n == len(xs) else "no" if n == 0 else "%d of %d" % (n, len(xs))


def reference_of(prof, row, cfg):
    return (row.get("reference") or {}).get(cfg, "control")


def where(st):
    p = [n for n, k in ((1, "rules"), (2, "rules2")) if st[k]]
    p += [n for n in st["nat"] if n not in p]
    return "+".join("path %d" % n for n in sorted(p)) or "-"


def rule_text(st):
    parts = ["1: `%s`" % r for r in st["rules"]] + ["2: `%s`" % r for r in st["rules2"]]
    parts += ["%d: NAT" % n for n in st["nat"]]
    if st.get("mptcp_checksum"):
        parts.append("DSS checksum on")
    if st.get("loss_pct"):
        parts.append("%g %% loss" % st["loss_pct"])
    return "; ".join(parts) or "none"


def render(prof, planned, recs, name, rerun):
    """summary.md's lines, and the verdict counts for headline.json."""
    t1 = table1()
    paper = {r["id"]: r for r in t1["rows"]}
    upstream = {r["id"]: r for r in t1.get("upstream", {}).get("rows", [])}
    g = groups(recs)
    kernels = sorted({k for _c, _d, k in g}) or ["-"]
    dirs = [d for d in ("upload", "download") if d in prof["directions"]]
    flagged = sum(1 for r in recs if not usable(r))
    L = ["# %s: %s" % (name, prof["study"]), "", prof.get("description", ""), "",
         "Scale `%s`; kernel%s %s; %d of %d planned runs, %d flagged (not used below); "
         "generated by `scripts/ecnproxy analyze` from `runs/*.json`; rerun with `%s`." % (
             prof.get("scale", "?"), "s" if len(kernels) > 1 else "", ", ".join(
                 "`%s`" % k for k in kernels), len(recs), planned, flagged, rerun), ""]
    # the profile's note is not printed: the plan's copy is as old as the
    # run, and what it said of MBtest's cells changed (cells_from below)
    L += ["One kernel per results directory (`KVER=6.12` for 6.12); "
          "`scripts/ecnproxy mbtest-mptcp-table DIR...` puts several side by side.", ""]
    L += ["MBtest: %s; its implementation: %s.  Its rows from `%s` (%s)." % (
        t1["citation"], t1["implementation"], "py/ecnproxy/analysis/mbtest_table1.json",
        t1["source"]), ""]
    cf = t1.get("cells_from")
    if cf:
        L += ["MBtest's cells: the paper itself could not be read here; they come from its "
              "authors' summary of its main results, %s (read from %s).  It gives one statement "
              "on splitting, for every split variant, and names a corner case of splitting (the "
              "paper's Figure 4, section 3.3) that may desynchronise the hosts without saying "
              "which variant; where it does not say whether MPTCP fell back, the cell is `n/a`."
              % (cf["citation"], cf["read_from"]), ""]
    verdicts = {}
    L += ["## MBtest's Table 1 and ours", "",
          "Outcome per run: `ok` byte-exact and still MPTCP at both ends, `fallback` "
          "byte-exact over plain TCP, `reset`, `broken`.  Paths: the median number of "
          "paths that carried data.  Goodput: over the reference configuration's median "
          "(`control` unless named).", "",
          "| MBtest row | MBtest (v0.87): works / falls back | configuration | middlebox on "
          "| direction | kernel | runs | paths | goodput vs reference | ours | verdict |",
          "|---|---|---|---|---|---|---|---|---|---|---|"]
    for row in current(prof, "table1"):
        pr = paper.get(row["row"]) or upstream.get(row["row"]) or {"middlebox": row["row"]}
        src = "upstream: " + pr["ref"] if row["row"] in upstream else None
        pcell = src or "%s / %s" % tuple(
            "n/a" if pr.get(k) is None else ("yes" if pr[k] else "no")
            for k in ("works", "fallback"))
        if not src and pr.get("scope"):
            pcell += " (%s)" % pr["scope"]
        for cfg in row["configs"]:
            st = impair_plan.config_settings(prof, cfg)
            for d in dirs:
                for k in kernels:
                    rs = g.get((cfg, d, k), [])
                    ref = g.get((reference_of(prof, row, cfg), d, k), [])
                    v, exact, fb = ours(rs)
                    cmp_ = "upstream row (not in MBtest)" if src and exact is not None else \
                        compare(pr, exact, fb)
                    if v:
                        key = v.split(" (")[0]
                        verdicts[key] = verdicts.get(key, 0) + 1
                    L.append("| %s | %s | `%s` | %s | %s | %s | %s | %s | %s | %s | %s |" % (
                        pr["middlebox"], pcell, cfg, where(st), d, k, fmt_outcomes(rs),
                        med_paths(rs), goodput_ratio(rs, ref), v or "not run", cmp_))
    L += ["", "## Evidence: what fired and what the captures show", "",
          "Summed over each cell's runs.  Counters: the MPTcpExt counters that moved "
          "(each is a check in `net/mptcp/`; e.g. `MPCapableFallbackACK`: the third ACK "
          "came without MP_CAPABLE, so the server fell back; `DSSNoMatchTCP`, "
          "`DSSNotMatching`: a mapping that does not fit the subflow's data; "
          "`InfiniteMapRx`: the peer signalled a fallback; `MPRstTx`: a subflow reset). "
          "Captures (the receiver's side of each middle node): MP_CAPABLE on the initial "
          "SYN as the server got it and on the SYN-ACK as the client got it; joins: "
          "MP_JOIN SYN-ACKs that reached the client; data segments with a DSS mapping and "
          "without any MPTCP option; infinite mappings; MP_TCPRST (reasons) and RSTs.", "",
          "| configuration | direction | kernel | counters | SYN MP_CAPABLE at server "
          "| SYN-ACK MP_CAPABLE at client | joins | data with DSS / without | infinite "
          "| MP_TCPRST (reasons) / RST | why |",
          "|---|---|---|---|---|---|---|---|---|---|---|"]
    explain = current(prof, "explain")
    cfgs = ["control"] + [c for row in current(prof, "table1") for c in row["configs"]]
    for cfg in cfgs:
        for d in dirs:
            for k in kernels:
                rs = g.get((cfg, d, k), [])
                if not rs:
                    continue
                ev = [evidence(r) for r in rs]
                reasons = sorted({x for e in ev for x in e["tcprst_reasons"]})
                L.append("| `%s` | %s | %s | %s | %s | %s | %d | %d / %d | %d | %d%s / %d | %s |" % (
                    cfg, d, k, fired(rs), yes_no(e["syn_mpc_at_server"] for e in ev),
                    yes_no(e["synack_mpc_at_client"] for e in ev),
                    sum(e["joins"] for e in ev), sum(e["dss_map"] for e in ev),
                    sum(e["data_no_dss"] for e in ev), sum(e["infinite"] for e in ev),
                    sum(e["tcprst"] for e in ev),
                    " (%s)" % ", ".join(str(x) for x in reasons) if reasons else "",
                    sum(e["rst"] for e in ev), explain.get(cfg, "")))
    ext = prof.get("extensions", [])
    if ext:
        L += ["", "## TCP extensions under split and coalesce (plain TCP, path 1)", "",
              "Do SACK, timestamps and window scaling survive?  The SYN's options as the "
              "server got them and the SYN-ACK's as the client got them (captures), what "
              "the client's connection negotiated (`ss -ti` while it ran), the share of "
              "data segments that reached the receiver with a timestamp, ACKs with SACK "
              "blocks that reached the sender; goodput over the reference's.", "",
              "| configuration | middlebox | reference | direction | kernel | runs "
              "| goodput vs reference | SYN at server | SYN-ACK at client | negotiated "
              "| data with TS | ACKs with SACK |",
              "|---|---|---|---|---|---|---|---|---|---|---|---|"]
        for x in [{"config": e["reference"], "reference": e["reference"]} for e in ext[:1]] + ext:
            cfg = x["config"]
            st = impair_plan.config_settings(prof, cfg)
            for d in dirs:
                for k in kernels:
                    rs = g.get((cfg, d, k), [])
                    if not rs:
                        continue
                    ev = [evidence(r) for r in rs]
                    neg = [r["result"].get("negotiated") for r in rs]
                    negs = sorted({"sack" * bool(n["sack"]) + " ts" * bool(n["ts"]) +
                                   (" wscale %s" % n["wscale"] if n["wscale"] else "")
                                   for n in neg if n})
                    data = sum(e["data"] for e in ev)
                    L.append("| `%s` | %s | `%s` | %s | %s | %s | %s | %s | %s | %s | %s | %d |" % (
                        cfg, rule_text(st), x["reference"], d, k, fmt_outcomes(rs),
                        goodput_ratio(rs, g.get((x["reference"], d, k), [])),
                        " ".join(sorted({o for e in ev for o in (e["syn_at_server"] or [])})) or "-",
                        " ".join(sorted({o for e in ev for o in (e["synack_at_client"] or [])})) or "-",
                        "; ".join(s.strip() for s in negs) or "-",
                        "%.2f" % (sum(e["data_ts"] for e in ev) / data) if data else "-",
                        sum(e["ack_sack"] for e in ev)))
    L += ["", "## Configurations", "", "| configuration | what | MPTCP | rules (path: rule) |",
          "|---|---|---|---|"]
    for c, spec in prof["configs"].items():
        st = impair_plan.config_settings(prof, c)
        L.append("| `%s` | %s | %s | %s |" % (c, spec["doc"], "yes" if st["mptcp"] else "no",
                                             rule_text(st)))
    bad = [r for r in recs if not usable(r)]
    if bad:
        L += ["", "Flagged runs: " + ", ".join("`%s` (%s)" % (
            r["id"], ",".join(r["fidelity"]["flags"]) or "failed") for r in bad)]
    L += ["", "Raw records: `runs/*.json` (each with both ends' transfer summaries, the "
          "MPTcpExt deltas, the per-path bytes, the capture summaries, `ss` samples, the "
          "rules with their hits); one line per run in `runs.csv`."]
    return L, verdicts


CSV_COLS = ("id", "direction", "config", "rep", "kernel", "outcome", "byte_exact", "fallback",
            "reset", "goodput_mbps", "n_paths_with_data", "path1_bytes", "path2_bytes",
            "is_mptcp_client", "is_mptcp_server", "counters_fired", "error", "flags")


def csv_rows(recs):
    import csv
    import io
    f = io.StringIO()
    w = csv.writer(f, lineterminator="\n")
    w.writerow(CSV_COLS)
    for r in recs:
        x = r["result"]
        w.writerow([r["id"], r["params"]["direction"], r["params"]["config"],
                    r["params"]["rep"], r["env"].get("kernel"), x["outcome"], x["byte_exact"],
                    x["fallback"], x["reset"], x["goodput_mbps"], x["n_paths_with_data"],
                    x["path_bytes"].get("1"), x["path_bytes"].get("2"),
                    x["is_mptcp"]["client"], x["is_mptcp"]["server"],
                    " ".join(x["counters_fired"]), x["error"] or "",
                    ",".join(r["fidelity"]["flags"])])
    return f.getvalue()


def report(d):
    """summary.md, runs.csv, headline.json and README.md of one results
    directory; -> the verdict counts."""
    with open(os.path.join(d, "plan.json")) as f:
        plan = json.load(f)
    prof = plan["profile"]
    recs = load(d)
    name = os.path.basename(d)
    rerun = impair_plan.command(prof)
    ks = sorted({r["env"].get("kernel", "") for r in recs})
    if any(k.startswith("6.12") for k in ks):
        rerun += " KVER=6.12"
    L, verdicts = render(prof, len(plan["runs"]), recs, name, rerun)
    with open(os.path.join(d, "summary.md"), "w") as f:
        f.write("\n".join(L) + "\n")
    with open(os.path.join(d, "runs.csv"), "w") as f:
        f.write(csv_rows(recs))
    with open(os.path.join(d, "headline.json"), "w") as f:
        json.dump({"kind": "impair", "profile": prof["name"], "study": prof["study"],
                   "runs": len(recs), "flagged": sum(1 for r in recs if not usable(r)),
                   "verdicts": verdicts}, f, indent=1)
    with open(os.path.join(d, "README.md"), "w") as f:
        f.write("# %s\n\nMultipath TCP experiment (`make experiments`, profile `%s`, scale "
                "`%s`): %s. See `summary.md`; raw records in `runs/` (one JSON per run), "
                "the plan in `plan.json`, the guest's log in `guest.log`, each VM session "
                "in `sessions/`.\n" % (name, prof["name"], prof.get("scale", "?"),
                                       prof["study"]))
    return verdicts


def main(argv):
    out = None
    if "--out" in argv:
        i = argv.index("--out")
        out = argv[i + 1]
        argv = argv[:i] + argv[i + 2:]
    if not argv:
        sys.exit(__doc__)
    recs, planned, prof = [], 0, None
    for d in argv:
        with open(os.path.join(d, "plan.json")) as f:
            plan = json.load(f)
        prof = prof or plan["profile"]
        planned += len(plan["runs"])
        recs += load(d)
    L, _v = render(prof, planned, recs, " + ".join(os.path.basename(os.path.abspath(d))
                                                   for d in argv),
                   impair_plan.command(prof) + " (and KVER=6.12 for 6.12)")
    text = "\n".join(L) + "\n"
    if out:
        with open(out, "w") as f:
            f.write(text)
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
