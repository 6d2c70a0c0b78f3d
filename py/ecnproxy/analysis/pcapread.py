# SPDX-License-Identifier: GPL-2.0
"""Reading classic pcap files into TCP segments (standard library only).

Any snap length (the payload length comes from the IP header, so
`tcpdump -s 128` captures are enough); Ethernet (with VLAN tags), Linux
cooked (v1/v2) or raw IP link types; IPv4 and IPv6; a file whose name ends
in .xz is decompressed.  Used by pcapflow.py and stalls.py (flows and their
stalls), by the guest runners and by the VM tests' capture helpers
(ecnproxy.vmtest), which run inside the TCG guest, where tshark takes
minutes to start.

  records(path)       (time, linktype, frame, fully captured) per record
  read_packets(path)  (time, ecn, src, dst, sport, dport, seq, ack, flags,
                      win, plen) per TCP packet
  read_segments(path) the same plus the TCP options as captured (bytes)
  network(frame, linktype)  (ethertype, offset of the IP header)
  tcp_options(raw)    {"mss", "wscale", "sack_ok", "ts", "sack"}
  FIN ... CWR         the TCP flag bits
"""
import struct

FIN, SYN, RST, PSH, ACK, URG, ECE, CWR = 1, 2, 4, 8, 16, 32, 64, 128

LINK_ETH, LINK_RAW, LINK_RAW2, LINK_SLL, LINK_SLL2 = 1, 101, 12, 113, 276


class PcapError(Exception):
    pass


def records(path):
    """Yield (time, linktype, frame bytes, fully captured) for every record
    of a classic pcap file (compressed with xz if its name ends in .xz)."""
    if path.endswith(".xz"):
        import lzma
        with lzma.open(path, "rb") as f:
            data = f.read()
    else:
        with open(path, "rb") as f:
            data = f.read()
    if len(data) < 24:
        if not data:
            return
        raise PcapError("%s: truncated pcap header" % path)
    magic = data[:4]
    if magic == b"\xd4\xc3\xb2\xa1":
        endian, div = "<", 1e6
    elif magic == b"\xa1\xb2\xc3\xd4":
        endian, div = ">", 1e6
    elif magic == b"\x4d\x3c\xb2\xa1":
        endian, div = "<", 1e9
    elif magic == b"\xa1\xb2\x3c\x4d":
        endian, div = ">", 1e9
    else:
        raise PcapError("%s: not a classic pcap file (pcapng?)" % path)
    linktype = struct.unpack(endian + "I", data[20:24])[0] & 0x0FFFFFFF
    rec = struct.Struct(endian + "IIII")
    off = 24
    n = len(data)
    while off + 16 <= n:
        sec, frac, incl, orig = rec.unpack_from(data, off)
        off += 16
        pkt = data[off:off + incl]
        off += incl
        if len(pkt) < incl:
            break  # last record cut short (capture killed)
        yield sec + frac / div, linktype, pkt, incl == orig


def read_packets(path):
    """Yield (time, ecn, src, dst, sport, dport, seq, ack, flags, win, plen)
    for every TCP packet of a pcap."""
    for p in read_segments(path):
        yield p[:-1]


def read_segments(path):
    """read_packets() plus a last element: the TCP options as captured
    (bytes, cut short by the snap length; b"" without options)."""
    for t, linktype, pkt, _full in records(path):
        p = _parse(pkt, linktype)
        if p is not None:
            yield (t,) + p


def network(pkt, linktype):
    """(ethertype, offset of the IP header) of a frame, or None."""
    if linktype == LINK_ETH:
        if len(pkt) < 14:
            return None
        etype = (pkt[12] << 8) | pkt[13]
        o = 14
        while etype in (0x8100, 0x88A8) and len(pkt) >= o + 4:
            etype = (pkt[o + 2] << 8) | pkt[o + 3]
            o += 4
    elif linktype == LINK_SLL:
        if len(pkt) < 16:
            return None
        etype = (pkt[14] << 8) | pkt[15]
        o = 16
    elif linktype == LINK_SLL2:
        if len(pkt) < 20:
            return None
        etype = (pkt[0] << 8) | pkt[1]
        o = 20
    elif linktype in (LINK_RAW, LINK_RAW2):
        if not pkt:
            return None
        etype = 0x0800 if pkt[0] >> 4 == 4 else 0x86DD
        o = 0
    else:
        raise PcapError("unsupported link type %d" % linktype)
    return etype, o


def _parse(pkt, linktype):
    net = network(pkt, linktype)
    if net is None:
        return None
    etype, o = net
    if etype == 0x0800:
        if len(pkt) < o + 20 or pkt[o + 9] != 6:
            return None
        ihl = (pkt[o] & 0x0F) * 4
        ecn = pkt[o + 1] & 3
        tot = (pkt[o + 2] << 8) | pkt[o + 3]
        src, dst = pkt[o + 12:o + 16], pkt[o + 16:o + 20]
        t = o + ihl
        l4len = tot - ihl
    elif etype == 0x86DD:
        if len(pkt) < o + 40 or pkt[o + 6] != 6:
            return None
        ecn = (pkt[o + 1] >> 4) & 3
        l4len = (pkt[o + 4] << 8) | pkt[o + 5]
        src, dst = pkt[o + 8:o + 24], pkt[o + 24:o + 40]
        t = o + 40
    else:
        return None
    if len(pkt) < t + 20:
        return None
    sport, dport, seq, ack, offfl, flags, win = struct.unpack_from("!HHIIBBH", pkt, t)
    doff = (offfl >> 4) * 4
    plen = l4len - doff
    return (ecn, _addr(src), _addr(dst), sport, dport, seq, ack, flags, win, max(plen, 0),
            pkt[t + 20:t + doff] if doff > 20 else b"")


def iter_options(raw):
    """Yield (kind, value bytes) of each TCP option in raw, as far as
    captured: NOPs skipped; stops at EOL, at a length below 2 and at an
    option cut short."""
    i, n = 0, len(raw)
    while i < n:
        kind = raw[i]
        if kind == 0:
            return
        if kind == 1:
            i += 1
            continue
        if i + 1 >= n:
            return
        ln = raw[i + 1]
        if ln < 2 or i + ln > n:
            return
        yield kind, raw[i + 2:i + ln]
        i += ln


def tcp_options(raw):
    """{kind: value} of the TCP options in raw (iter_options()): "mss",
    "wscale" (ints, as on the wire: a shift above 14 is not clamped),
    "sack_ok" (True), "ts" ((TSval, TSecr)), "sack" ([(left, right), ...]
    absolute)."""
    out = {}
    for kind, v in iter_options(raw):
        ln = len(v) + 2
        if kind == 2 and ln == 4:
            out["mss"] = (v[0] << 8) | v[1]
        elif kind == 3 and ln == 3:
            out["wscale"] = v[0]
        elif kind == 4:
            out["sack_ok"] = True
        elif kind == 8 and ln == 10:
            out["ts"] = struct.unpack("!II", v)
        elif kind == 5 and (ln - 2) % 8 == 0:
            out.setdefault("sack", []).extend(
                struct.unpack_from("!II", v, j) for j in range(0, ln - 2, 8))
    return out


def _addr(b):
    if len(b) == 4:
        return "%d.%d.%d.%d" % tuple(b)
    return ":".join("%x" % ((b[i] << 8) | b[i + 1]) for i in range(0, 16, 2))
