# SPDX-License-Identifier: GPL-2.0
"""dupack-rwnd's window clamp on the wire: E's ACKs as E sent them and as
they reached N.

  python3 -m ecnproxy.vmtest.pcap_clamp E_SIDE_PCAP N_SIDE_PCAP SERVER_PORT

The ECN host E is the server (SERVER_PORT), the non-ECN host N the
client; E_SIDE_PCAP is captured on E's side of the proxy, N_SIDE_PCAP on
N's.  Each of E's segments (s2c) on N's side is paired with the same
segment on E's side (same sequence and ACK numbers and TSval, in order;
the proxy forwards E's segments in order, edits a clamped ACK's window
field alone, and never E's TSval; a held ACK, whose ACK number it
changes, pairs with nothing).  Prints JSON:

  paired, unpaired     E's segments on N's side with and without their
                       original on E's side
  clamped              paired segments whose window reached N smaller
                       than E sent it and below 9 of N's segments: the
                       clamp
  lowered              ... smaller, but not that small: dupack's held
                       ACKs carry the window of the event's ACK (E's own
                       ACK at the held number, during a real loss, pairs
                       with one)
  raised               ... larger: also a held ACK's (E's ACK at the held
                       number with a smaller window than the event's)
  wscale               the window scale of E's SYN-ACK (0 without)
  smss                 N's full-sized segment: its SYN's MSS less 12 bytes
                       of timestamps when both SYNs carry them
  clamp_segs           each clamped window in bytes over smss, as a
                       sorted list of its distinct values (rounded up to
                       E's units, so k segments show as a little over k)
  min_segs, max_segs   their least and largest
  clamped_after_fin    clamped segments of E's whose ACK number covers
                       N's FIN: none should be (the clamp ends when E acks
                       it; N sends nothing more)

Python 3 standard library only (analysis/pcapread.py).
"""
import collections
import json
import sys

from ..analysis import pcapread


# a clamp is at most ECNP_CLAMP_MAX_SEGS (8) segments, rounded up to E's
# units (less than one segment: ecnp_floor_ready())
CEILING = 9


def e_segments(pcap, port):
    """([((seq, ack, TSval), win) of each s2c segment after the handshake], E's
    window scale, N's full-sized segment payload: the MSS of N's SYN, less
    12 bytes when both SYNs carry timestamps; not the largest payload
    captured, which GRO may have merged; the sequence number after N's
    FIN, None without one)."""
    out, wscale, mss, ts, fin = [], 0, 0, [False, False], None
    for (_t, _ecn, _src, _dst, sport, dport, seq, ack, flags, win, plen,
         opts) in pcapread.read_segments(pcap):
        if port not in (sport, dport):
            continue
        c2s = dport == port
        if flags & 0x02:        # SYN, SYN-ACK: never scaled, their options
            o = pcapread.tcp_options(opts)
            ts[not c2s] = "ts" in o
            if c2s:
                mss = o.get("mss", 536)
            else:
                wscale = o.get("wscale", 0)
            continue
        if c2s and flags & 0x01:
            fin = (seq + plen + 1) & 0xFFFFFFFF
        if not c2s:
            # E's TSval too: a held ACK (dupack) reaches N with another
            # ACK number, which alone could pair it with an earlier ACK
            # of E's at that number
            tsv = pcapread.tcp_options(opts).get("ts", (None,))[0]
            out.append(((seq, ack, tsv), win))
    return out, min(wscale, 14), max(mss - (12 if all(ts) else 0), 0), fin


def compare(e_pcap, n_pcap, port):
    e_side, wscale, _, _ = e_segments(e_pcap, port)
    n_side, _, smss, fin = e_segments(n_pcap, port)
    orig = collections.defaultdict(collections.deque)
    for key, win in e_side:
        orig[key].append(win)
    paired = unpaired = clamped = lowered = raised = after_fin = 0
    segs = set()
    for key, win in n_side:
        q = orig.get(key)
        if not q:
            unpaired += 1
            continue
        w0 = q.popleft()
        paired += 1
        if win < w0 and (win << wscale) < CEILING * smss:
            clamped += 1
            segs.add(round((win << wscale) / smss, 2))
            if fin is not None and ((key[1] - fin) & 0xFFFFFFFF) < 0x80000000:
                after_fin += 1
        elif win < w0:
            lowered += 1
        elif win > w0:
            raised += 1
    return {"paired": paired, "unpaired": unpaired, "clamped": clamped, "lowered": lowered,
            "raised": raised,
            "wscale": wscale, "smss": smss, "clamp_segs": sorted(segs),
            "clamped_after_fin": after_fin,
            "min_segs": min(segs) if segs else None, "max_segs": max(segs) if segs else None}


def main(argv):
    if len(argv) != 3:
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    print(json.dumps(compare(argv[0], argv[1], int(argv[2])), sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
