# SPDX-License-Identifier: GPL-2.0
"""Shared fixtures.  The package py/ecnproxy is on sys.path through
pytest.ini's pythonpath (the tests import it as `ecnproxy`)."""
import os
import shutil

import pytest

TOP = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.fixture
def copy_python():
    """copy_python(top): the Python commands (scripts/ecnproxy and its
    wrappers, the package py/ecnproxy) into a throwaway tree TOP, where
    they then find results/ (paths.py: the tree the package is in)."""
    def copy(top):
        os.makedirs(os.path.join(top, "scripts"), exist_ok=True)
        for f in ("ecnproxy", "results-index"):
            shutil.copy(os.path.join(TOP, "scripts", f), os.path.join(top, "scripts", f))
        shutil.copytree(os.path.join(TOP, "py", "ecnproxy"), os.path.join(top, "py", "ecnproxy"),
                        ignore=shutil.ignore_patterns("__pycache__"))
    return copy
