# SPDX-License-Identifier: GPL-2.0
"""keep-captures RESULTS_DIR: publish the captures a run kept (KEEP_PCAPS=1).

  scripts/ecnproxy keep-captures RESULTS_DIR [--level N]

RESULTS_DIR/pcaps/ is what the guest writes, and results/.gitignore keeps
it (and every *.pcap) out of git: the uncompressed captures are too large
to commit.  This compresses each file of pcaps/ with xz (level 6 unless
--level says otherwise) into RESULTS_DIR/captures/NAME.xz, checks the
copy by decompressing it, and removes the original; pcaps/ goes when it
is empty.  The readers of captures (scripts/ecnproxy events, event-cycle,
mptcp-joins) look in captures/ first.  Files already compressed there are
left alone; a file in both places is an error (rerun after removing one).
Exit 0 when pcaps/ is gone, 1 on an error, 2 on bad arguments.

Python 3 standard library only (lzma).
"""
import argparse
import lzma
import os
import sys


def keep(resdir, level=6):
    """Compress RESDIR/pcaps/* into RESDIR/captures/; return (moved, problems)."""
    src = os.path.join(resdir, "pcaps")
    dst = os.path.join(resdir, "captures")
    if not os.path.isdir(src):
        return 0, ["%s: no pcaps/ (nothing kept, or already published)" % resdir]
    os.makedirs(dst, exist_ok=True)
    moved, problems = 0, []
    for name in sorted(os.listdir(src)):
        path = os.path.join(src, name)
        if not os.path.isfile(path):
            problems.append("%s: not a file" % path)
            continue
        out = os.path.join(dst, name if name.endswith(".xz") else name + ".xz")
        if os.path.exists(out):
            problems.append("%s: %s exists already" % (path, out))
            continue
        with open(path, "rb") as f:
            data = f.read()
        if name.endswith(".xz"):
            blob = data
        else:
            blob = lzma.compress(data, preset=level)
            if lzma.decompress(blob) != data:
                problems.append("%s: the compressed copy does not read back" % path)
                continue
        with open(out + ".tmp", "wb") as f:
            f.write(blob)
        os.replace(out + ".tmp", out)
        os.remove(path)
        moved += 1
    if not problems and not os.listdir(src):
        os.rmdir(src)
    return moved, problems


def main(argv=None):
    ap = argparse.ArgumentParser(prog="keep-captures", description=__doc__.split("\n")[0])
    ap.add_argument("resdir", metavar="RESULTS_DIR")
    ap.add_argument("--level", type=int, default=6, choices=range(0, 10),
                    help="xz preset (default: %(default)s)")
    a = ap.parse_args(argv)
    moved, problems = keep(a.resdir, a.level)
    for p in problems:
        print("keep-captures: %s" % p, file=sys.stderr)
    print("keep-captures: %d file(s) compressed into %s" % (
        moved, os.path.join(a.resdir, "captures")))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
