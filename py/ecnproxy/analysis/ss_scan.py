# SPDX-License-Identifier: GPL-2.0
"""What each upload sender's kernel believed during a fairness run: the
`ss -ti` samples that guest/fairness.py writes every 200 ms with
the captures kept (KEEP_PCAPS=1, RESULTS/pcaps/ID.NS-ss.txt).

  scripts/ecnproxy ss-scan FILE [FILE ...]

Per file, of the connection with the most bytes acked (iperf3's data
connection): the number of samples, minrtt (ms) at the first sample from
10 s on and at the last, the smallest minrtt seen, the largest
`reordering` and the last `reord_seen` (RACK's reordering count), and the
last `retrans` total.  A `.xz` file is read as it is.
"""
import lzma
import re
import sys

KEYS = ("minrtt", "reordering", "reord_seen", "bytes_acked")


def parse(path):
    opener = lzma.open if path.endswith(".xz") else open
    samples = []            # (t, {key: value}) for the data connection
    t = None
    cur = []
    with opener(path, "rt") as f:
        lines = f.read().split("\n")

    def flush():
        best = None
        for d in cur:
            if best is None or d.get("bytes_acked", 0) > best.get("bytes_acked", 0):
                best = d
        if t is not None and best is not None:
            samples.append((t, best))

    for ln in lines:
        if ln.startswith("t "):
            flush()
            t = float(ln.split()[1])
            cur = []
            continue
        if not ln.strip():
            continue
        d = {}
        for k in KEYS:
            m = re.search(r"\b%s:([0-9.]+)" % k, ln)
            if m:
                d[k] = float(m.group(1))
        m = re.search(r"\bretrans:\d+/(\d+)", ln)
        if m:
            d["retrans"] = int(m.group(1))
        if ln.startswith((" ", "\t")) and cur:
            cur[-1].update(d)
        else:
            cur.append(d)
    flush()
    return samples


def main(argv):
    if not argv:
        print(__doc__, file=sys.stderr)
        return 2
    print("| file | samples | minrtt at 10 s ms | minrtt last ms | smallest minrtt ms "
          "| largest reordering | reord_seen last | retrans last |")
    print("|---|---|---|---|---|---|---|---|")
    for path in argv:
        s = [(t, d) for t, d in parse(path) if "minrtt" in d]
        if not s:
            print("| %s | 0 | - | - | - | - | - | - |" % path.rsplit("/", 1)[-1])
            continue
        t0 = s[0][0]
        later = [d for t, d in s if t - t0 >= 10] or [s[-1][1]]
        print("| %s | %d | %.2f | %.2f | %.2f | %d | %s | %s |" % (
            path.rsplit("/", 1)[-1], len(s), later[0]["minrtt"], s[-1][1]["minrtt"],
            min(d["minrtt"] for _, d in s), max(d.get("reordering", 0) for _, d in s),
            "%d" % s[-1][1]["reord_seen"] if "reord_seen" in s[-1][1] else "-",
            s[-1][1].get("retrans", "-")))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
