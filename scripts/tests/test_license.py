# SPDX-License-Identifier: GPL-2.0
"""The licence: LICENSE is the GPL-2.0 that the modules' MODULE_LICENSE("GPL")
and every source file's SPDX line name, and no source file lacks that line
(the first line, or the second after a shebang)."""
import os
import re
import subprocess

TOP = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SPDX = "SPDX-License-Identifier: GPL-2.0"
# generated or data, not source: results, the in-tree series (its patches
# carry the sources' own SPDX lines), build output
SKIP_DIRS = ("results/", "kernel-patches/", "build/", ".venv/")
SOURCE = re.compile(r"(\.(c|h|sh|py|config|awk)|(^|/)(Makefile|Kbuild)|^dkms\.conf)$")


def tracked_files():
    try:
        out = subprocess.run(["git", "-C", TOP, "ls-files"], check=True,
                             stdout=subprocess.PIPE, text=True).stdout.split("\n")
    except (OSError, subprocess.CalledProcessError):
        out = [os.path.relpath(os.path.join(d, f), TOP)
               for d, _, fs in os.walk(TOP) for f in fs]
    return sorted(f for f in out if f and not f.startswith(SKIP_DIRS)
                  and os.path.isfile(os.path.join(TOP, f)))


def source_files():
    for f in tracked_files():
        with open(os.path.join(TOP, f), "rb") as fh:
            head = fh.read(2)
        if SOURCE.search(f) or head == b"#!":
            yield f


def test_every_source_file_has_an_spdx_line():
    files = list(source_files())
    assert len(files) > 100, f"found only {len(files)} source files"
    missing = []
    for f in files:
        with open(os.path.join(TOP, f), encoding="utf-8", errors="replace") as fh:
            lines = fh.read().split("\n", 2)
        first = lines[1] if lines[0].startswith("#!") and len(lines) > 1 else lines[0]
        if SPDX not in first:
            missing.append(f)
    assert not missing, ("no '%s' as the first line (after a shebang): %s"
                         % (SPDX, ", ".join(missing)))


def test_license_file_is_the_gpl2_the_modules_declare():
    with open(os.path.join(TOP, "LICENSE")) as fh:
        text = fh.read()
    assert "GNU GENERAL PUBLIC LICENSE" in text and "Version 2, June 1991" in text
    decls = []
    for f in tracked_files():
        if f.startswith("kmod/") and f.endswith(".c"):
            with open(os.path.join(TOP, f)) as fh:
                decls += re.findall(r'MODULE_LICENSE\("([^"]*)"\)', fh.read())
    assert len(decls) >= 3, "no MODULE_LICENSE found in kmod/"
    assert set(decls) == {"GPL"}, decls
