# SPDX-License-Identifier: GPL-2.0
"""The report end to end on a small synthetic results directory: probes
(RTT, RED backlog, UDP delivery), SYN retransmissions, ratios and their
printed coverage, headline.json and the index."""
import copy
import csv
import json
import os

import pytest

from ecnproxy.analysis import report, schema, stats
from test_schema import record

pytestmark = pytest.mark.filterwarnings("ignore:Mean of empty slice")

CONFIG = schema.CONFIGS


def probes(rtt_ms, backlog, udp_loss, t0=1.0, t1=2.5):
    n = int((t1 - t0) / 0.05)
    return {
        "rtt": {"target": "198.18.2.2", "interval_s": 0.05, "sent": 40, "received": 38,
                "p50_ms": rtt_ms, "p95_ms": 1.5 * rtt_ms,
                "samples": [[t0 + 0.05 * i, rtt_ms] for i in range(n)]},
        "queue": {"dev": "eth1", "interval_s": 0.05,
                  "samples": [[t0 - 0.2 + 0.05 * i, backlog * (i % 5), i % 5]
                              for i in range(n + 8)],
                  "p50_bytes": 2.0 * backlog, "p95_bytes": 4.0 * backlog},
        "udp": {"tx_packets": 1000, "rx_packets": round(1000 * (1 - udp_loss)),
                "tx_bytes": 1000000, "rx_bytes": round(1e6 * (1 - udp_loss)),
                "window_s": 2.0, "rate_bps": 4e6 * (1 - udp_loss), "loss": udp_loss},
    }


def make_rec(config, rep, completion, pr=None, syn=(0, 0), cross="on", load="1",
             direction="download", retrans=None, connect=None, wall_start=None):
    """A run record; connect: each connection's connect_s (absent: an
    older record without it), the first connection ending at the run's
    end and the others 0.1 s earlier (series: one after another)."""
    r = record()
    cli, srv, proxy = CONFIG[config]
    r["id"] = "%s_%s_p%s_%s_r%02d" % (direction, "cross" if cross == "on" else "nocross",
                                      load, config, rep)
    nflows = 1 if load == "series" else int(load)
    r["params"].update(config=config, rep=rep, client_ecn=cli, server_ecn=srv, proxy=proxy,
                       cross=cross, load=load, flows=nflows, direction=direction,
                       series=2 if load == "series" else 0)
    r["transfer"]["conns"] = [dict(r["transfer"]["conns"][0])
                              for _ in range(2 if load == "series" else nflows)]
    r["completion_s"] = r["transfer"]["completion_s"] = completion
    r["transfer"].update(start=1.0, end=1.0 + completion)
    conns = r["transfer"]["conns"]
    if load == "series":
        conns[0].update(start=1.0, end=1.0 + completion / 2)
        conns[1].update(start=1.0 + completion / 2, end=1.0 + completion)
    else:
        for i, c in enumerate(conns):
            c.update(start=1.0, end=1.0 + completion - (0.1 if i else 0.0))
    for c, x in zip(conns, connect or ()):
        c["connect_s"] = x
    if wall_start:
        r["env"]["wall_start"] = wall_start
    if syn[0]:
        r["tcp_counters"]["client"]["TcpExt.TCPSynRetrans"] = syn[0]
    if syn[1]:
        r["tcp_counters"]["server"]["TcpExt.TCPSynRetrans"] = syn[1]
    if retrans is not None:     # the data sender's (the server: downloads)
        r["tcp_counters"]["server"].update({"Tcp.RetransSegs": retrans,
                                            "TcpExt.TCPOrigDataSent": 1000})
    if pr is not None:
        r["probes"] = pr
    return r


def results_dir(tmp, recs):
    os.makedirs(os.path.join(tmp, "runs"))
    for i, r in enumerate(recs):
        r["index"] = i
        with open(os.path.join(tmp, "runs", r["id"] + ".json"), "w") as f:
            json.dump(r, f)
    size = {"flow_bytes": 1000, "series": None}
    prof = {"name": "synthetic", "note": "SYNTHETIC DATA", "reps": 2, "cross_rate": "6M",
            "configs": sorted({r["params"]["config"] for r in recs}),
            "directions": sorted({r["params"]["direction"] for r in recs}),
            "cross": sorted({r["params"]["cross"] for r in recs}), "loads": [1],
            "sizes": {d: {"off": size, "on": size} for d in ("download", "upload")},
            "fidelity": {"min_cpu_idle": 0.05}}
    plan = {"profile": prof, "seed": 1, "feedback": None,
            "runs": [dict(r["params"], id=r["id"], index=r["index"]) for r in recs]}
    with open(os.path.join(tmp, "plan.json"), "w") as f:
        json.dump(plan, f)
    return str(tmp)


def with_probes():
    return [
        make_rec("srvecn+proxy", 1, 1.50, probes(20.0, 3000, 0.02), syn=(1, 0), retrans=0),
        make_rec("srvecn+proxy", 2, 1.60, probes(22.0, 3200, 0.03), retrans=1),
        make_rec("bothecn", 1, 1.20, probes(21.0, 2900, 0.025)),
        make_rec("bothecn", 2, 1.30, probes(19.0, 3100, 0.015), syn=(0, 2)),
        make_rec("srvecn", 1, 2.00, probes(40.0, 9000, 0.05), retrans=50),
        make_rec("srvecn", 2, 2.20, dict(probes(44.0, 9500, 0.06), udp=None), retrans=60),
        make_rec("noecn", 1, 2.50),  # an older record: no probes
    ]


def read_csv(path):
    with open(path) as f:
        return list(csv.DictReader(f))


def test_probes_end_to_end(tmp_path):
    d = results_dir(tmp_path, with_probes())
    head = report.report(d)
    # every cell of the headline, with its verdict (host/analyze.py prints them)
    c = head["download cross-on srvecn+proxy/bothecn"]["cells"]["1"]
    v, lo, hi, cov = c["ratio"]
    assert lo <= v <= hi and cov == pytest.approx(2 / 3, abs=1e-4)
    assert c["verdict"] == "undecided"          # a 67 % interval judges nothing

    runs = {r["id"]: r for r in read_csv(os.path.join(d, "runs.csv"))}
    r = runs["download_cross_p1_srvecn+proxy_r01"]
    assert float(r["rtt_p50_ms"]) == 20.0 and float(r["rtt_p95_ms"]) == 30.0
    assert float(r["rtt_loss"]) == pytest.approx(1 - 38 / 40)
    assert float(r["queue_p50_bytes"]) == 6000 and float(r["queue_p95_bytes"]) == 12000
    assert float(r["udp_loss"]) == 0.02 and float(r["udp_rate_bps"]) == pytest.approx(3.92e6)
    assert (r["cli_syn_retrans"], r["srv_syn_retrans"]) == ("1", "0")
    assert runs["download_cross_p1_srvecn_r02"]["udp_loss"] == ""
    assert runs["download_cross_p1_noecn_r01"]["rtt_p50_ms"] == ""

    cells = {r["config"]: r for r in read_csv(os.path.join(d, "summary.csv"))}
    assert float(cells["srvecn+proxy"]["median_rtt_p50_ms"]) == 21.0
    assert float(cells["srvecn"]["median_udp_loss"]) == 0.05
    assert cells["srvecn"]["n_probes"] == "2" and cells["noecn"]["n_probes"] == "0"
    assert cells["noecn"]["median_rtt_p50_ms"] == ""
    assert cells["srvecn+proxy"]["syn_retrans_runs"] == "1"
    assert cells["bothecn"]["syn_retrans_runs"] == "1"
    assert float(cells["srvecn+proxy"]["p95_s"]) == 1.6     # n < 20: the slowest

    rat = read_csv(os.path.join(d, "ratios.csv"))
    rtt = [x for x in rat if x["metric"] == "rtt_p50_ms" and x["load"] == "all"]
    assert len(rtt) == 1 and rtt[0]["num"] == "srvecn+proxy" and rtt[0]["den"] == "bothecn"
    # ratios 20/21, 20/19, 22/21, 22/19: HL = median = (22/21 * 20/19)^(1/2)
    assert float(rtt[0]["ratio"]) == pytest.approx((22 / 21 * 20 / 19) ** 0.5, abs=1e-4)
    assert float(rtt[0]["coverage"]) == pytest.approx(2 / 3, abs=1e-4)

    md = open(os.path.join(d, "summary.md")).read()
    assert "## Queueing delay and loss" in md and "6 of 7 runs have probes" in md
    assert "| srvecn+proxy | 2 | 21.0 | 31.5 | 5.0 % | 6.2 | 12.4 | 3.90 | 2.5 % |" in md
    assert "srvecn+proxy / bothecn, all loads: RTT p50 1.05 [0.95, 1.16] (67 %) **outside**" in md
    assert "UDP loss, srvecn+proxy vs srvecn: medians 2.50 % vs 5.00 %" in md
    # per 1000: 0 and 1 against 50 and 60; differences -60 -59 -50 -49
    assert ("srvecn+proxy vs srvecn: medians 0.5 vs 55.0; difference -54.5 [-60.0, -49.0] "
            "(67 %) per 1000" in md)
    # two runs each: a 67 % interval, undecided by the one verdict rule
    assert "fewer than srvecn: undecided." in md
    assert float(runs["download_cross_p1_srvecn_r02"]["snd_retrans_pm"]) == 60.0
    # SYN retransmissions k/n: noecn, srvecn, srvecn+proxy, bothecn
    assert "| 1 | 0/1 | 0/2 | 1/2 | 1/2 |" in md
    assert "p95 1.60" in md
    with open(os.path.join(d, "delay.png"), "rb") as f:
        assert f.read(8) == b"\x89PNG\r\n\x1a\n"
    assert "`delay.png`" in md


def test_no_probes(tmp_path):
    recs = [r for r in with_probes() if r["params"]["config"] != "noecn"]
    for r in recs:
        del r["probes"]
    d = results_dir(tmp_path, recs)
    report.report(d)
    md = open(os.path.join(d, "summary.md")).read()
    assert "## Queueing delay and loss\n\nNo record in this directory has probes" in md
    assert not os.path.exists(os.path.join(d, "delay.png"))
    assert "RTT p50" not in md
    assert "neither pair of A/A configurations" in md


def test_ratios_print_their_coverage_and_aa_flags(tmp_path):
    recs = [make_rec("noecn", 1, 1.00), make_rec("noecn", 2, 1.10),
            make_rec("noecn+proxy", 1, 1.01), make_rec("noecn+proxy", 2, 1.12),
            make_rec("srvecn+proxy", 1, 1.0), make_rec("srvecn+proxy", 2, 1.0),
            make_rec("bothecn", 1, 1.0), make_rec("bothecn", 2, 1.0)]
    d = results_dir(tmp_path, recs)
    report.report(d)
    md = open(os.path.join(d, "summary.md")).read()
    # 2 runs each: the widest interval, at its true 67 %, and flagged (A/A)
    # every cell, judged: a 67 % interval decides nothing; no connect_s: n/a
    assert ("| 1 | 1.00 [1.00, 1.00] (67 %): undecided | n/a | 0.95 [0.91, 1.00] (67 %): "
            "undecided | n/a | n/a, n/a, n/a |" in md)
    assert "transfer only none (no handshake times)" in md
    assert "(n/a here: these records lack the handshake time)" in md
    assert "noecn+proxy / noecn" in md and "**outside**" in md
    assert "1.01 [0.92, 1.12] (67 %) **outside**" in md
    # end-to-end ECN against no ECN, the reference for srvecn+proxy / noecn
    assert "(`bothecn / noecn`: what ECN itself gains" in md
    assert "ECN): download 0.95 [0.91, 1.00] (67 %)." in md
    j = json.load(open(os.path.join(d, "headline.json")))
    assert j["headline"]["download cross-on srvecn+proxy/bothecn"][3] == pytest.approx(
        0.6667, abs=1e-4)
    aa = j["aa"]["download cross-on noecn+proxy/noecn"]
    assert aa["inside"] is False and aa["band"] == [0.97, 1.03]
    assert j["aa_cells_outside"] == [1, 1]


def test_aa_runs_the_proxy_acted_on(tmp_path):
    # a bothecn+proxy run whose handshake lost a SYN-ACK and was proxied
    acted = make_rec("bothecn+proxy", 1, 1.3, syn=(1, 0))
    acted["proxy_stats"] = {"before": {"flows_proxied_ecn_responder": 4},
                            "after": {"flows_proxied_ecn_responder": 5}}
    quiet = make_rec("bothecn+proxy", 2, 1.0)
    quiet["proxy_stats"] = {"before": {"flows_proxied_ecn_responder": 5},
                            "after": {"flows_proxied_ecn_responder": 5}}
    recs = [make_rec("bothecn", 1, 1.0), make_rec("bothecn", 2, 1.1), acted, quiet,
            make_rec("noecn", 1, 1.0), make_rec("noecn+proxy", 1, 1.0)]
    d = results_dir(tmp_path, recs)
    report.report(d)
    md = open(os.path.join(d, "summary.md")).read()
    assert ("`noecn+proxy`: 0 of 1 runs, 0 of them with a SYN or SYN-ACK retransmission; "
            "`bothecn+proxy`: 1 of 2 runs, 1 of them with a SYN or SYN-ACK "
            "retransmission." in md)


def test_formatting():
    assert report.fmt_ratio((1.1, 0.95, 1.3, 2 / 3)) == "1.10 [0.95, 1.30] (67 %)"
    assert report.fmt_ratio((1.1, 0.95, 1.3, 0.971)) == "1.10 [0.95, 1.30]"
    assert report.fmt_ratio((1.0, 0.99, 1.02, 0.95), (0.97, 1.03)) == "1.00 [0.99, 1.02]"
    assert report.fmt_ratio((1.0, 0.96, 1.02, 0.95), (0.97, 1.03)).endswith("**outside**")
    assert report.fmt_cov(0.9495) == " (94.9 %)"
    assert report.fmt_ratio(None) == "-"
    # an interval with a width never prints as one without
    assert report.fmt_ci(0.2577, 0.255, 0.2604) == "0.258 [0.255, 0.260]"


def test_write_index_old_and_new_headlines(tmp_path):
    for name, head in (("a-1", {"download cross-on srvecn+proxy/bothecn": [1.5, 1.0, 1.6]}),
                       ("b-2", {"download cross-on srvecn+proxy/bothecn": [1.3, 1.1, 1.5, 0.93]})):
        os.makedirs(tmp_path / name / "runs")
        j = {"profile": "quick", "runs": 4, "flagged": 0, "headline": head}
        if name == "b-2":
            j["aa"] = {"download cross-on noecn+proxy/noecn": {
                "ratio": [1.0, 0.9, 1.1, 0.95], "band": [0.97, 1.03], "inside": False}}
            j["aa_cells_outside"] = [3, 4]
        (tmp_path / name / "headline.json").write_text(json.dumps(j))
    # the report's own headline.json (issue 40): no pooled figure where the
    # cells disagree
    os.makedirs(tmp_path / "c-3" / "runs")
    (tmp_path / "c-3" / "headline.json").write_text(json.dumps({
        "profile": "paper", "runs": 4, "flagged": 0, "headline": {}, "cells": {
            "upload cross-on srvecn+proxy/bothecn": {"cross": "on", "cells": {"1": {}, "3": {}},
                                                     "pooled": {"ratio": None,
                                                                "cells_agree": False,
                                                                "q": 9.0, "df": 1, "p": 0.003,
                                                                "cell_min": 0.98,
                                                                "cell_max": 1.19}}}}))
    report.write_index(str(tmp_path))
    idx = (tmp_path / "README.md").read_text()
    assert "srvecn+proxy/bothecn 1.50 [1.00, 1.60] | - |" in idx
    assert "srvecn+proxy/bothecn 1.30 [1.10, 1.50] (93 %) | 1 of 1 (all loads), 3 of 4" in idx
    assert ("upload: srvecn+proxy/bothecn cells disagree: 0.98-1.19 (Q = 9.0, 1 df, "
            "p = 0.003) | - |") in idx


def test_probe_schema():
    r = record()
    assert schema.validate(r) == []
    r["probes"] = probes(20.0, 3000, 0.02)
    assert schema.validate(r) == []
    r["probes"] = {"rtt": None, "queue": None, "udp": None}
    assert schema.validate(r) == []
    r["probes"] = None
    assert schema.validate(r) == []
    bad = copy.deepcopy(probes(20.0, 3000, 0.02))
    bad["rtt"]["p95_ms"] = "30"
    bad["queue"]["samples"] = [1, 2]
    r["probes"] = bad
    errs = schema.validate(r)
    assert any("probes.rtt.p95_ms" in e for e in errs)
    assert any("probes.queue.samples" in e for e in errs)
    r["probes"] = []
    assert schema.validate(r)


def test_loads_per_cross_setting_and_aa_only(tmp_path):
    # a paper-like profile: cross traffic off has load 1 only, on has 1 and 3;
    # an A/A-only profile has no headline pair
    recs = []
    for cross, loads in (("off", ("1",)), ("on", ("1", "3"))):
        for load in loads:
            for k in (1, 2):
                recs.append(make_rec("noecn", k, 1.0 + 0.1 * k, cross=cross, load=load,
                                     direction="upload"))
                recs.append(make_rec("noecn+proxy", k, 1.2 + 0.1 * k, cross=cross, load=load,
                                     direction="upload"))
    d = results_dir(tmp_path, recs)
    assert report.report(d) == {}
    md = open(os.path.join(d, "summary.md")).read()
    assert "No cell has runs of `srvecn+proxy` with `bothecn` or `noecn`." in md
    assert "For reference" not in md                # no bothecn, no reference
    sec = md[md.index("## upload, cross traffic off"):md.index("## upload, cross traffic on")]
    assert "| 3 |" not in sec                       # no empty rows for loads it lacks
    assert "| all | - | - | 1.17 [1.08, 1.27] (67 %) **outside** | - |" in sec
    sec = md[md.index("## upload, cross traffic on"):]
    assert "| 3 | - | - | 1.17 [1.08, 1.27] (67 %) **outside** | - |" in sec
    j = json.load(open(os.path.join(d, "headline.json")))
    assert j["headline"] == {} and j["aa_cells_outside"] == [3, 3]
    assert set(j["aa"]) == {"upload cross-off noecn+proxy/noecn",
                            "upload cross-on noecn+proxy/noecn"}


def with_causes(rec, causes, side=None):
    """rec with a stall-cause breakdown {cause: (count, seconds)} on the
    capture on the sender's side (or `side`)."""
    side = side or ("server_side" if rec["params"]["direction"] == "download"
                    else "client_side")
    sc = {c: {"count": n, "time": t} for c, (n, t) in causes.items()}
    rec["capture"][side]["totals"]["stall_causes"] = sc
    for fl in rec["capture"][side]["flows"].values():
        fl["stall_causes"] = sc
    return rec


def test_stall_causes(tmp_path):
    recs = [with_causes(make_rec("srvecn+proxy", 1, 1.5, direction="upload"),
                        {"notect_rexmit_drop": (1, 15.0), "rto_tail": (2, 0.5)}),
            with_causes(make_rec("srvecn+proxy", 2, 1.6, direction="upload"),
                        {"notect_rexmit_drop": (1, 29.0)}),
            # the other side's breakdown is not the one reported
            with_causes(make_rec("bothecn", 1, 1.2, direction="upload"), {},
                        side="server_side"),
            with_causes(make_rec("bothecn", 2, 1.3, direction="upload"), {}),
            make_rec("noecn", 1, 2.0, direction="upload")]  # an older record
    assert all(schema.validate(r) == [] for r in recs)
    d = results_dir(tmp_path, recs)
    report.report(d)
    md = open(os.path.join(d, "summary.md")).read()
    sec = md[md.index("## Stall causes"):md.index("## Queueing delay")]
    assert "3 of 5 runs have the breakdown" in sec
    assert "| config | runs | `notect_rexmit_drop` | `rto_tail` |" in sec
    assert "| srvecn+proxy | 2 | 2 / 44.00 | 2 / 0.50 |" in sec
    assert "| bothecn | 1 | - | - |" in sec
    assert "| noecn |" not in sec
    assert "`rto_tail` timeout retransmission: tail" in sec
    cells = {r["config"]: r for r in read_csv(os.path.join(d, "summary.csv"))}
    assert float(cells["srvecn+proxy"]["sum_sc_notect_rexmit_drop_s"]) == 44.0
    assert cells["srvecn+proxy"]["n_stall_causes"] == "2"
    assert cells["noecn"]["n_stall_causes"] == "0"
    assert cells["noecn"]["sum_sc_rto_tail_n"] == ""
    runs = {r["id"]: r for r in read_csv(os.path.join(d, "runs.csv"))}
    assert runs["upload_cross_p1_noecn_r01"]["sc_rto_tail_n"] == ""
    assert float(runs["upload_cross_p1_srvecn+proxy_r01"]["sc_rto_tail_n"]) == 2
    bad = copy.deepcopy(recs[0])
    bad["capture"]["client_side"]["totals"]["stall_causes"]["no_such_cause"] = {
        "count": 1, "time": 1.0}
    bad["capture"]["client_side"]["flows"]["40000"]["stall_list"] = [{"cause": "x"}]
    errs = schema.validate(bad)
    assert any("unknown cause 'no_such_cause'" in e for e in errs)
    assert any("stall_list" in e for e in errs)


def test_no_stall_causes(tmp_path):
    d = results_dir(tmp_path, [make_rec("noecn", 1, 1.0), make_rec("srvecn", 1, 1.1)])
    report.report(d)
    md = open(os.path.join(d, "summary.md")).read()
    assert "## Stall causes\n\nNo record in this directory has the stall causes" in md


def test_ack_clock_line(tmp_path):
    recs = []
    for config, acks, tlps in (("srvecn+proxy", (480, 500), (40, 44)),
                               ("bothecn", (740, 760), (8, 9))):
        for rep in (1, 2):
            r = make_rec(config, rep, 1.0 + rep / 10, probes(20.0, 3000, 0.02), retrans=0)
            r["tcp_counters"]["client"]["Tcp.OutSegs"] = acks[rep - 1]
            r["tcp_counters"]["server"]["TcpExt.TCPLossProbes"] = tlps[rep - 1]
            recs.append(r)
    d = results_dir(tmp_path, recs)
    report.report(d)
    runs = {r["id"]: r for r in read_csv(os.path.join(d, "runs.csv"))}
    # downloads: the client receives, the server sends 1000 original segments
    assert float(runs["download_cross_p1_bothecn_r02"]["rcv_segs_per_seg"]) == 0.76
    assert runs["download_cross_p1_srvecn+proxy_r01"]["snd_tlps"] == "40"
    md = open(os.path.join(d, "summary.md")).read()
    assert ("per original data segment 0.49 vs 0.75 (Tcp.OutSegs / "
            "TcpExt.TCPOrigDataSent)" in md)
    assert "the sender's tail loss probes 42 vs 8 (TcpExt.TCPLossProbes)" in md


def test_quickack_ratios(tmp_path):
    recs = [make_rec("srvecn+proxy", 1, 2.0), make_rec("srvecn+proxy", 2, 2.2),
            make_rec("srvecn+proxy+quickack", 1, 1.0), make_rec("srvecn+proxy+quickack", 2, 1.1),
            make_rec("bothecn", 1, 1.0), make_rec("bothecn", 2, 1.1)]
    d = results_dir(tmp_path, recs)
    report.report(d)
    rat = [x for x in read_csv(os.path.join(d, "ratios.csv")) if x["kind"] == "quickack"
           and x["load"] == "all"]
    got = {(x["num"], x["den"]): float(x["ratio"]) for x in rat}
    assert got[("srvecn+proxy+quickack", "bothecn")] == pytest.approx(1.0)
    assert got[("srvecn+proxy", "srvecn+proxy+quickack")] == pytest.approx(2.0)
    md = open(os.path.join(d, "summary.md")).read()
    assert "srvecn+proxy / srvecn+proxy+quickack" in md
    # without the configuration, no such column
    d2 = results_dir(tmp_path / "b", [r for r in recs if "quickack" not in r["params"]["config"]])
    report.report(d2)
    assert "quickack" not in open(os.path.join(d2, "summary.md")).read()


def two_load_dir(tmp_path, ratio3, ratio1=1.19, connect=None, n=4, direction="upload"):
    """srvecn+proxy against bothecn at loads 1 and 3 (cross traffic on), n
    runs each, spread 1 %: the proxied runs `ratio1` and `ratio3` times as
    slow; connect: {config: [connect_s of each run]} (default none)."""
    recs = []
    for load, ratio in (("1", ratio1), ("3", ratio3)):
        for k in range(n):
            base = 10.0 * (1 + 0.01 * k)
            for config, f in (("srvecn+proxy", ratio), ("bothecn", 1.0)):
                c = (connect or {}).get(config)
                extra = c[k] if c else 0.0
                recs.append(make_rec(config, k + 1, base * f + extra, load=load,
                                     direction=direction,
                                     connect=[c[k] if c else 0.01] * int(load)))
    return results_dir(tmp_path, recs)


def test_cells_disagree_no_pooled_figure(tmp_path):
    # upload load 1 at 1.19, load 3 at 0.98 (the published paper run's pattern)
    d = two_load_dir(tmp_path, 0.98)
    heads = report.report(d)
    md = open(os.path.join(d, "summary.md")).read()
    head = md[md.index("## Headline"):md.index("## A/A")]
    # the rule, stated once
    assert md.count(report.VERDICT_RULE) == 1 and "**Verdict rule.**" in head
    h = heads["upload cross-on srvecn+proxy/bothecn"]
    assert [h["cells"][l]["verdict"] for l in ("1", "3")] == ["NOT met", "met"]
    row = [x for x in head.split("\n") if x.startswith("| over the loads |")][0]
    assert row.startswith("| over the loads | cells disagree: 0.98-1.19 (Q = ")
    # no geometric mean anywhere a reader would take for the result
    gm = stats.gm_ratio([[10.0 * (1 + 0.01 * k) * r for k in range(4)] for r in (1.19, 0.98)],
                        [[10.0 * (1 + 0.01 * k) for k in range(4)]] * 2)[0]
    assert "%.2f [" % gm not in head
    sec = md[md.index("## upload, cross traffic on"):]
    assert "| all | cells disagree: 0.98-1.19 (Q = " in sec
    j = json.load(open(os.path.join(d, "headline.json")))
    p = j["cells"]["upload cross-on srvecn+proxy/bothecn"]["pooled"]
    assert p["ratio"] is None and p["cells_agree"] is False and p["verdict"] == "cells disagree"
    assert (p["cell_min"], p["cell_max"]) == pytest.approx((0.98, 1.19), abs=1e-3)
    assert p["p"] < 0.05 and p["df"] == 1
    assert "upload cross-on srvecn+proxy/bothecn" not in j["headline"]
    assert j["verdict_rule"] == report.VERDICT_RULE
    rat = [x for x in read_csv(os.path.join(d, "ratios.csv"))
           if x["metric"] == "completion_s" and x["num"] == "srvecn+proxy"
           and x["den"] == "bothecn"]
    assert [(x["load"], x["verdict"]) for x in rat] == [
        ("1", "NOT met"), ("3", "met"), ("all", "cells disagree")]
    assert rat[-1]["cells_agree"] == "0"


def test_cells_agree_pooled_with_range(tmp_path):
    d = two_load_dir(tmp_path, 1.015, ratio1=1.01)
    heads = report.report(d)
    md = open(os.path.join(d, "summary.md")).read()
    p = heads["upload cross-on srvecn+proxy/bothecn"]["pooled"]
    assert p["cells_agree"] is True and p["verdict"] == "met"
    row = [x for x in md.split("\n") if x.startswith("| over the loads |")][0]
    v, lo, hi, cov = p["ratio"]
    assert row.startswith("| over the loads | %s (cells 1.01-1.01; Q = " % report.fmt_ci(v, lo, hi))
    assert "): **met** |" in row
    j = json.load(open(os.path.join(d, "headline.json")))
    assert j["headline"]["upload cross-on srvecn+proxy/bothecn"] == p["ratio"]


def test_transfer_only_shows_the_handshake_lottery(tmp_path):
    # equal transfers; two of the four proxied runs at each load draw a 3 s
    # SYN retransmission: completion 1.1-1.3 x, transfer only 1.00
    slow = {"srvecn+proxy": [3.0, 0.01, 3.0, 0.01], "bothecn": [0.01] * 4}
    d = two_load_dir(tmp_path, 1.0, ratio1=1.0, connect=slow)
    heads = report.report(d)
    c = heads["upload cross-on srvecn+proxy/bothecn"]["cells"]["1"]
    assert c["transfer"][0] == pytest.approx(1.0, abs=0.005)
    assert c["transfer_verdict"] == "met"
    assert c["ratio"][0] > 1.1 and c["verdict"] != "met"
    assert c["slow_handshakes"] == {"srvecn+proxy": [2, 4], "bothecn": [0, 4]}
    runs = {r["id"]: r for r in read_csv(os.path.join(d, "runs.csv"))}
    r = runs["upload_cross_p1_srvecn+proxy_r01"]
    # completion 13 s = 3 s handshake + 10 s transfer
    assert float(r["setup_s"]) == pytest.approx(3.0)
    assert float(r["transfer_s"]) == pytest.approx(10.0)
    assert r["slow_handshake"] == "True"
    # three parallel flows: the run's transfer is its longest connection's
    r = runs["upload_cross_p3_srvecn+proxy_r02"]
    assert float(r["transfer_s"]) == pytest.approx(float(r["completion_s"]) - 0.01)
    md = open(os.path.join(d, "summary.md")).read()
    assert "| 1 | %s | %s |" % (report.fmt_head_cell(c["ratio"], c["verdict"]),
                                report.fmt_head_cell(c["transfer"], "met")) in md
    assert "| 2/4, 0/4 |" in md          # slow handshakes: srvecn+proxy, bothecn


def test_handshake_cols():
    r = make_rec("bothecn", 1, 12.0, load="series", connect=[1.0, 0.5])
    # a series: the transfers' sum; the rest, handshakes, is the set-up
    assert report.handshake_cols(r) == {"setup_s": 1.5, "transfer_s": 10.5,
                                        "handshake_max_s": 1.0, "slow_handshake": True}
    r = make_rec("bothecn", 1, 12.0, load="3", connect=[0.01, 0.02, 0.3])
    h = report.handshake_cols(r)
    assert h["transfer_s"] == pytest.approx(11.99) and h["slow_handshake"] is False
    # an older record, and one with a connection that never connected
    assert report.handshake_cols(make_rec("bothecn", 1, 12.0))["transfer_s"] is None
    r = make_rec("bothecn", 1, 12.0, load="3", connect=[0.01, 0.02])
    assert report.handshake_cols(r)["transfer_s"] is None


def test_verdict_rule():
    assert report.verdict((1.0, 0.98, 1.05, 0.95), 1.05) == "met"
    assert report.verdict((1.1, 1.051, 1.2, 0.96), 1.05) == "NOT met"
    assert report.verdict((1.04, 1.0, 1.1, 0.95), 1.05) == "undecided"
    # too few runs for 95 %: undecided however the interval lies
    assert report.verdict((1.3, 1.2, 1.4, 2 / 3), 1.05) == "undecided"
    assert report.verdict((1.0, 0.9, 1.1, 0.95), None) is None
    assert report.goal_of("download", "on", "srvecn+proxy", "noecn") == 0.70
    assert report.goal_of("upload", "on", "srvecn+proxy", "noecn") is None
    assert report.goal_of("download", "off", "srvecn+proxy", "bothecn") is None


def test_numeric_load_order(tmp_path):
    recs = []
    for load in ("10", "series", "2"):
        for k in (1, 2):
            for config in ("srvecn+proxy", "bothecn"):
                recs.append(make_rec(config, k, 1.0 + 0.1 * k + (0.05 if "srv" in config else 0),
                                     load=load))
    d = results_dir(tmp_path, recs)
    report.report(d)
    md = open(os.path.join(d, "summary.md")).read()

    def rows(text):
        return [x.split(" | ")[0][2:] for x in text.split("\n")
                if x.startswith(("| 2 |", "| 10 |", "| series |"))]
    head = md[md.index("## Headline"):md.index("## A/A")]
    assert rows(head) == ["2", "10", "series"]
    sec = md[md.index("\n## download, cross traffic on"):md.index("## Stall causes")]
    # cells, ratios, transfer only, handshakes: each 2, 10, series
    assert rows(sec) == ["2", "10", "series"] * 4
    assert [x["load"] for x in read_csv(os.path.join(d, "summary.csv"))] == \
        ["2", "2", "10", "10", "series", "series"]
    assert [x["load"] for x in read_csv(os.path.join(d, "ratios.csv"))
            if x["metric"] == "completion_s"][:4] == ["2", "10", "series", "all"]


def test_robust_axis_and_outlier_marked():
    top, clipped = report.robust_top([[10.0, 10.2, 10.1, 10.3, 190.0], [11.0, 11.5]])
    assert 11.5 < top < 20 and clipped
    top, clipped = report.robust_top([[10.0, 10.2, 10.1, 10.3], [11.0, 11.5]])
    assert top >= 11.5 and not clipped
    assert report.robust_top([[], [float("nan")]]) is None
    fig, ax = report.plt.subplots()
    ax.boxplot([[10.0, 10.2, 10.1, 10.3, 190.0]])
    report.clip_outliers(ax, [[10.0, 10.2, 10.1, 10.3, 190.0]], 11.0)
    assert any(t.get_text() == "190" for t in ax.texts)
    report.plt.close(fig)


def test_robust_axis_scales():
    fig, ax = report.plt.subplots()
    # one outlier: linear from 0, cut above the whiskers, the run marked
    assert report.robust_axis(ax, [[1.0, 1.1, 1.2, 1.05, 9.0], [1.3, 1.4]]) == "linear"
    assert ax.get_ylim()[0] == 0 and ax.get_ylim()[1] < 2 and ax.texts
    # a whole configuration 40 times slower (2 runs, no outlier of its own)
    fig2, ax2 = report.plt.subplots()
    assert report.robust_axis(ax2, [[0.5, 0.55], [20.0, 22.0], [0.6, 0.62]]) == "log"
    assert ax2.get_yscale() == "log" and ax2.get_ylim()[0] == pytest.approx(0.4)
    report.plt.close(fig)
    report.plt.close(fig2)


def test_boxplot_with_an_outlier(tmp_path):
    recs = [make_rec("srvecn+proxy", k, 10.0 + 0.1 * k) for k in range(1, 5)]
    recs += [make_rec("bothecn", k, 10.0 + 0.1 * k) for k in range(1, 4)]
    recs.append(make_rec("bothecn", 4, 190.0))      # a run cut at its deadline
    d = results_dir(tmp_path, recs)
    seen = {}
    orig = report.clip_outliers

    def spy(ax, groups, top, xs=None):
        seen["top"] = top
        return orig(ax, groups, top, xs)
    report.clip_outliers = spy
    try:
        report.report(d)
    finally:
        report.clip_outliers = orig
    assert 10.4 < seen["top"] < 15
    with open(os.path.join(d, "boxplot_download_cross-on.png"), "rb") as f:
        assert f.read(8) == b"\x89PNG\r\n\x1a\n"


def test_every_session_listed(tmp_path):
    recs = [make_rec("srvecn+proxy", k, 1.0 + 0.1 * k,
                     wall_start="2026-11-28T0%d:30:00+00:00" % k) for k in (1, 2)]
    recs += [make_rec("bothecn", k, 1.0 + 0.1 * k, wall_start="2026-11-28T0%d:40:00+00:00" % k)
             for k in (1, 2)]
    d = results_dir(tmp_path, recs)
    sha = {1: "a" * 64, 2: "b" * 64}
    for n in (1, 2):
        os.makedirs(os.path.join(d, "sessions", "%02d" % n))
        s = {"n": n, "start": "2026-11-28T0%d:00:00+00:00" % n, "pending_before": 6 - 2 * n,
             "git_commit": str(n) * 40, "git_dirty": "", "ecn_proxy_ko_sha256": sha[n],
             "impair_ko_sha256": "c" * 64, "tcpfwd_ko_sha256": "d" * 64}
        with open(os.path.join(d, "sessions", "%02d" % n, "session.json"), "w") as f:
            json.dump(s, f)
    # meta.json has only the session that ended (as scripts/matrix writes it)
    with open(os.path.join(d, "meta.json"), "w") as f:
        json.dump({"command": "make matrix", "sessions": [dict(
            s, exit_code=0, seconds=100, pending_after=0)]}, f)
    report.report(d)
    md = open(os.path.join(d, "summary.md")).read()
    made = md[md.index("## How this was made"):]
    assert ("- session 1: 2026-11-28T01:00:00+00:00, interrupted (no end recorded; the next "
            "session resumed), 2 runs done; git %s; ecn_proxy.ko sha256 %s, impair.ko sha256 "
            "%s, tcpfwd.ko sha256 %s" % ("1" * 40, "a" * 64, "c" * 64, "d" * 64)) in made
    assert ("- session 2: 2026-11-28T02:00:00+00:00, 100 s, exit 0, 2 runs done; git %s; "
            "ecn_proxy.ko sha256 %s" % ("2" * 40, "b" * 64)) in made
    assert ("**The runs were made with 2 builds of `ecn_proxy.ko`**" in md
            and "`aaaaaaaaaaaaaaaa`: 2 runs (session 1); `bbbbbbbbbbbbbbbb`: 2 runs (session 2); "
            "2 of 2 cells mix builds" in md)
    runs = {r["id"]: r for r in read_csv(os.path.join(d, "runs.csv"))}
    assert runs["download_cross_p1_bothecn_r02"]["session"] == "2"
    assert runs["download_cross_p1_bothecn_r01"]["ko_sha256"] == "a" * 64
    j = json.load(open(os.path.join(d, "headline.json")))
    assert [(s["n"], s["git_commit"], s["ecn_proxy_ko_sha256"], s["runs_started"])
            for s in j["sessions"]] == [(1, "1" * 40, "a" * 64, 2), (2, "2" * 40, "b" * 64, 2)]


def test_thesis_comparison_from_its_file(tmp_path, monkeypatch):
    t = report.thesis()
    # the citation as the project's references give it (no invented fields)
    refs = open(os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(
        os.path.abspath(__file__)))), "docs", "references.md")).read()
    assert '"%s", %s, %s, %d' % (t["title"], t["type"], t["institution"], t["year"]) in \
        " ".join(refs.split())
    assert t["citation"] == '"%s", %s, %s, %d' % (t["title"], t["type"], t["institution"],
                                                  t["year"])
    assert "author" not in t
    d = results_dir(tmp_path, [make_rec("srvecn+proxy", 1, 1.0), make_rec("bothecn", 1, 1.0)])
    report.report(d)
    md = open(os.path.join(d, "summary.md")).read()
    assert "For comparison, the thesis (%s; about 10 runs per cell" % t["citation"] in md
    # read from the file, not typed into the report
    alt = dict(t, citation="CITED", findings=dict(t["findings"], upload_cross_on="UP"))
    p = tmp_path / "thesis.json"
    p.write_text(json.dumps(alt))
    monkeypatch.setattr(report, "THESIS_FILE", str(p))
    report.report(d)
    md = open(os.path.join(d, "summary.md")).read()
    assert "the thesis (CITED; " in md and "; UP; without cross traffic" in md
    assert "semester thesis" not in md


def test_matrix_analyze_prints_every_cell(tmp_path, capsys, monkeypatch):
    from ecnproxy.host import analyze
    d = two_load_dir(tmp_path, 0.98)
    monkeypatch.setattr("sys.argv", ["analyze", d])
    assert analyze.main() == 0
    out = capsys.readouterr().out
    assert "matrix:   upload cross-on srvecn+proxy/bothecn\n" in out
    assert "matrix:     1        1.19 [" in out and ": NOT met; transfer only" in out
    assert "matrix:     pooled   cells disagree: 0.98-1.19 (Q = " in out
    assert "**" not in out


def test_drop_pairs_and_one_report_per_delay(tmp_path):
    """PROFILE=parity: srvecn+proxy+drop's ratios, and analyze's one
    report per added delay, each from its own runs only."""
    import subprocess
    import sys
    recs = []
    for ms, slow in ((0, 1.0), (20, 2.0)):
        for k in (1, 2):
            for config, f in (("srvecn+proxy", 1.0), ("srvecn+proxy+drop", 1.5),
                              ("bothecn", 1.0), ("noecn", 1.2)):
                r = make_rec(config, k, 10.0 * f * slow * (1 + 0.01 * k), cross="off",
                             direction="upload")
                r["id"] = r["id"].replace("nocross_", "nocross_d%d_" % ms)
                r["params"]["delay_ms"] = ms
                recs.append(r)
    d = results_dir(tmp_path, recs)
    with open(os.path.join(d, "plan.json")) as f:
        plan = json.load(f)
    plan["profile"]["delays"] = [0, 20]
    with open(os.path.join(d, "plan.json"), "w") as f:
        json.dump(plan, f)
    from ecnproxy.paths import python_env
    subprocess.run([sys.executable, "-m", "ecnproxy", "analyze", d], check=True,
                   stdout=subprocess.DEVNULL, env=python_env())
    top = open(os.path.join(d, "summary.md")).read()
    assert "delay-0ms/summary.md" in top and "delay-20ms/summary.md" in top
    for ms, med in ((0, 10.15), (20, 20.3)):
        out = os.path.join(d, "delay-%dms" % ms)
        runs = read_csv(os.path.join(out, "runs.csv"))
        assert len(runs) == 8     # this delay's runs only
        cells = {x["config"]: float(x["median_s"]) for x in read_csv(os.path.join(out, "summary.csv"))}
        assert cells["srvecn+proxy"] == pytest.approx(med, rel=0.01)
        rat = {(x["num"], x["den"]): float(x["ratio"]) for x in
               read_csv(os.path.join(out, "ratios.csv")) if x["kind"] == "feedback drop"
               and x["metric"] == "completion_s" and x["load"] == "1"}
        assert rat[("srvecn+proxy+drop", "bothecn")] == pytest.approx(1.5, rel=0.01)
        assert rat[("srvecn+proxy", "srvecn+proxy+drop")] == pytest.approx(1 / 1.5, rel=0.01)
        # the upload goal is judged without cross traffic too
        md = open(os.path.join(out, "summary.md")).read()
        assert "with cross traffic off (uploads)" in md


def test_feedback_pairs_of_each_per_run_mode():
    """parity-floor-ab: srvecn+proxy+rwnd (dupack-rwnd, set per run)
    beside the plan's mode gets its own ratios, as drop does in parity."""
    import pandas as pd
    from ecnproxy.analysis import report, schema
    assert schema.run_feedback("srvecn+proxy+rwnd", "dupack") == "dupack-rwnd"
    assert schema.run_feedback("srvecn+proxy", "dupack") == "dupack"
    df = pd.DataFrame({"config": ["srvecn+proxy", "srvecn+proxy+rwnd", "bothecn"]})
    assert report.feedback_pairs(df) == [
        (("srvecn+proxy+rwnd", "bothecn"), "feedback dupack-rwnd"),
        (("srvecn+proxy", "srvecn+proxy+rwnd"), "feedback dupack-rwnd")]
    assert report.feedback_pairs(df[df.config != "srvecn+proxy+rwnd"]) == []


def sysctl_order_ok(writes, start):
    """True if writing WRITES ({key: value}, in order) to a namespace
    whose values are START never puts tcp_reordering above
    tcp_max_reordering (what Linux refuses with EINVAL)."""
    cur = dict(start)
    for k, v in writes.items():
        cur[k] = v
        if int(cur["net/ipv4/tcp_reordering"]) > int(cur["net/ipv4/tcp_max_reordering"]):
            return False
    return True


def test_prompt_configurations():
    """parity-prompt: a client that enters recovery on the first duplicate
    ACK, with dupack and with dupack-fast, each against end-to-end ECN and
    the plan's mode against it; the sysctls set its loss detection and put
    the defaults back for every other configuration."""
    import pandas as pd
    from ecnproxy.analysis import report, schema
    assert schema.run_feedback("srvecn+proxy+prompt", "dupack-fast") == "dupack"
    assert schema.run_feedback("srvecn+proxy+fast+prompt", None) == "dupack-fast"
    assert schema.PROMPT <= set(schema.CONFIGS)
    assert set(schema.PROMPT_SYSCTLS) == set(schema.LOSS_SYSCTLS)
    assert schema.PROMPT_SYSCTLS["net/ipv4/tcp_recovery"] == "0"
    assert schema.LOSS_SYSCTLS["net/ipv4/tcp_recovery"] == "1"
    # each set may follow the other (the runs are shuffled): Linux refuses
    # tcp_reordering above tcp_max_reordering, so the order of the writes
    # matters (a run after a prompt one failed with EINVAL before it did)
    for a, b in ((schema.LOSS_SYSCTLS, schema.PROMPT_SYSCTLS),
                 (schema.PROMPT_SYSCTLS, schema.LOSS_SYSCTLS),
                 (schema.LOSS_SYSCTLS, schema.LOSS_SYSCTLS),
                 (schema.PROMPT_SYSCTLS, schema.PROMPT_SYSCTLS)):
        assert sysctl_order_ok(b, a)
    assert not sysctl_order_ok(
        {"net/ipv4/tcp_reordering": "3", "net/ipv4/tcp_max_reordering": "300"},
        schema.PROMPT_SYSCTLS)
    df = pd.DataFrame({"config": ["srvecn+proxy", "srvecn+proxy+prompt",
                                  "srvecn+proxy+fast+prompt", "bothecn"]})
    assert report.feedback_pairs(df) == [
        (("srvecn+proxy+prompt", "bothecn"), "feedback dupack, prompt client"),
        (("srvecn+proxy", "srvecn+proxy+prompt"), "feedback dupack, prompt client"),
        (("srvecn+proxy+fast+prompt", "bothecn"), "feedback dupack-fast, prompt client"),
        (("srvecn+proxy", "srvecn+proxy+fast+prompt"), "feedback dupack-fast, prompt client")]
