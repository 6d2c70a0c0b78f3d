#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""Guest side of `make matrix`: runs every pending run of a plan.

  matrix_guest.py RESULTS_DIR [--keep-pcaps]

Started by vm-testbed/matrix-guest.sh inside the QEMU guest (vm-run), with
RESULTS_DIR writable.  Reads RESULTS_DIR/plan.json (written by scripts/matrix
on the host), builds the six-node testbed once, loads the ECN proxy, starts
one agent per namespace (scripts/matrix_agent.py) and then, for every run of
the plan whose record RESULTS_DIR/runs/ID.json does not exist yet (resume),
in plan order:

  bottleneck setup for the direction, cross traffic on/off (only when they
  change), client/server tcp_ecn and proxy on/off (+ feedback), captures on
  both sides of the proxy (proxy eth0 = client side, eth1 = server side,
  tcpdump -s 128), counters before, the transfer, counters after, per-flow
  pcap analysis (both captures together, for the stall causes), fidelity
  checks, one JSON record (written atomically), pcap deleted (kept under
  RESULTS_DIR/pcaps/ with --keep-pcaps).

Prints "run i/n ID: ... | elapsed, ETA" per run.  Exit 0 when every run of
the plan has a record, 1 otherwise.
"""
import datetime
import json
import os
import platform
import select
import shutil
import signal
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(HERE)
sys.path.insert(0, HERE)
from analysis import pcapflow  # noqa: E402
from analysis.schema import SCHEMA, CONFIGS, QUICKACK, run_feedback  # noqa: E402

TOPO = os.path.join(TOP, "vm-testbed", "lib", "topology.sh")
MODULE = os.path.join(TOP, "kmod", "ecn_proxy", "ecn_proxy.ko")
CORE_MODULE = os.path.join(TOP, "kmod", "core", "tcpfwd.ko")
PORT = 5001
STATE = "/tmp/mx-state"
PCAPS = "/tmp/mx-pcap"
TB_ENV = dict(os.environ, TB_STATE=STATE)


LOGFILE = None


def log(*a):
    """stdout, and RESULTS/guest.log, which the host driver shows live (the
    guest's stdout reaches the host in blocks)."""
    line = " ".join(str(x) for x in a)
    print(line, flush=True)
    if LOGFILE:
        LOGFILE.write(line + "\n")
        LOGFILE.flush()


def sh(script, check=True, **env):
    """Run bash with the topology library sourced."""
    e = dict(TB_ENV, **env)
    r = subprocess.run(["bash", "-c", ". %s\n%s" % (TOPO, script)], env=e,
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if check and r.returncode:
        raise RuntimeError("%s: exit %d: %s" % (script, r.returncode, r.stdout))
    return r.stdout


def out(argv):
    try:
        return subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              text=True, timeout=30).stdout.strip()
    except (OSError, subprocess.TimeoutExpired) as e:
        return "unavailable: %s" % e


class Agent:
    def __init__(self, ns, *args):
        self.ns = ns
        self.p = subprocess.Popen(
            ["ip", "netns", "exec", ns, sys.executable,
             os.path.join(HERE, "matrix_agent.py")] + list(args),
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1)
        self.call_raw(timeout=120)

    def call_raw(self, timeout):
        r, _, _ = select.select([self.p.stdout], [], [], timeout)
        if not r:
            raise RuntimeError("agent %s: no answer in %d s" % (self.ns, timeout))
        line = self.p.stdout.readline()
        if not line:
            raise RuntimeError("agent %s died" % self.ns)
        return json.loads(line)

    def __call__(self, op, timeout=120, **kw):
        kw["op"] = op
        self.p.stdin.write(json.dumps(kw) + "\n")
        self.p.stdin.flush()
        rep = self.call_raw(timeout)
        if isinstance(rep, dict) and "error" in rep:
            raise RuntimeError("agent %s %s: %s" % (self.ns, op, rep["error"]))
        return rep

    def close(self):
        try:
            self.p.stdin.write('{"op": "quit"}\n')
            self.p.stdin.flush()
            self.p.wait(timeout=10)
        except Exception:
            self.p.kill()


def parse_kv(text):
    d = {}
    for line in (text or "").splitlines():
        p = line.split()
        if len(p) == 2:
            try:
                d[p[0]] = int(p[1])
            except ValueError:
                d[p[0]] = p[1]
    return d


def parse_netstat(text):
    """/proc/net/netstat and /proc/net/snmp: {"TcpExt": {...}, "Tcp": {...}}"""
    d = {}
    lines = (text or "").splitlines()
    for a, b in zip(lines[::2], lines[1::2]):
        ka, kb = a.split(), b.split()
        if ka and ka[0] in ("TcpExt:", "Tcp:", "IpExt:"):
            d[ka[0][:-1]] = {k: int(v) for k, v in zip(ka[1:], kb[1:])
                             if v.lstrip("-").isdigit()}
    return d


def counter_delta(a, b):
    out = {}
    for grp in b:
        for k, v in b[grp].items():
            dv = v - a.get(grp, {}).get(k, 0)
            if dv and k not in ("CurrEstab",):
                out["%s.%s" % (grp, k)] = dv
    return out


def cpu_times():
    d = {}
    with open("/proc/stat") as f:
        for line in f:
            if line.startswith("cpu"):
                p = line.split()
                d[p[0]] = [int(x) for x in p[1:]]
    return d


def cpu_idle(a, b):
    res = {}
    for k in b:
        da = [y - x for x, y in zip(a[k], b[k])]
        tot = sum(da[:8])
        res[k] = round((da[3] + da[4]) / tot, 4) if tot else None
    return res


def rate_bps(s):
    s = s.strip().lower()
    mult = {"kbit": 1e3, "mbit": 1e6, "gbit": 1e9, "bit": 1}
    for suf, m in mult.items():
        if s.endswith(suf):
            return float(s[:-len(suf)]) * m
    return float(s)


def tc_snapshot():
    t0 = time.monotonic()
    js = subprocess.run(["tc", "-n", "router", "-s", "-j", "qdisc", "show"],
                        stdout=subprocess.PIPE, text=True, check=True).stdout
    t1 = time.monotonic()
    return json.loads(js), (t0 + t1) / 2


def qdisc_entry(snap, dev, kind):
    for q in snap:
        if q.get("dev") == dev and q.get("kind") == kind:
            return q
    return {}


def pctl(xs, q):
    """The q-quantile (0..1) of xs by linear interpolation, None if empty."""
    xs = sorted(xs)
    if not xs:
        return None
    k = (len(xs) - 1) * q
    i = int(k)
    j = min(i + 1, len(xs) - 1)
    return round(xs[i] + (xs[j] - xs[i]) * (k - i), 3)


def link_stats(ns, dev):
    js = subprocess.run(["ip", "-n", ns, "-s", "-j", "link", "show", "dev", dev],
                        stdout=subprocess.PIPE, text=True, check=True).stdout
    st = json.loads(js)[0]["stats64"]
    return {"tx_packets": st["tx"]["packets"], "tx_bytes": st["tx"]["bytes"],
            "rx_packets": st["rx"]["packets"], "rx_bytes": st["rx"]["bytes"]}


class Probes:
    """What a transfer does to everyone else, measured while it runs (as
    flent's RRUL does): the RTT through the bottleneck (ping from the client
    to the server every PING_S; ICMP is Not-ECT, so RED may drop a probe:
    that counts as probe loss), the bottleneck's RED backlog (one long-lived
    `tc -s -j -batch -` in the router, fed a query every QUEUE_S) and, with
    cross traffic, the UDP flow's packets sent and delivered (link counters
    of its two hosts).  The RTT and backlog percentiles cover the transfer's
    own interval only."""
    PING_S = 0.05
    QUEUE_S = 0.05

    def __init__(self, bdev, cross_dir):
        self.bdev = bdev
        self.udp = cross_dir  # None, or ("udp1", "udp2"): sender, receiver
        self.wall0 = time.time() - time.monotonic()
        self.ping = subprocess.Popen(
            ["ip", "netns", "exec", "client", "ping", "-n", "-D", "-i", str(self.PING_S),
             "-W", "2", "198.18.2.2"],
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        self.rtt = []
        self.seq_max = 0
        self.queue = []
        self.stop_ev = threading.Event()
        self.tc = subprocess.Popen(["tc", "-n", "router", "-s", "-j", "-batch", "-"],
                                   stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                   stderr=subprocess.DEVNULL, text=True, bufsize=1)
        self.threads = [threading.Thread(target=self._read_ping, daemon=True),
                        threading.Thread(target=self._poll_queue, daemon=True)]
        for t in self.threads:
            t.start()
        self.udp0 = ({n: link_stats(n, "eth0") for n in self.udp}
                     if self.udp else None)
        self.t_start = time.monotonic()
        self.sent = None

    def _read_ping(self):
        # "[1700000000.123456] 64 bytes from 198.18.2.2: icmp_seq=7 ttl=62 time=1.23 ms"
        for line in self.ping.stdout:
            if "packets transmitted" in line:  # ping's summary after SIGINT
                try:
                    self.sent = int(line.split()[0])
                except ValueError:
                    pass
            if "time=" not in line or not line.startswith("["):
                continue
            try:
                t = float(line[1:line.index("]")]) - self.wall0
                seq = int(line.split("icmp_seq=")[1].split()[0])
                ms = float(line.split("time=")[1].split()[0])
            except (ValueError, IndexError):
                continue
            self.seq_max = max(self.seq_max, seq)
            self.rtt.append([round(t, 4), ms])

    def _poll_queue(self):
        while not self.stop_ev.is_set():
            try:
                self.tc.stdin.write("qdisc show dev %s\n" % self.bdev)
                self.tc.stdin.flush()
                t = time.monotonic()
                line = self.tc.stdout.readline()
            except (OSError, ValueError):
                return
            if not line:
                return
            try:
                red = [q for q in json.loads(line) if q.get("kind") == "red"]
            except ValueError:
                red = []
            if red:
                self.queue.append([round(t, 4), red[0].get("backlog", 0),
                                   red[0].get("qlen", 0)])
            self.stop_ev.wait(self.QUEUE_S)

    def stop(self, start, end):
        """-> the record's "probes" (percentiles over [start, end])."""
        udp1 = {n: link_stats(n, "eth0") for n in self.udp} if self.udp else None
        t_stop = time.monotonic()
        time.sleep(0.3)  # replies to the last probes
        self.ping.send_signal(signal.SIGINT)
        self.stop_ev.set()
        try:
            self.tc.stdin.close()
        except OSError:
            pass
        for p in (self.ping, self.tc):
            try:
                p.wait(timeout=5)
            except subprocess.TimeoutExpired:
                p.kill()
        for t in self.threads:
            t.join(timeout=5)
        inside = [ms for t, ms in self.rtt if start <= t <= end]
        sent = self.sent if self.sent is not None else self.seq_max
        q_in = [b for t, b, _ in self.queue if start <= t <= end]
        udp = None
        if self.udp:
            snd, rcv = self.udp
            tx = udp1[snd]["tx_packets"] - self.udp0[snd]["tx_packets"]
            rx = udp1[rcv]["rx_packets"] - self.udp0[rcv]["rx_packets"]
            win = t_stop - self.t_start
            udp = {"sender": snd, "receiver": rcv,
                   "tx_packets": tx, "rx_packets": rx,
                   "tx_bytes": udp1[snd]["tx_bytes"] - self.udp0[snd]["tx_bytes"],
                   "rx_bytes": udp1[rcv]["rx_bytes"] - self.udp0[rcv]["rx_bytes"],
                   "window_s": round(win, 4),
                   "rate_bps": round((udp1[rcv]["rx_bytes"] - self.udp0[rcv]["rx_bytes"])
                                     * 8 / win) if win > 0 else None,
                   "loss": round(1 - rx / tx, 5) if tx > 0 else None}
        return {"rtt": {"target": "198.18.2.2", "interval_s": self.PING_S,
                        "sent": sent, "received": len(self.rtt),
                        "received_in_transfer": len(inside),
                        "p50_ms": pctl(inside, 0.5), "p95_ms": pctl(inside, 0.95),
                        "samples": self.rtt},
                "queue": {"dev": self.bdev, "interval_s": self.QUEUE_S,
                          "p50_bytes": pctl(q_in, 0.5), "p95_bytes": pctl(q_in, 0.95),
                          "samples": self.queue},
                "udp": udp}


class Testbed:
    def __init__(self, plan):
        self.plan = plan
        self.direction = None
        self.cross = None
        self.low = os.environ.get("TB_RATE_LOW", "10mbit")
        self.high = os.environ.get("TB_RATE_HIGH", "100mbit")

    def up(self):
        if not os.path.isdir("/sys/module/tcpfwd"):
            subprocess.run(["insmod", CORE_MODULE], check=True)
        if not os.path.isdir("/sys/module/ecn_proxy"):
            subprocess.run(["insmod", MODULE, "enable_init_net=0"], check=True)
        sh("tb_up", TB_SETUP="download")
        self.direction = "download"
        self.cross = "off"
        self.delay = int(os.environ.get("TB_DELAY_MS", "0") or 0)
        self.client = Agent("client")
        self.server = Agent("server", "--serve", str(PORT))
        self.proxy = Agent("proxy")

    def down(self):
        for a in ("client", "server", "proxy"):
            if hasattr(self, a):
                getattr(self, a).close()
        sh("tb_cross_stop; tb_down", check=False)

    def bottleneck_dev(self):
        return "eth1" if self.direction == "download" else "eth2"

    def set_delay(self, ms):
        """netem delay on the server's link (topology.sh's TB_DELAY_MS),
        changed between blocks of a profile with "delays"; 0 removes it.
        None (a run without delay_ms) leaves the topology's as it is.
        -> True if it changed."""
        if ms is None or ms == self.delay:
            return False
        if ms:
            sh("tc -n server qdisc replace dev eth0 root netem delay %dms limit 100000" % ms)
        else:
            sh("tc -n server qdisc del dev eth0 root 2>/dev/null || true")
        self.delay = ms
        return True

    def set_block(self, direction, cross, rate):
        changed = False
        if (direction, cross) != (self.direction, self.cross) and self.cross == "on":
            sh("tb_cross_stop")
            self.cross = "off"
        if direction != self.direction:
            lo, hi = (("eth1", "eth2") if direction == "download" else ("eth2", "eth1"))
            sh("tc -n router qdisc del dev eth1 root; tc -n router qdisc del dev eth2 root\n"
               "tb_red %s %s && tb_red %s %s" % (lo, self.low, hi, self.high))
            self.direction = direction
            changed = True
        if cross != self.cross:
            if cross == "on":
                sh("tb_cross_start %s %s" % (rate, "down" if direction == "download" else "up"))
            self.cross = cross
            changed = True
        return changed


SYSCTLS_TCP = ["net/ipv4/tcp_ecn", "net/ipv4/tcp_ecn_fallback", "net/ipv4/tcp_sack",
               "net/ipv4/tcp_timestamps", "net/ipv4/tcp_congestion_control",
               "net/ipv4/tcp_wmem", "net/ipv4/tcp_rmem", "net/ipv4/tcp_no_metrics_save"]
SYSCTLS_PROXY = ["net/ecn_proxy/" + k for k in (
    "enabled", "feedback", "max_flows", "timeout_handshake", "timeout_established",
    "timeout_closed", "fallback_timeout")]


def versions():
    v = {"kernel": platform.release(), "python": platform.python_version(),
         "tcpdump": out(["tcpdump", "--version"]).splitlines()[0:2],
         "iproute2": out(["tc", "-V"]),
         "iperf3 (cross traffic)": out(["iperf3", "--version"]).splitlines()[0:1]}
    try:
        with open("/sys/module/ecn_proxy/srcversion") as f:
            v["ecn_proxy_srcversion"] = f.read().strip()
    except OSError:
        pass
    return v


QUICKACK_SH = r"""
for f in 4 6; do
	r=$(ip -n client -$f route show default | head -n 1 | sed 's/ quickack 1//')
	[ -z "$r" ] || ip -n client -$f route change $r$QA || exit 1
done
ip -n client -4 route show default
ip -n client -6 route show default
"""


def start_diag(prof, run, keep):
    """With the captures kept and the profile's "diag" set, what the
    sender's kernel and the bottleneck's output show: `ss -tinH` of the
    sender's data connections every DIAG_SS_S (cwnd, ssthresh, the CA
    state) and a capture at the far end's eth0 (after the bottleneck, so
    its packet times are the link's departures).  -> [(kind, path, proc,
    file or None)]"""
    if not (keep and prof.get("diag")):
        return []
    snd, far = (("client", "server") if run["direction"] == "upload"
                else ("server", "client"))
    pre = os.path.join(PCAPS, run["id"])
    fh = open(pre + ".%s-ss.txt" % snd, "w")
    ss = subprocess.Popen(
        ["ip", "netns", "exec", snd, "sh", "-c",
         "while :; do echo \"t $(date +%%s.%%N)\"; ss -tinH '( %s = :%d )'; "
         "sleep %s; done" % ("dport" if snd == "client" else "sport", PORT,
                             prof.get("diag_ss_s", 0.05))],
        stdout=fh, stderr=subprocess.DEVNULL)
    cap = pre + ".bottleneck_out.pcap"
    td = subprocess.Popen(["ip", "netns", "exec", far, "tcpdump", "-i", "eth0", "-s", "96",
                           "-U", "-n", "-w", cap, "tcp port %d" % PORT],
                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(0.5)  # tcpdump has opened its socket
    return [("ss", fh.name, ss, fh), ("pcap", cap, td, None)]


def stop_diag(diag, resdir):
    """Stops start_diag()'s processes and moves their files to
    RESULTS/pcaps/ -> the moved files' names."""
    names = []
    for _kind, path, proc, fh in diag:
        proc.send_signal(signal.SIGTERM if fh else signal.SIGINT)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        if fh:
            fh.close()
        os.makedirs(os.path.join(resdir, "pcaps"), exist_ok=True)
        shutil.move(path, os.path.join(resdir, "pcaps", os.path.basename(path)))
        names.append(os.path.basename(path))
    return names


def do_run(tb, run, plan, env, keep, resdir):
    prof = plan["profile"]
    cli_ecn, srv_ecn, proxy_on = CONFIGS[run["config"]]
    phases = {}
    tph = [time.monotonic()]

    def phase(name):
        t = time.monotonic()
        phases[name] = round(t - tph[0], 3)
        tph[0] = t

    setset = {"net/ipv4/tcp_no_metrics_save": "1"}
    tb.client("sysctl", set=dict(setset, **{"net/ipv4/tcp_ecn": str(cli_ecn)}))
    tb.server("sysctl", set=dict(setset, **{"net/ipv4/tcp_ecn": str(srv_ecn)}))
    pset = {"net/ecn_proxy/enabled": "1" if proxy_on else "0"}
    feedback = run_feedback(run["config"], plan.get("feedback"))
    if feedback:
        pset["net/ecn_proxy/feedback"] = feedback
    tb.proxy("sysctl", set=pset)
    # the client's default routes, quick-ACK or not (QUICKACK configurations)
    quickack = run["config"] in QUICKACK
    qa_routes = sh(QUICKACK_SH, QA=" quickack 1" if quickack else "")
    # every run starts with an empty SYN fallback cache: a destination put
    # there by an earlier run (RFC 3168 6.1.1.1 heuristic) would otherwise
    # stay unproxied for fallback_timeout (600 s) across runs
    flushed = tb.proxy("write", files={"/proc/net/ecn_proxy/fallback": "flush"})
    # every run starts with RED's average at 0, as after an idle period:
    # RED under HTB never sees one and would carry the previous run's
    # frozen average into this run's SYNs (topology.sh, tb_red_reset)
    sh("tb_red_reset", TB_SETUP=run["direction"], TB_RATE_LOW=tb.low, TB_RATE_HIGH=tb.high)
    sysctls = {"client": tb.client("sysctl", get=SYSCTLS_TCP),
               "server": tb.server("sysctl", get=SYSCTLS_TCP),
               "proxy": tb.proxy("sysctl", get=SYSCTLS_PROXY + ["net/ipv4/ip_forward"])}
    phase("configure")
    os.makedirs(PCAPS, exist_ok=True)
    caps = {"client_side": ("eth0", os.path.join(PCAPS, run["id"] + ".client_side.pcap")),
            "server_side": ("eth1", os.path.join(PCAPS, run["id"] + ".server_side.pcap"))}
    tb.proxy("capture_start", caps=[{"name": n, "dev": dev, "file": f,
                                     "filter": "tcp port %d" % PORT}
                                    for n, (dev, f) in caps.items()])
    phase("capture_start")
    diag = start_diag(prof, run, keep)
    net = "/proc/net/netstat"
    snmp = "/proc/net/snmp"

    def counters(agent):
        r = agent("read", paths=[net, snmp])
        return parse_netstat(r[net]) | parse_netstat(r[snmp])

    ps0 = parse_kv(tb.proxy("read", paths=["/proc/net/ecn_proxy/stats"])
                   ["/proc/net/ecn_proxy/stats"])
    tc0 = counters(tb.client), counters(tb.server)
    q0, tq0 = tc_snapshot()
    cpu0 = cpu_times()
    phase("counters_before")
    probes = Probes(tb.bottleneck_dev(),
                    None if run["cross"] != "on" else
                    ("udp2", "udp1") if run["direction"] == "download" else ("udp1", "udp2"))
    phase("probes_start")
    wall = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    # a run that stalls (RTO back-off chains happen) ends at its deadline and
    # is recorded as a timeout: its completion time is then a lower bound
    deadline = prof.get("run_deadline_s", 30) + run["total_bytes"] / prof.get(
        "deadline_rate", 50e3)
    try:
        xf = tb.client("xfer", timeout=deadline + 60, deadline_s=deadline,
                       host="198.18.2.2", port=PORT,
                       dir="down" if run["direction"] == "download" else "up",
                       flows=run["flows"], bytes=run["flow_bytes"], series=run["series"])
    except Exception:
        probes.stop(0, 0)
        raise
    cpu1 = cpu_times()
    phase("transfer")
    diag_files = stop_diag(diag, resdir)
    probe = probes.stop(xf.get("start") or 0, xf.get("end") or time.monotonic())
    phase("probes_stop")
    q1, tq1 = tc_snapshot()
    tc1 = counters(tb.client), counters(tb.server)
    ps1 = parse_kv(tb.proxy("read", paths=["/proc/net/ecn_proxy/stats"])
                   ["/proc/net/ecn_proxy/stats"])
    phase("counters_after")
    capture = {}
    time.sleep(0.2)  # the last ACKs reach the captures
    capst = tb.proxy("capture_stop", names=list(caps))
    phase("capture_stop")
    # both captures together: each side's stall causes are judged with the
    # other side's flows (stalls.py: the proxy's dupack hold, the ECN of
    # N's data after the proxy)
    ana = pcapflow.analyze_captures({n: f for n, (_dev, f) in caps.items()}, PORT,
                                    {c.get("port") for c in xf["conns"]})
    for name, (dev, f) in caps.items():
        st = {"tcpdump": capst.get(name, {})}
        capture[name] = dict({"node": "proxy", "dev": dev, "snaplen": 128,
                              "tcpdump": st.get("tcpdump", {})}, **ana[name])
        if keep:
            os.makedirs(os.path.join(resdir, "pcaps"), exist_ok=True)
            shutil.move(f, os.path.join(resdir, "pcaps", os.path.basename(f)))
        else:
            os.unlink(f)

    phase("analysis")
    # fidelity: was the bottleneck the limit, and not the guest CPU?  The
    # bottleneck was reached if its HTB class throttled packets (overlimits)
    # or its RED queue marked or dropped; the utilisation (HTB bytes over the
    # run / rate) is recorded, not judged: RTOs and slow start lower it.
    bdev = tb.bottleneck_dev()
    rate = rate_bps(tb.low)
    h0, h1 = qdisc_entry(q0, bdev, "htb"), qdisc_entry(q1, bdev, "htb")
    r0, r1 = qdisc_entry(q0, bdev, "red"), qdisc_entry(q1, bdev, "red")
    window = tq1 - tq0
    util = ((h1["bytes"] - h0["bytes"]) * 8 / (rate * window)
            if h0 and h1 and window > 0 else None)
    throttled = (h1.get("overlimits", 0) - h0.get("overlimits", 0)) if h0 and h1 else 0
    red_act = sum(r1.get(k, 0) - r0.get(k, 0) for k in ("marked", "early", "pdrop")) \
        if r0 and r1 else 0
    idle = cpu_idle(cpu0, cpu1)
    cpu_min = min(v for k, v in idle.items() if k != "cpu" and v is not None)
    fid = prof["fidelity"]
    flags = []
    if throttled <= 0 and red_act <= 0:
        flags.append("bottleneck_not_reached")
    if cpu_min < fid["min_cpu_idle"]:
        flags.append("cpu_saturated")
    if xf.get("timeout"):
        flags.append("transfer_timeout")
    elif not xf["ok"]:
        flags.append("transfer_failed")
    drops = sum(v for c in capture.values() for k, v in c["tcpdump"].items()
                if "dropped by kernel" in k)
    if drops:
        flags.append("capture_drops")
    goodput = run["total_bytes"] * 8 / xf["completion_s"] / rate if xf["completion_s"] else None

    return {
        "schema": SCHEMA,
        "id": run["id"], "index": run["index"], "profile": prof["name"],
        "seed": plan["seed"],
        "params": {k: run[k] for k in ("direction", "cross", "load", "flows", "flow_bytes",
                                       "series", "total_bytes", "config", "rep")}
        | {"cross_rate": prof["cross_rate"] if run["cross"] == "on" else None,
           "client_ecn": cli_ecn, "server_ecn": srv_ecn, "proxy": proxy_on,
           "client_quickack": quickack,
           "client_routes": qa_routes.strip().splitlines(),
           "feedback": feedback, "port": PORT,
           "delay_ms": tb.delay,
           "fallback_cache_flushed": flushed["/proc/net/ecn_proxy/fallback"]},
        "env": env | {"wall_start": wall, "bottleneck_dev": bdev,
                      "rate_low": tb.low, "rate_high": tb.high},
        "sysctls": sysctls,
        "versions": env["versions"],
        "completion_s": xf["completion_s"],
        "ok": xf["ok"],
        "transfer": dict(xf, tool="scripts/matrix_agent.py"),
        "qdisc": {"before": q0, "after": q1, "window_s": round(window, 4)},
        "proxy_stats": {"before": ps0, "after": ps1},
        "probes": probe,
        "tcp_counters": {"client": counter_delta(tc0[0], tc1[0]),
                         "server": counter_delta(tc0[1], tc1[1])},
        "cpu": {"before": cpu0, "after": cpu1, "idle_share": idle},
        "phases_s": phases,
        "capture": capture,
        "diag_files": diag_files,
        "fidelity": {"bottleneck_utilisation": round(util, 4) if util is not None else None,
                     "goodput_share": round(goodput, 4) if goodput else None,
                     "htb_overlimits": throttled, "red_marks_drops": red_act,
                     "cpu_idle_min": cpu_min,
                     "min_cpu_idle": fid["min_cpu_idle"],
                     "flags": flags, "ok": not flags},
    }


def fmt(s):
    s = int(s)
    return "%d:%02d:%02d" % (s // 3600, s // 60 % 60, s % 60) if s >= 3600 else \
        "%d:%02d" % (s // 60, s % 60)


def main():
    resdir = os.path.abspath(sys.argv[1])
    keep = "--keep-pcaps" in sys.argv[2:]
    global LOGFILE
    LOGFILE = open(os.path.join(resdir, "guest.log"), "a")
    with open(os.path.join(resdir, "plan.json")) as f:
        plan = json.load(f)
    prof = plan["profile"]
    runs = plan["runs"]
    rdir = os.path.join(resdir, "runs")
    os.makedirs(rdir, exist_ok=True)
    done = {r["id"] for r in runs if os.path.exists(os.path.join(rdir, r["id"] + ".json"))}
    pending = [r for r in runs if r["id"] not in done]
    n = len(runs)
    log("matrix: profile %s, %d runs, %d done, %d to run" % (prof["name"], n, len(done),
                                                           len(pending)))
    if not pending:
        return 0
    t_start = time.monotonic()
    # topology settings the profile fixes (e.g. TB_DELAY_MS), unless the
    # environment sets them; the records' env.tb shows what was in force
    for k, v in prof.get("tb", {}).items():
        os.environ.setdefault(k, str(v))
        TB_ENV.setdefault(k, os.environ[k])
    kind = prof.get("kind", "matrix")
    if kind in ("fairness", "impair"):
        if kind == "fairness":
            import fairness_guest as exp
        else:
            import impair_guest as exp
        exp.mg = sys.modules[__name__]  # this module, not a second copy
        run_one, setup = exp.do_run, exp.setup

        def est(r):
            return exp.estimate_s(prof, r)

        def summary(rec):
            return exp.log_line(rec)
    else:
        run_one, setup = do_run, None

        def est(r):
            return prof.get("overhead_s", 4) + r["total_bytes"] / (
                450e3 if r["cross"] == "on" else 1.1e6)

        def summary(rec):
            return "%.2f s, util %s" % (rec["completion_s"],
                                        rec["fidelity"]["bottleneck_utilisation"])
    tb = Testbed(plan)
    try:
        tb.up()
        if setup:
            setup(tb)
    except Exception as e:
        log("matrix: testbed setup failed: %s" % e)
        tb.down()
        return 1
    log("matrix: testbed up after %.0f s" % (time.monotonic() - t_start))
    with open("/proc/cpuinfo") as f:
        cpus = sum(1 for line in f if line.startswith("processor"))
    accel = "unknown"
    try:
        with open(os.path.join(resdir, "session.json")) as f:
            accel = json.load(f)["accel"]
    except (OSError, ValueError, KeyError):
        pass
    env = {"kernel": platform.release(), "accel": accel,
           "guest_cpus": cpus, "versions": versions(),
           "tb": {k: v for k, v in os.environ.items() if k.startswith("TB_")}}

    est_left = sum(est(r) for r in pending)
    est_done = 0.0
    t0 = time.monotonic()
    failed = 0
    for i, run in enumerate(pending):
        path = os.path.join(rdir, run["id"] + ".json")
        if os.path.exists(path):
            continue
        try:
            moved = tb.set_delay(run.get("delay_ms"))
            if tb.set_block(run["direction"], run["cross"], prof.get("cross_rate")) or moved:
                time.sleep(prof.get("cross_settle_s", 2))
            rec = run_one(tb, run, plan, env, keep, resdir)
        except Exception as e:
            failed += 1
            log("run %d/%d %s: FAILED: %s" % (len(done) + i + 1, n, run["id"], e))
            if failed >= 5:
                log("matrix: 5 failures in this session, giving up")
                break
            try:  # restart the testbed
                tb.down()
                tb = Testbed(plan)
                tb.up()
                if setup:
                    setup(tb)
            except Exception as e2:
                log("matrix: testbed restart failed: %s" % e2)
                break
            continue
        tmp = os.path.join(rdir, ".tmp-" + run["id"])
        with open(tmp, "w") as f:
            json.dump(rec, f, separators=(",", ":"))
        os.rename(tmp, path)
        est_done += est(run)
        est_left -= est(run)
        el = time.monotonic() - t0
        eta = el / est_done * est_left
        fl = rec["fidelity"]
        log("run %d/%d %s: %s, cpu idle min %.2f%s | elapsed %s, ETA %s" % (
            len(done) + i + 1, n, run["id"], summary(rec), fl["cpu_idle_min"],
            (" [" + ",".join(fl["flags"]) + "]") if fl["flags"] else "",
            fmt(time.monotonic() - t_start), fmt(eta)))
        time.sleep(prof.get("settle_s", 0.5))
    tb.down()
    left = [r for r in runs if not os.path.exists(os.path.join(rdir, r["id"] + ".json"))]
    log("matrix: session done after %s, %d runs left" % (fmt(time.monotonic() - t_start),
                                                        len(left)))
    return 1 if left else 0


if __name__ == "__main__":
    sys.exit(main())
