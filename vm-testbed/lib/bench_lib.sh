# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
#
# Forwarding-rate measurement for the benchmarks in vm-testbed/bench/.
# Source after testlib.sh; needs an iperf3 server on port 5201 in the
# server namespace (bench_server_start).

# bench_server_start: the iperf3 server the measurements use
bench_server_start() {
	tb_bg iperf-srv server iperf3 -s -p 5201
	tb_wait_port server 5201
}

# bench_no_qdisc: remove the router's HTB/RED, so the guest CPU is the limit
bench_no_qdisc() {
	local dev
	for dev in eth1 eth2; do
		tb_ns router tc qdisc del dev "$dev" root 2>/dev/null || true
	done
}

# cpu_jiffies: idle (idle + iowait) and total jiffies of the guest
cpu_jiffies() {
	awk '$1 == "cpu" { t = 0; for (i = 2; i <= NF; i++) t += $i; print $5 + $6, t }' /proc/stat
}

# bench_rate SECS [IPERF3 ARGS...]: an iperf3 upload from the client to the
# server; from 2 s in, for SECS s, the packets per second leaving the proxy
# node's eth1 and the guest's idle share.  Prints "PPS IDLE OK" (OK: true
# if iperf3 succeeded).
bench_rate() {
	local secs=$1 ipid i0 t0 i1 t1 p0 p1 s0 s1 ok=true
	shift
	tb_ns client iperf3 -c "$(tb_addr server 4)" -p 5201 -t $((secs + 3)) -J "$@" \
		>"$TB_OUT/iperf.json" 2>&1 &
	ipid=$!
	sleep 2
	read -r i0 t0 < <(cpu_jiffies)
	p0=$(tb_ns proxy cat /sys/class/net/eth1/statistics/tx_packets)
	s0=$(date +%s.%N)
	sleep "$secs"
	p1=$(tb_ns proxy cat /sys/class/net/eth1/statistics/tx_packets)
	s1=$(date +%s.%N)
	read -r i1 t1 < <(cpu_jiffies)
	wait $ipid || ok=false
	awk -v a="$p0" -v b="$p1" -v x="$s0" -v y="$s1" -v i="$i0" -v j="$i1" \
		-v t="$t0" -v u="$t1" -v ok=$ok \
		'BEGIN { printf "%.1f %.4f %s\n", (b - a) / (y - x), (j - i) / (u - t), ok }'
}
