# SPDX-License-Identifier: GPL-2.0
"""vm-testbed/vm-run with a stand-in for virtme-ng: stopping the caller
(make's process group, as a SIGTERM or a Ctrl-C does) must stop the guest.
GNU timeout puts itself and the guest in a process group of their own, so
without vm-run's forwarding the QEMU process would outlive every caller."""
import os
import signal
import subprocess
import time

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
VM_RUN = os.path.join(os.path.dirname(os.path.dirname(HERE)), "vm-testbed", "vm-run")

# vng --run KERNEL ... --exec CMD: start a long-lived "guest" child (the
# stand-in for qemu), record its pid, print a line and wait for it.
FAKE_VNG = """#!/bin/bash
sleep 600 &
echo $! >"$FAKE_PIDS/guest"
echo "fake guest running"
wait
"""


def alive(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def wait_for(cond, secs):
    end = time.monotonic() + secs
    while time.monotonic() < end:
        if cond():
            return True
        time.sleep(0.1)
    return cond()


@pytest.fixture
def fake(tmp_path):
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    vng = venv / "bin" / "vng"
    vng.write_text(FAKE_VNG)
    vng.chmod(0o755)
    kernel = tmp_path / "kernel"
    kernel.mkdir()
    script = tmp_path / "script.sh"
    script.write_text("true\n")
    pids = tmp_path / "pids"
    pids.mkdir()
    env = dict(os.environ, VENV=str(venv), VM_KERNEL=str(kernel), ACCEL="tcg",
               FAKE_PIDS=str(pids))
    return env, tmp_path, script, pids


def default_signals():
    for sig in (signal.SIGHUP, signal.SIGINT):
        signal.signal(sig, signal.SIG_DFL)


@pytest.mark.parametrize("piped", [False, True], ids=["direct", "through-tee"])
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT, signal.SIGHUP])
def test_stopping_the_caller_stops_the_guest(fake, sig, piped):
    env, tmp, script, pids = fake
    cmd = [VM_RUN, "-o", str(tmp / "out"), "-t", "300", "--", str(script)]
    if piped:
        # as scripts/debugtest runs it: the tee dies with the group, and
        # vm-run must still stop the guest (no SIGPIPE on its message)
        cmd = ["bash", "-c", '"$@" 2>&1 | tee /dev/null; exit "${PIPESTATUS[0]}"', "sh", *cmd]
    # its own session: the process group stands for make's.  The signals
    # at their defaults: a shell cannot trap what it inherits as ignored
    # (make test started by `nohup ... &` ignores SIGHUP and SIGINT)
    p = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                         text=True, start_new_session=True, preexec_fn=default_signals)
    try:
        assert wait_for(lambda: (pids / "guest").exists(), 30), "the fake guest never started"
        time.sleep(0.5)
        guest = int((pids / "guest").read_text())
        assert alive(guest)
        os.killpg(p.pid, sig)
        out, _ = p.communicate(timeout=30)
        assert wait_for(lambda: not alive(guest), 15), \
            f"the guest (pid {guest}) outlived vm-run:\n{out}"
        if not piped:
            assert p.returncode == 128 + sig, out
            assert "stopped by SIG" in out, out
    finally:
        if (pids / "guest").exists():
            g = int((pids / "guest").read_text())
            if alive(g):
                os.kill(g, signal.SIGKILL)
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)


def test_a_guest_that_finishes_is_unchanged(fake):
    """Without a signal, vm-run still waits for the guest and reports it."""
    env, tmp, script, pids = fake
    quick = tmp / "venv" / "bin" / "vng"
    quick.write_text('#!/bin/bash\necho "fake guest done"\n')
    r = subprocess.run([VM_RUN, "-o", str(tmp / "out"), "-t", "60", "--", str(script)],
                       env=env, capture_output=True, text=True, timeout=60)
    assert "fake guest done" in r.stdout
    # no exit-code file: the guest "did not finish the script"
    assert r.returncode == 126, r.stdout + r.stderr
    assert "vm-run: guest ran for" in r.stdout


# vng stand-in for the boot retry: boots numbered in $FAKE_PIDS/boots; the
# first $FAKE_CRASH boots die as a 6.12 guest under TCG did in CI (a panic
# before guest-init.sh); with FAKE_LATE=1 they die after guest-init.sh
# wrote guest.txt; the others run the "script" (exit code 0).
BOOT_VNG = r"""#!/bin/bash
while [ $# -gt 0 ]; do
	[ "$1" = --rwdir ] && out=$2
	shift
done
n=$(($(cat "$FAKE_PIDS/boots" 2>/dev/null || echo 0) + 1))
echo "$n" >"$FAKE_PIDS/boots"
if [ "$n" -le "${FAKE_CRASH:-0}" ]; then
	[ "${FAKE_LATE:-0}" = 1 ] && echo "kernel: fake" >"$out/guest.txt"
	echo "[    1.513988] Oops: int3: 0000 [#1] PREEMPT SMP NOPTI" >&2
	echo "[    1.514279] Kernel panic - not syncing: Fatal exception in interrupt" >&2
	exit 1
fi
echo "kernel: fake" >"$out/guest.txt"
echo "fake guest boot $n ran the script"
echo 0 >"$out/exit-code"
"""


def run_boots(fake, crash, late=False, tries=None):
    env, tmp, script, pids = fake
    vng = tmp / "venv" / "bin" / "vng"
    vng.write_text(BOOT_VNG)
    env = dict(env, FAKE_CRASH=str(crash), FAKE_LATE="1" if late else "0")
    if tries is not None:
        env["VM_BOOT_TRIES"] = str(tries)
    out = tmp / "out"
    r = subprocess.run([VM_RUN, "-o", str(out), "-t", "60", "--", str(script)],
                       env=env, capture_output=True, text=True, timeout=60)
    boots = int((pids / "boots").read_text()) if (pids / "boots").exists() else 0
    return r, boots, out


def test_a_boot_crash_is_booted_again_and_recorded(fake):
    r, boots, out = run_boots(fake, crash=1)
    assert boots == 2
    assert r.returncode == 0, r.stdout + r.stderr
    assert "died while booting" in r.stderr and "booting again" in r.stderr
    # the failed boot's panic is kept and counted, not scanned as the run's
    assert "Kernel panic" not in (out / "console.log").read_text()
    assert "Kernel panic" in (out / "console-boot-1.log").read_text()
    lines = (out / "boot-failures").read_text().splitlines()
    assert len(lines) == 1 and "Oops: int3" in lines[0], lines


def test_boot_crashes_past_the_tries_fail_the_run(fake):
    r, boots, out = run_boots(fake, crash=5)
    assert boots == 2
    assert r.returncode == 126, r.stdout + r.stderr
    # the last boot's panic is the run's: printed as a kernel-log problem
    assert "Kernel panic" in r.stderr
    assert len((out / "boot-failures").read_text().splitlines()) == 1


def test_one_boot_try_never_boots_again(fake):
    r, boots, out = run_boots(fake, crash=1, tries=1)
    assert (boots, r.returncode) == (1, 126), r.stdout + r.stderr
    assert not (out / "boot-failures").exists()


def test_a_crash_after_guest_init_is_never_booted_again(fake):
    """A guest that reached guest-init.sh may have loaded our modules: its
    crash is the run's result, whatever VM_BOOT_TRIES says."""
    r, boots, out = run_boots(fake, crash=1, late=True, tries=3)
    assert (boots, r.returncode) == (1, 126), r.stdout + r.stderr
    assert "Kernel panic" in r.stderr
    assert not (out / "boot-failures").exists()


@pytest.mark.parametrize("tries", ["0", "10", "x"])
def test_bad_boot_tries_are_rejected(fake, tries):
    r, boots, _ = run_boots(fake, crash=0, tries=tries)
    assert (boots, r.returncode) == (0, 2)
    assert "VM_BOOT_TRIES must be" in r.stderr
