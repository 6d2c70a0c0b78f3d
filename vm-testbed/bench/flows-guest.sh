#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Guest side of scripts/bench-flows: does the proxy's per-packet cost stay
# flat as its flow table grows, and what does a flow cost in memory?  The
# client floods SYNs of distinct connections (vmtest/syn_fill.py) through the
# proxy, which creates a flow for each (timeout_handshake is raised so none
# expires), and the router drops them.  At each table size (10^3, 10^5,
# 10^6 flows, then 10^3 again after reloading the module: an A-B-C-A
# order against drift) the proxy node's forwarding rate of a small-packet
# iperf3 upload (MSS 88, CPU-bound: no qdisc on the path) is measured
# TB_BENCH_REPS times, with no module loaded at each step as the baseline.
# Memory per flow: the guest's used memory (MemTotal - MemFree - Buffers -
# Cached - SReclaimable) before and after the 10^6 flows, divided by the
# flows added (struct, slab rounding and rhashtable buckets included).
#
#   client (SYN flood, iperf3) -- PROXY (ecn_proxy on) -- router (drops
#   the flood, no qdisc) -- server (iperf3)
set -e
. "$(dirname "$0")/../lib/testlib.sh"
. "$(dirname "$0")/../lib/bench_lib.sh"
trap 'tb_bg_stop iperf-srv; tb_cleanup' EXIT
tb_knob_int reps TB_BENCH_REPS 5 1
tb_knob_int secs TB_BENCH_SECS 4 1 3600
# flows per level, up to the proxy's max_flows bound (1 << 20)
tb_knob_ints levels TB_BENCH_LEVELS "1000 100000 1000000" 1 1048576 10
require_cmd iperf3 nft jq python3

CORE=$TB_KMOD/core/tcpfwd.ko
PROXY=$TB_KMOD/ecn_proxy/ecn_proxy.ko

load() {
	[ -d /sys/module/tcpfwd ] || insmod "$CORE"
	insmod "$PROXY" enable_init_net=0
	tb_proxy on
	# init_net's values bound the proxy namespace's (ecn_proxy(7): limits in other network namespaces)
	sysctl -qw net.ecn_proxy.max_flows=1048576 \
		net.ecn_proxy.timeout_handshake=86400
	tb_ns proxy sysctl -qw net.ecn_proxy.max_flows=1048576
	tb_ns proxy sysctl -qw net.ecn_proxy.timeout_handshake=86400
}

unload() {
	[ ! -d /sys/module/ecn_proxy ] || rmmod ecn_proxy
	[ ! -d /sys/module/tcpfwd ] || rmmod tcpfwd
}

mem_used_kb() {
	awk '/^MemTotal:/ { t = $2 } /^MemFree:/ { f = $2 } /^Buffers:/ { b = $2 }
	     /^Cached:/ { c = $2 } /^SReclaimable:/ { r = $2 }
	     END { print t - f - b - c - r }' /proc/meminfo
}

flows() {
	tb_proxy_stat flows_active
}

# fill N: SYNs until the table holds N flows
sent=0
fill() {
	local want=$1 have i
	for i in $(seq 20); do
		have=$(flows)
		[ "$have" -ge "$want" ] && return 0
		tb_ns client python3 -m ecnproxy.vmtest.syn_fill "$(tb_addr client 4)" \
			"$(tb_addr server 4)" $((want - have)) $sent
		sent=$((sent + want - have))
	done
	echo "fill: $(flows) flows after 20 rounds, wanted $want" >&2
	return 1
}

# measure STEP CONFIG: one small-packet run, one JSON line
measure() {
	local step=$1 cfg=$2 pps idle ok n=0
	read -r pps idle ok < <(bench_rate "$secs" -M 88)
	[ "$cfg" = proxy ] && n=$(flows)
	echo "{\"step\": \"$step\", \"config\": \"$cfg\", \"flows\": $n, \"pps\": $pps, \"cpu_idle\": $idle, \"ok\": $ok}" | tee -a runs.jsonl
}

TB_SETUP=upload
tb_up
bench_no_qdisc
tb_ns router nft add table ip flood
tb_ns router nft add chain ip flood pre '{ type filter hook prerouting priority -300; }'
tb_ns router nft add rule ip flood pre tcp dport 20000-20999 drop
tb_tcp client ecn=0
tb_tcp server ecn=1
bench_server_start
echo "{\"reps\": $reps, \"secs\": $secs, \"levels\": \"$levels\", \"kernel\": \"$(uname -r)\", \"cpus\": $(nproc), \"mem_kb\": $(awk '/^MemTotal:/ { print $2 }' /proc/meminfo)}" >meta.json

# step LABEL N: fill to N flows (module loaded), measure with and without
# the module alternately (the table stays: the module is only disabled)
step() {
	local label=$1 n=$2 r m0 m1 f0 f1 lines
	m0=$(mem_used_kb)
	f0=$(flows)
	fill "$n"
	sleep 1
	m1=$(mem_used_kb)
	f1=$(flows)
	# the flows file lists every flow once (read in many chunks)
	lines=null
	[ "$n" -gt 200000 ] || lines=$(tb_ns proxy cat /proc/net/ecn_proxy/flows | wc -l)
	echo "{\"step\": \"$label\", \"fill\": {\"flows_before\": $f0, \"flows_after\": $f1, \"flows_file_lines\": $lines, \"mem_used_kb_before\": $m0, \"mem_used_kb_after\": $m1, \"flow_alloc_bytes\": $(tb_proxy_stat flow_alloc_bytes)}}" | tee -a fills.jsonl
	for r in $(seq "$reps"); do
		tb_ns proxy sysctl -qw net.ecn_proxy.enabled=1
		measure "$label" proxy
		tb_ns proxy sysctl -qw net.ecn_proxy.enabled=0
		measure "$label" off
	done
	tb_ns proxy sysctl -qw net.ecn_proxy.enabled=1
}

load
i=0
for n in $levels; do
	i=$((i + 1))
	step "L$i-$n" "$n"
done
unload
load
sent=0
first=${levels%% *}
step "L$((i + 1))-$first-again" "$first"
unload
