# SPDX-License-Identifier: GPL-2.0
"""ACKs that reach a dupack-proxied sender with a TSecr older than its
retransmission of L (what Linux's Eifel check, tcp_packet_delayed(),
undoes a reduction for).

  scripts/ecnproxy stale-tsecr CLIENT_SIDE_PCAP[.xz] [WINDOW_S]
  (the capture next to the sender, N)

The data connection is the one with the most payload.  A retransmission
is a data segment that ends at or below the highest sequence sent
before: the proxy's "lost" segment L, and N's own retransmissions too
(this capture alone cannot tell them apart).  For each, the first ACK within WINDOW_S (default 0.05 s) whose
TSecr is non-zero and before the retransmission's TSval is reported:
its delay after the retransmission, its ACK number minus the
retransmitted sequence (0: at it, which is an ACK held at L only when
the retransmission is a copy of L; above: beyond it) and whether it
carries SACK blocks.  Prints the counts and the first 15.

Most of what it lists can be N's own: in
results/vmtest-dupack-trim-20261201 (CUBIC, SACK and timestamps) 41 of
the 42 were (kmod/ecn_proxy/DUPACK.md, "Stale TSecrs at N").
"""
import bisect
import collections
import sys

from . import pcapread


def older(a, b):
    return a != b and ((b - a) & 0xFFFFFFFF) < 1 << 31


def main(argv):
    if not argv:
        print(__doc__, file=sys.stderr)
        return 2
    window = float(argv[1]) if len(argv) > 1 else 0.05
    pk = list(pcapread.read_segments(argv[0]))
    by = collections.Counter()
    for p in pk:
        by[(p[4], p[5])] += p[10]
    (cport, sport), _ = by.most_common(1)[0]
    hi, rexmits, acks = None, [], []
    for t, _e, _s, _d, sp, dp, seq, ack, _fl, _w, plen, o in pk:
        opts = pcapread.tcp_options(o)
        if sp == cport and plen:
            end = (seq + plen) & 0xFFFFFFFF
            if hi is not None and not older(hi, end):
                rexmits.append((t, seq, opts.get("ts", (0, 0))[0]))
            if hi is None or older(hi, end):
                hi = end
        elif sp == sport and not plen:
            acks.append((t, ack, opts.get("ts", (0, 0))[1], bool(opts.get("sack"))))
    at = [a[0] for a in acks]
    found = []
    for t, seq, tsval in rexmits:
        for a in acks[bisect.bisect_right(at, t):]:
            if a[0] > t + window:
                break
            if a[2] and older(a[2], tsval):
                found.append((round((a[0] - t) * 1000, 2), (a[1] - seq) & 0xFFFFFFFF,
                              tsval - a[2], a[3]))
                break
    print("retransmissions %d; followed within %.0f ms by an ACK with an older TSecr: %d "
          "(ACK at the retransmitted sequence: %d, beyond it: %d; L and N's own "
          "retransmissions alike)" % (
              len(rexmits), window * 1000, len(found), sum(1 for f in found if not f[1]),
              sum(1 for f in found if f[1])))
    print("first 15 (ms after, ACK - retransmitted sequence, TSval - TSecr, SACK):",
          found[:15])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
