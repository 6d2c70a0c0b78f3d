#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Guest side of scripts/bench-dupack: upload completion times with UDP cross
# traffic, for no ECN, end-to-end ECN and the proxy in each feedback mode,
# interleaved (each repetition runs every configuration once, in a shuffled
# order) in one guest session.  One JSON line per run in runs.jsonl.
#
#   client -- PROXY -- router(eth2: HTB $TB_RATE_LOW + RED ecn) -- server
#                              udp1 ==== UDP $BENCH_CROSS ====> udp2
set -e
. "$(dirname "$0")/../lib/testlib.sh"
trap tb_cleanup EXIT

tb_knob_int size TB_BENCH_SIZE 8000000 1
tb_knob_int reps TB_BENCH_REPS 5 1
tb_knob_match cross TB_BENCH_CROSS 4M '[0-9]+(\.[0-9]+)?[KMG]?' 'a UDP rate for iperf3 -b (4M, 500K)'
tb_knob_int seed TB_BENCH_SEED 1 0

# name client_ecn server_ecn proxy feedback
configs=(
	"noecn 0 0 off -"
	"e2e-ecn 1 1 off -"
	"proxy-none 0 1 on none"
	"proxy-drop 0 1 on drop"
	"proxy-dupack 0 1 on dupack"
)

tb_proxy_load
TB_SETUP=upload
tb_up
tb_cross_start "$cross" up
echo "{\"size\": $size, \"reps\": $reps, \"cross\": \"$cross\", \"rate\": \"$TB_RATE_LOW\", \"seed\": $seed, \"kernel\": \"$(uname -r)\"}" >meta.json

nstat_sum() {
	tb_ns "$1" nstat -az "${@:2}" | awk '$1 ~ /^Tcp/ { s += $2 } END { print s + 0 }'
}

RANDOM=$seed
for rep in $(seq "$reps"); do
	order=$(for i in "${!configs[@]}"; do echo "$RANDOM $i"; done | sort -n | awk '{ print $2 }')
	for i in $order; do
		read -r name cecn secn prx fb <<<"${configs[$i]}"
		tb_tcp client ecn="$cecn"
		tb_tcp server ecn="$secn"
		if [ "$prx" = on ]; then tb_proxy on "$fb"; else tb_proxy off; fi
		tb_fresh_transfer
		ev0=$(tb_proxy_stat congestion_events)
		rec0=$(nstat_sum client TcpExtTCPSackRecovery TcpExtTCPRenoRecovery)
		undo0=$(nstat_sum client TcpExtTCPFullUndo TcpExtTCPPartialUndo TcpExtTCPDSACKUndo TcpExtTCPLossUndo TcpExtTCPSpuriousRTOs)
		to0=$(nstat_sum client TcpExtTCPTimeouts)
		ret0=$(nstat_sum client TcpRetransSegs)
		ok=true
		tb_xfer "$name-$rep" 4 "$size" 1000 || ok=false
		secs=$(jq -r .seconds "$TB_OUT/$name-$rep.client.json" 2>/dev/null || echo null)
		ev=$(($(tb_proxy_stat congestion_events) - ev0))
		rec=$(($(nstat_sum client TcpExtTCPSackRecovery TcpExtTCPRenoRecovery) - rec0))
		undo=$(($(nstat_sum client TcpExtTCPFullUndo TcpExtTCPPartialUndo TcpExtTCPDSACKUndo TcpExtTCPLossUndo TcpExtTCPSpuriousRTOs) - undo0))
		to=$(($(nstat_sum client TcpExtTCPTimeouts) - to0))
		ret=$(($(nstat_sum client TcpRetransSegs) - ret0))
		echo "{\"config\": \"$name\", \"rep\": $rep, \"seconds\": ${secs:-null}, \"byte_exact\": $ok, \"proxy_events\": $ev, \"recoveries\": $rec, \"undos\": $undo, \"timeouts\": $to, \"retrans_segs\": $ret}" | tee -a runs.jsonl
		rm -f "$TB_OUT/$name-$rep".*.json
	done
done
tb_cross_stop
