# SPDX-License-Identifier: GPL-2.0
"""Byte-exact TCP transfers for the VM tests (standard library only).

  python3 -m ecnproxy.vmtest.xfer server PORT SEND_BYTES [--family 4|6]
      accept one connection, read until the peer shuts down its sending
      side, then send SEND_BYTES and close; print a JSON summary
  python3 -m ecnproxy.vmtest.xfer client HOST PORT SEND_BYTES
      connect, send SEND_BYTES, shut down the sending side, read until EOF;
      print a JSON summary

The data are pseudo-random (seeded by the byte count), so both ends can
compare SHA-256 digests: {"sent": N, "sent_sha256": ..., "received": N,
"received_sha256": ..., "seconds": T, "max_gap": G}; G is the longest time
(s) between two reads that returned data, from the first to the last: a
stall as the receiving application saw it, independent of any capture.
The client gives up after 120 s without progress (connect, or one 64 KiB
chunk sent or received), not after 120 s in all: a slow but moving
transfer of any size completes.
"""
import hashlib
import json
import random
import socket
import sys
import time

CHUNK = 65536


def payload(n):
    return random.Random(n).randbytes(n)


def exchange(sock, send_first, nbytes):
    data = payload(nbytes)
    rx = hashlib.sha256()
    received = 0
    t0 = time.monotonic()
    gap = [0.0, None]   # longest gap, time of the last read with data

    def recv_all():
        nonlocal received
        while True:
            buf = sock.recv(CHUNK)
            if not buf:
                return
            now = time.monotonic()
            if gap[1] is not None:
                gap[0] = max(gap[0], now - gap[1])
            gap[1] = now
            rx.update(buf)
            received += len(buf)

    def send_all():
        # sendall()'s timeout bounds the whole call (Python >= 3.5): send
        # by chunks, so that the timeout bounds a wait for progress
        view = memoryview(data)
        for off in range(0, nbytes, CHUNK):
            sock.sendall(view[off:off + CHUNK])

    if send_first:
        send_all()
        sock.shutdown(socket.SHUT_WR)
        recv_all()
    else:
        recv_all()
        send_all()
        sock.shutdown(socket.SHUT_WR)
    sock.close()
    return {
        "sent": nbytes,
        "sent_sha256": hashlib.sha256(data).hexdigest(),
        "received": received,
        "received_sha256": rx.hexdigest(),
        "seconds": round(time.monotonic() - t0, 3),
        "max_gap": round(gap[0], 3),
    }


def main(argv):
    if len(argv) >= 3 and argv[0] == "server":
        fam = socket.AF_INET6 if "--family" in argv and argv[argv.index("--family") + 1] == "6" \
            else socket.AF_INET
        srv = socket.socket(fam, socket.SOCK_STREAM)
        srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        srv.bind(("::" if fam == socket.AF_INET6 else "0.0.0.0", int(argv[1])))
        srv.listen(1)
        conn, _ = srv.accept()
        srv.close()
        res = exchange(conn, False, int(argv[2]))
    elif len(argv) == 4 and argv[0] == "client":
        conn = socket.create_connection((argv[1], int(argv[2])), timeout=120)
        res = exchange(conn, True, int(argv[3]))
    else:
        sys.exit(__doc__)
    print(json.dumps(res))


if __name__ == "__main__":
    main(sys.argv[1:])
