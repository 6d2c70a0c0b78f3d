# SPDX-License-Identifier: GPL-2.0
"""Tables and figures of one matrix results directory (scripts only).

report(RESULTS) reads plan.json, meta.json and runs/*.json and writes
runs.csv (one row per run), summary.csv (one row per cell), ratios.csv (one
row per ratio of two configurations), summary.md,
boxplot_DIRECTION_cross-on|off.png, timeseries.png, delay.png (records with
probes only), headline.json and README.md.  Returns the headline ratios,
{name: (ratio, low, high)}.

Ratios of two configurations in one cell are Hodges-Lehmann ratios with
their exact distribution-free interval, across the loads of one direction
x cross setting the geometric mean of the per-load ratios
(stats.hl_ratio, stats.gm_ratio); an interval that cannot reach 95 % is
printed with the level it has.
"""
import glob
import warnings
import json
import math
import os

import matplotlib
matplotlib.use("Agg")
warnings.filterwarnings("ignore", message="Mean of empty slice")
warnings.filterwarnings("ignore", message="invalid value encountered")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402

from . import stats  # noqa: E402
from .schema import CONFIG_ORDER, QUICKACK, validate  # noqa: E402
from .stalls import CAUSES  # noqa: E402

METRICS = ("ce", "ece", "cwr", "ect_share", "retrans", "fast_retrans", "dupacks",
           "stalls", "stall_time")
PROXY_KEYS = ("congestion_events", "segs_dropped", "segs_ect_set", "segs_ce_cleared",
              "segs_ece_set", "segs_cwr_set", "flows_proxied_ecn_responder",
              "flows_proxied_ecn_initiator", "flows_fallback", "syn_fallbacks",
              "fallback_cache_hits", "flows_seen")
COLORS = {"noecn": "#bbbbbb", "noecn+proxy": "#777777", "srvecn": "#f4a582",
          "srvecn+proxy": "#d6604d", "bothecn": "#92c5de", "bothecn+proxy": "#2166ac",
          "srvecn+proxy+quickack": "#b2182b"}
HEADLINE = (("srvecn+proxy", "bothecn"), ("srvecn+proxy", "noecn"))
# what end-to-end ECN itself gains over no ECN on the testbed: the value of
# srvecn+proxy / noecn when the proxy is exactly as good as ECN
REFERENCE = ("bothecn", "noecn")
# the quick-ACK client (PROFILE=ackclock): against end-to-end ECN, and what
# the delayed ACKs of a non-ECN client cost the proxied flow; only in
# directories that have the configuration
QUICKACK_PAIRS = (("srvecn+proxy+quickack", "bothecn"),
                  ("srvecn+proxy", "srvecn+proxy+quickack"))
# A/A: the proxy enabled where it has nothing to do; the ratio should be 1
AA = (("noecn+proxy", "noecn"), ("bothecn+proxy", "bothecn"))
AA_BAND = (0.97, 1.03)
# the proxy's queueing delay against end-to-end ECN: goal within 10 %
DELAY_PAIR = ("srvecn+proxy", "bothecn")
DELAY_BAND = (0.90, 1.10)
UDP_PAIR = ("srvecn+proxy", "srvecn")
CONF = 0.95
PROBE_COLS = ("rtt_p50_ms", "rtt_p95_ms", "rtt_loss", "queue_p50_bytes", "queue_p95_bytes",
              "udp_rate_bps", "udp_loss")


def load_order(loads):
    return sorted(set(loads), key=lambda x: (x == "series", int(x) if x.isdigit() else 0))


def loads_of(df, direction, cross):
    """The loads one direction x cross setting has runs of (a profile may
    give cross traffic off fewer loads)."""
    return load_order(df[(df.direction == direction) & (df.cross == cross)].load)


def red_counters(snap, dev):
    for q in snap:
        if q.get("dev") == dev and q.get("kind") == "red":
            return q
    return {}


def run_row(rec):
    p = rec["params"]
    row = {"id": rec["id"], "plan_index": rec["index"], "direction": p["direction"],
           "cross": p["cross"], "load": p["load"], "config": p["config"], "rep": p["rep"],
           "flows": p["flows"], "series": p["series"], "total_bytes": p["total_bytes"],
           "completion_s": rec["completion_s"], "ok": rec["ok"],
           "timeout": bool(rec["transfer"].get("timeout")),
           # a run cut at its deadline counts with its (lower-bound) time:
           # dropping it would bias the medians toward the fast runs
           "use": rec["ok"] or bool(rec["transfer"].get("timeout")),
           "utilisation": rec["fidelity"]["bottleneck_utilisation"],
           "goodput_share": rec["fidelity"].get("goodput_share"),
           "cpu_idle_min": rec["fidelity"]["cpu_idle_min"],
           "flags": ",".join(rec["fidelity"]["flags"]),
           "feedback": rec["sysctls"]["proxy"].get("net/ecn_proxy/feedback")}
    for side, pre in (("server_side", "ss_"), ("client_side", "cs_")):
        tot = rec["capture"][side]["totals"]
        for m in METRICS + ("ecn_negotiated",):
            row[pre + m] = tot.get(m)
    snd, rcv = (("server", "client") if p["direction"] == "download"
                else ("client", "server"))
    tc = rec["tcp_counters"]
    row["rcv_ce_pkts"] = tc[rcv].get("IpExt.InCEPkts", 0)
    row["snd_delivered_ce"] = tc[snd].get("TcpExt.TCPDeliveredCE", 0)
    row["snd_retrans_segs"] = tc[snd].get("Tcp.RetransSegs", 0)
    orig = tc[snd].get("TcpExt.TCPOrigDataSent", 0)
    row["snd_retrans_pm"] = (1000.0 * row["snd_retrans_segs"] / orig) if orig else None
    row["snd_rtos"] = tc[snd].get("TcpExt.TCPTimeouts", 0)
    # the data receiver's segments are its ACKs (a transfer's replies are
    # a few bytes): per original data segment, its ACK clock
    rcv_out = tc[rcv].get("Tcp.OutSegs")
    row["rcv_segs_per_seg"] = (rcv_out / orig) if orig and rcv_out is not None else None
    row["snd_tlps"] = tc[snd].get("TcpExt.TCPLossProbes", 0)
    row["snd_syn_retrans"] = tc[snd].get("TcpExt.TCPSynRetrans", 0)
    # TCPSynRetrans counts SYN retransmissions at the client and SYN-ACK
    # retransmissions at the server
    row["cli_syn_retrans"] = tc["client"].get("TcpExt.TCPSynRetrans", 0)
    row["srv_syn_retrans"] = tc["server"].get("TcpExt.TCPSynRetrans", 0)
    b, a = rec["proxy_stats"]["before"], rec["proxy_stats"]["after"]
    for k in PROXY_KEYS:
        if k in a:
            row["proxy_" + k] = a[k] - b.get(k, 0)
    dev = rec["env"]["bottleneck_dev"]
    rb, ra = red_counters(rec["qdisc"]["before"], dev), red_counters(rec["qdisc"]["after"], dev)
    for k in ("marked", "early", "pdrop"):
        if k in ra:
            row["red_" + k] = ra[k] - rb.get(k, 0)
    row.update(probe_cols(rec))
    row.update(cause_cols(rec))
    return row


def cause_cols(rec):
    """The run's stall causes (stalls.py), summed over its flows, from the
    capture on the sender's side of the proxy (judged with the other
    side's): sc_CAUSE_n (stalls), sc_CAUSE_s (seconds); None for records
    made before the breakdown existed."""
    side = "server_side" if rec["params"]["direction"] == "download" else "client_side"
    sc = rec["capture"][side]["totals"].get("stall_causes")
    row = {"has_causes": sc is not None}
    for c in CAUSES:
        v = (sc or {}).get(c, {"count": 0, "time": 0.0})
        row["sc_%s_n" % c] = v["count"] if sc is not None else None
        row["sc_%s_s" % c] = v["time"] if sc is not None else None
    return row


def probe_cols(rec):
    """The run's probe summary (None where the record has no probes)."""
    pr = rec.get("probes") or {}
    rtt = pr.get("rtt") or {}
    q = pr.get("queue") or {}
    u = pr.get("udp") or {}
    sent, got = rtt.get("sent"), rtt.get("received")
    return {"rtt_p50_ms": rtt.get("p50_ms"), "rtt_p95_ms": rtt.get("p95_ms"),
            "rtt_loss": max(0.0, 1 - got / sent) if sent and got is not None else None,
            "queue_p50_bytes": q.get("p50_bytes"), "queue_p95_bytes": q.get("p95_bytes"),
            "udp_rate_bps": u.get("rate_bps"), "udp_loss": u.get("loss")}


def fmt_ci(med, lo, hi):
    """'1.10 [0.95, 1.30]'; with up to 4 decimals where 2 would show an
    interval that has a width as one of none."""
    if med is None or (isinstance(med, float) and math.isnan(med)):
        return "-"
    p = 2
    while p < 4 and lo != hi and "%.*f" % (p, lo) == "%.*f" % (p, hi):
        p += 1
    return "%.*f [%.*f, %.*f]" % (p, med, p, lo, p, hi)


def fmt_cov(cov, conf=CONF):
    """' (67 %)' for an interval short of conf; '' for one that reaches it."""
    if cov >= conf - 1e-9:
        return ""
    pct = 100 * cov
    if round(pct) >= 100 * conf:    # never print 95 % for 94.9 %
        return " (%.1f %%)" % (math.floor(pct * 10) / 10)
    return " (%.0f %%)" % pct


def fmt_ratio(r, band=None):
    """'1.10 [0.95, 1.30] (67 %)'; with band, ' **outside**' when the
    interval does not lie inside it."""
    if not r:
        return "-"
    v, lo, hi, cov = r
    out = fmt_ci(v, lo, hi) + fmt_cov(cov)
    if band and not inside(r, band):
        out += " **outside**"
    return out


def inside(r, band):
    return bool(r) and band[0] <= r[1] and r[2] <= band[1]


def load_runs(d):
    recs, bad = [], []
    for f in sorted(glob.glob(os.path.join(d, "runs", "*.json"))):
        with open(f) as fh:
            try:
                rec = json.load(fh)
            except ValueError as e:
                bad.append((os.path.basename(f), ["not JSON: %s" % e]))
                continue
        errs = validate(rec)
        if errs:
            bad.append((os.path.basename(f), errs))
        else:
            recs.append(rec)
    return recs, bad


def cell_table(df):
    rows = []
    for (d, c, l, cfg), g in df.groupby(["direction", "cross", "load", "config"]):
        ok = g[g.use]
        med, lo, hi, cov = stats.median_ci(list(ok.completion_s))
        p95, rank = stats.p95(list(ok.completion_s))
        row = {"direction": d, "cross": c, "load": l, "config": cfg, "n": len(g),
               "n_ok": len(ok), "n_timeout": int(g.timeout.sum()), "median_s": round(med, 4), "ci_low_s": round(lo, 4),
               "ci_high_s": round(hi, 4), "ci_coverage": round(cov, 4),
               "p95_s": round(p95, 4), "p95_rank": rank,
               "flagged": int((g["flags"] != "").sum()),
               "syn_retrans_runs": int(((g.cli_syn_retrans > 0) | (g.srv_syn_retrans > 0)).sum()),
               "min_s": ok.completion_s.min(), "max_s": ok.completion_s.max(),
               "median_utilisation": ok.utilisation.median(),
               "min_cpu_idle": ok.cpu_idle_min.min()}
        for side in ("ss_", "cs_"):
            for m in METRICS:
                row["median_" + side + m] = ok[side + m].median()
        for k in ("red_marked", "red_early", "proxy_congestion_events", "proxy_segs_dropped",
                  "rcv_ce_pkts", "snd_retrans_segs", "snd_rtos"):
            if k in ok:
                row["median_" + k] = ok[k].median()
        row["n_probes"] = int(ok.rtt_p50_ms.notna().sum())
        withc = ok[ok.has_causes]
        row["n_stall_causes"] = len(withc)
        for c in CAUSES:  # sums over the runs that have the breakdown
            for k in ("n", "s"):
                col = "sc_%s_%s" % (c, k)
                row["sum_" + col] = withc[col].sum() if len(withc) else None
        for k in PROBE_COLS:
            row["median_" + k] = ok[k].median()
        rows.append(row)
    return pd.DataFrame(rows)


def group(df, direction, cross, config, load, col="completion_s"):
    return list(df[df.use & (df.direction == direction) & (df.cross == cross)
                   & (df.config == config) & (df.load == load)][col].dropna())


def ratios(df, direction, cross, num, den, loads, col="completion_s", partial=False):
    """-> (ratio, low, high, coverage) of num over den in `col`: one load,
    the Hodges-Lehmann ratio of the runs; several, the geometric mean of
    the per-load ratios.  None if a load lacks runs of either (partial:
    use the loads that have both) or the values are not all positive."""
    pairs = [(group(df, direction, cross, num, l, col), group(df, direction, cross, den, l, col))
             for l in loads]
    if partial:
        pairs = [(a, b) for a, b in pairs if a and b]
    if not pairs or any(not a or not b for a, b in pairs):
        return None
    r = stats.gm_ratio([a for a, _ in pairs], [b for _, b in pairs], CONF)
    return None if math.isnan(r[0]) or math.isnan(r[1]) else r


def boxplots(df, d, prof_note, configs):
    out = []
    for direction in sorted(df.direction.unique()):
        for cross in sorted(df.cross.unique()):
            sub = df[df.use & (df.direction == direction) & (df.cross == cross)]
            if sub.empty:
                continue
            loads = loads_of(df, direction, cross)
            fig, axes = plt.subplots(1, len(loads), figsize=(3.2 * len(loads), 4.2),
                                     squeeze=False)
            for ax, l in zip(axes[0], loads):
                data = [list(sub[(sub.load == l) & (sub.config == c)].completion_s)
                        for c in configs]
                bp = ax.boxplot([x if x else [float("nan")] for x in data],
                                patch_artist=True, widths=0.6, whis=1.5)
                for patch, c in zip(bp["boxes"], configs):
                    patch.set_facecolor(COLORS.get(c, "white"))
                for med in bp["medians"]:
                    med.set_color("black")
                for k, x in enumerate(data):  # every run, as few as there are
                    ax.plot([k + 1 + 0.12 * ((i % 5) - 2) / 2 for i in range(len(x))], x,
                            ".", color="black", ms=3, alpha=0.6)
                ax.set_xticks(range(1, len(configs) + 1))
                ax.set_xticklabels(configs, rotation=60, ha="right", fontsize=8)
                ax.set_title("series" if l == "series" else "%s parallel" % l, fontsize=10)
                ax.set_ylim(bottom=0)
                ax.grid(axis="y", alpha=0.3)
            axes[0][0].set_ylabel("completion time (s)")
            fig.suptitle("%s, cross traffic %s: completion time of a fixed volume "
                         "(lower is better; dots: runs)" % (direction, cross), fontsize=11)
            fig.text(0.5, 0.005, prof_note, ha="center", fontsize=7, wrap=True)
            fig.tight_layout(rect=(0, 0.05, 1, 0.95))
            name = "boxplot_%s_cross-%s.png" % (direction, cross)
            fig.savefig(os.path.join(d, name), dpi=110)
            plt.close(fig)
            out.append(name)
    return out


def timeseries(recs, df, d, configs):
    """Delivered bytes over time of the median flow of each configuration,
    in the cell with the fewest parallel flows."""
    numeric = sorted({l for l in df.load if l.isdigit()}, key=int)
    if not numeric:
        return None
    load = numeric[0]
    byid = {r["id"]: r for r in recs}
    dirs = sorted(df.direction.unique())
    crosses = sorted(df.cross.unique())
    fig, axes = plt.subplots(len(dirs), len(crosses), figsize=(6 * len(crosses), 4 * len(dirs)),
                             squeeze=False)
    for i, direction in enumerate(dirs):
        for j, cross in enumerate(crosses):
            ax = axes[i][j]
            sub = df[df.use & (df.direction == direction) & (df.cross == cross) & (df.load == load)]
            for c in configs:
                g = sub[sub.config == c].sort_values("completion_s")
                if g.empty:
                    continue
                rec = byid[g.iloc[(len(g) - 1) // 2].id]
                conns = sorted(rec["transfer"]["conns"], key=lambda x: x["end"] - x["start"])
                conn = conns[(len(conns) - 1) // 2]
                s = conn.get("samples") or []
                t = [0.0] + [x[0] - conn["start"] for x in s]
                b = [0.0] + [x[1] / 1e6 for x in s]
                ax.step(t, b, where="post", color=COLORS.get(c), label=c, lw=1.5)
            ax.set_title("%s, cross traffic %s (load %s, median run and flow)" % (
                direction, cross, load), fontsize=10)
            ax.set_xlabel("time since connect (s)")
            ax.set_ylabel("delivered (MB)")
            ax.grid(alpha=0.3)
            ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(os.path.join(d, "timeseries.png"), dpi=110)
    plt.close(fig)
    return "timeseries.png"


def delay_plot(recs, df, d, configs):
    """delay.png: per direction (cross traffic on where there is any), box
    plots of the runs' RTT p95 per configuration (all loads), and the RED
    backlog over time of one representative run per configuration (at the
    load with the most parallel flows, the run with the median RTT p95)."""
    pr = df[df.use & df.rtt_p95_ms.notna()]
    if pr.empty:
        return None
    byid = {r["id"]: r for r in recs}
    panels = []
    for direction in sorted(pr.direction.unique()):
        sub = pr[pr.direction == direction]
        cross = "on" if (sub.cross == "on").any() else sorted(sub.cross.unique())[0]
        panels.append((direction, cross, sub[sub.cross == cross]))
    fig, axes = plt.subplots(len(panels), 2, figsize=(13, 4.2 * len(panels)), squeeze=False)
    for i, (direction, cross, sub) in enumerate(panels):
        ax = axes[i][0]
        cf = [c for c in configs if (sub.config == c).any()]
        data = [list(sub[sub.config == c].rtt_p95_ms) for c in cf]
        bp = ax.boxplot(data, patch_artist=True, widths=0.6, whis=1.5)
        for patch, c in zip(bp["boxes"], cf):
            patch.set_facecolor(COLORS.get(c, "white"))
        for med in bp["medians"]:
            med.set_color("black")
        for k, x in enumerate(data):
            ax.plot([k + 1 + 0.03 * ((j % 7) - 3) for j in range(len(x))], x, ".",
                    color="black", ms=3, alpha=0.6)
        ax.set_xticks(range(1, len(cf) + 1))
        ax.set_xticklabels(cf, rotation=30, ha="right", fontsize=8)
        ax.set_ylabel("RTT p95 during the transfer (ms)")
        ax.set_ylim(bottom=0)
        ax.grid(axis="y", alpha=0.3)
        ax.set_title("%s, cross traffic %s: ping RTT p95 per run (all loads)" % (
            direction, cross), fontsize=10)
        ax = axes[i][1]
        # the same load for every configuration: the most parallel flows
        numeric = sorted({l for l in sub.load if l.isdigit()}, key=int)
        load = numeric[-1] if numeric else load_order(sub.load)[0]
        for c in cf:
            g = sub[(sub.config == c) & (sub.load == load)].sort_values("rtt_p95_ms")
            if g.empty:
                continue
            rec = byid[g.iloc[(len(g) - 1) // 2].id]
            q = ((rec.get("probes") or {}).get("queue") or {}).get("samples") or []
            t0 = rec["transfer"].get("start")
            t1 = rec["transfer"].get("end")
            if not q or t0 is None:
                continue
            pts = [(t - t0, b / 1e3) for t, b, *_ in q
                   if t1 is None or t0 - 0.5 <= t <= t1 + 0.5]
            if pts:
                ax.step([x for x, _ in pts], [y for _, y in pts], where="post",
                        color=COLORS.get(c), lw=1.1, alpha=0.85, label=c)
        ax.set_xlabel("time since the transfer started (s)")
        ax.set_ylabel("RED backlog at the bottleneck (kB)")
        ax.set_ylim(bottom=0)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
        ax.set_title("%s, cross traffic %s, load %s: backlog of the run with the "
                     "median RTT p95" % (direction, cross, load), fontsize=10)
    fig.tight_layout()
    fig.savefig(os.path.join(d, "delay.png"), dpi=110)
    plt.close(fig)
    return "delay.png"


def quickack_pairs(df):
    """QUICKACK_PAIRS if the directory has the quick-ACK configuration."""
    return list(QUICKACK_PAIRS) if QUICKACK & set(df.config) else []


def ratio_rows(df):
    """Every ratio the report prints, one row each (ratios.csv), and a
    lookup {(metric, direction, cross, load, num, den): ratio}."""
    rows, look = [], {}
    pairs = [(p, "headline", None) for p in HEADLINE] + [(p, "A/A", AA_BAND) for p in AA]
    pairs += [(REFERENCE, "reference", None)]
    pairs += [(p, "quickack", None) for p in quickack_pairs(df)]
    for direction in sorted(df.direction.unique()):
        for cross in sorted(df.cross.unique()):
            loads = loads_of(df, direction, cross)
            if not loads:
                continue
            todo = [("completion_s", p, kind, band, False) for p, kind, band in pairs]
            todo += [(col, DELAY_PAIR, "delay", DELAY_BAND, True)
                     for col in ("rtt_p50_ms", "rtt_p95_ms")]
            todo += [("udp_loss", UDP_PAIR, "udp loss", None, True)]
            for col, (num, den), kind, band, partial in todo:
                for l in loads + ["all"]:
                    r = ratios(df, direction, cross, num, den, loads if l == "all" else [l],
                               col, partial)
                    look[(col, direction, cross, l, num, den)] = r
                    if r is None:
                        continue
                    sel = loads if l == "all" else [l]
                    rows.append({
                        "metric": col, "kind": kind, "direction": direction, "cross": cross,
                        "load": l, "num": num, "den": den, "ratio": round(r[0], 4),
                        "low": round(r[1], 4), "high": round(r[2], 4),
                        "coverage": round(r[3], 4),
                        "n_num": sum(len(group(df, direction, cross, num, x, col)) for x in sel),
                        "n_den": sum(len(group(df, direction, cross, den, x, col)) for x in sel),
                        "band": "" if band is None else "%.2f-%.2f" % band,
                        "inside": "" if band is None else int(inside(r, band))})
    return rows, look


def causes_section(w, df, configs):
    """The "Stall causes" section of summary.md: per direction x cross
    traffic, per configuration, the stalls of each cause summed over the
    runs (all loads; per load: summary.csv)."""
    w("## Stall causes")
    w("")
    rs = df[df.use & df.has_causes]
    if rs.empty:
        w("No record in this directory has the stall causes (records made before "
          "`scripts/analysis/stalls.py` existed); the stall counts above are all "
          "there is.")
        w("")
        return
    w("Each stall (no delivery for more than max(2 x RTT, 200 ms), as counted above) "
      "classified by the packet that ends it, after TAPO (Zhou et al., CoNEXT 2015), "
      "plus the causes only this testbed shows (`scripts/analysis/stalls.py` defines "
      "each).  Capture on the sender's side of the proxy (server side for downloads, "
      "client side for uploads), judged together with the other side's.  Cells: "
      "stalls / seconds stalled, summed over the runs of all loads (per load: "
      "`summary.csv`, columns `sum_sc_*`); %d of %d runs have the breakdown; handshake "
      "stalls lie before the first data segment and are not in the stall counts "
      "above." % (len(rs), int(df.use.sum())))
    w("")
    seen = set()
    for direction in sorted(rs.direction.unique()):
        for cross in sorted(rs.cross.unique()):
            sub = rs[(rs.direction == direction) & (rs.cross == cross)]
            if sub.empty:
                continue
            cs = [c for c in CAUSES if sub["sc_%s_n" % c].sum() > 0]
            seen.update(cs)
            w("### %s, cross traffic %s" % (direction, cross))
            w("")
            if not cs:
                w("No stalls.")
                w("")
                continue
            w("| config | runs | " + " | ".join("`%s`" % c for c in cs) + " |")
            w("| --- | --- |" + " --- |" * len(cs))
            for c in configs:
                g = sub[sub.config == c]
                if g.empty:
                    continue
                w("| %s | %d | %s |" % (c, len(g), " | ".join(
                    "%d / %.2f" % (g["sc_%s_n" % x].sum(), g["sc_%s_s" % x].sum())
                    if g["sc_%s_n" % x].sum() else "-" for x in cs)))
            w("")
    if seen:
        w("Causes: " + "; ".join("`%s` %s" % (c, CAUSES[c]) for c in CAUSES if c in seen)
          + ".")
        w("")


def aa_acted(w, df):
    """The A/A runs in which the proxy proxied a flow after all, and how
    many of them retransmitted a SYN or SYN-ACK: with a lost ECN-setup SYN
    or SYN-ACK, Linux's retransmitted SYN goes out without ECE and CWR
    (tcp_ecn_clear_syn()), which the state machine reads as A falling back
    to non-ECN (FSM.md, A_C)."""
    cols = [c for c in ("proxy_flows_proxied_ecn_responder",
                        "proxy_flows_proxied_ecn_initiator") if c in df.columns]
    if not cols:
        return
    parts = []
    for num, _ in AA:
        g = df[df.use & (df.config == num)]
        if g.empty:
            continue
        acted = g[g[cols].fillna(0).sum(axis=1) > 0]
        syn = acted[(acted.cli_syn_retrans > 0) | (acted.srv_syn_retrans > 0)]
        parts.append("`%s`: %d of %d runs, %d of them with a SYN or SYN-ACK "
                     "retransmission" % (num, len(acted), len(g), len(syn)))
    if not parts:
        return
    w("Runs of an A/A configuration in which the proxy proxied a flow after all "
      "(its counters `flows_proxied_ecn_responder` and `_initiator`; per run: "
      "`runs.csv`): %s.  Where both ends use ECN and A's ECN-setup SYN or B's "
      "SYN-ACK is lost, Linux retransmits the SYN without ECE and CWR "
      "(`tcp_ecn_clear_syn()`), which the proxy takes for A falling back to no ECN: "
      "it then passes B's ECN-setup SYN-ACK to A downgraded and proxies the "
      "connection (`kmod/ecn_proxy/FSM.md`, A_C), so such a run is not an A/A "
      "run." % "; ".join(parts))
    w("")


def delay_section(w, df, configs, look, nrec):
    """The "Queueing delay and loss" section of summary.md."""
    w("## Queueing delay and loss")
    w("")
    pr = df[df.rtt_p50_ms.notna() | df.queue_p50_bytes.notna() | df.udp_loss.notna()]
    if pr.empty:
        w("No record in this directory has probes (RTT, RED backlog, UDP delivery); "
          "records made since the probes were added to the matrix have them.")
        w("")
        return
    w("While each transfer ran, the client pinged the server through the bottleneck "
      "every 50 ms (ICMP is Not-ECT: RED may drop a probe; probe loss = 1 - replies / "
      "requests), the router's RED backlog was read every 50 ms, and with cross traffic "
      "the UDP flow's packets sent and delivered were counted (its hosts' link "
      "counters; rate: delivered bits over the probe window).  Per run: RTT and backlog "
      "p50 / p95 over the transfer; below, the medians of those over the runs of all "
      "loads (per load: `summary.csv`).  %d of %d runs have probes.  Ratios: geometric "
      "mean over the loads of the per-load Hodges-Lehmann ratios of the runs' values, "
      "as for completion times; the proxy's goal is RTTs within 10 %% of end-to-end ECN "
      "(**outside**: the interval does not lie inside [%.2f, %.2f]); its goal of less "
      "loss than `srvecn` is about the TCP flows (the last line of each part below).  "
      "The UDP flow loses more where the TCP flows use ECN: RED marks their packets "
      "instead of dropping them, and its drops fall on the Not-ECT ones.  Figure: "
      "`delay.png`." % (len(pr), nrec, DELAY_BAND[0], DELAY_BAND[1]))
    w("")

    def med(g, col, scale=1.0, fmt="%.1f"):
        x = g[col].dropna()
        return fmt % (x.median() * scale) if len(x) else "-"
    for direction in sorted(pr.direction.unique()):
        for cross in sorted(pr.cross.unique()):
            sub = pr[pr.use & (pr.direction == direction) & (pr.cross == cross)]
            if sub.empty:
                continue
            w("### %s, cross traffic %s" % (direction, cross))
            w("")
            w("| config | runs | RTT p50 (ms) | RTT p95 (ms) | probe loss | backlog p50 (kB) "
              "| backlog p95 (kB) | UDP delivered (Mbit/s) | UDP loss |")
            w("|" + " --- |" * 9)
            for c in configs:
                g = sub[sub.config == c]
                if g.empty:
                    continue
                w("| %s | %d | %s |" % (c, len(g), " | ".join([
                    med(g, "rtt_p50_ms"), med(g, "rtt_p95_ms"),
                    med(g, "rtt_loss", 100, "%.1f %%"),
                    med(g, "queue_p50_bytes", 1e-3), med(g, "queue_p95_bytes", 1e-3),
                    med(g, "udp_rate_bps", 1e-6, "%.2f"), med(g, "udp_loss", 100, "%.1f %%")])))
            w("")
            num, den = DELAY_PAIR
            w("- %s / %s, all loads: RTT p50 %s; RTT p95 %s." % (
                num, den,
                fmt_ratio(look.get(("rtt_p50_ms", direction, cross, "all", num, den)), DELAY_BAND),
                fmt_ratio(look.get(("rtt_p95_ms", direction, cross, "all", num, den)), DELAY_BAND)))
            num, den = UDP_PAIR
            a = sub[sub.config == num].udp_loss.dropna()
            b = sub[sub.config == den].udp_loss.dropna()
            if len(a) and len(b):
                r = look.get(("udp_loss", direction, cross, "all", num, den))
                w("- UDP loss, %s vs %s: medians %.2f %% vs %.2f %%; ratio %s." % (
                    num, den, 100 * a.median(), 100 * b.median(),
                    fmt_ratio(r) if r else "- (a run without loss)"))
            tcp_loss_line(w, df, direction, cross)
            ack_clock_line(w, sub)
            w("")


def tcp_loss_line(w, df, direction, cross):
    """The TCP flows' own loss, srvecn+proxy against srvecn: the issue's
    "less loss than srvecn".  Retransmitted segments per 1000 original
    data segments of the data sender; a difference, not a ratio (runs
    without a retransmission are 0)."""
    num, den = UDP_PAIR
    loads = [l for l in loads_of(df, direction, cross)
             if group(df, direction, cross, num, l, "snd_retrans_pm")
             and group(df, direction, cross, den, l, "snd_retrans_pm")]
    if not loads:
        return
    a = [group(df, direction, cross, num, l, "snd_retrans_pm") for l in loads]
    b = [group(df, direction, cross, den, l, "snd_retrans_pm") for l in loads]
    v, lo, hi, cov = stats.gm_shift(a, b, CONF)
    if math.isnan(lo):
        return
    w("- TCP loss (the data sender's retransmitted segments per 1000 original data "
      "segments, Tcp.RetransSegs / TcpExt.TCPOrigDataSent), %s vs %s: medians %.1f vs "
      "%.1f; difference %s per 1000 (mean over the loads of the per-load "
      "Hodges-Lehmann shifts); fewer than %s: %s." % (
          num, den, stats.median([x for g in a for x in g]),
          stats.median([x for g in b for x in g]),
          "%.1f [%.1f, %.1f]" % (v, lo, hi) + fmt_cov(cov),
          den, stats.goal_verdict(lo, hi, at_most=0)))


def ack_clock_line(w, sub):
    """What the data sender of DELAY_PAIR heard: the receiver's segments
    (its ACKs) per original data segment, the RED marks and the sender's
    tail loss probes, medians over the runs of all loads.  A non-ECN
    receiver behind the proxy delays its ACKs; an ECN receiver ACKs a
    CE-marked segment at once (Linux's quick-ACK mode on CE)."""
    num, den = DELAY_PAIR
    if "rcv_segs_per_seg" not in sub:
        return
    cols = (("rcv_segs_per_seg", "%.2f"), ("red_marked", "%.0f"), ("snd_tlps", "%.0f"))
    vals = {}
    for c in (num, den):
        g = sub[sub.config == c]
        vals[c] = [fmt % g[col].dropna().median()
                   if col in g and g[col].notna().any() else "-" for col, fmt in cols]
    if "-" in vals[num][:1] + vals[den][:1]:
        return
    w("- The data sender's feedback, %s vs %s (medians over the runs of all loads): "
      "the receiver's segments (its ACKs) per original data segment %s vs %s "
      "(Tcp.OutSegs / TcpExt.TCPOrigDataSent); segments RED marked %s vs %s; the "
      "sender's tail loss probes %s vs %s (TcpExt.TCPLossProbes)." % (
          num, den, vals[num][0], vals[den][0], vals[num][1], vals[den][1],
          vals[num][2], vals[den][2]))


def report(d):
    with open(os.path.join(d, "plan.json")) as f:
        plan = json.load(f)
    meta = {}
    if os.path.exists(os.path.join(d, "meta.json")):
        with open(os.path.join(d, "meta.json")) as f:
            meta = json.load(f)
    prof = plan["profile"]
    recs, bad = load_runs(d)
    if not recs:
        raise SystemExit("report: no valid run records in %s" % d)
    df = pd.DataFrame([run_row(r) for r in recs]).sort_values("plan_index")
    for k in PROBE_COLS + ("snd_retrans_pm",) + tuple("sc_%s_%s" % (c, x) for c in CAUSES
                                                       for x in "ns"):
        df[k] = pd.to_numeric(df[k])
    df.to_csv(os.path.join(d, "runs.csv"), index=False)
    cells = cell_table(df)
    configs = [c for c in CONFIG_ORDER if c in set(df.config)]
    loads = load_order(df.load)
    cells["config"] = pd.Categorical(cells.config, configs, ordered=True)
    cells["load"] = pd.Categorical(cells.load, loads, ordered=True)
    cells = cells.sort_values(["direction", "cross", "load", "config"])
    cells.to_csv(os.path.join(d, "summary.csv"), index=False)
    rrows, look = ratio_rows(df)
    pd.DataFrame(rrows, columns=["metric", "kind", "direction", "cross", "load", "num", "den",
                                 "ratio", "low", "high", "coverage", "n_num", "n_den", "band",
                                 "inside"]).to_csv(os.path.join(d, "ratios.csv"), index=False)

    headline = {}
    for direction in ("download", "upload"):
        for num, den in HEADLINE:
            r = look.get(("completion_s", direction, "on", "all", num, den))
            if r:
                headline["%s cross-on %s/%s" % (direction, num, den)] = r
    aa = {}
    for direction in sorted(df.direction.unique()):
        for cross in sorted(df.cross.unique()):
            for num, den in AA:
                r = look.get(("completion_s", direction, cross, "all", num, den))
                if r:
                    aa["%s cross-%s %s/%s" % (direction, cross, num, den)] = r
    aa_cells = [(k, r) for k, r in look.items()
                if k[0] == "completion_s" and k[3] != "all" and (k[4], k[5]) in AA and r]
    aa_out = sum(not inside(r, AA_BAND) for _, r in aa_cells)

    figs = boxplots(df, d, prof.get("note", ""), configs)
    ts = timeseries(recs, df, d, configs)
    dl = delay_plot(recs, df, d, configs)

    sessions = meta.get("sessions", [])
    r0 = recs[0]
    L = []
    w = L.append
    w("# Throughput matrix: profile `%s`" % prof["name"])
    w("")
    w("> **%s**" % prof.get("note", ""))
    w("")
    w("Generated by `scripts/matrix_analyze.py` from `runs/*.json`; do not edit.")
    w("Completion time of a fixed volume (seconds, lower is better): median and a "
      "distribution-free 95 % confidence interval (order statistics; with fewer "
      "than 6 runs the interval is [min, max] and its real coverage is given), and "
      "p95, the ceil(0.95 n)-th smallest time: with fewer than 20 runs, the slowest run.")
    w("Ratios (below 1: the first configuration is faster): in one cell, the "
      "Hodges-Lehmann estimate, the median of the n x m ratios of a run of the first "
      "configuration to a run of the second, with its exact distribution-free interval "
      "(from the Mann-Whitney distribution; exact when one configuration's times are "
      "the other's times scaled by a constant factor).  Too few runs for 95 % give "
      "the widest such interval, [smallest, largest] of the ratios, with its real "
      "level in parentheses (2 runs each: 67 %; 4 runs each reach 97 %).  Across "
      "loads (`all` and the headline): the geometric mean of the per-load ratios, "
      "with a normal interval from the per-load intervals' widths whose coverage was "
      "checked by simulation (scripts/analysis/stats.py: at least 95 % with 5 loads "
      "from 2 runs per cell up; a simulated level below 95 % is printed).")
    w("")
    w("## Headline (cross traffic on, all loads)")
    w("")
    w("| direction | ratio | value [95 % CI] |")
    w("| --- | --- | --- |")
    for k, r in headline.items():
        direction, _, rat = k.split(" ")
        w("| %s | %s | %s |" % (direction, rat.replace("/", " / "), fmt_ratio(r)))
    if not headline:
        w("| - | no runs of `srvecn+proxy` with `bothecn` or `noecn` under cross traffic "
          "in every load | - |")
    w("")
    ref = [(direction, look.get(("completion_s", direction, "on", "all") + REFERENCE))
           for direction in ("download", "upload")]
    ref = [(direction, r) for direction, r in ref if r]
    if ref:
        w("For reference, end-to-end ECN against no ECN over the same loads "
          "(`%s / %s`: what ECN itself gains on this testbed, and so what "
          "`srvecn+proxy / noecn` is when the proxy is exactly as good as end-to-end "
          "ECN): %s."
          % (REFERENCE + ("; ".join("%s %s" % (direction, fmt_ratio(r))
                                    for direction, r in ref),)))
        w("")
    w("For comparison, the thesis (10 runs per cell, 20 MB flows with cross traffic, "
      "proxy feedback `none`): downloads through the proxy were close to end-to-end "
      "ECN and much faster than no ECN; uploads through the proxy were no better than "
      "no ECN, while end-to-end ECN was much faster.  This run's proxy feedback mode: "
      "`%s`." % (plan.get("feedback") or r0["sysctls"]["proxy"].get("net/ecn_proxy/feedback")))
    w("")
    w("## A/A: the proxy where it has nothing to do")
    w("")
    if not aa_cells:
        w("These runs have neither pair of A/A configurations (`noecn+proxy` and "
          "`noecn`, `bothecn+proxy` and `bothecn`).")
        w("")
    else:
        w("`noecn+proxy / noecn` (no ECN anywhere) and `bothecn+proxy / bothecn` (end-to-end "
          "ECN, nothing to translate) should be 1.  All loads, as above; **outside**: the "
          "interval does not lie inside [%.2f, %.2f], i.e. these runs do not show the "
          "proxy to be transparent within 3 %% (an interval that also excludes 1 shows a "
          "difference; one inside the band at a level below 95 %%, printed, is weaker "
          "evidence than it looks).  Per load: the tables of each section below; %d of %d per-load "
          "A/A intervals are outside." % (AA_BAND[0], AA_BAND[1], aa_out, len(aa_cells)))
        w("")
        w("| direction | cross traffic | " + " | ".join("%s / %s" % p for p in AA) + " |")
        w("| --- | --- |" + " --- |" * len(AA))
        for direction in sorted(df.direction.unique()):
            for cross in sorted(df.cross.unique()):
                w("| %s | %s | %s |" % (direction, cross, " | ".join(
                    fmt_ratio(aa.get("%s cross-%s %s/%s" % (direction, cross, *p)), AA_BAND)
                    for p in AA)))
        w("")
        aa_acted(w, df)
    nflag = int((df["flags"] != "").sum())
    w("## Fidelity")
    w("")
    w("%d runs, %d complete and byte-exact, %d cut at their deadline (counted with "
      "their time at the deadline, a lower bound); %d flagged by the fidelity checks "
      "(`transfer_timeout`: the run hit its deadline; `bottleneck_not_reached`: the bottleneck's HTB class never throttled and its "
      "RED queue never marked or dropped; `cpu_saturated`: a guest CPU was idle less "
      "than %.0f %% of the run; `capture_drops`; `transfer_failed`).  Utilisation "
      "(HTB bytes during the run over the link rate, cross traffic included) is "
      "reported, not judged: slow start, handshakes and RTOs lower it." % (
          len(df), int(df.ok.sum()), int(df.timeout.sum()), nflag,
          100 * prof["fidelity"]["min_cpu_idle"]))
    if nflag:
        counts = {}
        for f in df["flags"]:
            for x in filter(None, f.split(",")):
                counts[x] = counts.get(x, 0) + 1
        w("Flags: " + ", ".join("%s %d" % kv for kv in sorted(counts.items())) + ".")
        for (dd, c), g in df.groupby(["direction", "cross"]):
            w("- %s, cross %s: %d of %d flagged; median utilisation %.2f, lowest CPU idle %.2f" % (
                dd, c, int((g["flags"] != "").sum()), len(g), g.utilisation.median(),
                g.cpu_idle_min.min()))
    else:
        w("Median bottleneck utilisation %.2f; lowest per-CPU idle share %.2f." % (
            df.utilisation.median(), df.cpu_idle_min.min()))
    nsyn = int(((df.cli_syn_retrans > 0) | (df.srv_syn_retrans > 0)).sum())
    w("%d of %d runs retransmitted a SYN or SYN-ACK (TcpExt.TCPSynRetrans of the client "
      "or the server; per cell in each section below)." % (nsyn, len(df)))
    if bad:
        w("")
        w("Invalid records (not used): " + "; ".join("%s: %s" % (f, ", ".join(e[:3]))
                                                     for f, e in bad))
    w("")
    for direction in sorted(df.direction.unique()):
        for cross in sorted(df.cross.unique()):
            sub = cells[(cells.direction == direction) & (cells.cross == cross)]
            if sub.empty:
                continue
            sz = prof["sizes"][direction][cross]
            sec_loads = loads_of(df, direction, cross)
            w("## %s, cross traffic %s" % (direction, cross))
            w("")
            w("Flows of %d bytes; series: %s. Box plot: `boxplot_%s_cross-%s.png`.  "
              "Median [95 %% CI] (n, the interval's coverage); p95." % (
                  sz["flow_bytes"],
                  "%d x %d bytes" % tuple(sz["series"]) if sz.get("series") else "-",
                  direction, cross))
            w("")
            w("| load | " + " | ".join(configs) + " |")
            w("| --- |" + " --- |" * len(configs))
            for l in sec_loads:
                cells_l = sub[sub.load == l]
                vals = []
                for c in configs:
                    r = cells_l[cells_l.config == c]
                    if r.empty:
                        vals.append("-")
                    else:
                        r = r.iloc[0]
                        vals.append(fmt_ci(r.median_s, r.ci_low_s, r.ci_high_s) + (
                            " (n=%d, %.0f %%); p95 %.2f" % (r.n_ok, 100 * r.ci_coverage,
                                                            r.p95_s)) + (
                            " ⚑%d" % r.flagged if r.flagged else ""))
                w("| %s | %s |" % (l, " | ".join(vals)))
            w("")
            pairs = list(HEADLINE) + list(AA) + quickack_pairs(df)
            w("Ratios (per load: Hodges-Lehmann; all: geometric mean over the loads); "
              "A/A **outside**: not inside [%.2f, %.2f]." % AA_BAND)
            w("")
            w("| load | " + " | ".join("%s / %s%s" % (n, m, " (A/A)" if (n, m) in AA else "")
                                       for n, m in pairs) + " |")
            w("| --- |" + " --- |" * len(pairs))
            for l in sec_loads + ["all"]:
                w("| %s | %s |" % (l, " | ".join(
                    fmt_ratio(look.get(("completion_s", direction, cross, l, n, m)),
                              AA_BAND if (n, m) in AA else None) for n, m in pairs)))
            w("")
            w("Handshakes: runs with at least one SYN or SYN-ACK retransmission "
              "(TcpExt.TCPSynRetrans at the client or the server) / runs.")
            w("")
            w("| load | " + " | ".join(configs) + " |")
            w("| --- |" + " --- |" * len(configs))
            for l in sec_loads:
                cells_l = sub[sub.load == l]
                vals = []
                for c in configs:
                    r = cells_l[cells_l.config == c]
                    vals.append("-" if r.empty else "%d/%d" % (r.iloc[0].syn_retrans_runs,
                                                               r.iloc[0].n))
                w("| %s | %s |" % (l, " | ".join(vals)))
            w("")
            w("Per-flow analysis (medians per run over all loads; sums over the run's "
              "flows; data direction unless noted). Server side = capture on the proxy's "
              "server-side interface, client side = on its client-side interface; both "
              "are downstream of the bottleneck for downloads and upstream of it for "
              "uploads (so upload CE marks show only at the receiver, and upload "
              "drops never reach the captures). CE at receiver, sender retrans and "
              "RTOs: the endpoints' own counters (IpExt.InCEPkts, Tcp.RetransSegs, "
              "TcpExt.TCPTimeouts).")
            w("")
            hdr = ["config", "CE srv-side", "CE cli-side", "CE at receiver",
                   "ECE srv-side (acks)", "ECE cli-side (acks)", "CWR srv-side",
                   "ECT share srv/cli", "retrans", "fast retrans", "dup ACKs", "stalls",
                   "stalled s", "sender retrans (stack)", "sender RTOs", "RED marked",
                   "RED early drops", "proxy cong. events", "proxy drops",
                   "proxied / fallback flows"]
            w("| " + " | ".join(hdr) + " |")
            w("|" + " --- |" * len(hdr))
            rs = df[df.use & (df.direction == direction) & (df.cross == cross)]
            for c in configs:
                g = rs[rs.config == c]
                if g.empty:
                    continue

                def m(col, fmt="%.0f"):
                    if col not in g or g[col].isna().all():
                        return "-"
                    return fmt % g[col].median()
                w("| %s | " % c + " | ".join([
                    m("ss_ce"), m("cs_ce"), m("rcv_ce_pkts"), m("ss_ece"), m("cs_ece"),
                    m("ss_cwr"),
                    m("ss_ect_share", "%.2f") + " / " + m("cs_ect_share", "%.2f"),
                    m("ss_retrans"), m("ss_fast_retrans"), m("ss_dupacks"), m("ss_stalls"),
                    m("ss_stall_time", "%.2f"), m("snd_retrans_segs"), m("snd_rtos"),
                    m("red_marked"), m("red_early"),
                    m("proxy_congestion_events"), m("proxy_segs_dropped"),
                    m("proxy_flows_proxied_ecn_responder") + " / " + m("proxy_flows_fallback")])
                  + " |")
            w("")
    causes_section(w, df, configs)
    delay_section(w, df, configs, look, len(df))
    w("## Figures")
    w("")
    for f in figs:
        w("- `%s`" % f)
    if ts:
        w("- `%s`: delivered bytes over time of the median flow of each configuration" % ts)
    if dl:
        w("- `%s`: ping RTT p95 per run and configuration, and the RED backlog over time "
          "of the run with the median RTT p95 of each configuration (at the load with "
          "the most parallel flows)" % dl)
    w("")
    w("## How this was made")
    w("")
    w("- command: `%s`" % meta.get("command", "make matrix PROFILE=%s" % prof["name"]))
    w("- profile `%s` (copy in `plan.json`): repetitions %s, seed %d, %d runs; "
      "feedback mode: %s" % (prof["name"], prof["reps"], plan["seed"], len(plan["runs"]),
                             plan.get("feedback") or "module default (%s)" % r0["sysctls"]["proxy"].get(
                                 "net/ecn_proxy/feedback")))
    w("- guest kernel %s, accelerator %s, %d guest CPUs; bottleneck %s, RED per the thesis, "
      "cross traffic %s UDP" % (r0["env"]["kernel"], r0["env"]["accel"], r0["env"]["guest_cpus"],
                                r0["env"]["rate_low"], prof["cross_rate"]))
    for s in sessions:
        w("- session %d: %s, %s s, exit %s, %d runs done, git %s%s, ecn_proxy.ko sha256 %s%s" % (
            s["n"], s["start"], s["seconds"], s["exit_code"],
            s["pending_before"] - s["pending_after"], s["git_commit"][:12],
            " (uncommitted changes under kmod/, vm-testbed/ or scripts/)" if s.get("git_dirty") else "",
            (s.get("ecn_proxy_ko_sha256") or "?")[:16],
            "; host load average %.1f on %d CPUs, up to %d QEMU guests at once (other VMs "
            "slow a TCG guest without showing in its CPU counters)" % (
                s["host_load_mean"], s.get("host_cpus") or 0, s["host_qemu_max"])
            if s.get("host_load_mean") is not None else ""))
    w("- tools: " + "; ".join("%s: %s" % (k, v if isinstance(v, str) else " ".join(v))
                              for k, v in r0["versions"].items()))
    w("")
    with open(os.path.join(d, "summary.md"), "w") as f:
        f.write("\n".join(L))
    write_readme(d, prof)
    with open(os.path.join(d, "headline.json"), "w") as f:
        json.dump({"profile": prof["name"], "runs": len(df), "flagged": nflag,
                   # ratio, low, high, coverage of the interval
                   "headline": {k: [round(x, 4) for x in v] for k, v in headline.items()},
                   "aa": {k: {"ratio": [round(x, 4) for x in v], "band": list(AA_BAND),
                              "inside": inside(v, AA_BAND)} for k, v in aa.items()},
                   "aa_cells_outside": [aa_out, len(aa_cells)]},
                  f, indent=1)
    return {k: tuple(v[:3]) for k, v in headline.items()}


def _feedback(d):
    """The proxy's feedback mode the runs of result directory D recorded."""
    for r in sorted(glob.glob(os.path.join(d, "runs", "*.json"))):
        with open(r) as f:
            fb = json.load(f).get("sysctls", {}).get("proxy", {}).get(
                "net/ecn_proxy/feedback")
        if fb:
            return fb
    return "?"


def write_index(results):
    """results/README.md: the published result directories and their
    headline ratios (from each one's headline.json)."""
    L = ["# results", "",
         "Output of `make matrix`, `make fairness` and `make experiments`, one "
         "directory per run of a",
         "profile (`<profile>-<date>/`),",
         "produced by scripts from raw data and never edited by hand; this index is",
         "rewritten by `scripts/matrix_analyze.py`.  Start with a directory's",
         "`summary.md`; its `README.md` explains the files.", "",
         "| directory | profile | feedback | runs | flagged | headline (cross traffic on) "
         "| A/A outside [0.97, 1.03] |",
         "| --- | --- | --- | --- | --- | --- | --- |"]
    for h in sorted(glob.glob(os.path.join(results, "*", "headline.json"))):
        with open(h) as f:
            j = json.load(f)
        name = os.path.basename(os.path.dirname(h))
        if j.get("kind") == "impair":
            heads = "%s: %s" % (j["study"], ", ".join(
                "%d %s" % (n, v) for v, n in sorted(j["verdicts"].items())) or "-")
            L.append("| [`%s/`](%s/summary.md) | %s | - | %d | %d | %s | - |" % (
                name, name, j["profile"], j["runs"], j["flagged"], heads))
            continue
        if j.get("kind") == "fairness":
            heads = "; ".join("%s: A's share %.2f, control %.2f-%.2f" % (
                k, v["share_A"], v["control"][0], v["control"][1])
                for k, v in j["verdicts"].items()) or "-"
            L.append("| [`%s/`](%s/summary.md) | %s | per run | %d | %d | %s | - |" % (
                name, name, j["profile"], j["runs"], j["flagged"], heads))
            continue
        # [ratio, low, high] (older) or [ratio, low, high, coverage]
        heads = "; ".join("%s %s" % (k.replace(" cross-on ", ": "),
                                     fmt_ci(*v[:3]) + (fmt_cov(v[3]) if len(v) > 3 else ""))
                          for k, v in j["headline"].items())
        aa = j.get("aa")
        aa = "-" if aa is None else "%d of %d (all loads), %d of %d (per load)" % (
            sum(not v["inside"] for v in aa.values()), len(aa),
            *j.get("aa_cells_outside", (0, 0)))
        L.append("| [`%s/`](%s/summary.md) | %s | %s | %d | %d | %s | %s |" % (
            name, name, j["profile"], _feedback(os.path.dirname(h)), j["runs"],
            j["flagged"], heads, aa))
    with open(os.path.join(results, "README.md"), "w") as f:
        f.write("\n".join(L) + "\n")


def write_readme(d, prof):
    text = """# Matrix results: profile `{name}`

Produced by `make matrix` (scripts only; nothing here is edited by hand).

> {note}

- `summary.md`: start here.  Headline ratios, `bothecn / noecn` as their
  reference (what end-to-end ECN itself gains), and the A/A checks
  (`noecn+proxy / noecn`, `bothecn+proxy / bothecn`: the proxy where it has
  nothing to do; **outside** when the interval does not lie inside
  [0.97, 1.03]), then for each direction x cross-traffic setting a table of
  completion-time medians per load (rows) and configuration (columns) with
  95 % confidence intervals and the 95th percentile, the ratios
  `srvecn+proxy / bothecn` (the proxy against end-to-end ECN: 1 means as good)
  and `srvecn+proxy / noecn` (against no ECN: below 1 means the proxy helps)
  and the A/A ratios, SYN/SYN-ACK retransmissions per cell, and the per-flow
  ECN/loss analysis; then the stall causes per configuration (records
  with the breakdown, `scripts/analysis/stalls.py`) and queueing delay and
  loss (records with probes).
  Intervals that cannot reach 95 % with the runs there are (2 per cell)
  carry their real level in parentheses.  ⚑N marks cells with N runs flagged
  by the fidelity checks.
- `boxplot_<direction>_cross-<on|off>.png`: one panel per load, all
  configurations side by side (box: quartiles, line: median, whiskers:
  1.5 IQR).
- `timeseries.png`: delivered bytes over time of the median flow of each
  configuration (cell with the fewest parallel flows).
- `delay.png` (records with probes): ping RTT p95 per run and
  configuration, and the RED backlog over time of a representative run.
- `summary.csv` (one row per cell), `runs.csv` (one row per run),
  `ratios.csv` (one row per ratio in `summary.md`, with its interval and
  coverage), `headline.json` (the headline and A/A ratios).
- `runs/<id>.json`: the raw record of each run: parameters, kernel,
  accelerator, sysctls of every namespace, the transfer (per connection
  start, end, bytes, receiver progress), HTB/RED counters before and after
  (`tc -s -j`), proxy statistics before and after, TCP counter deltas,
  guest CPU times, the per-flow capture analysis on both sides of the proxy,
  fidelity checks, tool versions.
- `plan.json`: the profile and every run in execution order (seeded shuffle);
  `meta.json`: command, sessions, git commit; `sessions/NN/`: guest console
  and kernel log of each guest session, and `session.json` (its git commit
  and module hashes, written when it starts; sessions run before
  2026-11-26 23:30 have none).

Configurations: `noecn` neither endpoint ECN; `srvecn` only the server;
`bothecn` both; `+proxy` with the ECN proxy enabled on the proxy node.
Load: N parallel flows of the same size, or `series`, one connection after
another.  Fidelity: a run is flagged if the bottleneck was not the limit
(HTB byte counter over the run below the threshold of its rate) or a guest
CPU was saturated (idle share below the threshold), if the capture dropped
packets or if the transfer failed.
"""
    with open(os.path.join(d, "README.md"), "w") as f:
        f.write(text.format(name=prof["name"], note=prof.get("note", "")))
