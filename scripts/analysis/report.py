# SPDX-License-Identifier: GPL-2.0
"""Tables and figures of one matrix results directory (scripts only).

report(RESULTS) reads plan.json, meta.json and runs/*.json and writes
runs.csv (one row per run), summary.csv (one row per cell), summary.md,
boxplot_DIRECTION_cross-on|off.png, timeseries.png and README.md.  Returns
the headline ratios.
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
from .schema import CONFIG_ORDER, validate  # noqa: E402

METRICS = ("ce", "ece", "cwr", "ect_share", "retrans", "fast_retrans", "dupacks",
           "stalls", "stall_time")
PROXY_KEYS = ("congestion_events", "segs_dropped", "segs_ect_set", "segs_ce_cleared",
              "segs_ece_set", "segs_cwr_set", "flows_proxied_ecn_responder",
              "flows_proxied_ecn_initiator", "flows_fallback", "syn_fallbacks",
              "fallback_cache_hits", "flows_seen")
COLORS = {"noecn": "#bbbbbb", "noecn+proxy": "#777777", "srvecn": "#f4a582",
          "srvecn+proxy": "#d6604d", "bothecn": "#92c5de", "bothecn+proxy": "#2166ac"}
HEADLINE = (("srvecn+proxy", "bothecn"), ("srvecn+proxy", "noecn"))


def load_order(loads):
    return sorted(set(loads), key=lambda x: (x == "series", int(x) if x.isdigit() else 0))


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
    row["snd_rtos"] = tc[snd].get("TcpExt.TCPTimeouts", 0)
    row["snd_syn_retrans"] = tc[snd].get("TcpExt.TCPSynRetrans", 0)
    b, a = rec["proxy_stats"]["before"], rec["proxy_stats"]["after"]
    for k in PROXY_KEYS:
        if k in a:
            row["proxy_" + k] = a[k] - b.get(k, 0)
    dev = rec["env"]["bottleneck_dev"]
    rb, ra = red_counters(rec["qdisc"]["before"], dev), red_counters(rec["qdisc"]["after"], dev)
    for k in ("marked", "early", "pdrop"):
        if k in ra:
            row["red_" + k] = ra[k] - rb.get(k, 0)
    return row


def fmt_ci(med, lo, hi):
    if med is None or (isinstance(med, float) and math.isnan(med)):
        return "-"
    return "%.2f [%.2f, %.2f]" % (med, lo, hi)


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
        row = {"direction": d, "cross": c, "load": l, "config": cfg, "n": len(g),
               "n_ok": len(ok), "n_timeout": int(g.timeout.sum()), "median_s": round(med, 4), "ci_low_s": round(lo, 4),
               "ci_high_s": round(hi, 4), "ci_coverage": round(cov, 4),
               "flagged": int((g["flags"] != "").sum()),
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
        rows.append(row)
    return pd.DataFrame(rows)


def ratios(df, direction, cross, num, den, loads):
    ok = df[df.use & (df.direction == direction) & (df.cross == cross)]
    ng = [list(ok[(ok.config == num) & (ok.load == l)].completion_s) for l in loads]
    dg = [list(ok[(ok.config == den) & (ok.load == l)].completion_s) for l in loads]
    if any(not g for g in ng + dg):
        return None
    return stats.ratio_ci(ng, dg)


def boxplots(df, d, prof_note, loads, configs):
    out = []
    for direction in sorted(df.direction.unique()):
        for cross in sorted(df.cross.unique()):
            sub = df[df.use & (df.direction == direction) & (df.cross == cross)]
            if sub.empty:
                continue
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
    df.to_csv(os.path.join(d, "runs.csv"), index=False)
    cells = cell_table(df)
    configs = [c for c in CONFIG_ORDER if c in set(df.config)]
    loads = load_order(df.load)
    cells["config"] = pd.Categorical(cells.config, configs, ordered=True)
    cells["load"] = pd.Categorical(cells.load, loads, ordered=True)
    cells = cells.sort_values(["direction", "cross", "load", "config"])
    cells.to_csv(os.path.join(d, "summary.csv"), index=False)

    headline = {}
    for direction in ("download", "upload"):
        for num, den in HEADLINE:
            r = ratios(df, direction, "on", num, den, loads)
            if r:
                headline["%s cross-on %s/%s" % (direction, num, den)] = r

    figs = boxplots(df, d, prof.get("note", ""), loads, configs)
    ts = timeseries(recs, df, d, configs)

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
      "distribution-free 95 %% confidence interval (order statistics; with fewer "
      "than 6 runs the interval is [min, max] and its real coverage is given). "
      "Ratios are of sums of cell medians over the loads (stratified bootstrap, "
      "%d resamples, seed %d, 95 %% percentile interval): below 1 means the "
      "first configuration is faster." % (stats.N_BOOT, stats.SEED))
    w("")
    w("## Headline (cross traffic on, all loads)")
    w("")
    w("| direction | ratio | value [95 % CI] |")
    w("| --- | --- | --- |")
    for k, (v, lo, hi) in headline.items():
        direction, _, rat = k.split(" ")
        w("| %s | %s | %s |" % (direction, rat.replace("/", " / "), fmt_ci(v, lo, hi)))
    w("")
    w("For comparison, the thesis (10 runs per cell, 20 MB flows with cross traffic, "
      "proxy feedback `none`): downloads through the proxy were close to end-to-end "
      "ECN and much faster than no ECN; uploads through the proxy were no better than "
      "no ECN, while end-to-end ECN was much faster.  This run's proxy feedback mode: "
      "`%s`." % (plan.get("feedback") or r0["sysctls"]["proxy"].get("net/ecn_proxy/feedback")))
    w("")
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
            w("## %s, cross traffic %s" % (direction, cross))
            w("")
            w("Flows of %d bytes; series: %s. Box plot: `boxplot_%s_cross-%s.png`." % (
                sz["flow_bytes"], "%d x %d bytes" % tuple(sz["series"]) if sz.get("series") else "-",
                direction, cross))
            w("")
            w("| load | " + " | ".join(configs) + " |")
            w("| --- |" + " --- |" * len(configs))
            for l in loads:
                cells_l = sub[sub.load == l]
                vals = []
                for c in configs:
                    r = cells_l[cells_l.config == c]
                    if r.empty:
                        vals.append("-")
                    else:
                        r = r.iloc[0]
                        vals.append(fmt_ci(r.median_s, r.ci_low_s, r.ci_high_s) + (
                            " (n=%d, %.0f %%)" % (r.n_ok, 100 * r.ci_coverage)) + (
                            " ⚑%d" % r.flagged if r.flagged else ""))
                w("| %s | %s |" % (l, " | ".join(vals)))
            w("")
            w("| load | " + " | ".join("%s / %s" % p for p in HEADLINE) + " |")
            w("| --- |" + " --- |" * len(HEADLINE))
            for l in loads + ["all"]:
                vals = []
                for num, den in HEADLINE:
                    r = ratios(df, direction, cross, num, den, loads if l == "all" else [l])
                    vals.append(fmt_ci(*r) if r else "-")
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
    w("## Figures")
    w("")
    for f in figs:
        w("- `%s`" % f)
    if ts:
        w("- `%s`: delivered bytes over time of the median flow of each configuration" % ts)
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
                   "headline": {k: [round(x, 4) for x in v] for k, v in headline.items()}},
                  f, indent=1)
    return headline


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
         "Output of `make matrix`, one directory per matrix (`<profile>-<date>/`),",
         "produced by scripts from raw data and never edited by hand; this index is",
         "rewritten by `scripts/matrix_analyze.py`.  Start with a directory's",
         "`summary.md`; its `README.md` explains the files.", "",
         "| directory | profile | feedback | runs | flagged | headline (cross traffic on) |",
         "| --- | --- | --- | --- | --- | --- |"]
    for h in sorted(glob.glob(os.path.join(results, "*", "headline.json"))):
        with open(h) as f:
            j = json.load(f)
        name = os.path.basename(os.path.dirname(h))
        heads = "; ".join("%s %.2f [%.2f, %.2f]" % (k.replace(" cross-on ", ": "), *v)
                          for k, v in j["headline"].items())
        L.append("| [`%s/`](%s/summary.md) | %s | %s | %d | %d | %s |" % (
            name, name, j["profile"], _feedback(os.path.dirname(h)), j["runs"],
            j["flagged"], heads))
    with open(os.path.join(results, "README.md"), "w") as f:
        f.write("\n".join(L) + "\n")


def write_readme(d, prof):
    text = """# Matrix results: profile `{name}`

Produced by `make matrix` (scripts only; nothing here is edited by hand).

> {note}

- `summary.md`: start here.  Headline ratios, then for each direction x
  cross-traffic setting a table of completion-time medians per load (rows) and
  configuration (columns) with 95 % confidence intervals, the ratios
  `srvecn+proxy / bothecn` (the proxy against end-to-end ECN: 1 means as good)
  and `srvecn+proxy / noecn` (against no ECN: below 1 means the proxy helps),
  and the per-flow ECN/loss analysis.  ⚑N marks cells with N runs flagged by
  the fidelity checks.
- `boxplot_<direction>_cross-<on|off>.png`: one panel per load, all
  configurations side by side (box: quartiles, line: median, whiskers:
  1.5 IQR).
- `timeseries.png`: delivered bytes over time of the median flow of each
  configuration (cell with the fewest parallel flows).
- `summary.csv` (one row per cell), `runs.csv` (one row per run).
- `runs/<id>.json`: the raw record of each run: parameters, kernel,
  accelerator, sysctls of every namespace, the transfer (per connection
  start, end, bytes, receiver progress), HTB/RED counters before and after
  (`tc -s -j`), proxy statistics before and after, TCP counter deltas,
  guest CPU times, the per-flow capture analysis on both sides of the proxy,
  fidelity checks, tool versions.
- `plan.json`: the profile and every run in execution order (seeded shuffle);
  `meta.json`: command, sessions, git commit; `sessions/NN/`: guest console
  and kernel log of each guest session.

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
