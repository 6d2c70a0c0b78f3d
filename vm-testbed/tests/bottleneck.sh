#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The bottleneck holds: one TCP flow's goodput through the router's
# HTB + RED is 70-105 % of the configured rate, in the download setup
# (router eth1 limited) and the upload setup (router eth2 limited).  The
# iperf3 CPU figures are logged so a CPU-bound run shows.
#
#   client --[net0]-- proxy --[net1]-- router --[net2]-- server
#            download: <========= 10M (eth1)      100M (eth2)
#            upload:   100M (eth1)         10M (eth2) ===========>
# tb-suite: extended (make vmtest-extended; not in make test, for time)
set -e
. "$(dirname "$0")/../lib/testlib.sh"
trap tb_cleanup EXIT
tb_knob_int secs TB_BOTTLENECK_SECS 10 1 3600
require_cmd iperf3 jq

for setup in download upload; do
	TB_SETUP=$setup
	tb_up
	rate=$TB_RATE_LOW
	rate_bps=$(($(echo "$rate" | sed 's/mbit$//') * 1000000))
	args=(-t "$secs" -O 2)
	[ "$setup" = download ] && args+=(-R)
	tb_iperf "$setup" client server "${args[@]}"
	bps=$(jq_num "$TB_OUT/$setup.json" '.end.sum_received.bits_per_second | floor')
	cpu=$(jq_num "$TB_OUT/$setup.json" \
		'"sender \(.end.cpu_utilization_percent.host_total|floor)% receiver \(.end.cpu_utilization_percent.remote_total|floor)%"')
	pct=$((bps * 100 / rate_bps))
	log_info "$setup: goodput $bps bit/s = $pct % of $rate (cpu: $cpu)"
	echo "$setup $bps $rate_bps" >>"$TB_OUT/goodput.txt"
	RET=0
	[ "$pct" -ge 70 ] && [ "$pct" -le 105 ] ||
		check_err 1 "goodput $pct % of $rate, expected 70-105 %"
	log_test "$setup: one flow's goodput is 70-105 % of $rate"
	tb_down
done

exit $EXIT_STATUS
