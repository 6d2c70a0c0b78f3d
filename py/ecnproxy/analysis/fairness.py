# SPDX-License-Identifier: GPL-2.0
"""Analysis of a fairness results directory (PROFILE=fairness).

report(RESULTS) reads plan.json and runs/*.json (guest/fairness.py)
and writes runs.csv, summary.md, cwnd.png, share.png and README.md.

Per run, over the steady window (from steady_from_s after each flow's first
data segment to the end of the shorter flow):
  share_A        A's bytes / (A's + B's), from the senders' 200 ms iperf3
                 intervals; jain = Jain's index of the two throughputs.
  reductions     the sender's window reductions, from its own capture: data
                 segments with CWR (an ECN sender's response to ECE) plus
                 loss-recovery episodes (a retransmission at or beyond the
                 previous episode's recovery point).  For the proxied
                 sender in upload the capture is taken before the proxy, so
                 its retransmissions of the simulated loss (which the proxy
                 suppresses) are seen.
  ce_rtts        the flow's CE-marked round trips, from the capture after
                 the bottleneck: the CE marks on new data (ce_new: not on a
                 duplicate of data the receiver already has in order, which
                 it ignores; see new_ce()) grouped greedily into windows of
                 one RTT, the same length for both flows of the run
                 (ce_window_ms: the RTT probe's median, else B's median
                 smoothed RTT; see ce_window()); an ECN sender answers each
                 such window with at most one reduction.
  red_per_ce_rtt reductions / ce_rtts: close to 1 for an ECN sender (a
                 little below with the probe's RTT, which is shorter than the
                 senders' sRTT: 0.96-0.98 in fairness-rtt20-20261201); the
                 proxy's feedback is right when its sender's value matches
                 the control's.
  ce_rtts_old,   the same as defined before 2026-12-02: every CE mark
  red_per_ce_rtt_old  (also those on the proxy's copies of a segment the
                 receiver already has), in windows of the flow's own median
                 smoothed RTT.  A proxied sender's sRTT came out shorter
                 than an ECN sender's, so it got more, shorter windows: in
                 results/fairness-rtt20-20261201 the two together put the
                 ratio to the control at 0.95 instead of 1.00
                 (kmod/ecn_proxy/DUPACK.md, "Stale TSecrs at N").
"""
import glob
import json
import os
import statistics

import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402

from . import report as rpt, stats  # noqa: E402
from .provenance import line as provenance_line, read_meta  # noqa: E402

RECOVERY = ("TcpExt.TCPSackRecovery", "TcpExt.TCPRenoRecovery")
UNDO = ("TcpExt.TCPFullUndo", "TcpExt.TCPPartialUndo", "TcpExt.TCPDSACKUndo",
        "TcpExt.TCPLossUndo")


def ce_round_trips(times, rtt):
    """Number of windows of length rtt, opened greedily at each CE mark
    that falls after the previous window, that hold the marks."""
    n, end = 0, None
    for t in sorted(times):
        if end is None or t >= end:
            n += 1
            end = t + rtt
    return n


# where a record's CE marks on new data come from (new_ce())
CE_NEW_FROM = {"new": "ce_new_times",
               "episodes": "ce_times without the marks on an episode's first retransmission "
                           "(a record from before 2026-12-02, without ce_new_times)",
               "all": "ce_times (all marks)"}


def new_ce(cap):
    """(the CE mark times on new data of a capture view, where they come
    from: a key of CE_NEW_FROM).  Records from 2026-12-02 on have
    ce_new_times (guest/fairness.py flow_view()); for older ones the marks
    at an episode's start (the first retransmission of a loss-recovery
    episode, CE-marked: its time is in both lists) are taken out, which
    catches the proxy's copies of the lost segment but not later
    retransmissions of an episode (and wrongly takes out one that fills a
    hole); without episode_times every mark counts."""
    if "ce_new_times" in cap:
        return cap["ce_new_times"], "new"
    if "episode_times" in cap:
        eps = set(cap["episode_times"])
        return [t for t in cap["ce_times"] if t not in eps], "episodes"
    return cap["ce_times"], "all"


def ce_window(rec, srtt):
    """(the window of a CE-marked round trip in s, what it is) for every
    flow of the run RECORD: the RTT probe's median over the run (the path's
    round trip through the bottleneck's queue, measured beside both flows)
    when the record has one, else B's median smoothed RTT (B is an
    end-to-end sender whose sRTT the proxy does not touch; SRTT maps flow
    to s or None), else (None, None)."""
    p50 = ((rec.get("probes") or {}).get("rtt") or {}).get("p50_ms")
    if p50:
        return p50 / 1e3, "probe RTT p50"
    if srtt.get("B"):
        return srtt["B"], "B's sRTT"
    return None, None


def window_bytes(series, t_from, t_to):
    """Bytes of the 200 ms intervals ending in (t_from, t_to] (relative s)."""
    return sum(b for t, b, *_ in series if t_from < t <= t_to)


def in_window(times, t0, t1):
    return [t for t in times if t0 <= t < t1]


def steady_end(rec):
    """The end of the steady window (s after each flow's start): the end
    of the shorter flow's iperf3 intervals, or None."""
    ends = [f["series"][-1][0] for f in rec["flows"].values() if f.get("series")]
    return min(ends) if len(ends) == 2 else None


def steady_ce(rec, k):
    """(every CE mark, the CE marks on new data, where those come from: a
    key of CE_NEW_FROM) of flow K after the bottleneck in the steady
    window, or None without that capture or window."""
    ac = rec["flows"][k].get("after_capture")
    t_end = steady_end(rec)
    if not ac or t_end is None:
        return None
    a0 = ac["first"] + rec["params"].get("steady_from_s", 10)
    a1 = ac["first"] + t_end
    new_times, frm = new_ce(ac)
    return in_window(ac["ce_times"], a0, a1), in_window(new_times, a0, a1), frm


def run_row(rec):
    p = rec["params"]
    fl = rec["flows"]
    steady = p.get("steady_from_s", 10)
    row = {"id": rec["id"], "direction": p["direction"], "pair": p["pair"],
           "feedback": p["feedback"], "rep": p["rep"], "ok": rec["ok"],
           "flags": ",".join(rec["fidelity"]["flags"]),
           "cpu_idle_min": rec["fidelity"]["cpu_idle_min"]}
    t_end = steady_end(rec)
    srtt = {}
    for k in ("A", "B"):
        rtts = [r for _, _, _, r, _ in fl[k].get("series") or [] if r]
        srtt[k] = statistics.median(rtts) / 1e6 if rtts else None
    win, win_from = ce_window(rec, srtt)
    row["ce_window_ms"] = round(win * 1e3, 2) if win else None
    row["ce_window_from"] = win_from
    for k in ("A", "B"):
        f = fl[k]
        ser = f.get("series") or []
        if t_end is None or not ser:
            continue
        b = window_bytes(ser, steady, t_end)
        row["bytes_" + k] = b
        row["mbit_" + k] = round(b * 8 / (t_end - steady) / 1e6, 3)
        rtt = srtt[k]
        row["srtt_ms_" + k] = round(rtt * 1e3, 2) if rtt else None
        sc = f.get("sender_capture")
        if sc:
            t0 = sc["first"] + steady
            t1 = sc["first"] + t_end
            cwr = len(in_window(sc["cwr_times"], t0, t1))
            ep = len(in_window(sc["episode_times"], t0, t1))
            row["cwr_" + k] = cwr
            row["episodes_" + k] = ep
            row["reductions_" + k] = cwr + ep
            row["red_per_s_" + k] = round((cwr + ep) / (t_end - steady), 3)
        marks = steady_ce(rec, k)
        if marks:
            ce, ce_new, frm = marks
            row["ce_" + k] = len(ce)
            row["ce_new_" + k] = len(ce_new)
            row["ce_new_from_" + k] = frm
            for suffix, times, w in (("", ce_new, win), ("_old", ce, rtt)):
                if not w:
                    continue
                n = row["ce_rtts%s_%s" % (suffix, k)] = ce_round_trips(times, w)
                if sc and n:
                    row["red_per_ce_rtt%s_%s" % (suffix, k)] = round(
                        row["reductions_" + k] / n, 3)
    if "bytes_A" in row and "bytes_B" in row and row["bytes_A"] + row["bytes_B"]:
        row["share_A"] = round(row["bytes_A"] / (row["bytes_A"] + row["bytes_B"]), 4)
        row["ratio_A_B"] = round(row["bytes_A"] / row["bytes_B"], 4) if row["bytes_B"] else None
        row["jain"] = round(stats.jain([row["bytes_A"], row["bytes_B"]]), 4)
    # per-namespace TCP counters: one sender per namespace only in upload
    if p["direction"] == "upload":
        for k, ns in (("A", "client"), ("B", "udp1")):
            c = rec["tcp_counters"].get(ns, {})
            row["nstat_recoveries_" + k] = sum(c.get(x, 0) for x in RECOVERY)
            row["nstat_undos_" + k] = sum(c.get(x, 0) for x in UNDO)
            row["nstat_rtos_" + k] = c.get("TcpExt.TCPTimeouts", 0)
    ps = rec.get("proxy_stats", {})
    a, b = ps.get("after", {}), ps.get("before", {})
    for key in ("congestion_events", "dupacks_injected", "segs_dropped", "events_answered"):
        if key in a:
            row["proxy_" + key] = (rpt.proxy_events(a, b) if key == "congestion_events"
                                   else a[key] - b.get(key, 0))
    pr = rec.get("probes") or {}
    row["rtt_p50_ms"] = (pr.get("rtt") or {}).get("p50_ms")
    row["rtt_p95_ms"] = (pr.get("rtt") or {}).get("p95_ms")
    return row


def load(d):
    recs = []
    for f in sorted(glob.glob(os.path.join(d, "runs", "*.json"))):
        with open(f) as fh:
            recs.append(json.load(fh))
    return recs


def fmt_range(xs):
    xs = [x for x in xs if x == x and x is not None]
    if not xs:
        return "-"
    med = stats.median(xs)
    return "%.2f [%.2f, %.2f]" % (med, min(xs), max(xs)) if len(xs) > 1 else "%.2f" % med


def med(xs):
    xs = [x for x in xs if x == x and x is not None]
    return "%.2f" % stats.median(xs) if xs else "-"


def fmt_interval(est, lo, hi, cov, fmt="%.2f"):
    """'0.99 [0.96, 1.01]', with the coverage as report.fmt_cov() gives it
    when short of 95 % (never rounded up to it)."""
    if est != est:
        return "-"
    if lo != lo or cov <= 0:
        return (fmt % est) + " (no interval)"
    return "%s [%s, %s]%s" % (fmt % est, fmt % lo, fmt % hi, rpt.fmt_cov(cov))


def pair_as_planned(df):
    """The runs whose flows were what their pair says: without the
    roles_wrong flag (guest/fairness.py: still wrong at the third attempt,
    kept so that the plan is complete, but a run of another pair: a
    proxy-vs-ecn run whose proxied flow never got ECN is a non-ECN sender
    against an ECN one)."""
    if "flags" not in df:
        return df
    return df[~df["flags"].fillna("").astype(str).str.contains("roles_wrong")]


def goal_rows(df):
    """The goal table: per direction and feedback, A's share in
    proxy-vs-ecn against A's share in the control ecn-vs-ecn (its range,
    and the Hodges-Lehmann shift with its exact interval: stats.gm_shift
    on one cell), and A's reductions per CE-marked round trip as a ratio
    to the control's (stats.hl_ratio; resp_old: the same by the
    definition before 2026-12-02, red_per_ce_rtt_old_A, when the frame
    has it).  verdict: "backs off less" when the whole shift interval is
    above 0, "backs off more" when below, "not distinguishable" otherwise
    (or "no interval" with too few runs)."""
    out = []
    if "share_A" not in df:
        return out
    df = pair_as_planned(df)
    for direction in ("upload", "download"):
        ctl = df[(df.direction == direction) & (df.pair == "ecn-vs-ecn")]
        cs = [x for x in ctl.share_A if x == x]
        if not cs:
            continue
        def col(g, c):
            return [x for x in g.get(c, pd.Series(dtype=float)) if x == x]
        cr = col(ctl, "red_per_ce_rtt_A")
        cr_old = col(ctl, "red_per_ce_rtt_old_A")
        for fb, g in df[(df.direction == direction) & (df.pair == "proxy-vs-ecn")].groupby(
                "feedback"):
            gs = [x for x in g.share_A if x == x]
            if not gs:
                continue
            m = stats.median(gs)
            sh, lo, hi, cov = stats.gm_shift([gs], [cs])
            if lo != lo or cov <= 0:
                verdict = "no interval"
            elif lo > 0:
                verdict = "**backs off less**"
            elif hi < 0:
                verdict = "backs off more"
            else:
                verdict = "not distinguishable"
            if cov > 0 and cov < 0.9:
                verdict += " ?"
            gr = col(g, "red_per_ce_rtt_A")
            gr_old = col(g, "red_per_ce_rtt_old_A")
            nan = float("nan")
            rr = stats.hl_ratio(gr, cr) if gr and cr else (nan, nan, nan, 0.0)
            ro = stats.hl_ratio(gr_old, cr_old) if gr_old and cr_old else (nan, nan, nan, 0.0)
            out.append({"direction": direction, "feedback": fb, "share": m, "n": len(gs),
                        "ctl_lo": min(cs), "ctl_hi": max(cs), "n_ctl": len(cs),
                        "inside": bool(min(cs) <= m <= max(cs)),
                        "shift": sh, "shift_lo": lo, "shift_hi": hi, "shift_cov": cov,
                        "verdict": verdict, "resp_a": fmt_range(gr), "resp_ctl": fmt_range(cr),
                        "resp": rr[0], "resp_lo": rr[1], "resp_hi": rr[2], "resp_cov": rr[3],
                        "resp_a_old": fmt_range(gr_old), "resp_ctl_old": fmt_range(cr_old),
                        "resp_old": ro[0], "resp_old_lo": ro[1], "resp_old_hi": ro[2],
                        "resp_old_cov": ro[3]})
    return out


def ce_rtt_section(df):
    """summary.md's section on the reductions per CE-marked round trip:
    what the CE marks and the window were, and the values by both
    definitions."""
    if "ce_new_from_A" not in df:
        return []
    df = pair_as_planned(df)
    frm = df.ce_new_from_A.value_counts()
    win = df.ce_window_from.fillna("none").value_counts()
    L = ["## Reductions per CE-marked round trip", "",
         "A flow's CE-marked round trips are its CE marks after the bottleneck "
         "grouped greedily into windows of one round trip; an ECN sender answers "
         "each with at most one reduction (CWR, or a loss-recovery episode).  "
         "Counted since 2026-12-02: only the CE marks on new data (a receiver "
         "ignores the mark on a duplicate of data it already has in order, such as "
         "the proxy's copy of a segment it has), in windows of one length for "
         "every flow of a run (the RTT probe's median, else B's smoothed RTT).  "
         "Before: every CE mark, in windows of the flow's own smoothed RTT, which "
         "is shorter for the proxied sender than for an ECN sender and so gave it "
         "more round trips.", "",
         "- CE marks on new data from: %s" % "; ".join(
             "%s (%d runs)" % (CE_NEW_FROM.get(k, k), n) for k, n in frm.items()),
         "- window: %s" % "; ".join("%s (%d runs)" % (k, n) for k, n in win.items()),
         "",
         "| direction | pair | feedback | n | window ms | A's sRTT ms | B's sRTT ms "
         "| A CE marks | on new data | A per CE-RTT | before 2026-12-02 | B CE marks "
         "| on new data | B per CE-RTT | before 2026-12-02 |",
         "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for key, g in df.groupby(["direction", "pair", "feedback"]):
        def c(name):
            return list(g.get(name, []))
        L.append("| %s | %s | %s | %d | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s "
                 "| %s |" % (key + (len(g),) + tuple(
                     f(c(n)) for f, n in (
                         (med, "ce_window_ms"), (med, "srtt_ms_A"), (med, "srtt_ms_B"),
                         (med, "ce_A"), (med, "ce_new_A"), (fmt_range, "red_per_ce_rtt_A"),
                         (fmt_range, "red_per_ce_rtt_old_A"), (med, "ce_B"),
                         (med, "ce_new_B"), (fmt_range, "red_per_ce_rtt_B"),
                         (fmt_range, "red_per_ce_rtt_old_B")))))
    L.append("")
    return L


def cwnd_plot(recs, path):
    keys = sorted({(r["params"]["direction"], r["params"]["pair"], r["params"]["feedback"])
                   for r in recs}, key=lambda k: (k[0] != "upload", k[1], k[2]))
    if not keys:
        return
    fig, axes = plt.subplots(len(keys), 1, figsize=(10, 1.9 * len(keys)), sharex=True,
                             squeeze=False)
    for ax, key in zip(axes[:, 0], keys):
        rec = min((r for r in recs if (r["params"]["direction"], r["params"]["pair"],
                                       r["params"]["feedback"]) == key),
                  key=lambda r: r["params"]["rep"])
        for k, col in (("A", "#d6604d"), ("B", "#2166ac")):
            ser = rec["flows"][k].get("series") or []
            ax.plot([s[0] for s in ser], [(s[2] or 0) / 1448 for s in ser], color=col,
                    lw=0.8, label="%s (%s)" % (k, "through proxy" if k == "A" else "beside"))
        ax.set_ylabel("cwnd (MSS)")
        pair = key[1] if key[1] != "ecn-vs-ecn" else "ecn-vs-ecn (control)"
        ax.set_title("%s, %s, feedback %s, rep %d" % (key[0], pair, key[2],
                                                     rec["params"]["rep"]), fontsize=8)
        ax.legend(fontsize=6, loc="upper right")
    axes[-1, 0].set_xlabel("s since the flow started (sender's iperf3 intervals)")
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)


def share_plot(df, path):
    if "share_A" not in df:
        return
    groups = [g for g in df.groupby(["direction", "pair", "feedback"])]
    fig, ax = plt.subplots(figsize=(10, 4))
    labels = []
    for i, (key, g) in enumerate(groups):
        ax.scatter([i] * len(g), g.share_A, color="#d6604d", s=14)
        labels.append("%s\n%s\n%s" % key)
    ax.axhline(0.5, color="#999999", lw=0.8, ls="--")
    ax.set_xticks(range(len(groups)))
    ax.set_xticklabels(labels, fontsize=6)
    ax.set_ylabel("A's share of the bytes")
    ax.set_title("Throughput share of the flow through the proxy (A), per run", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)


def wrong_roles_note(df):
    """The goal's sentence on the runs pair_as_planned() leaves out."""
    if "flags" not in df:
        return ""
    ids = sorted(df.loc[df.index.difference(pair_as_planned(df).index), "id"])
    if not ids:
        return "No run is flagged `roles_wrong`."
    return ("Left out: %d run%s flagged `roles_wrong` (%s): its flows were still not "
            "what the pair says at the third attempt (next sections), so it measured "
            "another pair; n counts the rest." % (
                len(ids), "" if len(ids) == 1 else "s", ", ".join("`%s`" % i for i in ids)))


def attempts_rows(recs):
    """-> one row per (direction, pair, feedback) with attempts made again:
    an attempt whose flows were not what the pair says (guest/fairness.py
    roles(): a flow meant to be ECT was not, or the reverse) is recorded in
    the run's "attempts" and the run made again.  Linux sends a retransmitted
    SYN without ECE and CWR (tcp_ecn_clear_syn(), net.ipv4.tcp_ecn_fallback,
    RFC 3168 6.1.1.1), so a first SYN lost to the queue the other flow fills
    gives a flow without ECN: syn counts the discarded attempts with a SYN or
    SYN-ACK retransmission (TcpExt.TCPSynRetrans at any host), over every
    attempt listed (the kept one of a run flagged roles_wrong included);
    attempts: the discarded ones; kept_wrong: the runs kept wrong."""
    acc = {}
    for r in recs:
        att = r.get("attempts") or []
        if not att:
            continue
        p = r["params"]
        key = (p["direction"], p["pair"], p["feedback"])
        a = acc.setdefault(key, {"runs": 0, "attempts": 0, "syn": 0, "problems": [],
                                 "kept_wrong": 0})
        a["runs"] += 1
        # a run still wrong at the last attempt keeps that one (also listed)
        kept = "roles_wrong" in (r.get("fidelity") or {}).get("flags", [])
        a["kept_wrong"] += kept
        a["attempts"] += len(att) - kept
        for x in att:
            if any(c.get("TcpExt.TCPSynRetrans", 0) > 0
                   for c in (x.get("tcp_counters") or {}).values()):
                a["syn"] += 1
            a["problems"] += x.get("problems", [])
    return [dict(zip(("direction", "pair", "feedback"), k), **v)
            for k, v in sorted(acc.items(), key=lambda kv: tuple(map(str, kv[0])))]


def attempts_section(recs):
    rows = attempts_rows(recs)
    if not rows:
        return ["## Attempts made again", "", "None: every run's flows negotiated what "
                "their pair says at the first attempt.", ""]
    L = ["## Attempts made again", "",
         "A run whose flows were not what the pair says (a flow meant to be ECT sent "
         "Not-ECT data, or the reverse) is made again, up to three attempts in all; "
         "the discarded attempts are kept in the run's record (`attempts`).  Linux "
         "sends a retransmitted SYN without ECE and CWR (RFC 3168 6.1.1.1, "
         "`net.ipv4.tcp_ecn_fallback`), and the proxy forwards the retransmission of "
         "a SYN it upgraded unmodified (FSM.md), so a first SYN lost to the queue "
         "gives a flow without ECN.  A run still wrong at its third attempt is kept "
         "(that attempt is also listed here) and flagged `roles_wrong`; the goal "
         "leaves it out.  "
         "`with a SYN retransmission`: discarded attempts in which some host counted "
         "`TcpExt.TCPSynRetrans` (of every attempt listed).", "",
         "| direction | pair | feedback | runs made again | attempts discarded "
         "| kept wrong (`roles_wrong`) | with a SYN retransmission | what was wrong |",
         "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        L.append("| %s | %s | %s | %d | %d | %d | %d | %s |" % (
            r["direction"], r["pair"], r["feedback"], r["runs"], r["attempts"],
            r["kept_wrong"], r["syn"], "; ".join(r["problems"])))
    L.append("")
    return L


def report(d):
    with open(os.path.join(d, "plan.json")) as f:
        plan = json.load(f)
    prof = plan["profile"]
    recs = load(d)
    df = pd.DataFrame([run_row(r) for r in recs])
    df.to_csv(os.path.join(d, "runs.csv"), index=False)
    cwnd_plot(recs, os.path.join(d, "cwnd.png"))
    share_plot(df, os.path.join(d, "share.png"))
    L = ["# Fairness and responsiveness of the proxy's feedback", "",
         prof.get("description", ""), "",
         "Runs: %d of %d planned; generated by `scripts/ecnproxy analyze %s` from "
         "`runs/*.json`." % (len(recs), len(plan["runs"]), os.path.basename(d)), "",
         provenance_line(recs, read_meta(d)), ""]
    verdicts = {}
    if len(df):
        L += ["A is the flow through the proxy (client), B the flow beside it (udp1). "
              "Values are median [min, max] over the runs; shares and reductions from "
              "%d s on." % prof.get("steady_from_s", 10), "",
              "| direction | pair | feedback | n | A's share | Jain | A Mbit/s | B Mbit/s "
              "| reductions/s A | B | per CE-marked RTT A | B | proxy events/s | RTT p50 ms "
              "| flagged |",
              "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
        for key, g in df.groupby(["direction", "pair", "feedback"]):
            span = prof["duration_s"]  # the proxy counters cover the whole run
            ev = [x / span for x in g.get("proxy_congestion_events", pd.Series(dtype=float))
                  if x == x]
            L.append("| %s | %s | %s | %d | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s "
                     "| %d |" % (
                         key[0], key[1], key[2], len(g),
                         fmt_range(list(g.get("share_A", []))), med(list(g.get("jain", []))),
                         med(list(g.get("mbit_A", []))), med(list(g.get("mbit_B", []))),
                         med(list(g.get("red_per_s_A", []))), med(list(g.get("red_per_s_B", []))),
                         fmt_range(list(g.get("red_per_ce_rtt_A", []))),
                         fmt_range(list(g.get("red_per_ce_rtt_B", []))),
                         med(ev) if key[1] != "ecn-vs-ecn" else "-",
                         med(list(g.get("rtt_p50_ms", []))),
                         sum(1 for x in g["flags"] if x)))
        L.append("")
        # the goal: a proxied sender's share against an ECN sender within the
        # control's own spread (same direction), and the difference from the
        # control with an interval (goal_rows)
        rows = goal_rows(df)
        L += ["## Goal: the proxied sender backs off as much as an ECN sender", "",
              "A's share in `proxy-vs-ecn` against A's share in the control "
              "`ecn-vs-ecn` (the same path, A an end-to-end ECN sender there): the "
              "median and the control's range (the issue's \"within the control's "
              "spread\"), then the Hodges-Lehmann shift of A's share from the "
              "control's and the ratio of A's window reductions per CE-marked round "
              "trip to the control's (next section), with exact intervals and their "
              "coverage; the last column is that ratio as defined before 2026-12-02 "
              "(each flow's own sRTT, all CE marks).  "
              "`backs off less`: the whole share interval above 0 (the proxied sender "
              "takes more than an ECN sender in its place); `backs off more`: below 0; "
              "`not distinguishable` otherwise; `?`: an interval that covers less than 90 % "
              "(too few runs to decide).  " + wrong_roles_note(df), "",
              "| direction | feedback | A's share, proxy-vs-ecn | control A's share range "
              "| inside | share shift from the control [interval] (coverage) | verdict "
              "| A per CE-RTT | control A per CE-RTT | ratio [interval] (coverage) "
              "| ratio before 2026-12-02 |",
              "|---|---|---|---|---|---|---|---|---|---|---|"]
        for r in rows:
            verdicts["%s/%s" % (r["direction"], r["feedback"])] = {
                "share_A": r["share"], "control": [r["ctl_lo"], r["ctl_hi"]],
                "inside": r["inside"], "shift": [r["shift"], r["shift_lo"], r["shift_hi"]],
                "shift_coverage": r["shift_cov"], "verdict": r["verdict"],
                "red_per_ce_rtt_ratio": [r["resp"], r["resp_lo"], r["resp_hi"]],
                "red_per_ce_rtt_ratio_before_20261202": [r["resp_old"], r["resp_old_lo"],
                                                         r["resp_old_hi"]]}
            L.append("| %s | %s | %.3f (n=%d) | [%.3f, %.3f] (n=%d) | %s | %s | %s | %s | %s "
                     "| %s | %s |" % (
                         r["direction"], r["feedback"], r["share"], r["n"], r["ctl_lo"],
                         r["ctl_hi"], r["n_ctl"], "yes" if r["inside"] else "**no**",
                         fmt_interval(r["shift"], r["shift_lo"], r["shift_hi"],
                                      r["shift_cov"], "%+.3f"),
                         r["verdict"], r["resp_a"], r["resp_ctl"],
                         fmt_interval(r["resp"], r["resp_lo"], r["resp_hi"],
                                      r["resp_cov"]),
                         fmt_interval(r["resp_old"], r["resp_old_lo"], r["resp_old_hi"],
                                      r["resp_old_cov"])))
        L.append("")
        L += ce_rtt_section(df)
        L += attempts_section(recs)
        if "nstat_recoveries_A" in df:
            L += ["## Upload senders' own counters (nstat in each sender's namespace)", "",
                  "| pair | feedback | n | A recoveries | A undos | A RTOs | B recoveries "
                  "| B undos | B RTOs | proxy events | proxy segs dropped |",
                  "|---|---|---|---|---|---|---|---|---|---|---|"]
            up = df[df.direction == "upload"]
            for key, g in up.groupby(["pair", "feedback"]):
                L.append("| %s | %s | %d | %s | %s | %s | %s | %s | %s | %s | %s |" % (
                    key[0], key[1], len(g),
                    *(med(list(g.get(c, []))) for c in (
                        "nstat_recoveries_A", "nstat_undos_A", "nstat_rtos_A",
                        "nstat_recoveries_B", "nstat_undos_B", "nstat_rtos_B",
                        "proxy_congestion_events", "proxy_segs_dropped"))))
            L.append("")
    L += ["Plots: `cwnd.png` (both senders' cwnd, first repetition of each cell), "
          "`share.png` (A's share per run).", ""]
    with open(os.path.join(d, "summary.md"), "w") as f:
        f.write("\n".join(L))
    with open(os.path.join(d, "headline.json"), "w") as f:
        json.dump({"kind": "fairness", "profile": prof["name"], "runs": len(recs),
                   "flagged": int(sum(1 for r in recs if r["fidelity"]["flags"])),
                   "attempts_discarded": sum(r["attempts"] for r in attempts_rows(recs)),
                   "verdicts": verdicts}, f, indent=1)
    with open(os.path.join(d, "README.md"), "w") as f:
        f.write("# %s\n\nFairness experiment (`make fairness`, profile `%s`). "
                "See `summary.md`; raw records in `runs/`.\n" % (os.path.basename(d),
                                                                 prof["name"]))
    return verdicts
