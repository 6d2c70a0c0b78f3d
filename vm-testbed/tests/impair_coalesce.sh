#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# impair's coalesce action (MBtest's segment coalescer), IPv4 and IPv6:
# the SYN-ACK's MSS is set to 500 so that the client sends small segments
# two of which fit the 1500-byte MTU; consecutive pairs arrive at the
# server as one segment.  On the wire: every arriving segment the client
# did not send is exactly two consecutive client segments joined, with the
# TCP header (ack, window, options) of the first or of the second, within
# the MTU; byte-exact transfers; checksums checked in the captures and by
# the receiver (no checksum offload on the proxy's devices).  Then: a
# held segment released unchanged by the timeout and by a rule flush, the
# senders' CHECKSUM_PARTIAL segments, and an unload while a segment is
# held.
#
#   client eth0 -- eth0 PROXY eth1 -- router -- eth0 server
#   capture c: A's segments as sent      capture p: as the proxy sent them on
#   capture s: A's as they arrive
#
# The joins and the counters are checked against p: the bottleneck after
# the proxy (RED at 100 Mbit/s) drops some segments, which the module's
# counters cannot see; s must hold only what p has.  The lone
# segments (timeout, flush, unload) come from a client that waits before
# its FIN (xfer --pause): a FIN releases the held segment at once.
# tb-suite: extended (make vmtest-extended and the MBtest experiment; not in make test, for time)
# tb-variant-extended: home TB_ROUTER=home
set -e
. "$(dirname "$0")/../lib/testlib.sh"
. "$TB_LIB_DIR/impair_lib.sh"
trap tb_cleanup EXIT
require_cmd jq python3 tcpdump ethtool nstat
# whole frames: the pieces' and the joined segments' checksums are
# checked in the captures too (expect_csum), not only by the receiver
IMPAIR_SNAPLEN=1600

# coal_check OPTS NAME: impair_pcap coalesce (py/ecnproxy/vmtest/
# impair_pcap.py, coalesce_check()) on NAME's captures, JSON: of the
# client's data segments (c) against those the proxy sent on (p):
# "sent", "arrived", "joined" (two consecutive client segments, with the
# header of the one OPTS names, of any transmission of it), "differ" (of
# those, pairs whose two headers differ, so that OPTS is really
# observed), "max_len" (IP length), "bad" (first few problems); "lost"
# (after the proxy, from s).
coal_check() {
	impair_pcap coalesce "$XFER_PORT" "$1" "$TB_OUT/$2.c.pcap" \
		"$TB_OUT/$2.p.pcap" "$TB_OUT/$2.s.pcap"
}

csum_errors() {
	tb_ns server nstat -az TcpInCsumErrors | awk '$1 == "TcpInCsumErrors" { print $2 }'
}

# coal_case NAME FAM UP OPTS: one transfer (UP bytes up, 20000 down, so
# that the client's acks move between its segments) under the MSS and
# coalesce rules, then the checks.
coal_case() {
	local name=$1 fam=$2 up=$3 opts=$4 e0 c0
	e0=$(csum_errors)
	c0=$(impair_stat coalesced)
	impair_run "$name" "$fam" "$up" 20000 "dir initiator coalesce opts $opts" \
		"flags synack mss 500"
	sleep 0.2	# a last held segment's timeout
	R=$(coal_check "$opts" "$name")
	echo "$R" >"$TB_OUT/$name.coalesce.json"
	log_info "$name: $(jq .lost <<<"$R") of the proxy's segments lost after it"
	expect "problems" "$(jq -c .bad <<<"$R")" "[]"
	JOINED=$(jq .joined <<<"$R")
	[ "$JOINED" -gt 10 ] || check_err 1 "only $JOINED joined segments arrived"
	expect "coalesced = joined arrivals" "$(($(impair_stat coalesced) - c0))" "$JOINED"
	expect "arrived = sent - joined" "$(jq .arrived <<<"$R")" "$(($(jq .sent <<<"$R") - JOINED))"
	[ "$(jq .max_len <<<"$R")" -le 1500 ] || check_err 1 "a packet above the MTU"
	expect "hits = 2 x coalesced" "$(impair_hits 1)" "$((2 * JOINED))"
	expect "receiver's checksum errors" "$(($(csum_errors) - e0))" 0
	expect "held after the transfer" "$(impair_stat held)" 0
	expect_csum
	log_info "$name: $(jq .differ <<<"$R") joined pairs had different headers"
}

impair_up
impair_csum_sw
set +e
echo 50 >/sys/module/impair/parameters/coalesce_timeout_ms

for fam in 4 6; do
	RET=0
	coal_case first-v$fam $fam 100000 first
	log_test "IPv$fam: coalesce opts first: pairs joined with the first's header"

	RET=0
	coal_case second-v$fam $fam 100000 second
	log_test "IPv$fam: coalesce opts second: pairs joined with the second's header"
done

for fam in 4 6; do
	RET=0
	# one small request: held, nothing follows, released by the timeout
	t0=$(impair_stat coalesce_timeout_released)
	echo 300 >/sys/module/impair/parameters/coalesce_timeout_ms
	XFER_CLIENT_OPTS="--pause 1" impair_run tmo-v$fam $fam 200 200 \
		"dir initiator coalesce"
	sleep 0.5
	[ "$(($(impair_stat coalesce_timeout_released) - t0))" -ge 1 ] ||
		check_err 1 "coalesce_timeout_released did not move"
	expect "held" "$(impair_stat held)" 0
	expect_csum
	log_test "IPv$fam: a lone held segment goes out unchanged after the timeout"

	RET=0
	# held for up to 10 s (the module's longest timeout): a rule flush
	# sends it on at once.  The client's FIN, P s after its request,
	# would release it too: P scales with TB_SLOW (at most 8 s, below the
	# timeout), since a debug guest takes seconds to poll and to flush
	pause=$(tb_slow 3)
	[ "$pause" -le 8 ] || pause=8
	echo 10000 >/sys/module/impair/parameters/coalesce_timeout_ms
	f0=$(impair_stat coalesce_flushed)
	r0=$(impair_stat coalesce_released)
	impair_set "dir initiator coalesce" || check_err 1 "rules rejected"
	tb_bg "xfer-flush-v$fam" server python3 -m ecnproxy.vmtest.xfer server $XFER_PORT 200 \
		--family "$fam"
	tb_wait_port server $XFER_PORT
	# Python's start-up is slow on a debug kernel: the client's limit
	# scales with TB_SLOW
	tb_ns client timeout "$(tb_slow 20)" python3 -m ecnproxy.vmtest.xfer client \
		"$(tb_addr server "$fam")" $XFER_PORT 200 --pause "$pause" \
		>"$TB_OUT/flush-v$fam.client.json" &
	cpid=$!
	# (the wait covers the client's start-up, which varies on a debug kernel)
	expect "held while waiting" "$(impair_wait_stat held 1 10)" 1
	seen=$(date +%s%N)
	impair_set
	ms=$((($(date +%s%N) - seen) / 1000000))
	held=$(impair_stat held)
	log_info "IPv$fam: flushed ${ms} ms after the hold was seen (the client's FIN ${pause} s after its request)"
	[ "$ms" -lt $((pause * 1000)) ] ||
		check_err 1 "the flush took ${ms} ms, past the client's FIN (${pause} s): the guest is too slow for this case"
	expect "held right after the flush" "$held" 0
	wait $cpid || check_err 1 "transfer failed after the flush"
	tb_bg_stop "xfer-flush-v$fam"
	[ "$(($(impair_stat coalesce_flushed) - f0))" -ge 1 ] ||
		check_err 1 "coalesce_flushed did not move (coalesce_released +$(($(impair_stat coalesce_released) - r0)))"
	log_test "IPv$fam: replacing the rules sends a held segment on unchanged"
	echo 50 >/sys/module/impair/parameters/coalesce_timeout_ms
done

# The senders' CHECKSUM_PARTIAL segments (tx offload on, TSO off so that
# they are not GSO packets): the joined segments' checksums come from the
# pseudo-header seed.
impair_csum_partial
tb_ns client ethtool -K eth0 tso off gso off >/dev/null 2>&1
for fam in 4 6; do
	RET=0
	coal_case partial-v$fam $fam 100000 first
	log_test "IPv$fam: coalesce of CHECKSUM_PARTIAL segments: checksums right"
done

# A namespace deleted with segments held (10 s timeout): they are freed
# as it starts to go.  Each pins its input device, and a namespace's
# devices are unregistered before its subsystems' exit, waiting for every
# reference: freed only when their flows expired (300 s), they stalled
# the kernel's namespace cleanup, every other namespace's teardown with
# it, with "unregister_netdevice: waiting for ... to become free" every
# 10 s.  Three namespaces of their own (198.19.250.0/24, .251.0/24):
#
#   cz-a a0 -------- r0 cz-r r1 -------- b0 cz-b
#   .250.2        .250.1     .251.1       .251.2
RET=0
echo 10000 >/sys/module/impair/parameters/coalesce_timeout_ms
czdel() {
	local n
	for n in cz-a cz-r cz-b; do
		ip netns del "$n" 2>/dev/null
	done
	return 0
}
czns() {
	tb_ns_init cz-a && tb_ns_init cz-r && tb_ns_init cz-b &&
		ip link add a0 netns cz-a type veth peer r0 netns cz-r &&
		ip link add b0 netns cz-b type veth peer r1 netns cz-r &&
		ip -n cz-r -b - <<-EOF &&
			addr add 198.19.250.1/24 dev r0
			addr add 198.19.251.1/24 dev r1
			link set r0 up
			link set r1 up
		EOF
		ip -n cz-a -b - <<-EOF &&
			addr add 198.19.250.2/24 dev a0
			link set a0 up
			route add default via 198.19.250.1
		EOF
		ip -n cz-b -b - <<-EOF &&
			addr add 198.19.251.2/24 dev b0
			link set b0 up
			route add default via 198.19.251.1
		EOF
		tb_ns cz-r sysctl -qw net.ipv4.ip_forward=1 &&
		tb_ns cz-r sh -c 'echo "dir initiator coalesce" > /proc/net/impair/rules'
}
czdel
trap 'czdel; tb_cleanup' EXIT
czns || check_err 1 "cannot set up the three namespaces"
# both servers, then both clients, so that the two holds overlap however
# long Python takes to start (a debug kernel's start-up varies by seconds)
for port in 5001 5002; do
	tb_bg "cz-srv$port" cz-b python3 -m ecnproxy.vmtest.xfer server $port 200 --family 4
done
for port in 5001 5002; do
	tb_wait_port cz-b $port
done
for port in 5001 5002; do
	tb_bg "cz-cli$port" cz-a timeout "$(tb_slow 60)" python3 -m ecnproxy.vmtest.xfer \
		client 198.19.251.2 $port 200 --pause "$(tb_slow 20)"
done
# each client's request is held from its arrival until its FIN
IMPAIR_NODE=cz-r impair_wait_stat held 2 15 >/dev/null
expect "held in cz-r" "$(IMPAIR_NODE=cz-r impair_stat held)" 2
# the kernel's log from here (a marker, not a line count: the ring may wrap)
echo "impair_coalesce: cz-r deleted with segments held" >/dev/kmsg
ip netns del cz-r
# the first "waiting for" comes 10 s after the devices' unregistering
# began (after the namespace's cleanup work started and an RCU grace period)
for i in $(seq "$(tb_slow 20)"); do
	dmesg | sed -n '/impair_coalesce: cz-r deleted/,$p' |
		grep -qE "waiting for .* to become free|BUG|WARNING" && break
	sleep 1
done
dmesg | sed -n '/impair_coalesce: cz-r deleted/,$p' |
	grep -E "waiting for .* to become free|BUG|WARNING" &&
	check_err 1 "the deleted namespace's teardown waited for its devices"
for port in 5001 5002; do
	tb_bg_stop "cz-cli$port"
	tb_bg_stop "cz-srv$port"
done
czdel
trap tb_cleanup EXIT
log_test "a namespace deleted with segments held: freed at once, no teardown stall"

# Unload with a segment held (10 s timeout): the module frees it (the
# debug kernel's kmemleak and the refcount checks watch this path), the
# connection recovers by retransmission.
RET=0
echo 10000 >/sys/module/impair/parameters/coalesce_timeout_ms
impair_set "dir initiator coalesce" || check_err 1 "rules rejected"
tb_bg xfer-unload server python3 -m ecnproxy.vmtest.xfer server $XFER_PORT 200 --family 4
tb_wait_port server $XFER_PORT
tb_ns client timeout 30 python3 -m ecnproxy.vmtest.xfer client \
	"$(tb_addr server 4)" $XFER_PORT 200 --pause 3 >"$TB_OUT/unload.client.json" &
cpid=$!
expect "held before the unload" "$(impair_wait_stat held 1 3)" 1
n0=$(dmesg | wc -l)
rmmod impair || check_err 1 "rmmod impair failed"
wait $cpid || check_err 1 "transfer failed after the unload"
tb_bg_stop xfer-unload
dmesg | tail -n +$((n0 + 1)) | grep -E "BUG|WARNING|refcount|leak" &&
	check_err 1 "kernel complaints after the unload"
impair_load
log_test "unload with a held segment: freed, the connection recovers"

impair_set
exit $EXIT_STATUS
