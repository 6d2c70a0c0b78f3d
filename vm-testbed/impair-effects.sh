#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Effects of two impairments on single iperf3 flows (run in the guest):
#
#   vm-testbed/vm-run -o build/impair-effects -t 1500 -- vm-testbed/impair-effects.sh
#
# 1. seq randomising without sack-fix vs with sack-fix, plus 1 % loss (a
#    drop rule on the initiator's segments after the first 20), on a
#    SACK-enabled upload: goodput, RTOs (TcpExtTCPTimeouts), retransmitted
#    segments, SACK recoveries, SACK blocks discarded as invalid
#    (TcpExtTCPSACKDiscard), and stalls (iperf3 intervals of 0.2 s without
#    a byte delivered);
# 2. wscale stripped from the SYN-ACK only (the client believes scaling is
#    off, the server does not): goodput of an upload and a download against
#    the same flows without the rule.
#
# Topology: TB_SETUP=upload, bottleneck TB_RATE_LOW (10mbit) toward the
# server, TB_DELAY_MS (20) of netem delay on the server's link; rules in
# the proxy namespace.  Configurations interleave, shuffled per repetition
# (TB_IMPAIR_REPS, 3), each run TB_IMPAIR_SECS (10) seconds.  Every run is
# one JSON line in OUTDIR/impair-effects.jsonl; the medians go to
# OUTDIR/impair-effects-summary.txt.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
export TB_SETUP=${TB_SETUP:-upload}
export TB_RATE_LOW=${TB_RATE_LOW:-10mbit}
export TB_DELAY_MS=${TB_DELAY_MS:-20}
. "$here/lib/testlib.sh"
. "$here/lib/impair_lib.sh"
out=$PWD
REPS=${TB_IMPAIR_REPS:-3}
SECS=${TB_IMPAIR_SECS:-10}
PORT=5201
jsonl=$out/impair-effects.jsonl
: >"$jsonl"
trap tb_cleanup EXIT

impair_load
tb_up
tb_tcp client sack=1 ecn=0
tb_tcp server sack=1 ecn=0

DROP="dir initiator after 20 drop 0.01"
declare -A RULES=(
	[loss-only]="$DROP"
	[seqrand-stale+loss]="dport $PORT seqrand|$DROP"
	[seqrand-sackfix+loss]="dport $PORT seqrand sack-fix|$DROP"
	[control-up]=""
	[synack-nows-up]="flags synack strip wscale"
	[control-down]=""
	[synack-nows-down]="flags synack strip wscale"
)

nstat_abs() {
	tb_ns "$1" nstat -asz -j
}

run() {
	local cfg=$1 rep=$2 dir=up sender=client r rules=() name
	[[ $cfg == *-down ]] && dir=down && sender=server
	IFS='|' read -r -a rules <<<"${RULES[$cfg]}"
	impair_set "${rules[@]}"
	name=$cfg-$rep
	nstat_abs "$sender" >"$out/$name.nstat0.json"
	tb_iperf "$name" client server -t "$SECS" -i 0.2 $([ $dir = down ] && echo -R) ||
		echo "iperf3 failed: $cfg rep $rep" >&2
	nstat_abs "$sender" >"$out/$name.nstat1.json"
	impair_list >"$out/$name.rules"
	python3 - "$out" "$name" "$cfg" "$rep" "$dir" "${RULES[$cfg]}" >>"$jsonl" <<'PY'
import json, sys
out, name, cfg, rep, d, rules = sys.argv[1:7]
def ld(p):
    with open(f"{out}/{name}.{p}") as f:
        return json.load(f)
n0, n1 = ld("nstat0.json")["kernel"], ld("nstat1.json")["kernel"]
diff = {k: n1.get(k, 0) - n0.get(k, 0) for k in n1}
ip = ld("json")
iv = [i["sum"]["bytes"] for i in ip.get("intervals", [])]
rec = {
    "config": cfg, "rep": int(rep), "dir": d, "rules": rules,
    "goodput_mbps": round(ip["end"]["sum_received"]["bits_per_second"] / 1e6, 3),
    "retransmits_iperf": ip["end"]["sum_sent"].get("retransmits"),
    "rto": diff.get("TcpExtTCPTimeouts", 0),
    "retrans_segs": diff.get("TcpRetransSegs", 0),
    "sack_recovery": diff.get("TcpExtTCPSackRecovery", 0),
    "sack_discard": diff.get("TcpExtTCPSACKDiscard", 0),
    "loss_probes": diff.get("TcpExtTCPLossProbes", 0),
    "stalled_intervals_0.2s": sum(1 for b in iv if b == 0),
    "intervals": len(iv),
}
print(json.dumps(rec))
PY
	tail -n 1 "$jsonl"
}

for rep in $(seq "$REPS"); do
	for cfg in $(printf '%s\n' "${!RULES[@]}" | shuf); do
		run "$cfg" "$rep"
	done
done

python3 - "$jsonl" <<'PY' | tee "$out/impair-effects-summary.txt"
import json, statistics, sys
runs = [json.loads(l) for l in open(sys.argv[1])]
cfgs = sorted({r["config"] for r in runs})
keys = ["goodput_mbps", "rto", "retrans_segs", "sack_recovery", "sack_discard",
        "stalled_intervals_0.2s"]
print("%-22s %4s  " % ("config", "n") + "  ".join("%22s" % k for k in keys))
for c in cfgs:
    rs = [r for r in runs if r["config"] == c]
    cells = []
    for k in keys:
        v = [r[k] for r in rs]
        cells.append("%8.3g [%5.3g-%5.3g]" % (statistics.median(v), min(v), max(v)))
    print("%-22s %4d  " % (c, len(rs)) + "  ".join("%22s" % x for x in cells))
print("median [min-max] over repetitions; rules:")
for c in cfgs:
    print("  %-22s %s" % (c, next(r["rules"] for r in runs if r["config"] == c) or "(none)"))
PY
