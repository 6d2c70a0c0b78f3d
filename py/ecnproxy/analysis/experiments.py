# SPDX-License-Identifier: GPL-2.0
"""Report of an impairment experiment (profiles of kind "impair",
`make experiments`): summary.md with the cells, the stall causes and the
"paper said / we measured" table, goodput.png, runs.csv, headline.json.

A claim of the profile says what the paper found and how to check it on
the runs (records whose fidelity flags are empty; flagged runs are shown
and counted, never used).  Selectors pick runs by "config", "direction"
and sweep parameters; every claim is judged per direction, and per value
of the parameters in its "per" list (values in "skip" left out).  Checks:

  ratio   metric of "num" over metric of "den": Hodges-Lehmann estimate
          on logs with its exact interval (stats.hl_ratio); "plus" is
          added to every value first (counts that can be 0)
  diff    metric of "a" minus metric of "b": Hodges-Lehmann shift and its
          exact interval (hl_shift)
  bound   metric of "sel" over window_bytes * 8 / RTT (RTT: the run's
          median sender RTT, iperf3): the share of the rwnd/RTT cap a run
          reached; judged per run (every run, min and max); sweep points
          whose cap is above the bottleneck rate are skipped
  value   metric of "sel", judged per run (every run inside, min and max)
  none    reported, not checked (what the testbed cannot do)

Verdict against the claim's [min, max]: "reproduced" when the interval
(or every run) lies inside, "not reproduced" when it lies wholly outside,
else "inconclusive"; an interval whose coverage is below FIRM gets a "?"
(too few runs to decide at 90 %), decided on the estimate.
"""
import json
import os

import numpy as np
import pandas as pd

from .. import impair_plan
from ..paths import PROFILES
from . import stats
from .provenance import line as provenance_line, read_meta
from .fairness import load  # the run records of a results directory

FIRM = 0.9
OUTCOMES = ("survived", "broken", "degraded")
CONF = stats.CONF
METRICS = ("goodput_mbps", "retrans_segs", "rto", "spurious_rto", "dsack_recv",
           "sack_discard", "loss_undo", "reorder_seen", "stalled_intervals",
           "sender_rtt_ms_median", "connect_s", "transaction_s", "ecn_negotiated", "ce_seen",
           "ece_seen", "cwr_seen", "stalls", "stall_time", "transit_c2s_p50_us",
           "transit_s2c_p50_us", "survived", "broken", "degraded", "wake_s",
           "ecn_to_n_segs", "picked_up")
EXTRA = (("stalled_intervals", "idle 200 ms"), ("sender_rtt_ms_median", "RTT ms"),
         ("transaction_s", "transaction s"), ("transit_c2s_p50_us", "transit c2s us"),
         ("transit_s2c_p50_us", "transit s2c us"), ("survived", "survived"),
         ("broken", "broken"), ("degraded", "degraded"), ("wake_s", "wake-up s"),
         ("ecn_to_n_segs", "ECN to N"), ("picked_up", "picked up"))


def run_row(rec):
    p = rec["params"]
    row = {"id": rec["id"], "direction": p["direction"], "config": p["config"],
           "rep": p["rep"], "ok": bool(rec["ok"]) and not rec["fidelity"]["flags"],
           "flags": ",".join(rec["fidelity"]["flags"])}
    row.update({k: v for k, v in p["point"].items()})
    res = rec["result"]
    for k in METRICS:
        v = res.get(k)
        row[k] = float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) \
            else (float(v) if isinstance(v, bool) else np.nan)
    # receivers' intervals only: a sender's count what its socket took
    row["peak_mbps"] = peak_mbps(rec.get("receiver_series") or [])
    red = res.get("red") or {}
    for k in ("marked", "early", "pdrop"):
        row["red_" + k] = red.get(k)
    return row


def peak_mbps(series, span=2.0):
    """The highest rate kept for `span` seconds: the most bytes in
    consecutive iperf3 intervals (the receiver's) covering at least span,
    over their length (Mbit/s); nan without intervals."""
    best = float("nan")
    t = [0.0] + [s[0] for s in series]
    for i in range(len(series)):
        tot = 0
        for j in range(i, len(series)):
            tot += series[j][1] or 0
            dt = t[j + 1] - t[i]
            if dt >= span - 1e-6:
                r = tot * 8 / dt / 1e6
                best = r if best != best else max(best, r)
                break
    return best


def hl_shift(a, b, conf=CONF):
    """-> (shift, low, high, coverage): Hodges-Lehmann estimate of a - b
    and its exact (Mann-Whitney) interval."""
    a = np.asarray(list(a), float)
    b = np.asarray(list(b), float)
    nan = float("nan")
    if a.size == 0 or b.size == 0:
        return nan, nan, nan, 0.0
    k, cov = stats.hl_level(a.size, b.size, conf)
    d = np.sort((a[:, None] - b[None, :]).ravel())
    return float(np.median(d)), float(d[k - 1]), float(d[d.size - k]), cov


def select(df, sel, direction):
    m = df["direction"] == direction
    for k, v in sel.items():
        if k not in df.columns:
            return df.iloc[0:0]
        m &= df[k] == v
    return df[m]


def verdict(lo, hi, cov, est, bounds, firm=True):
    mn, mx = bounds
    inside = lambda x: (mn is None or x >= mn) and (mx is None or x <= mx)  # noqa: E731
    if any(x != x for x in (lo, hi, est)):
        return "no data"
    if mn is None and mx is None:
        return "measured"
    if not firm or cov < FIRM:
        return ("reproduced?" if inside(est) else "not reproduced?")
    if inside(lo) and inside(hi):
        return "reproduced"
    if (mx is not None and lo > mx) or (mn is not None and hi < mn):
        return "not reproduced"
    return "inconclusive"


def _per_values(df, chk, direction):
    per = chk.get("per", [])
    if not per:
        return [{}]
    base = df[df["direction"] == direction]
    vals = []
    for _, r in base[per].drop_duplicates().iterrows():
        pt = {k: r[k] for k in per}
        if any(pt[k] in chk.get("skip", {}).get(k, []) for k in per):
            continue
        if any(v != v for v in pt.values()):
            continue
        vals.append(pt)
    return sorted(vals, key=lambda p: [p[k] for k in per])


def evaluate(claim, df, directions, rate_mbps=None):
    """-> [row]: one per direction and "per" point: {"id", "direction",
    "point", "measured" (text), "estimate", "low", "high", "coverage",
    "n", "verdict"}."""
    chk = claim["check"]
    typ = chk["type"]
    bounds = (chk.get("min"), chk.get("max"))
    rows = []
    if typ == "none":
        return [{"id": claim["id"], "direction": "-", "point": {}, "measured": "-",
                 "verdict": "not measured", "n": ""}]
    metric = chk["metric"]
    for d in chk.get("directions", directions):
        for pt in _per_values(df, chk, d):
            row = {"id": claim["id"], "direction": d, "point": pt}
            if typ in ("ratio", "diff"):
                na, nb = ("num", "den") if typ == "ratio" else ("a", "b")
                xa = select(df, dict(chk[na], **pt), d)[metric].dropna() + chk.get("plus", 0)
                xb = select(df, dict(chk[nb], **pt), d)[metric].dropna() + chk.get("plus", 0)
                if typ == "ratio":
                    est, lo, hi, cov = stats.hl_ratio(xa, xb, CONF)
                else:
                    est, lo, hi, cov = hl_shift(xa, xb, CONF)
                row.update(estimate=est, low=lo, high=hi, coverage=cov,
                           n="%d/%d" % (len(xa), len(xb)),
                           measured=("%.3g [%.3g, %.3g] (%d %%)" % (est, lo, hi, round(cov * 100))
                                     if est == est else "-"),
                           verdict=verdict(lo, hi, cov, est, bounds))
            elif typ in ("value", "bound"):
                g = select(df, dict(chk["sel"], **pt), d)
                x = g[metric].astype(float)
                if typ == "bound":
                    rtt = g[chk.get("rtt", "sender_rtt_ms_median")].astype(float) / 1000.0
                    cap = chk["window_bytes"] * 8 / rtt / 1e6
                    if rate_mbps and len(cap.dropna()) and cap.median() > rate_mbps:
                        continue
                    x = x / cap
                x = x.dropna()
                if not len(x):
                    row.update(measured="-", verdict="no data", n=0)
                else:
                    med = stats.median(list(x))
                    lo, hi = float(x.min()), float(x.max())
                    v = verdict(lo, hi, 1.0, med, bounds)
                    if len(x) < 2 and v in ("reproduced", "not reproduced"):
                        v += "?"
                    row.update(estimate=med, low=lo, high=hi, coverage=None, n=str(len(x)),
                               measured="%.3g [%.3g, %.3g] (all runs)" % (med, lo, hi),
                               verdict=v)
            else:
                raise ValueError("claim %s: unknown check type %r" % (claim["id"], typ))
            rows.append(row)
    return rows


def fmt_bounds(chk):
    mn, mx = chk.get("min"), chk.get("max")
    if chk["type"] == "none":
        return "-"
    if mn is not None and mx is not None:
        return "in [%g, %g]" % (mn, mx)
    if mn is not None:
        return ">= %g" % mn
    if mx is not None:
        return "<= %g" % mx
    return "(reported)"


def cell_count(g, k):
    """A 0/1 metric (a survival outcome): how many runs had it."""
    x = [v for v in g[k] if v == v]
    return "%d of %d" % (sum(x), len(x)) if x else "-"


def cell_summary(g, k):
    x = [v for v in g[k] if v == v]
    if not x:
        return "-"
    med = stats.median(x)
    if len(x) == 1:
        return "%.3g" % med
    return "%.3g [%.3g-%.3g]" % (med, min(x), max(x))


def goodput_plot(df, prof, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    sweep = [k for k in impair_plan.SWEEP_PARAMS if k in df.columns]
    dirs = list(dict.fromkeys(df["direction"]))
    fig, axes = plt.subplots(1, len(dirs), figsize=(6.5 * len(dirs), 4.2), squeeze=False)
    ok = df[df["ok"]]
    for ax, d in zip(axes[0], dirs):
        dd = ok[ok["direction"] == d]
        if sweep:
            x = sweep[0]
            for cfg, g in dd.groupby("config", sort=False):
                gg = g.groupby(x)["goodput_mbps"]
                med = gg.median()
                ax.errorbar(med.index, med.values,
                            yerr=[med.values - gg.min().values, gg.max().values - med.values],
                            marker="o", capsize=3, label=cfg)
            ax.set_xlabel(x)
        else:
            cfgs = list(dict.fromkeys(dd["config"]))
            meds = [dd[dd["config"] == c]["goodput_mbps"].median() for c in cfgs]
            ax.bar(range(len(cfgs)), meds)
            for i, c in enumerate(cfgs):
                ys = dd[dd["config"] == c]["goodput_mbps"]
                ax.plot([i] * len(ys), ys, "k.", ms=4)
            ax.set_xticks(range(len(cfgs)))
            ax.set_xticklabels(cfgs, rotation=30, ha="right", fontsize=8)
        ax.set_ylabel("goodput, Mbit/s")
        ax.set_title("%s: %s" % (prof["name"], d))
        ax.grid(alpha=0.3)
        if sweep:
            ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def survival_plot(df, prof, path):
    """Survival runs: how many runs of each configuration and silence
    survived, broke or survived degraded (stacked bars)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    ok = df[df["ok"]]
    keys = ["config"] + [k for k in impair_plan.SWEEP_PARAMS if k in ok.columns]
    groups = list(ok.groupby(keys, sort=False))
    fig, ax = plt.subplots(figsize=(max(6.5, 0.55 * len(groups)), 4.2))
    bottom = np.zeros(len(groups))
    for k, colour in (("survived", "tab:green"), ("degraded", "tab:orange"),
                      ("broken", "tab:red")):
        n = np.array([g[k].fillna(0).sum() for _, g in groups])
        ax.bar(range(len(groups)), n, bottom=bottom, color=colour, label=k)
        bottom += n
    ax.set_xticks(range(len(groups)))
    ax.set_xticklabels(["%s\n%s" % (key[0], ", ".join("%s=%g" % kv for kv in zip(
        keys[1:], key[1:]))) for key, _ in groups], rotation=30, ha="right", fontsize=7)
    ax.set_ylabel("runs")
    ax.set_title("%s: connection survival" % prof["name"])
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def causes_rows(recs):
    """{(direction, config): {cause: [count, time]}} over the ok runs."""
    out = {}
    for r in recs:
        if not r["ok"] or r["fidelity"]["flags"]:
            continue
        key = (r["params"]["direction"], r["params"]["config"])
        acc = out.setdefault(key, {})
        for c, v in (r["result"].get("stall_causes") or {}).items():
            a = acc.setdefault(c, [0, 0.0])
            a[0] += v["count"]
            a[1] += v["time"]
    return out


def design(prof):
    """What a run did: every configuration's settings (its text aside),
    the defaults, the sweep and the topology settings."""
    return ({c: {k: v for k, v in spec.items() if k != "doc"}
             for c, spec in prof["configs"].items()},
            prof.get("defaults", {}), prof.get("sweep", {}), prof.get("tb", {}))


def current_profile(prof):
    """The claims of the profile file as it is now (scripts/profiles/NAME.json
    at the plan's scale) when its design (design(): the configurations'
    settings, the defaults, the sweep, the topology) is still the plan's, else the plan's: claims and their explanations are
    analysis, refined after a run, and the report is regenerated from the
    raw records with them, and with its note.  -> (profile, where it came
    from)."""
    base = impair_plan.base_name(prof)
    path = os.path.join(PROFILES, base + ".json")
    try:
        with open(path) as f:
            cur = impair_plan.scaled(json.load(f), prof.get("scale", "quick"))
    except (OSError, ValueError, KeyError):
        return prof, "plan.json"
    # the same design (configurations, sweep): the profile's claims apply
    if design(cur) == design(prof):
        return cur, "scripts/profiles/%s.json" % base
    return prof, "plan.json (the profile's design has changed since)"


def report(d):
    with open(os.path.join(d, "plan.json")) as f:
        plan = json.load(f)
    prof = plan["profile"]
    if prof.get("driver") == "mptcp":  # exp-mbtest-mptcp: its own report
        from . import mptcp
        return mptcp.report(d)
    cur, claims_from = current_profile(prof)
    claims = cur["claims"]
    recs = load(d)
    df = pd.DataFrame([run_row(r) for r in recs])
    if len(df):
        df.to_csv(os.path.join(d, "runs.csv"), index=False)
    rate = None
    rl = prof.get("tb", {}).get("TB_RATE_LOW", "10mbit")
    if rl.endswith("mbit"):
        rate = float(rl[:-4])
    name = os.path.basename(d)
    L = ["# %s: %s" % (name, prof["study"]), "", prof.get("description", ""), "",
         "Scale `%s`: %d of %d planned runs, %d flagged (not used below); "
         "%s s per run; generated by `scripts/ecnproxy analyze results/%s` from "
         "`runs/*.json`; rerun with `%s`." % (
             prof["scale"], len(recs), len(plan["runs"]),
             int(sum(1 for r in recs if r["fidelity"]["flags"] or not r["ok"])),
             prof["duration_s"], name, impair_plan.command(prof)), "",
         provenance_line(recs, read_meta(d)), ""]
    if cur.get("note"):
        L += [cur["note"], ""]
    L += ["## Configurations", "", "| configuration | what | rules | ends (client/server) "
          "| RED |", "|---|---|---|---|---|"]
    for c, spec in prof["configs"].items():
        st = impair_plan.config_settings(prof, c)
        ends = "/".join(",".join("%s=%s" % kv for kv in st[h].items()) for h in ("client", "server"))
        L.append("| `%s` | %s | %s | %s | %s |" % (
            c, spec["doc"], "; ".join("`%s`" % r for r in st["rules"]) or "none", ends,
            "ECN marking" if st["red_ecn"] else "drop"))
    sweep = [k for k in impair_plan.SWEEP_PARAMS if len(df) and k in df.columns]
    L += ["", "Loss (`loss_pct`) is an impairment rule dropping the data sender's "
          "segments after each flow's first 20; reordering (`reorder_pct`) is netem on "
          "the proxy's egress toward the receiver (that share goes at once, the rest "
          "waits %s ms); jitter (`jitter_ms`, J) is netem on that link instead, a delay "
          "of J ms with J ms of jitter (packets overtake each other); delay "
          "(`delay_ms`) is netem on the server's link. "
          "Bottleneck: %s RED." % (
              impair_plan.config_settings(prof, next(iter(prof["configs"])))["reorder_delay_ms"],
              rl), ""]
    verdicts = {}
    if len(df):
        extra = [(k, t) for k, t in EXTRA if k in df.columns and df[k].notna().any()]
        L += ["## Cells", "",
              "Median [min-max] over the unflagged runs. goodput: iperf3's receiver; "
              "peak: the highest rate delivered over 2 s (the receiver's iperf3 "
              "intervals; `-` in runs recorded without them); "
              "retrans, RTO, SACK discarded: the sender's TCP counters; set-up and "
              "transaction: the median connect time and request-to-last-byte time of the "
              "set-up probe's 1000-byte transactions before the flow, each on a new "
              "connection; transit: a packet's median time across the proxy node "
              "(client to server side, c2s, or back); ECN: the flow "
              "negotiated ECN (capture); CE: CE-marked data segments reaching the "
              "receiver's side of the proxy; stalls: the sender side's capture "
              "(pcapflow: gaps between deliveries, so a stall still open when iperf3 "
              "stopped is not among them); idle 200 ms: iperf3's 200 ms intervals in "
              "which the sender sent nothing (such a tail stall shows there). "
              "Survival runs (`idle_s`): how many runs survived the silence, broke, or "
              "survived degraded; wake-up s: the time of the exchange after it; ECN to N: "
              "segments of the ECN end's data that reached the non-ECN end ECT or CE "
              "after it (a proxied connection); picked up: the proxy's flows_picked_up.", "",
              "| direction | configuration | %sn | goodput Mbit/s | peak Mbit/s | retrans | RTO | SACK "
              "discarded | undo | set-up s | %sECN | CE | stalls | stall s | flagged |" % (
                  "".join("%s | " % k for k in sweep), "".join("%s | " % t for _, t in extra)),
              "|---|---|%s---|---|---|---|---|---|---|---|---|---|---|---|---|" % (
                  "---|" * (len(sweep) + len(extra)))]
        keys = ["direction", "config"] + sweep
        for key, g in df.groupby(keys, sort=False):
            ok = g[g["ok"]]
            key = key if isinstance(key, tuple) else (key,)
            L.append("| " + " | ".join(str(k) for k in key) + " | %d | %s | %s | %s | %s | %s "
                     "| %s | %s | %s | %s | %s | %s | %d |" % (
                         len(ok), cell_summary(ok, "goodput_mbps"), cell_summary(ok, "peak_mbps"),
                         cell_summary(ok, "retrans_segs"), cell_summary(ok, "rto"),
                         cell_summary(ok, "sack_discard"), cell_summary(ok, "loss_undo"),
                         cell_summary(ok, "connect_s") + "".join(
                             " | " + (cell_count(ok, k) if k in OUTCOMES else
                                      cell_summary(ok, k)) for k, _ in extra),
                         cell_summary(ok, "ecn_negotiated"),
                         cell_summary(ok, "ce_seen"), cell_summary(ok, "stalls"),
                         cell_summary(ok, "stall_time"), len(g) - len(ok)))
        if df["goodput_mbps"].notna().any() or "survived" not in df.columns:
            L += ["", "![goodput](goodput.png)", ""]
            goodput_plot(df, prof, os.path.join(d, "goodput.png"))
        else:
            L += ["", "![outcomes](survival.png)", ""]
            survival_plot(df, prof, os.path.join(d, "survival.png"))

        L += ["## Paper said / we measured", "",
              "Estimates with their exact %d %% intervals and the intervals' coverage "
              "(Hodges-Lehmann on %s runs per cell; a verdict with `?` rests on an "
              "interval covering less than %d %%: too few runs to decide). `bound`: the "
              "share of the rwnd/RTT cap reached, per run. Claims from `%s`." % (
                  CONF * 100, prof["reps"], FIRM * 100, claims_from), "",
              "| claim | paper said | source | check | direction | point | n | we measured "
              "| verdict |", "|---|---|---|---|---|---|---|---|---|"]
        dirs = list(dict.fromkeys(df["direction"]))
        okdf = df[df["ok"]]
        for cl in claims:
            chk = cl["check"]
            what = chk["type"] if chk["type"] == "none" else "%s %s %s" % (
                chk["type"], chk["metric"], fmt_bounds(chk))
            for row in evaluate(cl, okdf, dirs, rate):
                verdicts[row["verdict"]] = verdicts.get(row["verdict"], 0) + 1
                L.append("| %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
                    cl["id"], cl["paper"], cl["source"], what, row["direction"],
                    ", ".join("%s=%g" % kv for kv in row["point"].items()) or "-",
                    row.get("n", ""), row["measured"], row["verdict"]))
            if cl.get("explain"):
                L.append("| | *%s* | | | | | | | |" % cl["explain"])
        causes = causes_rows(recs)
        allc = sorted({c for v in causes.values() for c in v})
        if allc:
            L += ["", "## Stall causes (sender side, summed over the unflagged runs)", "",
                  "count / seconds per cause (`py/ecnproxy/analysis/stalls.py`, after TAPO).", "",
                  "| direction | configuration | " + " | ".join(allc) + " |",
                  "|---|---|" + "---|" * len(allc)]
            for (dd, c), v in causes.items():
                L.append("| %s | %s | " % (dd, c) + " | ".join(
                    "%d / %.1f" % tuple(v[x]) if x in v else "-" for x in allc) + " |")
        else:
            L += ["", "No stalls in the unflagged runs.", ""]
        flagged = df[~df["ok"]]
        if len(flagged):
            L += ["", "Flagged runs: " + ", ".join("`%s` (%s)" % (r["id"], r["flags"] or "failed")
                                                    for _, r in flagged.iterrows()), ""]
    with open(os.path.join(d, "summary.md"), "w") as f:
        f.write("\n".join(L) + "\n")
    with open(os.path.join(d, "headline.json"), "w") as f:
        json.dump({"kind": "impair", "profile": prof["name"], "study": prof["study"],
                   "runs": len(recs),
                   "flagged": int(sum(1 for r in recs if r["fidelity"]["flags"] or not r["ok"])),
                   "verdicts": verdicts}, f, indent=1)
    with open(os.path.join(d, "README.md"), "w") as f:
        f.write("# %s\n\nImpairment experiment (`make experiments`, profile `%s`, scale `%s`): "
                "%s. See `summary.md`; raw records in `runs/` (one JSON per run), the plan "
                "in `plan.json`, the guest's log in `guest.log`, each VM session in "
                "`sessions/`.\n" % (name, prof["name"], prof["scale"], prof["study"]))
    return verdicts


