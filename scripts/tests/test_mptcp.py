# SPDX-License-Identifier: GPL-2.0
"""exp-mbtest-mptcp on the host (issue 44 part 2): the profile and its
driver's settings, MBtest's Table 1 data file, the capture summaries of
MPTCP options (synthetic pcaps), the outcome of a run, and the report
(summary.md, headline.json, runs.csv) on synthetic records."""
import copy
import json
import os

import pytest
from scapy.all import IP, TCP, Ether, wrpcap

from ecnproxy import impair_plan
from ecnproxy.analysis import experiments, mptcp, mptcp_joins, mptcp_outcome, mptcpopt
from ecnproxy.guest import mptcp as gmptcp
from ecnproxy.vmtest import xfer

TOP = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PROFILE = os.path.join(TOP, "scripts", "profiles", "exp-mbtest-mptcp.json")


def profile():
    with open(PROFILE) as f:
        return json.load(f)


# --- the profile and the data file -------------------------------------

def test_profile_rows_name_configs_and_table1_rows():
    prof = profile()
    assert impair_plan.check(prof) == []
    t1 = mptcp.table1()
    ids = {r["id"] for r in t1["rows"]} | {r["id"] for r in t1["upstream"]["rows"]}
    for row in prof["table1"]:
        assert row["row"] in ids
        for c in row["configs"] + list(row.get("reference", {}).values()):
            assert c in prof["configs"], c
    for e in prof["extensions"]:
        assert e["config"] in prof["configs"] and e["reference"] in prof["configs"]
        assert impair_plan.config_settings(prof, e["config"])["mptcp"] == 0
    # every MBtest row of the data file is measured
    assert {r["id"] for r in t1["rows"]} <= {row["row"] for row in prof["table1"]}


def test_table1_cites_and_invents_no_cell():
    t1 = mptcp.table1()
    for k in ("Hesmans", "Duchene", "Paasch", "Detal", "Bonaventure",
              "Are TCP Extensions Middlebox-proof?", "HotMiddlebox", "2013"):
        assert k in t1["citation"]
    cf = t1["cells_from"]
    for k in ("Bonaventure", "Paasch", "Detal", "draft-ietf-mptcp-experience-05", "RFC 8041"):
        assert k in cf["citation"]
    for r in t1["rows"]:
        for k in ("works", "fallback"):
            assert r[k] in (None, True, False)
        # every cell names the statement of the authors' summary it comes
        # from; a row it says nothing of has no cell
        if r["works"] is None and r["fallback"] is None:
            assert r["cell_source"].startswith("not in the authors' summary")
            continue
        assert r["cell_source"].startswith("cells_from: ")
        said = cf["statements"][r["cell_source"].split(": ", 1)[1]]
        if r["fallback"] is True:
            assert "falls back" in said
        if r["works"] is not None:
            assert "v0.87" in t1["implementation"]
    # the split variants share one statement, and the table says so
    splits = [r for r in t1["rows"] if r["id"].startswith("split")]
    assert splits and all(r.get("scope") == "splitting in general" for r in splits)


def test_compare_names_a_statement_broader_than_its_row():
    row = {"works": True, "fallback": None, "scope": "splitting in general"}
    assert mptcp.compare(row, True, False) == \
        "agrees (with its statement on splitting in general)"
    assert mptcp.compare(row, False, False).startswith("differs")


def test_driver_settings_checked():
    prof = profile()
    assert impair_plan.check(prof) == []
    bad = copy.deepcopy(prof)
    bad["tb"] = {}
    assert any("TB_MPTCP" in e for e in impair_plan.check(bad))
    bad = copy.deepcopy(prof)
    bad["configs"]["control"]["idle_s"] = 5
    assert any("does not do idle_s" in e for e in impair_plan.check(bad))
    bad = copy.deepcopy(prof)
    bad["configs"]["control"]["nat"] = [3]
    assert any("nat" in e for e in impair_plan.check(bad))
    bad = copy.deepcopy(prof)
    del bad["driver"]
    assert any("needs \"driver\": \"mptcp\"" in e for e in impair_plan.check(bad))
    st = impair_plan.config_settings(prof, "strip-join-p2")
    assert st["rules"] == [] and st["rules2"] == ["flags syn strip mptcp"] and st["mptcp"] == 1
    q = impair_plan.scaled(prof, "quick")
    assert q["directions"] == ["upload"] and q["defaults"]["transfer_bytes"] < \
        prof["defaults"]["transfer_bytes"]
    assert impair_plan.command(q) == "make experiments EXPERIMENTS=mbtest-mptcp EXP_SCALE=quick"
    # the iperf3 experiments' settings are unchanged
    assert "mptcp" not in impair_plan.config_settings(
        {"defaults": {}, "configs": {"c": {}}}, "c")


# --- xfer's MPTCP socket summary -----------------------------------------

def test_mptcp_info_fields_by_length():
    import struct
    raw = struct.pack("@BBBBBBIIQQQBBB", 1, 0, 0, 2, 0, 0, 1, 7, 5, 6, 7, 1, 1, 0)
    i = xfer.parse_info(raw)
    assert i["subflows"] == 1 and i["flags"] == 1 and i["rcv_nxt"] == 7
    assert "bytes_sent" not in i  # a 6.1 kernel gives no more
    assert xfer.options(["client", "h", "1", "5", "--mptcp", "--timeout", "9"]) == (
        ["client", "h", "1", "5"], True, 9.0, "4", 0.0)


# --- the captures ----------------------------------------------------------

C, S, CP, SP = "198.18.0.2", "198.18.2.2", 40000, 5402


def mpc(ver=1):
    return (30, bytes([0x00 | ver, 0x81]) + b"\x00" * 8)


def dss(ack=True, dll=1000):
    # flags: A (4-byte DATA_ACK), M (4-byte DSN): ack, dsn, ssn, dll
    fl = (1 if ack else 0) | 4
    v = bytes([0x20, fl]) + (b"\x00\x00\x00\x01" if ack else b"")
    return (30, v + b"\x00\x00\x00\x02" + b"\x00\x00\x00\x01" + dll.to_bytes(2, "big"))


def seg(t, src, sport, dst, dport, flags, options=(), payload=0, seq=1):
    p = Ether() / IP(src=src, dst=dst) / TCP(sport=sport, dport=dport, flags=flags, seq=seq,
                                             options=list(options))
    if payload:
        p = p / (b"x" * payload)
    p.time = t
    return p


def test_mptcp_options_summary(tmp_path):
    f = str(tmp_path / "c.pcap")
    pk = [seg(0, C, CP, S, SP, "S", [("MSS", 1460), ("SAckOK", b""), mpc()]),
          seg(0.1, S, SP, C, CP, "SA", [("MSS", 1460), mpc()]),
          seg(0.2, C, CP, S, SP, "A", [mpc()]),
          seg(0.3, C, CP, S, SP, "PA", [("Timestamp", (1, 2)), dss()], payload=1000),
          seg(0.4, C, CP, S, SP, "PA", [], payload=500),
          seg(0.5, C, CP, S, SP, "PA", [dss(ack=False, dll=0)], payload=100),
          seg(0.6, S, SP, C, CP, "A", [("SAck", (5, 10))]),
          seg(0.7, S, SP, C, CP, "R", [(30, bytes([0x80, 0x03]))]),
          # a joining subflow
          seg(1.0, "198.18.3.2", 41000, S, SP, "S", [(30, bytes([0x10, 1]) + b"\0" * 8)]),
          seg(1.1, S, SP, "198.18.3.2", 41000, "SA", [(30, bytes([0x10, 1]) + b"\0" * 14)])]
    wrpcap(f, pk)
    s = mptcpopt.summarize(f, SP)
    a = s["%s:%d>%s:%d" % (C, CP, S, SP)]
    assert a["syn"] == ["mss", "sackok", "mptcp:mp_capable"] and a["join"] is False
    assert a["synack"] == ["mss", "mptcp:mp_capable"]
    c2s, s2c = a["c2s"], a["s2c"]
    assert c2s["mp_capable"] == 1 and c2s["data"] == 3 and c2s["bytes"] == 1600
    assert c2s["dss_map"] == 2 and c2s["data_no_dss"] == 1 and c2s["infinite"] == 1
    assert c2s["dss_ack"] == 1 and c2s["data_ts"] == 1
    assert s2c["ack_sack"] == 1 and s2c["rst"] == 1 and s2c["tcprst"] == 1
    assert a["tcprst_reasons"] == [3]
    j = s["198.18.3.2:41000>%s:%d" % (S, SP)]
    assert j["join"] is True and j["synack"] == ["mptcp:mp_join"]


# --- coalesced segments against their DSS mappings ---------------------------

def dss_at(dsn, ssn, dll, dsn8=False):
    fl = 4 | (8 if dsn8 else 0)
    return (30, bytes([0x20, fl]) + dsn.to_bytes(8 if dsn8 else 4, "big") +
            ssn.to_bytes(4, "big") + dll.to_bytes(2, "big"))


def test_dss_map_parse():
    raw = lambda o: b"".join(bytes([k, len(v) + 2]) + v for k, v in [o])
    assert mptcp_joins.dss_map(raw(dss_at(7, 3, 700))) == (7, 3, 700)
    assert mptcp_joins.dss_map(raw(dss_at(1 << 40, 3, 700, True))) == (1 << 40, 3, 700)
    assert mptcp_joins.dss_map(raw(dss())) == (2, 1, 1000)   # with a DATA_ACK first
    assert mptcp_joins.dss_map(raw((30, bytes([0x20, 1]) + b"\0" * 4))) is None  # ACK only
    assert mptcp_joins.dss_map(raw((30, bytes([0x20, 4]) + b"\0" * 5))) is None  # cut short
    # DATA_FIN: one octet of the data-level length, not payload
    fin = (30, bytes([0x20, 4 | 16]) + (7).to_bytes(4, "big") + (3).to_bytes(4, "big") +
           (701).to_bytes(2, "big"))
    assert mptcp_joins.dss_map(raw(fin)) == (7, 3, 700)


def test_joins_against_the_senders_mappings():
    # the sender: four 700-byte segments, each its own mapping; 1-700 and
    # 701-1400 at DSN 1000 and 1700 (contiguous), 1401-2100 at DSN 9000
    # (path 2 carried 1700 + 700 ... in between), 2101-2800 at 9700
    orig = [(1, 700, (1000, 1, 700)), (701, 700, (1700, 701, 700)),
            (1401, 700, (9000, 1401, 700)), (2101, 700, (9700, 2101, 700))]
    # joined with the first's mapping: 1+2 (the rest continues the
    # mapping), 2+3 (the rest was mapped elsewhere); joined with the
    # second's: 3+4 (contiguous before it); one without a mapping; one
    # segment as sent
    seen = [(1, 1400, (1000, 1, 700)), (701, 1400, (1700, 701, 700)),
            (1401, 1400, (9700, 2101, 700)), (1, 1400, None), (2101, 700, (9700, 2101, 700))]
    # the sender's own retransmission of 1-1400 as one segment: not a join
    c = mptcp_joins.joins(orig + [(1, 1400, (1000, 1, 1400))], seen + [(1, 1400, None)])
    assert c["joined"] == 2 and c["no_map"] == 0   # 701-2100, 1401-2800 still
    c = mptcp_joins.joins(orig, seen)
    assert c["joined"] == 4 and c["no_map"] == 1
    assert (c["after"], c["after_contiguous"], c["after_elsewhere"]) == (2, 1, 1)
    assert (c["before"], c["before_contiguous"], c["before_elsewhere"]) == (1, 1, 0)
    assert c["bytes_outside"] == 3 * 700
    # a DSN that wraps its 32 bits is still contiguous
    w = (1 << 32) - 700
    c = mptcp_joins.joins([(1, 700, (w, 1, 700)), (701, 700, (0, 701, 700))],
                          [(1, 1400, (w, 1, 700))])
    assert c["after_contiguous"] == 1


def test_resent_mappings_and_the_received_prefix():
    # two mappings upward, then the same 100 bytes mapped again twice at
    # new subflow bytes (MPTCP-level retransmissions), then new data
    orig = [(1, 700, (1000, 1, 700)), (701, 700, (1700, 701, 700)),
            (1401, 100, (1300, 1401, 100)), (1501, 100, (1300, 1501, 100)),
            (1601, 700, (2400, 1601, 700)), (2301, 700, (2400, 1601, 700))]
    assert mptcp_joins.resent(orig) == (2, 200)
    # a 4-byte DSN that wraps is still upward
    w = (1 << 32) - 700
    assert mptcp_joins.resent([(1, 700, (w, 1, 700)), (701, 700, (0, 701, 700))]) == (0, 0)
    import hashlib
    import random
    data = random.Random(5000).randbytes(5000)
    sha = hashlib.sha256(data[:1234]).hexdigest()
    assert mptcp_joins.prefix_intact(5000, 1234, sha) is True
    assert mptcp_joins.prefix_intact(5000, 1235, sha) is False
    assert mptcp_joins.prefix_intact(5000, 1234, hashlib.sha256(b"x").hexdigest()) is False
    assert mptcp_joins.prefix_intact(None, 1234, sha) is None
    assert mptcp_joins.prefix_intact(5000, 6000, sha) is None


def test_data_segments_from_a_capture(tmp_path):
    f = str(tmp_path / "j.pcap")
    wrpcap(f, [seg(0, C, CP, S, SP, "S", [mpc()], seq=100),
               seg(0.1, S, SP, C, CP, "SA", [mpc()], seq=5),
               seg(0.2, C, CP, S, SP, "PA", [dss_at(50, 1, 10)], payload=10, seq=101),
               seg(0.3, C, CP, S, SP, "PA", [], payload=10, seq=111),
               seg(0.4, S, SP, C, CP, "A", [], seq=6)])
    d = mptcp_joins.data_segments(f, SP)
    assert d == {"%s:%d>%s:%d" % (C, CP, S, SP): [(1, 10, (50, 1, 10)), (11, 10, None)]}
    # no SYN in the capture: None; a new SYN (another ISN) starts again
    wrpcap(f, [seg(0, C, CP, S, SP, "PA", [], payload=10, seq=101),
               seg(1, C, 1, S, SP, "S", [mpc()], seq=100),
               seg(1.1, C, 1, S, SP, "PA", [], payload=10, seq=101),
               seg(2, C, 1, S, SP, "S", [mpc()], seq=500),
               seg(2.1, C, 1, S, SP, "PA", [], payload=5, seq=501)])
    d = mptcp_joins.data_segments(f, SP)
    assert d["%s:%d>%s:%d" % (C, CP, S, SP)] is None
    assert d["%s:%d>%s:%d" % (C, 1, S, SP)] == [(1, 5, None)]


def test_run_report_reads_published_captures(tmp_path):
    """mptcp-joins reads a run's path-1 captures where the guest kept them
    (pcaps/, never committed) and, after scripts/ecnproxy keep-captures,
    from captures/*.xz: the same report."""
    from ecnproxy.host import keep_captures
    d = tmp_path / "run"
    (d / "pcaps").mkdir(parents=True)
    pk = [seg(0, C, CP, S, SP, "S", [mpc()], seq=100),
          seg(0.2, C, CP, S, SP, "PA", [dss_at(50, 1, 10)], payload=10, seq=101),
          seg(0.3, C, CP, S, SP, "PA", [dss_at(60, 11, 10)], payload=10, seq=111)]
    wrpcap(str(d / "pcaps" / "r1.p1c.pcap"), pk)
    # path 1 as the server side saw it: the two segments joined
    wrpcap(str(d / "pcaps" / "r1.p1s.pcap"),
           pk[:1] + [seg(0.2, C, CP, S, SP, "PA", [dss_at(50, 1, 10)], payload=20, seq=101)])
    rec = {"id": "r1", "params": {"config": "coalesce"}, "result": {}, "transfer": {}}
    before = mptcp_joins.run_report(str(d), rec, SP)
    assert "error" not in before
    assert before["subflows"]["%s:%d>%s:%d" % (C, CP, S, SP)]["joined"] == 1
    moved, problems = keep_captures.keep(str(d))
    assert (moved, problems) == (2, [])
    assert not (d / "pcaps").exists()
    assert sorted(os.listdir(d / "captures")) == ["r1.p1c.pcap.xz", "r1.p1s.pcap.xz"]
    assert mptcp_joins.run_report(str(d), rec, SP) == before
    # again: nothing kept, an error; a file in both places is not overwritten
    assert keep_captures.keep(str(d))[1]
    (d / "pcaps").mkdir()
    (d / "pcaps" / "r1.p1c.pcap").write_bytes(b"x")
    moved, problems = keep_captures.keep(str(d))
    assert moved == 0 and "exists already" in problems[0]
    assert (d / "pcaps" / "r1.p1c.pcap").exists()
    # without any capture: the run says so
    (d / "pcaps" / "r1.p1c.pcap").unlink()
    rec2 = dict(rec, id="r2")
    assert mptcp_joins.run_report(str(d), rec2, SP)["error"] == "no captures (KEEP_PCAPS=1)"


# --- a run's outcome ----------------------------------------------------------

def xsum(sent=0, received=0, sha_s="a", sha_r="a", err=None, is_mptcp=1):
    d = {"sent": sent, "received": received, "sent_sha256": sha_s, "received_sha256": sha_r,
         "seconds": 2.0, "mptcp": {"is_mptcp": is_mptcp}}
    if err:
        d["error"] = err
    return d


def test_outcome():
    st = {"transfer_bytes": 100, "mptcp": 1}
    cli, srv = xsum(sent=100, sha_s="h"), xsum(received=100, sha_r="h")
    assert mptcp_outcome.outcome(st, "upload", cli, srv, {}, {})[0] == "ok"
    r = mptcp_outcome.outcome(st, "upload", cli, srv, {}, {"MPCapableFallbackACK": 1})
    assert r[0] == "fallback" and r[4] == ["server:MPCapableFallbackACK"]
    assert mptcp_outcome.outcome(st, "upload", cli, dict(srv, mptcp={"is_mptcp": 0}), {}, {})[0] == \
        "fallback"
    assert mptcp_outcome.outcome(st, "upload", cli, xsum(received=60, sha_r="x",
                                                  err="ConnectionResetError: [Errno 104]"),
                          {"MPRstRx": 1}, {})[0] == "reset"
    assert mptcp_outcome.outcome(st, "upload", cli, xsum(received=100, sha_r="x"), {}, {})[0] == \
        "broken"
    # 6.1: no TCP_IS_MPTCP (None at both ends), no counter; the client's
    # `ss -Mi` sample (text of results/exp-mbtest-mptcp-20261203, split-second-p1)
    ss61 = ("ESTAB 0 0 198.18.0.2:49928 198.18.2.2:5402\n\t subflows_max:2 "
            "add_addr_accepted_max:2 fallback remote_key token:d9264fd4")
    c61, s61 = (dict(x, mptcp={"is_mptcp": None}) for x in (cli, srv))
    assert mptcp_outcome.outcome(st, "upload", c61, s61, {}, {})[0] == "ok"
    r = mptcp_outcome.outcome(st, "upload", c61, s61, {}, {}, ss61)
    assert r[0] == "fallback" and r[4] == [mptcp_outcome.SS_FALLBACK]
    assert mptcp_outcome.outcome(st, "upload", c61, s61, {}, {},
                          ss61.replace("fallback ", ""))[0] == "ok"
    assert not mptcp_outcome.ss_fallback("ESTAB token:fallbackish") and not mptcp_outcome.ss_fallback(None)
    # a download: the client receives
    assert mptcp_outcome.outcome(st, "download", xsum(received=100, sha_r="h"),
                          xsum(sent=100, sha_s="h"), {}, {})[0] == "ok"
    assert gmptcp.negotiated("ESTAB 0 0 a b ts sack cubic wscale:7,7 rto:204") == {
        "sack": True, "ts": True, "wscale": "7,7"}
    assert gmptcp.negotiated(None) is None


# --- the report ----------------------------------------------------------------

def conn_summary(syn, synack, join=False, **c2s):
    blank = {k: 0 for k in mptcpopt.COUNTS}
    return {"syn": syn, "synack": synack, "join": join, "c2s": dict(blank, **c2s),
            "s2c": dict(blank), "tcprst_reasons": []}


def record(cfg, rep, outcome, goodput, kernel="6.1.0-99-amd64", direction="upload",
           counters=None, syn=("mss", "mptcp:mp_capable"), flags=()):
    exact = outcome in ("ok", "fallback")
    caps = {"p1s": {"conns": {"a": conn_summary(list(syn), None, dss_map=10, data=10)}},
            "p1c": {"conns": {"a": conn_summary(None, list(syn))}},
            "p2c": {"conns": {"j": conn_summary(["mptcp:mp_join"], ["mptcp:mp_join"], True)}},
            "p2s": {"conns": {}}}
    return {"id": "%s_%s_r%02d" % (direction, cfg, rep), "ok": True,
            "params": {"config": cfg, "direction": direction, "rep": rep, "point": {}},
            "env": {"kernel": kernel},
            "fidelity": {"flags": list(flags), "cpu_idle_min": 0.5},
            "mptcp_counters": {"client": counters or {}, "server": {}},
            "captures": caps,
            "result": {"outcome": outcome, "byte_exact": int(exact),
                       "fallback": int(outcome == "fallback"), "reset": int(outcome == "reset"),
                       "error": None if exact else "ConnectionResetError",
                       "goodput_mbps": goodput if exact else None, "n_paths_with_data": 2,
                       "path_bytes": {"1": 10, "2": 10}, "paths_with_data": [1, 2],
                       "is_mptcp": {"client": 1, "server": 1}, "counters_fired": [],
                       "negotiated": {"sack": True, "ts": True, "wscale": "7,7"}}}


def results(tmp_path, recs):
    prof = impair_plan.scaled(profile(), "quick")
    plan = impair_plan.make_plan(prof, 1)
    d = tmp_path / "exp-mbtest-mptcp-20990101"
    (d / "runs").mkdir(parents=True)
    (d / "plan.json").write_text(json.dumps(plan))
    for r in recs:
        (d / "runs" / (r["id"] + ".json")).write_text(json.dumps(r))
    return str(d)


def test_analysis_takes_the_fallback_from_ss_in_older_records(tmp_path):
    ok = record("split-second-p1", 1, "ok", 9.0)
    # the raw parts outcome() is computed from, as a 6.1 run keeps them
    ok["settings"] = {"mptcp": 1, "transfer_bytes": 100}
    ok["transfer"] = {"client": xsum(sent=100, sha_s="h", is_mptcp=None),
                      "server": xsum(received=100, sha_r="h", is_mptcp=None)}
    ok["result"]["is_mptcp"] = {"client": None, "server": None}
    ok["ss"] = {"samples": 2, "last": {"mptcp": "ESTAB 0 0 a b\n\t subflows_max:2 fallback "
                                                  "remote_key token:1"}}
    plain = json.loads(json.dumps(ok))
    plain["ss"]["last"]["mptcp"] = "ESTAB 0 0 a b\n\t subflows:1 remote_key token:1"
    plain["id"] = plain["id"].replace("r01", "r02")
    tcp = json.loads(json.dumps(ok))
    tcp["settings"]["mptcp"] = 0
    tcp["id"] = tcp["id"].replace("r01", "r03")
    d = results(tmp_path, [ok, plain, tcp])
    got = {r["id"][-3:]: r["result"] for r in mptcp.load(d)}
    assert got["r01"]["outcome"] == "fallback" and got["r01"]["fallback"] == 1
    assert got["r01"]["counters_fired"] == [mptcp_outcome.SS_FALLBACK]
    assert got["r02"]["outcome"] == "ok" and got["r03"]["outcome"] == "ok"
    # the whole outcome is recomputed: bytes that differ are "broken"
    bad = json.loads(json.dumps(plain))
    bad["id"] = bad["id"].replace("r02", "r04")
    bad["transfer"]["server"]["received_sha256"] = "x"
    d2 = results(tmp_path / "b", [bad])
    assert mptcp.load(d2)[0]["result"]["outcome"] == "broken"
    # the raw record is left as it was
    raw = json.loads(open(os.path.join(d, "runs", ok["id"] + ".json")).read())
    assert raw["result"]["outcome"] == "ok"


def test_report_side_by_side(tmp_path):
    recs = [record("control", 1, "ok", 18.0), record("control", 2, "ok", 20.0),
            record("nat-p1", 1, "ok", 19.0), record("nat-p1", 2, "ok", 19.0),
            record("strip-syn-p1", 1, "fallback", 9.5, syn=("mss",),
                   counters={"MPCapableSYNTX": 1}),
            record("strip-syn-p1", 2, "fallback", 9.0, syn=("mss",)),
            record("strip-after-p1", 1, "reset", None, counters={"MPRstRx": 1}),
            record("strip-after-p1", 2, "ok", 18.0),
            record("seqrand-p1", 1, "ok", 30.0, flags=["cpu_saturated"])]
    d = results(tmp_path, recs)
    v = experiments.report(d)  # dispatched to analysis/mptcp.py
    assert v == {"works": 1, "works, falls back to TCP": 1, "mixed": 1}
    md = open(os.path.join(d, "summary.md")).read()
    assert "Are TCP Extensions Middlebox-proof?" in md
    rows = {ln.split("|")[3].strip(): ln for ln in md.splitlines()
            if ln.startswith("| ") and "`" in ln.split("|")[3]}
    assert "works" in rows["`nat-p1`"] and "1.00" in rows["`nat-p1`"]
    assert "| yes / no |" in rows["`nat-p1`"] and rows["`nat-p1`"].endswith("| agrees |")
    assert "works, falls back to TCP" in rows["`strip-syn-p1`"]
    assert rows["`strip-syn-p1`"].endswith("| agrees |")
    assert "RFC 8041" in md
    assert "0.49 [0.47, 0.50]" in rows["`strip-syn-p1`"]
    assert "mixed (ok 1, reset 1)" in rows["`strip-after-p1`"]
    assert "upstream row" in rows["`strip-after-p1`"]
    assert "not run" in rows["`split-first-p1`"]
    # the flagged run is counted, not used
    assert "1 flagged" in md and "`upload_seqrand-p1_r01` (cpu_saturated)" in md
    assert "| `seqrand-p1` |" not in md.split("## Evidence")[1].split("## TCP")[0]
    ev = md.split("## Evidence")[1]
    assert "client: MPCapableSYNTX 1; server: none" in ev and "client: MPRstRx 1" in ev
    h = json.load(open(os.path.join(d, "headline.json")))
    assert h["kind"] == "impair" and h["runs"] == 9 and h["flagged"] == 1
    csv = open(os.path.join(d, "runs.csv")).read().splitlines()
    assert csv[0].startswith("id,direction,config") and len(csv) == 10


def test_compare_with_a_known_cell():
    assert mptcp.compare({"works": True, "fallback": True}, True, True) == "agrees"
    assert mptcp.compare({"works": True, "fallback": False}, True, True) == "differs"
    assert mptcp.compare({"works": None, "fallback": None}, True, False) == \
        "MBtest's cell not available"
    assert mptcp.compare({"works": True, "fallback": None}, None, None) == "not run"


def test_two_kernels_in_one_table(tmp_path):
    d1 = results(tmp_path / "a", [record("control", 1, "ok", 18.0),
                                  record("strip-data-p1", 1, "fallback", 9.0)])
    d2 = results(tmp_path / "b", [record("control", 1, "ok", 18.0, kernel="6.12.9+deb12-amd64"),
                                  record("strip-data-p1", 1, "reset", None,
                                         kernel="6.12.9+deb12-amd64")])
    out = tmp_path / "both.md"
    assert mptcp.main([d1, d2, "--out", str(out)]) == 0
    md = out.read_text()
    lines = [ln for ln in md.splitlines() if "`strip-data-p1`" in ln and "| upload |" in ln]
    assert any("6.1.0-99-amd64" in ln and "falls back" in ln for ln in lines)
    assert any("6.12.9+deb12-amd64" in ln and "resets" in ln for ln in lines)


def test_kernel_guard(tmp_path):
    d = tmp_path / "r"
    (d / "runs").mkdir(parents=True)
    (d / "runs" / "x.json").write_text(json.dumps({"env": {"kernel": "0.0-other"}}))
    with pytest.raises(RuntimeError, match="start a new results directory"):
        gmptcp.check_kernel(str(d))
    gmptcp.check_kernel(str(tmp_path))  # no records: fine


def test_grouping_from_the_current_profile_only_if_it_fits_the_plan():
    prof = impair_plan.scaled(profile(), "quick")
    rows = mptcp.current(prof, "table1")
    assert any(r["row"] == "strip-join" for r in rows)
    old = copy.deepcopy(prof)
    del old["configs"]["strip-join-p2"]
    old["table1"] = [{"row": "nat", "configs": ["nat-p1"]}]
    assert mptcp.current(old, "table1") == old["table1"]
    # explanations written after a run reach its report; an old plan's
    # empty copy does not hide them
    old["explain"] = {}
    assert mptcp.current(old, "explain") == profile()["explain"] != {}
