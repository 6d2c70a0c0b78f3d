# SPDX-License-Identifier: GPL-2.0
"""tables/variants.py: a test that ran plain and as NAME@home gets a table
with the checks aligned; a run of home variants alone gets exit status 3,
no table and its reason on stderr (scripts/publish-vmtest-run then writes
no home.md)."""
from ecnproxy.tables import variants


def write_test(run, name, lines):
    d = run / "tests" / name
    d.mkdir(parents=True)
    (d / "log").write_text("".join("TEST: %s [ OK ]\n" % s for s in lines))


def test_pair_aligned(tmp_path, capsys):
    write_test(tmp_path, "proxy_modes", ["byte-exact 100 bytes", "ECT share 1.00"])
    write_test(tmp_path, "proxy_modes@home", ["byte-exact 100 bytes",
                                              "firewall dropped 0 invalid",
                                              "ECT share 0.99"])
    write_test(tmp_path, "home_offload@home", ["offload blocked 3"])
    (tmp_path / "durations.txt").write_text("proxy_modes 12\nproxy_modes@home 15\n")
    assert variants.main(["variant-table", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "| byte-exact # bytes | 100 (ok) | 100 (ok) |" in out
    assert "| firewall dropped # invalid | - | 0 (ok) |" in out
    assert "| ECT share # | 1.00 (ok) | 0.99 (ok) |" in out
    assert "| proxy_modes | 2 of 2 | 3 of 3 | 12 / 15 |" in out
    assert "home_offload" not in out


def test_variant_only(tmp_path, capsys):
    write_test(tmp_path, "proxy_dupack@home", ["ok 1"])
    write_test(tmp_path, "home_offload", ["ok 2"])
    assert variants.main(["variant-table", str(tmp_path)]) == 3
    cap = capsys.readouterr()
    assert cap.out == ""
    assert "no test" in cap.err
