# SPDX-License-Identifier: GPL-2.0
"""Guest side of the fairness experiment (PROFILE=fairness, `make fairness`).

Two long flows share the RED-ECN bottleneck for the profile's duration_s:
flow A always crosses the proxy (client <-> server), flow B never does
(udp1 <-> server: udp1 sits between the proxy and the router, so B shares
the router's queue and nothing else).  The server is ECN-capable
(tcp_ecn=1); who is what depends on the pair:

  pair             A (client, through the proxy)   B (udp1)
  proxy-vs-ecn     tcp_ecn=0: proxied              tcp_ecn=1: end-to-end ECN
  proxy-vs-plain   tcp_ecn=0: proxied              tcp_ecn=0: plain, no ECN
  ecn-vs-ecn       tcp_ecn=1: end-to-end ECN       tcp_ecn=1: end-to-end ECN

The proxy is on in every run, with the run's feedback mode (in ecn-vs-ecn
both ends negotiate ECN themselves, so the proxy passes the flow).  Upload:
client and udp1 send to the server; download: the server sends to both
(iperf3 -R).  Each flow is iperf3 -t duration_s -i 0.2 -J, so each sender's
cwnd, RTT and bytes come every 200 ms (for -R from --get-server-output).

Captures (tcpdump -s 96) on the sender side and after the bottleneck, per
flow: the sender side counts the sender's window reductions (data segments
with CWR, and loss-recovery episodes: a retransmission that starts at or
beyond the previous episode's recovery point), the side after the
bottleneck counts the flow's CE marks (for A in download before the proxy
clears them).  nstat-style TCP counters of each sender namespace are
recorded too (in upload each sender has its own namespace).  The RTT probe
and RED backlog of the matrix (Probes) run alongside.
"""
import json
import os
import shutil
import subprocess
import time

from ..analysis import pcapread, schema
from . import testbed

IPERF_PORTS = {"A": 5201, "B": 5202}
PAIRS = {  # pair -> (client tcp_ecn, udp1 tcp_ecn)
    "proxy-vs-ecn": (0, 1),
    "proxy-vs-plain": (0, 0),
    "ecn-vs-ecn": (1, 1),
}
SERVER = "198.18.2.2"


class Capture:
    def __init__(self, ns, dev, path, flt):
        self.path = path
        self.log = path + ".log"
        with open(self.log, "w") as lf:
            self.p = subprocess.Popen(
                ["ip", "netns", "exec", ns, "tcpdump", "-i", dev, "-s", "96", "-B", "16384",
                 "-U", "-n", "-w", path, flt], stdout=lf, stderr=subprocess.STDOUT)
        for _ in range(100):
            with open(self.log) as f:
                if "listening on" in f.read():
                    return
            time.sleep(0.1)
        raise RuntimeError("tcpdump in %s did not start" % ns)

    def stop(self):
        size = -1
        for _ in range(50):  # let a busy guest's buffer drain
            s = os.path.getsize(self.path) if os.path.exists(self.path) else 0
            if s == size:
                break
            size = s
            time.sleep(0.2)
        self.p.send_signal(2)
        try:
            self.p.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.p.kill()
        with open(self.log) as f:
            return [ln.strip() for ln in f if "packets" in ln]


def flow_view(path, port):
    """Per data connection to PORT in a capture: the data direction's
    segments -> {"client_port", "data_dir", "packets", "ce", "ect", "cwr",
    "data", "retrans", "episodes", "ce_times", "ce_new_times", "cwr_times",
    "episode_times", "first", "last"}.  The iperf3 control connection
    (little data) is dropped: the flow with the most payload is the data
    flow.

    ce_times has every CE-marked data segment; ce_new_times only those
    that reach beyond the capture's in-order point (the end of the bytes
    seen without a hole since the first): data the receiver does not yet
    have in order when the capture is taken just before it.  Linux's
    tcp_data_queue() drops a segment wholly below rcv_nxt before it looks
    at its CE mark (tcp_ecn_check_ce), so a CE mark on such a duplicate,
    e.g. on the proxy's copy of a segment E already has, can never be
    answered; one on a retransmission that fills a hole can (since
    2026-12-02; older records have no ce_new_times).  A segment the
    capture itself lost leaves a hole that never fills: from there on
    ce_new_times is ce_times (the run is flagged capture_drops)."""
    conns = {}
    for (t, ecn, src, dst, sport, dport, seq, ack, flags, win, plen) in \
            pcapread.read_packets(path):
        if dport == port:
            key, d = sport, "c2s"
        elif sport == port:
            key, d = dport, "s2c"
        else:
            continue
        c = conns.setdefault(key, {"c2s": [], "s2c": []})
        c[d].append((t, ecn, seq, flags, plen))
    best = None
    for cport, c in conns.items():
        for d in ("c2s", "s2c"):
            pay = sum(p[4] for p in c[d])
            if best is None or pay > best[0]:
                best = (pay, cport, d)
    if best is None or best[0] == 0:
        return None
    _, cport, d = best
    segs = c = conns[cport][d]
    out = {"client_port": cport, "data_dir": d, "packets": len(segs), "data": 0,
           "ce": 0, "ect": 0, "cwr": 0, "retrans": 0, "episodes": 0, "bytes": 0,
           "ce_times": [], "ce_new_times": [], "cwr_times": [], "episode_times": [],
           "first": segs[0][0] if segs else None, "last": segs[-1][0] if segs else None}
    base = None
    high = 0
    recover = None
    cum = 0        # bytes [0, cum) seen without a hole
    above = []     # sorted, disjoint [start, end) seen beyond cum
    for t, ecn, seq, flags, plen in c:
        if flags & pcapread.SYN:
            base = seq + 1
            continue
        if plen == 0:
            continue
        if base is None:
            base = seq
        rel = (seq - base) & 0xFFFFFFFF
        if rel > 0x80000000:
            continue
        out["data"] += 1
        if ecn:
            out["ect"] += 1
        if ecn == 3:
            out["ce"] += 1
            out["ce_times"].append(round(t, 4))
            if rel + plen > cum:
                out["ce_new_times"].append(round(t, 4))
        cum, above = seen(cum, above, rel, rel + plen)
        if flags & pcapread.CWR:
            out["cwr"] += 1
            out["cwr_times"].append(round(t, 4))
        if rel < high:
            out["retrans"] += 1
            if recover is None or rel >= recover:
                out["episodes"] += 1
                out["episode_times"].append(round(t, 4))
                recover = high
        else:
            out["bytes"] += rel + plen - high
            high = rel + plen
    return out


def seen(cum, above, start, end):
    """The in-order point and the ranges seen beyond it after the bytes
    [start, end) -> (cum, above)."""
    if end <= cum:
        return cum, above
    start = max(start, cum)
    merged = []
    for s, e in above:
        if e < start or s > end:
            merged.append((s, e))
        else:
            start, end = min(s, start), max(e, end)
    merged.append((start, end))
    merged.sort()
    while merged and merged[0][0] <= cum:
        cum = max(cum, merged.pop(0)[1])
    return cum, merged


def iperf(ns, port, duration, reverse):
    argv = ["ip", "netns", "exec", ns, "iperf3", "-c", SERVER, "-p", str(port),
            "-t", str(duration), "-i", "0.2", "-J"]
    if reverse:
        argv += ["-R", "--get-server-output"]
    return subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def sender_series(js, reverse):
    """The sender's 200 ms intervals: [[t_rel_end, bytes, snd_cwnd, rtt_us,
    retransmits], ...] (the server's for -R)."""
    if reverse:
        js = js.get("server_output_json") or {}
    res = []
    for iv in js.get("intervals", []):
        st = (iv.get("streams") or [{}])[0]
        res.append([round(st.get("end", 0), 3), st.get("bytes", 0), st.get("snd_cwnd"),
                    st.get("rtt"), st.get("retransmits")])
    return res


def tcp_counters(ns):
    r = subprocess.run(["ip", "netns", "exec", ns, "cat", "/proc/net/netstat",
                        "/proc/net/snmp"], stdout=subprocess.PIPE, text=True)
    return testbed.parse_netstat(r.stdout)


def roles(run, flows, direction):
    """-> list of problems: each flow must be what the pair says (a SYN
    lost to the queue the other flow fills makes the proxy, or Linux
    itself for an ECN SYN, fall back to plain TCP; RFC 3168 6.1.1.1)."""
    cli_ecn, udp1_ecn = PAIRS[run["pair"]]
    bad = []
    # A is ECT after the proxy when proxied (upload; not with feedback
    # none, which never sets ECT toward E) or when E sends (download, the
    # server's data); B is ECT iff it negotiated ECN
    a_ect = not (direction == "upload" and run["feedback"] == "none" and not cli_ecn)
    for k, want in (("A", a_ect), ("B", bool(udp1_ecn))):
        ac = flows[k].get("after_capture")
        if not ac or not ac["data"]:
            bad.append("%s: no data seen" % k)
            continue
        ect = ac["ect"] / ac["data"] > 0.5
        if ect != want:
            bad.append("%s: ECT on %d of %d data segments" % (k, ac["ect"], ac["data"]))
    return bad


def do_run(tb, run, plan, env, keep, resdir):
    """Up to 3 attempts: one whose flows are not what the pair says is
    recorded in "attempts" and run again; the third is kept even so (also
    recorded in "attempts"), flagged roles_wrong."""
    attempts = []
    for n in range(1, 4):
        rec = measure(tb, run, plan, env, keep, resdir)
        bad = roles(run, rec["flows"], run["direction"])
        if not bad:
            break
        attempts.append({"problems": bad, "proxy_stats": rec["proxy_stats"],
                         "tcp_counters": rec["tcp_counters"]})
        testbed.log("  %s: roles wrong (%s), %s" % (
            run["id"], "; ".join(bad),
            "again" if n < 3 else "at the third attempt: kept, flagged roles_wrong"))
    else:
        rec["fidelity"]["flags"].append("roles_wrong")
        rec["fidelity"]["ok"] = False
    rec["attempts"] = attempts
    return rec


def measure(tb, run, plan, env, keep, resdir):
    prof = plan["profile"]
    dur = prof["duration_s"]
    direction = run["direction"]
    cli_ecn, udp1_ecn = PAIRS[run["pair"]]
    reverse = direction == "download"
    sh = testbed.sh
    # "MODE+prompt": A's client gets schema.PROMPT_SYSCTLS (RACK off, a
    # duplicate-ACK threshold of one); every other run Linux's defaults.
    # The plan gives feedback-free pairs (ecn-vs-ecn) no "+prompt".
    mode, prompt = schema.split_feedback(run["feedback"])
    tb.client("sysctl", set={"net/ipv4/tcp_ecn": str(cli_ecn),
                             "net/ipv4/tcp_no_metrics_save": "1"}
              | (schema.PROMPT_SYSCTLS if prompt else schema.LOSS_SYSCTLS))
    tb.server("sysctl", set={"net/ipv4/tcp_ecn": "1", "net/ipv4/tcp_no_metrics_save": "1"})
    sh("tb_tcp udp1 ecn=%d; tb_ns udp1 sysctl -qw net.ipv4.tcp_no_metrics_save=1" % udp1_ecn)
    tb.proxy("sysctl", set={"net/ecn_proxy/enabled": "1",
                            "net/ecn_proxy/feedback": mode})
    tb.proxy("write", files={"/proc/net/ecn_proxy/fallback": "flush"})
    sh("tb_fresh_transfer; tb_ns udp1 ip tcp_metrics flush all 2>/dev/null || true",
       TB_SETUP=direction, TB_RATE_LOW=tb.low, TB_RATE_HIGH=tb.high)
    sysctls = {n: subprocess.run(
        ["ip", "netns", "exec", n, "sysctl", "-n", "net.ipv4.tcp_ecn",
         "net.ipv4.tcp_congestion_control", "net.ipv4.tcp_sack", "net.ipv4.tcp_timestamps",
         "net.ipv4.tcp_recovery", "net.ipv4.tcp_reordering", "net.ipv4.tcp_max_reordering"],
        stdout=subprocess.PIPE, text=True).stdout.split() for n in ("client", "udp1", "server")}
    sysctls["proxy"] = tb.proxy("sysctl", get=testbed.SYSCTLS_PROXY)
    os.makedirs(testbed.PCAPS, exist_ok=True)
    pre = os.path.join(testbed.PCAPS, run["id"])
    flt = "tcp port %d or tcp port %d" % (IPERF_PORTS["A"], IPERF_PORTS["B"])
    if direction == "upload":
        caps = {"A_sender": ("client", "eth0"), "B_sender": ("udp1", "eth0"),
                "A_after": ("server", "eth0"), "B_after": ("server", "eth0")}
    else:
        caps = {"A_sender": ("server", "eth0"), "B_sender": ("server", "eth0"),
                "A_after": ("proxy", "eth1"), "B_after": ("udp1", "eth0")}
    places = sorted(set(caps.values()))
    cap = {pl: Capture(pl[0], pl[1], "%s.%s-%s.pcap" % (pre, pl[0], pl[1]), flt)
           for pl in places}
    senders = {"A": "server" if reverse else "client", "B": "server" if reverse else "udp1"}
    c0 = {n: tcp_counters(n) for n in set(senders.values())}
    ps0 = testbed.parse_kv(tb.proxy("read", paths=["/proc/net/ecn_proxy/stats"])
                      ["/proc/net/ecn_proxy/stats"])
    q0, _ = testbed.tc_snapshot()
    cpu0 = testbed.cpu_times()
    probes = testbed.Probes(tb.bottleneck_dev(), None)
    # with the captures kept, each upload sender's own view too: `ss -ti`
    # of its connections every 200 ms (minrtt, reordering, RACK)
    ss_logs = []
    if keep and not reverse:
        for k in ("A", "B"):
            path = "%s.%s-ss.txt" % (pre, senders[k])
            fh = open(path, "w")
            ss_logs.append((path, fh, subprocess.Popen(
                ["ip", "netns", "exec", senders[k], "sh", "-c",
                 "while :; do echo \"t $(date +%%s.%%N)\"; ss -tinH '( dport = :%d )'; "
                 "sleep 0.2; done" % IPERF_PORTS[k]],
                stdout=fh, stderr=subprocess.DEVNULL)))
    t0 = time.monotonic()
    procs = {"A": iperf("client", IPERF_PORTS["A"], dur, reverse),
             "B": iperf("udp1", IPERF_PORTS["B"], dur, reverse)}
    outs = {}
    for k, p in procs.items():
        try:
            outs[k] = p.communicate(timeout=dur + 60)[0]
        except subprocess.TimeoutExpired:
            p.kill()
            outs[k] = p.communicate()[0]
    t1 = time.monotonic()
    cpu1 = testbed.cpu_times()
    probe = probes.stop(t0 + prof.get("steady_from_s", 10), t1)
    q1, _ = testbed.tc_snapshot()
    ps1 = testbed.parse_kv(tb.proxy("read", paths=["/proc/net/ecn_proxy/stats"])
                      ["/proc/net/ecn_proxy/stats"])
    c1 = {n: tcp_counters(n) for n in set(senders.values())}
    time.sleep(0.2)
    capst = {pl: c.stop() for pl, c in cap.items()}
    flows = {}
    ok = True
    for k in ("A", "B"):
        try:
            js = json.loads(outs[k])
        except ValueError:
            js = {"error": "no JSON: %s" % outs[k][-500:]}
        if "error" in js:
            ok = False
        port = IPERF_PORTS[k]
        snd = cap[caps[k + "_sender"]].path
        aft = cap[caps[k + "_after"]].path
        flows[k] = {
            "port": port, "sender_ns": senders[k],
            "error": js.get("error"),
            "series": sender_series(js, reverse),
            "sum_sent": (js.get("end", {}).get("sum_sent") or {}).get("bytes"),
            "sum_received": (js.get("end", {}).get("sum_received") or {}).get("bytes"),
            "sender_capture": flow_view(snd, port),
            "after_capture": flow_view(aft, port),
        }
    for path, fh, sp in ss_logs:
        sp.kill()
        sp.wait()
        fh.close()
        os.makedirs(os.path.join(resdir, "pcaps"), exist_ok=True)
        shutil.move(path, os.path.join(resdir, "pcaps", os.path.basename(path)))
    for f in cap.values():
        if keep:
            os.makedirs(os.path.join(resdir, "pcaps"), exist_ok=True)
            shutil.move(f.path, os.path.join(resdir, "pcaps", os.path.basename(f.path)))
        else:
            os.unlink(f.path)
        os.unlink(f.log)
    idle = testbed.cpu_idle(cpu0, cpu1)
    cpu_min = min(v for k, v in idle.items() if k != "cpu" and v is not None)
    flags = []
    if not ok:
        flags.append("transfer_failed")
    if cpu_min < prof["fidelity"]["min_cpu_idle"]:
        flags.append("cpu_saturated")
    if any("dropped by kernel" in ln and not ln.startswith("0 ")
           for lines in capst.values() for ln in lines):
        flags.append("capture_drops")
    for k in ("A", "B"):
        if not flows[k]["sender_capture"] or not flows[k]["after_capture"]:
            flags.append("flow_%s_not_captured" % k)
    bdev = tb.bottleneck_dev()
    return {
        "schema": "ecnproxy-fairness-run/1",
        "id": run["id"], "index": run["index"], "profile": prof["name"], "seed": plan["seed"],
        "params": {k: run[k] for k in ("direction", "pair", "feedback", "rep")}
        | {"duration_s": dur, "client_ecn": cli_ecn, "udp1_ecn": udp1_ecn, "server_ecn": 1,
           "steady_from_s": prof.get("steady_from_s", 10)},
        "env": env | {"bottleneck_dev": bdev, "rate_low": tb.low, "rate_high": tb.high},
        "sysctls": sysctls,
        "ok": ok,
        "wall_s": round(t1 - t0, 3),
        "flows": flows,
        "tcp_counters": {n: testbed.counter_delta(c0[n], c1[n]) for n in c0},
        "proxy_stats": {"before": ps0, "after": ps1},
        "qdisc": {"before": [q for q in q0 if q.get("dev") == bdev],
                  "after": [q for q in q1 if q.get("dev") == bdev]},
        "probes": probe,
        "captures": {"%s:%s" % pl: v for pl, v in capst.items()},
        "cpu": {"idle_share": idle},
        "fidelity": {"cpu_idle_min": cpu_min, "flags": flags, "ok": not flags},
    }


def log_line(rec):
    a, b = rec["flows"]["A"], rec["flows"]["B"]
    return "A %s B %s bytes" % (a.get("sum_received"), b.get("sum_received"))


def setup(tb):
    """iperf3 servers (JSON, 200 ms intervals, for --get-server-output)."""
    for port in IPERF_PORTS.values():
        testbed.sh("tb_bg fair-srv-%d server iperf3 -s -J -i 0.2 -p %d && tb_wait_port server %d"
              % (port, port, port))


def estimate_s(prof, run):
    return prof["duration_s"] + prof.get("overhead_s", 20)
