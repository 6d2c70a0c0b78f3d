# SPDX-License-Identifier: GPL-2.0
"""How long each congestion event takes, ECN sender against proxied
non-ECN sender, from a fairness run's kept captures (issue 40: at the
testbed's own RTT the proxied upload reduced less often per CE-marked
round trip than an ECN sender, results/fairness-rtt0-20261202/).

  scripts/ecnproxy event-cycle RESULTS [--json OUT]
  (RESULTS from `KEEP_PCAPS=1 make fairness PROFILE=fairness-rtt0-pcap`)

Per upload run of RESULTS/runs/*.json with its captures in
RESULTS/pcaps/ (or RESULTS/captures/), ID.client-eth0.pcap (A's sender),
ID.udp1-eth0.pcap (B's sender) and ID.server-eth0.pcap (both receivers),
each possibly .xz; per flow (A: port 5201, B: 5202):

  reduction   an ECN sender's CWR segment (it reduced on the ECE before
              it); a non-ECN sender's first retransmission of a
              loss-recovery episode (a segment below the highest sequence
              sent, after the cumulative ACK passed the previous
              episode's highest sequence)
  trigger     the first CE mark on new data at the receiver after the
              receiver saw the previous reduction's CWR (for a proxied
              sender the CWR the proxy sets)
  reaction    reduction minus trigger: the mark's way to the receiver's
              ACK, back to the sender, and what the sender (or the proxy)
              waits before it reduces
  cycle       time between two reductions
  unanswered  CE-marked round trips (CE marks on new data at the
              receiver, grouped greedily into windows of the run's RTT
              probe median) with no reduction of the sender within two
              round trips of the window's first mark
For a sender with loss recovery (the proxied one), from its own capture:
  held        the first ACK the sender received that repeats its
              cumulative ACK (the hold's first held ACK) before the
              reduction
  held_wait   reduction minus held.  At the floor the first held ACK is
              often E's ACK of the segment the proxy withholds, sent on
              without a SACK block (a SACK of that segment would say it
              arrived), which is no loss evidence to the sender
  sack_wait   reduction minus the first held ACK with a SACK block: what
              the sender itself waited once it had loss evidence (RACK's
              reordering window and timer, or the duplicate-ACK
              threshold); held_wait - sack_wait is the wait for E's ACK
              of a segment above the withheld one
  hold        from the reduction to the ACK that moved the cumulative ACK
              past the retransmitted segment (the release)
  ece_to_held held minus the first ECE the receiver sent after the
              trigger: the proxy's pending time plus one way to the sender
  pending ACKs  the pure ACKs the sender received from that first ECE up
              to the ACK the hold started on (the signal), by the full
              segments the sender had sent beyond each when it arrived
              (0, 1, 2 or more): with SACK the proxy starts the hold
              only on an ACK with ECNP_DUPACK_MIN_FLIGHT_SACK or more

Times are the guest's clock, one kernel for every namespace.  Medians and
90th percentiles (nearest rank) in ms.
"""
import bisect
import glob
import json
import os
import sys

from . import pcapread
from .events import after, data_conn
from .sack_rtt_scan import p50_p90, seq_le

PORTS = {"A": 5201, "B": 5202}
SENDER_CAP = {"A": "client-eth0", "B": "udp1-eth0"}
RECEIVER_CAP = "server-eth0"


def find_cap(d, rid, name):
    for sub in ("pcaps", "captures"):
        for ext in ("", ".xz"):
            p = os.path.join(d, sub, "%s.%s.pcap%s" % (rid, name, ext))
            if os.path.exists(p):
                return p
    return None


def receiver_view(segs, port, cport):
    """(CE times on new data, CWR times, ECE-ACK times) at the receiver."""
    ce, cwr, ece = [], [], []
    hi = None
    for s in segs:
        t, ecn, flags, plen = s[0], s[1], s[8], s[10]
        if s[4] == cport and s[5] == port:
            end = (s[6] + plen) & 0xFFFFFFFF
            new = plen and (hi is None or after(end, hi))
            if new:
                hi = end
            if plen and ecn == 3 and new:
                ce.append(t)
            if flags & pcapread.CWR:
                cwr.append(t)
        elif s[4] == port and s[5] == cport and flags & pcapread.ECE and \
                not flags & pcapread.SYN:
            ece.append(t)
    return ce, cwr, ece


def sender_view(segs, port, cport, mss=1448):
    """(CWR times, episode starts [(t, seq)], ACKs [(t, ack, plen, sack,
    full segments the sender had sent beyond the ACK when it arrived)]) at
    the sender."""
    cwr, eps, acks = [], [], []
    hi = None
    ep_end = None
    una = None
    for s in segs:
        t, flags, plen = s[0], s[8], s[10]
        if s[4] == cport and s[5] == port:
            if flags & pcapread.SYN:
                continue
            end = (s[6] + plen) & 0xFFFFFFFF
            if flags & pcapread.CWR and plen:
                cwr.append(t)
            if plen and hi is not None and seq_le(end, hi):
                if ep_end is None or (una is not None and seq_le(ep_end, una)):
                    eps.append((t, s[6]))
                    ep_end = hi
            if plen and (hi is None or after(end, hi)):
                hi = end
        elif s[4] == port and s[5] == cport and flags & pcapread.ACK:
            opts = pcapread.tcp_options(s[11])
            fl = ((hi - s[7]) & 0xFFFFFFFF) // mss if hi is not None else 0
            acks.append((t, s[7], plen, bool(opts.get("sack")), fl))
            if una is None or after(s[7], una):
                una = s[7]
    return cwr, eps, acks


def ce_rtts(times, rtt):
    starts, end = [], None
    for t in sorted(times):
        if end is None or t >= end:
            starts.append(t)
            end = t + rtt
    return starts


def flow_events(rcv, snd, proxied, rtt, t_from, t_to):
    """Per-flow figures (see the module's docstring)."""
    ce, rcwr, ece = (sorted(x) for x in rcv)
    cwr, eps, acks = snd
    red = sorted(t for t, _ in eps) if proxied else sorted(cwr)
    ep_seq = dict(eps)
    out = {"reductions": 0, "reaction": [], "cycle": [], "held_wait": [], "sack_wait": [],
           "hold": [], "ece_to_held": [], "unanswered": 0, "ce_rtts": 0,
           "pending_flight": [0, 0, 0]}
    # per ACK: its time, the cumulative ACK before it, and the time of the
    # last ACK up to it that moved the cumulative ACK
    ack_t = [x[0] for x in acks]
    una_before, last_adv = [], []
    una = adv = None
    for (ta, a, _p, _s, _f) in acks:
        una_before.append(una)
        if una is None or after(a, una):
            una, adv = a, ta
        last_adv.append(adv)
    sel = [t for t in red if t_from <= t < t_to]
    out["reductions"] = len(sel)
    out["cycle"] = [b - a for a, b in zip(sel, sel[1:])]
    for t in sel:
        if proxied:
            seq = ep_seq[t]
            for n in range(bisect.bisect_right(ack_t, t), len(acks)):
                if after(acks[n][1], seq):
                    out["hold"].append(acks[n][0] - t)
                    break
        # the previous reduction's CWR at the receiver; this reduction's
        # trigger is the first CE mark after it
        i = bisect.bisect_left(red, t)
        p = red[i - 1] if i else None
        after_cwr = None
        if p is not None:
            j = bisect.bisect_right(rcwr, p)
            after_cwr = rcwr[j] if j < len(rcwr) else None
            if after_cwr is None:
                continue
        k = bisect.bisect_right(ce, after_cwr) if after_cwr is not None else 0
        if k == len(ce) or ce[k] > t:
            continue
        trig = ce[k]
        out["reaction"].append(t - trig)
        if proxied:
            # the first held ACK: the first repeat of the cumulative ACK
            # since the trigger and since its last move before t
            k0 = bisect.bisect_left(ack_t, trig)
            k1 = bisect.bisect_right(ack_t, t)
            held = held_sack = None
            sig = last_adv[k0 - 1] if k0 else None
            for n in range(k0, k1):
                ta, a, plen, sack = acks[n][0], acks[n][1], acks[n][2], acks[n][3]
                ub = una_before[n]
                if ub is not None and a == ub and not plen:
                    held = ta if held is None else held
                    if sack and held_sack is None:
                        held_sack = ta
                elif ub is None or after(a, ub):
                    held, held_sack, sig = None, None, ta
            if held_sack is not None:
                out["sack_wait"].append(t - held_sack)
            if held is not None:
                out["held_wait"].append(t - held)
                e = bisect.bisect_left(ece, trig)
                if e < len(ece) and ece[e] <= held:
                    out["ece_to_held"].append(held - ece[e])
                    # E's ACKs between its first ECE and the one the hold
                    # started on: what the sender had in flight
                    for n in range(bisect.bisect_left(ack_t, ece[e]),
                                   bisect.bisect_left(ack_t, sig)):
                        if not acks[n][2]:
                            out["pending_flight"][min(acks[n][4], 2)] += 1
    starts = ce_rtts([c for c in ce if t_from <= c < t_to], rtt)
    out["ce_rtts"] = len(starts)
    for s in starts:
        j = bisect.bisect_right(red, s)
        if j == len(red) or red[j] > s + 2 * rtt:
            out["unanswered"] += 1
    return out


def scan_run(d, rec):
    rid = rec["id"]
    paths = {k: find_cap(d, rid, SENDER_CAP[k]) for k in PORTS}
    rpath = find_cap(d, rid, RECEIVER_CAP)
    if rpath is None or None in paths.values():
        return None
    rsegs = list(pcapread.read_segments(rpath))
    rtt = (((rec.get("probes") or {}).get("rtt") or {}).get("p50_ms") or 5.0) / 1e3
    t0 = min(s[0] for s in rsegs)
    steady = rec.get("profile_steady_from_s", 10)
    dur = rec["params"].get("duration_s", 60)
    t_from, t_to = t0 + steady, t0 + dur
    pair = rec["params"].get("pair", "")
    rows = {}
    for k, port in PORTS.items():
        ssegs = list(pcapread.read_segments(paths[k]))
        cport = data_conn(ssegs, port)
        proxied = k == "A" and pair.startswith("proxy")
        rows[k] = flow_events(receiver_view(rsegs, port, cport),
                              sender_view(ssegs, port, cport),
                              proxied, rtt, t_from, t_to)
        rows[k]["proxied"] = proxied
    return {"id": rid, "pair": pair, "rtt_ms": rtt * 1e3,
            "seconds": t_to - t_from, "flows": rows}


def fmt(x, scale=1e3, f="%.2f"):
    return "-" if x is None else f % (x * scale)


def table(res):
    lines = ["| run | flow | proxied | reductions/s | reaction p50 | p90 | cycle p50 | p90 | "
             "CE-marked RTTs unanswered | held_wait p50 | p90 | sack_wait p50 | p90 | "
             "hold p50 | p90 | ece_to_held p50 | p90 | pending ACKs at 0 / 1 / 2+ in flight |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in res:
        for k, f in sorted(r["flows"].items()):
            cells = [r["id"], k, "yes" if f["proxied"] else "no",
                     "%.1f" % (f["reductions"] / r["seconds"])]
            for key in ("reaction", "cycle"):
                a, b = p50_p90(f[key])
                cells += [fmt(a), fmt(b)]
            cells.append("%d of %d" % (f["unanswered"], f["ce_rtts"]))
            for key in ("held_wait", "sack_wait", "hold", "ece_to_held"):
                a, b = p50_p90(f[key]) if f["proxied"] else (None, None)
                cells += [fmt(a), fmt(b)]
            cells.append(" / ".join(map(str, f["pending_flight"])) if f["proxied"] else "-")
            lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv):
    if not argv or argv[0] in ("-h", "--help"):
        sys.stderr.write(__doc__)
        return 2 if not argv else 0
    d = argv[0]
    out = None
    if len(argv) >= 3 and argv[1] == "--json":
        out = argv[2]
    res = []
    for f in sorted(glob.glob(os.path.join(d, "runs", "*.json"))):
        rec = json.load(open(f))
        if rec.get("params", {}).get("direction") != "upload":
            continue
        r = scan_run(d, rec)
        if r is not None:
            res.append(r)
    if not res:
        sys.stderr.write("event-cycle: no upload run with captures in %s\n" % d)
        return 1
    print("Event cycles (ms), `scripts/ecnproxy event-cycle %s` (definitions: "
          "py/ecnproxy/analysis/event_cycle.py); unanswered: no reduction within two "
          "round trips (the run's RTT probe median) of a CE-marked round trip.\n" % d)
    print(table(res))
    if out:
        with open(out, "w") as fh:
            json.dump(res, fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
