# SPDX-License-Identifier: GPL-2.0
"""The fairness analysis (analysis/fairness.py): CE round trips,
one run's row from a synthetic record, and the goal table's verdicts on
shares drawn from known distributions."""
import random

import pandas as pd
import pytest

from ecnproxy.analysis import fairness


def test_ce_round_trips():
    assert fairness.ce_round_trips([], 0.1) == 0
    # 0.00 opens [0, 0.1); 0.05 inside; 0.10 opens the next; 0.35 a third
    assert fairness.ce_round_trips([0.05, 0.0, 0.10, 0.19, 0.35], 0.1) == 3


def record(pair="proxy-vs-ecn", fb="dupack", rep=1, bytes_a=1000, bytes_b=1000):
    # 200 ms intervals from 0.2 to 20 s: (t, bytes, cwnd, rtt_us, retrans)
    def series(b):
        return [(round(0.2 * i, 1), b, 14480, 25000, 0) for i in range(1, 101)]

    def cap(cwr, ep, ce):
        return {"first": 100.0, "cwr_times": [100.0 + t for t in cwr],
                "episode_times": [100.0 + t for t in ep],
                "ce_times": [100.0 + t for t in ce]}
    return {"id": "%s_%s_%d" % (pair, fb, rep), "ok": True,
            "params": {"direction": "upload", "pair": pair, "feedback": fb, "rep": rep,
                       "steady_from_s": 10},
            "fidelity": {"flags": [], "cpu_idle_min": 0.3},
            "flows": {"A": {"series": series(bytes_a),
                            # 4 CWRs, 1 episode in the window [10, 20); one before
                            "sender_capture": cap([5, 11, 12, 13, 14], [15], []),
                            "after_capture": cap([], [], [11, 11.01, 12, 13, 14, 15])},
                      "B": {"series": series(bytes_b),
                            "sender_capture": cap([11], [], []),
                            "after_capture": cap([], [], [11])}},
            "tcp_counters": {"client": {"TcpExt.TCPSackRecovery": 2,
                                        "TcpExt.TCPTimeouts": 1},
                             "udp1": {}},
            "proxy_stats": {"before": {"congestion_events": 3},
                            "after": {"congestion_events": 10}},
            "probes": {"rtt": {"p50_ms": 30.0, "p95_ms": 40.0}}}


def test_run_row():
    row = fairness.run_row(record(bytes_a=3000, bytes_b=1000))
    assert row["share_A"] == pytest.approx(0.75)
    assert row["jain"] == pytest.approx(16 / 20)
    assert row["reductions_A"] == 5           # the CWR at 5 s is before the window
    assert row["ce_rtts_A"] == 5              # 11 and 11.01 are one round trip (25 ms)
    assert row["red_per_ce_rtt_A"] == pytest.approx(1.0)
    assert row["nstat_recoveries_A"] == 2 and row["nstat_rtos_A"] == 1
    assert row["proxy_congestion_events"] == 7
    assert row["rtt_p50_ms"] == 30.0


def frame(shares_proxy, shares_ctl, fb="dupack"):
    rows = [{"direction": "upload", "pair": "proxy-vs-ecn", "feedback": fb, "share_A": s,
             "red_per_ce_rtt_A": 1.0} for s in shares_proxy]
    rows += [{"direction": "upload", "pair": "ecn-vs-ecn", "feedback": "none", "share_A": s,
              "red_per_ce_rtt_A": 1.0} for s in shares_ctl]
    return pd.DataFrame(rows)


def draw(rng, mu, n):
    return [rng.gauss(mu, 0.02) for _ in range(n)]


def test_goal_verdicts():
    rng = random.Random(1520)
    less = fairness.goal_rows(frame(draw(rng, 0.60, 8), draw(rng, 0.50, 8)))[0]
    assert less["verdict"] == "**backs off less**"
    assert less["shift_lo"] > 0 and less["shift_cov"] >= 0.95
    more = fairness.goal_rows(frame(draw(rng, 0.40, 8), draw(rng, 0.50, 8)))[0]
    assert more["verdict"] == "backs off more"
    same = fairness.goal_rows(frame([0.49, 0.51, 0.50, 0.52], [0.50, 0.49, 0.51, 0.50]))[0]
    assert same["verdict"] == "not distinguishable"
    few = fairness.goal_rows(frame([0.6, 0.61], [0.5, 0.51]))[0]
    assert few["verdict"].endswith("?") and few["shift_cov"] < 0.9
    one = fairness.goal_rows(frame([0.6], [0.5]))[0]
    assert one["verdict"] == "no interval"
    assert fairness.goal_rows(frame([0.5], [])) == []


def test_goal_interval_coverage():
    """The share shift's interval covers the true shift at least as often
    as it claims (8 against 8 runs, normal shares, 400 replicates)."""
    rng = random.Random(7)
    hits, cov = 0, None
    for _ in range(400):
        r = fairness.goal_rows(frame(draw(rng, 0.53, 8), draw(rng, 0.50, 8)))[0]
        hits += r["shift_lo"] <= 0.03 <= r["shift_hi"]
        cov = r["shift_cov"]
    assert cov >= 0.95
    # binomial sd at 400 and p = 0.95 is 0.011: allow three of them
    assert hits / 400 >= cov - 0.033

