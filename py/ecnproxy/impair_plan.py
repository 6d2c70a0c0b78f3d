# SPDX-License-Identifier: GPL-2.0
"""Impairment experiments: profile checking, scaling and planning (pure,
used by scripts/matrix on the host (host/matrix.py), guest/impair.py in
the guest and analysis/experiments.py; tested in
scripts/tests/test_experiments.py).

An experiment is a profile scripts/profiles/exp-NAME.json of kind
"impair" (docs/testbed.md "Impairment experiments"):

  name, kind ("impair"), study (the paper), description, note
  tb            topology settings (TB_RATE_LOW, ...), as for the matrix
  directions    ["upload", "download"]
  duration_s    each run's iperf3 -t
  reps          repetitions of every cell
  defaults      settings of every run (SETTINGS below)
  configs       {name: {"doc": text, settings that differ, optional
                 "sweep": the sweep of this configuration instead of the
                 profile's ({} for none)}}
  sweep         {param: [values]}: every configuration runs at every
                combination (params: delay_ms, loss_pct, reorder_pct)
  scales        {"quick": {overrides}, "full": {overrides}}: EXP_SCALE
                picks one (default quick); its keys replace the profile's
  claims        what the paper said and how to check it
                (analysis/experiments.py)
  fidelity      {"min_cpu_idle": share}
  seed, overhead_s (per run, for the ETA), vm_timeout_s

SETTINGS: client and server ({"ecn", "sack", "ts", "rmem"}: tcp_ecn,
tcp_sack, tcp_timestamps, and rmem, the largest receive buffer, tcp_rmem's
third value: Linux announces the window scale ilog2(max(rmem,
net.core.rmem_max)) - 15 and opens its window to about half the buffer;
without rmem, Linux's default 6291456, scale 7), rules (impairment rule
lines), red_ecn (0/1), delay_ms, loss_pct, reorder_pct, reorder_delay_ms,
jitter_ms (netem delay of J ms with J ms of uniform jitter on the same link as reorder_pct: packets
overtake each other whenever their delays differ by more than their
spacing), modules (which of impair and
ecn_proxy are loaded: both by default), proxy (1: the ECN proxy on in the
proxy node, default 0) and its feedback (none, drop, dupack: dupack),
transactions (set-up probes before the flow, 1),
transit (1: each packet's time across the proxy node from the two
captures, analysis/transit.py; 0).

A profile with "driver": "mptcp" (exp-mbtest-mptcp; guest/mptcp.py,
analysis/mptcp.py) runs, instead of iperf3, one byte-exact transfer per run
(vmtest/xfer.py) over the topology's two paths (its tb sets TB_MPTCP=1),
and takes these settings too: mptcp (1: Multipath TCP sockets at both
ends, 0: plain TCP), transfer_bytes (the bytes the data sender sends),
rules2 (impairment rules on the second path's node, mbox; rules stay on
the first path's, the proxy node), nat (the paths whose middle node
masquerades IPv4: [1], [2] or [1, 2]) and mptcp_checksum (0/1:
net.mptcp.checksum_enabled at both ends).  It has no survival runs,
reordering, jitter, set-up probe or transit.

Connection survival (Allman 2003), instead of the bulk flow when idle_s >
0: one connection (vmtest/phases.py) moves phase_bytes (300000)
each way, falls silent for idle_s seconds, during which the modules are
unloaded and loaded again if reload (0/1), then moves phase_bytes each way
again, each step given up after wake_timeout_s (30) without progress.  The
modules' idle timeouts are module_timeout_s for the run (0: their
defaults; the proxy's timeout_established and timeout_handshake in the
proxy namespace, impair's flow_timeout parameter).  The outcome: survived,
broken (a step after the silence failed) or degraded (survived, but a
proxied connection lost its proxy: ECN reached the non-ECN end, or its
data toward the ECN end were no longer ECT).
"""
import copy
import itertools
import random

SWEEP_PARAMS = ("delay_ms", "loss_pct", "reorder_pct", "jitter_ms", "idle_s")
SETTING_KEYS = ("client", "server", "rules", "red_ecn", "reorder_delay_ms", "modules", "proxy",
                "feedback", "transactions", "transit", "reload", "module_timeout_s",
                "phase_bytes", "wake_timeout_s") + SWEEP_PARAMS
# the settings only the mptcp driver takes, and what it does not do
MPTCP_KEYS = ("mptcp", "transfer_bytes", "rules2", "nat", "mptcp_checksum")
MPTCP_UNSUPPORTED = ("idle_s", "reorder_pct", "jitter_ms", "transit", "reload")
DRIVERS = ("iperf3", "mptcp")
MPTCP_BASE = {"mptcp": 1, "transfer_bytes": 4000000, "rules2": [], "nat": [],
              "mptcp_checksum": 0}
FEEDBACKS = ("none", "drop", "dupack")
MODULES = ("impair", "ecn_proxy")
HOST_KEYS = ("ecn", "sack", "ts", "rmem")
RMEM_DEFAULT = 6291456  # tcp_rmem[2] of Linux 6.1
RMEM_MIN = 131072  # tcp_rmem[1]; below net.core.rmem_max (212992) that decides the scale
REQUIRED = ("name", "kind", "study", "directions", "duration_s", "reps", "defaults",
            "configs", "claims", "fidelity")
SCALES = ("quick", "full")
BASE = {"client": {"ecn": 0, "sack": 1, "ts": 1}, "server": {"ecn": 0, "sack": 1, "ts": 1},
        "rules": [], "red_ecn": 1, "delay_ms": 0, "loss_pct": 0, "reorder_pct": 0, "jitter_ms": 0,
        "reorder_delay_ms": 5, "modules": ["impair", "ecn_proxy"], "proxy": 0, "feedback": "dupack",
        "transactions": 1, "transit": 0, "idle_s": 0, "reload": 0, "module_timeout_s": 0,
        "phase_bytes": 300000, "wake_timeout_s": 30}


def _check_settings(where, st):
    errs = []
    for k, v in st.items():
        if k in MPTCP_KEYS:
            errs += _check_mptcp_setting(where, k, v)
        elif k not in SETTING_KEYS:
            errs.append("%s: unknown setting %r" % (where, k))
        elif k in ("client", "server"):
            if not isinstance(v, dict) or any(h not in HOST_KEYS for h in v):
                errs.append("%s: %s takes only %s" % (where, k, ", ".join(HOST_KEYS)))
            elif "rmem" in v and (not isinstance(v["rmem"], int) or
                                  not RMEM_MIN <= v["rmem"] <= 1 << 30):
                errs.append("%s: %s rmem must be an integer %d..%d" % (
                    where, k, RMEM_MIN, 1 << 30))
        elif k == "rules":
            if not isinstance(v, list) or not all(isinstance(x, str) and x.strip()
                                                 and "\n" not in x for x in v):
                errs.append("%s: rules must be a list of one-line rules" % where)
        elif k == "modules":
            if not isinstance(v, list) or any(m not in MODULES for m in v):
                errs.append("%s: modules: a list of %s" % (where, ", ".join(MODULES)))
        elif k == "feedback":
            if v not in FEEDBACKS:
                errs.append("%s: feedback must be one of %s" % (where, ", ".join(FEEDBACKS)))
        elif k in ("proxy", "transit", "red_ecn", "reload") and v not in (0, 1):
            errs.append("%s: %s must be 0 or 1" % (where, k))
        elif k == "transactions" and (not isinstance(v, int) or not 1 <= v <= 1000):
            errs.append("%s: transactions must be an integer 1..1000" % where)
        elif k in ("phase_bytes", "wake_timeout_s", "module_timeout_s") and (
                not isinstance(v, int) or v < (0 if k == "module_timeout_s" else 1)):
            errs.append("%s: %s must be an integer >= %d" % (
                where, k, 0 if k == "module_timeout_s" else 1))
        elif not isinstance(v, (int, float)) or v < 0:
            errs.append("%s: %s must be a number >= 0" % (where, k))
    return errs


def _check_mptcp_setting(where, k, v):
    if k == "rules2":
        if not isinstance(v, list) or not all(isinstance(x, str) and x.strip()
                                             and "\n" not in x for x in v):
            return ["%s: rules2 must be a list of one-line rules" % where]
    elif k == "nat":
        if not isinstance(v, list) or len(set(v)) != len(v) or any(x not in (1, 2) for x in v):
            return ["%s: nat: a list of paths, 1 and/or 2" % where]
    elif k in ("mptcp", "mptcp_checksum"):
        if v not in (0, 1):
            return ["%s: %s must be 0 or 1" % (where, k)]
    elif k == "transfer_bytes":
        if not isinstance(v, int) or not 1 <= v <= 1 << 32:
            return ["%s: transfer_bytes must be an integer 1..2^32" % where]
    return []


def _check_driver(prof):
    """The driver's own rules: mptcp needs TB_MPTCP=1 and has no survival
    runs, reordering, jitter or transit; the iperf3 driver takes none of
    its settings."""
    drv = prof.get("driver", "iperf3")
    if drv not in DRIVERS:
        return ["driver must be one of %s" % ", ".join(DRIVERS)]
    errs = []
    layers = [("defaults", prof["defaults"])] + [
        ("config %s" % n, c) for n, c in prof["configs"].items()]
    layers += [("sweep", prof.get("sweep", {}))] + [
        ("config %s sweep" % n, c.get("sweep", {})) for n, c in prof["configs"].items()]
    for where, st in layers:
        for k, v in st.items():
            if drv == "iperf3" and k in MPTCP_KEYS:
                errs.append("%s: %s needs \"driver\": \"mptcp\"" % (where, k))
            if drv == "mptcp" and k in MPTCP_UNSUPPORTED and v not in (0, [0]):
                errs.append("%s: the mptcp driver does not do %s" % (where, k))
    if drv == "mptcp" and str(prof.get("tb", {}).get("TB_MPTCP")) != "1":
        errs.append("the mptcp driver needs tb TB_MPTCP=1 (the second path)")
    return errs


def _check_sweep(where, sw):
    errs = []
    if not isinstance(sw, dict):
        return ["%s: sweep must be an object" % where]
    for k, vs in sw.items():
        if k not in SWEEP_PARAMS:
            errs.append("%s: cannot sweep %r (only %s)" % (where, k, ", ".join(SWEEP_PARAMS)))
        elif not isinstance(vs, list) or not vs or \
                not all(isinstance(v, (int, float)) and v >= 0 for v in vs):
            errs.append("%s: sweep %s needs a list of numbers >= 0" % (where, k))
        elif len(set(vs)) != len(vs):
            errs.append("%s: sweep %s repeats a value" % (where, k))
    return errs


def check(prof):
    """-> list of problems of a profile of kind impair (empty: fine)."""
    errs = ["missing %r" % k for k in REQUIRED if k not in prof]
    if errs:
        return errs
    if prof["kind"] != "impair":
        errs.append("kind is %r, not 'impair'" % prof["kind"])
    if not prof["directions"] or any(d not in ("upload", "download")
                                     for d in prof["directions"]):
        errs.append("directions: upload and/or download")
    errs += _check_settings("defaults", prof["defaults"])
    if isinstance(prof["configs"], dict) and isinstance(prof["defaults"], dict):
        errs += _check_driver(prof)
    errs += _check_sweep("sweep", prof.get("sweep", {}))
    if not prof["configs"]:
        errs.append("no configs")
    for name, c in prof["configs"].items():
        st = {k: v for k, v in c.items() if k not in ("doc", "sweep")}
        errs += _check_settings("config %s" % name, st)
        if "sweep" in c:
            errs += _check_sweep("config %s" % name, c["sweep"])
        if not c.get("doc"):
            errs.append("config %s: no doc" % name)
    if not errs:
        for c in prof["configs"]:
            st = config_settings(prof, c)
            if (st["rules"] or st["loss_pct"]) and "impair" not in st["modules"]:
                errs.append("config %s: rules or loss without the impair module" % c)
            for pt in points(prof, c):
                if dict(st, **pt)["reorder_pct"] and dict(st, **pt)["jitter_ms"]:
                    errs.append("config %s: reorder_pct and jitter_ms are both netem on "
                                "the same link: one at a time" % c)
                    break
            if st["proxy"] and "ecn_proxy" not in st["modules"]:
                errs.append("config %s: proxy on without the ecn_proxy module" % c)
            for pt in points(prof, c):
                if dict(st, **pt)["reload"] and not dict(st, **pt)["idle_s"]:
                    errs.append("config %s: reload needs idle_s > 0 (the modules are "
                                "reloaded during the silence)" % c)
                    break
    for s, o in prof.get("scales", {}).items():
        if s not in SCALES:
            errs.append("unknown scale %r" % s)
        elif "sweep" in o:
            errs += _check_sweep("scale %s" % s, o["sweep"])
    if not isinstance(prof["reps"], int) or prof["reps"] < 1:
        errs.append("reps must be an integer >= 1")
    for i, cl in enumerate(prof["claims"]):
        for k in ("id", "paper", "source", "check"):
            if k not in cl:
                errs.append("claim %d: missing %r" % (i, k))
    return errs


def scaled(prof, scale):
    """The profile at a scale: the scale's keys replace the profile's; the
    name of a full-scale profile gets "-full" (its own results directory)."""
    if scale not in SCALES:
        raise ValueError("EXP_SCALE must be one of %s, not %r" % (", ".join(SCALES), scale))
    p = copy.deepcopy(prof)
    over = p.pop("scales", {}).get(scale, {})
    p.update(copy.deepcopy(over))
    p["scale"] = scale
    if scale != "quick":
        p["name"] = "%s-%s" % (prof["name"], scale)
    return p


def base_name(prof):
    """The profile's file name (scripts/profiles/NAME.json) of a scaled
    profile: its name without the "-SCALE" that scaled() adds."""
    name, scale = prof["name"], prof.get("scale", "quick")
    if scale != "quick" and name.endswith("-" + scale):
        name = name[:-len("-" + scale)]
    return name


def command(prof):
    """The command that runs a scaled profile again: scripts/experiments
    takes an experiment's name without "exp-"; another impair profile
    (impair-smoke) runs through make matrix."""
    name = base_name(prof)
    if name.startswith("exp-"):
        return "make experiments EXPERIMENTS=%s EXP_SCALE=%s" % (name[len("exp-"):],
                                                                prof["scale"])
    return "make matrix PROFILE=%s EXP_SCALE=%s" % (name, prof["scale"])


def config_settings(prof, cfg):
    """Defaults, then the configuration's settings (client/server merged)."""
    st = copy.deepcopy(BASE)
    if prof.get("driver") == "mptcp":
        st.update(copy.deepcopy(MPTCP_BASE))
    for layer in (prof["defaults"], prof["configs"][cfg]):
        for k, v in layer.items():
            if k in ("doc", "sweep"):
                continue
            if k in ("client", "server"):
                st[k] = dict(st[k], **v)
            else:
                st[k] = copy.deepcopy(v)
    return st


def points(prof, cfg):
    """The sweep points of a configuration: [{param: value}, ...]."""
    sw = prof["configs"][cfg].get("sweep", prof.get("sweep", {}))
    keys = [k for k in SWEEP_PARAMS if k in sw]
    return [dict(zip(keys, vals)) for vals in itertools.product(*(sw[k] for k in keys))]


def fmt_num(v):
    return ("%g" % v).replace(".", "p")


def point_tag(pt):
    abbr = {"delay_ms": "d%sms", "loss_pct": "l%spct", "reorder_pct": "o%spct",
            "jitter_ms": "j%sms", "idle_s": "i%ss"}
    return "_".join(abbr[k] % fmt_num(pt[k]) for k in SWEEP_PARAMS if k in pt)


def run_settings(prof, cfg, pt):
    st = config_settings(prof, cfg)
    st.update(pt)
    return st


def make_plan(prof, seed):
    """Every (direction, configuration, sweep point) once per repetition,
    shuffled within the repetition (seeded)."""
    rng = random.Random(seed)
    runs = []
    for rep in range(1, prof["reps"] + 1):
        cells = [(d, c, pt) for d in prof["directions"] for c in prof["configs"]
                 for pt in points(prof, c)]
        rng.shuffle(cells)
        for d, c, pt in cells:
            tag = point_tag(pt)
            runs.append({"id": "%s_%s%s_r%02d" % (d, c, "_" + tag if tag else "", rep),
                         "index": len(runs), "direction": d, "cross": "off", "config": c,
                         "point": pt, "rep": rep, "settings": run_settings(prof, c, pt)})
    return {"profile": prof, "seed": seed, "feedback": None, "runs": runs}


def rules_text(st, direction):
    """What a run writes to /proc/net/impair/rules: flush, its rules, and
    its loss as a drop rule on the data sender's segments after the flow's
    first 20 (the handshake and the first window are never dropped)."""
    lines = ["flush"] + list(st["rules"])
    if st["loss_pct"] > 0:
        lines.append("dir %s after 20 drop %.6f" % (
            "initiator" if direction == "upload" else "responder", st["loss_pct"] / 100.0))
    return "\n".join(lines) + "\n"


def rule_lines(text):
    """The number of rules in a rules text (written or read back)."""
    n = 0
    for line in text.splitlines():
        line = line.split("#", 1)[0].strip()
        if line and line != "flush":
            n += 1
    return n
