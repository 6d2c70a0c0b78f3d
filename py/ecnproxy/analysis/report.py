# SPDX-License-Identifier: GPL-2.0
"""Tables and figures of one matrix results directory (scripts only).

report(RESULTS) reads plan.json, meta.json and runs/*.json and writes
runs.csv (one row per run), summary.csv (one row per cell), ratios.csv (one
row per ratio of two configurations), summary.md,
boxplot_DIRECTION_cross-on|off.png, timeseries.png, delay.png (records with
probes only), headline.json and README.md.  Returns the headline cells
(headline_cells(): headline.json's "cells").

Ratios of two configurations in one cell are Hodges-Lehmann ratios with
their exact distribution-free interval (stats.hl_ratio), of the runs'
completion times and of their transfer times alone (handshakes taken
out: handshake_cols); an interval that cannot reach 95 % is printed with
the level it has.  Every cell is the headline, each judged against its
goal by one rule (VERDICT_RULE, verdict()).  Across the loads of one
direction x cross setting the geometric mean of the per-load ratios
(stats.gm_ratio) is printed only where the cells agree
(stats.heterogeneity: Cochran's Q), always with the range of the cell
ratios; where they disagree, "cells disagree" stands in its place.
"""
import datetime
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
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from . import fidelity, provenance, stats  # noqa: E402
from .schema import CONFIG_FEEDBACK, CONFIG_ORDER, PROMPT, QUICKACK, load_order, validate  # noqa: E402
from .stalls import CAUSES  # noqa: E402

METRICS = ("ce", "ece", "cwr", "ect_share", "retrans", "fast_retrans", "dupacks",
           "stalls", "stall_time")
PROXY_KEYS = ("congestion_events", "segs_dropped", "segs_ect_set", "segs_ce_cleared",
              "segs_ece_set", "segs_cwr_set", "flows_proxied_ecn_responder",
              "flows_proxied_ecn_initiator", "flows_fallback", "syn_fallbacks",
              "fallback_cache_hits", "flows_seen", "rexmit_suppressed", "rexmit_answered",
              "acks_clamped")
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
CONF = stats.CONF
# The goals a ratio is judged against (at most the value, with cross
# traffic; docs/findings.md): the proxy within 5 % of end-to-end ECN, and
# proxied downloads 30 % faster than no ECN.
# Uploads within 5 % of end-to-end ECN with and without cross traffic
# (issue 40: every upload cell).
GOALS = {("srvecn+proxy", "bothecn"): {"cross": ("on", "off"),
                                       "at_most": {"download": 1.05, "upload": 1.05},
                                       "only": {"off": ("upload",)}},
         ("srvecn+proxy", "noecn"): {"cross": ("on",), "at_most": {"download": 0.70}}}
VERDICT_RULE = (
    "A goal \"at most g\" for a ratio (or a difference) is judged on its 95 %% "
    "interval, in every cell alike: **met** when the interval's upper end is at most g, "
    "**NOT met** when its lower end is above g, **undecided** otherwise, and undecided as "
    "well when the interval's level is below 95 %% (too few runs; the level is printed).  "
    "A figure pooled over the loads is printed, and judged by the same rule, only where "
    "the cells agree (Cochran's Q on the cells' log ratios or differences, each weighted "
    "by its own interval, p >= %.2f); where they disagree it reads \"cells disagree\" "
    "with the range of the cell values instead, and only the cells are judged." % stats.HET_ALPHA)
# a connection this slow to connect retransmitted its SYN or SYN-ACK (the
# initial RTO is 1 s)
SLOW_HANDSHAKE_S = 0.5
THESIS_FILE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "thesis.json")
PROBE_COLS = ("rtt_p50_ms", "rtt_p95_ms", "rtt_loss", "queue_p50_bytes", "queue_p95_bytes",
              "udp_rate_bps", "udp_loss")


def loads_of(df, direction, cross):
    """The loads one direction x cross setting has runs of (a profile may
    give cross traffic off fewer loads)."""
    return load_order(df[(df.direction == direction) & (df.cross == cross)].load)


def red_counters(snap, dev):
    for q in snap:
        if q.get("dev") == dev and q.get("kind") == "red":
            return q
    return {}


def proxy_events(after, before):
    """The proxy's congestion events between two stats readings: its
    congestion_events less the signals it withdrew before the sender could
    be shown a loss (signals_withdrawn, since 2026-12-02), which
    congestion_events counts too."""
    def d(k):
        return after.get(k, 0) - before.get(k, 0)
    return d("congestion_events") - d("signals_withdrawn")


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
           "flags": ",".join(fidelity.flags(rec)),
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
            row["proxy_" + k] = (proxy_events(a, b) if k == "congestion_events"
                                 else a[k] - b.get(k, 0))
    dev = rec["env"]["bottleneck_dev"]
    rb, ra = red_counters(rec["qdisc"]["before"], dev), red_counters(rec["qdisc"]["after"], dev)
    for k in ("marked", "early", "pdrop"):
        if k in ra:
            row["red_" + k] = ra[k] - rb.get(k, 0)
    row.update(probe_cols(rec))
    row.update(cause_cols(rec))
    row.update(handshake_cols(rec))
    row["wall_start"] = rec["env"].get("wall_start")
    row["host"] = (rec.get("origin") or {}).get("host")
    row["session_id"] = (rec.get("origin") or {}).get("session_id")
    row["host_load_per_cpu"] = provenance.host_load_per_cpu(rec)
    return row


def handshake_cols(rec):
    """The run's completion time split into set-up and transfer.  Each
    connection transfers from the end of its handshake (start + connect_s,
    the agent's time to connect) to its last byte; the run's transfer_s
    is the longest of its connections' transfers (parallel flows) or their
    sum (a series, one connection after another), setup_s the rest of its
    completion time (the handshakes; in a series also the gaps between
    connections; with parallel flows, what precedes the longest transfer,
    and a flow that connects late also changes the others' shares, so
    only load 1 and the series split exactly).  handshake_max_s: the
    slowest connect; slow_handshake: one took SLOW_HANDSHAKE_S or more.
    All None for records without connect_s (made before the agent
    measured it) or with a connection that never connected."""
    conns = rec["transfer"].get("conns") or []
    none = {"setup_s": None, "transfer_s": None, "handshake_max_s": None,
            "slow_handshake": None}
    if not conns or any(c.get("connect_s") is None or c.get("end") is None
                        or c.get("start") is None for c in conns):
        return none
    tr = [c["end"] - c["start"] - c["connect_s"] for c in conns]
    series = rec["params"]["load"] == "series"
    transfer = sum(tr) if series else max(tr)
    if transfer <= 0:
        return none
    hmax = max(c["connect_s"] for c in conns)
    return {"setup_s": round(rec["completion_s"] - transfer, 4),
            "transfer_s": round(transfer, 4), "handshake_max_s": hmax,
            "slow_handshake": hmax >= SLOW_HANDSHAKE_S}


def _epoch(iso):
    """An ISO 8601 time as seconds since the epoch; None if unreadable."""
    try:
        return datetime.datetime.fromisoformat(iso).timestamp()
    except (TypeError, ValueError):
        return None


def sessions_of(d, meta):
    """Every guest session of the directory, in order: sessions/NN/
    session.json (written by scripts/matrix when a session starts: git
    commit, dirty files, module hashes; kept if it is interrupted),
    completed by meta.json's entry of the same number (written when it
    ends: exit code, duration, runs left, host load)."""
    byn = {}
    for f in sorted(glob.glob(os.path.join(d, "sessions", "*", "session.json"))):
        try:
            with open(f) as fh:
                sess = json.load(fh)
        except ValueError:
            continue
        k = sess.get("n")
        if k is None:
            base = os.path.basename(os.path.dirname(f))
            if not base.isdigit():
                continue
            k = int(base)
        byn[k] = dict(sess, n=k)
    for sess in meta.get("sessions", []):
        if "n" in sess:
            byn.setdefault(sess["n"], {}).update(sess)
    return [byn[k] for k in sorted(byn)]


def session_of(sessions, wall_start):
    """The number of the session a run started in: the last session that
    started before it (None without a start time)."""
    t = _epoch(wall_start)
    if t is None:
        return None
    found = None
    for sess in sessions:
        st = _epoch(sess.get("start"))
        if st is not None and st <= t:
            found = sess["n"]
    return found


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
               # runs with a connection slow to connect (None: no connect_s)
               "slow_handshake_runs": (int(ok.slow_handshake.fillna(False).astype(bool).sum())
                                       if ok.slow_handshake.notna().all() and len(ok) else None),
               "median_transfer_s": ok.transfer_s.median() if ok.transfer_s.notna().all() else None,
               "median_setup_s": ok.setup_s.median() if ok.setup_s.notna().all() else None,
               "ko_builds": int(ok.ko_sha256.dropna().nunique()) if "ko_sha256" in ok else None,
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


# columns every used run of a group must have for a ratio (a transfer-only
# ratio of a cell where some records lack connect_s would be of other runs)
STRICT_COLS = ("transfer_s", "setup_s")


def group(df, direction, cross, config, load, col="completion_s"):
    g = df[df.use & (df.direction == direction) & (df.cross == cross)
           & (df.config == config) & (df.load == load)][col]
    if col in STRICT_COLS and g.isna().any():
        return []
    return list(g.dropna())


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


def pooled(look, col, direction, cross, num, den, loads, partial=False):
    """The pooled figure of num / den over `loads` and whether it may be
    shown: {"ratio": the geometric mean (ratios(); None if missing),
    "het": stats.heterogeneity() of the per-load ratios in look, "loads":
    the loads pooled}.  None where no load has the ratio (or, not
    partial, one lacks it)."""
    cells = [(l, look.get((col, direction, cross, l, num, den))) for l in loads]
    if not partial and any(r is None for _, r in cells):
        return None
    cells = [(l, r) for l, r in cells if r is not None]
    if not cells:
        return None
    return {"ratio": look.get((col, direction, cross, "all", num, den)),
            "het": stats.heterogeneity([r for _, r in cells]), "loads": [l for l, _ in cells]}


def goal_of(direction, cross, num, den):
    """The goal "at most g" of num / den in this setting (GOALS), or None."""
    g = GOALS.get((num, den))
    if not g or cross not in g["cross"] or \
            direction not in g.get("only", {}).get(cross, (direction,)):
        return None
    return g["at_most"].get(direction)


def verdict(r, goal):
    """VERDICT_RULE on a ratio (ratio, low, high, coverage): "met", "NOT
    met", "undecided"; None without a goal or a ratio."""
    if goal is None or not r:
        return None
    if r[3] < CONF - 1e-9:
        return "undecided"
    return stats.goal_verdict(r[1], r[2], at_most=goal)


def pooled_verdict(pool, goal):
    """The verdict of a pooled figure: only where its cells agree."""
    if goal is None or not pool:
        return None
    if pool["het"]["agree"] is not True or not pool["ratio"]:
        return "cells disagree" if pool["het"]["agree"] is False else None
    return verdict(pool["ratio"], goal)


def fmt_verdict(v):
    if not v:
        return ""
    return ": **%s**" % v if v in ("met", "NOT met") else ": %s" % v


def fmt_q(h):
    """'Q = 12.3, 3 df, p = 0.006' of a stats.heterogeneity() result."""
    if h.get("q") is None:
        return ""
    return "Q = %.1f, %d df, %s" % (h["q"], h["df"], "p < 0.001" if h["p"] < 0.001
                                    else "p = %.3f" % h["p"])


def fmt_pooled(pool, band=None, goal=None, num_fmt="%.2f"):
    """A pooled figure as the report prints it: with one cell, that cell;
    where the cells agree, the geometric mean [interval], the range of the
    cell ratios and Q (and the verdict against goal, or **outside** band);
    where they disagree, "cells disagree" and the range, no figure."""
    if not pool:
        return "-"
    h = pool["het"]
    if h["k"] < 2:
        return fmt_ratio(pool["ratio"], band) + fmt_verdict(verdict(pool["ratio"], goal))
    rng = "cells %s-%s" % (num_fmt % h["min"], num_fmt % h["max"])
    if h["agree"] is False:
        return "cells disagree: %s-%s (%s)" % (num_fmt % h["min"], num_fmt % h["max"], fmt_q(h))
    if h["agree"] is None or not pool["ratio"]:
        return "- (%s; a cell without an interval)" % rng
    r = pool["ratio"]
    out = fmt_ci(*r[:3]) + fmt_cov(r[3]) + " (%s; %s)" % (rng, fmt_q(h))
    if band and not inside(r, band):
        out += " **outside**"
    return out + fmt_verdict(verdict(r, goal))


def robust_top(groups, pad=0.08):
    """The top of a y axis that shows every box and whisker (1.5 IQR, as
    matplotlib draws them) of the groups with some room, but not an
    outlier beyond them: (top, clipped), clipped True if a value lies above
    it.  None for no values."""
    highs, top = [], None
    for x in groups:
        x = np.asarray([v for v in x if v is not None and np.isfinite(v)], float)
        if not x.size:
            continue
        q1, q3 = np.percentile(x, [25, 75])
        highs.append(x[x <= q3 + 1.5 * (q3 - q1)].max())
        top = x.max() if top is None else max(top, x.max())
    if not highs:
        return None
    hi = max(highs)
    lim = hi * (1 + pad) if hi > 0 else 1.0
    return (lim, True) if top > lim else (max(lim, top * (1 + pad / 4)), False)


def clip_outliers(ax, groups, top, xs=None):
    """Draw the values above `top` at the top edge (a triangle, labelled
    with the value), so that an outlier is marked, not lost or allowed to
    squash the boxes."""
    for k, x in enumerate(groups):
        over = sorted(v for v in x if v is not None and np.isfinite(v) and v > top)
        if not over:
            continue
        xpos = (xs[k] if xs else k + 1)
        ax.plot([xpos], [top], marker="^", color="#b2182b", ms=7, clip_on=False,
                zorder=5)
        ax.annotate(", ".join("%.3g" % v for v in over[-3:]) + (" ..." if len(over) > 3 else ""),
                    (xpos, top), xytext=(0, -11), textcoords="offset points",
                    ha="center", fontsize=6, color="#b2182b")


LOG_SPREAD = 8


def robust_axis(ax, groups):
    """The y axis of a box plot that an outlier cannot squash: from 0 to
    robust_top() with the runs above it marked at the edge; and where
    whole groups lie more than LOG_SPREAD times apart (a configuration
    whose every run hit an RTO), a log scale from the lowest value.
    -> "log" or "linear"."""
    rt = robust_top(groups)
    if not rt:
        ax.set_ylim(bottom=0)
        return "linear"
    low = min((v for x in groups for v in x if v is not None and np.isfinite(v)),
              default=0)
    if low > 0 and rt[0] / low > LOG_SPREAD:
        ax.set_yscale("log")
        ax.set_ylim(low / 1.25, rt[0])
        scale = "log"
    else:
        ax.set_ylim(0, rt[0])
        scale = "linear"
    if rt[1]:
        clip_outliers(ax, groups, rt[0])
    return scale


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
                scale = robust_axis(ax, data)
                ax.set_title(("series" if l == "series" else "%s parallel" % l) +
                             (" (log scale)" if scale == "log" else ""), fontsize=10)
                ax.grid(axis="y", alpha=0.3)
            axes[0][0].set_ylabel("completion time (s)")
            fig.suptitle("%s, cross traffic %s: completion time of a fixed volume "
                         "(lower is better; dots: runs; red triangle: runs above the "
                         "axis, their values below it)" % (direction, cross), fontsize=11)
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
        robust_axis(ax, data)
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


# another feedback mode beside the plan's, in one run (drop: PROFILE=parity;
# dupack-rwnd: PROFILE=parity-floor-ab): against end-to-end ECN, and the
# plan's mode against it; only in directories that have the configuration
def feedback_pairs(df):
    """[(pair, kind)]: for each srvecn+proxy+MODE configuration of the
    directory (schema.CONFIG_FEEDBACK), MODE against end-to-end ECN and
    the plan's mode against MODE, of kind "feedback MODE" ("feedback MODE,
    prompt client" for the PROMPT configurations)."""
    have = set(df.config)
    return [(p, "feedback " + mode + (", prompt client" if cfg in PROMPT else ""))
            for cfg, mode in CONFIG_FEEDBACK.items() if cfg in have
            for p in ((cfg, "bothecn"), ("srvecn+proxy", cfg))]


RATIO_COLUMNS = ["metric", "kind", "direction", "cross", "load", "num", "den", "ratio", "low",
                 "high", "coverage", "n_num", "n_den", "band", "inside", "goal", "verdict",
                 "cells_agree", "q", "q_df", "q_p", "cell_min", "cell_max"]


def ratio_rows(df):
    """Every ratio the report prints, one row each (ratios.csv), a lookup
    {(metric, direction, cross, load, num, den): ratio} (load "all": the
    geometric mean over the loads) and the pooled figures
    {(metric, direction, cross, num, den): pooled()}."""
    rows, look, pools = [], {}, {}
    pairs = [(p, "headline", None) for p in HEADLINE] + [(p, "A/A", AA_BAND) for p in AA]
    pairs += [(REFERENCE, "reference", None)]
    pairs += [(p, "quickack", None) for p in quickack_pairs(df)]
    pairs += [(p, kind, None) for p, kind in feedback_pairs(df)]
    for direction in sorted(df.direction.unique()):
        for cross in sorted(df.cross.unique()):
            loads = loads_of(df, direction, cross)
            if not loads:
                continue
            todo = [("completion_s", p, kind, band, False) for p, kind, band in pairs]
            todo += [("transfer_s", p, kind, band, False) for p, kind, band in pairs]
            todo += [(col, DELAY_PAIR, "delay", DELAY_BAND, True)
                     for col in ("rtt_p50_ms", "rtt_p95_ms")]
            todo += [("udp_loss", UDP_PAIR, "udp loss", None, True)]
            for col, (num, den), kind, band, partial in todo:
                goal = goal_of(direction, cross, num, den) if col in (
                    "completion_s", "transfer_s") else None
                for l in loads + ["all"]:
                    r = ratios(df, direction, cross, num, den, loads if l == "all" else [l],
                               col, partial)
                    look[(col, direction, cross, l, num, den)] = r
                    pool = None
                    if l == "all":
                        pool = pooled(look, col, direction, cross, num, den, loads, partial)
                        pools[(col, direction, cross, num, den)] = pool
                    if r is None:
                        continue
                    sel = loads if l == "all" else [l]
                    h = pool["het"] if pool else {}
                    multi = h.get("k", 1) >= 2
                    rows.append({
                        "metric": col, "kind": kind, "direction": direction, "cross": cross,
                        "load": l, "num": num, "den": den, "ratio": round(r[0], 4),
                        "low": round(r[1], 4), "high": round(r[2], 4),
                        "coverage": round(r[3], 4),
                        "n_num": sum(len(group(df, direction, cross, num, x, col)) for x in sel),
                        "n_den": sum(len(group(df, direction, cross, den, x, col)) for x in sel),
                        "band": "" if band is None else "%.2f-%.2f" % band,
                        "inside": "" if band is None else int(inside(r, band)),
                        "goal": "" if goal is None else goal,
                        "verdict": (pooled_verdict(pool, goal) if l == "all" else
                                    verdict(r, goal)) or "",
                        "cells_agree": "" if not multi or h["agree"] is None else int(h["agree"]),
                        "q": round(h["q"], 4) if multi and h["q"] is not None else "",
                        "q_df": h["df"] if multi else "",
                        "q_p": float("%.3g" % h["p"]) if multi and h["p"] is not None else "",
                        "cell_min": round(h["min"], 4) if multi else "",
                        "cell_max": round(h["max"], 4) if multi else ""})
    return rows, look, pools


def causes_section(w, df, configs):
    """The "Stall causes" section of summary.md: per direction x cross
    traffic, per configuration, the stalls of each cause summed over the
    runs (all loads; per load: summary.csv)."""
    w("## Stall causes")
    w("")
    rs = df[df.use & df.has_causes]
    if rs.empty:
        w("No record in this directory has the stall causes (records made before "
          "`py/ecnproxy/analysis/stalls.py` existed); the stall counts above are all "
          "there is.")
        w("")
        return
    w("Each stall (no delivery for more than max(2 x RTT, 200 ms), as counted above) "
      "classified by the packet that ends it, after TAPO (Zhou et al., CoNEXT 2015), "
      "plus the causes only this testbed shows (`py/ecnproxy/analysis/stalls.py` defines "
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


def delay_section(w, df, configs, pools, nrec):
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
                fmt_pooled(pools.get(("rtt_p50_ms", direction, cross, num, den)), DELAY_BAND),
                fmt_pooled(pools.get(("rtt_p95_ms", direction, cross, num, den)), DELAY_BAND)))
            num, den = UDP_PAIR
            a = sub[sub.config == num].udp_loss.dropna()
            b = sub[sub.config == den].udp_loss.dropna()
            if len(a) and len(b):
                r = pools.get(("udp_loss", direction, cross, num, den))
                w("- UDP loss, %s vs %s: medians %.2f %% vs %.2f %%; ratio %s." % (
                    num, den, 100 * a.median(), 100 * b.median(),
                    fmt_pooled(r) if r and r["ratio"] else "- (a run without loss)"))
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
    per = [stats.gm_shift([x], [y], CONF) for x, y in zip(a, b)]
    het = stats.heterogeneity(per, log=False)
    if het["k"] >= 2 and het["agree"] is False:
        diff = "per load %s (cells disagree: %s; no mean)" % (
            ", ".join("%s: %.1f [%.1f, %.1f]%s" % (l, *r[:3], fmt_cov(r[3]))
                      for l, r in zip(loads, per)), fmt_q(het))
        judged = "per load " + ", ".join(verdict(r, 0) for r in per)
    else:
        diff = "%.1f [%.1f, %.1f]" % (v, lo, hi) + fmt_cov(cov) + (
            " (per load %.1f to %.1f; %s)" % (het["min"], het["max"], fmt_q(het))
            if het["k"] >= 2 else "")
        judged = verdict((v, lo, hi, cov), 0)
    w("- TCP loss (the data sender's retransmitted segments per 1000 original data "
      "segments, Tcp.RetransSegs / TcpExt.TCPOrigDataSent), %s vs %s: medians %.1f vs "
      "%.1f; difference %s per 1000 (mean over the loads of the per-load "
      "Hodges-Lehmann shifts, where they agree); fewer than %s: %s." % (
          num, den, stats.median([x for g in a for x in g]),
          stats.median([x for g in b for x in g]), diff, den, judged))


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


def fmt_transfer(direction, cross, load, num, den, look, pools, band=None):
    """A transfer-only ratio of the section tables: n/a where the cell has
    the completion ratio but its records lack the handshake time."""
    if load == "all":
        pool = pools.get(("transfer_s", direction, cross, num, den))
        if pool:
            return fmt_pooled(pool, band)
        return "n/a" if pools.get(("completion_s", direction, cross, num, den)) else "-"
    r = look.get(("transfer_s", direction, cross, load, num, den))
    if r:
        return fmt_ratio(r, band)
    return "n/a" if look.get(("completion_s", direction, cross, load, num, den)) else "-"


def cell_row(cells, direction, cross, load, config):
    """The summary.csv row of one cell, or None."""
    r = cells[(cells.direction == direction) & (cells.cross == cross)
              & (cells.load == load) & (cells.config == config)]
    return None if r.empty else r.iloc[0]


def _slow(row):
    """[runs with a slow handshake, runs] of a cell row; None without
    the handshake time."""
    if row is None or row.slow_handshake_runs is None or pd.isna(row.slow_handshake_runs):
        return None
    return [int(row.slow_handshake_runs), int(row.n_ok)]


def _r4(r):
    return None if r is None else [round(float(x), 4) for x in r]


def pool_json(pool, goal=None):
    """A pooled figure for headline.json: the ratio only where the cells
    agree (null where they disagree), with the heterogeneity test."""
    if not pool:
        return None
    h = pool["het"]
    show = h["agree"] is True and pool["ratio"]
    return {"ratio": _r4(pool["ratio"]) if show else None, "cells_agree": h["agree"],
            "q": None if h["q"] is None else round(h["q"], 4), "df": h["df"],
            "p": None if h["p"] is None else float("%.3g" % h["p"]),
            "cell_min": round(h["min"], 4), "cell_max": round(h["max"], 4),
            "loads": pool["loads"], "goal": goal, "verdict": pooled_verdict(pool, goal)}


def headline_cells(df, cells, look, pools):
    """The headline: for every direction x cross setting and HEADLINE
    pair, each cell's ratio of completion times and of transfer times,
    their verdicts and the cell's slow handshakes, and the pooled figures
    -> {"DIRECTION cross-CROSS NUM/DEN": {...}} (headline.json's
    "cells")."""
    out = {}
    for cross in sorted(df.cross.unique(), key=lambda c: c != "on"):
        for direction in sorted(df.direction.unique()):
            loads = loads_of(df, direction, cross)
            for num, den in HEADLINE:
                goal = goal_of(direction, cross, num, den)
                cl = {}
                for l in loads:
                    r = look.get(("completion_s", direction, cross, l, num, den))
                    if r is None:
                        continue
                    t = look.get(("transfer_s", direction, cross, l, num, den))
                    cl[l] = {"ratio": _r4(r), "verdict": verdict(r, goal),
                             "transfer": _r4(t), "transfer_verdict": verdict(t, goal),
                             "slow_handshakes": {
                                 c: _slow(cell_row(cells, direction, cross, l, c))
                                 for c in (num, den)}}
                if not cl:
                    continue
                out["%s cross-%s %s/%s" % (direction, cross, num, den)] = {
                    "direction": direction, "cross": cross, "num": num, "den": den,
                    "goal": goal, "cells": cl,
                    "pooled": pool_json(pools.get(("completion_s", direction, cross, num, den)),
                                        goal),
                    "transfer_pooled": pool_json(pools.get(
                        ("transfer_s", direction, cross, num, den)), goal)}
    return out


def fmt_head_cell(r, v):
    """A headline cell: the ratio [interval] and its verdict; n/a if none."""
    if r is None:
        return "n/a"
    return fmt_ratio(r) + fmt_verdict(v)


def fmt_head_pool(pj):
    """A headline pooled figure from pool_json()."""
    if not pj:
        return "n/a"
    rng = "cells %.2f-%.2f" % (pj["cell_min"], pj["cell_max"])
    if pj["cells_agree"] is False:
        return "cells disagree: %.2f-%.2f (%s)" % (pj["cell_min"], pj["cell_max"], fmt_q(pj))
    if not pj["ratio"]:
        return "- (%s)" % rng
    return "%s (%s; %s)%s" % (fmt_ci(*pj["ratio"][:3]) + fmt_cov(pj["ratio"][3]), rng,
                              fmt_q(pj), fmt_verdict(pj["verdict"]))


def headline_section(w, df, heads):
    """The "Headline: every cell" section of summary.md."""
    w("## Headline: every cell")
    w("")
    w("**Verdict rule.**  " + VERDICT_RULE)
    w("")
    goals = []
    for (num, den), g in GOALS.items():
        for v in sorted(set(g["at_most"].values())):
            ds = [x for x, y in g["at_most"].items() if y == v]
            for c in g["cross"]:
                dc = [x for x in ds if x in g.get("only", {}).get(c, ds)]
                if dc:
                    goals.append("`%s / %s` at most %.2f with cross traffic %s (%s)" % (
                        num, den, v, c, " and ".join("%ss" % x for x in dc)))
    w("Goals: " + "; ".join(goals) + ".  Other cells are shown, not judged.")
    w("")
    w("Each cell (one direction, cross-traffic setting and load): the Hodges-Lehmann "
      "ratio of the runs' completion times with its exact interval, and beside it the "
      "same ratio of their transfer times alone (*transfer only*: each connection from "
      "the end of its handshake, the agent's `connect_s`, to its last byte; a run's is "
      "its longest connection's, a series' the sum of its connections'; n/a for "
      "records without `connect_s`).  Slow handshakes: runs with a connection that took "
      "%.1f s or more to connect (a retransmitted SYN or SYN-ACK: the first "
      "retransmission waits 1 s, the second 2 s more), of each configuration's runs.  "
      "Where the completion ratio differs from the transfer-only one, the handshakes "
      "make the difference, not the transfers (exactly so at load 1 and in the series; "
      "with parallel flows a late flow also changes the others' shares)." %
      SLOW_HANDSHAKE_S)
    w("")
    if not heads:
        w("No cell has runs of `srvecn+proxy` with `bothecn` or `noecn`.")
        w("")
        return
    groups = []
    for k, h in heads.items():
        key = (h["direction"], h["cross"])
        if key not in groups:
            groups.append(key)
    counts = {"completion": {}, "transfer": {}}
    for direction, cross in groups:
        hs = [(p, heads.get("%s cross-%s %s/%s" % (direction, cross, *p))) for p in HEADLINE]
        hs = [(p, h) for p, h in hs if h]
        confs = []
        for (num, den), _ in hs:
            for c in (num, den):
                if c not in confs:
                    confs.append(c)
        loads = loads_of(df, direction, cross)
        w("### %s, cross traffic %s" % (direction, cross))
        w("")
        cols = []
        for (num, den), h in hs:
            cols += ["%s / %s%s" % (num, den, " (goal at most %.2f)" % h["goal"]
                                    if h["goal"] is not None else ""), "transfer only"]
        cols.append("slow handshakes (%s)" % ", ".join(confs))
        w("| load | " + " | ".join(cols) + " |")
        w("| --- |" + " --- |" * len(cols))
        for l in loads:
            vals, slow = [], {}
            for _, h in hs:
                c = h["cells"].get(l)
                if c is None:
                    vals += ["-", "-"]
                    continue
                vals += [fmt_head_cell(c["ratio"], c["verdict"]),
                         fmt_head_cell(c["transfer"], c["transfer_verdict"])]
                slow.update(c["slow_handshakes"])
                if h["goal"] is not None:
                    for kind, v in (("completion", c["verdict"]),
                                    ("transfer", c["transfer_verdict"])):
                        if v:
                            counts[kind][v] = counts[kind].get(v, 0) + 1
            vals.append(", ".join("%d/%d" % tuple(slow[c]) if slow.get(c) else "n/a"
                                  for c in confs))
            w("| %s | %s |" % (l, " | ".join(vals)))
        if len(loads) > 1:
            vals = []
            for _, h in hs:
                vals += [fmt_head_pool(h["pooled"]), fmt_head_pool(h["transfer_pooled"])]
            sums = []
            for c in confs:
                # each cell once (a configuration may be in both pairs)
                seen = {}
                for (_, h) in hs:
                    for l, cc in h["cells"].items():
                        if c in cc["slow_handshakes"]:
                            seen[l] = cc["slow_handshakes"][c]
                xs = list(seen.values())
                sums.append("n/a" if not xs or any(x is None for x in xs) else
                            "%d/%d" % (sum(x[0] for x in xs), sum(x[1] for x in xs)))
            vals.append(", ".join(sums))
            w("| over the loads | %s |" % " | ".join(vals))
        w("")
    for kind in ("completion", "transfer"):
        c = counts[kind]
        if c:
            counts[kind] = ", ".join("%d %s" % (c[v], v) for v in ("met", "NOT met", "undecided")
                                     if c.get(v))
    if counts["completion"]:
        w("Cells judged against a goal: completion times %s; transfer only %s." % (
            counts["completion"], counts["transfer"] or "none (no handshake times)"))
        w("")


def trust_paragraph(w, cells, has_transfer=True):
    """What the simulations (coverage.json) say about the intervals under
    the testbed's mixtures, at the number of runs nearest this directory's."""
    cov = stats.COVERAGE
    if not cov or not cov.get("mixtures") or cells.empty:
        return
    hc = cells[cells.config.isin({c for p in HEADLINE for c in p})]
    n = int(hc.n_ok.median()) if len(hc) else int(cells.n_ok.median())
    mixes = cov["mixtures"]
    ns = sorted(int(k) for k in next(iter(mixes.values())) if k.isdigit())
    nn = min(ns, key=lambda k: (abs(k - n), k))
    w("How far the intervals hold (simulated, seeded: `py/ecnproxy/analysis/coverage.json`, "
      "made by `scripts/ecnproxy stats --coverage --write`, %d replicates "
      "each).  A cell's ratio interval is exact when one configuration's runs are the "
      "other's scaled by a factor, whatever their shape, two modes included, and a "
      "median's interval is exact for any shape.  Where the two configurations differ by "
      "more than a factor (a slow handshake adds seconds instead of scaling; spreads "
      "differ), with n = %d runs of each configuration (this directory's cells have %d), "
      "the ratio interval covers the ratio it estimates (the median ratio of a run of one "
      "configuration to a run of the other) and the ratio of the transfers alone in these "
      "shares of the simulations:" % (cov["reps"], nn, n))
    w("")
    w("| simulated cell | covers what it estimates | covers the transfer ratio | "
      "labelled | median interval covers (labelled) |")
    w("| --- | --- | --- | --- | --- |")
    short = []
    for name, rows in mixes.items():
        r = rows[str(nn)]
        # short of the label by more than 2 Monte-Carlo SDs
        sd = math.sqrt(r["hl_claimed"] * (1 - r["hl_claimed"]) / cov["reps"])
        if r["hl"] < r["hl_claimed"] - 2 * sd:
            short.append(100 * (r["hl_claimed"] - r["hl"]))
        w("| %s | %.1f %% | %.1f %% | %.1f %% | %.1f %% (%.1f %%) |" % (
            rows["note"], 100 * r["hl"], 100 * r["hl_transfer"], 100 * r["hl_claimed"],
            100 * r["med"], 100 * r["med_claimed"]))
    w("")
    if short:
        w("So where the two configurations' runs differ by more than a factor (slow "
          "handshakes drawn in different shares, or different spreads), a ratio interval "
          "covers up to %.1f points less than its label.  Where it is the handshakes, the "
          "interval also measures them as much as the transfers: read the transfer-only "
          "ratio, which the handshakes do not enter%s." % (
              max(short), "" if has_transfer else " (n/a here: these records lack the "
              "handshake time)"))
        w("")


def thesis():
    """The thesis the report compares with (THESIS_FILE)."""
    with open(THESIS_FILE) as f:
        return json.load(f)


def thesis_paragraph(w, feedback):
    t = thesis()
    f = t["findings"]
    w("For comparison, the thesis (%s; %s runs per cell, %s flows with cross traffic, "
      "proxy feedback `%s`): with cross traffic, %s; %s; without cross traffic %s.  This "
      "run's proxy feedback mode: `%s`." % (
          t["citation"], t["runs_per_cell"], t["flows_cross_on"], t["feedback"],
          f["download_cross_on"], f["upload_cross_on"], f["cross_off"], feedback))
    w("")


def builds_paragraph(w, df, cells, sessions):
    """Which build of ecn_proxy.ko made which runs (by the session they
    started in): a warning where there is more than one."""
    if not sessions:
        return
    builds = {}
    for sess in sessions:
        builds.setdefault(sess.get("ecn_proxy_ko_sha256"), []).append(sess["n"])
    unknown = int(df.session.isna().sum())
    if len(builds) > 1:
        parts = []
        for sha, ns in builds.items():
            parts.append("`%s`: %d runs (session%s %s)" % (
                (sha or "?")[:16], int((df.ko_sha256 == sha).sum()) if sha else
                int(df.session.isin(ns).sum()), "s" if len(ns) > 1 else "",
                ", ".join(map(str, ns))))
        mixed = int((cells.ko_builds > 1).sum()) if "ko_builds" in cells else 0
        w("**The runs were made with %d builds of `ecn_proxy.ko`** (its sha256 per "
          "session, each run counted in the session it started in, by the records' start "
          "times): %s; %d of %d cells mix builds (per run: `runs.csv`, columns `session` "
          "and `ko_sha256`; per cell: `summary.csv`, `ko_builds`)." % (
              len(builds), "; ".join(parts), mixed, len(cells)))
    if unknown:
        w("%d runs could not be placed in a session (no start time, or before the first "
          "session's)." % unknown)


def session_lines(w, sessions, df):
    """"How this was made": every session (sessions_of()), its git commit
    and the sha256 of each module it loaded, the runs it did."""
    if not sessions:
        w("- sessions: none recorded (no `sessions/*/session.json` and none in `meta.json`)")
        return
    for i, sess in enumerate(sessions):
        nxt = sessions[i + 1] if i + 1 < len(sessions) else None
        after = sess.get("pending_after")
        if after is None and nxt is not None:
            after = nxt.get("pending_before")
        done = (sess["pending_before"] - after
                if sess.get("pending_before") is not None and after is not None else None)
        by_start = int((df.session == sess["n"]).sum())
        if done is None:
            runs = "%d runs (by the records' start times)" % by_start
        else:
            runs = "%d runs done%s" % (done, "" if done == by_start else
                                       " (%d records start in it)" % by_start)
        end = ("%s s, exit %s" % (sess["seconds"], sess["exit_code"])
               if sess.get("exit_code") is not None else
               "interrupted (no end recorded; the next session resumed)" if nxt
               else "no end recorded")
        mods = ", ".join("%s sha256 %s" % (m, sess.get(k) or "?") for m, k in (
            ("ecn_proxy.ko", "ecn_proxy_ko_sha256"), ("impair.ko", "impair_ko_sha256"),
            ("tcpfwd.ko", "tcpfwd_ko_sha256")) if k in sess)
        if sess.get("boot_failures"):
            end += " after %d failed boot%s (vm-run booted again: sessions/%02d/boot-failures)" % (
                sess["boot_failures"], "s" if sess["boot_failures"] > 1 else "", sess["n"])
        w("- session %d: %s, %s, %s; git %s%s; %s%s" % (
            sess["n"], sess.get("start", "?"), end, runs, sess.get("git_commit") or "?",
            " (uncommitted changes under kmod/, vm-testbed/, scripts/ or py/)"
            if sess.get("git_dirty") else "", mods or "module hashes not recorded",
            "; host load average %.1f on %d CPUs, up to %d QEMU guests at once (other VMs "
            "slow a TCG guest without showing in its CPU counters)" % (
                sess["host_load_mean"], sess.get("host_cpus") or 0, sess["host_qemu_max"])
            if sess.get("host_load_mean") is not None else ""))


def session_json(sessions, df):
    """The sessions for headline.json: commit and module hashes in full."""
    keep = ("n", "start", "git_commit", "git_dirty", "ecn_proxy_ko_sha256", "impair_ko_sha256",
            "tcpfwd_ko_sha256", "exit_code", "pending_before", "pending_after", "boot_failures")
    return [dict({k: sess.get(k) for k in keep if k in sess},
                 runs_started=int((df.session == sess["n"]).sum())) for sess in sessions]


def report(d, out=None, select=None):
    """Analyse the matrix directory D and write its report into OUT
    (default D).  SELECT, if given, keeps the records it returns true for
    (host/analyze.py: one report per added delay of PROFILE=parity)."""
    out = out or d
    with open(os.path.join(d, "plan.json")) as f:
        plan = json.load(f)
    meta = {}
    if os.path.exists(os.path.join(d, "meta.json")):
        with open(os.path.join(d, "meta.json")) as f:
            meta = json.load(f)
    prof = plan["profile"]
    recs, bad = load_runs(d)
    if select:
        recs = [r for r in recs if select(r)]
    if not recs:
        raise SystemExit("report: no valid run records in %s" % d)
    df = pd.DataFrame([run_row(r) for r in recs]).sort_values("plan_index")
    for k in PROBE_COLS + ("snd_retrans_pm", "setup_s", "transfer_s", "handshake_max_s") + \
            tuple("sc_%s_%s" % (c, x) for c in CAUSES for x in "ns"):
        df[k] = pd.to_numeric(df[k])
    sessions = sessions_of(d, meta)
    ko = {sess["n"]: sess.get("ecn_proxy_ko_sha256") for sess in sessions}
    # the session a run was made in: named by its record (origin), else
    # the last to start before it (one guest at a time)
    by_id = {sess["id"]: sess["n"] for sess in sessions if sess.get("id")}
    df["session"] = pd.array([by_id.get(i) or session_of(sessions, x)
                              for i, x in zip(df.session_id, df.wall_start)], dtype="Int64")
    df["ko_sha256"] = [ko.get(x) if not pd.isna(x) else None for x in df.session]
    df.to_csv(os.path.join(out, "runs.csv"), index=False)
    cells = cell_table(df)
    configs = [c for c in CONFIG_ORDER if c in set(df.config)]
    loads = load_order(df.load)
    cells["config"] = pd.Categorical(cells.config, configs, ordered=True)
    cells["load"] = pd.Categorical(cells.load, loads, ordered=True)
    cells = cells.sort_values(["direction", "cross", "load", "config"])
    cells.to_csv(os.path.join(out, "summary.csv"), index=False)
    rrows, look, pools = ratio_rows(df)
    pd.DataFrame(rrows, columns=RATIO_COLUMNS).to_csv(os.path.join(out, "ratios.csv"), index=False)

    heads = headline_cells(df, cells, look, pools)
    aa = {}
    for direction in sorted(df.direction.unique()):
        for cross in sorted(df.cross.unique()):
            for num, den in AA:
                pool = pools.get(("completion_s", direction, cross, num, den))
                if pool and pool["ratio"]:
                    aa["%s cross-%s %s/%s" % (direction, cross, num, den)] = pool
    aa_cells = [(k, r) for k, r in look.items()
                if k[0] == "completion_s" and k[3] != "all" and (k[4], k[5]) in AA and r]
    aa_out = sum(not inside(r, AA_BAND) for _, r in aa_cells)

    figs = boxplots(df, out, prof.get("note", ""), configs)
    ts = timeseries(recs, df, out, configs)
    dl = delay_plot(recs, df, out, configs)

    # a record of the plan's feedback mode (not one set per run)
    r0 = next((r for r in recs if r["params"]["config"] not in CONFIG_FEEDBACK), recs[0])
    L = []
    w = L.append
    w("# Throughput matrix: profile `%s`" % prof["name"])
    w("")
    w("> **%s**" % prof.get("note", ""))
    w("")
    w("Generated by `scripts/ecnproxy analyze` from `runs/*.json`; do not edit.")
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
      "loads (`all`): the geometric mean of the per-load ratios, "
      "with a normal interval from the per-load intervals' widths whose coverage was "
      "checked by simulation (py/ecnproxy/analysis/stats.py: at least 95 % with 5 loads "
      "from 2 runs per cell up; a simulated level below 95 % is printed), shown only "
      "where the per-load ratios agree and always with their range.")
    w("")
    headline_section(w, df, heads)
    ref = [(direction, pools.get(("completion_s", direction, "on") + REFERENCE))
           for direction in ("download", "upload")]
    ref = [(direction, r) for direction, r in ref if r]
    if ref:
        w("For reference, end-to-end ECN against no ECN over the same loads "
          "(`%s / %s`: what ECN itself gains on this testbed, and so what "
          "`srvecn+proxy / noecn` is when the proxy is exactly as good as end-to-end "
          "ECN): %s."
          % (REFERENCE + ("; ".join("%s %s" % (direction, fmt_pooled(r))
                                    for direction, r in ref),)))
        w("")
    trust_paragraph(w, cells, bool(df.transfer_s.notna().any()))
    thesis_paragraph(w, plan.get("feedback") or r0["sysctls"]["proxy"].get(
        "net/ecn_proxy/feedback"))
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
                    fmt_pooled(pools.get(("completion_s", direction, cross) + p), AA_BAND)
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
      "than %.0f %% of the run; `bottleneck_underdelivered`: the bottleneck's queue held packets "
      "for at least %.0f %% of the transfer, yet the link carried less than "
      "%.0f %% of its rate, so the guest, not the link, was the limit (derived by the analysis "
      "from the record: analysis/fidelity.py); `capture_drops`; `transfer_failed`).  "
      "Flagged runs are counted in the tables like the others; `scripts/ecnproxy redo "
      "RESULTS --flag F` makes them again.  Utilisation "
      "(HTB bytes during the run over the link rate, cross traffic included) is "
      "reported, not judged: slow start, handshakes and RTOs lower it." % (
          len(df), int(df.ok.sum()), int(df.timeout.sum()), nflag,
          100 * prof["fidelity"]["min_cpu_idle"], 100 * fidelity.UNDER_BACKLOG,
          100 * fidelity.UNDER_UTIL))
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
    hs = df[df.slow_handshake.notna()]
    if len(hs):
        w("%d of %d runs with the handshake time had a connection that took %.1f s or more "
          "to connect (the headline's slow handshakes); %d of %d records have no handshake "
          "time (older records: their transfer-only ratios are n/a)." % (
              int(hs.slow_handshake.astype(bool).sum()), len(hs), SLOW_HANDSHAKE_S,
              len(df) - len(hs), len(df)))
    else:
        w("No record has the handshake time (`connect_s`: records made before the agent "
          "measured it): the transfer-only ratios are n/a.")
    builds_paragraph(w, df, cells, sessions)
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
            w("Ratios (per load: Hodges-Lehmann; all: geometric mean over the loads where "
              "they agree, with their range, else \"cells disagree\"); "
              "A/A **outside**: not inside [%.2f, %.2f]." % AA_BAND)
            w("")
            w("| load | " + " | ".join("%s / %s%s" % (n, m, " (A/A)" if (n, m) in AA else "")
                                       for n, m in pairs) + " |")
            w("| --- |" + " --- |" * len(pairs))
            for l in sec_loads + ["all"]:
                w("| %s | %s |" % (l, " | ".join(
                    (fmt_pooled(pools.get(("completion_s", direction, cross, n, m)),
                                AA_BAND if (n, m) in AA else None) if l == "all" else
                     fmt_ratio(look.get(("completion_s", direction, cross, l, n, m)),
                               AA_BAND if (n, m) in AA else None)) for n, m in pairs)))
            w("")
            w("Transfer only (each run's time without its handshakes, as in the headline; "
              "n/a: records without the handshake time).")
            w("")
            w("| load | " + " | ".join("%s / %s" % p for p in pairs) + " |")
            w("| --- |" + " --- |" * len(pairs))
            for l in sec_loads + ["all"]:
                w("| %s | %s |" % (l, " | ".join(
                    fmt_transfer(direction, cross, l, n, m, look, pools,
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
    delay_section(w, df, configs, pools, len(df))
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
    w("- guest kernel %s, accelerator %s, %d guest CPUs; bottleneck %s, RED per the thesis "
      "(%s), cross traffic %s UDP" % (r0["env"]["kernel"], r0["env"]["accel"],
                                      r0["env"]["guest_cpus"], r0["env"]["rate_low"],
                                      thesis()["red"], prof["cross_rate"]))
    session_lines(w, sessions, df)
    w(provenance.line(recs, meta))
    redone = glob.glob(os.path.join(d, "redone", "*.json"))
    if redone:
        w("- %d record%s made again, the first kept in `redone/` (`scripts/ecnproxy redo`: "
          "runs made on a busy host, or named)" % (len(redone), "" if len(redone) == 1 else "s"))
    w("- tools: " + "; ".join("%s: %s" % (k, v if isinstance(v, str) else " ".join(v))
                              for k, v in r0["versions"].items()))
    w("")
    with open(os.path.join(out, "summary.md"), "w") as f:
        f.write("\n".join(L))
    write_readme(out, prof)
    with open(os.path.join(out, "headline.json"), "w") as f:
        json.dump({"profile": prof["name"], "runs": len(df), "flagged": nflag,
                   "verdict_rule": VERDICT_RULE,
                   "goals": {"%s/%s" % k: v for k, v in GOALS.items()},
                   # per direction x cross x pair: every cell (ratio, low, high,
                   # coverage; the transfer-only ratio; verdicts; slow handshakes)
                   # and the pooled figure, whose ratio is null where the cells
                   # disagree
                   "cells": heads,
                   # the pooled headline [ratio, low, high, coverage], cross traffic
                   # on, only where its cells agree (older readers' key)
                   "headline": {k: h["pooled"]["ratio"] for k, h in heads.items()
                                if h["cross"] == "on" and h["pooled"]
                                and h["pooled"]["ratio"]},
                   "aa": {k: {"ratio": (_r4(v["ratio"]) if v["het"]["agree"] is not False
                                        else None), "band": list(AA_BAND),
                              "inside": bool(v["het"]["agree"] is not False
                                             and inside(v["ratio"], AA_BAND)),
                              "cells_agree": v["het"]["agree"],
                              "cell_min": round(v["het"]["min"], 4),
                              "cell_max": round(v["het"]["max"], 4)} for k, v in aa.items()},
                   "aa_cells_outside": [aa_out, len(aa_cells)],
                   "sessions": session_json(sessions, df)},
                  f, indent=1)
    return heads


def _feedback(d):
    """The proxy's feedback mode the runs of result directory D recorded."""
    for r in sorted(glob.glob(os.path.join(d, "runs", "*.json"))):
        with open(r) as f:
            rec = json.load(f)
        # not a mode set per run (srvecn+proxy+drop, +rwnd)
        if rec.get("params", {}).get("config") in CONFIG_FEEDBACK:
            continue
        fb = rec.get("sysctls", {}).get("proxy", {}).get("net/ecn_proxy/feedback")
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
         "rewritten by `scripts/ecnproxy analyze`.  Start with a directory's",
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
        if isinstance(j.get("cells"), dict):
            # every cell: the pooled figure only where they agree
            heads = "; ".join(("%s %s" % (k.replace(" cross-on ", ": "), fmt_head_pool(
                v["pooled"]) if len(v["cells"]) > 1 else fmt_ratio(next(iter(
                    v["cells"].values()))["ratio"]))).replace("**", "")
                for k, v in j["cells"].items() if v["cross"] == "on")
        else:
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

- `summary.md`: start here.  The headline is every cell (direction x cross
  traffic x load): the ratios `srvecn+proxy / bothecn` and
  `srvecn+proxy / noecn` of completion times and of transfer times alone
  (handshakes taken out), each judged by the one verdict rule the
  summary states, with the runs that had a slow handshake; a figure
  pooled over the loads only where the cells agree (Cochran's Q), with
  the range of the cell ratios; how far the intervals hold under the
  testbed's mixtures (simulated: `py/ecnproxy/analysis/coverage.json`);
  `bothecn / noecn` as the reference (what end-to-end ECN itself gains)
  and the thesis (`py/ecnproxy/analysis/thesis.json`); the A/A checks
  (`noecn+proxy / noecn`, `bothecn+proxy / bothecn`: the proxy where it has
  nothing to do; **outside** when the interval does not lie inside
  [0.97, 1.03]), then for each direction x cross-traffic setting a table of
  completion-time medians per load (rows) and configuration (columns) with
  95 % confidence intervals and the 95th percentile, the ratios
  `srvecn+proxy / bothecn` (the proxy against end-to-end ECN: 1 means as good)
  and `srvecn+proxy / noecn` (against no ECN: below 1 means the proxy helps)
  and the A/A ratios, SYN/SYN-ACK retransmissions per cell, and the per-flow
  ECN/loss analysis; then the stall causes per configuration (records
  with the breakdown, `py/ecnproxy/analysis/stalls.py`) and queueing delay and
  loss (records with probes).
  Intervals that cannot reach 95 % with the runs there are (2 per cell)
  carry their real level in parentheses.  ⚑N marks cells with N runs flagged
  by the fidelity checks.
- `boxplot_<direction>_cross-<on|off>.png`: one panel per load, all
  configurations side by side (box: quartiles, line: median, whiskers:
  1.5 IQR); the axis ends above the highest whisker, runs beyond it are
  marked at the edge with their values (red triangle), and a panel whose
  configurations lie more than 8 times apart has a log scale.
- `timeseries.png`: delivered bytes over time of the median flow of each
  configuration (cell with the fewest parallel flows).
- `delay.png` (records with probes): ping RTT p95 per run and
  configuration, and the RED backlog over time of a representative run.
- `summary.csv` (one row per cell), `runs.csv` (one row per run, with
  its set-up and transfer times and the session and `ecn_proxy.ko` build
  it ran on), `ratios.csv` (one row per ratio in `summary.md`, with its
  interval, coverage, goal and verdict; for the pooled rows whether the
  cells agree), `headline.json` (every headline cell, the pooled figures,
  the verdict rule, the A/A ratios and every session's commit and module
  hashes).
- `runs/<id>.json`: the raw record of each run: parameters, kernel,
  accelerator, sysctls of every namespace, the transfer (per connection
  start, end, bytes, receiver progress), HTB/RED counters before and after
  (`tc -s -j`), proxy statistics before and after, TCP counter deltas,
  guest CPU times, the per-flow capture analysis on both sides of the proxy,
  fidelity checks, tool versions.
- `plan.json`: the profile and every run in execution order (seeded shuffle);
  `meta.json`: command, the sessions that ended, git commit;
  `sessions/NN/`: guest console and kernel log of each guest session, and
  `session.json` (its git commit and module hashes, written when it
  starts, so an interrupted session has one too; sessions run before
  2026-11-26 23:30 have none).  `summary.md` lists every session from
  both.

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
