# SPDX-License-Identifier: GPL-2.0
"""Byte-exact TCP transfers for the VM tests (standard library only).

  python3 -m ecnproxy.vmtest.xfer server PORT SEND_BYTES [--family 4|6]
      accept one connection, read until the peer shuts down its sending
      side, then send SEND_BYTES and close; print a JSON summary (with
      --mptcp the listener stays open until then, for the connection's
      further subflows)
  python3 -m ecnproxy.vmtest.xfer client HOST PORT SEND_BYTES
      connect, send SEND_BYTES, shut down the sending side, read until EOF;
      print a JSON summary
  options (after the arguments, either end):
      --mptcp      a Multipath TCP socket (IPPROTO_MPTCP, 262): the summary
                   gets "mptcp": whether the connection is still MPTCP at
                   the end (TCP_IS_MPTCP: 0 once it fell back to TCP) and
                   MPTCP_INFO's fields (or the error it gave: a fallen-back
                   socket answers as its TCP subflow, which has none)
      --timeout S  give up after S seconds without progress (client: 120;
                   server: none by default)
      --pause S    client: wait S seconds after sending, before shutting
                   down its sending side (so that its last data segment is
                   not followed at once by its FIN: impair's coalesce
                   releases a held segment on the flow's FIN)

The data are pseudo-random (seeded by the byte count), so both ends can
compare SHA-256 digests: {"sent": N, "sent_sha256": ..., "received": N,
"received_sha256": ..., "seconds": T, "max_gap": G}; G is the longest time
(s) between two reads that returned data, from the first to the last: a
stall as the receiving application saw it, independent of any capture.
The client gives up after 120 s without progress (connect, or one 64 KiB
chunk sent or received), not after 120 s in all: a slow but moving
transfer of any size completes.  A transfer that fails (reset, timeout)
still prints its summary, with "error" and the bytes received until then,
and exits 1.
"""
import hashlib
import json
import random
import socket
import struct
import sys
import time

CHUNK = 65536
IPPROTO_MPTCP = getattr(socket, "IPPROTO_MPTCP", 262)
SOL_MPTCP = 284
MPTCP_INFO = 1
TCP_IS_MPTCP = 43
# struct mptcp_info (include/uapi/linux/mptcp.h) with C's alignment ("@"):
# its first 14 fields since Linux 5.16, the last five since 6.5 or so;
# a kernel fills as many bytes as it knows (parse_info keeps only those)
INFO_FMT = "@BBBBBBIIQQQBBBIQQQQ"
INFO_FIELDS = ("subflows", "add_addr_signal", "add_addr_accepted", "subflows_max",
               "add_addr_signal_max", "add_addr_accepted_max", "flags", "token",
               "write_seq", "snd_una", "rcv_nxt", "local_addr_used", "local_addr_max",
               "csum_enabled", "retransmits", "bytes_retrans", "bytes_sent",
               "bytes_received", "bytes_acked")


def payload(n):
    return random.Random(n).randbytes(n)


def parse_info(raw):
    """MPTCP_INFO's bytes -> {field: value} (as far as they reach; flags
    bit 0: fell back to TCP, bit 1: the peer's key received)."""
    raw = bytes(raw)
    n = struct.calcsize(INFO_FMT)
    vals = struct.unpack(INFO_FMT, raw[:n] + bytes(max(0, n - len(raw))))
    out = {"len": len(raw)}
    for i, (k, v) in enumerate(zip(INFO_FIELDS, vals)):
        # a field the kernel did not fill (its end beyond what it gave)
        end = struct.calcsize("@" + INFO_FMT[1:i + 2])
        if end <= len(raw):
            out[k] = v
    return out


def mptcp_state(sock):
    """What the kernel says of an MPTCP socket now: {"is_mptcp": 1/0 (None
    if unanswered), "info": {...} or None, "info_error": ...}."""
    out = {"is_mptcp": None, "info": None, "info_error": None}
    try:
        out["is_mptcp"] = sock.getsockopt(socket.IPPROTO_TCP, TCP_IS_MPTCP)
    except OSError as e:
        out["is_mptcp_error"] = str(e)
    try:
        out["info"] = parse_info(sock.getsockopt(SOL_MPTCP, MPTCP_INFO, 256))
    except OSError as e:
        out["info_error"] = str(e)
    return out


def exchange(sock, send_first, nbytes, mptcp=False, pause=0.0):
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

    error = None
    state = None
    try:
        if send_first:
            send_all()
            if pause:
                time.sleep(pause)
            sock.shutdown(socket.SHUT_WR)
            recv_all()
        else:
            recv_all()
            send_all()
            sock.shutdown(socket.SHUT_WR)
    except OSError as e:  # reset, timeout: the summary says so
        error = "%s: %s" % (type(e).__name__, e)
    if mptcp:
        state = mptcp_state(sock)
    sock.close()
    res = {
        "sent": nbytes,
        "sent_sha256": hashlib.sha256(data).hexdigest(),
        "received": received,
        "received_sha256": rx.hexdigest(),
        "seconds": round(time.monotonic() - t0, 3),
        "max_gap": round(gap[0], 3),
    }
    if error:
        res["error"] = error
    if mptcp:
        res["mptcp"] = state
    return res


def options(argv):
    """-> (positional arguments, --mptcp, --timeout or None, --family,
    --pause or 0)."""
    pos, mptcp, timeout, fam, pause = [], False, None, "4", 0.0
    it = iter(argv)
    for a in it:
        if a == "--mptcp":
            mptcp = True
        elif a == "--timeout":
            timeout = float(next(it, "x"))
        elif a == "--family":
            fam = next(it, "")
        elif a == "--pause":
            pause = float(next(it, "x"))
            if not pause >= 0:
                raise ValueError("--pause: seconds, at least 0")
        else:
            pos.append(a)
    return pos, mptcp, timeout, fam, pause


def main(argv):
    try:
        argv, mptcp, timeout, fam, pause = options(argv)
    except ValueError:
        sys.exit(__doc__)
    proto = IPPROTO_MPTCP if mptcp else 0
    if len(argv) == 3 and argv[0] == "server":
        fam = socket.AF_INET6 if fam == "6" else socket.AF_INET
        srv = socket.socket(fam, socket.SOCK_STREAM, proto)
        srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        srv.bind(("::" if fam == socket.AF_INET6 else "0.0.0.0", int(argv[1])))
        srv.listen(1)
        conn, _ = srv.accept()
        if not mptcp:
            srv.close()
        conn.settimeout(timeout)
        # MPTCP: a further subflow's MP_JOIN SYN is taken by the listener
        # (without one, the server's TCP answers it with a RST), so it
        # stays open until the transfer ends
        try:
            res = exchange(conn, False, int(argv[2]), mptcp)
        finally:
            srv.close()
    elif len(argv) == 4 and argv[0] == "client":
        timeout = 120 if timeout is None else timeout
        if mptcp:
            ai = socket.getaddrinfo(argv[1], int(argv[2]), 0, socket.SOCK_STREAM)[0]
            conn = socket.socket(ai[0], socket.SOCK_STREAM, proto)
            conn.settimeout(timeout)
            try:
                conn.connect(ai[4])
            except OSError as e:
                print(json.dumps({"sent": 0, "received": 0, "seconds": 0, "mptcp": None,
                                  "error": "connect: %s: %s" % (type(e).__name__, e)}))
                sys.exit(1)
        else:
            conn = socket.create_connection((argv[1], int(argv[2])), timeout=timeout)
        res = exchange(conn, True, int(argv[3]), mptcp, pause)
    else:
        sys.exit(__doc__)
    print(json.dumps(res))
    if "error" in res:
        sys.exit(1)


if __name__ == "__main__":
    main(sys.argv[1:])
