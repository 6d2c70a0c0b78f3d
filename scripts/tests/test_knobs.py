# SPDX-License-Identifier: GPL-2.0
"""The VM tests' settings (TB_* knobs, vm-testbed/lib/testlib.sh): an
unusable value fails the script with a "not ok" line naming the setting,
before anything has run, instead of skipping it (a mistyped setting used to
pass a run as a skip).  The helpers are run here in bash, and every test
script and benchmark guest script is run on the host (in a network
namespace of its own) with each of its settings mistyped: it must stop at
once, failed."""
import glob
import os
import re
import shutil
import subprocess

import pytest

TOP = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
LIB = os.path.join(TOP, "vm-testbed", "lib", "testlib.sh")
VMT = os.path.join(TOP, "vm-testbed")
KNOB = re.compile(r"^\s*tb_knob_([a-z]+) (\S+) (TB_[A-Z0-9_]+) ")


# scripts/run-tests's switches: `make unit` itself runs with VM=0 HOST=0
RUNNER_VARS = {"UNIT", "UNIT_CROSS", "CROSS", "HOST", "VM", "VM2", "VM2_KVER",
               "VM_EXTRAS", "VMOUT", "VMOUT2", "TESTS"}


def clean_env(tmp_path, **extra):
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("TB_") and k not in RUNNER_VARS}
    env.update(TB_RESULTS=str(tmp_path / "results"), TB_OUT=str(tmp_path),
               TB_STATE=str(tmp_path / "state"))
    env.update(extra)
    return env


def run_lib(tmp_path, body, **extra):
    (tmp_path / "results").write_text("")
    p = subprocess.run(["bash", "-c", f'set -e; . "{LIB}"; {body}'],
                       env=clean_env(tmp_path, **extra), capture_output=True,
                       text=True, timeout=60)
    return p.returncode, p.stdout, (tmp_path / "results").read_text()


@pytest.mark.parametrize("val,want", [
    (None, "5"), ("", "5"), ("7", "7"), ("010", "10"), ("1", "1"), ("10", "10")])
def test_int_accepts(tmp_path, val, want):
    extra = {} if val is None else {"TB_X": val}
    rc, out, res = run_lib(tmp_path, 'tb_knob_int x TB_X 5 1 10; echo "x=$x"', **extra)
    assert (rc, out.strip().splitlines()[-1], res) == (0, f"x={want}", "")


@pytest.mark.parametrize("val", ["0", "11", "abc", "-1", "1e3", " 5", "5 ",
                                 "0x5", "9" * 16, "3;echo hi"])
def test_int_refuses(tmp_path, val):
    rc, out, res = run_lib(tmp_path, 'tb_knob_int x TB_X 5 1 10; echo reached', TB_X=val)
    assert rc == 1 and "reached" not in out
    assert res.startswith("not ok - ") and res.count("\n") == 1
    assert f"TB_X must be a whole number from 1 to 10, not '{val}'" in res


def test_int_without_max(tmp_path):
    rc, out, _ = run_lib(tmp_path, 'tb_knob_int x TB_X 5 100; echo "x=$x"', TB_X="123456789")
    assert rc == 0 and "x=123456789" in out
    rc, _, res = run_lib(tmp_path, 'tb_knob_int x TB_X 5 100', TB_X="99")
    assert rc == 1 and "TB_X must be a whole number at least 100, not '99'" in res


@pytest.mark.parametrize("val,ok", [("6M", True), ("500K", True), ("1.5G", True),
                                    ("6", True), ("6 M", False), ("6M;x", False),
                                    ("M", False), ("6MB", False)])
def test_match(tmp_path, val, ok):
    rc, out, res = run_lib(
        tmp_path, "tb_knob_match c TB_C 4M '[0-9]+(\\.[0-9]+)?[KMG]?' 'a rate'; "
        'echo "c=$c"', TB_C=val)
    if ok:
        assert rc == 0 and f"c={val}" in out
    else:
        assert rc == 1 and f"TB_C must be a rate, not '{val}'" in res


@pytest.mark.parametrize("val,want", [(None, "4"), ("4,6", "4 6"), ("6 4", "6 4"),
                                      ("4,,6", "4 6"), ("4,x", None), (",", None),
                                      ("46", None)])
def test_list(tmp_path, val, want):
    extra = {} if val is None else {"TB_F": val}
    rc, out, res = run_lib(tmp_path, "tb_knob_list f TB_F 4 '4|6' '4 and 6'; "
                           'echo "f=$f"', **extra)
    if want is None:
        assert rc == 1 and "TB_F must be a list of 4 and 6" in res
    else:
        assert rc == 0 and f"f={want}" in out


@pytest.mark.parametrize("val,want", [(None, "1 2"), ("3,010", "3 10"), ("5", "5"),
                                      ("1,2,3,4", None), ("0", None), ("11", None),
                                      ("", "1 2"), (",", None), ("2,x", None)])
def test_ints(tmp_path, val, want):
    extra = {} if val is None else {"TB_L": val}
    rc, out, res = run_lib(tmp_path, 'tb_knob_ints l TB_L "1 2" 1 10 3; echo "l=$l"', **extra)
    if want is None:
        assert rc == 1 and "TB_L must be a list of" in res
    else:
        assert rc == 0 and f"l={want}" in out


def test_tb_slow_is_checked_when_sourced(tmp_path):
    rc, out, res = run_lib(tmp_path, "echo reached", TB_SLOW="four")
    assert rc == 1 and "reached" not in out and "TB_SLOW must be" in res


def knobs_of(path):
    """(line number, kind, name, variable) of each tb_knob_* call."""
    with open(path) as f:
        return [(i, *m.groups()) for i, ln in enumerate(f) if (m := KNOB.match(ln))]


# the tests and the benchmarks' guest sides
SCRIPTS = sorted(os.path.join(d, f) for d in ("tests", "bench")
                 for f in os.listdir(os.path.join(VMT, d)) if f.endswith(".sh"))
WITH_KNOBS = [(s, k[3]) for s in SCRIPTS for k in knobs_of(os.path.join(VMT, s))]


@pytest.mark.parametrize("script", SCRIPTS)
def test_scripts_read_settings_through_the_helpers_first(script):
    path = os.path.join(VMT, script)
    with open(path) as f:
        lines = f.read().splitlines()
    raw = [ln for ln in lines if re.search(r"\$\{TB_[A-Z0-9_]+:-", ln)]
    assert raw == [], "a setting read without tb_knob_*"
    first_action = min((i for i, ln in enumerate(lines)
                        if re.match(r"\s*(require_cmd|tb_up|tb_proxy_load|tb_core_load|insmod|\[ -d /sys/module)\b", ln)),
                       default=len(lines))
    assert all(i < first_action for i, *_ in knobs_of(path)), \
        "tb_knob_* after the script has started working"


def test_every_knob_script_found():
    # the list the parametrised tests below run over is not empty by mistake
    assert len(WITH_KNOBS) >= 40


def script_knob_lines(script):
    with open(os.path.join(VMT, script)) as f:
        lines = f.read().splitlines()
    return "\n".join(lines[i] for i, *_ in knobs_of(os.path.join(VMT, script)))


@pytest.mark.parametrize("script", sorted({s for s, _ in WITH_KNOBS}))
def test_defaults_are_usable(tmp_path, script):
    rc, out, res = run_lib(tmp_path, script_knob_lines(script) + "\necho reached")
    assert (rc, res) == (0, "") and "reached" in out


def can_unshare():
    return shutil.which("unshare") and subprocess.run(
        ["unshare", "-n", "true"], capture_output=True).returncode == 0


@pytest.mark.skipif(not can_unshare(), reason="needs unshare -n (root)")
@pytest.mark.parametrize("script,var", WITH_KNOBS)
def test_script_fails_on_a_mistyped_setting(tmp_path, script, var):
    """The whole script, on the host in a network namespace of its own: it
    stops at the setting, with one "not ok" line naming it."""
    (tmp_path / "results").write_text("")
    env = clean_env(tmp_path, **{var: "x!"})
    p = subprocess.run(["unshare", "-n", "timeout", "60", "bash",
                        os.path.join(VMT, script)], env=env, cwd=tmp_path,
                       capture_output=True, text=True, timeout=90)
    res = (tmp_path / "results").read_text().splitlines()
    assert p.returncode == 1, p.stdout + p.stderr
    assert len(res) == 1 and res[0].startswith("not ok - ") and f"{var} must be" in res[0]
    assert f"not '{'x!'}'" in res[0] or "('x!')" in res[0]
    assert "SKIP" not in p.stdout


TOPO = os.path.join(VMT, "lib", "topology.sh")


@pytest.mark.parametrize("var,val", [
    ("TB_RATE_LOW", "10M"), ("TB_RATE_HIGH", "fast"), ("TB_RED_LIMIT", "0"),
    ("TB_RED_MIN", "2k"), ("TB_RED_MAX", "-1"), ("TB_RED_AVPKT", ""),
    ("TB_RED_BURST", "4.5"), ("TB_RED_PROB", "1.5"), ("TB_RED_PROB", ".3"),
    ("TB_RED_ECN", "yes"), ("TB_SETUP", "both"), ("TB_DELAY_MS", "5ms")])
def test_topology_refuses(tmp_path, var, val):
    """tb_up's settings (tb_check_settings): a refusal that names them."""
    env = clean_env(tmp_path)
    p = subprocess.run(["bash", "-c", f'. "{TOPO}"; {var}="$V"; tb_check_settings'],
                       env=dict(env, V=val), capture_output=True, text=True, timeout=30)
    assert p.returncode == 1 and f"topology: {var} must be" in p.stderr


def test_topology_accepts_the_defaults_and_the_matrix_values(tmp_path):
    body = ('tb_check_settings && TB_RATE_LOW=1gbit TB_RATE_HIGH=500kbit '
            'TB_RED_PROB=1 TB_RED_ECN=0 TB_SETUP=upload tb_check_settings && '
            'TB_RED_PROB=0.05 TB_RED_MAX=30000 tb_check_settings && echo fine')
    p = subprocess.run(["bash", "-c", f'. "{TOPO}"; {body}'], env=clean_env(tmp_path),
                       capture_output=True, text=True, timeout=30)
    assert p.returncode == 0 and "fine" in p.stdout, p.stderr


CHECK = os.path.join(VMT, "check-settings")
BENCHES = ("dupack", "flows", "hook", "hook-kernel", "lookup")


def test_check_settings(tmp_path):
    scripts = [os.path.join(VMT, s) for s in SCRIPTS]
    p = subprocess.run([CHECK, *scripts], env=clean_env(tmp_path), capture_output=True, text=True)
    assert (p.returncode, p.stderr) == (0, "")
    p = subprocess.run([CHECK, *scripts], env=clean_env(tmp_path, TB_FLOOD_SYNS="10"),
                       capture_output=True, text=True)
    assert p.returncode == 2 and p.stderr == (
        "flood.sh: TB_FLOOD_SYNS must be a whole number at least 5000, not '10'\n")
    for args in ([], [str(tmp_path / "nope.sh")]):
        p = subprocess.run([CHECK, *args], env=clean_env(tmp_path), capture_output=True, text=True)
        assert p.returncode == 2 and p.stderr


@pytest.mark.parametrize("bench", BENCHES)
def test_bench_refuses_before_booting(tmp_path, bench):
    """scripts/bench-*: a mistyped setting stops the wrapper before it makes
    its output directory or boots a guest."""
    out = tmp_path / "out"
    p = subprocess.run([os.path.join(TOP, "scripts", "bench-" + bench), str(out)],
                       env=clean_env(tmp_path, TB_BENCH_REPS="0"), capture_output=True,
                       text=True, timeout=60)
    assert p.returncode == 2 and "TB_BENCH_REPS must be a whole number" in p.stderr
    assert not out.exists()


RUNVM = os.path.join(VMT, "run-vm-tests.sh")


def list_runs(tmp_path, **extra):
    p = subprocess.run([RUNVM, "--list"], env=clean_env(tmp_path, **extra),
                       capture_output=True, text=True, timeout=60)
    return p.returncode, [ln.split(maxsplit=2) for ln in p.stdout.splitlines()], p.stderr


def test_run_list_is_the_suite(tmp_path):
    """run-vm-tests.sh --list: the runs the guest would make, with their
    variants' settings; core and extended split the whole set."""
    rc, core, _ = list_runs(tmp_path)
    assert rc == 0 and len(core) >= 10
    assert ["proxy_modes@home", os.path.join(VMT, "tests", "proxy_modes.sh"),
            "TB_ROUTER=home TB_MODES=drop,dupack TB_MODES_BYTES=1000000"] in core
    assert all(os.path.isfile(r[1]) for r in core)
    _, ext, _ = list_runs(tmp_path, TB_SUITE="extended")
    _, every, _ = list_runs(tmp_path, TB_SUITE="all")
    names = [r[0] for r in core + ext]
    assert len(set(names)) == len(names) and sorted(names) == sorted(r[0] for r in every)
    rc, sel, _ = list_runs(tmp_path, TESTS="proxy_modes?(@*)")
    assert rc == 0 and [r[0] for r in sel][:1] == ["proxy_modes"] and len(sel) >= 2


def test_make_test_splits_the_core_suite(tmp_path):
    """make test's two guests (scripts/run-tests): core-first (KVER's
    kernel) and core-second (VM2_KVER's) together make every core run, and
    only the scripts marked "both-kernels" are made in both."""
    names = {}
    for suite in ("core", "core-first", "core-second"):
        rc, runs, err = list_runs(tmp_path, TB_SUITE=suite)
        assert rc == 0, err
        names[suite] = [r[0] for r in runs]
    first, second = set(names["core-first"]), set(names["core-second"])
    assert len(first) == len(names["core-first"]) and len(second) == len(names["core-second"])
    assert first | second == set(names["core"])
    both = {os.path.basename(t)[:-3] for t in glob.glob(os.path.join(VMT, "tests", "*.sh"))
            if "# tb-make-test: both-kernels\n" in open(t).read()}
    assert first & second == both and "connectivity" in both
    # the proxy over the home router's NAT runs on the second kernel
    assert "proxy_modes@home" in second and "proxy_configs" in first


@pytest.mark.parametrize("extra,msg", [
    ({"TESTS": "nope"}, "no test in the all suite matches TESTS='nope'"),
    ({"TB_SUITE": "quick"}, "TB_SUITE must be core, core-first, core-second, extended or all, not 'quick'")])
def test_run_list_refuses(tmp_path, extra, msg):
    rc, runs, err = list_runs(tmp_path, **extra)
    assert rc == 2 and runs == [] and msg in err
    p = subprocess.run([RUNVM], env=clean_env(tmp_path), capture_output=True, text=True)
    assert p.returncode == 2 and "usage" in p.stderr


@pytest.mark.parametrize("extra,msg", [
    ({}, None),
    # the variant's own settings apply: proxy_idle@v6 has TB_IDLE_FAMILIES=6
    ({"TESTS": "proxy_idle@v6", "TB_IDLE_FAMILIES": "5"}, None),
    ({"TESTS": "proxy_idle", "TB_IDLE_FAMILIES": "5"},
     "proxy_idle.sh: TB_IDLE_FAMILIES must be a list of 4 and 6, not '5' ('5')\n"),
    ({"TB_FUZZ_PACKETS": "3"},
     "fuzz.sh: TB_FUZZ_PACKETS must be a whole number at least 100, not '3'\n"),
    ({"TB_FUZZ_PACKETS": "3", "TESTS": "flood"}, None),
    # the testbed's own settings are tb_up's, in the guest: scripts set
    # some themselves (home_offload: TB_ROUTER=home, TB_OFFLOAD_FLOWS=1;
    # impair_up: TB_RATE_LOW=100mbit)
    ({"TESTS": "home_offload", "TB_OFFLOAD_FLOWS": "1"}, None),
    ({"TESTS": "impair_opts", "TB_RATE_LOW": "10M"}, None),
    ({"TESTS": "nope"}, "run-vm-tests: no test in the all suite matches TESTS='nope'\n"),
    ({"TB_SUITE": "quick"}, "run-vm-tests: TB_SUITE must be core, core-first, core-second, extended or all, not 'quick'\n")])
def test_check_settings_runs(tmp_path, extra, msg):
    p = subprocess.run([CHECK, "--runs"], env=clean_env(tmp_path, **extra),
                       capture_output=True, text=True, timeout=120)
    assert (p.returncode, p.stderr) == ((0, "") if msg is None else (2, msg))


def test_variant_refusal_names_the_variant(tmp_path):
    p = subprocess.run([CHECK, "--runs"], env=clean_env(
        tmp_path, TESTS="proxy_idle@v6", TB_IDLE_DOWN="1e6"),
        capture_output=True, text=True, timeout=60)
    assert p.returncode == 2 and p.stderr == (
        "proxy_idle@v6 (TB_IDLE_FAMILIES=6): proxy_idle.sh: "
        "TB_IDLE_DOWN must be a whole number at least 1, not '1e6'\n")


@pytest.mark.parametrize("extra,msg", [
    ({"TB_FUZZ_PACKETS": "3"}, "TB_FUZZ_PACKETS must be a whole number at least 100"),
    ({"TESTS": "nope"}, "no test in the all suite matches TESTS='nope'"),
    ({"TB_SUITE": "quick"}, "TB_SUITE must be core, core-first, core-second, extended or all")])
def test_run_tests_refuses_before_booting(tmp_path, extra, msg):
    """make test / make vmtest (scripts/run-tests): a bad setting is one
    "not ok" line and no guest.  VENV points nowhere, so that a runner that
    tried to boot would fail at once instead of booting here."""
    out = tmp_path / "vm"
    env = clean_env(tmp_path, UNIT="0", CROSS="0", HOST="0", BUILD=str(tmp_path / "build"),
                    VMOUT=str(out), ACCEL="tcg", VENV=str(tmp_path / "novenv"), **extra)
    p = subprocess.run([os.path.join(TOP, "scripts", "run-tests")], env=env,
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 1 and not out.exists()
    assert p.stdout.startswith("not ok 1 - vm: the settings are usable (not booted): ")
    assert msg in p.stdout and p.stdout.rstrip().endswith("0 passed, 1 failed")


SEQ_LOOP = re.compile(r"for \w+ in \$\(seq (\d+)\); do")


def test_polling_loops_scale_with_tb_slow():
    """A loop that polls (sleeps) a fixed number of times is a time limit:
    it must scale with TB_SLOW (tb_slow N), or the debug kernel's guest,
    7-11 times slower, fails it on time alone."""
    bad = []
    for d in ("tests", "lib", "bench"):
        for f in sorted(os.listdir(os.path.join(VMT, d))):
            if not f.endswith(".sh"):
                continue
            lines = open(os.path.join(VMT, d, f)).read().splitlines()
            for i, ln in enumerate(lines):
                if not SEQ_LOOP.search(ln):
                    continue
                depth, body = 0, []
                for nxt in lines[i:]:
                    depth += len(re.findall(r"\bdo\b", nxt)) - len(re.findall(r"\bdone\b", nxt))
                    body.append(nxt)
                    if depth <= 0:
                        break
                if any(re.search(r"\bsleep\b", b) for b in body):
                    bad.append(f"{d}/{f}:{i + 1}: {ln.strip()}")
    assert bad == []
