#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Guest side of scripts/bench-hook: what a FORWARD hook costs.  An iperf3
# upload from the client to the server is forwarded by the proxy node as
# fast as the guest's CPU allows: the router's HTB/RED qdiscs are removed,
# so no link and no AQM limits it (each run records the guest's CPU idle
# share to show that).  The proxy node's forwarding rate (packets per
# second leaving its eth1, from 2 s into the transfer for BENCH_SECS s) is
# measured for every configuration of bench_configs (bench_lib.sh), in
# full-size packets (MSS 1448) and in small ones (MSS 88, Linux's minimum:
# 76 bytes of payload with timestamps), interleaved: each repetition runs
# every (configuration, size) once, in a shuffled order.  One JSON line per run in runs.jsonl.
#
#   client -- eth0 PROXY eth1 -- router (no qdisc) -- server
#             (the hooks under test)
set -e
. "$(dirname "$0")/../lib/testlib.sh"
. "$(dirname "$0")/../lib/bench_lib.sh"
trap 'tb_bg_stop iperf-srv; tb_cleanup' EXIT
tb_knob_int reps TB_BENCH_REPS 6 1
tb_knob_int secs TB_BENCH_SECS 4 1 3600
tb_knob_int seed TB_BENCH_SEED 1 0
require_cmd iperf3 nft iptables jq

TB_SETUP=upload
tb_up
bench_no_qdisc
bench_server_start
echo "{\"reps\": $reps, \"secs\": $secs, \"seed\": $seed, \"kernel\": \"$(uname -r)\", \"cpus\": $(nproc), \"configs\": $(printf '%s\n' "${bench_configs[@]}" | jq -R . | jq -sc .)}" >meta.json

RANDOM=$seed
for rep in $(seq "$reps"); do
	order=$(for c in "${bench_configs[@]}"; do for s in full small; do echo "$RANDOM $c $s"; done; done |
		sort -n | awk '{ print $2, $3 }')
	while read -r cfg size <&3; do
		bench_configure "$cfg"
		mss=()
		[ "$size" = small ] && mss=(-M 88)
		read -r pps idle ok < <(bench_rate "$secs" "${mss[@]}")
		bps=$(jq -r '.end.sum_received.bits_per_second // "null"' "$TB_OUT/iperf.json" 2>/dev/null || echo null)
		echo "{\"config\": \"$cfg\", \"size\": \"$size\", \"rep\": $rep, \"pps\": $pps, \"bps\": $bps, \"cpu_idle\": $idle, \"ok\": $ok}" | tee -a runs.jsonl
	done 3<<<"$order"
done
bench_unload_all
