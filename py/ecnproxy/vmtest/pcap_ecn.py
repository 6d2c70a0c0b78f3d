# SPDX-License-Identifier: GPL-2.0
"""Summarise the ECN-relevant header bits of one TCP connection in a pcap.

  python3 -m ecnproxy.vmtest.pcap_ecn [--after T] PCAP SERVER_PORT [ECN_HOST [N_SIDE_PCAP]]
  python3 -m ecnproxy.vmtest.pcap_ecn --first-ce DIRECTION PCAP SERVER_PORT

Reads the pcap with analysis/pcapread.py (no tshark: it takes
minutes to start in the TCG guest) and prints JSON.  Directions are "c2s" (toward
SERVER_PORT) and "s2c".  For each: packets, data packets (payload > 0 and
new: the sequence number is at or beyond the highest end sequence seen
before in that direction, the proxy's own rule; tshark's retransmission
analysis misses some in GSO captures), ect_data (of those, ECT(0) or ECT(1)), ect_any, ce,
ece and cwr (on segments other than SYN and SYN-ACK), retrans, and the SYN / SYN-ACK flags ("syn_ece", "syn_cwr",
"synack_ece", "synack_cwr", as booleans of the first SYN and SYN-ACK;
"syns" and "synacks" count them: more than one means a handshake
retransmission, after which the endpoints may legitimately end up with a
different ECN outcome).

With ECN_HOST = client|server, "echo" checks RFC 3168 receiver behaviour as
seen at this capture point: replaying the packets in order, CE on data
toward the non-ECN side starts an echo and CWR from the ECN host ends it;
"echo.match" is the share of packets from the non-ECN side to the ECN host
whose ECE equals the replayed echo state, "echo.ece" how many had ECE.

--after T: only the packets captured at or after T (seconds since the
epoch, as the pcap's timestamps).  --first-ce DIRECTION prints the time of
the first CE-marked data packet in DIRECTION (c2s or s2c), or nothing.

With N_SIDE_PCAP, a capture of the same connection on the non-ECN host's
side of the proxy, "n2e" judges this capture's data toward the ECN host by
what N did rather than by what this capture saw: "n2e.data" counts the
segments none of whose bytes N sent twice (N's new data, which the proxy
must send as ECT), "n2e.ect_data" those of them that are ECT, and
"n2e.n_rexmit" the segments that overlap something N retransmitted (not
judged).  The capture's own "data" cannot tell a retransmission that fills
the top of the sequence space from new data: when the proxy drops N's
highest segment (feedback=drop) and nothing later passes before N resends
it, the Not-ECT retransmission looks new here.
"""
import bisect
import json
import sys

from ..analysis import pcapread


AFTER = None    # --after: skip packets captured before this time


def segments(pcap, port, with_time=False):
    """(direction, flags, ecn, payload length, sequence number relative to
    that direction's SYN (or first packet)) of each packet to or from PORT,
    in order; with WITH_TIME, the capture time first."""
    base = {}
    for (t, ecn, _src, _dst, sport, dport, seq, _ack, flags, _win,
         plen) in pcapread.read_packets(pcap):
        if port not in (sport, dport) or (AFTER is not None and t < AFTER):
            continue
        d = "c2s" if dport == port else "s2c"
        if flags & 0x02 or d not in base:
            base[d] = seq
        rec = (d, flags, ecn, plen, (seq - base[d]) % (1 << 32))
        yield ((t,) + rec) if with_time else rec


def first_ce(pcap, port, direction):
    """Capture time of the first CE-marked data packet in DIRECTION."""
    for t, d, _flags, ecn, plen, _seq in segments(pcap, int(port), True):
        if d == direction and ecn == 3 and plen > 0:
            return t
    return None


def rexmit_ranges(pcap, port, direction):
    """Merged [start, end) ranges of the relative sequence space that the
    sender in DIRECTION sent more than once, as seen in PCAP: every data
    segment that starts below the highest end sequence seen before."""
    high = None
    ranges = []
    for d, _flags, _ecn, tlen, seq in segments(pcap, port):
        if d != direction or tlen == 0:
            continue
        if high is not None and seq < high:
            ranges.append((seq, seq + tlen))
        high = max(high or 0, seq + tlen)
    merged = []
    for start, end in sorted(ranges):
        if merged and start <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], end)
        else:
            merged.append([start, end])
    return merged


def overlaps(ranges, start, end):
    """Whether [start, end) overlaps one of the merged, sorted RANGES."""
    i = bisect.bisect_right(ranges, [start, float("inf")]) - 1
    if i >= 0 and ranges[i][1] > start:
        return True
    return i + 1 < len(ranges) and ranges[i + 1][0] < end


def summarise(pcap, port, ecn_host=None, n_side=None):
    port = int(port)
    res = {d: dict(packets=0, data=0, ect_data=0, ect_any=0, ce=0, ece=0, cwr=0,
                   retrans=0) for d in ("c2s", "s2c")}
    hs = {}
    nsyn = {"syns": 0, "synacks": 0}
    high = {"c2s": None, "s2c": None}
    echo = False
    n_match = n_checked = n_ece = 0
    # the direction of packets from the non-ECN host toward the ECN host
    n2e = {"server": "c2s", "client": "s2c"}.get(ecn_host)
    n_rexmit = rexmit_ranges(n_side, port, n2e) if n2e and n_side else None
    judged = dict(data=0, ect_data=0, n_rexmit=0)
    for d, flags, ecn, tlen, seq in segments(pcap, port):
        r = res[d]
        r["packets"] += 1
        syn, ack = flags & 0x02, flags & 0x10
        ece, cwr = bool(flags & 0x40), bool(flags & 0x80)
        if syn:
            nsyn["synacks" if ack else "syns"] += 1
        if syn and not ack and "syn_ece" not in hs:
            hs.update(syn_ece=ece, syn_cwr=cwr)
        if syn and ack and "synack_ece" not in hs:
            hs.update(synack_ece=ece, synack_cwr=cwr)
        if tlen > 0:
            if high[d] is not None and seq < high[d]:
                r["retrans"] += 1
            else:
                r["data"] += 1
                if ecn in (1, 2):
                    r["ect_data"] += 1
            high[d] = max(high[d] or 0, seq + tlen)
            if n_rexmit is not None and d == n2e:
                if overlaps(n_rexmit, seq, seq + tlen):
                    judged["n_rexmit"] += 1
                else:
                    judged["data"] += 1
                    judged["ect_data"] += ecn in (1, 2)
        if ecn in (1, 2):
            r["ect_any"] += 1
        if ecn == 3:
            r["ce"] += 1
        if not syn:
            # the handshake's own ECE/CWR are reported as syn_*/synack_*
            r["ece"] += ece
            r["cwr"] += cwr
        if n2e and not syn:
            if d != n2e:
                # from the ECN host: CE on data starts the echo, CWR ends it
                if cwr:
                    echo = False
                if ecn == 3 and tlen > 0:
                    echo = True
            else:
                n_checked += 1
                n_match += ece == echo
                n_ece += ece
    res.update(hs)
    res.update(nsyn)
    if n2e:
        res["echo"] = dict(checked=n_checked, ece=n_ece,
                           match=round(n_match / n_checked, 4) if n_checked else 0)
    if n_rexmit is not None:
        res["n2e"] = judged
    return res


def main(argv):
    global AFTER
    if len(argv) >= 3 and argv[0] == "--after":
        AFTER = float(argv[1])
        argv = argv[2:]
    if len(argv) == 4 and argv[0] == "--first-ce":
        t = first_ce(argv[2], argv[3], argv[1])
        if t is not None:
            print("%.6f" % t)
        return 0
    if len(argv) not in (2, 3, 4):
        sys.exit(__doc__)
    print(json.dumps(summarise(*argv)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
