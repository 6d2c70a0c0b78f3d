# SPDX-License-Identifier: GPL-2.0
"""A run during which other work took the host's CPU is known: the host's
sample carries the CPU seconds of everything but QEMU (host/shard.py),
the share over a run is computed from a run's first and last samples
(analysis/provenance.py), the report says how many runs were made on a
busy host, and `scripts/ecnproxy redo` moves them aside so that a resume
makes them again."""
import json

from ecnproxy.analysis import provenance
from ecnproxy.host import redo, shard

def sample(t, other, cpus=2):
    return {"host": "h", "cpus": cpus, "sample": [t, 1.0, 1], "other_cpu_s": other}


def share(*samples):
    return provenance.host_busy_share({"host_load": list(samples)})


def test_process_times():
    # the command may hold spaces and parentheses; utime, stime, cutime
    # and cstime are fields 14 to 17
    text = "123 (qemu (x) y) S " + " ".join(str(i) for i in range(4, 14)) + " 700 300 20 30 9"
    assert shard.proc_cpu_s(text) == ("qemu (x) y", 1050 / shard.CLK_TCK)


def test_host_sample_has_other_cpu_seconds():
    s, other = shard.host_sample()
    assert len(s) == 3 and other >= 0


def test_share_over_a_run():
    # 10 s on 2 CPUs: 20 CPU seconds; 3 of them other work
    assert share(sample(100, 50.0), sample(110, 53.0)) == 0.15
    assert share(sample(100, 50.0), sample(100, 53.0)) is None
    assert share(sample(100, 50.0)) is None
    # samples of a host that did not measure it (older records, and
    # d68f579's, whose 4-element samples used a measure that read 0)
    old = {"host": "h", "cpus": 2, "sample": [100, 1.0, 1]}
    assert share(old, sample(110, 3.0)) is None
    assert share({"host": "h", "cpus": 2, "sample": [100, 1.0, 1, 5.0]},
                 {"host": "h", "cpus": 2, "sample": [110, 1.0, 1, 9.0]}) is None
    # a process reaped by no live one makes the difference negative: no
    # work counted
    assert share(sample(100, 50.0), sample(110, 40.0)) == 0.0
    # a QEMU guest ended during the run (JOBS=2): its CPU time moved to its
    # parent's reaped children's, so the share is not known
    assert share({"host": "h", "cpus": 2, "sample": [100, 1.0, 2], "other_cpu_s": 50.0},
                 {"host": "h", "cpus": 2, "sample": [110, 1.0, 1], "other_cpu_s": 350.0}) is None
    assert share({"host": "h", "cpus": 2, "sample": [100, 1.0, 1], "other_cpu_s": 50.0},
                 {"host": "h", "cpus": 2, "sample": [110, 1.0, 2], "other_cpu_s": 51.0}) == 0.05


def test_report_line_counts_busy_runs():
    recs = [{"origin": {"host": "h", "session_id": "s"},
             "host_load": [sample(0, 0.0), sample(10, x)]} for x in (0.4, 4.0, 6.0)]
    line = provenance.line(recs)
    assert "other work on the host took up to 30 % of its CPU time" in line
    assert "more than 10 % in 2 of 3 runs (a busy host" in line
    # records without the measure say nothing of it
    assert "other work" not in provenance.line([{"origin": {"host": "h", "session_id": "s"}}])


def write_run(d, rid, flags, busy=0.01):
    (d / "runs").mkdir(parents=True, exist_ok=True)
    (d / "runs" / (rid + ".json")).write_text(json.dumps(
        {"id": rid, "fidelity": {"flags": flags},
         "host_load": [sample(0, 0.0), sample(10, 20.0 * busy)]}))


def test_redo_moves_flagged_and_named_runs(tmp_path, capsys):
    write_run(tmp_path, "a", [], busy=0.4)
    write_run(tmp_path, "b", [])
    write_run(tmp_path, "c", ["cpu_saturated"])
    write_run(tmp_path, "d", ["capture_drops"])
    assert redo.main([str(tmp_path), "--dry-run", "--flag", "capture_drops"]) == 0
    assert "busy host (other work took 40 % of its CPU)" in capsys.readouterr().out
    assert sorted(p.name for p in (tmp_path / "runs").iterdir()) == \
        ["a.json", "b.json", "c.json", "d.json"]
    assert redo.main([str(tmp_path), "--flag", "capture_drops"]) == 0
    assert (tmp_path / "redone" / "d.json").exists()
    assert sorted(p.name for p in (tmp_path / "runs").iterdir()) == ["b.json", "c.json"]
    assert redo.main([str(tmp_path), "--id", "b"]) == 0
    assert sorted(p.name for p in (tmp_path / "runs").iterdir()) == ["c.json"]
    assert sorted(p.name for p in (tmp_path / "redone").iterdir()) == \
        ["a.json", "b.json", "d.json"]
    # made again on a busy host again: the first copy is kept
    write_run(tmp_path, "a", [], busy=0.3)
    assert redo.main([str(tmp_path)]) == 0
    assert sorted(p.name for p in (tmp_path / "redone").iterdir()) == \
        ["a.1.json", "a.json", "b.json", "d.json"]
    assert redo.main([str(tmp_path), "--id", "zz"]) == 2
    assert "no record zz" in capsys.readouterr().err
