# SPDX-License-Identifier: GPL-2.0
"""Malformed and adversarial TCP/IPv4/IPv6 packets for the fuzz campaign
(vm-testbed/tests/fuzz.sh, issue 11).  Standard library only.

  python3 -m ecnproxy.vmtest.fuzzgen --phase M|O|S --count N --seed SEED --out JSON
      --a NS,IFACE,SRCMAC,DSTMAC,ADDR4,ADDR6
      --b NS,IFACE,SRCMAC,DSTMAC
      [--fuzz4 PREFIX] [--fuzz6 PREFIX] [--pps N]
      [--spoof FAM,A_ADDR,A_PORT,B_ADDR,B_PORT]...

Frames are written whole (AF_PACKET) on two sides of the node under test:
side A (the client's namespace, toward the proxy's eth0) and side B (udp1,
on the proxy's eth1 bridge).  Every packet is a function of (SEED, phase,
its index), so a run is reproduced by its seed.  Flows the generator makes
up have A = side A's address (ADDR4/ADDR6) on ports 10000-19999 and B an
address in the fuzz prefix (198.18.7.0/24, fd8e:c9b0:2a17:7::/64 by
default), which the router blackholes.

Phases, and what the caller can check from the classes counted in JSON:

  M  header damage.  Classes:
       ip_bad    dropped by IP input or before the FORWARD hook (IHL < 5,
                 wrong version, bad IPv4 header checksum, total length
                 beyond the frame, TTL/hop limit 1, IPv6 payload length
                 beyond the frame): no hook sees them;
       frag      IPv4 fragments (first with the TCP header, later ones) and
                 IPv6 packets with a fragment header: forwarded, not TCP
                 for the hooks (not counted);
       ext_cut   IPv6 packets that end inside a destination-options header:
                 forwarded, not TCP for the hooks (not counted);
       ext_long  IPv6 packets whose destination-options header claims
                 more than the packet holds: forwarded, and ipv6_find_hdr()
                 refuses them (-EBADMSG, as in 6.1): not TCP for the
                 hooks (not counted);
       tcp_bad   IP valid (IPv4 options of NOPs, IPv6 extension headers of
                 padding), TCP header truncated (tcp_bad_short), data
                 offset < 5 (tcp_bad_doff), or data offset past the end
                 (tcp_bad_past): each hook counts it `malformed`, exactly
                 once.
  O  option blocks and flag/ECN combinations: stray segments on made-up
     tuples (every flag combination with the AE bit, every ECN codepoint,
     random sequence numbers, option blocks with zero, one-byte, overlong
     and truncated lengths, EOL in the middle, 40 bytes of SACK, signed
     SYNs), and made-up connections that complete a handshake (ECN setup
     or not, so that the proxy upgrades some) and then exchange in-window
     segments with CE, ECE, CWR, SACK blocks, retransmissions, FIN and RST.
     No exact accounting: the state machines must survive it.
  S  blind spoofs on the real connections given with --spoof (their
     4-tuples, not their sequence numbers): payload-free segments from
     either end with uniformly random sequence and ACK numbers, ACK always
     set (or RST), random ECE/CWR/PSH/URG/AE, ECN field and option block.
     The proxy must count every one `out_of_window` (the chance that one
     falls inside both windows is about 1e-8) and change nothing.

Prints nothing; writes the counts per phase, class and family to JSON.
"""
import argparse
import ctypes
import ipaddress
import json
import os
import random
import socket
import struct
import sys
import time

CLONE_NEWNET = 0x40000000
ETH_P_IP, ETH_P_IPV6 = 0x0800, 0x86DD
FIN, SYN, RST, PSH, ACK, URG, ECE, CWR = 1, 2, 4, 8, 16, 32, 64, 128
AE = 0x100   # the former NS bit, byte 12 of the TCP header


def csum(data, start=0):
    if len(data) & 1:
        data += b"\0"
    s = start + sum(struct.unpack("!%dH" % (len(data) // 2), data))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return s


def fold(s):
    return ~s & 0xFFFF


class Side:
    """One AF_PACKET socket, opened inside a network namespace."""

    def __init__(self, spec):
        parts = spec.split(",")
        self.ns, self.ifname = parts[0], parts[1]
        self.src_mac = bytes.fromhex(parts[2].replace(":", ""))
        self.dst_mac = bytes.fromhex(parts[3].replace(":", ""))
        self.addr4 = parts[4] if len(parts) > 4 else None
        self.addr6 = parts[5] if len(parts) > 5 else None
        libc = ctypes.CDLL(None, use_errno=True)
        cur = os.open("/proc/self/ns/net", os.O_RDONLY)
        fd = os.open("/run/netns/" + self.ns, os.O_RDONLY)
        try:
            if libc.setns(fd, CLONE_NEWNET) != 0:
                raise OSError(ctypes.get_errno(), "setns " + self.ns)
            self.sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
            self.sock.bind((self.ifname, 0))
            self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 1 << 22)
        finally:
            libc.setns(cur, CLONE_NEWNET)
            os.close(fd)
            os.close(cur)

    def send(self, ethertype, l3):
        frame = self.dst_mac + self.src_mac + struct.pack("!H", ethertype) + l3
        for _ in range(50):
            try:
                self.sock.send(frame)
                return
            except BlockingIOError:
                time.sleep(0.001)
            except OSError as e:    # ENOBUFS: the device queue is full
                if e.errno != 105:
                    raise
                time.sleep(0.001)
        raise SystemExit("fuzzgen: cannot send on %s in %s" % (self.ifname, self.ns))


# --- TCP option blocks ------------------------------------------------------

def opt_block(r, syn):
    """0-40 bytes of options, padded to a multiple of 4: well-formed and
    damaged options in random order."""
    out = b""
    for _ in range(r.randrange(0, 6)):
        k = r.randrange(24)
        if k == 0:
            o = struct.pack("!BBH", 2, 4, r.choice((0, 1, 536, 1460, 65535)))
        elif k == 1:
            o = bytes((3, 3, r.randrange(256)))
        elif k == 2:
            o = bytes((4, 2))
        elif k in (3, 4):
            n = r.randrange(0, 5)
            base = r.getrandbits(32)
            o = bytes((5, 2 + 8 * n)) + b"".join(
                struct.pack("!II", (base + r.randrange(-70000, 70000)) & 0xFFFFFFFF,
                            (base + r.randrange(-70000, 70000)) & 0xFFFFFFFF)
                for _ in range(n))
        elif k == 5:     # 40 bytes of SACK: a length that is not 2 + 8n
            o = bytes((5, 40)) + r.randbytes(38)
        elif k in (6, 7):
            o = bytes((8, 10)) + r.randbytes(8)
        elif k == 8:
            o = bytes((8, r.choice((2, 6, 9, 11, 12)))) + r.randbytes(8)
        elif k == 9:
            o = bytes((19, 18)) + r.randbytes(16)       # TCP-MD5
        elif k == 10:
            o = bytes((29, r.choice((4, 16, 20)))) + r.randbytes(18)  # TCP-AO
        elif k == 11:
            o = bytes((30, r.randrange(2, 24))) + r.randbytes(22)     # MPTCP
        elif k == 12:
            o = bytes((34, r.choice((2, 10, 18)))) + r.randbytes(16)  # TFO
        elif k == 13:
            o = bytes((r.choice((172, 174)), r.choice((2, 5, 8, 11)))) + r.randbytes(9)
        elif k == 14:
            o = bytes((r.randrange(2, 256), 0))          # zero length
        elif k == 15:
            o = bytes((r.randrange(2, 256), 1))          # length 1
        elif k == 16:
            o = bytes((r.randrange(2, 256), r.randrange(41, 256)))  # overlong
        elif k == 17:
            o = bytes((r.randrange(2, 256),))            # kind, no length
        elif k == 18:
            o = b"\0" + r.randbytes(r.randrange(1, 8))    # EOL, then bytes
        elif k == 19:
            o = b"\1" * r.randrange(1, 8)
        elif k == 20:
            o = r.randbytes(r.randrange(1, 12))
        elif k == 21:
            o = bytes((r.choice((253, 254)), 4)) + r.randbytes(2)
        elif k == 22:
            o = bytes((2, r.choice((0, 2, 3, 5))))        # MSS, wrong length
        else:
            o = bytes((3, r.choice((0, 2, 4)), 14))       # wscale, wrong length
        # a length byte may lie: cut options short at random
        if r.random() < 0.15:
            o = o[:r.randrange(1, len(o) + 1)]
        out += o
    if syn and r.random() < 0.5 and not out:
        out = struct.pack("!BBH", 2, 4, 1460) + bytes((4, 2, 8, 10)) + \
            r.randbytes(8) + bytes((1, 3, 3, 7))
    out = out[:40]
    pad = (-len(out)) % 4
    return out + (b"\1" * pad if r.random() < 0.5 else b"\0" * pad)


# --- headers -----------------------------------------------------------------

def tcp_hdr(sport, dport, seq, ack, flags, win, opts, payload, doff=None):
    off = doff if doff is not None else 5 + len(opts) // 4
    return struct.pack("!HHIIHHHH", sport, dport, seq & 0xFFFFFFFF,
                       ack & 0xFFFFFFFF, (off << 12) | (flags & 0x1FF),
                       win, 0, 0) + opts + payload


def tcp_csum_fix(seg, pseudo):
    c = fold(csum(seg, csum(pseudo)))
    return seg[:16] + struct.pack("!H", c) + seg[18:]


def ipv4(src, dst, ecn, l4, proto=6, ttl=64, ihl=5, frag=0, ident=0,
         tot_len=None, bad_csum=False, version=4):
    opts = b"\1" * ((ihl - 5) * 4) if ihl > 5 else b""
    hl = 20 + len(opts)
    if tot_len is None:
        tot_len = hl + len(l4)
    h = struct.pack("!BBHHHBBH4s4s", (version << 4) | (ihl & 0xF), ecn & 3,
                    tot_len & 0xFFFF, ident, frag, ttl, proto, 0, src, dst) + opts
    c = fold(csum(h))
    if bad_csum:
        c ^= 0x5A5A
    return h[:10] + struct.pack("!H", c) + h[12:] + l4


def ipv6(src, dst, ecn, nh, rest, hlim=64, plen=None, version=6):
    if plen is None:
        plen = len(rest)
    first = (version << 28) | ((ecn & 3) << 20)
    return struct.pack("!IHBB", first, plen & 0xFFFF, nh, hlim) + src + dst + rest


def pseudo4(src, dst, n):
    return src + dst + struct.pack("!BBH", 0, 6, n)


def pseudo6(src, dst, n):
    return src + dst + struct.pack("!IxxxB", n, 6)


class Gen:
    def __init__(self, args):
        self.a = Side(args.a)
        self.b = Side(args.b)
        self.a4 = socket.inet_pton(socket.AF_INET, self.a.addr4)
        self.a6 = socket.inet_pton(socket.AF_INET6, self.a.addr6)
        self.f4 = ipaddress.ip_network(args.fuzz4)
        self.f6 = ipaddress.ip_network(args.fuzz6)
        self.pps = args.pps
        self.counts = {}
        self.sent = 0
        self.t0 = time.monotonic()

    def count(self, cls, fam):
        key = "%s_v%d" % (cls, fam)
        self.counts[key] = self.counts.get(key, 0) + 1

    def pace(self):
        self.sent += 1
        if self.pps and self.sent % 64 == 0:
            ahead = self.sent / self.pps - (time.monotonic() - self.t0)
            if ahead > 0:
                time.sleep(ahead)

    def fuzz_addr(self, r, fam):
        net = self.f4 if fam == 4 else self.f6
        host = r.randrange(1, 255)
        return (net.network_address + host).packed

    # an IP packet carrying TCP segment SEG, both checksums right
    def tcp_packet(self, fam, src, dst, ecn, seg, fix=True):
        if fam == 4:
            if fix:
                seg = tcp_csum_fix(seg, pseudo4(src, dst, len(seg)))
            return ETH_P_IP, ipv4(src, dst, ecn, seg)
        if fix:
            seg = tcp_csum_fix(seg, pseudo6(src, dst, len(seg)))
        return ETH_P_IPV6, ipv6(src, dst, ecn, 6, seg)

    # --- phase M ---------------------------------------------------------------

    def phase_m(self, r):
        fam = r.choice((4, 6))
        from_a = r.random() < 0.5
        side = self.a if from_a else self.b
        asrc = self.a4 if fam == 4 else self.a6
        fz = self.fuzz_addr(r, fam)
        src, dst = (asrc, fz) if from_a else (fz, asrc)
        sport, dport = r.randrange(10000, 20000), r.randrange(1, 65536)
        if not from_a:
            sport, dport = dport, sport
        flags = r.getrandbits(9)
        opts = opt_block(r, flags & SYN)
        payload = r.randbytes(r.choice((0, 0, 1, 20, 100)))
        good = tcp_hdr(sport, dport, r.getrandbits(32), r.getrandbits(32), flags,
                       r.getrandbits(16), opts, payload)
        cls = r.choice(("ip_bad", "frag", "tcp_bad", "tcp_bad", "ext_cut"))
        if cls == "ext_cut" and fam == 4:
            cls = "tcp_bad"
        if cls == "tcp_bad":
            k = r.randrange(4 if fam == 6 else 3)
            if k == 3:      # destination options longer than the packet: ext_long
                seg = good[:r.randrange(0, len(good) + 1)]
                hdr = bytes((6, r.randrange(len(seg) // 8 + 1, 256), 1, 4, 0, 0, 0, 0))
                side.send(ETH_P_IPV6, ipv6(src, dst, r.randrange(4), 60, hdr + seg))
                self.count("ext_long", fam)
                return
            cls = ("tcp_bad_short", "tcp_bad_doff", "tcp_bad_past")[k]
            if k == 0:      # truncated fixed header
                seg = good[:r.randrange(0, 20)]
            elif k == 1:    # data offset below 5
                seg = good[:12] + bytes(((r.randrange(0, 5) << 4) | (good[12] & 0xF),)) + good[13:]
            else:           # data offset past the end of the packet
                n = r.randrange(0, 40)
                seg = tcp_hdr(sport, dport, r.getrandbits(32), r.getrandbits(32), flags,
                              1000, b"\1" * (n & ~3), r.randbytes(n & 3),
                              doff=min(15, 5 + (n & ~3) // 4 + r.randrange(1, 6)))
                if 5 + (n & ~3) // 4 >= 15:
                    seg = seg[:60 - r.randrange(1, 20)]
            if fam == 4:
                l3 = ipv4(src, dst, r.randrange(4), seg, ihl=r.choice((5, 5, 6, 10, 15)))
                side.send(ETH_P_IP, l3)
            else:
                # padding-only extension headers before TCP, or none
                ext, nh = b"", 6
                for _ in range(r.choice((0, 0, 1, 2))):
                    ext = bytes((nh, 0, 1, 4, 0, 0, 0, 0)) + ext    # PadN of 4
                    nh = 60
                if ext and r.random() < 0.5:
                    # hop-by-hop first (must be first), of padding
                    ext = bytes((nh, 0, 1, 4, 0, 0, 0, 0)) + ext
                    nh = 0
                side.send(ETH_P_IPV6, ipv6(src, dst, r.randrange(4), nh, ext + seg))
        elif cls == "frag":
            if fam == 4:
                first = r.random() < 0.5
                frag = 0x2000 if first else r.randrange(1, 0x1FFF) | r.choice((0, 0x2000))
                seg = good if first else r.randbytes(r.randrange(8, 120))
                side.send(ETH_P_IP, ipv4(src, dst, r.randrange(4), seg, frag=frag,
                                         ident=r.getrandbits(16)))
            else:
                off = 0 if r.random() < 0.5 else r.randrange(1, 8000)
                seg = good if off == 0 else r.randbytes(r.randrange(8, 120))
                fh = struct.pack("!BBHI", 6, 0, (off << 3) | r.choice((0, 1)),
                                 r.getrandbits(32))
                side.send(ETH_P_IPV6, ipv6(src, dst, r.randrange(4), 44, fh + seg))
        elif cls == "ext_cut":
            # the packet ends inside the destination-options header
            side.send(ETH_P_IPV6, ipv6(src, dst, r.randrange(4), 60, bytes((6,))[:r.randrange(2)]))
        else:   # ip_bad
            k = r.randrange(5)
            if fam == 4:
                if k == 0:
                    l3 = ipv4(src, dst, 0, good, ihl=r.randrange(0, 5))
                elif k == 1:
                    l3 = ipv4(src, dst, 0, good, version=r.choice((0, 5, 6, 15)))
                elif k == 2:
                    l3 = ipv4(src, dst, 0, good, bad_csum=True)
                elif k == 3:
                    l3 = ipv4(src, dst, 0, good, tot_len=20 + len(good) + r.randrange(1, 400))
                else:
                    l3 = ipv4(src, dst, 0, good, ttl=r.choice((0, 1)))
                side.send(ETH_P_IP, l3)
            else:
                if k in (0, 1):
                    l3 = ipv6(src, dst, 0, 6, good, version=r.choice((0, 4, 7)))
                elif k in (2, 3):
                    l3 = ipv6(src, dst, 0, 6, good, plen=len(good) + r.randrange(1, 400))
                else:
                    l3 = ipv6(src, dst, 0, 6, good, hlim=r.choice((0, 1)))
                side.send(ETH_P_IPV6, l3)
        self.count(cls, fam)

    # --- phase O -----------------------------------------------------------------

    def stray(self, r):
        fam = r.choice((4, 6))
        from_a = r.random() < 0.5
        side = self.a if from_a else self.b
        asrc = self.a4 if fam == 4 else self.a6
        fz = self.fuzz_addr(r, fam)
        src, dst = (asrc, fz) if from_a else (fz, asrc)
        ap, bp = r.randrange(10000, 20000), r.randrange(1, 65536)
        sport, dport = (ap, bp) if from_a else (bp, ap)
        flags = r.getrandbits(9)
        if r.random() < 0.3:
            flags = r.choice((SYN, SYN | ECE | CWR, SYN | ECE | CWR | AE,
                              SYN | ACK, SYN | ACK | ECE, RST, RST | ACK, FIN | ACK))
        seg = tcp_hdr(sport, dport, r.getrandbits(32), r.getrandbits(32), flags,
                      r.getrandbits(16), opt_block(r, flags & SYN),
                      r.randbytes(r.choice((0, 0, 1, 100, 500))))
        et, l3 = self.tcp_packet(fam, src, dst, r.randrange(4), seg,
                                 fix=r.random() < 0.9)
        side.send(et, l3)
        self.count("stray", fam)

    def new_conn(self, r):
        fam = r.choice((4, 6))
        return {
            "fam": fam,
            "a": self.a4 if fam == 4 else self.a6,
            "b": self.fuzz_addr(r, fam),
            "ap": r.randrange(10000, 20000),
            "bp": r.choice((80, 443, 5001, r.randrange(1, 65536))),
            "an": r.getrandbits(32),   # next seq of A and of B
            "bn": r.getrandbits(32),
            "step": 0,
            "life": r.randrange(4, 60),
        }

    def conn_send(self, r, c):
        fam = c["fam"]
        st = c["step"]
        c["step"] += 1
        if st == 0:      # A's SYN: ECN setup (mostly), plain, or AccECN
            from_a = True
            flags = r.choice((SYN | ECE | CWR,) * 3 + (SYN, SYN | ECE | CWR | AE))
            seq, ack, ln = c["an"], 0, 0
            c["an"] += 1
        elif st == 1:    # B's SYN-ACK: plain (the proxy upgrades), or ECN
            from_a = False
            flags = r.choice((SYN | ACK,) * 3 + (SYN | ACK | ECE, SYN | ACK | AE))
            seq, ack, ln = c["bn"], c["an"], 0
            c["bn"] += 1
        else:
            from_a = r.random() < 0.5
            flags = ACK | (r.getrandbits(4) << 3 & (PSH | URG | ECE | CWR))
            if r.random() < 0.05:
                flags |= AE
            ln = r.choice((0, 0, 0, 1, 100, 536, 1000))
            my, other = ("an", "bn") if from_a else ("bn", "an")
            seq, ack = c[my], c[other]
            k = r.random()
            if k < 0.1:          # a retransmission or an old ACK
                seq -= r.randrange(1, 5000)
                ack -= r.randrange(0, 5000)
            elif k < 0.15:       # out of window
                seq += r.randrange(1 << 20, 1 << 31)
            elif k < 0.2:        # data beyond a hole
                seq += r.randrange(1, 3000)
            else:
                c[my] += ln
            if c["step"] > c["life"]:
                flags |= r.choice((FIN, RST, FIN | PSH))
                if flags & FIN:
                    c[my] += 1
        src, dst = (c["a"], c["b"]) if from_a else (c["b"], c["a"])
        sport, dport = (c["ap"], c["bp"]) if from_a else (c["bp"], c["ap"])
        opts = opt_block(r, flags & SYN)
        if flags & ACK and not flags & SYN and r.random() < 0.3:
            # SACK blocks near the peer's data, some inverted or across 0
            other = c["bn"] if from_a else c["an"]
            blocks = b""
            for _ in range(r.randrange(1, 4)):
                lo = other - r.randrange(-3000, 6000)
                hi = lo + r.randrange(-500, 3000)
                blocks += struct.pack("!II", lo & 0xFFFFFFFF, hi & 0xFFFFFFFF)
            opts = (b"\1\1" + bytes((5, 2 + len(blocks))) + blocks)[:40]
            opts += b"\1" * ((-len(opts)) % 4)
        ecn = r.choice((0, 1, 2, 3)) if r.random() < 0.5 else (2 if not from_a else 0)
        seg = tcp_hdr(sport, dport, seq, ack, flags, r.randrange(0, 65536), opts,
                      r.randbytes(ln))
        et, l3 = self.tcp_packet(fam, src, dst, ecn, seg, fix=r.random() < 0.97)
        (self.a if from_a else self.b).send(et, l3)
        self.count("conn", fam)
        return c["step"] > c["life"] + 1

    # --- phase S -----------------------------------------------------------------

    def spoof(self, r, t):
        fam, aaddr, aport, baddr, bport = t
        from_a = r.random() < 0.5
        af = socket.AF_INET if fam == 4 else socket.AF_INET6
        a, b = socket.inet_pton(af, aaddr), socket.inet_pton(af, baddr)
        src, dst = (a, b) if from_a else (b, a)
        sport, dport = (aport, bport) if from_a else (bport, aport)
        if r.random() < 0.15:
            flags = r.choice((RST, RST | ACK))
        else:
            flags = ACK | (r.getrandbits(4) << 3 & (PSH | URG | ECE | CWR))
            if r.random() < 0.1:
                flags |= AE
        seg = tcp_hdr(sport, dport, r.getrandbits(32), r.getrandbits(32), flags,
                      r.getrandbits(16), opt_block(r, False), b"")
        et, l3 = self.tcp_packet(fam, src, dst, r.randrange(4), seg)
        (self.a if from_a else self.b).send(et, l3)
        self.count("spoof", fam)


def parse_spoof(s):
    f = s.split(",")
    if len(f) != 5 or f[0] not in ("4", "6"):
        raise argparse.ArgumentTypeError("--spoof FAM,A_ADDR,A_PORT,B_ADDR,B_PORT")
    return (int(f[0]), f[1], int(f[2]), f[3], int(f[4]))


def main():
    ap = argparse.ArgumentParser(prog="fuzzgen", description=__doc__.split("\n")[0])
    ap.add_argument("--phase", choices=("M", "O", "S"), required=True)
    ap.add_argument("--count", type=int, required=True)
    ap.add_argument("--seed", type=int, required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--a", required=True)
    ap.add_argument("--b", required=True)
    ap.add_argument("--fuzz4", default="198.18.7.0/24")
    ap.add_argument("--fuzz6", default="fd8e:c9b0:2a17:7::/64")
    ap.add_argument("--pps", type=int, default=0)
    ap.add_argument("--spoof", type=parse_spoof, action="append", default=[])
    args = ap.parse_args()
    if args.phase == "S" and not args.spoof:
        ap.error("phase S needs --spoof")

    g = Gen(args)
    # one stream per phase: the packets depend on (seed, phase) only
    r = random.Random("%d/%s" % (args.seed, args.phase))
    if args.phase == "M":
        for _ in range(args.count):
            g.phase_m(r)
            g.pace()
    elif args.phase == "O":
        conns = [g.new_conn(r) for _ in range(64)]
        for _ in range(args.count):
            if r.random() < 0.3:
                g.stray(r)
            else:
                i = r.randrange(len(conns))
                if g.conn_send(r, conns[i]):
                    conns[i] = g.new_conn(r)
            g.pace()
    else:
        for _ in range(args.count):
            g.spoof(r, r.choice(args.spoof))
            g.pace()
    secs = time.monotonic() - g.t0
    out = {"phase": args.phase, "seed": args.seed, "count": args.count,
           "seconds": round(secs, 2), "pps": round(args.count / secs) if secs else 0,
           "classes": dict(sorted(g.counts.items()))}
    with open(args.out, "w") as f:
        json.dump(out, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
