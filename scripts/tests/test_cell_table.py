# SPDX-License-Identifier: GPL-2.0
"""tables/cells.py: the README's per-cell tables say what ratios.csv says,
the no-harm rule is judged against max(1, bothecn / noecn) on the
interval, and a README block that drifted from its data is caught (the
real README's blocks are checked too)."""
import csv
import os

from ecnproxy.tables import cells

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FIELDS = ["metric", "kind", "direction", "cross", "load", "num", "den", "ratio", "low", "high",
          "coverage", "verdict"]


def write(d, rows):
    d.mkdir(parents=True, exist_ok=True)
    with open(d / "ratios.csv", "w", newline="") as f:
        w = csv.DictWriter(f, FIELDS)
        w.writeheader()
        for r in rows:
            w.writerow(dict(zip(FIELDS, r)))


def row(load, num, den, ratio, low, high, verdict="", cross="off", cov=0.96):
    return ["completion_s", "x", "upload", cross, load, num, den, ratio, low, high, cov, verdict]


def parity(tmp_path):
    write(tmp_path / "delay-0ms", [
        row("1", "srvecn+proxy", "bothecn", 1.02, 1.00, 1.04, "met"),
        row("1", "srvecn+proxy", "noecn", 0.97, 0.95, 0.99),
        row("1", "bothecn", "noecn", 0.95, 0.94, 0.96),
        row("series", "srvecn+proxy", "bothecn", 1.20, 1.10, 1.30, "NOT met"),
        row("series", "srvecn+proxy", "noecn", 1.08, 1.04, 1.12),
        row("series", "bothecn", "noecn", 1.03, 1.01, 1.05),
        row("3", "srvecn+proxy", "bothecn", 1.04, 0.99, 1.09, "undecided"),
        row("3", "srvecn+proxy", "noecn", 1.01, 0.99, 1.03),
        row("3", "bothecn", "noecn", 1.02, 1.01, 1.03),
        row("all", "srvecn+proxy", "bothecn", 1.09, 1.0, 1.2, "cells disagree"),
        row("1", "srvecn+proxy+drop", "bothecn", 1.10, 1.05, 1.15)])
    write(tmp_path / "delay-20ms", [
        row("1", "srvecn+proxy", "bothecn", 0.99, 0.97, 1.01, "met", cross="on"),
        row("3", "srvecn+proxy", "bothecn", 0.99, 0.94, 1.04, "undecided", cross="on",
            cov=0.6667)])


def test_table(tmp_path):
    parity(tmp_path)
    out = cells.render(str(tmp_path))
    lines = out.splitlines()
    head = [l for l in lines if l.startswith("| cross")][0]
    # loads in numeric order, the series last, no pooled column
    assert head.index("load 1") < head.index("load 3") < head.index("series")
    assert "all" not in head
    # cross traffic on first
    assert lines.index([l for l in lines if l.startswith("| on | 20 ms")][0]) < \
        lines.index([l for l in lines if l.startswith("| off | 0 ms")][0])
    first = [l for l in lines if l.startswith("| off | 0 ms")][0]
    assert "1.02 [1.00, 1.04] met" in first
    assert "1.04 [0.99, 1.09] undecided" in first
    assert "**1.20 [1.10, 1.30] NOT met**" in first
    harm = lines[lines.index(first) + 1]
    # load 1: 0.99 <= max(1, 0.95) = 1; series: 1.04 > max(1, 1.03);
    # load 3: [0.99, 1.03] straddles 1.02
    assert "0.97 [0.95, 0.99] vs 1.00 met" in harm
    assert "**1.08 [1.04, 1.12] vs 1.03 NOT met**" in harm
    assert "1.01 [0.99, 1.03] vs 1.02 undecided" in harm
    drop = lines[lines.index(first) + 2]
    assert "1.10 [1.05, 1.15]" in drop
    # an interval of 2 runs against 2 is not labelled 95 %: its level is
    # printed, as in summary.md
    on = [l for l in lines if l.startswith("| on | 20 ms")][0]
    assert "0.99 [0.97, 1.01] met" in on
    assert "0.99 [0.94, 1.04] (67 %) undecided" in on


def test_harm_needs_level():
    v, b = cells.harm_verdict({"low": 0.5, "high": 0.6, "coverage": 0.5}, {"ratio": 0.9})
    assert (v, b) == ("undecided", 1.0)


def test_check_block(tmp_path, capsys):
    parity(tmp_path / "res")
    table = cells.render(str(tmp_path / "res")).rstrip("\n")
    readme = tmp_path / "README.md"
    readme.write_text("intro\n<!-- cell-table res -->\n%s\n<!-- /cell-table -->\nend\n" % table)
    assert cells.main(["--check", str(readme), "--root", str(tmp_path)]) == 0
    readme.write_text(readme.read_text().replace("1.02 [1.00, 1.04]", "1.01 [1.00, 1.04]"))
    assert cells.main(["--check", str(readme), "--root", str(tmp_path)]) == 1
    assert "differs from its data" in capsys.readouterr().err


def test_no_ratios(tmp_path, capsys):
    assert cells.main([str(tmp_path)]) == 1
    assert "no ratios.csv" in capsys.readouterr().err


def test_readme_blocks_match_their_data():
    path = os.path.join(ROOT, "README.md")
    with open(path) as f:
        found = cells.blocks(f.read())
    if found:
        assert cells.main(["--check", path, "--root", ROOT]) == 0


def test_sessions_one_row_per_directory(tmp_path):
    import json
    for i, (r1, r3) in enumerate(((0.95, 1.04), (1.05, 1.07))):
        d = tmp_path / ("s%d" % i)
        write(d, [row("3", "srvecn+proxy", "bothecn", r3, r3 - 0.02, r3 + 0.02, cross="on"),
                  row("1", "srvecn+proxy", "bothecn", r1, r1 - 0.01, r1 + 0.01, cross="on"),
                  row("1", "srvecn+proxy+rwnd", "bothecn", 1.1, 1.0, 1.2, cross="on"),
                  row("all", "srvecn+proxy", "bothecn", 1.0, 0.9, 1.1, cross="on")])
        (d / "about.json").write_text(json.dumps({"commit": "abcdef0123%d" % i}))
    out = cells.sessions([str(tmp_path / "s0"), str(tmp_path / "s1")], "upload").splitlines()
    head = out[0]
    # the plan's mode first, loads in numeric order, no pooled column
    assert head.index("`srvecn+proxy / bothecn` load 1") < \
        head.index("`srvecn+proxy / bothecn` load 3") < head.index("srvecn+proxy+rwnd")
    assert "load all" not in head
    assert out[2].startswith("| `s0` | abcdef01 | 0.95 [0.94, 0.96] | 1.04 [1.02, 1.06]")
    assert out[3].startswith("| `s1` | abcdef01 | 1.05 [1.04, 1.06] | 1.07 [1.05, 1.09]")
    assert cells.main(["--sessions", str(tmp_path / "nope")]) == 1
