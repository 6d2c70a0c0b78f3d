# SPDX-License-Identifier: GPL-2.0
"""The six-node testbed as the guest's runners drive it: matrix.py, and
through it fairness.py and impair.py (the kinds of profile).

  sh(script)      bash with vm-testbed/lib/topology.sh sourced (TB_ENV)
  Agent(ns)       a long-lived agent.py in namespace NS, one JSON line per call
  Testbed(plan)   the topology up and down, the bottleneck per block
  Probes          RTT, RED backlog and cross traffic while a transfer runs
  parse_kv, parse_netstat, counter_delta, cpu_times, cpu_idle, tc_snapshot,
  qdisc_entry, versions: counters and versions for the run records
  log(...)        stdout and RESULTS/guest.log (LOGFILE, set by matrix.py)

Paths are the checkout's (the guest sees it at the host's path).
"""
import json
import os
import platform
import select
import signal
import subprocess
import sys
import threading
import time

from ..paths import TOP, python_env

TOPO = os.path.join(TOP, "vm-testbed", "lib", "topology.sh")
MODULE = os.path.join(TOP, "kmod", "ecn_proxy", "ecn_proxy.ko")
CORE_MODULE = os.path.join(TOP, "kmod", "core", "tcpfwd.ko")
PORT = 5001
STATE = "/tmp/mx-state"
PCAPS = "/tmp/mx-pcap"
TB_ENV = dict(os.environ, TB_STATE=STATE)
# the client's default routes with or without "quickack 1" (QA), and then
# as they are
QUICKACK_SH = r"""
for f in 4 6; do
	r=$(ip -n client -$f route show default | head -n 1 | sed 's/ quickack 1//')
	[ -z "$r" ] || ip -n client -$f route change $r$QA || exit 1
done
ip -n client -4 route show default
ip -n client -6 route show default
"""


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
            ["ip", "netns", "exec", ns, sys.executable, "-m", "ecnproxy.guest.agent"]
            + list(args), env=python_env(),
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
        # what the last client_quickack() and red_reset() found, so that a
        # run repeats no shell (every process is slow under TCG)
        self.quickack = self.qa_routes = None
        self.red_cmds = {}
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

    def client_quickack(self, on):
        """The client's default routes with "quickack 1" (ON) or without,
        changed only when ON differs from the last call's -> the routes
        (ip route show default, IPv4 then IPv6)."""
        if on != self.quickack:
            self.qa_routes = sh(QUICKACK_SH, QA=" quickack 1" if on else "")
            self.quickack = on
        return self.qa_routes

    def red_reset(self, direction):
        """topology.sh's tb_red_reset for DIRECTION's rates, one tc process
        (its batch lines made once per direction)."""
        if direction not in self.red_cmds:
            self.red_cmds[direction] = sh("tb_red_reset_cmds", TB_SETUP=direction,
                                          TB_RATE_LOW=self.low, TB_RATE_HIGH=self.high)
        r = subprocess.run(["tc", "-n", "router", "-b", "-"], input=self.red_cmds[direction],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        if r.returncode:
            raise RuntimeError("tb_red_reset (%s): exit %d: %s" % (direction, r.returncode,
                                                                  r.stdout))

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
               "net/ipv4/tcp_wmem", "net/ipv4/tcp_rmem", "net/ipv4/tcp_no_metrics_save",
               "net/ipv4/tcp_recovery", "net/ipv4/tcp_reordering", "net/ipv4/tcp_max_reordering"]
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
