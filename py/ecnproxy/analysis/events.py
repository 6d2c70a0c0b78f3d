# SPDX-License-Identifier: GPL-2.0
"""Per congestion event: what an upload sender and the bottleneck do
around each window reduction (issue 40's diagnosis).

  scripts/ecnproxy events RESULTS [--json OUT] [--plot RUN_ID ...]
  (RESULTS from `KEEP_PCAPS=1 make matrix PROFILE=diag-upload`)

Reads, per run of RESULTS/runs/*.json whose captures were kept (in
RESULTS/captures/ when published, else RESULTS/pcaps/):
  pcaps/ID.client_side.pcap   the proxy's eth0: N's segments as N sent
                              them, the ACKs as N received them
  pcaps/ID.server_side.pcap   the proxy's eth1: the segments toward the
                              bottleneck, E's ACKs as E sent them
  pcaps/ID.bottleneck_out.pcap  the far end's eth0: the bottleneck's
                              departures (so the link's busy and idle time)
  pcaps/ID.client-ss.txt      the sender's `ss -tinH` every 50 ms
(each file may be compressed with xz: NAME.xz)

Definitions (the data connection is the one with most payload):
  link idle      after the first data departure and up to the last, every
                 gap between departures minus the later packet's
                 serialisation time at the bottleneck rate (IP length + 14
                 bytes of Ethernet, as HTB counts); the sum is the time the
                 link could have carried this flow's data and did not
  event          a window reduction of the sender: a CWR segment from N
                 (ECN), or the first retransmission after new data
                 (loss recovery, real or simulated)
  trigger        for an ECN event, the first ECE ACK N received since its
                 previous CWR; for a proxied event, the first ECE E sent
                 since the previous event (server side; the proxy clears
                 ECE toward N); for a loss, the first duplicate ACK
  send gap       the longest time N sent no data segment in
                 [trigger, reduce + 2 x srtt]; srtt is the median RTT of
                 the run
  idle after     link idle time within [reduce, reduce + 2 x srtt]
  hold           proxied events: from the first ACK N received with the
                 ACK number held (a duplicate) to the ACK that moved it
                 (the release)
  long idle      events whose idle after exceeds LONG_IDLE (20 ms): their
                 count and the idle time they account for
  e_acks_per_seg E's ACKs over the data segments sent to it, both on E's
                 side of the proxy (E's ACK clock; one_byte_at_e: the
                 one-byte segments among those, the proxy's trimmed
                 copies of L)
  mean flight    N's bytes in flight on N's side (highest sequence sent
                 less highest ACK received), time-weighted over N's first
                 to last data segment, in N's largest segments
  short segs     N's data segments shorter than its largest (the last
                 left out), and their share of its segments: a window
                 that ends inside a segment makes N split one there
  queue, e_ack   per segment's first transmission, the wait at the
                 bottleneck (E's side of the proxy to the departure) and
                 the time from the departure to E's first ACK covering it
                 (propagation and E's delayed ACK): the median and the
                 nearest-rank 90th percentile, in ms
  rwnd limited   the share of that time with data in flight and less than
                 a full segment of room below the window N was offered
                 (the latest ACK's, scaled by the SYN-ACK's shift): N held
                 back by the receive window, which in dupack-rwnd is the
                 clamp's doing (an end-to-end sender is never held so here)

The output is one Markdown table per run, then one per cell (cross
traffic, configuration): the medians over its runs.  With cross traffic
the link also carries the UDP flow, which the captures do not see: its
idle times are the TCP flow's absences, not the link's.
"""
import glob
import json
import os
import statistics
import sys

from . import pcapread
from .sack_rtt_scan import p50_p90

ACK, ECE, CWR, SYN, FIN, RST = 16, 64, 128, 2, 1, 4
# an event whose link idle exceeds this is a stall (E's delayed-ACK timer,
# 40 ms, or a retransmission timeout), not the gap of a smaller window
LONG_IDLE = 0.02


def capture_prefix(resdir, rid):
    """RESULTS/captures/RUN_ID (published, xz) if there, else
    RESULTS/pcaps/RUN_ID (kept by KEEP_PCAPS=1, never committed:
    results/.gitignore)."""
    pub = os.path.join(resdir, "captures", rid)
    if any(os.path.exists(pub + s + x) for s in (".client_side.pcap",) for x in ("", ".xz")):
        return pub
    return os.path.join(resdir, "pcaps", rid)


def load(path):
    """The segments of PATH, or of PATH.xz; None if neither exists."""
    for p in (path, path + ".xz"):
        if os.path.exists(p):
            return list(pcapread.read_segments(p))
    return None


def data_conn(pkts, port):
    """The client port that carried most payload toward or from port."""
    by = {}
    for p in pkts:
        _t, _ecn, _s, _d, sp, dp, *_r, plen, _o = p
        k = sp if dp == port else dp if sp == port else None
        if k is not None:
            by[k] = by.get(k, 0) + plen
    return max(by, key=by.get) if by else None


def split(pkts, port, cport, upload):
    """-> (data segments, ACKs toward the sender) of one connection, each
    a dict, in time order."""
    data, acks = [], []
    for t, ecn, _s, _d, sp, dp, seq, ack, fl, win, plen, opts in pkts:
        if {sp, dp} != {port, cport}:
            continue
        from_client = dp == port
        rec = {"t": t, "ecn": ecn, "seq": seq, "ack": ack, "fl": fl, "win": win,
               "len": plen, "opts": opts}
        if from_client == upload:
            if plen:
                data.append(rec)
        elif fl & ACK and not fl & (SYN | RST):
            acks.append(rec)
    return data, acks


def link_idle(data, rate_bps):
    """[(gap start, idle seconds)] of the departures."""
    out = []
    for a, b in zip(data, data[1:]):
        ser = (b["len"] + 52 + 14) * 8 / rate_bps  # 52: IPv4 + TCP with timestamps
        gap = b["t"] - a["t"] - ser
        if gap > 1e-5:
            out.append((a["t"], gap))
    return out


def mod32(x):
    return x & 0xFFFFFFFF


def after(a, b):
    return mod32(a - b) < 0x80000000 and a != b


def events(data_n, acks_n, acks_e, proxied):
    """Window reductions of the sender, from N's side (data_n: N's segments
    as sent, acks_n: the ACKs N received) and E's (acks_e: E's ACKs before
    the proxy).  -> [{"kind", "t_trigger", "t_reduce", ...}]"""
    evs = []
    hi = None
    last_cwr = 0.0
    for d in data_n:
        end = mod32(d["seq"] + d["len"])
        retrans = hi is not None and not after(end, hi)
        if d["fl"] & CWR:
            trig = next((a["t"] for a in acks_n if last_cwr < a["t"] <= d["t"]
                         and a["fl"] & ECE), None)
            evs.append({"kind": "ecn", "t_reduce": d["t"], "t_trigger": trig})
            last_cwr = d["t"]
        elif retrans and (not evs or evs[-1].get("seq") != d["seq"]) and \
                (not evs or d["t"] - evs[-1]["t_reduce"] > 0.0005):
            evs.append({"kind": "loss", "t_reduce": d["t"], "seq": d["seq"]})
        if hi is None or after(end, hi):
            hi = end
    prev = 0.0
    for ev in evs:
        if ev["kind"] != "loss":
            prev = ev["t_reduce"]
            continue
        # the duplicates N saw before it retransmitted
        first_dup = None
        last_ack = None
        for a in acks_n:
            if a["t"] > ev["t_reduce"]:
                break
            if a["t"] <= prev:
                last_ack = a["ack"]
                continue
            if last_ack is not None and a["ack"] == last_ack and a["len"] == 0 \
                    and first_dup is None:
                first_dup = a["t"]
            elif a["ack"] != last_ack:
                first_dup = None
            last_ack = a["ack"]
        ev["t_first_dup"] = first_dup
        if proxied:
            ev["t_trigger"] = next((a["t"] for a in acks_e if prev < a["t"] <= ev["t_reduce"]
                                    and a["fl"] & ECE), None)
            # the release: the first ACK N saw above the retransmitted seq
            ev["t_release"] = next((a["t"] for a in acks_n if a["t"] > ev["t_reduce"]
                                    and after(a["ack"], ev["seq"])), None)
        else:
            ev["t_trigger"] = first_dup
        prev = ev["t_reduce"]
    return evs


def syn_ack_wscale(pkts, port, cport):
    """The window scale of the SYN-ACK from PORT to CPORT (0 without one)."""
    for _t, _e, _s, _d, sp, dp, _q, _a, fl, _w, _l, opts in pkts:
        if sp == port and dp == cport and fl & SYN and fl & ACK:
            return min(pcapread.tcp_options(opts).get("wscale", 0), 14)
    return 0


def window_use(data_n, acks_n, wscale):
    """How N's flight sat against the window it was offered, on N's side of
    the proxy, from N's first data segment to its last: at each instant
    the flight is N's highest sequence sent less the highest ACK it got,
    the offered edge that ACK number plus the latest ACK's window.
    -> {"smss", "mean_flight_segs" (time-weighted), "rwnd_limited_s" (time
    with data in flight and no room for another full segment below the
    edge: held back by the window, the clamp's doing in dupack-rwnd),
    "rwnd_limited_share" (of that time span)}; None without data."""
    if not data_n:
        return None
    smss = max(d["len"] for d in data_n)
    evs = sorted([(d["t"], 0, d) for d in data_n] + [(a["t"], 1, a) for a in acks_n],
                 key=lambda e: (e[0], e[1]))
    t0, t1 = data_n[0]["t"], data_n[-1]["t"]
    nxt = una = edge = None
    last_t, area, limited = t0, 0.0, 0.0
    for t, kind, r in evs:
        if t < t0 or t > t1:
            if kind == 1 and t < t0:
                una, edge = r["ack"], mod32(r["ack"] + (r["win"] << wscale))
            continue
        if nxt is not None and una is not None:
            fl = mod32(nxt - una) if after(nxt, una) else 0
            area += fl * (t - last_t)
            room = mod32(edge - nxt) if edge is not None and after(edge, nxt) else 0
            if fl and edge is not None and room < smss:
                limited += t - last_t
        last_t = t
        if kind == 0:
            end = mod32(r["seq"] + r["len"])
            if nxt is None or after(end, nxt):
                nxt = end
        else:
            if una is None or not after(una, r["ack"]):
                una = r["ack"]
                edge = mod32(r["ack"] + (r["win"] << wscale))
    span = t1 - t0
    return {"smss": smss,
            "mean_flight_segs": round(area / span / smss, 3) if span > 0 else None,
            "rwnd_limited_s": round(limited, 4),
            "rwnd_limited_share": round(limited / span, 4) if span > 0 else None}


def short_segments(data_n):
    """N's data segments shorter than its largest, the last one left out
    (the transfer's tail): -> (count, their bytes)."""
    if not data_n:
        return 0, 0
    smss = max(d["len"] for d in data_n)
    short = [d["len"] for d in data_n[:-1] if d["len"] < smss]
    return len(short), sum(short)


def ack_clock(data_e, acks_e):
    """E's ACK clock on E's side of the proxy: -> (E's ACKs per data
    segment it was sent, the one-byte segments among those: the proxy's
    trimmed copies of L).  A receiver that delays its ACKs sends about
    one per two segments; one in quick-ACK mode (after a CE mark, after
    a duplicate segment) one per segment."""
    if not data_e:
        return None, 0
    return round(len(acks_e) / len(data_e), 3), sum(1 for d in data_e if d["len"] == 1)


def ack_delays(data_e, data_b, acks_e):
    """Where a round trip goes beyond the proxy: for each segment's first
    transmission, its wait at the bottleneck (from E's side of the proxy,
    data_e, to the bottleneck's departure, data_b) and the time from that
    departure to the first ACK of E's (acks_e, on E's side) that covers
    it: the propagation to E and back, plus E's delayed ACK.
    -> (queue delays, ACK delays), in seconds."""
    def first(ds):
        m = {}
        for d in ds:
            m.setdefault((d["seq"], d["len"]), d["t"])
        return m
    fe, fb = first(data_e), first(data_b)
    queue = [fb[k] - t for k, t in fe.items() if k in fb]
    back, k = [], 0
    for t, end in sorted((t, mod32(s + ln)) for (s, ln), t in fb.items()):
        while k < len(acks_e) and (acks_e[k]["t"] < t or after(end, acks_e[k]["ack"])):
            k += 1
        if k < len(acks_e):
            back.append(acks_e[k]["t"] - t)
    return queue, back


def longest_gap(times, t0, t1):
    ts = [t0] + [t for t in times if t0 <= t <= t1] + [t1]
    return max(b - a for a, b in zip(ts, ts[1:])) if len(ts) > 1 else None


def idle_in(idle, t0, t1):
    return sum(g for t, g in idle if t0 <= t < t1)


def parse_ss(path):
    """[(t, {cwnd, ssthresh, unacked, sacked, lost, retrans_out})] of the
    connection with the most bytes_acked."""
    if not os.path.exists(path):
        return []
    out = []
    t = None
    best = {}
    import lzma
    with (lzma.open(path, "rt") if path.endswith(".xz") else open(path)) as f:
        for line in f:
            if line.startswith("t "):
                if t is not None and best:
                    out.append((t, best))
                t, best = float(line.split()[1]), {}
                continue
            kv = {}
            for tok in line.split():
                if ":" in tok:
                    k, v = tok.split(":", 1)
                    kv[k] = v
            if "bytes_acked" not in kv:
                continue
            if int(kv["bytes_acked"]) >= int(best.get("bytes_acked", -1)):
                best = {k: kv.get(k) for k in ("cwnd", "ssthresh", "unacked", "sacked",
                                              "lost", "bytes_acked", "retrans")}
                best["bytes_acked"] = int(kv["bytes_acked"])
    if t is not None and best:
        out.append((t, best))
    return out


def med(xs):
    xs = [x for x in xs if x is not None]
    return round(statistics.median(xs), 5) if xs else None


def analyse_run(resdir, rec):
    rid = rec["id"]
    pre = capture_prefix(resdir, rid)
    cs, sv, bo = (load(pre + s) for s in (".client_side.pcap", ".server_side.pcap",
                                          ".bottleneck_out.pcap"))
    if cs is None or sv is None:
        return None
    port = rec["params"]["port"]
    upload = rec["params"]["direction"] == "upload"
    cport = data_conn(cs, port)
    data_n, acks_n = split(cs, port, cport, upload)
    data_e, acks_e = split(sv, port, cport, upload)
    rate = 10e6 if rec["env"]["rate_low"] == "10mbit" else None
    flow = rec["capture"]["client_side"]["flows"].get(str(cport), {})
    srtt = (flow.get("rtt") or {}).get("p50") if isinstance(flow.get("rtt"), dict) \
        else flow.get("rtt")
    srtt = srtt or 0.004
    out = {"id": rid, "config": rec["params"]["config"], "cross": rec["params"]["cross"],
           "completion_s": rec["completion_s"], "srtt": srtt,
           "connect_s": rec["transfer"]["conns"][0].get("connect_s")}
    out["short_segs"], out["short_bytes"] = short_segments(data_n)
    out["short_share"] = round(out["short_segs"] / len(data_n), 4) if data_n else None
    out["e_acks_per_seg"], out["one_byte_at_e"] = ack_clock(data_e, acks_e)
    if bo:
        data_b, _ = split(bo, port, cport, upload)
        qd, ad = ack_delays(data_e, data_b, acks_e)
        for name, xs in (("queue", qd), ("e_ack", ad)):
            for p, v in zip((50, 90), p50_p90(xs)):
                out["%s_p%d_ms" % (name, p)] = round(1e3 * v, 3) if v is not None else None
        idle = link_idle(data_b, rate)
        out["transfer_s"] = round(data_b[-1]["t"] - data_b[0]["t"], 4)
        out["link_idle_s"] = round(sum(g for _t, g in idle), 4)
        out["link_idle_gt_2ms_s"] = round(sum(g for _t, g in idle if g > 0.002), 4)
        out["departures_ce"] = sum(1 for d in data_b if d["ecn"] == 3)
    else:
        idle = []
    evs = events(data_n, acks_n, acks_e, rec["params"]["proxy"] and
                 rec["params"]["config"].startswith("srvecn"))
    wu = window_use(data_n, acks_n, syn_ack_wscale(cs, port, cport) if upload else 0)
    if wu:
        out.update(wu)
    n_times = [d["t"] for d in data_n]
    for ev in evs:
        t0 = ev["t_trigger"] if ev.get("t_trigger") else ev["t_reduce"]
        ev["detect_s"] = ev["t_reduce"] - t0 if ev.get("t_trigger") else None
        ev["send_gap_s"] = longest_gap(n_times, t0, ev["t_reduce"] + 2 * srtt)
        ev["idle_after_s"] = idle_in(idle, ev["t_reduce"], ev["t_reduce"] + 2 * srtt)
        if ev.get("t_release"):
            ev["release_s"] = ev["t_release"] - ev["t_reduce"]
        if ev.get("t_first_dup") is not None:
            ev["dup_to_rexmit_s"] = ev["t_reduce"] - ev["t_first_dup"]
    out["events"] = len(evs)
    out["events_per_s"] = round(len(evs) / out["transfer_s"], 2) if out.get("transfer_s") else None
    for k in ("detect_s", "send_gap_s", "idle_after_s", "release_s", "dup_to_rexmit_s"):
        out["median_" + k] = med([e.get(k) for e in evs])
    out["idle_after_events_s"] = round(sum(e["idle_after_s"] for e in evs), 4)
    long_ = [e["idle_after_s"] for e in evs if e["idle_after_s"] > LONG_IDLE]
    out["events_long_idle"] = len(long_)
    out["long_idle_s"] = round(sum(long_), 4)
    ss = parse_ss(pre + ".client-ss.txt") or parse_ss(pre + ".client-ss.txt.xz")
    if ss:
        cw = [int(s["cwnd"]) for _t, s in ss if s.get("cwnd")]
        st = [int(s["ssthresh"]) for _t, s in ss if s.get("ssthresh")]
        out["ss_samples"] = len(ss)
        out["median_cwnd"] = med(cw)
        out["median_ssthresh"] = med(st)
    out["_events"] = evs
    return out


def main(argv):
    if not argv:
        print(__doc__, file=sys.stderr)
        return 2
    resdir = argv[0]
    rows = []
    for f in sorted(glob.glob(os.path.join(resdir, "runs", "*.json"))):
        with open(f) as fh:
            rec = json.load(fh)
        r = analyse_run(resdir, rec)
        if r:
            rows.append(r)
    keys = ("completion_s", "connect_s", "transfer_s", "link_idle_s", "link_idle_gt_2ms_s",
            "events", "events_per_s", "idle_after_events_s", "median_detect_s",
            "median_dup_to_rexmit_s", "median_send_gap_s", "median_idle_after_s",
            "median_release_s", "median_cwnd", "median_ssthresh", "departures_ce",
            "mean_flight_segs", "rwnd_limited_share", "short_segs", "short_share",
            "queue_p50_ms", "queue_p90_ms", "e_ack_p50_ms", "e_ack_p90_ms",
            "e_acks_per_seg", "one_byte_at_e")
    print("| run | " + " | ".join(keys) + " |")
    print("|" + "---|" * (len(keys) + 1))
    for r in sorted(rows, key=lambda r: (r["cross"], r["config"], r["id"])):
        print("| %s | " % r["id"] + " | ".join(
            "%.4g" % r[k] if isinstance(r.get(k), float) else str(r.get(k)) for k in keys) + " |")
    cells = {}
    for r in rows:
        cells.setdefault((r["cross"], r["config"]), []).append(r)
    ck = ("completion_s", "transfer_s", "link_idle_s", "events", "events_long_idle",
          "long_idle_s", "median_release_s", "mean_flight_segs", "rwnd_limited_share",
          "short_share", "queue_p50_ms", "e_ack_p50_ms", "e_ack_p90_ms", "e_acks_per_seg")
    print()
    print("| cross | config | n | " + " | ".join("median " + k for k in ck) + " |")
    print("|" + "---|" * (len(ck) + 3))
    for (cross, cfg), rs in sorted(cells.items()):
        print("| %s | %s | %d | " % (cross, cfg, len(rs)) + " | ".join(
            "%.4g" % v if v is not None else "None"
            for v in (med([r.get(k) for r in rs]) for k in ck)) + " |")
    if "--json" in argv:
        with open(argv[argv.index("--json") + 1], "w") as fh:
            json.dump(rows, fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
