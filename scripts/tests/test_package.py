# SPDX-License-Identifier: GPL-2.0
"""The Python code is one package, py/ecnproxy (its __init__.py has the
layout), and stays that way:

- no import cycle (every import counts, also one inside a function), and
  imports follow the layers: cli imports none of the commands; host,
  guest, vmtest and tables import analysis, impair_plan and paths but not
  one another; analysis only itself, impair_plan and paths;
- nothing edits the interpreter's module search path (the shell entry
  points set PYTHONPATH instead), anywhere in the tree;
- no Python file outside the package but the tests themselves;
- every module imports on its own, in a fresh interpreter;
- scripts/ecnproxy lists every module that can run, and every command it
  lists is such a module; the guest's entry points start and print their
  usage without arguments; every `python3 -m ecnproxy...` and
  `scripts/ecnproxy COMMAND` in the shell scripts names one of them.
"""
import ast
import os
import re
import subprocess
import sys

import pytest

from ecnproxy import cli
from ecnproxy.paths import PY, TOP, python_env
from test_license import tracked_files  # git's files but results/, kernel-patches/, build/

PKG = os.path.join(PY, "ecnproxy")
SUBPACKAGES = ("host", "guest", "vmtest", "tables", "analysis")
# what each part may import (besides itself and its parent packages)
ALLOWED = {"host": {"analysis", "impair_plan", "paths"},
           "guest": {"analysis", "impair_plan", "paths"},
           "vmtest": {"analysis", "impair_plan", "paths"},
           "tables": {"analysis", "impair_plan", "paths"},
           "analysis": {"impair_plan", "paths"},
           "impair_plan": set(), "paths": set(), "cli": set(), "__main__": {"cli"}}


def modules():
    """{dotted name: path} of every module and package of ecnproxy."""
    out = {}
    for d, dirs, files in os.walk(PKG):
        dirs[:] = sorted(x for x in dirs if x != "__pycache__")
        for f in sorted(files):
            if f.endswith(".py"):
                rel = os.path.relpath(os.path.join(d, f), PY)[:-3].split(os.sep)
                if rel[-1] == "__init__":
                    rel = rel[:-1]
                out[".".join(rel)] = os.path.join(d, f)
    return out


MODULES = modules()


def is_package(name):
    return MODULES.get(name, "").endswith("__init__.py")


def imports(name, path):
    """The ecnproxy modules that module NAME imports, wherever in it."""
    pkg = name if is_package(name) else name.rpartition(".")[0]
    with open(path) as f:
        tree = ast.parse(f.read(), path)
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = pkg.split(".")
                base = base[:len(base) - node.level + 1]
                mod = ".".join(base + ([node.module] if node.module else []))
            else:
                mod = node.module
            out.add(mod)
            # `from PACKAGE import submodule`
            out.update(mod + "." + a.name for a in node.names if mod + "." + a.name in MODULES)
    return {m for m in out if m == "ecnproxy" or m.startswith("ecnproxy.")}


GRAPH = {n: imports(n, p) for n, p in MODULES.items()}


def part(name):
    """host, guest, ... for ecnproxy.host.matrix; the module for ecnproxy.paths."""
    p = name.split(".")
    return p[1] if len(p) > 1 else None


def test_the_package_has_its_parts():
    assert {part(n) for n in MODULES} >= set(SUBPACKAGES) | {"cli", "paths", "impair_plan"}
    for n, deps in GRAPH.items():
        for d in deps:
            assert d in MODULES, "%s imports %s, which is not in the package" % (n, d)


def cycles(graph):
    """The import cycles of GRAPH ({module: {module}}): Tarjan's strongly
    connected components of more than one module, or of one that imports
    itself."""
    index, low, stack, on, found = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1 or v in graph.get(v, ()):
                found.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_no_import_cycle():
    assert cycles(GRAPH) == []


def test_the_cycle_check_finds_a_cycle():
    """Not vacuous: the two cycles there were, put back."""
    g = dict(GRAPH)
    g["ecnproxy.analysis.stalls"] = g["ecnproxy.analysis.stalls"] | {"ecnproxy.analysis.pcapflow"}
    g["ecnproxy.guest.testbed"] = g["ecnproxy.guest.testbed"] | {"ecnproxy.guest.fairness"}
    assert cycles(g) == [["ecnproxy.analysis.pcapflow", "ecnproxy.analysis.stalls"],
                         ["ecnproxy.guest.fairness", "ecnproxy.guest.testbed"]]
    assert "ecnproxy.analysis.stalls" not in GRAPH["ecnproxy.analysis.pcapread"]


def test_imports_follow_the_layers():
    bad = []
    for n, deps in sorted(GRAPH.items()):
        me = part(n)
        for d in sorted(deps):
            if is_package(d) and n.startswith(d + "."):
                continue  # a parent package: imported anyway
            if part(d) != me and part(d) not in ALLOWED.get(me, set()):
                bad.append("%s imports %s" % (n, d))
    assert not bad, bad


# sys.path changed in place or rebound, or a site directory added; split
# so that this file does not match itself
SYS_PATH_EDIT = re.compile(r"\bsys" + r"\.path\s*(\.\s*(insert|append|extend|remove|pop|clear)\s*\("
                           r"|(\[[^\]]*\])?\s*\+?=(?!=))|\bsite" + r"\.addsitedir\s*\(")


def text(f):
    with open(os.path.join(TOP, f), "rb") as fh:
        data = fh.read()
    return None if b"\0" in data[:8192] else data.decode("utf-8", "replace")


def test_the_pattern_finds_an_edit():
    for s in ("sys" + ".path.insert(0, HERE)", "sys" + ".path[:0] = [d]",
              "sys" + ".path += extra", "sys" + ".path = []", "site" + ".addsitedir(d)"):
        assert SYS_PATH_EDIT.search(s), s
    for s in ("print(sys" + ".path)", "if d in sys" + ".path == x:", "no `sys" + ".path` edits"):
        assert not SYS_PATH_EDIT.search(s), s


def test_nothing_edits_sys_path():
    files = tracked_files()
    assert len(files) > 100
    hits = []
    for f in files:
        t = text(f)
        for i, line in enumerate((t or "").split("\n"), 1):
            if SYS_PATH_EDIT.search(line):
                hits.append("%s:%d: %s" % (f, i, line.strip()))
    assert not hits, hits


def test_python_only_in_the_package():
    stray = []
    for f in tracked_files():
        if f.startswith(("py/ecnproxy/", "scripts/tests/")):
            continue
        t = text(f) or ""
        if f.endswith(".py") or re.match(r"#![^\n]*python", t):
            stray.append(f)
    assert not stray, "Python outside py/ecnproxy/: %s" % stray


@pytest.mark.parametrize("name", sorted(n for n in MODULES if n != "ecnproxy.__main__"))
def test_module_imports_alone(name):
    p = subprocess.run([sys.executable, "-c", "import " + name], capture_output=True,
                       text=True, timeout=120, env=python_env(), cwd="/")
    assert p.returncode == 0, p.stderr


def runnable():
    out = set()
    for n, path in MODULES.items():
        with open(path) as f:
            tree = ast.parse(f.read(), path)
        for node in tree.body:
            if isinstance(node, ast.If) and "__main__" in ast.unparse(node.test):
                out.add(n)
    return out - {"ecnproxy.__main__"}


def test_the_cli_lists_every_runnable_module():
    listed = set(cli.MODULES.values())
    assert len(listed) == len(cli.COMMANDS), "a module under two commands"
    assert listed == runnable()
    assert {g for g, *_ in cli.COMMANDS} == set(cli.GROUPS)


def test_the_cli_without_a_command():
    p = subprocess.run([sys.executable, "-m", "ecnproxy"], capture_output=True, text=True,
                       timeout=60, env=python_env(), cwd="/")
    assert p.returncode == 2 and "results-index" in p.stderr and "matrix-guest" in p.stderr
    p = subprocess.run([sys.executable, "-m", "ecnproxy", "no-such"], capture_output=True,
                       text=True, timeout=60, env=python_env(), cwd="/")
    assert p.returncode == 2 and "no command 'no-such'" in p.stderr


GUEST = sorted(n for n in runnable() if part(n) in ("guest", "vmtest"))


@pytest.mark.parametrize("name", GUEST)
def test_a_guest_entry_point_starts_without_arguments(name):
    """What the guest runs, run on the host with no arguments (and nothing
    on stdin): the agent says it is ready and ends with its input; every
    other one prints its usage and fails, before it touches a socket."""
    p = subprocess.run([sys.executable, "-m", name], capture_output=True, text=True,
                       timeout=60, env=python_env(), cwd="/", stdin=subprocess.DEVNULL)
    assert "Traceback" not in p.stderr, p.stderr
    if name == "ecnproxy.guest.agent":
        assert p.returncode == 0 and p.stdout == '{"ready": true}\n'
    else:
        assert p.returncode != 0, p.stdout
        assert "usage:" in p.stderr or "python3 -m " + name in p.stderr, p.stderr


def shell_scripts():
    for f in tracked_files():
        if f.startswith(("py/", "scripts/tests/", "docs/")) or f.endswith((".md", ".json")):
            continue
        t = text(f)
        if t and (f.endswith(".sh") or re.match(r"#!\S*(ba)?sh", t)):
            yield f, t


def test_the_shell_scripts_name_existing_modules_and_commands():
    mods, cmds = [], []
    for f, t in shell_scripts():
        code = "\n".join(ln for ln in t.split("\n") if not ln.lstrip().startswith("#"))
        mods += [(f, m) for m in re.findall(r"python3\b[^\n|;&]*?\s-m\s+(ecnproxy[\w.]*)", code)]
        cmds += [(f, c) for c in re.findall(r"/ecnproxy\"? ([a-z][a-z-]*)", code)]
    assert len(mods) >= 15 and len(cmds) >= 8, (mods, cmds)
    assert not [x for x in mods if x[1] not in MODULES], mods
    assert not [x for x in cmds if x[1] not in cli.MODULES], cmds
    # Python inside the shell scripts (heredocs, python3 -c)
    froms = [(f, m, n) for f, t in shell_scripts()
             for m, n in re.findall(r"^from (ecnproxy[\w.]*) import (\w+)", t, re.M)]
    assert len(froms) >= 3, froms
    for f, m, n in froms:
        __import__(m)
        assert hasattr(sys.modules[m], n) or m + "." + n in MODULES, (f, m, n)
    # the old file paths are gone
    old = [(f, m) for f, t in shell_scripts()
           for m in re.findall(r"(?:TB_LIB_DIR|scripts|here)/[a-z_0-9]+\.py\b", t)]
    assert not old, old
