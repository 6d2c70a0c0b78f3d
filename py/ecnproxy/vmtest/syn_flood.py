# SPDX-License-Identifier: GPL-2.0
"""A SYN flood from spoofed sources, for VM test flood.sh.

  python3 -m ecnproxy.vmtest.syn_flood COUNT --src4 NET --dst4 NET
      [--src6 NET --dst6 NET --v6 F] [--hosts LO-HI] [--seconds S]
      [--ecn F] [--seed N]

COUNT SYNs, each of its own connection: a random source address (host LO
to HI of the IPv4 NET; a random interface identifier in the IPv6 NET), a
random source port (1024-65535), a random destination (host LO to HI of
the destination NET, any interface identifier in IPv6) and destination
port (1-65535), a random ISN, MSS/NOP/WS/NOP/NOP/SACK-permitted options
like a real SYN's, and a share F (--ecn, default 0.5) sent as ECN-setup
SYNs (ECE and CWR).  A share F (--v6) of them are IPv6.  Raw sockets with
IPPROTO_RAW (the header is ours): IPv4's header checksum, length and ID
are filled in by the kernel; the TCP checksum (IPv4 and IPv6) is computed
here and is valid.  With --seconds S the SYNs are spread over at least S
seconds (never faster than COUNT/S per second; slower if the machine is).

A send that fails for lack of buffer space (ENOBUFS, EAGAIN) is retried
after 1 ms, up to 1000 times; a SIGTERM or SIGINT stops the flood.  At
the end one JSON line: {"sent", "sent4", "sent6", "failed", "retries",
"seconds", "stopped"}.  Standard library only.
"""
import argparse
import errno
import ipaddress
import json
import random
import signal
import socket
import struct
import sys
import time

# MSS 1460, NOP, window scale 7, NOP, NOP, SACK permitted: 12 bytes
OPTS = bytes([2, 4, 0x05, 0xb4, 1, 3, 3, 7, 1, 1, 4, 2])
THLEN = 20 + len(OPTS)
SYN, ECE, CWR = 0x02, 0x40, 0x80

stop = False


def on_signal(_sig, _frame):
    global stop
    stop = True


def csum_fold(s):
    while s >> 16:
        s = (s & 0xffff) + (s >> 16)
    return ~s & 0xffff


def words(b):
    return sum(struct.unpack("!%dH" % (len(b) // 2), b))


def tcp_header(sport, dport, seq, flags, win):
    return struct.pack("!HHIIBBHHH", sport, dport, seq, 0, (THLEN // 4) << 4,
                       flags, win, 0, 0) + OPTS


def tcp_checksum(pseudo, th):
    return csum_fold(words(pseudo) + words(th))


def syn4(src, dst, th):
    pseudo = src + dst + struct.pack("!BBH", 0, socket.IPPROTO_TCP, THLEN)
    th = th[:16] + struct.pack("!H", tcp_checksum(pseudo, th)) + th[18:]
    # version/IHL, TOS, total length, ID (0: the kernel picks one), frag,
    # TTL, protocol, checksum (the kernel fills it)
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + THLEN, 0, 0, 64,
                     socket.IPPROTO_TCP, 0, src, dst)
    return ip + th


def syn6(src, dst, th):
    pseudo = src + dst + struct.pack("!I3xB", THLEN, socket.IPPROTO_TCP)
    th = th[:16] + struct.pack("!H", tcp_checksum(pseudo, th)) + th[18:]
    ip = struct.pack("!IHBB16s16s", 6 << 28, THLEN, socket.IPPROTO_TCP, 64,
                     src, dst)
    return ip + th


def host_range(text):
    lo, _, hi = text.partition("-")
    lo, hi = int(lo), int(hi or lo)
    if not 1 <= lo <= hi:
        raise argparse.ArgumentTypeError("hosts must be LO-HI, 1 <= LO <= HI")
    return lo, hi


def main():
    ap = argparse.ArgumentParser(prog="syn_flood", description=__doc__.split("\n")[0])
    ap.add_argument("count", type=int)
    ap.add_argument("--src4", type=ipaddress.IPv4Network, required=True)
    ap.add_argument("--dst4", type=ipaddress.IPv4Network, required=True)
    ap.add_argument("--src6", type=ipaddress.IPv6Network)
    ap.add_argument("--dst6", type=ipaddress.IPv6Network)
    ap.add_argument("--v6", type=float, default=0.0, help="share of IPv6 SYNs")
    ap.add_argument("--hosts", type=host_range, default=(16, 254),
                    help="IPv4 host numbers LO-HI in the networks")
    ap.add_argument("--ecn", type=float, default=0.5,
                    help="share of ECN-setup SYNs")
    ap.add_argument("--seconds", type=float, default=0.0)
    ap.add_argument("--seed", type=int)
    a = ap.parse_args()
    if a.v6 > 0 and (a.src6 is None or a.dst6 is None):
        ap.error("--v6 needs --src6 and --dst6")
    for net in (a.src4, a.dst4):
        if a.hosts[1] >= net.num_addresses - 1:
            ap.error("--hosts %d-%d does not fit in %s" % (*a.hosts, net))

    rnd = random.Random(a.seed)
    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    s4 = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_RAW)
    s6 = None
    if a.v6 > 0:
        s6 = socket.socket(socket.AF_INET6, socket.SOCK_RAW, socket.IPPROTO_RAW)
    src4, dst4 = int(a.src4.network_address), int(a.dst4.network_address)
    src6 = int(a.src6.network_address) if s6 else 0
    dst6 = int(a.dst6.network_address) if s6 else 0
    mask6s = (1 << (128 - a.src6.prefixlen)) - 1 if s6 else 0
    mask6d = (1 << (128 - a.dst6.prefixlen)) - 1 if s6 else 0
    lo, hi = a.hosts

    sent4 = sent6 = failed = retries = 0
    t0 = time.monotonic()
    for k in range(a.count):
        if stop:
            break
        flags = SYN | (ECE | CWR if rnd.random() < a.ecn else 0)
        th = tcp_header(rnd.randint(1024, 65535), rnd.randint(1, 65535),
                        rnd.getrandbits(32), flags, rnd.randint(1024, 65535))
        if s6 and rnd.random() < a.v6:
            src = (src6 | (rnd.getrandbits(64) & mask6s) | 1).to_bytes(16, "big")
            dst = (dst6 | (rnd.getrandbits(64) & mask6d) | 1).to_bytes(16, "big")
            sock, pkt = s6, syn6(src, dst, th)
            addr = (socket.inet_ntop(socket.AF_INET6, dst), 0)
        else:
            src = struct.pack("!I", src4 + rnd.randint(lo, hi))
            dst = struct.pack("!I", dst4 + rnd.randint(lo, hi))
            sock, pkt = s4, syn4(src, dst, th)
            addr = (socket.inet_ntoa(dst), 0)
        for _ in range(1000):
            try:
                sock.sendto(pkt, addr)
            except OSError as e:
                if e.errno not in (errno.ENOBUFS, errno.EAGAIN) or stop:
                    failed += 1
                    break
                retries += 1
                time.sleep(0.001)
                continue
            if sock is s4:
                sent4 += 1
            else:
                sent6 += 1
            break
        else:
            failed += 1
        # pacing: SYN k+1 not before t0 + (k+1)/COUNT * S
        if a.seconds > 0 and k % 32 == 31:
            ahead = t0 + (k + 1) * a.seconds / a.count - time.monotonic()
            if ahead > 0:
                time.sleep(ahead)
    print(json.dumps({"sent": sent4 + sent6, "sent4": sent4, "sent6": sent6,
                      "failed": failed, "retries": retries,
                      "seconds": round(time.monotonic() - t0, 3),
                      "stopped": stop}))
    sys.stdout.flush()


if __name__ == "__main__":
    main()
