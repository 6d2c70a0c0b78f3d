#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Which hooks see the packets the proxy steals and sends on itself
# (tcpfwd_pass_on(): state->okfn from inside its FORWARD hook, as
# nf_queue's reinject does after the last hook).  In dupack mode the proxy
# steals the E->N ACK that starts a simulated loss and sends it on with
# ECNP_DUPACKS (3) rewritten copies.  Three nft counters in the proxy
# namespace count the server -> client TCP packets of an upload from the
# non-ECN client N to the ECN server E:
#
#   client(N) -- eth0 PROXY eth1 -- router(eth2: HTB + RED ecn) -- server(E)
#                  forward prio -300 ("first", before the proxy)
#                  forward prio LAST, added after the proxy's ("after")
#                  postrouting prio 0 ("post")
#
# Asserted, with D = dupacks_injected and edit_failed unchanged:
#   - post = first + D: the copies leave through POSTROUTING (conntrack
#     confirmation, NAT, egress filters) like the original;
#   - after = first - D / 3: a FORWARD hook at the proxy's own priority,
#     registered after it, misses each stolen ACK and its copies; every
#     other packet reaches it.  That is the one hook a stolen packet skips,
#     documented in kmod/core/tcpfwd.h and kmod/ecn_proxy/ecnp_main.c.
set -e
. "$(dirname "$0")/../lib/testlib.sh"
trap 'tb_ns proxy nft delete table inet probe 2>/dev/null || true; tb_cleanup' EXIT
require_cmd nft jq

up=${TB_INJECT_UP:-8000000}

tb_proxy_load
TB_SETUP=upload
tb_up
tb_tcp server ecn=1
tb_tcp client ecn=0 sack=1 ts=1
tb_proxy on dupack
tb_cross_start 4M up

srv=$(tb_addr server 4)
cli=$(tb_addr client 4)
match="ip saddr $srv ip daddr $cli tcp sport $XFER_PORT"
tb_ns proxy nft -f - <<EOF
table inet probe {
	chain first {
		type filter hook forward priority -300; policy accept;
		$match counter
	}
	chain after {
		type filter hook forward priority 2147483647; policy accept;
		$match counter
	}
	chain post {
		type filter hook postrouting priority 0; policy accept;
		$match counter
	}
}
EOF

# count CHAIN: packets its counter saw
count() {
	tb_ns proxy nft -j list chain inet probe "$1" |
		jq '[.nftables[] | .rule? // empty | .expr[] | .counter? // empty | .packets] | add'
}

d0=$(tb_proxy_stat dupacks_injected)
e0=$(tb_proxy_stat edit_failed)
tb_fresh_transfer
RET=0
tb_xfer inject 4 "$up" 1000 || check_err 1 "transfer not byte-exact"
log_test "upload through the dupack proxy with nft counters: byte-exact"

d=$(($(tb_proxy_stat dupacks_injected) - d0))
e=$(($(tb_proxy_stat edit_failed) - e0))
first=$(count first)
after=$(count after)
post=$(count post)
log_info "server->client packets: first $first, after $after, post $post; dupacks injected $d, edit failures $e"

RET=0
[ "$d" -gt 0 ] || check_err 1 "no duplicate ACK was injected: nothing to observe"
[ "$e" = 0 ] || check_err 1 "$e edits failed"
log_test "the proxy injected duplicate ACKs ($d) without a failed edit"

RET=0
[ "$post" = $((first + d)) ] ||
	check_err 1 "POSTROUTING saw $post packets, expected $first + $d"
log_test "POSTROUTING sees every original and every injected copy"

RET=0
[ "$after" = $((first - d / 3)) ] ||
	check_err 1 "the later FORWARD chain saw $after packets, expected $first - $d / 3"
log_test "a FORWARD hook at the proxy's priority, registered later, misses exactly the $((d / 3)) stolen ACKs"

exit "$EXIT_STATUS"
