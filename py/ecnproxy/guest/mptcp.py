# SPDX-License-Identifier: GPL-2.0
"""Guest side of the Multipath TCP experiment (exp-mbtest-mptcp: a profile
of kind "impair" with "driver": "mptcp"; impair_plan's docstring, issue
44 part 2): MBtest's Table 1 on upstream MPTCP.

The topology has two disjoint paths (TB_MPTCP=1, topology.sh's
tb_mptcp_up): path 1 client eth0 - proxy - router - server eth0, path 2
client eth1 - mbox - server eth1.  A run is one byte-exact transfer
(vmtest/xfer.py) of transfer_bytes from the data sender (the client for
an upload, the server for a download), with Multipath TCP sockets at both
ends (mptcp 1; the client's subflow endpoint opens a second subflow over
path 2) or plain TCP (mptcp 0: path 1 only, for the TCP extensions).  The
run's rules go to path 1's middle node (the proxy node's
/proc/net/impair/rules, with the loss rule of loss_pct) and rules2 to
path 2's (mbox's); nat masquerades IPv4 on the server side of a path's
middle node (nftables, removed after the run).  What a run records:

  transfer   both ends' xfer summaries: byte counts, SHA-256 digests, the
             receiver's time from its first read to EOF, any error (a
             reset), and for MPTCP sockets TCP_IS_MPTCP (0 once fallen
             back) and MPTCP_INFO at the end
  counters   the whole /proc/net/netstat delta of both ends (MPTcpExt: the
             kernel's MPTCP checks and fallbacks; TcpExt)
  paths      the client's bytes per interface (eth0: path 1, eth1: path 2)
             in the data's direction
  captures   tcpdump -s 128 on both sides of each middle node (p1c, p1s:
             proxy eth0, eth1; p2c, p2s: mbox eth0, eth1), each summarised
             per connection by analysis/mptcpopt.py (the options of the
             SYN and SYN-ACK, MP_CAPABLE, DSS mappings, infinite mappings,
             MP_FAIL, MP_TCPRST, RSTs, timestamps and SACK blocks); kept
             under RESULTS/pcaps/ with KEEP_PCAPS=1
  ss         the client's `ss -MinH` and `ss -tinH` while the transfer ran
             (its last sample: subflows, negotiated options)
  impair     each node's impairment counters and rule hits

The result's outcome: "ok" (byte-exact, still MPTCP at both ends), "fallback"
(byte-exact, but an end fell back to TCP), "reset" (the transfer failed
with a reset), "broken" (it failed otherwise, or the bytes differ).  An end
fell back when its TCP_IS_MPTCP says 0, when a fallback counter moved, or
when the client's last `ss -Mi` sample during the transfer says "fallback".
Linux 6.1 has no TCP_IS_MPTCP (ENOPROTOOPT) and counts no fallback of the
receive path (subflow_check_data_avail()'s), so there the `ss` sample is
what shows such a fallback (the analysis applies the same rule to records
made before it was part of the outcome; the rule is
analysis/mptcp_outcome.py's, shared by both).
"""
import glob
import json
import os
import platform
import shutil
import subprocess
import threading
import time

from .. import impair_plan
from ..analysis import mptcpopt
from ..analysis.mptcp_outcome import outcome
from ..paths import python_env
from . import impair, testbed

PORT = 5402
XFER = ["python3", "-m", "ecnproxy.vmtest.xfer"]
# path -> (middle node, its client-side device, its server-side device,
# the client's device)
PATHS = {1: ("proxy", "eth0", "eth1", "eth0"), 2: ("mbox", "eth0", "eth1", "eth1")}
NAT_TABLE = "tbnat"
# a path carried data when at least this share of the transfer crossed it
PATH_SHARE = 0.02


def setup(tb):
    """impair loaded, the proxy off, an agent in mbox (closed with the
    testbed), the MPTCP endpoints logged."""
    if not os.path.isdir("/sys/module/impair"):
        subprocess.run(["insmod", impair.IMPAIR_KO], check=True)
    if os.path.isdir("/sys/module/ecn_proxy"):
        tb.proxy("sysctl", set={"net/ecn_proxy/enabled": "0"})
    tb.mbox = testbed.Agent("mbox")
    down = tb.down

    def down_too():
        tb.mbox.close()
        down()
    tb.down = down_too
    testbed.log("mptcp: " + testbed.sh("tb_mptcp_endpoints").strip().replace("\n", "; "))


def estimate_s(prof, run):
    st = run["settings"]
    rate = testbed.rate_bps(os.environ.get("TB_RATE_LOW", "10mbit"))
    return st["transfer_bytes"] * 8 / rate + prof.get("overhead_s", 12) + st["delay_ms"] / 50.0


def log_line(rec):
    r = rec["result"]
    return "%s, %s Mbit/s, paths with data %s, %s" % (
        r["outcome"], r["goodput_mbps"], r["paths_with_data"], r["error"] or "no error")


def check_kernel(resdir):
    """Every record of a results directory comes from one kernel: a
    directory begun on another (6.1, 6.12) is not continued on this one."""
    me = platform.release()
    for f in sorted(glob.glob(os.path.join(resdir, "runs", "*.json")))[:1]:
        with open(f) as fh:
            k = json.load(fh).get("env", {}).get("kernel")
        if k and k != me:
            raise RuntimeError("%s has runs of kernel %s, this guest runs %s: start a new "
                               "results directory for this kernel" % (resdir, k, me))


def netstat_all(agent):
    """Every group of /proc/net/netstat and /proc/net/snmp (MPTcpExt
    included): {"Group": {"Name": value}}."""
    paths = ["/proc/net/netstat", "/proc/net/snmp"]
    r = agent("read", paths=paths)
    d = {}
    for p in paths:
        lines = (r[p] or "").splitlines()
        for a, b in zip(lines[::2], lines[1::2]):
            ka, kb = a.split(), b.split()
            if ka and kb and ka[0] == kb[0] and ka[0].endswith(":"):
                d[ka[0][:-1]] = {k: int(v) for k, v in zip(ka[1:], kb[1:])
                                 if v.lstrip("-").isdigit()}
    return d


def mptcp_delta(a, b):
    """The MPTcpExt counters that changed, without the prefix."""
    return {k: v - a.get("MPTcpExt", {}).get(k, 0) for k, v in b.get("MPTcpExt", {}).items()
            if v != a.get("MPTcpExt", {}).get(k, 0)}


def tcp_delta(a, b):
    """The TcpExt and Tcp counters that changed ("TcpExt.Name": delta)."""
    keep = ("TcpExt", "Tcp")
    return testbed.counter_delta({g: v for g, v in a.items() if g in keep},
                                 {g: v for g, v in b.items() if g in keep})


def node_rules(tb, node, text):
    """Write a rule set to a middle node and read it back (impair loaded)."""
    if not os.path.isdir("/sys/module/impair"):
        return
    agent = tb.proxy if node == "proxy" else tb.mbox
    agent("write", files={impair.RULES: text})
    got = agent("read", paths=[impair.RULES])[impair.RULES]
    if impair_plan.rule_lines(got) != impair_plan.rule_lines(text):
        raise RuntimeError("%s: rules not applied: wrote %r, read %r" % (node, text, got))


def node_impair(tb, node):
    """-> (counters, rules with hits) of a middle node, or (None, None)."""
    if not os.path.isdir("/sys/module/impair"):
        return None, None
    agent = tb.proxy if node == "proxy" else tb.mbox
    r = agent("read", paths=[impair.ISTATS, impair.RULES])
    return testbed.parse_kv(r[impair.ISTATS]), r[impair.RULES]


def set_nat(paths):
    """IPv4 masquerade on the server-side device of each path's middle
    node; none elsewhere."""
    for p, (node, _c, sdev, _cd) in PATHS.items():
        testbed.sh("tb_ns %s nft delete table ip %s 2>/dev/null || true" % (node, NAT_TABLE))
        if p in paths:
            testbed.sh("tb_ns %s nft -f - <<'NFT'\ntable ip %s {\n"
                       "\tchain post {\n\t\ttype nat hook postrouting priority srcnat; "
                       "policy accept;\n\t\toifname \"%s\" masquerade\n\t}\n}\nNFT"
                       % (node, NAT_TABLE, sdev))


def prepare(tb, st, direction):
    """impair.prepare (the ends' sysctls, modules, path 1's rules, delay,
    a fresh topology), then path 2: its rules, delay, shaping, NAT, and
    the ends' MPTCP checksum.  -> what impair.prepare returns, with path
    2's rules and the qdiscs of mbox and the server's eth1."""
    rules, modules, sysctls, qdiscs = impair.prepare(tb, st, direction)
    rules2 = "\n".join(["flush"] + list(st["rules2"])) + "\n"
    node_rules(tb, "mbox", rules2)
    d = st["delay_ms"]
    if d > 0:
        testbed.sh("tc -n server qdisc replace dev eth1 root netem delay %sms limit 100000" % d)
    else:
        testbed.sh("tc -n server qdisc del dev eth1 root 2>/dev/null || true")
    testbed.sh("tb_mptcp_shape %s" % direction, TB_RATE_LOW=tb.low, TB_RATE_HIGH=tb.high,
               TB_RED_ECN=str(st["red_ecn"]))
    set_nat(st["nat"])
    for agent in (tb.client, tb.server):
        agent("sysctl", set={"net/mptcp/checksum_enabled": str(st["mptcp_checksum"])})
    for name, agent in (("client", tb.client), ("server", tb.server)):
        sysctls[name].update(agent("sysctl", get=["net/mptcp/enabled",
                                                  "net/mptcp/checksum_enabled"]))
    qdiscs += testbed.sh("tc -n mbox qdisc show; tc -n server qdisc show dev eth1")
    return rules, rules2, modules, sysctls, qdiscs


class SsSampler:
    """The client's `ss -MinH` and `ss -tinH` every 0.3 s while a transfer
    runs; keeps the last sample that shows a connection to PORT."""

    def __init__(self):
        self.last = None
        self.n = 0
        self.stop_ev = threading.Event()
        self.th = threading.Thread(target=self._run, daemon=True)
        self.th.start()

    def _run(self):
        while not self.stop_ev.wait(0.3):
            out = {}
            for k, argv in (("mptcp", ["ss", "-MinH"]), ("tcp", ["ss", "-tinH"])):
                out[k] = testbed.out(["ip", "netns", "exec", "client"] + argv +
                                     ["dport = :%d" % PORT])
            if ":%d" % PORT in out["tcp"] + out["mptcp"]:
                self.last = out
                self.n += 1

    def stop(self):
        self.stop_ev.set()
        self.th.join(timeout=10)
        return {"samples": self.n, "last": self.last}


def negotiated(ss_tcp):
    """From `ss -tin`'s text of one connection: which of SACK, timestamps
    and window scaling it negotiated ({"sack", "ts", "wscale"}; None
    without a sample)."""
    if not ss_tcp:
        return None
    words = ss_tcp.split()
    ws = next((w.split(":", 1)[1] for w in words if w.startswith("wscale:")), None)
    return {"sack": "sack" in words, "ts": "ts" in words, "wscale": ws}


def transfer(st, direction, fam_host, timeout):
    """One xfer: -> (client summary, server summary)."""
    n = st["transfer_bytes"]
    up, down = (n, 0) if direction == "upload" else (0, n)
    extra = (["--mptcp"] if st["mptcp"] else []) + ["--timeout", str(timeout)]
    srv = subprocess.Popen(["ip", "netns", "exec", "server"] + XFER +
                           ["server", str(PORT), str(down)] + extra,
                           env=python_env(), stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True)
    try:
        testbed.sh("tb_wait_port server %d" % PORT)
        cli = subprocess.run(["ip", "netns", "exec", "client"] + XFER +
                             ["client", fam_host, str(PORT), str(up)] + extra,
                             env=python_env(), stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, text=True,
                             timeout=timeout * 4 + n * 8 / 1e5 + 60)
        cout = cli.stdout
        try:
            sout = srv.communicate(timeout=timeout + 30)[0]
        except subprocess.TimeoutExpired:
            srv.kill()
            sout = srv.communicate()[0] + "\n(killed: no end after the client's)"
    finally:
        if srv.poll() is None:
            srv.kill()
            srv.communicate()
    return parse_xfer(cout), parse_xfer(sout)


def parse_xfer(text):
    """An xfer summary (its last JSON line), or {"error": what it printed}."""
    for line in reversed((text or "").strip().splitlines()):
        try:
            d = json.loads(line)
        except ValueError:
            continue
        if isinstance(d, dict):
            return d
    return {"error": "no summary: %s" % (text or "")[-400:]}


def do_run(tb, run, plan, env, keep, resdir):
    prof = plan["profile"]
    st = run["settings"]
    direction = run["direction"]
    check_kernel(resdir)
    rules, rules2, modules, sysctls, qdiscs = prepare(tb, st, direction)
    os.makedirs(testbed.PCAPS, exist_ok=True)
    caps = {}
    for p, (node, cdev, sdev, _cd) in PATHS.items():
        for side, dev in (("c", cdev), ("s", sdev)):
            caps["p%d%s" % (p, side)] = (node, dev, os.path.join(
                testbed.PCAPS, "%s.p%d%s.pcap" % (run["id"], p, side)))
    for node in ("proxy", "mbox"):
        agent = tb.proxy if node == "proxy" else tb.mbox
        agent("capture_start", caps=[{"name": n, "dev": dev, "file": f,
                                      "filter": "tcp port %d" % PORT}
                                     for n, (nd, dev, f) in caps.items() if nd == node])
    c0, s0 = netstat_all(tb.client), netstat_all(tb.server)
    l0 = {p: testbed.link_stats("client", PATHS[p][3]) for p in PATHS}
    i0 = {node: node_impair(tb, node)[0] for node in ("proxy", "mbox")}
    cpu0 = testbed.cpu_times()
    ss = SsSampler()
    t0 = time.monotonic()
    try:
        cli, srv = transfer(st, direction, testbed.sh("tb_addr server").strip(),
                            prof["duration_s"])
    finally:
        ssr = ss.stop()
    t1 = time.monotonic()
    cpu1 = testbed.cpu_times()
    c1, s1 = netstat_all(tb.client), netstat_all(tb.server)
    l1 = {p: testbed.link_stats("client", PATHS[p][3]) for p in PATHS}
    imp = {node: node_impair(tb, node) for node in ("proxy", "mbox")}
    time.sleep(0.2)
    capst = tb.proxy("capture_stop", names=["p1c", "p1s"])
    capst.update(tb.mbox("capture_stop", names=["p2c", "p2s"]))
    summ = {}
    for name, (_node, dev, f) in caps.items():
        summ[name] = {"dev": dev, "tcpdump": capst.get(name, {}),
                      "conns": mptcpopt.summarize(f, PORT) if os.path.exists(f) else None}
        if keep and os.path.exists(f):
            os.makedirs(os.path.join(resdir, "pcaps"), exist_ok=True)
            shutil.move(f, os.path.join(resdir, "pcaps", os.path.basename(f)))
        elif os.path.exists(f):
            os.unlink(f)
    set_nat([])
    mc, ms = mptcp_delta(c0, c1), mptcp_delta(s0, s1)
    res, exact, fallback, reset, why = outcome(st, direction, cli, srv, mc, ms,
                                               (ssr["last"] or {}).get("mptcp"))
    n = st["transfer_bytes"]
    key = "tx_bytes" if direction == "upload" else "rx_bytes"
    path_bytes = {str(p): l1[p][key] - l0[p][key] for p in PATHS}
    with_data = sorted(int(p) for p, b in path_bytes.items() if b >= PATH_SHARE * n)
    rcv = srv if direction == "upload" else cli
    secs = rcv.get("seconds")
    info = ((cli.get("mptcp") or {}).get("info") or {})
    result = {
        "outcome": res, "byte_exact": int(exact), "fallback": int(fallback),
        "reset": int(reset), "error": cli.get("error") or srv.get("error"),
        "goodput_mbps": round(n * 8 / secs / 1e6, 4) if exact and secs else None,
        "seconds": secs,
        "is_mptcp": {"client": (cli.get("mptcp") or {}).get("is_mptcp"),
                     "server": (srv.get("mptcp") or {}).get("is_mptcp")},
        "subflows_end": info.get("subflows"),
        "path_bytes": path_bytes, "paths_with_data": with_data,
        "n_paths_with_data": len(with_data),
        "counters_fired": why,
        "negotiated": negotiated((ssr["last"] or {}).get("tcp")),
    }
    idle, cpu_min, flags = impair.fidelity(prof, cpu0, cpu1, capst, [])
    return impair.record_head(tb, run, plan, rules, env, None) | {
        "rules2": rules2,
        "rule_hits": {"proxy": imp["proxy"][1], "mbox": imp["mbox"][1]},
        "impair_stats": {node: {"before": i0[node], "after": imp[node][0]}
                         for node in ("proxy", "mbox")},
        "sysctls": sysctls,
        "qdiscs": qdiscs,
        "modules": modules,
        "ok": True,
        "error": result["error"],
        "wall_s": round(t1 - t0, 3),
        "transfer": {"client": cli, "server": srv},
        "result": result,
        "mptcp_counters": {"client": mc, "server": ms},
        "tcp_counters": {"client": tcp_delta(c0, c1), "server": tcp_delta(s0, s1)},
        "links": {"client": {str(p): {"before": l0[p], "after": l1[p]} for p in PATHS}},
        "ss": ssr,
        "captures": summ,
        "cpu": {"idle_share": idle},
        "fidelity": {"cpu_idle_min": cpu_min, "flags": flags, "ok": not flags},
    }
