# SPDX-License-Identifier: GPL-2.0
"""scripts/debugtest --list (the parts of a debug run) and
scripts/publish-debugtest on synthetic scripts/debugtest outputs: what is
copied (no captures, big files compressed), and the summary's verdicts,
which must come from the run's own TAP lines (run.tap)."""
import json
import lzma
import os
import re
import shutil
import subprocess

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(os.path.dirname(HERE), "publish-debugtest")


# the suite guests' settings (scripts/debugtest): a 400kbit bottleneck and
# the transfers that cross it sized for it
SENV = ("TB_RATE_LOW=400kbit TB_RATE_HIGH=400kbit TB_SPOOF_UP=8000000 TB_SPOOF_FAMILIES=4,6 "
        "TB_INJECT_UP=2000000 TB_INJECT_CROSS=160K TB_IDLE_DOWN=1000000 TB_IDLE_UP=1000000")


def fake_run(root, name, guest, ok_lines, bad_lines, reported, secs=1234):
    run = root / name
    g = run / guest
    (g / "tests" / "fuzz").mkdir(parents=True)
    (run / "kernel.txt").write_text("key: abc\nrelease: 6.1.192\n")
    (run / "config").write_text("CONFIG_KASAN=y\n")
    (run / "modules.log").write_text("LD [M] tcpfwd.ko\n")
    (run / f"{guest}.log").write_text("guest output\n")
    tap = [f"ok - fuzz: {t}" for t in ok_lines] + [f"not ok - fuzz: {t}" for t in bad_lines]
    (g / "results.tap").write_text("\n".join(tap) + "\n")
    (g / "endcheck.log").write_text(
        "endcheck: baseline: 0 boot-time reports cleared\n"
        "endcheck: kmemleak scan before unloading the modules: 0 reports\n"
        "endcheck: rmmod impair\n"
        f"endcheck: kmemleak scan after unloading the modules: {2 if reported else 0} reports\n")
    (g / "tests" / "fuzz" / "log").write_text(
        "INFO: seed 1, 100 packets: per mode M 12, O 13, S 5; unload round 10\n"
        "TEST: none: out_of_window counts the 5 blind spoofs exactly [ OK ]\n")
    (g / "tests" / "fuzz" / "cap.pcap").write_bytes(b"\0" * 100)
    # over 1 MB: compressed when published; the boot's end is read from it
    (g / "console.log").write_text(
        "[    0.000000] Linux version 6.1.192\n"
        "[  489.272665] virtme-ng-init: starting script\n"
        "[  806.903564] virtme-ng-init: starting script (console fallback)\n" +
        "x" * (1024 * 1024 + 10))
    (g / "durations.txt").write_text("fuzz 1800 0\nflood 64 1\n")
    n = len(tap)
    verdict = (f"not ok {n + 1} - {guest}: the debug kernel reported a problem "
               f"(see /work/build/debugtest/{name}/{guest}.log)"
               if reported else f"ok {n + 1} - {guest}: guest finished; no KASAN/lockdep/UBSAN/kmemleak report")
    (run / "run.tap").write_text("\n".join(
        [f"ok {i + 1} - {guest}/x" for i in range(n)] +
        [f"# guest '{guest}' took {secs} s", verdict, f"1..{n + 1}"]) + "\n")
    return run


@pytest.fixture
def top(tmp_path, copy_python):
    """A throwaway copy of the script in a tree with a results/ directory."""
    t = tmp_path / "top"
    (t / "scripts").mkdir(parents=True)
    (t / "results").mkdir()
    shutil.copy(SCRIPT, t / "scripts" / "publish-debugtest")
    copy_python(t)
    return t


def publish(top, name, *runs):
    return subprocess.run([str(top / "scripts" / "publish-debugtest"), name, *map(str, runs)],
                          capture_output=True, text=True)


def test_publish_clean_and_reported(top, tmp_path):
    a = fake_run(tmp_path, "campaign-fuzz", "custom", ["a", "b"], [], False, secs=3000)
    b = fake_run(tmp_path, "campaign-flood", "custom", ["a"], ["c"], True, secs=2000)
    # a guest log over 1 MB (vm-run listing a storm of reports) is
    # compressed, and its guest still has its row
    (b / "custom.log").write_text("#   BUG: KASAN: x\n" * 70000)
    r = publish(top, "debugtest-x", a, b)
    assert r.returncode == 0, r.stderr
    dst = top / "results" / "debugtest-x"
    summary = (dst / "summary.md").read_text()
    # the boot from the compressed console log, the tests' seconds summed
    assert "| campaign-fuzz | custom | 2 | 0 | 3000 | 489 | 1864 | none | 0/0 |" in summary
    assert ("| campaign-flood | custom | 1 | 1 | 2000 | 489 | 1864 | "
            "**the debug kernel reported a problem (see custom.log)** | 0/2 |") in summary
    assert "- not ok - fuzz: c" in summary
    assert "out_of_window counts the 5 blind spoofs exactly" in summary
    # the figures stay with their run: each under its own heading
    figs = summary.split("## Campaign figures")[1]
    assert figs.index("### campaign-flood/custom/tests/fuzz\n") < \
        figs.index("### campaign-fuzz/custom/tests/fuzz\n")
    assert figs.count("- INFO: seed 1, 100 packets") == 2
    # no captures; the big console log compressed; the config kept once
    assert not list(dst.rglob("*.pcap"))
    assert (dst / "campaign-fuzz" / "custom" / "console.log.xz").exists()
    assert (dst / "campaign-flood" / "custom.log.xz").exists()
    assert lzma.open(dst / "campaign-fuzz" / "custom" / "console.log.xz").read().startswith(b"[    0.0")
    assert (dst / "config.xz").exists() and not (dst / "campaign-fuzz" / "config").exists()
    assert (dst / "command.txt").read_text().count("published: scripts/publish-debugtest") == 2
    # about.json for results/README.md (scripts/results-index), which lists it
    about = json.loads((dst / "about.json").read_text())
    assert about["kind"] == "debugtest" and about["status"] == "current"
    assert re.fullmatch(r"\d{4}-\d\d-\d\d", about["date"])  # no date in the name: today
    assert about["kernel"] == "6.1.192 debug (key abc)"
    assert about["summary"] == ("make debugtest, 2 run(s): 3 of 4 checks passed, "
                                "1 of 2 guest(s) failed their verdict (summary.md)")
    index = (top / "results" / "README.md").read_text()
    assert "[`debugtest-x/`](debugtest-x/summary.md)" in index


def test_publish_guest_stopped_before_it_finished(top, tmp_path):
    """A run stopped while its next guest booted: that guest has a log and a
    directory but no TAP, no endcheck.log and no verdict.  Its row says so,
    and the rest of the summary is still written."""
    a = fake_run(tmp_path, "run-a", "suite-1", ["a"], ["c"], False, secs=4000)
    (a / "suite-2").mkdir()
    (a / "suite-2" / "console.log").write_text("booting\n")
    (a / "suite-2.log").write_text("vm-run: ...\n")
    with open(a / "run.tap", "a") as f:
        f.write("# guest 'suite-2': TESTS='x'\n")
    r = publish(top, "debugtest-s", a)
    assert r.returncode == 0, r.stderr
    summary = (top / "results" / "debugtest-s" / "summary.md").read_text()
    assert "| run-a | suite-1 | 1 | 1 | 4000 | 489 | 1864 | none | 0/0 |" in summary
    # booting: no end of the boot in its console log, no test ran
    assert "| run-a | suite-2 | 0 | 0 | ? | ? | ? | **no verdict: the guest did not finish** | no scan |" in summary
    assert "- not ok - fuzz: c" in summary
    assert "## Campaign figures" in summary


def test_publish_refuses_bad_input(top, tmp_path):
    assert publish(top, "x").returncode == 2
    assert publish(top, "../x", tmp_path).returncode == 2
    r = publish(top, "debugtest-y", tmp_path)
    assert r.returncode == 1 and "not a scripts/debugtest output" in r.stderr
    a = fake_run(tmp_path, "campaign-fuzz", "custom", ["a"], [], False)
    assert publish(top, "debugtest-z", a).returncode == 0
    r = publish(top, "debugtest-z", a)
    assert r.returncode == 1 and "exists" in r.stderr
    # NAME alone: the summary made again from the published copies
    summary = top / "results" / "debugtest-z" / "summary.md"
    summary.write_text("stale")
    r = publish(top, "debugtest-z")
    assert r.returncode == 0, r.stderr
    assert "| campaign-fuzz | custom | 1 | 0 |" in summary.read_text()
    assert "summarised again: scripts/publish-debugtest debugtest-z" in \
        (top / "results" / "debugtest-z" / "command.txt").read_text()


def test_publish_keeps_about_json(top, tmp_path):
    """A second publish into the same directory keeps about.json's status
    and summary (edited by hand since) and takes the kernel and commit of
    the runs again."""
    a = fake_run(tmp_path, "run-a", "custom", ["a"], [], False)
    assert publish(top, "debugtest-k", a).returncode == 0
    path = top / "results" / "debugtest-k" / "about.json"
    about = json.loads(path.read_text())
    assert about["summary"] == ("make debugtest, 1 run(s): 1 of 1 checks passed, "
                                "no kernel report in 1 guest(s)")
    about.update(status="superseded", superseded_by="debugtest-k", summary="by hand")
    path.write_text(json.dumps(about))
    b = fake_run(tmp_path, "run-b", "custom", ["a"], [], False)
    (b / "kernel.txt").write_text("key: def\nrelease: 6.1.193\ngit: 0123456789abcdef0123456789abcdef01234567\n")
    r = publish(top, "debugtest-k", b)
    assert r.returncode == 0, r.stderr
    about = json.loads(path.read_text())
    assert (about["status"], about["summary"]) == ("superseded", "by hand")
    assert about["commit"] == "0123456789abcdef0123456789abcdef01234567"
    assert about["commit_source"] == "kernel.txt"
    assert about["kernel"] == "6.1.192/6.1.193 debug (key abc, def)"
    # a directory superseded by itself: results-index warns (its --check fails)
    assert "superseded_by names the directory itself" in r.stderr


DEBUGTEST = os.path.join(os.path.dirname(HERE), "debugtest")
TESTS_DIR = os.path.join(os.path.dirname(os.path.dirname(HERE)), "vm-testbed", "tests")


def parts(env=None):
    e = {k: v for k, v in os.environ.items()
         if not k.startswith(("DEBUG_", "TB_")) and k != "TESTS"}
    e.update(env or {})
    r = subprocess.run([DEBUGTEST, "--list"], capture_output=True, text=True, env=e)
    return r.returncode, r.stdout.splitlines(), r.stderr


def core_scripts():
    """The scripts make test's guest runs, itself or by a core variant."""
    out = []
    for f in sorted(os.listdir(TESTS_DIR)):
        if not f.endswith(".sh") or f.startswith(("fuzz", "flood", "churn")):
            continue
        text = open(os.path.join(TESTS_DIR, f)).read()
        if "\n# tb-suite: extended" in text and "\n# tb-variant-core: " not in text:
            continue
        out.append(f[:-3])
    return out


def test_parts_cover_the_suite_and_the_campaign():
    rc, lines, err = parts()
    assert rc == 0, err
    names = [ln.split()[0] for ln in lines]
    assert names == ["suite-1", "suite-2", "suite-3", "suite-4", "fuzz-1", "fuzz-2", "fuzz-3",
                     "flood"] + [f"churn-{i}" for i in range(1, 3)]
    # every core script in exactly one suite part, each with its variants
    dealt = []
    for ln in lines[:4]:
        glob = ln.split("TESTS='")[1].split("'")[0]
        assert glob.startswith("@(") and glob.endswith(")?(@*)")
        dealt += glob[2:-len(")?(@*)")].split("|")
    assert sorted(dealt) == core_scripts() and len(dealt) >= 10
    # the suite's links are ones the debug guest can fill (it forwards
    # 0.65-0.83 Mbit/s, results/debugtest-cpubound-20261129/), with the
    # transfers that cross them sized for them; the campaign's parts keep
    # the testbed's defaults
    assert all(ln.endswith(" " + SENV) for ln in lines[:4])
    assert not any(k in ln for ln in lines[4:] for k in ("TB_RATE_", "TB_SPOOF_UP", "TB_IDLE"))
    # the campaign's full counts, split: at least 10^6 packets, 500 namespaces
    fuzz = [ln for ln in lines if ln.startswith("fuzz-")]
    packets = sum(int(ln.split("TB_FUZZ_PACKETS=")[1].split()[0]) for ln in fuzz)
    seeds = {ln.split("TB_FUZZ_SEED=")[1].split()[0] for ln in fuzz}
    assert packets >= 10**6 and len(seeds) == 3
    churn = [ln for ln in lines if ln.startswith("churn-")]
    per_part = [int(ln.split("TB_CHURN_NETNS=")[1]) for ln in churn]
    assert sum(per_part) >= 500
    # a part fits the default TEST_TIMEOUT (1800 s x TB_SLOW 4) with a
    # quarter to spare, at the debug kernel's 18.8 s a namespace in two
    # loops (results/debugtest-20261129/, run-20261129-chc)
    assert max(per_part) * 18.8 <= 0.75 * 1800 * 4
    # timeout_handshake outlasts the debug kernel's flood round, 766 s
    # (results/debugtest-20261129/), with room for a slower host: no flow
    # expires during it
    flood = next(ln for ln in lines if ln.startswith("flood"))
    assert int(flood.split("TB_FLOOD_HS=")[1].split()[0]) >= 1.5 * 766


def test_parts_selected_and_refused():
    rc, lines, _ = parts({"DEBUG_PARTS": "@(fuzz-2|flood)"})
    assert rc == 0 and [ln.split()[0] for ln in lines] == ["fuzz-2", "flood"]
    assert "TB_FUZZ_SEED=20261136" in lines[0]
    rc, lines, _ = parts({"DEBUG_FUZZ_PARTS": "4", "TB_FUZZ_PACKETS": "1000", "DEBUG_PARTS": "fuzz-*"})
    assert rc == 0 and len(lines) == 4 and all("TB_FUZZ_PACKETS=250 " in ln for ln in lines)
    rc, _, err = parts({"DEBUG_PARTS": "nothing"})
    assert rc == 2 and "no part matches" in err
    rc, _, err = parts({"DEBUG_CHURN_PARTS": "0"})
    assert rc == 2 and "DEBUG_CHURN_PARTS must be a positive number, not '0'" in err
    # a mistyped TB_FLOOD_HS stops here: the guest would fail the flood only after booting
    rc, _, err = parts({"TB_FLOOD_HS": "15m"})
    assert rc == 2 and "flood.sh: TB_FLOOD_HS must be a whole number from 1 to 86400, not '15m'" in err
    rc, _, err = parts({"TB_FLOOD_SYNS": "1e6"})
    assert rc == 2 and "flood.sh: TB_FLOOD_SYNS must be a whole number at least 5000, not '1e6'" in err
    for var in ("TB_FUZZ_PACKETS", "TB_CHURN_NETNS"):
        rc, _, err = parts({var: "1e6"})
        assert rc == 2 and f"{var} must be a positive number, not '1e6'" in err
    rc, lines, _ = parts({"TB_FLOOD_HS": "2000", "DEBUG_PARTS": "flood"})
    assert rc == 0 and lines == ["flood TESTS='flood' TB_FLOOD_HS=2000"]
    rc, lines, _ = parts({"TB_RATE_LOW": "1mbit", "DEBUG_PARTS": "suite-1"})
    assert rc == 0 and " TB_RATE_LOW=1mbit TB_RATE_HIGH=400kbit TB_SPOOF_UP=8000000 " in lines[0]
    rc, lines, _ = parts({"TB_IDLE_UP": "5", "DEBUG_PARTS": "suite-3"})
    assert rc == 0 and lines[0].endswith(" TB_IDLE_UP=5")
    # the part that runs proxy_inject_path, whichever it is
    rc, lines, _ = parts({"DEBUG_PARTS": "suite-*"})
    inject = [ln.split()[0] for ln in lines if "proxy_inject_path" in ln]
    assert rc == 0 and len(inject) == 1
    rc, _, err = parts({"TB_INJECT_CROSS": "4mbit", "DEBUG_PARTS": inject[0]})
    assert rc == 2 and ("proxy_inject_path.sh: TB_INJECT_CROSS must be a rate for iperf3 -b "
                        "such as 4M or 160K, not '4mbit'") in err
    rc, lines, _ = parts({"TESTS": "fuzz"})
    assert rc == 0 and lines == ["custom TESTS='fuzz' " + SENV]
    # each part's values as its guest's scripts will check them (tb_knob_*)
    rc, _, err = parts({"TB_FUZZ_PACKETS": "200"})
    assert rc == 2 and ("debugtest: fuzz-1 (TB_FUZZ_MODES=none,drop,dupack TB_FUZZ_PACKETS=67 "
                        "TB_FUZZ_SEED=20261126): fuzz.sh: "
                        "TB_FUZZ_PACKETS must be a whole number at least 100, not '67'") in err
    rc, _, err = parts({"TB_FLOOD_HS": "90000"})
    assert rc == 2 and "flood.sh: TB_FLOOD_HS must be a whole number from 1 to 86400" in err
    rc, _, err = parts({"TB_FLOOD_SYNS": "4000", "DEBUG_PARTS": "flood"})
    assert rc == 2 and "TB_FLOOD_SYNS must be a whole number at least 5000, not '4000'" in err
    rc, _, err = parts({"TESTS": "proxy_configs", "TB_XFER_UP": "3k"})
    assert rc == 2 and f"debugtest: custom ({SENV}): proxy_configs.sh: TB_XFER_UP must be" in err
    rc, _, err = parts({"TB_SLOW": "x"})
    assert rc == 2 and "TB_SLOW must be a whole number from 1 to 100, not 'x'" in err
    # a variant's own settings, and a TESTS that matches nothing (the
    # guest would run no test), before the boot
    rc, _, err = parts({"TESTS": "proxy_idle@v6", "TB_IDLE_FAMILIES": "5"})
    assert rc == 0, err
    rc, _, err = parts({"TESTS": "proxy_idle", "TB_IDLE_FAMILIES": "5"})
    assert rc == 2 and "proxy_idle.sh: TB_IDLE_FAMILIES must be a list of 4 and 6" in err
    # the campaign's parts take their tests from the core suite whatever
    # DEBUG_SUITE says
    rc, lines, err = parts({"DEBUG_SUITE": "extended"})
    assert rc == 0 and [ln.split()[0] for ln in lines][-6:] == (
        ["fuzz-1", "fuzz-2", "fuzz-3", "flood"] + [f"churn-{i}" for i in range(1, 3)]), err
    rc, _, err = parts({"TESTS": "nope"})
    assert rc == 2 and f"debugtest: custom ({SENV}): run-vm-tests: no test in the all suite matches" in err
    # a setting of a test the run does not include is not its business
    rc, _, err = parts({"TB_XFER_UP": "3k", "DEBUG_PARTS": "flood"})
    assert rc == 0
    r = subprocess.run([DEBUGTEST, "--nope"], capture_output=True, text=True)
    assert r.returncode == 2 and "usage" in r.stderr
