#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Guest side of scripts/bench-hook-kernel: what forwarding one packet
# costs the proxy node under each configuration of bench_configs
# (bench_lib.sh), timed in the kernel by kmod/selftest/hookbench.c.  The
# module, loaded in the proxy namespace, plays one TCP connection between
# the client's and the server's addresses: it hands frames in on eth0
# (client -> server) and eth1 (server -> client), the node forwards them
# through its hooks, and a tc filter drops them at the egress of the other
# device, so nothing leaves the node.  The filters' drop counts must equal
# the packets handed in from each side, or the run is not ok (a hook that
# dropped packets would look cheap).  One configuration more than
# bench_configs: proxy-unseen, the proxy on (neither end ECN) for a
# connection whose handshake it never saw (hookbench handshake=0: a
# lookup that misses), which splits the proxy's cost between finding the
# flow and stepping it; and bench_configs_kernel: the proxy beside
# conntrack, and the home router (fw4's ruleset, conntrack, masquerade:
# the server's packets go to the node's WAN address, hookbench naddr)
# alone and with the proxy, for the proxy's share of a realistic path.  Full-size (1448 data bytes) and
# small (64) segments; each repetition runs every (configuration, size)
# once, in a shuffled order.  One JSON line per run in runs.jsonl.
#
#   (client) -- eth0 PROXY eth1 -- (router, server)
#        egress drop ^      ^ egress drop; hookbench.ko hands frames in
#                             on both devices, as the neighbours would
set -e
. "$(dirname "$0")/../lib/testlib.sh"
. "$(dirname "$0")/../lib/bench_lib.sh"
trap 'tb_cleanup' EXIT
tb_knob_int reps TB_BENCH_REPS 10 1
tb_knob_int packets TB_BENCH_PACKETS 20000 1
tb_knob_int seed TB_BENCH_SEED 1 0
# icount: the guest clock counts instructions
tb_knob_match clock TB_BENCH_CLOCK real 'real|icount' 'real or icount'
require_cmd tc jq nft iptables

HOOKBENCH=$TB_KMOD/selftest/hookbench.ko
declare -A payload=([full]=1448 [small]=64)
configs=("${bench_configs[@]}" proxy-unseen "${bench_configs_kernel[@]}")

TB_SETUP=upload
tb_up
caddr=$(tb_addr client 4)
saddr=$(tb_addr server 4)
# resolve the neighbours now and keep them: the egress filters drop ARP
tb_ns proxy ping -q -c 1 -W 5 "$caddr" >/dev/null
tb_ns proxy ping -q -c 1 -W 5 "$saddr" >/dev/null
tb_ns proxy ip -4 neigh show | awk '$4 == "lladdr" { print $1, $3, $5 }' |
	while read -r ip dev mac; do
		tb_ns proxy ip neigh replace "$ip" lladdr "$mac" dev "$dev" nud permanent
	done
for dev in eth0 eth1; do
	tb_ns proxy tc qdisc add dev "$dev" clsact
	tb_ns proxy tc filter add dev "$dev" egress protocol ip pref 1 matchall action drop
done

# egress_drops DEV: packets the egress filter of DEV has dropped so far
egress_drops() {
	tb_ns proxy tc -s filter show dev "$1" egress |
		grep -o 'dropped [0-9]*' | awk '{ s += $2 } END { print s + 0 }'
}

echo "{\"method\": \"kernel\", \"clock\": \"$clock\", \"reps\": $reps, \"packets\": $packets, \"seed\": $seed, \"kernel\": \"$(uname -r)\", \"cpus\": $(nproc), \"payload\": {\"full\": ${payload[full]}, \"small\": ${payload[small]}}, \"configs\": $(printf '%s\n' "${configs[@]}" | jq -R . | jq -sc .)}" >meta.json

RANDOM=$seed
port=40000
for rep in $(seq "$reps"); do
	order=$(for c in "${configs[@]}"; do for s in full small; do echo "$RANDOM $c $s"; done; done |
		sort -n | awk '{ print $2, $3 }')
	while read -r cfg size <&3; do
		hs=1
		case $cfg in
		proxy-unseen) bench_configure proxy-neither; hs=0 ;;
		*) bench_configure "$cfg" ;;
		esac
		port=$((port + 1))
		d0=$(egress_drops eth0)
		d1=$(egress_drops eth1)
		dmesg -C
		# hookbench measures at load time and then refuses to stay loaded
		tb_ns proxy insmod "$HOOKBENCH" caddr="$caddr" saddr="$saddr" \
			cport=$port payload="${payload[$size]}" packets="$packets" \
			cecn="$BENCH_CECN" secn="$BENCH_SECN" handshake=$hs \
			${BENCH_NADDR:+naddr="$BENCH_NADDR"} 2>/dev/null || true
		line=$(dmesg | sed -n 's/.*hookbench: //p' | tail -n 1)
		case $line in
		payload=*) ;;
		*) echo "hookbench did not measure ($cfg, $size): $line" >&2; exit 1 ;;
		esac
		declare -A v=()
		for kv in $line; do v[${kv%%=*}]=${kv#*=}; done
		out0=$(($(egress_drops eth0) - d0))
		out1=$(($(egress_drops eth1) - d1))
		ok=false
		[ "$out1" = "${v[c2s]}" ] && [ "$out0" = "${v[s2c]}" ] && ok=true
		jq -nc --arg config "$cfg" --arg size "$size" --argjson rep "$rep" \
			--argjson fwd "${v[fwd_ns]}" --argjson base "${v[base_ns]}" \
			--argjson c2s "${v[c2s]}" --argjson s2c "${v[s2c]}" \
			--argjson out_c2s "$out1" --argjson out_s2c "$out0" \
			--argjson rx_drop "${v[rx_drop]}" --argjson ok $ok \
			'{config: $config, size: $size, rep: $rep, fwd_ns: $fwd, base_ns: $base,
			  ns: ($fwd - $base), pps: (if $fwd > $base then 1e9 / ($fwd - $base) else 0 end),
			  c2s: $c2s, s2c: $s2c, out_c2s: $out_c2s, out_s2c: $out_s2c,
			  rx_drop: $rx_drop, ok: $ok}' | tee -a runs.jsonl
	done 3<<<"$order"
done
bench_unload_all
