# SPDX-License-Identifier: GPL-2.0
"""Guest side of the impairment experiments (profiles of kind "impair",
`make experiments`; issue 12, docs/testbed.md "Impairment experiments").

One single TCP flow per run, iperf3 for the profile's duration_s, through
the proxy node, where the impairment module applies the run's rules (the
ECN proxy is loaded by the matrix's Testbed and switched off there).  A
run is (direction, configuration, sweep point, repetition); what a run
sets, from the configuration and the sweep point (impair_plan.run_settings):

  client, server   tcp_ecn, tcp_sack, tcp_timestamps (tb_tcp keys ecn, sack,
                   ts) of the two ends
  rules            impairment rules (impair(7), docs/man/impair.7), written whole to
                   the proxy namespace's /proc/net/impair/rules
  red_ecn          1: the bottleneck's RED marks ECT packets, 0: it drops
  delay_ms         netem delay on the server's link (both directions' RTT)
  loss_pct         random loss of the data sender's segments after the
                   flow's first 20: an impairment rule (dir initiator for
                   uploads, responder for downloads) appended to the rules
  reorder_pct      netem reordering on the proxy's egress toward the data
                   receiver: that share of packets goes at once, the others
                   wait reorder_delay_ms (5)
  jitter_ms        instead, netem delay J ms with J ms of jitter there:
                   packets overtake each other (0..2J ms each)

With idle_s > 0 the run is a connection-survival run instead
(do_survival(), impair_plan's docstring): one connection of
vmtest/phases.py on port 5302, silent for idle_s between two
exchanges of phase_bytes each way, the modules reloaded meanwhile if
reload; captures on both sides of the proxy cover the exchange after the
silence.

Before the bulk flow, the set-up probe: `transactions` (1) 1000-byte
requests/responses, each over a new connection, one after another (the
matrix agents' xfer, server port 5001): the median connect time is the
connection set-up time, the median time from connect() to the last byte
the transaction time (Allman's metric).  Modules: impair and ecn_proxy
loaded or unloaded as the run's `modules` say, the proxy on as `proxy`
says (its fallback cache flushed).  With `transit`, every packet of the
flow is matched across the two captures (analysis/transit.py): its time
through the proxy node.  Captures (tcpdump -s 128) on both sides of the
proxy (eth0: the client's side, eth1: the server's), each judged alone
(pcapflow: retransmissions, CE, ECN negotiation, stalls and their causes;
the two sides differ in sequence space under seqrand, so no peer).  TCP
counters of both ends, RED counters, the impairment module's counters
and each rule's hits are recorded.
"""
import json
import os
import shutil
import subprocess
import time

from .. import impair_plan
from ..analysis import pcapflow, pcapread, transit
from ..paths import TOP, python_env
from . import testbed
from .fairness import SERVER, sender_series

IPERF_PORT = 5301
PHASE_PORT = 5302
PHASES = ["python3", "-m", "ecnproxy.vmtest.phases"]  # run with env=python_env()
IMPAIR_KO = os.path.join(TOP, "kmod", "impair", "impair.ko")
IMPAIR_TIMEOUT = "/sys/module/impair/parameters/flow_timeout"
PROXY_TIMEOUTS = ("net/ecn_proxy/timeout_established", "net/ecn_proxy/timeout_handshake")
RULES = "/proc/net/impair/rules"
ISTATS = "/proc/net/impair/stats"


def set_modules(tb, st):
    """Load or unload impair and ecn_proxy as the run wants them (tcpfwd,
    which both import, stays); the proxy on or off in the proxy node."""
    for m, ko, args in (("impair", IMPAIR_KO, []), ("ecn_proxy", testbed.MODULE, ["enable_init_net=0"])):
        want = m in st.get("modules", ["impair", "ecn_proxy"])
        have = os.path.isdir("/sys/module/" + m)
        if want and not have:
            subprocess.run(["insmod", ko] + args, check=True)
        elif have and not want:
            subprocess.run(["rmmod", m], check=True)
    if os.path.isdir("/sys/module/ecn_proxy"):
        tb.proxy("sysctl", set={"net/ecn_proxy/enabled": str(st.get("proxy", 0)),
                                "net/ecn_proxy/feedback": st.get("feedback", "dupack")})
        tb.proxy("write", files={"/proc/net/ecn_proxy/fallback": "flush"})


def setup(tb):
    if not os.path.isdir("/sys/module/impair"):
        subprocess.run(["insmod", IMPAIR_KO], check=True)
    tb.proxy("sysctl", set={"net/ecn_proxy/enabled": "0"})
    testbed.sh("tb_bg exp-iperf-srv server iperf3 -s -J -i 0.2 -p %d && tb_wait_port server %d"
          % (IPERF_PORT, IPERF_PORT))


def estimate_s(prof, run):
    st = run["settings"]
    if st.get("idle_s"):
        return st["idle_s"] + prof.get("overhead_s", 12)
    return prof["duration_s"] + prof.get("overhead_s", 12) + st["delay_ms"] / 50.0


def log_line(rec):
    r = rec["result"]
    if "survival" in r:
        return "%s (%s), wake-up %s s" % (r["survival"], r["wake_error"] or "no error",
                                          r["wake_s"])
    return "%s Mbit/s, %s retrans, %s RTO, set-up %s s" % (
        r["goodput_mbps"], r["retrans_segs"], r["rto"], r["connect_s"])


def proxy_stats(tb):
    if not os.path.isdir("/sys/module/ecn_proxy"):
        return None
    p = "/proc/net/ecn_proxy/stats"
    return testbed.parse_kv(tb.proxy("read", paths=[p])[p])


def set_paths(tb, st, direction):
    """netem on the server's link (delay) and on the proxy's egress toward
    the data receiver (reordering); none where the run wants none."""
    d = st["delay_ms"]
    if d > 0:
        testbed.sh("tc -n server qdisc replace dev eth0 root netem delay %sms limit 100000" % d)
    else:
        testbed.sh("tc -n server qdisc del dev eth0 root 2>/dev/null || true")
    rx_dev = "eth1" if direction == "upload" else "eth0"
    for dev in ("eth0", "eth1"):
        if dev == rx_dev and st["reorder_pct"] > 0:
            testbed.sh("tc -n proxy qdisc replace dev %s root netem delay %sms reorder %s%% 50%% "
               "limit 100000" % (dev, st.get("reorder_delay_ms", 5), st["reorder_pct"]))
        elif dev == rx_dev and st.get("jitter_ms", 0) > 0:
            testbed.sh("tc -n proxy qdisc replace dev %s root netem delay %sms %sms limit 100000"
               % (dev, st["jitter_ms"], st["jitter_ms"]))
        else:
            testbed.sh("tc -n proxy qdisc del dev %s root 2>/dev/null || true" % dev)


def stall_intervals(series):
    """Sender intervals in which no byte was sent (iperf3's view)."""
    return sum(1 for s in series if s[1] == 0)


def counters(agent):
    r = agent("read", paths=["/proc/net/netstat", "/proc/net/snmp"])
    return testbed.parse_netstat(r["/proc/net/netstat"]) | testbed.parse_netstat(r["/proc/net/snmp"])


def write_rules(tb, rules):
    """The run's rules, read back (if impair is loaded)."""
    if not os.path.isdir("/sys/module/impair"):
        return
    tb.proxy("write", files={RULES: rules})
    got = tb.proxy("read", paths=[RULES])[RULES]
    if impair_plan.rule_lines(got) != impair_plan.rule_lines(rules):
        raise RuntimeError("rules not applied: wrote %r, read %r" % (rules, got))


def prepare(tb, st, direction):
    """The ends' sysctls, the modules, the rules (read back), the paths and
    a fresh topology.  -> (rules text, modules loaded, the ends' TCP
    sysctls, the qdiscs)."""
    base = {"net/ipv4/tcp_no_metrics_save": "1"}
    keys = {"ecn": "net/ipv4/tcp_ecn", "sack": "net/ipv4/tcp_sack",
            "ts": "net/ipv4/tcp_timestamps"}
    for agent, name in ((tb.client, "client"), (tb.server, "server")):
        host = dict(st[name])
        # always set: a run without rmem must not inherit the last one's
        rmem = host.pop("rmem", impair_plan.RMEM_DEFAULT)
        agent("sysctl", set=dict(base, **{keys[k]: str(v) for k, v in host.items()},
                                 **{"net/ipv4/tcp_rmem": "4096 131072 %d" % rmem}))
    set_modules(tb, st)
    rules = impair_plan.rules_text(st, direction)
    write_rules(tb, rules)
    modules = sorted(m for m in ("tcpfwd", "impair", "ecn_proxy")
                     if os.path.isdir("/sys/module/" + m))
    set_paths(tb, st, direction)
    testbed.sh("tb_fresh_transfer", TB_SETUP=direction, TB_RATE_LOW=tb.low,
          TB_RATE_HIGH=tb.high, TB_RED_ECN=str(st["red_ecn"]))
    sysctls = {"client": tb.client("sysctl", get=testbed.SYSCTLS_TCP),
               "server": tb.server("sysctl", get=testbed.SYSCTLS_TCP)}
    qdiscs = testbed.sh("tc -n router qdisc show; tc -n server qdisc show; tc -n proxy qdisc show")
    return rules, modules, sysctls, qdiscs


def do_run(tb, run, plan, env, keep, resdir):
    prof = plan["profile"]
    st = run["settings"]
    direction = run["direction"]
    reverse = direction == "download"
    dur = prof["duration_s"]
    sender, receiver = (tb.server, tb.client) if reverse else (tb.client, tb.server)
    rules, modules, sysctls, qdiscs = prepare(tb, st, direction)
    if st.get("idle_s"):
        return do_survival(tb, run, plan, env, keep, resdir,
                           (rules, modules, sysctls, qdiscs))
    impair = os.path.isdir("/sys/module/impair")

    # the set-up probe: tiny transactions, each on a new connection, one
    # after another
    ntr = st.get("transactions", 1)
    probe = tb.client("xfer", timeout=90 + 10 * ntr, deadline_s=60 + 5 * ntr, host=SERVER,
                      port=testbed.PORT, dir="down", flows=1, bytes=1000, series=ntr)
    conns = probe["conns"]
    tr = [round(c["end"] - c["start"], 5) for c in conns if c.get("ok")]
    co = [c["connect_s"] for c in conns if c.get("ok") and c.get("connect_s") is not None]
    setup = {"ok": probe["ok"], "n": ntr,
             "connect_s": sorted(co)[len(co) // 2] if co else None,
             "transaction_s": sorted(tr)[len(tr) // 2] if tr else None,
             "connect_all_s": co, "transaction_all_s": tr,
             "error": next((c.get("error") for c in conns if c.get("error")), None)}
    ps0 = proxy_stats(tb)

    os.makedirs(testbed.PCAPS, exist_ok=True)
    caps = {"client_side": ("eth0", os.path.join(testbed.PCAPS, run["id"] + ".client_side.pcap")),
            "server_side": ("eth1", os.path.join(testbed.PCAPS, run["id"] + ".server_side.pcap"))}
    tb.proxy("capture_start", caps=[{"name": n, "dev": dev, "file": f,
                                     "filter": "tcp port %d" % IPERF_PORT}
                                    for n, (dev, f) in caps.items()])
    tc0 = counters(sender), counters(receiver)
    i0 = testbed.parse_kv(tb.proxy("read", paths=[ISTATS])[ISTATS]) if impair else None
    q0, tq0 = testbed.tc_snapshot()
    cpu0 = testbed.cpu_times()
    argv = ["ip", "netns", "exec", "client", "iperf3", "-c", SERVER, "-p", str(IPERF_PORT),
            "-t", str(dur), "-i", "0.2", "-J", "--connect-timeout", "10000"]
    # the server's intervals too: the sender's for -R, else the receiver's
    argv += ["--get-server-output"] + (["-R"] if reverse else [])
    t0 = time.monotonic()
    p = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                       timeout=dur + 120)
    t1 = time.monotonic()
    cpu1 = testbed.cpu_times()
    q1, tq1 = testbed.tc_snapshot()
    tc1 = counters(sender), counters(receiver)
    i1 = testbed.parse_kv(tb.proxy("read", paths=[ISTATS])[ISTATS]) if impair else None
    hits = tb.proxy("read", paths=[RULES])[RULES] if impair else None
    ps1 = proxy_stats(tb)
    time.sleep(0.2)
    capst = tb.proxy("capture_stop", names=list(caps))
    try:
        js = json.loads(p.stdout)
    except ValueError:
        js = {"error": "iperf3 gave no JSON: %s" % p.stdout[-500:]}
    conn = (js.get("start", {}).get("connected") or [{}])[0]
    port = conn.get("local_port")
    cross = None
    if st.get("transit"):
        cross = transit.transit(
            [p for p in pcapread.read_packets(caps["client_side"][1]) if IPERF_PORT in p[4:6]],
            [p for p in pcapread.read_packets(caps["server_side"][1]) if IPERF_PORT in p[4:6]])
        cross = {"c2s": cross["a2b"], "s2c": cross["b2a"]}
    capture = judge_captures(caps, capst, IPERF_PORT, {port} if port else None, keep, resdir)

    end = js.get("end", {})
    recv = end.get("sum_received") or {}
    sent = end.get("sum_sent") or {}
    series = sender_series(js, reverse)
    # the receiver's intervals: bytes delivered per 200 ms (the sender's
    # count bytes written to its socket, which a large send buffer absorbs)
    rseries = sender_series(js, not reverse)
    tcs = testbed.counter_delta(tc0[0], tc1[0])
    tcr = testbed.counter_delta(tc0[1], tc1[1])
    bdev = tb.bottleneck_dev()
    r0, r1 = testbed.qdisc_entry(q0, bdev, "red"), testbed.qdisc_entry(q1, bdev, "red")
    h0, h1 = testbed.qdisc_entry(q0, bdev, "htb"), testbed.qdisc_entry(q1, bdev, "htb")
    red = {k: (r1.get(k, 0) - r0.get(k, 0)) if r0 and r1 else None
           for k in ("marked", "early", "pdrop")}
    throttled = (h1.get("overlimits", 0) - h0.get("overlimits", 0)) if h0 and h1 else 0
    rtts = [s[3] for s in series if s[3]]
    sside = capture["client_side" if not reverse else "server_side"]["totals"]
    result = {
        "goodput_mbps": round(recv["bits_per_second"] / 1e6, 4) if recv.get("seconds") else None,
        "bytes_received": recv.get("bytes"),
        "seconds": recv.get("seconds"),
        "retrans_segs": tcs.get("Tcp.RetransSegs", 0),
        "rto": tcs.get("TcpExt.TCPTimeouts", 0),
        "spurious_rto": tcs.get("TcpExt.TCPSpuriousRTOs", 0),
        "dsack_recv": tcs.get("TcpExt.TCPDSACKRecv", 0),
        "sack_discard": tcs.get("TcpExt.TCPSACKDiscard", 0),
        "sack_reneging": tcs.get("TcpExt.TCPSACKReneging", 0),
        "loss_undo": tcs.get("TcpExt.TCPFullUndo", 0) + tcs.get("TcpExt.TCPPartialUndo", 0)
        + tcs.get("TcpExt.TCPDSACKUndo", 0) + tcs.get("TcpExt.TCPLossUndo", 0),
        "reorder_seen": sum(tcs.get("TcpExt." + k, 0) for k in ("TCPSACKReorder", "TCPRenoReorder",
                                                                "TCPTSReorder")),
        "stalled_intervals": stall_intervals(series),
        "sender_rtt_ms_median": round(sorted(rtts)[len(rtts) // 2] / 1000, 2) if rtts else None,
        "connect_s": setup["connect_s"],
        "transaction_s": setup["transaction_s"],
        "ecn_negotiated": sside["ecn_negotiated"] if sside["flows"] else None,
        "ce_seen": capture["server_side" if not reverse else "client_side"]["totals"]["ce"],
        "ece_seen": sside["ece"],
        "cwr_seen": sside["cwr"],
        "stalls": sside["stalls"], "stall_time": sside["stall_time"],
        "stall_causes": sside.get("stall_causes"),
        "red": red,
        "transit_c2s_p50_us": cross["c2s"]["p50_us"] if cross else None,
        "transit_s2c_p50_us": cross["s2c"]["p50_us"] if cross else None,
    }
    idle, cpu_min, flags = fidelity(prof, cpu0, cpu1, capst,
                                    (["transfer_failed"] if "error" in js else []) +
                                    ([] if setup["ok"] else ["setup_probe_failed"]))
    return record_head(tb, run, plan, rules, env, dur) | {
        "rule_hits": hits,
        "sysctls": sysctls,
        "qdiscs": qdiscs,
        "ok": "error" not in js,
        "error": js.get("error"),
        "wall_s": round(t1 - t0, 3),
        "setup_probe": setup,
        "result": result,
        "series": series,
        "receiver_series": rseries,
        "iperf_end": {"sum_sent": sent, "sum_received": recv},
        "tcp_counters": {"sender": tcs, "receiver": tcr},
        "impair_stats": {"before": i0, "after": i1},
        "proxy_stats": {"before": ps0, "after": ps1},
        "modules": modules,
        "transit": cross,
        "capture": capture,
        "cpu": {"idle_share": idle},
        "fidelity": {"cpu_idle_min": cpu_min, "htb_overlimits": throttled,
                     "window_s": round(tq1 - tq0, 3), "flags": flags, "ok": not flags},
    }


def judge_captures(caps, capst, server_port, ports, keep, resdir):
    """Each capture judged alone (pcapflow), then kept (KEEP_PCAPS) or
    removed.  -> {name: {"dev", "tcpdump", "totals", "flows"}}."""
    out = {}
    for name, (dev, f) in caps.items():
        ana = pcapflow.analyze_captures({name: f}, server_port, ports)[name]
        out[name] = {"dev": dev, "tcpdump": capst.get(name, {}), "totals": ana["totals"],
                     "flows": ana["flows"]}
        if keep:
            os.makedirs(os.path.join(resdir, "pcaps"), exist_ok=True)
            shutil.move(f, os.path.join(resdir, "pcaps", os.path.basename(f)))
        else:
            os.unlink(f)
    return out


def fidelity(prof, cpu0, cpu1, capst, failed):
    """-> (each CPU's idle share, the lowest, flags): the run's own
    failures, then a saturated guest CPU and packets tcpdump dropped."""
    idle = testbed.cpu_idle(cpu0, cpu1)
    cpu_min = min(v for k, v in idle.items() if k != "cpu" and v is not None)
    flags = list(failed)
    if cpu_min < prof["fidelity"]["min_cpu_idle"]:
        flags.append("cpu_saturated")
    if any("dropped by kernel" in k and v for c in capst.values() for k, v in c.items()):
        flags.append("capture_drops")
    return idle, cpu_min, flags


def record_head(tb, run, plan, rules, env, dur):
    """The fields every run record starts with."""
    return {
        "schema": "ecnproxy-impair-run/1",
        "id": run["id"], "index": run["index"], "profile": plan["profile"]["name"],
        "seed": plan["seed"],
        "params": {k: run[k] for k in ("direction", "config", "point", "rep")}
        | {"duration_s": dur},
        "settings": run["settings"],
        "rules": rules,
        "env": env | {"bottleneck_dev": tb.bottleneck_dev(), "rate_low": tb.low,
                      "rate_high": tb.high},
    }


def set_timeouts(tb, t):
    """The modules' idle timeouts for a survival run (t s; 0: leave them).
    -> {where: the value it had}."""
    old = {}
    if not t:
        return old
    if os.path.isdir("/sys/module/ecn_proxy"):
        got = tb.proxy("sysctl", get=list(PROXY_TIMEOUTS))
        old.update({k: got[k] for k in PROXY_TIMEOUTS})
        tb.proxy("sysctl", set={k: str(t) for k in PROXY_TIMEOUTS})
    if os.path.isdir("/sys/module/impair"):
        with open(IMPAIR_TIMEOUT) as f:
            old[IMPAIR_TIMEOUT] = f.read().strip()
        with open(IMPAIR_TIMEOUT, "w") as f:
            f.write(str(t))
    return old


def restore_timeouts(tb, old):
    for k, v in old.items():
        if k == IMPAIR_TIMEOUT:
            if os.path.isdir("/sys/module/impair"):
                with open(k, "w") as f:
                    f.write(v)
        elif os.path.isdir("/sys/module/ecn_proxy") and v is not None:
            tb.proxy("sysctl", set={k: v})


def module_stats(tb):
    """Both modules' counters ({} for one not loaded)."""
    out = {"proxy": proxy_stats(tb) or {}, "impair": {}}
    if os.path.isdir("/sys/module/impair"):
        out["impair"] = testbed.parse_kv(tb.proxy("read", paths=[ISTATS])[ISTATS])
    return out


def stat_delta(a, b, mod, key):
    """Counter key of module mod between snapshots a and b (None if absent)."""
    x, y = a[mod].get(key), b[mod].get(key)
    return None if x is None or y is None else y - x


def wake_ecn(capture, st):
    """ECN after the silence, for a proxied connection (the proxy on, one
    end ECN): -> (segments of E's data that reached N ECT or CE, segments of
    N's new data that reached E's side ECT, N's new data segments there).
    N is the end without ECN; client_side is the proxy's eth0."""
    n_is_client = not st["client"].get("ecn", 0)
    n_side = capture["client_side" if n_is_client else "server_side"]
    e_side = capture["server_side" if n_is_client else "client_side"]
    to_n, from_n = ("s2c", "c2s") if n_is_client else ("c2s", "s2c")
    leak = sum(f[to_n]["ect"] + f[to_n]["ce"] for f in n_side["flows"].values())
    ect = sum(f[from_n]["ect"] for f in e_side["flows"].values())
    data = sum(f[from_n]["data"] for f in e_side["flows"].values())
    return leak, ect, data


def do_survival(tb, run, plan, env, keep, resdir, prep):
    """A connection-survival run (Allman 2003; impair_plan's docstring)."""
    prof = plan["profile"]
    st = run["settings"]
    rules, modules, sysctls, qdiscs = prep
    nb, idle, wake_to = st["phase_bytes"], st["idle_s"], st["wake_timeout_s"]
    old = set_timeouts(tb, st["module_timeout_s"])
    os.makedirs(testbed.PCAPS, exist_ok=True)
    marks = os.path.join(testbed.PCAPS, run["id"] + ".marks")
    for f in (marks, os.path.join(testbed.PCAPS, "idle.go")):
        if os.path.exists(f):
            os.unlink(f)
    srv = subprocess.Popen(["ip", "netns", "exec", "server"] + PHASES + ["server",
                                                                    str(PHASE_PORT)],
                           env=python_env(), stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True)
    caps = {"client_side": ("eth0", os.path.join(testbed.PCAPS, run["id"] + ".client_side.pcap")),
            "server_side": ("eth1", os.path.join(testbed.PCAPS, run["id"] + ".server_side.pcap"))}
    cli = None
    try:
        testbed.sh("tb_wait_port server %d" % PHASE_PORT)
        steps = ["down:%d" % nb, "up:%d" % nb, "mark:idle", "down:%d" % nb, "up:%d" % nb]
        t0 = time.monotonic()
        cli = subprocess.Popen(["ip", "netns", "exec", "client"] + PHASES + ["client",
                                SERVER, str(PHASE_PORT)] + steps +
                               ["--marks", marks, "--timeout", str(wake_to)],
                               env=python_env(), stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True)
        # the exchange before the silence
        deadline = time.monotonic() + 4 * wake_to + 60
        while cli.poll() is None and time.monotonic() < deadline and not (
                os.path.exists(marks) and "idle" in open(marks).read()):
            time.sleep(0.1)
        before = module_stats(tb)
        quiet = os.path.exists(marks)
        if quiet:
            time.sleep(idle)
            if st["reload"]:
                for m in ("impair", "ecn_proxy"):
                    if os.path.isdir("/sys/module/" + m):
                        subprocess.run(["rmmod", m], check=True)
                set_modules(tb, st)
                write_rules(tb, rules)
                set_timeouts(tb, st["module_timeout_s"])
        mid = module_stats(tb)
        tb.proxy("capture_start", caps=[{"name": n, "dev": dev, "file": f,
                                         "filter": "tcp port %d" % PHASE_PORT}
                                        for n, (dev, f) in caps.items()])
        t_wake = time.monotonic()
        cpu0 = testbed.cpu_times()
        open(os.path.join(os.path.dirname(marks), "idle.go"), "w").close()
        try:
            out, _ = cli.communicate(timeout=4 * wake_to + 60)
        except subprocess.TimeoutExpired:
            cli.kill()
            out, _ = cli.communicate()
        t1 = time.monotonic()
        cpu1 = testbed.cpu_times()
        after = module_stats(tb)
        hits = tb.proxy("read", paths=[RULES])[RULES] \
            if os.path.isdir("/sys/module/impair") else None
        time.sleep(0.2)
        capst = tb.proxy("capture_stop", names=list(caps))
    finally:
        for p in (cli, srv):
            if p is not None and p.poll() is None:
                p.kill()
                p.communicate()
        restore_timeouts(tb, old)
    try:
        res = json.loads(out.strip().splitlines()[-1])
    except (ValueError, IndexError):
        res = {"ok": False, "steps": [], "error": "phases.py gave no JSON: %s" % out[-500:]}
    capture = judge_captures(caps, capst, PHASE_PORT, None, keep, resdir)
    stp = res.get("steps", [])
    pre = stp[:2]
    post = stp[3:]
    pre_ok = len(pre) == 2 and all(x.get("sha256_ok") for x in pre)
    post_ok = len(post) == 2 and all(x.get("sha256_ok") for x in post)
    wake_error = next((x.get("error") for x in post if x.get("error")), None)
    if not post_ok and not wake_error:
        wake_error = "data corrupted" if post else "no step after the silence"
    proxied = bool(st["proxy"]) and "ecn_proxy" in modules and \
        st["client"].get("ecn", 0) != st["server"].get("ecn", 0)
    leak = ect = data = None
    if proxied:
        leak, ect, data = wake_ecn(capture, st)
    degraded = proxied and post_ok and (leak > 0 or (data and not ect))
    outcome = "broken" if not post_ok else "degraded" if degraded else "survived"
    result = {
        "survival": outcome,
        "survived": int(outcome == "survived"), "broken": int(outcome == "broken"),
        "degraded": int(outcome == "degraded"),
        "wake_error": wake_error,
        "wake_s": round(sum(x.get("seconds", 0) for x in post), 3) if post else None,
        "idle_s": idle, "reload": st["reload"],
        "ecn_to_n_segs": leak, "n_data_ect_segs": ect, "n_data_segs": data,
        "picked_up": stat_delta(mid, after, "proxy", "flows_picked_up"),
        "proxy_expired_proxied": None if st["reload"] else
        stat_delta(before, mid, "proxy", "flows_expired_proxied"),
        "impair_expired": None if st["reload"] else
        stat_delta(before, mid, "impair", "flows_expired"),
    }
    idle_share, cpu_min, flags = fidelity(
        prof, cpu0, cpu1, capst,
        [] if pre_ok and quiet else ["exchange_before_silence_failed"])
    return record_head(tb, run, plan, rules, env, None) | {
        "rule_hits": hits,
        "sysctls": sysctls,
        "qdiscs": qdiscs,
        "ok": pre_ok and quiet,
        "error": res.get("error"),
        "wall_s": round(t1 - t0, 3),
        "wake_wall_s": round(t1 - t_wake, 3),
        "phases": res,
        "result": result,
        "module_stats": {"before": before, "after_silence": mid, "after": after},
        "timeouts_restored": old,
        "modules": modules,
        "capture": capture,
        "cpu": {"idle_share": idle_share},
        "fidelity": {"cpu_idle_min": cpu_min, "flags": flags, "ok": not flags},
    }
