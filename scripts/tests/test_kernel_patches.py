# SPDX-License-Identifier: GPL-2.0
"""kernel-patches/ is what scripts/gen-kernel-patches makes from kmod/.

The host test scripts/tests-host/intree.sh checks the same and then applies
and builds the series; it runs late in `make test`.  This copy fails within
the first minutes of `make test` and in `make unit`, where a kmod/ change
committed without `make kernel-patches` shows first."""
import os
import subprocess

import pytest

TOP = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TARBALL = os.environ.get("LINUX_SOURCE_TARBALL", "/usr/src/linux-source-6.1.tar.xz")


def test_series_is_generated_from_kmod(tmp_path):
    if not os.path.exists(TARBALL):
        pytest.skip(f"{TARBALL} not installed (make deps)")
    fresh = tmp_path / "fresh"
    gen = subprocess.run([os.path.join(TOP, "scripts", "gen-kernel-patches"), str(fresh)],
                         capture_output=True, text=True, timeout=300)
    assert gen.returncode == 0, gen.stdout[-2000:] + gen.stderr[-2000:]
    diff = subprocess.run(["diff", "-r", "-u", "-x", "README.md",
                           os.path.join(TOP, "kernel-patches"), str(fresh)],
                          capture_output=True, text=True)
    assert diff.returncode == 0, (
        "kernel-patches/ differs from what scripts/gen-kernel-patches makes "
        "from kmod/: run make kernel-patches and commit the result\n" + diff.stdout[:4000])
