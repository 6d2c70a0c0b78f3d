# SPDX-License-Identifier: GPL-2.0
"""Impairment experiments: the profiles, the plan, the rules a run writes,
and the report's claims and verdicts on synthetic results directories."""
import copy
import glob
import json
import os

import numpy as np
import pytest

from ecnproxy import impair_plan
from ecnproxy.analysis import experiments, stats

PROFILES = sorted(glob.glob(os.path.join(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))), "profiles", "exp-*.json")))


def load(path):
    with open(path) as f:
        return json.load(f)


@pytest.mark.parametrize("path", PROFILES, ids=os.path.basename)
def test_every_profile_is_valid_and_plans(path):
    prof = load(path)
    assert impair_plan.check(prof) == []
    for scale in ("quick", "full"):
        p = impair_plan.scaled(prof, scale)
        plan = impair_plan.make_plan(p, p["seed"])
        ids = [r["id"] for r in plan["runs"]]
        assert len(ids) == len(set(ids))
        cells = sum(len(impair_plan.points(p, c)) for c in p["configs"]) * len(p["directions"])
        assert len(ids) == cells * p["reps"]
        # every claim's selectors name configurations that exist
        for cl in p["claims"]:
            chk = cl["check"]
            for k in ("num", "den", "a", "b", "sel"):
                if k in chk:
                    assert chk[k]["config"] in p["configs"], (cl["id"], k)
        # every rule line is what the module's grammar starts with
        for c in p["configs"]:
            for r in impair_plan.config_settings(p, c)["rules"]:
                assert r.split()[0] in ("dir", "in", "out", "flags", "family", "src", "dst",
                                        "sport", "dport", "after", "strip", "wscale", "mss",
                                        "mss-clamp", "window", "seqrand", "ecn-block",
                                        "ecn-clear-syn", "ecn-set", "ecn-bleach", "drop",
                                        "split", "coalesce", "dataseg")
    assert impair_plan.scaled(prof, "full")["name"] == prof["name"] + "-full"
    assert impair_plan.scaled(prof, "quick")["name"] == prof["name"]


def minimal():
    return {"name": "exp-t", "kind": "impair", "study": "s", "directions": ["upload"],
            "duration_s": 5, "reps": 2, "defaults": {"delay_ms": 20},
            "configs": {"a": {"doc": "a"}, "b": {"doc": "b", "rules": ["seqrand"],
                                                 "client": {"sack": 0}, "sweep": {}}},
            "sweep": {"loss_pct": [0, 1], "delay_ms": [0, 50]},
            "claims": [], "fidelity": {"min_cpu_idle": 0.05}, "seed": 1,
            "scales": {"quick": {"reps": 1, "sweep": {"loss_pct": [1]}}}}


@pytest.mark.parametrize("path", PROFILES, ids=os.path.basename)
def test_rerun_command_names_an_experiment_scripts_experiments_knows(path):
    # the summary's "rerun with" once said EXPERIMENTS=exp-NAME, which
    # scripts/experiments refuses: it takes the name after "exp-"
    prof = load(path)
    have = os.path.basename(path)[len("exp-"):-len(".json")]
    for scale in ("quick", "full"):
        cmd = impair_plan.command(impair_plan.scaled(prof, scale))
        assert cmd == "make experiments EXPERIMENTS=%s EXP_SCALE=%s" % (have, scale)


def test_rerun_command_of_an_impair_profile_that_is_no_experiment():
    prof = load(os.path.join(os.path.dirname(PROFILES[0]), "impair-smoke.json"))
    assert impair_plan.base_name(impair_plan.scaled(prof, "full")) == "impair-smoke"
    assert impair_plan.command(impair_plan.scaled(prof, "quick")) == \
        "make matrix PROFILE=impair-smoke EXP_SCALE=quick"


def test_check_rejects_bad_profiles():
    assert impair_plan.check(minimal()) == []
    bad = [("kind", "matrix"), ("directions", ["sideways"]), ("reps", 0),
           ("sweep", {"colour": [1]}), ("sweep", {"loss_pct": []}),
           ("sweep", {"loss_pct": [1, 1]}), ("defaults", {"colour": 1}),
           ("defaults", {"client": {"cc": "bbr"}}), ("defaults", {"rules": ["a\nb"]}),
           ("defaults", {"loss_pct": -1}), ("defaults", {"server": {"rmem": 4096}}),
           ("defaults", {"server": {"rmem": "1M"}}), ("defaults", {"client": {"rmem": 1 << 31}}),
           ("configs", {}),
           ("configs", {"x": {"rules": []}}), ("scales", {"huge": {}}),
           ("claims", [{"id": "x"}])]
    for k, v in bad:
        p = minimal()
        p[k] = v
        assert impair_plan.check(p), (k, v)
    p = minimal()
    p["configs"]["a"]["server"] = {"rmem": 262140}
    assert impair_plan.check(p) == []
    p = minimal()
    p["configs"]["a"]["reorder_pct"] = 1
    p["sweep"] = {"jitter_ms": [0, 2]}
    assert any("one at a time" in e for e in impair_plan.check(p))
    p = minimal()
    del p["study"]
    assert impair_plan.check(p) == ["missing 'study'"]
    with pytest.raises(ValueError):
        impair_plan.scaled(minimal(), "medium")


def test_plan_settings_and_sweeps():
    p = impair_plan.scaled(minimal(), "quick")
    plan = impair_plan.make_plan(p, 3)
    assert plan["feedback"] is None
    runs = {r["id"]: r for r in plan["runs"]}
    # a: the quick scale's sweep replaces the profile's (loss {1}, delay
    # from the defaults); b: its own empty sweep
    assert sorted(runs) == ["upload_a_l1pct_r01", "upload_b_r01"]
    a = runs["upload_a_l1pct_r01"]["settings"]
    assert a["delay_ms"] == 20 and a["loss_pct"] == 1 and a["rules"] == []
    full = impair_plan.make_plan(impair_plan.scaled(minimal(), "full"), 3)
    assert sorted(r["id"] for r in full["runs"] if r["rep"] == 1) == [
        "upload_a_d0ms_l0pct_r01", "upload_a_d0ms_l1pct_r01", "upload_a_d50ms_l0pct_r01",
        "upload_a_d50ms_l1pct_r01", "upload_b_r01"]
    assert a["client"] == {"ecn": 0, "sack": 1, "ts": 1}
    b = runs["upload_b_r01"]["settings"]
    assert b["client"] == {"ecn": 0, "sack": 0, "ts": 1} and b["delay_ms"] == 20
    assert b["rules"] == ["seqrand"]
    # the profile's settings are not shared with the runs'
    b["rules"].append("x")
    assert minimal()["configs"]["b"]["rules"] == ["seqrand"]
    assert [r["id"] for r in impair_plan.make_plan(p, 3)["runs"]] == \
        [r["id"] for r in plan["runs"]]
    assert impair_plan.point_tag({"loss_pct": 2.5}) == "l2p5pct"


def test_rules_text():
    st = dict(impair_plan.BASE, rules=["flags syn strip sackok"], loss_pct=2.5)
    up = impair_plan.rules_text(st, "upload")
    assert up == "flush\nflags syn strip sackok\ndir initiator after 20 drop 0.025000\n"
    assert "dir responder after 20 drop 0.025000" in impair_plan.rules_text(st, "download")
    assert impair_plan.rule_lines(up) == 2
    # what the module prints back: flush, then "RULE # hits N"
    assert impair_plan.rule_lines("flush\nflags syn strip sackok # hits 2\n"
                                  "dir initiator after 20 drop 0.025 # hits 0\n") == 2
    assert impair_plan.rules_text(impair_plan.BASE, "upload") == "flush\n"


def rec(config, rep, goodput, point=None, direction="upload", flags=(), **res):
    point = point or {}
    r = {"id": "%s_%s_%s_r%02d" % (direction, config, impair_plan.point_tag(point), rep),
         "ok": True, "params": {"direction": direction, "config": config, "point": point,
                                "rep": rep, "duration_s": 8},
         "result": dict({"goodput_mbps": goodput, "retrans_segs": 10, "rto": 0,
                         "connect_s": 0.05, "ecn_negotiated": 1, "sender_rtt_ms_median": 50.0,
                         "stall_causes": {"rto_double": {"count": 1, "time": 0.5}},
                         "red": {"marked": 1, "early": 0, "pdrop": 0}}, **res),
         "fidelity": {"flags": list(flags), "cpu_idle_min": 0.3}}
    return r


def write_dir(tmp_path, prof, recs):
    d = tmp_path / prof["name"]
    (d / "runs").mkdir(parents=True)
    plan = impair_plan.make_plan(prof, 1)
    (d / "plan.json").write_text(json.dumps(plan))
    for r in recs:
        (d / "runs" / (r["id"] + ".json")).write_text(json.dumps(r))
    return str(d)


def claim_prof(claims, sweep=None):
    p = minimal()
    p["configs"] = {"ref": {"doc": "reference"}, "bad": {"doc": "impaired",
                                                        "rules": ["seqrand"]}}
    p["sweep"] = sweep or {}
    p["claims"] = claims
    p["reps"] = 4
    return impair_plan.scaled(p, "full")


def test_ratio_claims_verdicts(tmp_path):
    claims = [
        {"id": "collapse", "paper": "p", "source": "s",
         "check": {"type": "ratio", "metric": "goodput_mbps", "num": {"config": "bad"},
                   "den": {"config": "ref"}, "max": 0.5}},
        {"id": "same", "paper": "p", "source": "s",
         "check": {"type": "ratio", "metric": "goodput_mbps", "num": {"config": "bad"},
                   "den": {"config": "ref"}, "min": 0.9, "max": 1.1}},
        {"id": "report", "paper": "p", "source": "s",
         "check": {"type": "ratio", "metric": "goodput_mbps", "num": {"config": "bad"},
                   "den": {"config": "ref"}}},
        {"id": "not", "paper": "p", "source": "s", "explain": "why", "check": {"type": "none"}},
    ]
    prof = claim_prof(claims)
    recs = [rec("ref", i, g) for i, g in enumerate([9.0, 9.2, 9.1, 8.9], 1)] + \
        [rec("bad", i, g) for i, g in enumerate([1.0, 1.1, 0.9, 1.2], 1)] + \
        [rec("bad", 5, 9.0, flags=["cpu_saturated"])]
    d = write_dir(tmp_path, prof, recs)
    v = experiments.report(d)
    md = open(os.path.join(d, "summary.md")).read()
    rows = {ln.split("|")[1].strip(): ln for ln in md.splitlines() if ln.startswith("| ")}
    # 4 x 4: the whole range of the 16 ratios covers 1 - 2/70 >= 90 %
    assert "| reproduced |" in rows["collapse"]
    assert "| not reproduced |" in rows["same"]
    assert "| measured |" in rows["report"]
    assert "not measured" in rows["not"] and "*why*" in md
    assert v == {"reproduced": 1, "not reproduced": 1, "measured": 1, "not measured": 1}
    # the flagged run is listed, counted and not used
    assert "1 flagged" in md and "`upload_bad__r05` (cpu_saturated)" in md
    assert "| upload | bad | 4 |" in md
    assert os.path.exists(os.path.join(d, "goodput.png"))
    h = json.load(open(os.path.join(d, "headline.json")))
    assert h["kind"] == "impair" and h["runs"] == 9 and h["flagged"] == 1
    assert "rto_double" in md


def test_few_runs_get_a_question_mark():
    df = experiments.pd.DataFrame([experiments.run_row(r) for r in
                                   [rec("ref", 1, 9.0), rec("ref", 2, 9.5),
                                    rec("bad", 1, 1.0), rec("bad", 2, 1.5)]])
    cl = {"id": "c", "paper": "p", "source": "s",
          "check": {"type": "ratio", "metric": "goodput_mbps", "num": {"config": "bad"},
                    "den": {"config": "ref"}, "max": 0.5}}
    (row,) = experiments.evaluate(cl, df, ["upload"])
    assert row["coverage"] < experiments.FIRM
    assert row["verdict"] == "reproduced?"
    cl["check"]["max"] = 0.05
    assert experiments.evaluate(cl, df, ["upload"])[0]["verdict"] == "not reproduced?"


def test_per_skip_diff_value_and_bound():
    recs = []
    for i in range(1, 5):
        for loss in (0, 1):
            recs.append(rec("ref", i, 9.0 + 0.1 * i, {"loss_pct": loss}, connect_s=0.04 + 0.001 * i,
                            sack_discard=0))
            recs.append(rec("bad", i, (9.0 if loss == 0 else 2.0) + 0.1 * i, {"loss_pct": loss},
                            connect_s=1.04 + 0.001 * i, sack_discard=5 * loss))
    df = experiments.pd.DataFrame([experiments.run_row(r) for r in recs])
    cl = {"id": "c", "paper": "p", "source": "s",
          "check": {"type": "ratio", "metric": "goodput_mbps", "num": {"config": "bad"},
                    "den": {"config": "ref"}, "max": 0.5, "per": ["loss_pct"],
                    "skip": {"loss_pct": [0]}}}
    rows = experiments.evaluate(cl, df, ["upload"])
    assert [r["point"] for r in rows] == [{"loss_pct": 1}]
    assert rows[0]["verdict"] == "reproduced"
    cl["check"]["skip"] = {}
    rows = experiments.evaluate(cl, df, ["upload"])
    assert [r["verdict"] for r in rows] == ["not reproduced", "reproduced"]
    diff = {"id": "d", "paper": "p", "source": "s",
            "check": {"type": "diff", "metric": "connect_s", "a": {"config": "bad"},
                      "b": {"config": "ref"}, "min": 0.8, "max": 1.5}}
    (row,) = experiments.evaluate(diff, df, ["upload"])
    assert abs(row["estimate"] - 1.0) < 1e-9 and row["verdict"] == "reproduced"
    val = {"id": "v", "paper": "p", "source": "s",
           "check": {"type": "value", "metric": "sack_discard", "sel": {"config": "bad"},
                     "min": 1, "per": ["loss_pct"]}}
    assert [r["verdict"] for r in experiments.evaluate(val, df, ["upload"])] == \
        ["not reproduced", "reproduced"]
    # bound: 65535 B x 8 / 50 ms = 10.49 Mbit/s; 2.1-2.4 Mbit/s is 0.2-0.23 of it
    bnd = {"id": "b", "paper": "p", "source": "s",
           "check": {"type": "bound", "metric": "goodput_mbps", "sel": {"config": "bad"},
                     "window_bytes": 65535, "min": 0.5, "max": 1.1, "per": ["loss_pct"]}}
    rows = experiments.evaluate(bnd, df, ["upload"], rate_mbps=100)
    assert [r["verdict"] for r in rows] == ["reproduced", "not reproduced"]
    assert abs(rows[1]["estimate"] - 2.25 / 10.48560) < 1e-3
    # a cap above the bottleneck rate is not judged
    assert experiments.evaluate(bnd, df, ["upload"], rate_mbps=10) == []


def test_hl_shift_matches_brute_force():
    rng = np.random.default_rng(1)
    a, b = rng.normal(1, 0.1, 6), rng.normal(0, 0.1, 5)
    est, lo, hi, cov = experiments.hl_shift(a, b)
    d = sorted(x - y for x in a for y in b)
    k, cov2 = stats.hl_level(6, 5)
    assert est == pytest.approx(np.median(d)) and lo == d[k - 1] and hi == d[-k]
    assert cov == cov2 >= 0.95
    assert all(x != x for x in experiments.hl_shift([], [1])[:3])


def test_hl_shift_coverage_by_simulation():
    """The shift interval covers the true shift at least at its stated level
    (exponential samples, n = m = 5, shift 0.3)."""
    rng = np.random.default_rng(7)
    hits = 0
    R = 2000
    for _ in range(R):
        a = rng.exponential(1, 5) + 0.3
        b = rng.exponential(1, 5)
        _, lo, hi, cov = experiments.hl_shift(a, b)
        hits += lo <= 0.3 <= hi
    assert hits / R >= cov - 0.02


def test_verdict_edges():
    v = experiments.verdict
    assert v(0.1, 0.2, 0.95, 0.15, (None, 0.5)) == "reproduced"
    assert v(0.4, 0.6, 0.95, 0.5, (None, 0.5)) == "inconclusive"
    assert v(0.6, 0.7, 0.95, 0.65, (None, 0.5)) == "not reproduced"
    assert v(float("nan"), 1, 1, 1, (0, 1)) == "no data"
    assert v(0.6, 0.7, 0.5, 0.65, (0.5, None)) == "reproduced?"
    assert copy.deepcopy(v(1, 2, 1, 1.5, (None, None))) == "measured"


def test_peak_rate():
    # 200 ms intervals: one burst of 250 kB in the last; 2 s windows
    s = [[0.2 * (i + 1), 0, 0, 0, 0] for i in range(10)] + [[2.2, 250000, 0, 0, 0]]
    assert experiments.peak_mbps(s) == pytest.approx(250000 * 8 / 2.0 / 1e6)
    steady = [[0.2 * (i + 1), 25000, 0, 0, 0] for i in range(20)]
    assert experiments.peak_mbps(steady) == pytest.approx(1.0)
    # shorter than the span: no peak
    assert experiments.peak_mbps(steady[:5]) != experiments.peak_mbps(steady[:5])
    assert experiments.peak_mbps([]) != experiments.peak_mbps([])


def test_transit_matches_packets_across_the_node():
    from ecnproxy.analysis import transit

    def pkt(t, seq, ack=1, flags=0x10, plen=1448, src="a", dst="b", sp=1, dp=2):
        return (t, 0, src, dst, sp, dp, seq, ack, flags, 100, plen)
    a = [pkt(1.0, 1), pkt(1.1, 1449), pkt(1.2, 2897),           # data in at a
         pkt(1.35, 1, 2897, plen=0, src="b", dst="a", sp=2, dp=1),  # ACK out at a
         pkt(1.5, 9999)]                                         # dropped by the node
    b = [pkt(1.0002, 1), pkt(1.1004, 1449), pkt(1.2003, 2897),
         pkt(1.3, 1, 2897, plen=0, src="b", dst="a", sp=2, dp=1),
         pkt(1.6, 7777)]                                         # made by the node
    r = transit.transit(a, b)
    assert r["a2b"]["n"] == 3 and r["a2b"]["p50_us"] == pytest.approx(300, abs=0.5)
    assert r["a2b"]["p95_us"] == pytest.approx(400, abs=0.5)
    assert r["b2a"]["n"] == 1 and r["b2a"]["p50_us"] == pytest.approx(50000, abs=1)
    assert r["a2b"]["unmatched"] == 1 and r["b2a"]["unmatched"] == 1
    # a key seen twice (a retransmission) is left out on both sides
    r = transit.transit(a + [pkt(2.0, 1)], b + [pkt(2.0003, 1)])
    assert r["a2b"]["n"] == 2
    assert transit.transit([], [])["a2b"] == {"n": 0, "unmatched": 0, "p50_us": None,
                                              "p95_us": None, "mean_us": None}


def test_claims_come_from_the_profile_only_for_the_same_design():
    path = [p for p in PROFILES if p.endswith("exp-ecn.json")][0]
    prof = impair_plan.scaled(load(path), "quick")
    planned = copy.deepcopy(prof)
    planned["claims"] = []
    cur, where = experiments.current_profile(planned)
    assert where == "scripts/profiles/exp-ecn.json" and cur["claims"] == prof["claims"]
    changed = copy.deepcopy(planned)
    changed["sweep"] = {"loss_pct": [1]}
    cur, where = experiments.current_profile(changed)
    assert cur["claims"] == [] and where.startswith("plan.json")
    rules = copy.deepcopy(planned)
    rules["configs"]["ce-all"]["rules"] = ["ecn-set ect0"]
    assert experiments.current_profile(rules)[0]["claims"] == []
    doc = copy.deepcopy(planned)
    doc["configs"]["ce-all"]["doc"] = "reworded"
    assert experiments.current_profile(doc)[0]["claims"] == prof["claims"]
    missing = dict(planned, name="exp-no-such-thing")
    assert experiments.current_profile(missing) == (missing, "plan.json")


def test_survival_settings_checked():
    p = minimal()
    p["configs"]["a"].update(idle_s=15, reload=1, module_timeout_s=5)
    assert impair_plan.check(p) == []
    for k, v in (("reload", 2), ("phase_bytes", 0), ("wake_timeout_s", 1.5),
                 ("module_timeout_s", -1)):
        q = minimal()
        q["configs"]["a"][k] = v
        assert impair_plan.check(q), (k, v)
    # a reload happens during the silence: none without one
    q = minimal()
    q["configs"]["a"]["reload"] = 1
    assert any("reload needs idle_s" in e for e in impair_plan.check(q))
    q["sweep"] = {"idle_s": [0, 15]}
    assert any("reload needs idle_s" in e for e in impair_plan.check(q))
    q["sweep"] = {"idle_s": [2, 15]}
    assert impair_plan.check(q) == []
    assert impair_plan.point_tag({"idle_s": 15}) == "i15s"


def test_survival_outcomes_counted_and_judged(tmp_path):
    claims = [{"id": "dies", "paper": "p", "source": "s",
               "check": {"type": "value", "metric": "broken", "sel": {"config": "bad"},
                         "per": ["idle_s"], "skip": {"idle_s": [2]}, "min": 1, "max": 1}},
              {"id": "lives", "paper": "p", "source": "s",
               "check": {"type": "value", "metric": "survived", "sel": {"config": "ref"},
                         "per": ["idle_s"], "min": 1, "max": 1}}]
    prof = claim_prof(claims, sweep={"idle_s": [2, 15]})

    def srec(config, rep, idle, outcome):
        return rec(config, rep, None, point={"idle_s": idle}, survival=outcome,
                   survived=int(outcome == "survived"), broken=int(outcome == "broken"),
                   degraded=int(outcome == "degraded"), wake_s=0.5)
    recs = [srec("ref", i, t, "survived") for i in (1, 2) for t in (2, 15)] + \
        [srec("bad", i, 2, "survived") for i in (1, 2)] + \
        [srec("bad", 1, 15, "broken"), srec("bad", 2, 15, "survived")]
    d = write_dir(tmp_path, prof, recs)
    experiments.report(d)
    md = open(os.path.join(d, "summary.md")).read()
    # counts, not medians, of the outcomes
    assert "| upload | bad | 15 | 2 |" in md
    row = next(ln for ln in md.splitlines() if ln.startswith("| upload | bad | 15 |"))
    assert "1 of 2" in row
    rows = [ln for ln in md.splitlines() if ln.startswith("| dies ")]
    assert len(rows) == 1 and "idle_s=15" in rows[0] and "| inconclusive |" in rows[0]
    rows = [ln for ln in md.splitlines() if ln.startswith("| lives ")]
    assert len(rows) == 2 and all("| reproduced |" in r for r in rows)
    # no goodput: the outcomes are plotted instead
    assert "survival.png" in md and not os.path.exists(os.path.join(d, "goodput.png"))
    assert open(os.path.join(d, "survival.png"), "rb").read(8) == b"\x89PNG\r\n\x1a\n"
