# SPDX-License-Identifier: GPL-2.0
"""Time-sequence plots of one congestion event each (issue 40's diagnosis).

  scripts/ecnproxy tsplot OUT.png RESULTS:RUN_ID[:N] [RESULTS:RUN_ID[:N] ...]
  (with the matrix's captures kept: KEEP_PCAPS=1)

One panel per argument: the N-th event of the run (by default the first
whose link idle after it exceeds 20 ms, events.LONG_IDLE, else the
first event after 2 s), 15 ms before it to 60 ms after, on the clock of
the proxy's captures:
  N's data as N sent it (client side), its retransmissions marked;
  the ACK number N received (client side) and the one E sent (server
  side): they part while the proxy holds E's ACKs;
  the data leaving the bottleneck (far end's capture), CE-marked ones
  marked: a gap there is link time lost.
Sequence numbers in kB relative to the event's first sequence number.
"""
import os
import sys

from . import events as ev


def panel(ax, resdir, rid, pick):
    import json
    with open(os.path.join(resdir, "runs", rid + ".json")) as f:
        rec = json.load(f)
    r = ev.analyse_run(resdir, rec)
    evs = r["_events"]
    if pick is None:
        longs = [e for e in evs if e["idle_after_s"] > ev.LONG_IDLE]
        t_first = min(e["t_reduce"] for e in evs)
        e0 = longs[0] if longs else next(e for e in evs if e["t_reduce"] > t_first + 2)
    else:
        e0 = evs[pick]
    t0 = e0["t_reduce"]
    pre = ev.capture_prefix(resdir, rid)
    port = rec["params"]["port"]
    cs = ev.load(pre + ".client_side.pcap")
    sv = ev.load(pre + ".server_side.pcap")
    bo = ev.load(pre + ".bottleneck_out.pcap") or []
    cport = ev.data_conn(cs, port)
    dn, an = ev.split(cs, port, cport, True)
    _de, ae = ev.split(sv, port, cport, True)
    db, _ = ev.split(bo, port, cport, True)
    lo, hi = t0 - 0.015, t0 + 0.060
    base = next((d["seq"] for d in dn if lo <= d["t"]), dn[0]["seq"])

    def rel(x):
        d = (x - base) & 0xFFFFFFFF
        return (d - (1 << 32) if d >= 1 << 31 else d) / 1000.0

    def ms(t):
        return (t - t0) * 1000.0
    seen = -1
    nx, ny, rx, ry = [], [], [], []
    for d in dn:
        end = rel(d["seq"] + d["len"])
        if lo <= d["t"] <= hi:
            (rx if end <= seen else nx).append(ms(d["t"]))
            (ry if end <= seen else ny).append(rel(d["seq"]))
        seen = max(seen, end)
    ax.plot(nx, ny, "s", ms=3, color="tab:blue", label="N's data (sent)")
    ax.plot(rx, ry, "x", ms=7, color="tab:red", label="N's retransmission")
    for acks, style, lab in ((an, "-", "ACK N received"), (ae, "--", "ACK E sent")):
        pts = [(ms(a["t"]), rel(a["ack"])) for a in acks if lo <= a["t"] <= hi]
        if pts:
            ax.step([p[0] for p in pts], [p[1] for p in pts], style, where="post",
                    label=lab, lw=1)
    bx = [ms(d["t"]) for d in db if lo <= d["t"] <= hi]
    by = [rel(d["seq"]) for d in db if lo <= d["t"] <= hi]
    ax.plot(bx, by, ".", ms=3, color="tab:green", label="leaving the bottleneck")
    cx = [ms(d["t"]) for d in db if lo <= d["t"] <= hi and d["ecn"] == 3]
    cy = [rel(d["seq"]) for d in db if lo <= d["t"] <= hi and d["ecn"] == 3]
    ax.plot(cx, cy, "o", ms=6, mfc="none", color="tab:orange", label="CE-marked")
    ys = ny + ry + by
    if ys:
        ax.set_ylim(min(ys) - 3, max(ys) + 3)
    ax.set_xlim(ms(lo), ms(hi))
    ax.set_title("%s: %s\nidle after %.1f ms, completion %.2f s" % (
        os.path.basename(resdir.rstrip("/")), rid, e0["idle_after_s"] * 1000,
        rec["completion_s"]), fontsize=8)
    ax.set_xlabel("ms from the window reduction (N's retransmission or CWR)")
    ax.set_ylabel("kB")
    ax.grid(alpha=0.3)


def main(argv):
    if len(argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    specs = argv[1:]
    fig, axes = plt.subplots(len(specs), 1, figsize=(9, 3.6 * len(specs)), squeeze=False)
    for ax, spec in zip(axes[:, 0], specs):
        parts = spec.split(":")
        panel(ax, parts[0], parts[1], int(parts[2]) if len(parts) > 2 else None)
    axes[0, 0].legend(fontsize=7, loc="upper left")
    fig.tight_layout()
    fig.savefig(argv[0], dpi=110)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
