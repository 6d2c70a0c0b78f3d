#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Delivery of one TCP connection's client->server data, seen in a pcap.

  pcap_flow.py PCAP SERVER_PORT

Runs tshark once and prints JSON for the direction toward SERVER_PORT:
  data       segments with payload
  new        segments that carried at least one byte not seen before
  dup        segments whose bytes had all been seen before (a retransmission
             of data that had already arrived: what the receiver would D-SACK)
  dup_bytes  bytes in those
  max_gap    longest time (s) between two segments carrying new bytes, from
             the first data segment to the last
  first, last  times (s) of the first and last data segment
Relative sequence numbers (one connection per capture, no wraparound).
"""
import json
import subprocess
import sys


def main(pcap, port):
    port = int(port)
    cmd = ["tshark", "-n", "-r", pcap, "-Y",
           "tcp.dstport == %d && tcp.len > 0" % port, "-T", "fields",
           "-E", "separator=|", "-e", "frame.time_relative", "-e", "tcp.seq",
           "-e", "tcp.len"]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    # received intervals, merged: [start, end) sorted
    have = []
    res = dict(data=0, new=0, dup=0, dup_bytes=0, max_gap=0.0, first=None,
               last=None)
    last_new = None
    for line in out.splitlines():
        t, seq, ln = line.split("|")
        t, seq, ln = float(t), int(seq), int(ln)
        end = seq + ln
        res["data"] += 1
        if res["first"] is None:
            res["first"] = t
        res["last"] = t
        covered = sum(max(0, min(end, e) - max(seq, s)) for s, e in have)
        if covered >= ln:
            res["dup"] += 1
            res["dup_bytes"] += ln
            continue
        res["new"] += 1
        if last_new is not None:
            res["max_gap"] = max(res["max_gap"], t - last_new)
        last_new = t
        have.append((seq, end))
        have.sort()
        merged = [have[0]]
        for s, e in have[1:]:
            if s <= merged[-1][1]:
                merged[-1] = (merged[-1][0], max(merged[-1][1], e))
            else:
                merged.append((s, e))
        have = merged
    res["max_gap"] = round(res["max_gap"], 3)
    print(json.dumps(res))


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    main(*sys.argv[1:])
