# SPDX-License-Identifier: GPL-2.0
"""guest.testbed.Testbed.set_delay: a run without "delay_ms" (every profile
but those with "delays", e.g. fairness-rtt20, whose TB_DELAY_MS=20 the
topology applies) must leave the server link's netem alone."""
import os

from ecnproxy.guest import testbed as mg


def test_set_delay(monkeypatch):
    calls = []
    monkeypatch.setattr(mg, "sh", lambda script, **kw: calls.append(script))
    monkeypatch.setenv("TB_DELAY_MS", "20")
    tb = mg.Testbed({"profile": {}})
    tb.delay = int(os.environ["TB_DELAY_MS"])    # as up() sets it
    # a fairness-rtt20 run: no delay_ms, the topology's 20 ms stays
    assert tb.set_delay(None) is False and calls == [] and tb.delay == 20
    assert tb.set_delay(20) is False and calls == []
    # a parity block: 0 removes it, 20 puts it back
    assert tb.set_delay(0) is True and "qdisc del dev eth0 root" in calls[-1]
    assert tb.delay == 0
    assert tb.set_delay(20) is True and "netem delay 20ms" in calls[-1]
