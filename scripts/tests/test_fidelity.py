# SPDX-License-Identifier: GPL-2.0
"""analysis/fidelity.py: a bottleneck that had a backlog almost
throughout the transfer and still carried less than 75 % of its rate is
flagged `bottleneck_underdelivered` (the guest held the shaper back); a
link left idle by the sender (an empty queue) is not; samples outside the
transfer do not count, a gap between samples counts for its length, too
few samples or malformed ones decide nothing; the flag reaches `redo
--flag` and `fidelity-scan`."""
import json

from ecnproxy.analysis import fidelity
from ecnproxy.host import redo


def rec(util, backlog, n=100, flags=(), start=10.0, extra=None):
    """A record whose transfer runs from START for N samples 50 ms apart,
    the first BACKLOG share of them with a backlog; EXTRA samples are
    added as they are."""
    k = int(round(backlog * n))
    samples = [[start + i * 0.05, 3000 if i < k else 0, 2 if i < k else 0] for i in range(n)]
    samples += extra or []
    return {"id": "r", "transfer": {"start": start, "end": start + (n - 1) * 0.05},
            "fidelity": {"flags": list(flags), "bottleneck_utilisation": util},
            "probes": {"queue": {"interval_s": 0.05, "samples": sorted(samples)}}}


def test_backlogged_and_slow_is_flagged():
    # the run of results/parity-d0-20261203 the check was made for
    assert fidelity.flags(rec(0.556, 0.99)) == ["bottleneck_underdelivered"]
    assert fidelity.underdelivered(rec(0.74, 0.95))


def test_idle_link_or_full_rate_is_not():
    assert fidelity.flags(rec(0.49, 0.63)) == []      # RTOs: the queue ran empty
    assert fidelity.flags(rec(0.92, 0.99)) == []      # a busy link at its rate
    assert not fidelity.underdelivered(rec(0.75, 0.95))   # the bound itself passes
    assert not fidelity.underdelivered(rec(0.50, 0.85))


def test_only_the_transfer_counts():
    # an empty queue before and after the transfer does not dilute it
    around = [[t, 0, 0] for t in (0.0, 1.0, 2.0, 30.0, 31.0)]
    r = rec(0.5, 1.0, extra=around)
    assert fidelity.backlog_share(r) == 1.0 and fidelity.underdelivered(r)
    # a backlog before the transfer does not make it
    r = rec(0.5, 0.0, extra=[[t, 9000, 6] for t in (0.0, 1.0, 2.0)])
    assert fidelity.backlog_share(r) == 0.0 and not fidelity.underdelivered(r)


def test_a_gap_counts_for_its_length():
    # 50 samples with a backlog over 2.45 s, then a 5 s gap after the
    # last of them (a stalled guest took no sample), then 50 empty ones
    r = rec(0.5, 0.5)
    q = r["probes"]["queue"]["samples"]
    for s in q[50:]:
        s[0] += 5.0
    r["transfer"]["end"] += 5.0
    assert abs(fidelity.backlog_share(r) - (2.5 + 5.0) / (4.95 + 5.0)) < 1e-9


def test_too_few_or_malformed_samples_decide_nothing():
    assert fidelity.backlog_share(rec(0.5, 1.0, n=fidelity.MIN_SAMPLES - 1)) is None
    assert fidelity.flags(rec(0.5, 1.0, n=fidelity.MIN_SAMPLES - 1)) == []
    r = rec(0.5, 1.0)
    r["probes"]["queue"]["samples"] = [[True, 5], "x", [1.0], None] * 20
    assert fidelity.backlog_share(r) is None
    bare = {"fidelity": {"flags": ["cpu_saturated"], "bottleneck_utilisation": 0.3}}
    assert fidelity.flags(bare) == ["cpu_saturated"]
    for broken in ({"fidelity": "x", "probes": [], "transfer": None},
                   {"fidelity": {"flags": "cpu_saturated", "bottleneck_utilisation": "0.5"},
                    "probes": rec(0.1, 1.0)["probes"], "transfer": rec(0.1, 1.0)["transfer"]}):
        assert fidelity.flags(broken) == []


def test_guest_flags_kept_and_not_repeated():
    r = rec(0.5, 1.0, flags=["cpu_saturated", "bottleneck_underdelivered"])
    assert fidelity.flags(r) == ["cpu_saturated", "bottleneck_underdelivered"]


def write(d, rid, r):
    r = dict(r, id=rid)
    (d / "runs").mkdir(exist_ok=True)
    (d / "runs" / (rid + ".json")).write_text(json.dumps(r))


def test_redo_and_scan_by_the_derived_flag(tmp_path, capsys):
    write(tmp_path, "slow", rec(0.556, 0.97))
    write(tmp_path, "fine", rec(0.9, 0.97))
    write(tmp_path, "idle", rec(0.4, 0.2))
    assert fidelity.main([str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "in their transfer: 3, in 1 directories" in out
    assert "at least 90 % of the transfer: 2;" in out
    assert "(utilisation below 0.75): 1." in out and "`slow`: utilisation 0.56" in out
    assert redo.main([str(tmp_path), "--flag", "bottleneck_underdelivered"]) == 0
    assert "slow: bottleneck_underdelivered" in capsys.readouterr().out
    assert sorted(p.name for p in (tmp_path / "runs").iterdir()) == ["fine.json", "idle.json"]
    assert (tmp_path / "redone" / "slow.json").exists()
