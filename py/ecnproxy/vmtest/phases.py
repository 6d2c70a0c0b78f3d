# SPDX-License-Identifier: GPL-2.0
"""One TCP connection in phases, with idle periods between them (standard
library only), for tests of long-idle connections.

  python3 -m ecnproxy.vmtest.phases server PORT [--family 4|6]
      accept one connection and serve its requests until EOF:
        "DOWN n\\n"  send n bytes
        "UP n\\n"    read n bytes, answer "OK <sha256>\\n"
  python3 -m ecnproxy.vmtest.phases client HOST PORT STEP...
      connect, then run each STEP in order: "down:N" (ask for N bytes and
      read them), "up:N" (send N bytes, wait for the server's OK), "idle:S"
      (sleep S seconds, the connection silent), "mark:NAME" (write NAME
      and the time to the file given by --marks, for the test to act
      between steps: it waits for NAME.go to appear next to that file)
      --marks FILE
      --timeout S   give up on a socket operation after S s (120); the
                    step then fails with its error and the rest are not run

Prints one JSON line: {"ok": bool, "steps": [{"step", "bytes", "seconds",
"sha256_ok", "error"}...]} ("error": the socket error that ended the step,
e.g. "timeout" or "ConnectionResetError", only when there was one).  The
data are pseudo-random (seeded by the byte count), so both ends compare
digests.
"""
import hashlib
import json
import os
import random
import socket
import sys
import time

CHUNK = 65536


def payload(n):
    return random.Random(n).randbytes(n)


def recv_exact(sock, n):
    h = hashlib.sha256()
    got = 0
    while got < n:
        b = sock.recv(min(CHUNK, n - got))
        if not b:
            break
        h.update(b)
        got += len(b)
    return got, h.hexdigest()


def recv_line(sock):
    line = b""
    while not line.endswith(b"\n"):
        b = sock.recv(1)
        if not b:
            return None
        line += b
    return line.decode().strip()


def server(port, family):
    fam = socket.AF_INET6 if family == 6 else socket.AF_INET
    ls = socket.socket(fam, socket.SOCK_STREAM)
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind(("::" if family == 6 else "0.0.0.0", port))
    ls.listen(1)
    s, _ = ls.accept()
    served = []
    while True:
        req = recv_line(s)
        if req is None:
            break
        op, n = req.split()
        n = int(n)
        if op == "DOWN":
            s.sendall(payload(n))
            served.append({"down": n})
        elif op == "UP":
            got, digest = recv_exact(s, n)
            ok = got == n and digest == hashlib.sha256(payload(n)).hexdigest()
            s.sendall(("OK %s\n" % digest).encode())
            served.append({"up": n, "ok": ok})
    s.close()
    print(json.dumps({"served": served}))


def client(host, port, steps, marks, timeout=120):
    fam = socket.AF_INET6 if ":" in host else socket.AF_INET
    s = socket.create_connection((host, port), timeout=timeout)
    s.settimeout(timeout)
    out = []
    ok = True
    for step in steps:
        kind, arg = step.split(":", 1)
        t0 = time.monotonic()
        rec = {"step": step}
        try:
            run_step(s, kind, arg, rec, marks)
        except OSError as e:
            rec["sha256_ok"] = False
            rec["error"] = "timeout" if isinstance(e, socket.timeout) else type(e).__name__
        rec["seconds"] = round(time.monotonic() - t0, 3)
        ok = ok and rec["sha256_ok"]
        out.append(rec)
        if "error" in rec:
            break
    s.close()
    print(json.dumps({"ok": ok, "family": 6 if fam == socket.AF_INET6 else 4,
                      "steps": out}))
    return 0 if ok else 1


def run_step(s, kind, arg, rec, marks):
    """One client step on socket s; fills rec."""
    if kind == "down":
        n = int(arg)
        s.sendall(("DOWN %d\n" % n).encode())
        got, digest = recv_exact(s, n)
        rec["bytes"] = got
        rec["sha256_ok"] = (got == n and
                            digest == hashlib.sha256(payload(n)).hexdigest())
    elif kind == "up":
        n = int(arg)
        s.sendall(("UP %d\n" % n).encode())
        s.sendall(payload(n))
        answer = recv_line(s) or ""
        rec["bytes"] = n
        rec["sha256_ok"] = answer == "OK " + hashlib.sha256(payload(n)).hexdigest()
    elif kind == "idle":
        time.sleep(float(arg))
        rec["sha256_ok"] = True
    elif kind == "mark":
        with open(marks, "a") as f:
            f.write("%s %.3f\n" % (arg, time.time()))
        go = os.path.join(os.path.dirname(marks), arg + ".go")
        deadline = time.monotonic() + 300
        while not os.path.exists(go) and time.monotonic() < deadline:
            time.sleep(0.1)
        rec["sha256_ok"] = os.path.exists(go)
    else:
        raise SystemExit("phases: unknown step %r" % kind)


def main(argv):
    if len(argv) >= 3 and argv[1] == "server":
        fam = 6 if "--family" in argv and argv[argv.index("--family") + 1] == "6" else 4
        server(int(argv[2]), fam)
        return 0
    if len(argv) >= 4 and argv[1] == "client":
        marks = None
        timeout = 120.0
        args = argv[2:]
        if "--marks" in args:
            i = args.index("--marks")
            marks = args[i + 1]
            del args[i:i + 2]
        if "--timeout" in args:
            i = args.index("--timeout")
            timeout = float(args[i + 1])
            del args[i:i + 2]
        return client(args[0], int(args[1]), args[2:], marks, timeout)
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
