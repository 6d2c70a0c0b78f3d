# SPDX-License-Identifier: GPL-2.0
"""The per-run record schema, and the plan the host driver builds."""
import copy
import os
import subprocess

import pytest

from ecnproxy.analysis import pcapflow, schema
from ecnproxy.host import matrix as matrix_driver

HERE = os.path.dirname(os.path.abspath(__file__))


def flow():
    d = {k: 0 for k in pcapflow.Dir.COUNTERS}
    d["ect_share"] = None
    return {"c2s": dict(d), "s2c": dict(d, data=10, ect=10, ect_share=1.0),
            "data_dir": "s2c", "ecn_negotiated": True, "rtt": 0.01, "stalls": 0,
            "stall_time": 0.0, "stall_threshold": 0.2}


def record():
    fl = {"40000": flow()}
    cap = {"flows": fl, "totals": pcapflow.totals(fl)}
    return {
        "schema": schema.SCHEMA, "id": "download_cross_p1_srvecn+proxy_r01", "index": 0,
        "profile": "smoke", "seed": 1,
        "params": {"direction": "download", "cross": "on", "load": "1", "flows": 1,
                   "flow_bytes": 1000, "series": 0, "total_bytes": 1000,
                   "config": "srvecn+proxy", "rep": 1, "client_ecn": 0, "server_ecn": 1,
                   "proxy": True, "feedback": None, "cross_rate": "6M"},
        "env": {"kernel": "6.1.0", "accel": "tcg", "guest_cpus": 2,
                "wall_start": "2024-01-01T00:00:00+00:00", "bottleneck_dev": "eth1",
                "rate_low": "10mbit"},
        "sysctls": {"client": {}, "server": {}, "proxy": {}},
        "versions": {"kernel": "6.1.0", "tcpdump": ["tcpdump version 4.99"],
                     "iproute2": "tc utility"},
        "completion_s": 1.5, "ok": True,
        "transfer": {"conns": [{"start": 1.0, "end": 2.5, "bytes": 1000, "ok": True}],
                     "completion_s": 1.5, "tool": "py/ecnproxy/guest/agent.py"},
        "qdisc": {"before": [], "after": []},
        "proxy_stats": {"before": {}, "after": {}},
        "tcp_counters": {"client": {}, "server": {}},
        "cpu": {"before": {}, "after": {}, "idle_share": {}},
        "capture": {"client_side": copy.deepcopy(cap), "server_side": copy.deepcopy(cap)},
        "fidelity": {"bottleneck_utilisation": 0.9, "cpu_idle_min": 0.5, "flags": [],
                     "ok": True},
    }


def test_valid_record():
    assert schema.validate(record()) == []


@pytest.mark.parametrize("path", ["params.config", "transfer.conns", "env.accel",
                                  "capture.server_side.totals", "fidelity.flags",
                                  "qdisc.before", "proxy_stats.after", "versions"])
def test_missing_field(path):
    r = record()
    *head, last = path.split(".")
    cur = r
    for p in head:
        cur = cur[p]
    del cur[last]
    assert any(path in e for e in schema.validate(r))


def test_wrong_types_and_consistency():
    r = record()
    r["completion_s"] = "1.5"
    assert any("completion_s" in e for e in schema.validate(r))
    r = record()
    r["params"]["client_ecn"] = 1   # srvecn+proxy has a non-ECN client
    assert any("does not match" in e for e in schema.validate(r))
    r = record()
    r["params"]["flows"] = 2
    assert any("load" in e for e in schema.validate(r))
    r = record()
    r["schema"] = "other/0"
    assert schema.validate(r)
    r = record()
    del r["capture"]["client_side"]["flows"]["40000"]["s2c"]["ce"]
    assert any("without ce" in e for e in schema.validate(r))


@pytest.mark.parametrize("name", ["quick", "thesis", "smoke", "parity"])
def test_profiles_and_plan(name):
    drv = matrix_driver
    prof = drv.load_profile(name)
    p1 = drv.make_plan(prof, 7, "")
    p2 = drv.make_plan(prof, 7, "")
    assert p1 == p2                       # deterministic: resume relies on it
    assert schema.check_plan(p1) == []
    reps = prof["reps"] if isinstance(prof["reps"], dict) else {
        c: prof["reps"] for c in prof["cross"]}
    # per direction and cross: each load, and the series where the sizes have one
    def cells(cross):
        return len(prof["configs"]) * sum(
            len(prof["loads"]) + bool(prof["sizes"][d][cross].get("series"))
            for d in prof["directions"]) * len(prof.get("delays", [0]))
    assert len(p1["runs"]) == sum(cells(c) * reps[c] for c in prof["cross"])
    assert p1["runs"] != drv.make_plan(prof, 8, "")["runs"]  # the seed matters
    # shuffled across configurations: consecutive runs change configuration
    cfgs = [r["config"] for r in p1["runs"]]
    assert sum(a != b for a, b in zip(cfgs, cfgs[1:])) > len(cfgs) / 2


def test_ackclock_profile():
    drv = matrix_driver
    plan = drv.make_plan(drv.load_profile("ackclock"), 2026, "dupack")
    assert schema.check_plan(plan) == []
    runs = plan["runs"]
    assert len(runs) == 24
    for c in ("srvecn+proxy", "srvecn+proxy+quickack", "bothecn"):
        assert sum(r["config"] == c for r in runs) == 8
    assert {(r["direction"], r["cross"], r["load"]) for r in runs} == {("download", "on", "3")}
    assert schema.QUICKACK == {"srvecn+proxy+quickack"}
    assert schema.CONFIGS["srvecn+proxy+quickack"] == schema.CONFIGS["srvecn+proxy"]


def test_prompt_profiles():
    """parity-prompt: the two prompt configurations beside dupack and ECN;
    fairness-rtt0-prompt: the proxied pair with each MODE+prompt, and the
    control once, with the first mode and without "+prompt"."""
    drv = matrix_driver
    plan = drv.make_plan(drv.load_profile("parity-prompt"), 2026, "dupack")
    assert schema.check_plan(plan) == []
    assert {r["config"] for r in plan["runs"]} == {
        "srvecn+proxy", "srvecn+proxy+prompt", "srvecn+proxy+fast+prompt", "bothecn"}
    assert len(plan["runs"]) == 64
    fair = drv.make_plan(drv.load_profile("fairness-rtt0-prompt"), 2026, "")
    got = sorted({(r["pair"], r["feedback"]) for r in fair["runs"]})
    assert got == [("ecn-vs-ecn", "dupack"), ("proxy-vs-ecn", "dupack+prompt"),
                   ("proxy-vs-ecn", "dupack-fast+prompt")]
    assert len(fair["runs"]) == 12
    assert schema.split_feedback("dupack-fast+prompt") == ("dupack-fast", True)
    assert schema.split_feedback("dupack") == ("dupack", False)
    assert schema.split_feedback(None) == (None, False)


def test_matrix_refuses_arguments():
    # "--help" once started the default profile's guest
    path = os.path.join(os.path.dirname(HERE), "matrix")
    r = subprocess.run([path, "--help"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       text=True, timeout=60, env=dict(os.environ, PROFILE="no-such-profile"))
    assert r.returncode == 2 and "no arguments" in r.stderr
