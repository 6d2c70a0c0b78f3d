#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The testbed is real: every host reaches every other host over IPv4 and
# IPv6, traffic between the client and the server crosses exactly the proxy
# and the router, and offloads are set as configured.
#
#   client --[net0]-- proxy --[net1/br1]-- router --[net2/br2]-- server
#                                 |                      |
#                               udp1                   udp2
# tb-make-test: both-kernels
set -e
. "$(dirname "$0")/../lib/testlib.sh"
trap tb_cleanup EXIT
require_cmd ping ethtool

tb_up

hosts=(client proxy router server udp1 udp2)
for fam in 4 6; do
	RET=0
	bad=
	for a in "${hosts[@]}"; do
		for b in "${hosts[@]}"; do
			[ "$a" = "$b" ] && continue
			tb_ns "$a" ping -"$fam" -c 1 -W 2 -q "$(tb_addr "$b" "$fam")" \
				>/dev/null || bad="$bad $a->$b"
		done
	done
	[ -z "$bad" ] || check_err 1 "unreachable:$bad"
	log_test "IPv$fam: all 30 host pairs reach each other"
done

# Hop count: a reply from the server to the client crosses router and proxy,
# so it arrives with TTL/hop limit 64 - 2.
for fam in 4 6; do
	RET=0
	ttl=$(tb_ns client ping -"$fam" -c 1 -W 2 "$(tb_addr server "$fam")" |
		sed -n 's/.*\(ttl\|hlim\)=\([0-9]*\).*/\2/p')
	[ "$ttl" = 62 ] || check_err 1 "reply TTL is '$ttl', expected 62"
	log_test "IPv$fam: client<->server path crosses proxy and router"
done

# The UDP hosts sit on the shared segments, behind no proxy: one hop each way.
RET=0
ttl=$(tb_ns udp1 ping -c 1 -W 2 "$(tb_addr udp2)" | sed -n 's/.*ttl=\([0-9]*\).*/\1/p')
[ "$ttl" = 63 ] || check_err 1 "udp1->udp2 reply TTL '$ttl', expected 63"
log_test "udp1<->udp2 path crosses only the router"

# Every device that is up: a kernel with IPv6-in-IPv4 built in (the debug
# kernel's CONFIG_IPV6_SIT=y; a module on Debian's) gives each namespace a
# fallback tunnel, sit0, which stays down, carries nothing, and keeps its
# offloads on.
RET=0
for n in client proxy router server udp1 udp2; do
	for dev in $(ip -n "$n" -br link | awk '$1 != "lo" && $2 != "DOWN" {sub("@.*", "", $1); print $1}'); do
		state=$(tb_ns "$n" ethtool -k "$dev" | awk -F': ' \
			'/^(tcp-segmentation-offload|generic-segmentation-offload|generic-receive-offload):/ {print $2}' |
			sort -u | tr '\n' ' ')
		[ "$state" = "off " ] || check_err 1 "$n/$dev offloads: $state"
	done
done
log_test "TSO, GSO and GRO are off on every device"

exit $EXIT_STATUS
