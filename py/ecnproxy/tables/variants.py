# SPDX-License-Identifier: GPL-2.0
"""Side by side: each VM test on the plain testbed and on a variant.

  scripts/ecnproxy variant-table RUN_DIR [VARIANT]

RUN_DIR is a run-vm-tests.sh output directory (build/vm/tests after make
test, or a copy published under results/); VARIANT defaults to "home".
For every test that ran both as NAME and as NAME@VARIANT, prints a
markdown table of its checks in order: the check's text with its figures
replaced by "#", then the plain run's figures and result, then the
variant's.  Checks that only one of the two runs has (the home router's
firewall check) are listed with "-" on the other side.  Then the
durations, if the runner recorded them (durations.txt).

Exit status 3, with nothing on standard output and the reason on standard
error, when no test ran both ways (a run of the variant alone, such as
make vmtest-home's): there is no table to make.
"""
import os
import re
import sys

NUM = re.compile(r"-?\d+(?:\.\d+)?(?:/\d+)?")
LINE = re.compile(r"^TEST: (.*?)\s+\[ ?(OK|FAIL) ?\]\s*$")


def checks(path):
    out = []
    try:
        with open(path, errors="replace") as f:
            for line in f:
                m = LINE.match(line.rstrip("\n"))
                if m:
                    text = m.group(1)
                    out.append((NUM.sub("#", text), ", ".join(NUM.findall(text)),
                                m.group(2)))
    except OSError:
        pass
    return out


def align(a, b):
    """Pair the two lists of checks by key, in order (LCS)."""
    n, m = len(a), len(b)
    best = [[0] * (m + 1) for _ in range(n + 1)]
    for i in range(n - 1, -1, -1):
        for j in range(m - 1, -1, -1):
            best[i][j] = (best[i + 1][j + 1] + 1 if a[i][0] == b[j][0]
                          else max(best[i + 1][j], best[i][j + 1]))
    i = j = 0
    rows = []
    while i < n or j < m:
        if i < n and j < m and a[i][0] == b[j][0]:
            rows.append((a[i][0], a[i], b[j]))
            i, j = i + 1, j + 1
        elif j >= m or (i < n and best[i + 1][j] >= best[i][j + 1]):
            rows.append((a[i][0], a[i], None))
            i += 1
        else:
            rows.append((b[j][0], None, b[j]))
            j += 1
    return rows


def cell(c):
    if c is None:
        return "-"
    res = "ok" if c[2] == "OK" else "**FAIL**"
    return "%s (%s)" % (c[1], res) if c[1] else res


def main(argv):
    if len(argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    run = argv[1]
    var = argv[2] if len(argv) > 2 else "home"
    tdir = os.path.join(run, "tests")
    names = sorted(d for d in os.listdir(tdir) if "@" not in d and
                   os.path.isdir(os.path.join(tdir, d + "@" + var)))
    if not names:
        print("variant-table: no test in %s ran both as NAME and as "
              "NAME@%s" % (tdir, var), file=sys.stderr)
        return 3
    durations = {}
    try:
        with open(os.path.join(run, "durations.txt")) as f:
            for line in f:
                p = line.split()
                if len(p) >= 2:
                    durations[p[0]] = p[1]
    except OSError:
        pass
    print("# Plain testbed and TB_ROUTER=%s, side by side\n" % var)
    print("From `%s` (`scripts/ecnproxy variant-table`).  Figures of each check "
          "as its line printed them, in order.\n" % run)
    summary = []
    for name in names:
        a = checks(os.path.join(tdir, name, "log"))
        b = checks(os.path.join(tdir, name + "@" + var, "log"))
        okp = sum(c[2] == "OK" for c in a)
        okv = sum(c[2] == "OK" for c in b)
        summary.append((name, okp, len(a), okv, len(b)))
        print("## %s\n" % name)
        print("| check | plain | %s |" % var)
        print("| --- | --- | --- |")
        for key, x, y in align(a, b):
            print("| %s | %s | %s |" % (key.replace("|", "\\|"), cell(x), cell(y)))
        print()
    print("## Summary\n")
    print("| test | plain: checks passed | %s: checks passed | seconds (plain / %s) |" % (var, var))
    print("| --- | --- | --- | --- |")
    for name, okp, np_, okv, nv in summary:
        print("| %s | %d of %d | %d of %d | %s / %s |" % (
            name, okp, np_, okv, nv, durations.get(name, "?"),
            durations.get(name + "@" + var, "?")))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
