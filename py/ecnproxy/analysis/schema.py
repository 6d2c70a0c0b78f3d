# SPDX-License-Identifier: GPL-2.0
"""The per-run record of the matrix (RESULTS/runs/ID.json) and the plan.

validate(record) -> list of problems (empty: well formed).  Used by the
report (bad records are listed, not silently used), the smoke test and the
unit tests.  Optional keys, which older records do not have: "probes"
(RTT, RED backlog and UDP delivery measured during the transfer), and the
stall causes (stalls.py) of each capture's flows and totals,
"stall_causes" ({cause: {"count", "time"}}) and, per flow, "stall_list".
"""
from .stalls import CAUSES
SCHEMA = "ecnproxy-matrix-run/1"

# configuration -> (client tcp_ecn, server tcp_ecn, proxy enabled)
CONFIGS = {
    "noecn": (0, 0, False),
    "noecn+proxy": (0, 0, True),
    "srvecn": (0, 1, False),
    "srvecn+proxy": (0, 1, True),
    "bothecn": (1, 1, False),
    "bothecn+proxy": (1, 1, True),
    # srvecn+proxy with the client in quick-ACK mode (route option
    # "quickack 1": it ACKs every segment at once, as an ECN receiver does
    # while it sees CE marks): is the proxied download's ACK clock what
    # slows it? (docs/findings.md, "What the paper run shows")
    "srvecn+proxy+quickack": (0, 1, True),
}
# srvecn+proxy with the proxy's feedback mode set per run, whatever the
# plan's (FEEDBACK): the parity profile compares dupack and drop side by
# side in one run, parity-floor-ab dupack and dupack-rwnd, parity-fast-ab
# dupack and dupack-fast
CONFIGS["srvecn+proxy+drop"] = (0, 1, True)
CONFIGS["srvecn+proxy+rwnd"] = (0, 1, True)
CONFIGS["srvecn+proxy+fast"] = (0, 1, True)
# a proxied client with RACK off and a duplicate-ACK threshold of one
# (PROMPT_SYSCTLS): it enters recovery on the first duplicate ACK that
# SACKs data above a hole, whatever RACK's reordering window would say;
# with dupack and with dupack-fast.  A host setting the proxy cannot make
# (PROFILE=parity-prompt, issue 40's limit; with Linux's defaults N
# already retransmits within 0.1 ms of that ACK at the floor)
CONFIGS["srvecn+proxy+prompt"] = (0, 1, True)
CONFIGS["srvecn+proxy+fast+prompt"] = (0, 1, True)
CONFIG_ORDER = list(CONFIGS)
QUICKACK = {"srvecn+proxy+quickack"}
PROMPT = {"srvecn+proxy+prompt", "srvecn+proxy+fast+prompt"}
CONFIG_FEEDBACK = {"srvecn+proxy+drop": "drop", "srvecn+proxy+rwnd": "dupack-rwnd",
                   "srvecn+proxy+fast": "dupack-fast", "srvecn+proxy+prompt": "dupack",
                   "srvecn+proxy+fast+prompt": "dupack-fast"}
# the client's loss-detection sysctls: Linux's defaults
# (Documentation/networking/ip-sysctl.rst), and a client that enters
# recovery on the first duplicate ACK that SACKs data above a hole (no
# RACK, a duplicate-ACK threshold of 1 that reordering cannot raise).
# Written in this order: Linux refuses a tcp_reordering above the
# namespace's tcp_max_reordering (EINVAL), so the maximum goes up before
# tcp_reordering and down after it.
LOSS_SYSCTLS = {"net/ipv4/tcp_recovery": "1", "net/ipv4/tcp_max_reordering": "300",
                "net/ipv4/tcp_reordering": "3"}
PROMPT_SYSCTLS = {"net/ipv4/tcp_recovery": "0", "net/ipv4/tcp_reordering": "1",
                  "net/ipv4/tcp_max_reordering": "1"}

PROMPT_SUFFIX = "+prompt"


def split_feedback(feedback):
    """A fairness run's feedback, "MODE" or "MODE+prompt" (the proxied
    client with PROMPT_SYSCTLS) -> (MODE, prompt)."""
    if feedback and feedback.endswith(PROMPT_SUFFIX):
        return feedback[:-len(PROMPT_SUFFIX)], True
    return feedback, False


def load_order(loads):
    """The distinct loads in numeric order, the series last."""
    return sorted(set(loads), key=lambda x: (x == "series", int(x) if x.isdigit() else 0))


def run_feedback(config, plan_feedback):
    """The proxy's feedback mode of a run: its configuration's own, else
    the plan's (None: the module's default)."""
    return CONFIG_FEEDBACK.get(config, plan_feedback)
DIRECTIONS = ("download", "upload")
CROSS = ("off", "on")

NUM = (int, float)
# dotted path -> type(s); None means "present, any type"
REQUIRED = {
    "schema": str, "id": str, "index": int, "profile": str, "seed": int,
    "params.direction": str, "params.cross": str, "params.load": str,
    "params.flows": int, "params.flow_bytes": int, "params.series": int,
    "params.total_bytes": int, "params.config": str, "params.rep": int,
    "params.client_ecn": int, "params.server_ecn": int, "params.proxy": bool,
    "params.feedback": None, "params.cross_rate": None,
    "env.kernel": str, "env.accel": str, "env.guest_cpus": int,
    "env.wall_start": str, "env.bottleneck_dev": str, "env.rate_low": str,
    "sysctls.client": dict, "sysctls.server": dict, "sysctls.proxy": dict,
    "versions": dict, "versions.kernel": str, "versions.tcpdump": None,
    "versions.iproute2": str,
    "completion_s": NUM, "ok": bool,
    "transfer.conns": list, "transfer.completion_s": NUM, "transfer.tool": str,
    "qdisc.before": list, "qdisc.after": list,
    "proxy_stats.before": dict, "proxy_stats.after": dict,
    "tcp_counters.client": dict, "tcp_counters.server": dict,
    "cpu.before": dict, "cpu.after": dict, "cpu.idle_share": dict,
    "capture.client_side.flows": dict, "capture.client_side.totals": dict,
    "capture.server_side.flows": dict, "capture.server_side.totals": dict,
    "fidelity.bottleneck_utilisation": (int, float, type(None)),
    "fidelity.cpu_idle_min": NUM, "fidelity.flags": list, "fidelity.ok": bool,
}
FLOW_KEYS = ("c2s", "s2c", "data_dir", "ecn_negotiated", "rtt", "stalls",
             "stall_time", "stall_threshold")
DIR_KEYS = ("packets", "data", "new_bytes", "retrans", "fast_retrans", "dupacks",
            "ce", "ect", "ece", "cwr", "ect_share")
TOTAL_KEYS = ("data", "retrans", "fast_retrans", "dupacks", "ce", "ect", "ece",
              "cwr", "ect_share", "stalls", "stall_time", "flows", "ecn_negotiated")
CONN_KEYS = ("start", "end", "bytes", "ok")
# optional "probes" (records since the probes were added): each part None
# (not measured) or an object; these fields None or a number
PROBE_NUM = {"rtt": ("interval_s", "sent", "received", "p50_ms", "p95_ms"),
             "queue": ("interval_s", "p50_bytes", "p95_bytes"),
             "udp": ("tx_packets", "rx_packets", "tx_bytes", "rx_bytes", "window_s",
                     "rate_bps", "loss")}


def get(rec, path, *default):
    """rec's value at the dotted PATH; KeyError where a level is missing
    or not an object, or DEFAULT when one is given."""
    cur = rec
    for p in path.split("."):
        if not isinstance(cur, dict) or p not in cur:
            if default:
                return default[0]
            raise KeyError(path)
        cur = cur[p]
    return cur


def is_num(x):
    """A JSON number: int or float, not a bool."""
    return isinstance(x, NUM) and not isinstance(x, bool)


def validate(rec):
    errs = []
    if not isinstance(rec, dict):
        return ["record is not an object"]
    for path, typ in REQUIRED.items():
        try:
            v = get(rec, path)
        except KeyError:
            errs.append("missing %s" % path)
            continue
        if typ is None:
            continue
        if typ in (int, NUM) and isinstance(v, bool):
            errs.append("%s: bool where a number is expected" % path)
        elif not isinstance(v, typ):
            errs.append("%s: %s, expected %s" % (path, type(v).__name__, typ))
    if errs:
        return errs
    if rec["schema"] != SCHEMA:
        errs.append("schema %r, expected %r" % (rec["schema"], SCHEMA))
    p = rec["params"]
    if p["config"] not in CONFIGS:
        errs.append("unknown config %r" % p["config"])
    elif CONFIGS[p["config"]] != (p["client_ecn"], p["server_ecn"], p["proxy"]):
        errs.append("config %s does not match client/server ECN and proxy" % p["config"])
    if p["direction"] not in DIRECTIONS:
        errs.append("direction %r" % p["direction"])
    if p["cross"] not in CROSS:
        errs.append("cross %r" % p["cross"])
    if p["series"]:
        if p["load"] != "series":
            errs.append("series run with load %r" % p["load"])
    elif p["load"] != str(p["flows"]):
        errs.append("load %r but %d flows" % (p["load"], p["flows"]))
    if rec["ok"] and rec["completion_s"] <= 0:
        errs.append("completion_s %r" % rec["completion_s"])
    nconn = p["series"] or p["flows"]
    if len(rec["transfer"]["conns"]) != nconn:
        errs.append("%d connections, expected %d" % (len(rec["transfer"]["conns"]), nconn))
    for c in rec["transfer"]["conns"]:
        for k in CONN_KEYS:
            if k not in c:
                errs.append("connection without %s" % k)
    for side in ("client_side", "server_side"):
        cap = rec["capture"][side]
        for k in TOTAL_KEYS:
            if k not in cap["totals"]:
                errs.append("capture.%s.totals without %s" % (side, k))
        for port, fl in cap["flows"].items():
            for k in FLOW_KEYS:
                if k not in fl:
                    errs.append("capture.%s.flows.%s without %s" % (side, port, k))
            for d in ("c2s", "s2c"):
                for k in DIR_KEYS:
                    if k not in fl.get(d, {}):
                        errs.append("capture.%s.flows.%s.%s without %s" % (side, port, d, k))
            errs += validate_causes(fl, "capture.%s.flows.%s" % (side, port))
        errs += validate_causes(cap["totals"], "capture.%s.totals" % side)
    errs += validate_probes(rec.get("probes"))
    return errs


def validate_causes(obj, where):
    """Problems of obj's optional "stall_causes" and "stall_list"."""
    errs = []
    sc = obj.get("stall_causes")
    if sc is not None:
        if not isinstance(sc, dict):
            return ["%s.stall_causes: %s, expected an object" % (where, type(sc).__name__)]
        for c, v in sc.items():
            if c not in CAUSES:
                errs.append("%s.stall_causes: unknown cause %r" % (where, c))
            elif (not isinstance(v, dict) or not isinstance(v.get("count"), int)
                  or isinstance(v.get("count"), bool) or isinstance(v.get("time"), bool)
                  or not isinstance(v.get("time"), NUM)):
                errs.append("%s.stall_causes.%s: expected {count: int, time: number}" % (where, c))
    sl = obj.get("stall_list")
    if sl is not None and (not isinstance(sl, list) or not all(
            isinstance(x, dict) and x.get("cause") in CAUSES for x in sl)):
        errs.append("%s.stall_list: expected a list of stalls with known causes" % where)
    return errs


def validate_probes(pr):
    """Problems of a record's optional "probes" (None: none measured)."""
    if pr is None:
        return []
    if not isinstance(pr, dict):
        return ["probes: %s, expected an object or null" % type(pr).__name__]
    errs = []
    for part, keys in PROBE_NUM.items():
        v = pr.get(part)
        if v is None:
            continue
        if not isinstance(v, dict):
            errs.append("probes.%s: %s, expected an object or null" % (part, type(v).__name__))
            continue
        for k in keys:
            x = v.get(k)
            if x is not None and not is_num(x):
                errs.append("probes.%s.%s: %s, expected a number or null" % (
                    part, k, type(x).__name__))
        s = v.get("samples")
        if s is not None and (not isinstance(s, list) or not all(
                isinstance(x, list) and len(x) >= 2 for x in s)):
            errs.append("probes.%s.samples: expected a list of [t, value, ...]" % part)
    return errs


def check_plan(plan):
    errs = []
    for k in ("profile", "seed", "runs", "feedback"):
        if k not in plan:
            errs.append("plan without %s" % k)
    ids = [r.get("id") for r in plan.get("runs", [])]
    if len(ids) != len(set(ids)):
        errs.append("plan has duplicate run ids")
    return errs
