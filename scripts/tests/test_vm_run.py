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
