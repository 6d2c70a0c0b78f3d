# SPDX-License-Identifier: GPL-2.0
"""Where things are, found from this file (py/ecnproxy/paths.py): the
checkout and the directories the commands read and write, and the
environment a child process needs to run a module of this package
(`python3 -m ecnproxy...`)."""
import os

PY = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # py/: on PYTHONPATH
TOP = os.path.dirname(PY)  # the checkout
PROFILES = os.path.join(TOP, "scripts", "profiles")
RESULTS = os.path.join(TOP, "results")


def python_env(env=None):
    """A copy of env (default os.environ) whose PYTHONPATH starts with py/,
    for a child process that runs `python3 -m ecnproxy...` (in the guest
    too: it sees the checkout at the same path)."""
    env = dict(os.environ if env is None else env)
    rest = [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p and p != PY]
    env["PYTHONPATH"] = os.pathsep.join([PY] + rest)
    return env
