# SPDX-License-Identifier: GPL-2.0
"""Send SYNs of COUNT distinct connections, for scripts/bench-flows.

  python3 -m ecnproxy.vmtest.syn_fill SRC DST COUNT [FIRST]

One SYN per (source port, destination port) key, source ports 1024-65535
and destination ports 20000 and up, starting with key number FIRST (so
calls can add flows to the same table).  Raw IPv4 socket (the kernel fills
the IP checksum and length); the TCP checksum is left 0: the packets only
have to reach the proxy's FORWARD hook, and the router drops them.
Standard library only.
"""
import socket
import struct
import sys

NPORTS = 65536 - 1024


def main():
    if len(sys.argv) not in (4, 5):
        sys.exit(__doc__)
    src, dst, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
    first = int(sys.argv[4]) if len(sys.argv) > 4 else 0
    s = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_RAW)
    sa, da = socket.inet_aton(src), socket.inet_aton(dst)
    ip = bytearray(struct.pack("!BBHHHBBH4s4s", 0x45, 0, 40, 0, 0, 64, socket.IPPROTO_TCP, 0,
                               sa, da))
    tcp = bytearray(struct.pack("!HHIIBBHHH", 0, 0, 1, 0, 5 << 4, 0x02, 65535, 0, 0))
    pkt = ip + tcp
    for k in range(first, first + count):
        struct.pack_into("!HH", pkt, 20, 1024 + k % NPORTS, 20000 + k // NPORTS)
        struct.pack_into("!I", pkt, 24, k)
        try:
            s.sendto(pkt, (dst, 0))
        except OSError:
            pass        # ENOBUFS: the caller tops up by flows_active


if __name__ == "__main__":
    main()
