# SPDX-License-Identifier: GPL-2.0
"""What an upload sender's own capture says about its RTT samples and its
undone recoveries (the 2026-11-27 dupack diagnosis, docs/findings.md "Fairness and responsiveness").

  scripts/ecnproxy sack-rtt-scan PCAP PORT [PCAP PORT ...]

PCAP (or PCAP.xz) is a capture on the sender's side (the ACKs as the sender receives
them), PORT the data connection's server port.  Per capture:

  sack_rtt       the RTT samples Linux takes from SACK blocks
                 (tcp_sacktag_one()'s last_sackt: now minus the send time
                 of the newest segment a SACK block newly covers, not
                 counting segments sent more than once), the
                 number below half of ts_rtt_min (no real path gives
                 those), and the smallest;
  ts_rtt_min     the smallest TSecr-based RTT of an ACK that advances the
                 cumulative ACK and echoes a first transmission (what the
                 path's RTT really is);
  ts_rtt_karn    the RTT samples Linux takes from the TSecr
                 (tcp_ack_update_rtt(): an ACK that advances the cumulative
                 ACK, when Karn leaves it no ACK-timing sample, because the
                 newly acked data includes a retransmitted segment or has
                 none that was neither SACKed nor retransmitted, and the
                 ACK gives no SACK sample either): the sender's TS clock at
                 the ACK's arrival (its last TSval plus the ms since) minus
                 the TSecr, at least 1 ms; a TSecr of 0 gives none.  A
                 TSecr the proxy raised to a retransmission's TSval gives
                 samples as short as the time since that retransmission;
  rexmit_delay   how long the sender took to retransmit the segment at
                 its cumulative ACK after the first duplicate ACK with a
                 SACK block at that ACK number: the median (the mean of
                 the middle two for an even count) and the 90th
                 percentile (nearest rank: the ceil(0.9 n)-th smallest),
                 in ms (an ECN sender reduces when ECE
                 arrives; a SACK sender that sees one or two segments
                 SACKed waits RACK's reordering window first);
  episodes       loss-recovery episodes (a retransmission below the
                 highest sequence sent, outside the previous episode);
  stale_partial  episodes during which an ACK advanced the cumulative ACK
                 with a TSecr older than the episode's first retransmission
                 (tcp_try_undo_partial()'s test: such an ACK undoes the
                 window reduction; compare TcpExt.TCPPartialUndo).
"""
import math
import statistics
import sys

from . import pcapread


def seq_le(a, b):
    return ((b - a) & 0xFFFFFFFF) < 0x80000000


def p50_p90(xs):
    """The median and the nearest-rank 90th percentile of XS (None, None
    when empty)."""
    if not xs:
        return None, None
    xs = sorted(xs)
    return statistics.median(xs), xs[math.ceil(0.9 * len(xs)) - 1]


def data_port(path, port):
    """The client port of the connection to PORT with the most payload
    (iperf3's data connection, not its control connection)."""
    pay = {}
    for p in pcapread.read_packets(path):
        if p[5] == port:
            pay[p[4]] = pay.get(p[4], 0) + p[10]
    return max(pay, key=pay.get) if pay else None


def scan(path, port):
    cport = data_port(path, port)
    sent = {}           # (start, end) absolute -> last send time
    sacked = set()
    resent = set()      # sent more than once: Linux takes no sample
    retx_tsval = set()
    first_tsval = {}
    high = None         # absolute end of the highest data sent
    una = None
    ep = None
    last_ts = None      # (time, TSval) of the sender's latest segment
    first_dup = None    # (ACK number, time) of the first SACK dupack there
    res = {"sack_rtt": [], "ts_rtt": [], "ts_rtt_karn": [], "rexmit_delay": [],
           "episodes": 0,
           "stale_partial": 0}
    for p in pcapread.read_segments(path):
        t, seq, ack, plen = p[0], p[6], p[7], p[10]
        o = pcapread.tcp_options(p[11])
        ts = o.get("ts")
        if (p[4], p[5]) != (cport, port) and (p[4], p[5]) != (port, cport):
            continue
        if p[5] == port and ts:
            last_ts = (t, ts[0])
        if p[5] == port and plen:
            end = (seq + plen) & 0xFFFFFFFF
            if high is not None and not seq_le(high, seq):      # below high
                if first_dup is not None and seq == first_dup[0]:
                    res["rexmit_delay"].append((t - first_dup[1]) * 1e3)
                    first_dup = None
                if ts:
                    retx_tsval.add(ts[0])
                if ep is None:
                    ep = {"r": ts[0] if ts else None, "high": high, "stale": False}
                    res["episodes"] += 1
            else:
                high = end
                if ts:
                    first_tsval.setdefault(ts[0], t)
            if (seq, end) in sent:
                resent.add((seq, end))
            sent[(seq, end)] = t
            if len(sent) > 4000:
                for k in sorted(sent, key=sent.get)[:2000]:
                    del sent[k]
        elif p[4] == port:
            adv = una is not None and seq_le(una, ack) and ack != una
            if adv:
                first_dup = None
            elif ack == una and o.get("sack") and first_dup is None:
                first_dup = (ack, t)
            newest = None
            for left, right in o.get("sack", []):
                for (s, e), st in sent.items():
                    if seq_le(left, s) and seq_le(e, right) and (s, e) not in sacked:
                        sacked.add((s, e))
                        if (s, e) in resent:
                            continue
                        if newest is None or st > newest:
                            newest = st
            if newest is not None:
                res["sack_rtt"].append((t - newest) * 1e3)
            if ts and adv and ts[1] in first_tsval and ts[1] not in retx_tsval:
                res["ts_rtt"].append((t - first_tsval[ts[1]]) * 1e3)
            if ts and ts[1] and adv and last_ts is not None and \
                    newest is None:
                newly = [k for k in sent if seq_le(una, k[0]) and seq_le(k[1], ack)]
                fresh = any(k not in sacked and k not in resent for k in newly)
                if any(k in resent for k in newly) or not fresh:
                    now = last_ts[1] + int((t - last_ts[0]) * 1000 + 1e-6)
                    res["ts_rtt_karn"].append(max(1, (now - ts[1]) & 0xFFFFFFFF))
            if ep is not None:
                if adv and ts and ts[1] and ep["r"] is not None and \
                        not seq_le(ep["r"], ts[1]):
                    ep["stale"] = True
                if seq_le(ep["high"], ack):
                    res["stale_partial"] += ep["stale"]
                    ep = None
            if una is None or adv:
                una = ack
    return res


def scan_file(path, port):
    """scan(), reading PATH.xz through a temporary file."""
    if not path.endswith(".xz"):
        return scan(path, port)
    import lzma
    import tempfile
    with tempfile.NamedTemporaryFile(suffix=".pcap") as tmp:
        with lzma.open(path) as f:
            tmp.write(f.read())
        tmp.flush()
        return scan(tmp.name, port)


def main(argv):
    if len(argv) < 2 or len(argv) % 2:
        print(__doc__, file=sys.stderr)
        return 2
    print("| capture | port | ts_rtt_min ms | sack_rtt samples | below half of ts_rtt_min "
          "| smallest sack_rtt ms | ts_rtt_karn samples | below half of ts_rtt_min "
          "| smallest ts_rtt_karn ms | rexmit_delay p50 ms | p90 ms "
          "| episodes | stale_partial |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for path, port in zip(argv[::2], argv[1::2]):
        r = scan_file(path, int(port))
        floor = min(r["ts_rtt"]) if r["ts_rtt"] else float("nan")
        sr = sorted(r["sack_rtt"])
        tr = sorted(r["ts_rtt_karn"])
        p50, p90 = p50_p90(r["rexmit_delay"])
        print("| %s | %s | %.2f | %d | %d | %s | %d | %d | %s | %s | %s | %d | %d |" % (
            path.rsplit("/", 1)[-1], port, floor, len(sr),
            sum(1 for x in sr if x < floor / 2), "%.2f" % sr[0] if sr else "-",
            len(tr), sum(1 for x in tr if x < floor / 2),
            "%d" % tr[0] if tr else "-",
            "%.2f" % p50 if p50 is not None else "-",
            "%.2f" % p90 if p90 is not None else "-",
            r["episodes"], r["stale_partial"]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
