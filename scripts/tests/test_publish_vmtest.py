# SPDX-License-Identifier: GPL-2.0
"""scripts/publish-vmtest-run: the copy's command.txt and summary.md."""
import os
import shutil
import subprocess

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPTS = os.path.dirname(HERE)


def test_kernel_from_the_console_when_dmesg_wrapped(tmp_path):
    """A long run wraps the guest's ring buffer: dmesg.txt no longer holds
    the boot banner, the console log does.  command.txt still names the
    kernel."""
    top = tmp_path / "top"
    (top / "scripts").mkdir(parents=True)
    (top / "results").mkdir()
    for f in ("publish-vmtest-run", "variant_table.py"):
        shutil.copy(os.path.join(SCRIPTS, f), top / "scripts" / f)
    run = tmp_path / "run"
    (run / "tests" / "x").mkdir(parents=True)
    (run / "tests" / "x" / "log").write_text("TEST: y [ OK ]\n")
    (run / "results.tap").write_text("ok - x: y\n")
    (run / "durations.txt").write_text("x 12 0\n")
    (run / "dmesg.txt").write_text("[  867.88] impair: something late\n")
    (run / "console.log").write_text(
        "Probing EDD\n[    0.000000] Linux version 6.1.0-56-amd64 (debian-kernel@x) #1\n")
    p = subprocess.run([str(top / "scripts" / "publish-vmtest-run"), str(run), "t"],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    dst = next((top / "results").iterdir())
    assert "kernel: Linux version 6.1.0-56-amd64\n" in (dst / "command.txt").read_text()
    assert "| x | 1 | 0 | 12 | 0 |" in (dst / "summary.md").read_text()
