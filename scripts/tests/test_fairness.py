# SPDX-License-Identifier: GPL-2.0
"""The fairness analysis (analysis/fairness.py): CE round trips,
one run's row from a synthetic record, the reductions per CE-marked round
trip (CE marks on new data, one window per run) against the definition
before 2026-12-02, the goal table's verdicts on shares drawn from known
distributions; and the guest's CE marks on new data (guest/fairness.py
flow_view())."""
import json
import random

import pandas as pd
import pytest

from ecnproxy.analysis import fairness
from ecnproxy.guest import fairness as guest_fairness


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


# CE marks 26 ms apart from 11 s on: 10 round trips in windows of 28 ms or
# 30 ms (every other mark opens one), 20 in windows of 24 ms (each does)
MARKS = [round(11 + 0.026 * i, 4) for i in range(20)]
# the proxied sender's 10 retransmissions (its reductions: the proxy's
# simulated losses), and their copies after the bottleneck: the one at
# 12.0 s is CE-marked, on data the receiver already has
EPISODES = [11.5 + 0.5 * i for i in range(10)]
COPIES = [EPISODES[0] + 0.0123, 12.0] + [t + 0.0123 for t in EPISODES[2:]]


def metric_record(pair, rep, srtt_a_ms, new_field, probe):
    """One upload run: A sees the CE marks MARKS after the bottleneck and
    answers them with 10 reductions (proxy-vs-ecn: 10 loss-recovery
    episodes, whose copies COPIES pass the bottleneck, one of them
    CE-marked; ecn-vs-ecn: 10 CWRs); A's median sRTT srtt_a_ms, B's
    30 ms; NEW_FIELD: the record has ce_new_times (as from 2026-12-02);
    PROBE: it has the RTT probe's p50, 30 ms."""
    def series(rtt_ms):
        return [(round(0.2 * i, 1), 1000, 14480, rtt_ms * 1000, 0) for i in range(1, 101)]

    def cap(cwr=(), ep=(), ce=(), ce_new=()):
        c = {"first": 100.0, "cwr_times": [100.0 + t for t in cwr],
             "episode_times": [100.0 + t for t in ep],
             "ce_times": sorted(100.0 + t for t in ce)}
        if new_field:
            c["ce_new_times"] = sorted(100.0 + t for t in ce_new)
        return c
    if pair == "proxy-vs-ecn":
        a_snd = cap(ep=EPISODES)
        a_aft = cap(ep=COPIES, ce=MARKS + [12.0], ce_new=MARKS)
    else:
        a_snd = cap(cwr=EPISODES)
        a_aft = cap(ce=MARKS, ce_new=MARKS)
    rec = {"id": "%s_dupack_%d" % (pair, rep), "ok": True,
           "params": {"direction": "upload", "pair": pair, "feedback": "dupack", "rep": rep,
                      "steady_from_s": 10},
           "fidelity": {"flags": [], "cpu_idle_min": 0.3},
           "flows": {"A": {"series": series(srtt_a_ms), "sender_capture": a_snd,
                           "after_capture": a_aft},
                     "B": {"series": series(30), "sender_capture": cap(cwr=EPISODES),
                           "after_capture": cap(ce=MARKS, ce_new=MARKS)}},
           "tcp_counters": {}, "proxy_stats": {}}
    if probe:
        rec["probes"] = {"rtt": {"p50_ms": 30.0, "p95_ms": 40.0}}
    return rec


@pytest.mark.parametrize("new_field", [True, False], ids=["ce_new_times", "old-record"])
@pytest.mark.parametrize("probe", [True, False], ids=["probe-window", "B-srtt-window"])
def test_red_per_ce_rtt_common_window(new_field, probe):
    """The proxied sender (A's sRTT 24 ms, one CE mark on a copy of data
    the receiver has) and the control (A's sRTT 28 ms) see the same CE
    marks on new data and answer each of their round trips once: the
    ratio is 1 by the definition since 2026-12-02 (one window per run, the
    probe's RTT or without a probe B's sRTT, 30 ms both; the mark on the
    copy not counted, found from ce_new_times or, in an old record, from
    the episode's start), and not by the one before (each flow's own sRTT,
    every mark)."""
    recs = [metric_record("proxy-vs-ecn", r, 24, new_field, probe) for r in (1, 2, 3)]
    recs += [metric_record("ecn-vs-ecn", r, 28, new_field, probe) for r in (1, 2, 3)]
    df = pd.DataFrame([fairness.run_row(r) for r in recs])
    prox = df[df.pair == "proxy-vs-ecn"].iloc[0]
    ctl = df[df.pair == "ecn-vs-ecn"].iloc[0]
    assert prox.ce_window_ms == ctl.ce_window_ms == 30.0
    assert prox.ce_window_from == ("probe RTT p50" if probe else "B's sRTT")
    assert prox.ce_new_from_A == ("new" if new_field else "episodes")
    assert (prox.ce_A, prox.ce_new_A, ctl.ce_A, ctl.ce_new_A) == (21, 20, 20, 20)
    assert prox.reductions_A == ctl.reductions_A == 10
    assert prox.ce_rtts_A == ctl.ce_rtts_A == 10
    # before: 20 windows of 24 ms plus the copy's mark against 10 of 28 ms
    assert (prox.ce_rtts_old_A, ctl.ce_rtts_old_A) == (21, 10)
    # the copy's mark alone, in the common window, would be an 11th
    assert fairness.ce_round_trips(MARKS + [12.0], 0.030) == 11
    g = fairness.goal_rows(df.assign(share_A=0.5))[0]
    assert g["resp"] == pytest.approx(1.0)
    assert g["resp_old"] == pytest.approx(10 / 21, abs=1e-3)


def test_ce_window_none():
    """Neither a probe nor B's sRTT: no common window, no value by the
    definition since 2026-12-02 (the old one still has the flow's own)."""
    rec = metric_record("proxy-vs-ecn", 1, 24, True, False)
    rec["flows"]["B"]["series"] = [(round(0.2 * i, 1), 1000, 14480, None, 0)
                                   for i in range(1, 101)]
    row = fairness.run_row(rec)
    assert row["ce_window_ms"] is None and "red_per_ce_rtt_A" not in row
    assert row["red_per_ce_rtt_old_A"] == pytest.approx(10 / 21, abs=1e-3)


def test_flow_view_ce_new(monkeypatch):
    """flow_view(): a CE mark on a duplicate of data the capture has seen
    in order is in ce_times only; one on new data, on a retransmission
    that fills a hole, on one that reaches beyond the in-order point, or
    on a duplicate beyond it (Linux queues that out of order and looks at
    its mark), is in ce_new_times too."""
    def seg(t, seq, ecn=3, plen=100):
        # (time, ecn, src, dst, sport, dport, seq, ack, flags, win, plen)
        return (t, ecn, "c", "s", 40000, 5201, seq, 1, 0x10, 100, plen)
    pkts = [(0.0, 0, "c", "s", 40000, 5201, 999, 0, 0x02, 100, 0),   # SYN: data from 1000
            seg(1.0, 1000),            # [0, 100) new, CE
            seg(1.1, 1100, ecn=2),     # [100, 200) new
            seg(1.2, 1000),            # duplicate of [0, 100), CE: not new
            seg(1.3, 1300, ecn=2),     # [300, 400) new, beyond the hole [200, 300)
            seg(1.4, 1300),            # duplicate beyond the hole, CE: counted
            seg(1.5, 1200),            # fills the hole, CE: new
            seg(1.6, 1350, plen=100),  # [350, 450) reaches beyond 400, CE: new
            seg(1.7, 1100)]            # duplicate, CE: not new
    monkeypatch.setattr(guest_fairness.pcapread, "read_packets", lambda path: iter(pkts))
    v = guest_fairness.flow_view("x.pcap", 5201)
    assert v["ce_times"] == [1.0, 1.2, 1.4, 1.5, 1.6, 1.7]
    assert v["ce_new_times"] == [1.0, 1.4, 1.5, 1.6]
    assert v["data"] == 8


def test_seen():
    seen = guest_fairness.seen
    assert seen(0, [], 0, 10) == (10, [])
    assert seen(10, [], 20, 30) == (10, [(20, 30)])
    assert seen(10, [(20, 30)], 40, 50) == (10, [(20, 30), (40, 50)])
    assert seen(10, [(20, 30), (40, 50)], 25, 45) == (10, [(20, 50)])
    assert seen(10, [(20, 30), (40, 50)], 30, 40) == (10, [(20, 50)])
    assert seen(10, [(20, 50)], 5, 20) == (50, [])
    assert seen(50, [], 0, 40) == (50, [])


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


def test_goal_leaves_out_runs_of_another_pair():
    """A run flagged roles_wrong (its proxied flow never got ECN: a non-ECN
    sender against an ECN one) is not a proxy-vs-ecn run: left out of the
    goal and named; without it the shares are the same as the control's."""
    df = frame([0.49, 0.51, 0.50, 0.52, 0.15], [0.50, 0.49, 0.51, 0.50])
    df["id"] = ["r%02d" % i for i in range(len(df))]
    df["flags"] = [None] * 4 + ["roles_wrong"] + [None] * 4
    g = fairness.goal_rows(df)[0]
    assert g["n"] == 4 and g["share"] == 0.505 and g["verdict"] == "not distinguishable"
    assert "1 run flagged `roles_wrong` (`r04`)" in fairness.wrong_roles_note(df)
    kept = fairness.goal_rows(df.assign(flags=None))[0]
    assert kept["n"] == 5 and kept["share"] == 0.50
    assert fairness.wrong_roles_note(df.assign(flags=None)) == \
        "No run is flagged `roles_wrong`."


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



def test_fairness_metric_command(tmp_path, capsys):
    """scripts/ecnproxy fairness-metric: the ratio under each choice of
    CE marks and window, from the records of test_red_per_ce_rtt_common_window."""
    from ecnproxy.analysis import fairness_metric
    (tmp_path / "runs").mkdir()
    for pair, srtt in (("proxy-vs-ecn", 24), ("ecn-vs-ecn", 28)):
        for r in (1, 2, 3):
            rec = metric_record(pair, r, srtt, True, True)
            (tmp_path / "runs" / (rec["id"] + ".json")).write_text(json.dumps(rec))
    assert fairness_metric.main([str(tmp_path)]) == 0
    lines = {tuple(ln.split()[:3]): ln.split() for ln in capsys.readouterr().out.splitlines()}
    assert lines[("dupack", "new", "probe")][5] == "1.000"
    assert lines[("dupack", "new", "B")][5] == "1.000"
    assert lines[("dupack", "all", "own")][5] == "%.3f" % (10 / 21)
    assert fairness_metric.main([str(tmp_path), "download"]) == 1


def test_attempts_rows():
    """Discarded attempts are tallied per cell, with how many of them had a
    SYN or SYN-ACK retransmission at some host."""
    def rec(rid, attempts, flags=()):
        return {"id": rid, "params": {"direction": "upload", "pair": "proxy-vs-ecn",
                                      "feedback": "dupack"}, "attempts": attempts,
                "fidelity": {"flags": list(flags)}}
    syn = {"problems": ["A: ECT on 0 of 10 data segments"],
           "tcp_counters": {"client": {"TcpExt.TCPSynRetrans": 1}, "udp1": {}}}
    nosyn = {"problems": ["B: no data seen"], "tcp_counters": {"client": {}}}
    recs = [rec("r01", []), rec("r02", [syn]), rec("r03", [syn, nosyn])]
    rows = fairness.attempts_rows(recs)
    assert len(rows) == 1
    r = rows[0]
    assert (r["direction"], r["pair"], r["feedback"]) == ("upload", "proxy-vs-ecn", "dupack")
    assert (r["runs"], r["attempts"], r["syn"], r["kept_wrong"]) == (2, 3, 2, 0)
    assert "B: no data seen" in r["problems"]
    text = "\n".join(fairness.attempts_section(recs))
    assert "| upload | proxy-vs-ecn | dupack | 2 | 3 | 0 | 2 |" in text
    # wrong at all three: the third is kept (and listed), not discarded
    recs.append(rec("r04", [syn, syn, nosyn], flags=["roles_wrong"]))
    r = fairness.attempts_rows(recs)[0]
    assert (r["runs"], r["attempts"], r["syn"], r["kept_wrong"]) == (3, 5, 4, 1)
    assert "None" in "\n".join(fairness.attempts_section([rec("r01", [])]))


def test_cwnd_dist_by_segments():
    """cwnd-dist: per pair, mode and flow, the share of steady-state
    samples at each cwnd in segments (the segment size from the gcd)."""
    from ecnproxy.analysis import cwnd_dist
    rec = {"params": {"pair": "proxy-vs-ecn", "feedback": "dupack-rwnd"},
           "flows": {"A": {"series": [[5.0, 0, 1448 * 9, 0, 0]] +
                           [[10.0 + i, 0, 1448 * (3 if i % 4 else 2), 0, 0] for i in range(8)]},
                     "B": {"series": [[10.0, 0, 2 * 1400, 0, 0], [10.2, 0, None, 0, 0],
                                      [10.4, 0, 9 * 1400, 0, 0]]}}}
    d = cwnd_dist.dist([rec], 10)
    n, sh = d[("proxy-vs-ecn", "dupack-rwnd", "A")]
    assert n == 8 and sh == {2: 0.25, 3: 0.75}      # the 5 s sample left out
    n, sh = d[("proxy-vs-ecn", "dupack-rwnd", "B")]
    assert n == 2 and sh == {2: 0.5, cwnd_dist.TOP_BIN: 0.5}
    with pytest.raises(SystemExit) as e:
        cwnd_dist.main(["/nonexistent"])
    assert e.value.code == 2
