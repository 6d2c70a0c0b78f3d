# SPDX-License-Identifier: GPL-2.0
"""guest/agent.py's transfers over the host's loopback: byte-exact
parallel transfers, and the connect barrier (every connection asks for
its data only after all have connected; a failed connection releases
the others at once instead of leaving them to the deadline)."""
import socket
import threading
import time

import pytest

from ecnproxy.guest import agent


@pytest.fixture(scope="module")
def port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        p = s.getsockname()[1]
    threading.Thread(target=agent.serve, args=(p,), daemon=True).start()
    time.sleep(0.2)
    return p


def slow_third_connect(monkeypatch, delay=0.5):
    """The third connection takes DELAY seconds longer to connect."""
    real = agent.TimedSocket.connect
    calls = []
    lock = threading.Lock()

    def connect(self, addr):
        with lock:
            calls.append(addr)
            k = len(calls)
        if k == 3:
            time.sleep(delay)
        return real(self, addr)
    monkeypatch.setattr(agent.TimedSocket, "connect", connect)


@pytest.mark.parametrize("barrier", [True, False])
@pytest.mark.parametrize("direction", ["up", "down"])
def test_barrier_holds_data_until_all_connected(port, monkeypatch, direction, barrier):
    slow_third_connect(monkeypatch)
    r = agent.xfer({"host": "127.0.0.1", "port": port, "dir": direction, "flows": 3,
                    "bytes": 200000, "series": 0, "deadline_s": 20,
                    "connect_barrier": barrier})
    assert r["ok"] and [c["bytes"] for c in r["conns"]] == [200000] * 3
    connected = [c["start"] + c["connect_s"] for c in r["conns"]]
    first_sent = min(c["sent"] for c in r["conns"])
    if barrier:
        # nobody asked for data before the slow one had connected, and
        # connect_s runs to the barrier's release, the same for all
        assert first_sent >= max(connected) - 0.01
        assert max(connected) - min(connected) < 0.1
        assert not any(c.get("barrier_broken") for c in r["conns"])
    else:
        assert first_sent < max(connected) - 0.3
        assert max(connected) - min(connected) > 0.3


def test_failed_connection_releases_the_others(port, monkeypatch):
    real = agent.TimedSocket.connect
    calls = []

    def connect(self, addr):
        calls.append(addr)
        if len(calls) == 1:
            raise OSError("refused (test)")
        return real(self, addr)
    monkeypatch.setattr(agent.TimedSocket, "connect", connect)
    t0 = time.monotonic()
    r = agent.xfer({"host": "127.0.0.1", "port": port, "dir": "up", "flows": 3,
                    "bytes": 10000, "series": 0, "deadline_s": 10,
                    "connect_barrier": True})
    assert time.monotonic() - t0 < 5  # not held until the 10 s deadline
    assert not r["ok"]
    good = [c for c in r["conns"] if "error" not in c]
    assert len(good) == 2 and all(c["bytes"] == 10000 for c in good)
    assert all(c.get("barrier_broken") for c in good)


def test_a_single_flow_has_no_barrier(port):
    r = agent.xfer({"host": "127.0.0.1", "port": port, "dir": "down", "flows": 1,
                    "bytes": 50000, "series": 0, "deadline_s": 20, "connect_barrier": True})
    assert r["ok"] and "barrier_broken" not in r["conns"][0]
