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

# The configurations of the proxy node the hook benchmarks compare
# (scripts/bench-hook, scripts/bench-hook-kernel): what is loaded and
# configured there (see bench_configure).
# shellcheck disable=SC2034 # used by the scripts that source this file
bench_configs=(nomod proxy-off proxy-neither proxy-both proxy-drop proxy-dupack
	impair-norules impair-strip-ts xt-tcpoptstrip-ts nft-reset-ts
	impair-ecn-bleach nft-ecn-set conntrack)

# bench_unload_all: no module, no rule in the proxy node
bench_unload_all() {
	local m
	tb_ns proxy nft flush ruleset
	tb_ns proxy iptables -t mangle -F 2>/dev/null || true
	for m in impair ecn_proxy tcpfwd; do
		[ ! -d /sys/module/$m ] || rmmod $m
	done
}

# Configurations beyond bench_configs that scripts/bench-hook-kernel also
# runs (hookbench plays the endpoints, NAT included): the proxy beside
# conntrack, and the home router (tb_home_router: conntrack, fw4's
# ruleset, IPv4 masquerade toward eth1) alone, with the proxy on for a
# flow that needs nothing (neither end ECN) and for a proxied flow
# (dupack).
# shellcheck disable=SC2034 # used by the scripts that source this file
bench_configs_kernel=(conntrack-proxy home home-proxy home-proxied)

# bench_configure NAME: the proxy node's modules and rules for NAME, and
# the endpoints' ECN, also left in BENCH_CECN and BENCH_SECN (client,
# server: 0 or 1) for benchmarks that play the endpoints themselves, and
# in BENCH_NADDR the client's address as the server sees it (the proxy
# node's WAN address where it masquerades, else empty).
bench_configure() {
	BENCH_CECN=0
	BENCH_SECN=0
	BENCH_NADDR=
	bench_unload_all
	case $1 in
	proxy-* | conntrack-proxy | home-proxy | home-proxied)
		insmod "$TB_KMOD/core/tcpfwd.ko"
		insmod "$TB_KMOD/ecn_proxy/ecn_proxy.ko" enable_init_net=0
		;;
	impair-*)
		insmod "$TB_KMOD/core/tcpfwd.ko"
		insmod "$TB_KMOD/impair/impair.ko"
		;;
	esac
	case $1 in
	proxy-neither | conntrack-proxy | home-proxy) tb_proxy on ;;
	home-proxied) tb_proxy on dupack; BENCH_SECN=1 ;;
	proxy-both) tb_proxy on; BENCH_CECN=1; BENCH_SECN=1 ;;
	proxy-drop) tb_proxy on drop; BENCH_SECN=1 ;;
	proxy-dupack) tb_proxy on dupack; BENCH_SECN=1 ;;
	impair-strip-ts) echo 'strip timestamp' | tb_ns proxy tee /proc/net/impair/rules >/dev/null ;;
	impair-ecn-bleach) echo 'ecn-bleach' | tb_ns proxy tee /proc/net/impair/rules >/dev/null ;;
	xt-tcpoptstrip-ts)
		tb_ns proxy iptables -t mangle -A FORWARD -p tcp -j TCPOPTSTRIP \
			--strip-options timestamp
		;;
	esac
	# the rules around the proxy: a case of its own, so that a
	# configuration with the proxy gets them too
	case $1 in
	nft-* | conntrack | conntrack-proxy)
		tb_ns proxy nft add table inet bench
		tb_ns proxy nft add chain inet bench fw '{ type filter hook forward priority 0; }'
		;;
	home*)
		tb_home_router
		BENCH_NADDR=$(tb_fmt_addr "${TB_IF_ADDR[proxy:eth1]}" 4)
		;;
	esac
	case $1 in
	nft-reset-ts) tb_ns proxy nft add rule inet bench fw meta l4proto tcp reset tcp option timestamp ;;
	nft-ecn-set) tb_ns proxy nft add rule inet bench fw ip ecn set not-ect ;;
	conntrack | conntrack-proxy)
		tb_ns proxy nft add rule inet bench fw ct state established,related,new accept
		;;
	esac
	tb_tcp client ecn=$BENCH_CECN
	tb_tcp server ecn=$BENCH_SECN
}
