# SPDX-License-Identifier: GPL-2.0
"""The table of kmod/ecn_proxy/DUPACK.md "Measured", from a proxy_dupack log.

  scripts/ecnproxy dupack-table DIR   (DIR holds the test's `log`, as
                                      published by scripts/publish-vmtest)

Reads the INFO lines proxy_dupack.sh prints per sender configuration and
prints a Markdown table: seconds, events, N's recoveries, undos, RTOs,
TCPRenoReorder, events answered by N, give-ups (dupack_aborts), duplicates
of a "lost" segment at E and the longest gap between new data at E.
"""
import json
import os
import re
import sys

NAMES = {"cubic-sack1-ts1": "CUBIC, SACK, TS", "cubic-sack1-ts0": "CUBIC, SACK, no TS",
         "cubic-sack0-ts1": "CUBIC, no SACK, TS", "cubic-sack0-ts0": "CUBIC, no SACK, no TS",
         "reno-sack1-ts1": "Reno, SACK, TS", "reno-sack0-ts1": "Reno, no SACK, TS"}


def main(d):
    rows = {}
    with open(os.path.join(d, "log")) as f:
        for line in f:
            m = re.match(r"INFO: (\S+): (\d+) bytes in ([\d.]+) s", line)
            if m:
                rows.setdefault(m.group(1), {}).update(
                    {"s": float(m.group(3)), "bytes": int(m.group(2))})
                continue
            m = re.match(r"INFO: (\S+): at the server (\{.*\})", line)
            if m:
                rows.setdefault(m.group(1), {}).update(json.loads(m.group(2)))
                continue
            m = re.match(r"INFO: (\S+): events=", line)
            if m:
                kv = dict(x.split("=", 1) for x in line.split(": ", 2)[2].split())
                rows.setdefault(m.group(1), {}).update(
                    {k: int(v) for k, v in kv.items() if v.lstrip("-").isdigit()})
    print("| sender | s | events | N recoveries | undos | RTOs | `TCPRenoReorder` "
          "| answered by N | give-ups | dup of a \"lost\" segment at E | max gap s |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for key, name in NAMES.items():
        r = rows.get(key)
        if not r:
            continue
        print("| %s | %.1f | %d | %d | %d | %d | %d | %d | %d | %d | %.3f |" % (
            name, r.get("s", 0), r.get("events", 0), r.get("responses", 0), r.get("undo", 0),
            r.get("TCPTimeouts", 0), r.get("TCPRenoReorder", 0), r.get("events_answered", 0),
            r.get("dupack_aborts", 0), r.get("dup_lost", 0), r.get("max_gap", 0)))
    if "long" in rows:
        r = rows["long"]
        print("\nLong run: %d bytes in %.1f s; events %d, recoveries %d, undos %d, "
              "RTOs %d." % (r.get("bytes", 0), r.get("s", 0), r.get("events", 0),
                            r.get("responses", 0), r.get("undo", 0), r.get("timeouts", 0)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
