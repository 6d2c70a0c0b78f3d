# SPDX-License-Identifier: GPL-2.0
"""What the congestion control did in each cell: medians of a matrix
directory's runs.csv, per configuration, to explain a cell's ratio.

  scripts/ecnproxy mechanism-table RESULTS [--direction D] [--cross C]
                                   [--configs A,B,...]

RESULTS is an analysed matrix directory (scripts/ecnproxy analyze): its
runs.csv, or one per added delay in RESULTS/delay-*ms/ (PROFILE=parity).
Prints a Markdown table per (direction, cross traffic, added delay), a row
per load and configuration (default: srvecn+proxy, bothecn, noecn), of the
medians over the cell's usable runs of

  completion, transfer   completion_s and its transfer part (transfer_s:
                         connection set-up excluded)
  util                   the bottleneck's utilisation (HTB bytes / rate)
  marks/MB               RED's CE marks per MB sent (red_marked)
  CWR/MB                 CWR flags reaching the server per MB (ss_cwr):
                         the data sender's window reductions for an ECN
                         sender and for the proxy's (which sets CWR for N);
                         0 without ECN, whose responses are to losses
  rexmit/MB              the sender's retransmitted segments per MB
  queue p50              RED's backlog, median of the run's samples (bytes)
  ACKs/seg               the receiver's segments per original data segment
                         (its ACK clock)
  UDP Mbit/s             the cross traffic delivered (cross traffic on)
  events/MB              the proxy's congestion events per MB
  link/sent              the bytes the bottleneck's HTB class sent per
                         byte of the transfer (headers, retransmissions
                         and duplicates included), from the run records
  whole copies/MB        the proxy's rexmit_passed per MB (copies of the
                         "lost" segment let through whole; a counter of
                         the proxy before 2026-12-03), from the records

Medians, not ratios with intervals: this table explains, cell-table
judges.
"""
import argparse
import glob
import json
import os
import re
import sys

import pandas as pd

from ..analysis.schema import load_order

CONFIGS = ("srvecn+proxy", "bothecn", "noecn")
# (heading, runs.csv column, per MB, scale, format)
COLUMNS = (("completion s", "completion_s", False, 1, "%.2f"),
           ("transfer s", "transfer_s", False, 1, "%.2f"),
           ("util", "utilisation", False, 1, "%.3f"),
           ("marks/MB", "red_marked", True, 1, "%.1f"),
           ("CWR/MB", "ss_cwr", True, 1, "%.1f"),
           ("rexmit/MB", "snd_retrans_segs", True, 1, "%.1f"),
           ("queue p50 B", "queue_p50_bytes", False, 1, "%.0f"),
           ("ACKs/seg", "rcv_segs_per_seg", False, 1, "%.2f"),
           ("UDP Mbit/s", "udp_rate_bps", False, 1e-6, "%.2f"),
           ("events/MB", "proxy_congestion_events", True, 1, "%.1f"),
           ("link/sent", "link_per_byte", False, 1, "%.3f"),
           ("whole copies/MB", "rexmit_passed", True, 1, "%.1f"))


def record_cols(results, run_id):
    """link_per_byte and rexmit_passed of RESULTS/runs/RUN_ID.json (None
    where the record or the counter is missing)."""
    try:
        with open(os.path.join(results, "runs", run_id + ".json")) as f:
            rec = json.load(f)
    except (OSError, ValueError):
        return {"link_per_byte": None, "rexmit_passed": None}
    dev = rec.get("env", {}).get("bottleneck_dev")

    def htb(snap):
        return next((q.get("bytes") for q in snap or []
                     if q.get("kind") == "htb" and q.get("dev") == dev), None)
    b, a = htb(rec["qdisc"].get("before")), htb(rec["qdisc"].get("after"))
    total = rec["params"].get("total_bytes")
    ps0, ps1 = rec.get("proxy_stats", {}).get("before", {}), \
        rec.get("proxy_stats", {}).get("after", {})
    return {"link_per_byte": (a - b) / total if None not in (a, b) and total else None,
            "rexmit_passed": (ps1["rexmit_passed"] - ps0.get("rexmit_passed", 0)
                              if "rexmit_passed" in ps1 else 0)}


def read_runs(results):
    """runs.csv of RESULTS (delay_ms -1: the topology's own) and of
    RESULTS/delay-*ms/, with a delay_ms column; FileNotFoundError if there
    is none."""
    frames = []
    top = os.path.join(results, "runs.csv")
    if os.path.exists(top):
        frames.append(pd.read_csv(top, dtype={"load": str}).assign(delay_ms=-1))
    for path in sorted(glob.glob(os.path.join(results, "delay-*ms", "runs.csv"))):
        delay = int(re.search(r"delay-(\d+)ms", path).group(1))
        frames.append(pd.read_csv(path, dtype={"load": str}).assign(delay_ms=delay))
    if not frames:
        raise FileNotFoundError("%s: no runs.csv (run scripts/ecnproxy analyze %s)"
                                % (results, results))
    df = pd.concat(frames, ignore_index=True)
    extra = pd.DataFrame([record_cols(results, i) for i in df["id"]], index=df.index)
    return pd.concat([df, extra], axis=1)


def cell_medians(runs):
    """{heading: median} over RUNS (the usable runs of one cell and
    configuration); None where a column is absent or empty."""
    mb = runs["total_bytes"] / 1e6
    out = {}
    for head, col, per_mb, scale, _fmt in COLUMNS:
        if col not in runs or runs[col].isna().all():
            out[head] = None
            continue
        v = runs[col] / mb if per_mb else runs[col]
        out[head] = float(v.median()) * scale
    return out


def tables(df, direction=None, cross=None, configs=CONFIGS):
    """The Markdown lines: a table per (direction, cross, delay)."""
    df = df[df["use"].astype(bool)]
    out = []
    settings = df[["direction", "cross", "delay_ms"]].drop_duplicates()
    settings = sorted((tuple(r) for r in settings.itertuples(index=False)),
                      key=lambda s: (s[0], s[1] != "on", s[2]))
    for d, c, delay in settings:
        if (direction and d != direction) or (cross and c != cross):
            continue
        sel = df[(df.direction == d) & (df.cross == c) & (df.delay_ms == delay)]
        rows = []
        for load in load_order(sel["load"]):
            for cfg in configs:
                runs = sel[(sel["load"] == load) & (sel.config == cfg)]
                if runs.empty:
                    continue
                med = cell_medians(runs)
                rows.append(["load %s" % load if load != "series" else "series", cfg,
                             str(len(runs))] +
                            [("-" if med[h] is None else fmt % med[h])
                             for h, _c, _p, _s, fmt in COLUMNS])
        if not rows:
            continue
        title = "%s, cross traffic %s" % (d, c)
        if delay >= 0:
            title += ", %d ms added" % delay
        head = ["cell", "configuration", "n"] + [h for h, *_ in COLUMNS]
        if out:
            out.append("")
        out += ["%s (medians):" % title.capitalize(), "",
                "| " + " | ".join(head) + " |", "| " + " | ".join(["---"] * len(head)) + " |"]
        out += ["| " + " | ".join(r) + " |" for r in rows]
    return out


def main(argv):
    ap = argparse.ArgumentParser(prog="scripts/ecnproxy mechanism-table",
                                 description=__doc__.split("\n\n")[0])
    ap.add_argument("results")
    ap.add_argument("--direction", choices=("download", "upload"))
    ap.add_argument("--cross", choices=("off", "on"))
    ap.add_argument("--configs", default=",".join(CONFIGS))
    a = ap.parse_args(argv)
    try:
        df = read_runs(a.results)
    except FileNotFoundError as e:
        print("mechanism-table: %s" % e, file=sys.stderr)
        return 1
    lines = tables(df, a.direction, a.cross, tuple(a.configs.split(",")))
    if not lines:
        print("mechanism-table: %s: no runs for that selection" % a.results, file=sys.stderr)
        return 1
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
