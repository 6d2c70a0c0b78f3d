# SPDX-License-Identifier: GPL-2.0
"""Table of scripts/bench-dupack results: scripts/ecnproxy bench-dupack-table OUTDIR

Reads OUTDIR/runs.jsonl and OUTDIR/meta.json (written in the guest) and
prints a Markdown table: per configuration the number of byte-exact runs,
the median completion time (with min and max), the median ratio to
end-to-end ECN, and median proxy events, sender recoveries, undos and RTOs.
"""
import json
import statistics
import sys
from pathlib import Path

ORDER = ["noecn", "e2e-ecn", "proxy-none", "proxy-drop", "proxy-dupack"]


def main(out):
    out = Path(out)
    meta = json.loads((out / "meta.json").read_text())
    runs = [json.loads(line) for line in (out / "runs.jsonl").read_text().splitlines()
            if line.strip()]
    by = {c: [r for r in runs if r["config"] == c] for c in ORDER}
    ok = {c: [r for r in by[c] if r["byte_exact"] and r["seconds"] is not None] for c in ORDER}
    med = {c: statistics.median(r["seconds"] for r in ok[c]) for c in ORDER if ok[c]}
    print("Upload of %d bytes with %s UDP cross traffic over a %s bottleneck, %d "
          "interleaved repetitions, kernel %s.\n" % (meta["size"], meta["cross"], meta["rate"],
                                                      meta["reps"], meta["kernel"]))
    print("| configuration | runs ok | median s | min-max s | ratio to e2e ECN "
          "| proxy events | recoveries | undos | RTOs |")
    print("|---|---|---|---|---|---|---|---|---|")
    for c in ORDER:
        if c not in med:
            print("| %s | 0/%d | - | - | - | - | - | - | - |" % (c, len(by[c])))
            continue
        secs = [r["seconds"] for r in ok[c]]
        ratio = "%.2f" % (med[c] / med["e2e-ecn"]) if "e2e-ecn" in med else "-"

        def m(k):
            return "%g" % statistics.median(r[k] for r in ok[c])
        print("| %s | %d/%d | %.2f | %.2f-%.2f | %s | %s | %s | %s | %s |" % (
            c, len(ok[c]), len(by[c]), med[c], min(secs), max(secs), ratio,
            m("proxy_events"), m("recoveries"), m("undos"), m("timeouts")))


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(sys.argv[1])
