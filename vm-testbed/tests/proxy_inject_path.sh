#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Which hooks see the packets the proxy steals and sends on itself
# (tcpfwd_pass_on(): state->okfn from inside its FORWARD hook, as
# nf_queue's reinject does after the last hook).  In dupack mode, toward a
# sender without SACK, the proxy steals the E->N ACK that starts a
# simulated loss and sends it on with ECNP_DUPACKS (3) rewritten copies
# (D = dupacks_injected), and steals a held ACK that stands for more than
# one duplicate and sends it on with 1-3 exact copies (C = acks_copied;
# with SACK nothing is stolen), and drops a held ACK that would show one
# duplicate too many (A = acks_absorbed).  Four nft counters in the proxy namespace
# count the server -> client TCP packets of an upload from the non-ECN
# client N to the ECN server E:
#
#   client(N) -- eth0 PROXY eth1 -- router(eth2: HTB + RED ecn) -- server(E)
#     "first"  forward, priority -300: before the proxy
#     "early"  forward, priority LAST, registered before the proxy's hooks
#     "late"   forward, priority LAST, registered after them
#     "post"   postrouting, priority 0
#
# At equal priority netfilter puts a hook registered later in front of the
# earlier ones (nf_hook_entries_grow()), so "late" runs just before the
# proxy and "early" just after it.  Asserted, with edit_failed unchanged:
#   - post = first + D + C - A: the copies leave through POSTROUTING
#     (conntrack confirmation, NAT, egress filters) like the original;
#   - late = first: a hook in front of the proxy sees every original;
#   - first - early - A, the stolen originals, between D / 3 + ceil(C / 3)
#     and D / 3 + C: the one kind of hook a stolen packet skips, a FORWARD hook
#     at priority LAST registered before the proxy's, misses each stolen
#     ACK and its copies.  Documented in kmod/ecn_proxy/
#     ecnp_main.c and kmod/core/tcpfwd_net.c.
set -e
. "$(dirname "$0")/../lib/testlib.sh"
trap 'tb_ns proxy nft delete table inet probe 2>/dev/null || true; tb_cleanup' EXIT
tb_knob_int up TB_INJECT_UP 8000000 1
# the UDP cross traffic beside the upload (iperf3 -b): 40 % of make test's
# 10 Mbit/s bottleneck
tb_knob_match cross TB_INJECT_CROSS 4M '[1-9][0-9]*[KM]?' 'a rate for iperf3 -b such as 4M or 160K'
require_cmd nft jq

tb_proxy_load
TB_SETUP=upload
tb_up
tb_tcp server ecn=1
tb_tcp client ecn=0 sack=0 ts=1
tb_cross_start "$cross" up

srv=$(tb_addr server 4)
cli=$(tb_addr client 4)
match="ip saddr $srv ip daddr $cli tcp sport $XFER_PORT"
# chain NAME HOOK PRIORITY: a counting chain in table inet probe
chain() {
	tb_ns proxy nft add chain inet probe "$1" "{ type filter hook $2 priority $3; policy accept; }"
	tb_ns proxy nft add rule inet probe "$1" $match counter
}
tb_ns proxy nft add table inet probe
chain first forward -300
chain early forward 2147483647
chain post postrouting 0
tb_proxy on dupack
chain late forward 2147483647

# count CHAIN: packets its counter saw
count() {
	tb_ns proxy nft -j list chain inet probe "$1" |
		jq '[.nftables[] | .rule? // empty | .expr[] | .counter? // empty | .packets] | add'
}

d0=$(tb_proxy_stat dupacks_injected)
c0=$(tb_proxy_stat acks_copied)
a0=$(tb_proxy_stat acks_absorbed)
e0=$(tb_proxy_stat edit_failed)
tb_fresh_transfer
RET=0
tb_xfer inject 4 "$up" 1000 || check_err 1 "transfer not byte-exact"
log_test "upload through the dupack proxy with nft counters: byte-exact"

d=$(($(tb_proxy_stat dupacks_injected) - d0))
c=$(($(tb_proxy_stat acks_copied) - c0))
a=$(($(tb_proxy_stat acks_absorbed) - a0))
e=$(($(tb_proxy_stat edit_failed) - e0))
first=$(count first)
early=$(count early)
late=$(count late)
post=$(count post)
log_info "server->client packets: first $first, late $late, early $early, post $post; dupacks injected $d, held ACKs copied $c, absorbed $a, edit failures $e"

RET=0
[ "$d" -gt 0 ] || check_err 1 "no duplicate ACK was injected: nothing to observe"
[ "$e" = 0 ] || check_err 1 "$e edits failed"
log_test "the proxy injected duplicate ACKs ($d) without a failed edit"

RET=0
[ "$post" = $((first + d + c - a)) ] ||
	check_err 1 "POSTROUTING saw $post packets, expected $first + $d + $c - $a"
log_test "POSTROUTING sees every original and every injected copy"

RET=0
[ "$late" = "$first" ] ||
	check_err 1 "the FORWARD chain registered after the proxy saw $late packets, expected $first"
log_test "a FORWARD hook at priority LAST registered after the proxy runs before it: every original"

RET=0
stolen=$((first - early - a))
[ "$stolen" -ge $((d / 3 + (c + 2) / 3)) ] && [ "$stolen" -le $((d / 3 + c)) ] ||
	check_err 1 "the FORWARD chain registered before the proxy missed $stolen packets, expected $((d / 3 + (c + 2) / 3))-$((d / 3 + c))"
log_test "a FORWARD hook at priority LAST registered before the proxy runs after it: misses the $stolen stolen ACKs"

exit "$EXIT_STATUS"
