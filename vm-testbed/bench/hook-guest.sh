#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Guest side of scripts/bench-hook: what a FORWARD hook costs.  An iperf3
# upload from the client to the server is forwarded by the proxy node as
# fast as the guest's CPU allows: the router's HTB/RED qdiscs are removed,
# so no link and no AQM limits it (each run records the guest's CPU idle
# share to show that).  The proxy node's forwarding rate (packets per
# second leaving its eth1, from 2 s into the transfer for BENCH_SECS s) is
# measured for every configuration below, in full-size packets (MSS 1448)
# and in small ones (MSS 88, Linux's minimum: 76 bytes of payload with
# timestamps), interleaved: each repetition runs every (configuration,
# size) once, in a shuffled order.  One JSON line per run in runs.jsonl.
#
#   client -- eth0 PROXY eth1 -- router (no qdisc) -- server
#             (the hooks under test)
set -e
. "$(dirname "$0")/../lib/testlib.sh"
. "$(dirname "$0")/../lib/bench_lib.sh"
trap 'tb_bg_stop iperf-srv; tb_cleanup' EXIT
require_cmd iperf3 nft iptables jq

reps=${TB_BENCH_REPS:-6}
secs=${TB_BENCH_SECS:-4}
seed=${TB_BENCH_SEED:-1}
CORE=$TB_KMOD/core/tcpfwd.ko
PROXY=$TB_KMOD/ecn_proxy/ecn_proxy.ko
IMPAIR=$TB_KMOD/impair/impair.ko

# name: what is loaded and configured in the proxy node (see configure)
configs=(nomod proxy-off proxy-neither proxy-both proxy-drop proxy-dupack
	impair-norules impair-strip-ts xt-tcpoptstrip-ts nft-reset-ts
	impair-ecn-bleach nft-ecn-set conntrack)
sizes=(full small)

unload_all() {
	tb_ns proxy nft flush ruleset
	tb_ns proxy iptables -t mangle -F 2>/dev/null || true
	for m in impair ecn_proxy tcpfwd; do
		[ ! -d /sys/module/$m ] || rmmod $m
	done
}

# configure NAME: the proxy node's modules and rules, the endpoints' ECN
configure() {
	local cecn=0 secn=0
	unload_all
	case $1 in
	proxy-*)
		insmod "$CORE"
		insmod "$PROXY" enable_init_net=0
		;;
	impair-*)
		insmod "$CORE"
		insmod "$IMPAIR"
		;;
	esac
	case $1 in
	proxy-neither) tb_proxy on ;;
	proxy-both) tb_proxy on; cecn=1; secn=1 ;;
	proxy-drop) tb_proxy on drop; secn=1 ;;
	proxy-dupack) tb_proxy on dupack; secn=1 ;;
	impair-strip-ts) echo 'strip timestamp' | tb_ns proxy tee /proc/net/impair/rules >/dev/null ;;
	impair-ecn-bleach) echo 'ecn-bleach' | tb_ns proxy tee /proc/net/impair/rules >/dev/null ;;
	xt-tcpoptstrip-ts)
		tb_ns proxy iptables -t mangle -A FORWARD -p tcp -j TCPOPTSTRIP \
			--strip-options timestamp
		;;
	nft-reset-ts)
		tb_ns proxy nft add table inet bench
		tb_ns proxy nft add chain inet bench fw '{ type filter hook forward priority 0; }'
		tb_ns proxy nft add rule inet bench fw meta l4proto tcp reset tcp option timestamp
		;;
	nft-ecn-set)
		tb_ns proxy nft add table inet bench
		tb_ns proxy nft add chain inet bench fw '{ type filter hook forward priority 0; }'
		tb_ns proxy nft add rule inet bench fw ip ecn set not-ect
		;;
	conntrack)
		tb_ns proxy nft add table inet bench
		tb_ns proxy nft add chain inet bench fw '{ type filter hook forward priority 0; }'
		tb_ns proxy nft add rule inet bench fw ct state established,related,new accept
		;;
	esac
	tb_tcp client ecn=$cecn
	tb_tcp server ecn=$secn
}

TB_SETUP=upload
tb_up
bench_no_qdisc
bench_server_start
echo "{\"reps\": $reps, \"secs\": $secs, \"seed\": $seed, \"kernel\": \"$(uname -r)\", \"cpus\": $(nproc), \"configs\": $(printf '%s\n' "${configs[@]}" | jq -R . | jq -sc .)}" >meta.json

RANDOM=$seed
for rep in $(seq "$reps"); do
	order=$(for c in "${configs[@]}"; do for s in "${sizes[@]}"; do echo "$RANDOM $c $s"; done; done |
		sort -n | awk '{ print $2, $3 }')
	while read -r cfg size <&3; do
		configure "$cfg"
		mss=()
		[ "$size" = small ] && mss=(-M 88)
		read -r pps idle ok < <(bench_rate "$secs" "${mss[@]}")
		bps=$(jq -r '.end.sum_received.bits_per_second // "null"' "$TB_OUT/iperf.json" 2>/dev/null || echo null)
		echo "{\"config\": \"$cfg\", \"size\": \"$size\", \"rep\": $rep, \"pps\": $pps, \"bps\": $bps, \"cpu_idle\": $idle, \"ok\": $ok}" | tee -a runs.jsonl
	done 3<<<"$order"
done
unload_all
