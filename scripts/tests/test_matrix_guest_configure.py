# SPDX-License-Identifier: GPL-2.0
"""guest.testbed.Testbed.red_reset and client_quickack, which every matrix
run calls while it configures: the same effect as topology.sh's
tb_red_reset and the quick-ACK routes, with no shell once the first run
has made the commands."""
import subprocess

import pytest

from ecnproxy.guest import testbed as mg

REAL_RUN = subprocess.run


def fake_run(calls, tc_rc=0):
    """subprocess.run: bash runs for real (topology.sh's functions that
    only print), tc is recorded and returns TC_RC."""
    def run(argv, **kw):
        calls.append((argv[0], argv, kw.get("input")))
        if argv[0] == "tc":
            return subprocess.CompletedProcess(argv, tc_rc, "Error: no such device\n", None)
        return REAL_RUN(argv, **kw)
    return run


def new_testbed():
    tb = mg.Testbed({"profile": {}})
    tb.quickack = tb.qa_routes = None    # as up() sets them
    tb.red_cmds = {}
    return tb


@pytest.mark.parametrize("direction,eth1,eth2", [("download", "10mbit", "100mbit"),
                                                  ("upload", "100mbit", "10mbit")])
def test_red_reset(monkeypatch, direction, eth1, eth2):
    calls = []
    monkeypatch.setattr(mg.subprocess, "run", fake_run(calls))
    # topology.sh's defaults, whatever the caller's environment sets
    monkeypatch.setattr(mg, "TB_ENV", {k: v for k, v in mg.TB_ENV.items()
                                       if not k.startswith("TB_")})
    monkeypatch.delenv("TB_RATE_LOW", raising=False)
    monkeypatch.delenv("TB_RATE_HIGH", raising=False)
    tb = new_testbed()
    tb.red_reset(direction)
    tb.red_reset(direction)
    assert [c[0] for c in calls] == ["bash", "tc", "tc"]
    assert calls[1][1] == ["tc", "-n", "router", "-b", "-"]
    # topology.sh's RED leaf, both devices, the direction's rates
    assert calls[1][2] == (
        "qdisc change dev eth1 parent 1:1 handle 10: red limit 40000 min 2000 max 8000 "
        "avpkt 1000 burst 4 probability 0.3 bandwidth %s ecn\n"
        "qdisc change dev eth2 parent 1:1 handle 10: red limit 40000 min 2000 max 8000 "
        "avpkt 1000 burst 4 probability 0.3 bandwidth %s ecn\n" % (eth1, eth2))
    assert calls[2][2] == calls[1][2]


def test_red_reset_fails(monkeypatch):
    monkeypatch.setattr(mg.subprocess, "run", fake_run([], tc_rc=1))
    with pytest.raises(RuntimeError, match=r"tb_red_reset \(upload\): exit 1: Error: no such"):
        new_testbed().red_reset("upload")


def test_client_quickack(monkeypatch):
    calls = []
    monkeypatch.setattr(mg, "sh", lambda script, **kw: calls.append(kw["QA"]) or
                        "default via x%s\n" % kw["QA"])
    tb = new_testbed()
    assert tb.client_quickack(False) == "default via x\n"
    assert tb.client_quickack(False) == "default via x\n" and calls == [""]
    assert tb.client_quickack(True) == "default via x quickack 1\n"
    assert tb.client_quickack(True) == "default via x quickack 1\n"
    assert calls == ["", " quickack 1"]
    assert tb.client_quickack(False) == "default via x\n" and len(calls) == 3
