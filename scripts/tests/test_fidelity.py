# SPDX-License-Identifier: GPL-2.0
"""analysis/fidelity.py: a bottleneck that had a backlog almost
throughout and still carried less than 75 % of its rate is flagged
`bottleneck_underdelivered` (the guest held the shaper back); a link left
idle by the sender (an empty queue) is not; too few samples decide
nothing; the flag reaches the report's rows and `redo --flag`."""
import json

from ecnproxy.analysis import fidelity
from ecnproxy.host import redo


def rec(util, backlog, n=100, flags=()):
    """A record with N queue samples, the first BACKLOG share of them with
    a backlog, and the bottleneck's utilisation UTIL."""
    k = int(round(backlog * n))
    samples = [[i * 0.05, 3000 if i < k else 0, 2 if i < k else 0] for i in range(n)]
    return {"id": "r", "fidelity": {"flags": list(flags), "bottleneck_utilisation": util},
            "probes": {"queue": {"interval_s": 0.05, "samples": samples}}}


def test_backlogged_and_slow_is_flagged():
    # the run of results/parity-d0-20261203 the check was made for
    assert fidelity.flags(rec(0.556, 0.97)) == ["bottleneck_underdelivered"]
    assert fidelity.underdelivered(rec(0.74, 0.90))


def test_idle_link_or_full_rate_is_not():
    assert fidelity.flags(rec(0.49, 0.63)) == []      # RTOs: the queue ran empty
    assert fidelity.flags(rec(0.92, 0.99)) == []      # a busy link at its rate
    assert not fidelity.underdelivered(rec(0.75, 0.95))   # the bound itself passes
    assert not fidelity.underdelivered(rec(0.50, 0.89))


def test_too_few_samples_or_none_decide_nothing():
    assert fidelity.backlog_share(rec(0.5, 1.0, n=19)) is None
    assert fidelity.flags(rec(0.5, 1.0, n=19)) == []
    bare = {"fidelity": {"flags": ["cpu_saturated"], "bottleneck_utilisation": 0.3}}
    assert fidelity.flags(bare) == ["cpu_saturated"]
    assert fidelity.flags({"fidelity": {"flags": [], "bottleneck_utilisation": None},
                           "probes": rec(0.1, 1.0)["probes"]}) == []


def test_guest_flags_kept_and_not_repeated():
    r = rec(0.5, 1.0, flags=["cpu_saturated", "bottleneck_underdelivered"])
    assert fidelity.flags(r) == ["cpu_saturated", "bottleneck_underdelivered"]


def test_redo_by_the_derived_flag(tmp_path, capsys):
    (tmp_path / "runs").mkdir()
    for rid, r in (("slow", rec(0.556, 0.97)), ("fine", rec(0.9, 0.97))):
        r["id"] = rid
        (tmp_path / "runs" / (rid + ".json")).write_text(json.dumps(r))
    assert redo.main([str(tmp_path), "--flag", "bottleneck_underdelivered"]) == 0
    assert "slow: bottleneck_underdelivered" in capsys.readouterr().out
    assert sorted(p.name for p in (tmp_path / "runs").iterdir()) == ["fine.json"]
    assert (tmp_path / "redone" / "slow.json").exists()
