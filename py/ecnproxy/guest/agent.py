# SPDX-License-Identifier: GPL-2.0
"""Per-namespace agent of the matrix (runs inside the guest).

  ip netns exec NS python3 -m ecnproxy.guest.agent [--serve PORT]

One long-lived process per namespace (client, server, proxy), so that a run
costs no process start-ups (a Python start takes ~1 s under TCG).  Reads one
JSON command per line on stdin, answers one JSON line on stdout:

  {"op": "sysctl", "set": {"net/ipv4/tcp_ecn": "1"}, "get": [paths]}
      write, then read /proc/sys/PATH in this namespace
  {"op": "read", "paths": [...]}            file contents
  {"op": "write", "files": {path: text}}    write files (absent: false)
  {"op": "capture_start", "caps": [{"name", "dev", "file", "filter"}]}
  {"op": "capture_stop", "names": [...]}    tcpdump -s 128; -> its counters
  {"op": "xfer", "host", "port", "dir": "down"|"up", "flows": N,
   "bytes": B, "series": 0|COUNT}
      N parallel connections of B bytes each (series: COUNT connections of
      B bytes, one after another); -> per connection: local port, start,
      connect_s (time to connect), end (CLOCK_MONOTONIC, the same clock in
      every namespace), bytes, and
      the receiver's progress samples [[t, bytes], ...] (>= 20 ms apart);
      "deadline_s": every connection gives up that long after the start
      (the run then has "timeout": true and is not ok);
      "connect_barrier": true: the parallel connections all connect
      first and only then send their request, so that no handshake meets
      a queue the others' data built (each connection's connect_s then
      runs until the last one had connected, "sent" is when it asked
      for its data; a failed connection releases the others at once,
      "barrier_broken": true)
  {"op": "quit"}

--serve PORT: also accept transfer connections.  A connection sends one line
"D BYTES" (the server sends BYTES, then closes) or "U BYTES" (the client
sends BYTES and shuts down; the server answers with a JSON line: received
bytes, time of the last byte, progress samples).
"""
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time

CHUNK = 65536
ZEROS = memoryview(bytes(CHUNK))
SAMPLE_GAP = 0.02


def now():
    return time.monotonic()


def send_bytes(sock, n):
    while n > 0:
        k = sock.send(ZEROS[:min(n, CHUNK)])
        n -= k


def recv_all(sock, samples):
    """Read until EOF; -> (bytes, time of the last byte)."""
    got, last, t_s = 0, None, 0.0
    while True:
        buf = sock.recv(CHUNK)
        if not buf:
            break
        got += len(buf)
        last = now()
        if last - t_s >= SAMPLE_GAP:
            samples.append([round(last, 4), got])
            t_s = last
    if last is not None and (not samples or samples[-1][1] != got):
        samples.append([round(last, 4), got])
    return got, last


def readline(sock):
    b = b""
    while not b.endswith(b"\n"):
        c = sock.recv(1)
        if not c:
            break
        b += c
    return b.decode()


def serve_conn(conn):
    try:
        conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        kind, n = readline(conn).split()
        n = int(n)
        if kind == "D":
            send_bytes(conn, n)
            conn.shutdown(socket.SHUT_WR)
            conn.recv(1)  # wait for the client's close
        else:
            samples = []
            got, last = recv_all(conn, samples)
            conn.sendall((json.dumps({"bytes": got, "end": last,
                                      "samples": samples}) + "\n").encode())
            conn.shutdown(socket.SHUT_WR)
    except (OSError, ValueError):
        pass
    finally:
        conn.close()


def serve(port):
    fam = socket.AF_INET
    ls = socket.socket(fam, socket.SOCK_STREAM)
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind(("0.0.0.0", port))
    ls.listen(64)
    while True:
        conn, _ = ls.accept()
        threading.Thread(target=serve_conn, args=(conn,), daemon=True).start()


class Deadline(Exception):
    pass


class TimedSocket:
    """A client socket whose blocking calls give up at a deadline
    (CLOCK_MONOTONIC), so that a stalled run ends with a record."""

    def __init__(self, deadline):
        self.s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.deadline = deadline

    def _wait(self, fn, *a):
        while True:
            left = self.deadline - now()
            if left <= 0:
                raise Deadline("run deadline reached")
            self.s.settimeout(min(left, 1.0))
            try:
                return fn(*a)
            except socket.timeout:
                continue

    def connect(self, addr):
        self.s.settimeout(max(0.1, self.deadline - now()))
        try:
            self.s.connect(addr)
        except socket.timeout:
            raise Deadline("run deadline reached (connect)")

    def recv(self, n):
        return self._wait(self.s.recv, n)

    def send(self, b):
        return self._wait(self.s.send, b)

    def sendall(self, b):
        view = memoryview(b)
        while view:
            view = view[self.send(view):]

    def __getattr__(self, name):
        return getattr(self.s, name)


def one_conn(host, port, direction, n, deadline, barrier=None):
    """One connection of a transfer; with BARRIER (a threading.Barrier
    of the run's connections), it waits after connecting until all have
    connected, and a connection that fails breaks the barrier."""
    r = {"bytes": 0}
    s = TimedSocket(deadline)
    r["start"] = round(now(), 4)
    try:
        s.connect((host, port))
        if barrier is not None:
            try:
                barrier.wait(timeout=max(0.0, deadline - now()))
            except threading.BrokenBarrierError:
                r["barrier_broken"] = True
            barrier = None
        r["connect_s"] = round(now() - r["start"], 4)
        r["sent"] = round(now(), 4)
        r["port"] = s.getsockname()[1]
        if direction == "down":
            s.sendall(b"D %d\n" % n)
            samples = []
            r["bytes"], end = recv_all(s, samples)
            r["end"] = round(end if end is not None else now(), 4)
            r["samples"] = samples
        else:
            s.sendall(b"U %d\n" % n)
            send_bytes(s, n)
            s.shutdown(socket.SHUT_WR)
            reply = b""
            while True:
                b = s.recv(CHUNK)
                if not b:
                    break
                reply += b
            rep = json.loads(reply)
            r["bytes"] = rep["bytes"]
            r["end"] = round(rep["end"], 4)
            r["samples"] = rep["samples"]
    except Deadline as e:
        r["error"] = str(e)
        r["timeout"] = True
        r["end"] = round(now(), 4)
    except (OSError, ValueError) as e:
        r["error"] = str(e)
        r["end"] = round(now(), 4)
    finally:
        if barrier is not None:  # never reached it: release the others
            barrier.abort()
        s.close()
    r["ok"] = r["bytes"] == n and "error" not in r
    return r


def xfer(cmd):
    host, port, d, n = cmd["host"], cmd["port"], cmd["dir"], cmd["bytes"]
    t0 = now()
    deadline = t0 + cmd.get("deadline_s", 3600)
    conns = []
    if cmd.get("series"):
        for _ in range(cmd["series"]):
            if now() >= deadline:
                conns.append({"bytes": 0, "start": round(now(), 4), "end": round(now(), 4),
                              "ok": False, "timeout": True, "error": "not started: deadline",
                              "samples": []})
                continue
            c = one_conn(host, port, d, n, deadline)
            c["samples"] = c["samples"][-1:] if c.get("samples") else []
            conns.append(c)
    else:
        res = [None] * cmd["flows"]
        barrier = threading.Barrier(cmd["flows"]) \
            if cmd.get("connect_barrier") and cmd["flows"] > 1 else None

        def worker(i):
            res[i] = one_conn(host, port, d, n, deadline, barrier)
        th = [threading.Thread(target=worker, args=(i,)) for i in range(cmd["flows"])]
        for t in th:
            t.start()
        for t in th:
            t.join()
        conns = res
    t1 = max(c["end"] for c in conns)
    return {"t0": round(t0, 4), "start": min(c["start"] for c in conns),
            "end": t1, "completion_s": round(t1 - min(c["start"] for c in conns), 4),
            "ok": all(c["ok"] for c in conns),
            "timeout": any(c.get("timeout") for c in conns),
            "deadline_s": cmd.get("deadline_s", 3600), "conns": conns}


CAPS = {}


def capture_start(cmd):
    """{"caps": [{"name", "dev", "file", "filter"}, ...]}: start all, then
    wait until every tcpdump is capturing."""
    started = []
    for c in cmd["caps"]:
        # --immediate-mode: packets reach tcpdump at once, not in 1 s blocks
        # that a stop right after the transfer would lose
        argv = ["tcpdump", "-i", c["dev"], "-s", "128", "-B", "16384", "-U",
                "--immediate-mode", "-n", "-w", c["file"]] + c.get("filter", "").split()
        p = subprocess.Popen(argv, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL,
                             text=True)
        started.append((c["name"], p))
    err = None
    for name, p in started:
        line = p.stderr.readline()
        if "listening on" not in line:
            err = "tcpdump %s: %s" % (name, line.strip())
        CAPS[name] = p
    if err:
        capture_stop({"names": [n for n, _ in started]})
        return {"error": err}
    return {"ok": True}


def capture_stop(cmd):
    """{"names": [...]}: stop them; -> {name: tcpdump's closing counters}"""
    procs = [(n, CAPS.pop(n)) for n in cmd["names"] if n in CAPS]
    for _, p in procs:
        p.send_signal(signal.SIGINT)
    out = {}
    for name, p in procs:
        try:
            err = p.communicate(timeout=20)[1]
        except subprocess.TimeoutExpired:
            p.kill()
            err = p.communicate()[1]
        stats = {}
        for line in err.splitlines():
            parts = line.split()
            if len(parts) >= 3 and parts[0].isdigit():
                stats[" ".join(parts[1:])] = int(parts[0])
        out[name] = stats
    return out


def sysctl(cmd):
    for k, v in cmd.get("set", {}).items():
        with open("/proc/sys/" + k, "w") as f:
            f.write(str(v))
    out = {}
    for k in cmd.get("get", []):
        try:
            with open("/proc/sys/" + k) as f:
                out[k] = f.read().strip()
        except OSError as e:
            out[k] = None
            out.setdefault("_errors", {})[k] = str(e)
    return out


def read(cmd):
    out = {}
    for p in cmd["paths"]:
        try:
            with open(p) as f:
                out[p] = f.read()
        except OSError:
            out[p] = None
    return out


def write(cmd):
    """{"path": content}: write each; -> {"path": true|false (absent)}"""
    out = {}
    for p, v in cmd["files"].items():
        try:
            with open(p, "w") as f:
                f.write(v)
            out[p] = True
        except FileNotFoundError:
            out[p] = False
    return out


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "--serve":
        threading.Thread(target=serve, args=(int(sys.argv[2]),), daemon=True).start()
    ops = {"xfer": xfer, "capture_start": capture_start,
           "capture_stop": capture_stop, "sysctl": sysctl, "read": read, "write": write,
           "ping": lambda c: {"pid": os.getpid()}}
    print(json.dumps({"ready": True}), flush=True)
    for line in sys.stdin:
        cmd = json.loads(line)
        if cmd["op"] == "quit":
            break
        try:
            rep = ops[cmd["op"]](cmd)
        except Exception as e:  # reported to the orchestrator, which fails the run
            rep = {"error": "%s: %s" % (type(e).__name__, e)}
        print(json.dumps(rep), flush=True)
    for p in CAPS.values():
        p.kill()


if __name__ == "__main__":
    main()
