# SPDX-License-Identifier: GPL-2.0
"""Guest side of `make matrix`: runs every pending run of a plan.

  python3 -m ecnproxy.guest.matrix RESULTS_DIR [--keep-pcaps]

Started by vm-testbed/matrix-guest.sh inside the QEMU guest (vm-run), with
RESULTS_DIR writable.  Reads RESULTS_DIR/plan.json (written by scripts/matrix
on the host), builds the six-node testbed once (testbed.py), loads the ECN
proxy, starts one agent per namespace (agent.py) and then, for every run of
the plan whose record RESULTS_DIR/runs/ID.json does not exist yet (resume),
of those RESULTS_DIR/session.json's "todo" names (a shard's, host/shard.py),
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
import shutil
import signal
import subprocess
import sys
import time

from ..analysis import pcapflow
from ..analysis.schema import (SCHEMA, CONFIGS, LOSS_SYSCTLS, PROMPT, PROMPT_SYSCTLS, QUICKACK,
                               run_feedback)
from . import testbed
from .testbed import (PCAPS, PORT, SYSCTLS_PROXY, SYSCTLS_TCP, TB_ENV, Probes, Testbed,
                      counter_delta, cpu_idle, cpu_times, log, parse_kv, parse_netstat,
                      qdisc_entry, rate_bps, tc_snapshot, versions)


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


FEEDBACK_SYSCTL = "net/ecn_proxy/feedback"
MODULE_DEFAULT = {}     # the proxy's sysctls as the module loaded them


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
    prompt = run["config"] in PROMPT
    tb.client("sysctl", set=dict(setset, **{"net/ipv4/tcp_ecn": str(cli_ecn)},
                                 **(PROMPT_SYSCTLS if prompt else LOSS_SYSCTLS)))
    tb.server("sysctl", set=dict(setset, **{"net/ipv4/tcp_ecn": str(srv_ecn)}))
    pset = {"net/ecn_proxy/enabled": "1" if proxy_on else "0"}
    # a run without a mode of its own or the plan's gets the module's
    # default, read before any run set one: a per-run mode (srvecn+proxy+rwnd)
    # must not carry over to the runs after it
    if "feedback" not in MODULE_DEFAULT:
        MODULE_DEFAULT["feedback"] = tb.proxy("sysctl", get=[FEEDBACK_SYSCTL])[FEEDBACK_SYSCTL]
    feedback = run_feedback(run["config"], plan.get("feedback")) or MODULE_DEFAULT["feedback"]
    if feedback:
        pset[FEEDBACK_SYSCTL] = feedback
    tb.proxy("sysctl", set=pset)
    # the client's default routes, quick-ACK or not (QUICKACK configurations)
    quickack = run["config"] in QUICKACK
    qa_routes = tb.client_quickack(quickack)
    # every run starts with an empty SYN fallback cache: a destination put
    # there by an earlier run (RFC 3168 6.1.1.1 heuristic) would otherwise
    # stay unproxied for fallback_timeout (600 s) across runs
    flushed = tb.proxy("write", files={"/proc/net/ecn_proxy/fallback": "flush"})
    # every run starts with RED's average at 0, as after an idle period:
    # RED under HTB never sees one and would carry the previous run's
    # frozen average into this run's SYNs (topology.sh, tb_red_reset)
    tb.red_reset(run["direction"])
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
                       flows=run["flows"], bytes=run["flow_bytes"], series=run["series"],
                       connect_barrier=bool(prof.get("connect_barrier")))
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
           "client_quickack": quickack, "client_prompt": prompt,
           "client_routes": qa_routes.strip().splitlines(),
           "feedback": feedback, "port": PORT,
           "delay_ms": tb.delay,
           "connect_barrier": bool(prof.get("connect_barrier")),
           "fallback_cache_flushed": flushed["/proc/net/ecn_proxy/fallback"]},
        "env": env | {"wall_start": wall, "bottleneck_dev": bdev,
                      "rate_low": tb.low, "rate_high": tb.high},
        "sysctls": sysctls,
        "versions": env["versions"],
        "completion_s": xf["completion_s"],
        "ok": xf["ok"],
        "transfer": dict(xf, tool="py/ecnproxy/guest/agent.py"),
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


def host_load(resdir):
    """The host's latest sample of its load, which the host writes to
    RESULTS_DIR/hostload.json every 5 s: {"host", "cpus", "sample":
    [epoch, load average over 1 min, QEMU processes], "other_cpu_s": the
    CPU seconds of the host's other processes} (None without one; older
    hosts wrote no other_cpu_s).  A starved host shows in it; a starved
    guest in fidelity.flags."""
    try:
        with open(os.path.join(resdir, "hostload.json")) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def fmt(s):
    s = int(s)
    return "%d:%02d:%02d" % (s // 3600, s // 60 % 60, s % 60) if s >= 3600 else \
        "%d:%02d" % (s // 60, s % 60)


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    resdir = os.path.abspath(sys.argv[1])
    keep = "--keep-pcaps" in sys.argv[2:]
    testbed.LOGFILE = open(os.path.join(resdir, "guest.log"), "a")
    with open(os.path.join(resdir, "plan.json")) as f:
        plan = json.load(f)
    prof = plan["profile"]
    runs = plan["runs"]
    rdir = os.path.join(resdir, "runs")
    os.makedirs(rdir, exist_ok=True)
    # session.json (written by the host for this session): the accelerator,
    # the runs this guest is to make ("todo": its shard, or its share with
    # JOBS > 1; absent: every pending run) and the origin to stamp on each
    # record (host/shard.py)
    try:
        with open(os.path.join(resdir, "session.json")) as f:
            session = json.load(f)
    except (OSError, ValueError):
        session = {}
    if session.get("todo") is not None:
        todo = set(session["todo"])
        runs = [r for r in runs if r["id"] in todo]
    done = {r["id"] for r in runs if os.path.exists(os.path.join(rdir, r["id"] + ".json"))}
    pending = [r for r in runs if r["id"] not in done]
    n = len(runs)
    log("matrix: profile %s, %d runs%s, %d done, %d to run" % (
        prof["name"], n, "" if n == len(plan["runs"]) else " of %d" % len(plan["runs"]),
        len(done), len(pending)))
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
            from . import fairness as exp
        elif prof.get("driver") == "mptcp":  # exp-mbtest-mptcp: its own runs
            from . import mptcp as exp
        else:
            from . import impair as exp
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
    accel = session.get("accel", "unknown")
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
            load0 = host_load(resdir)
            rec = run_one(tb, run, plan, env, keep, resdir)
            if session.get("origin"):
                rec["origin"] = session["origin"]
            rec["host_load"] = [x for x in (load0, host_load(resdir)) if x]
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
