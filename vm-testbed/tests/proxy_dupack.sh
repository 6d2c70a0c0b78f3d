#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# feedback=dupack: the simulated loss, against the Linux sender it is meant
# to fool.  Upload from the non-ECN client N to the ECN server E through the
# proxy, over the upload bottleneck (router eth2: HTB + the thesis's RED,
# which marks early and often), with UDP cross traffic udp1 -> udp2 through
# the same bottleneck:
#
#   client(N) -- eth0 PROXY eth1 -- router(eth2: HTB 10M + RED ecn) -- server(E)
#                 ^ capture                 udp1 ===== UDP =====> udp2
#                                                              ^ capture (server eth0)
#
# For each sender setting (SACK on/off x timestamps on/off with CUBIC, and
# Reno with SACK on/off), one byte-exact upload of TB_DUPACK_UP bytes (20 MB,
# sized for at least 20 s), and:
#   - congestion response: N's recoveries (nstat TcpExtTCPSackRecovery +
#     TCPRenoRecovery in the client namespace) are at least 90 % of the
#     proxy's congestion events and at most the events plus the loss
#     episodes the bottleneck really caused (its drops), plus 2.  (Until
#     2026-11-26 half was enough: without SACK, once N's duplicate-ACK
#     threshold has grown with reordering (TCPTSReorder), N can leave a
#     quarter of the events unanswered, an under-reaction, DUPACK.md);
#   - no undo: TCPFullUndo + TCPPartialUndo + TCPDSACKUndo + TCPLossUndo +
#     TCPSpuriousRTOs <= max(1, events / 20): an undone reduction is a
#     failed simulated loss; a few may come from real losses the path
#     caused at the same time;
#   - no stall: no gap of more than 1 s between segments bringing new data
#     to the server;
#   - no loss and no duplicate of a "lost" segment: the server never
#     receives a second copy of a segment the proxy told N was lost (an ACK
#     number of which N received at least 3 more pure ACKs than the server
#     sent: the injected duplicates and held ACKs exist only on the client's
#     side; vmtest/pcap_delivery.py), so the suppressed retransmissions stay
#     suppressed, and the proxy dropped no new data (segs_dropped = 0).
#     Except after a give-up (dupack_aborts, at most 1 % of
#     the events, or one): E reported the hole at L four times, which a real loss of L
#     behind the proxy does, and so does L overtaken by several later
#     segments inside the guest (one such run, 2026-11-26: L arrived 5 ms
#     late, behind 5 segments); N's retransmission then goes through, a
#     duplicate at E if L was only late (DUPACK.md, "What remains");
#     Other duplicates (N's own retransmissions for the server's own
#     duplicate ACKs, after reordering in the testbed, where two vCPUs
#     forward one flow in parallel, or a real loss) are reported, not
#     judged;
#   - N sees no ECT, CE, ECE or CWR (capture on the proxy's client side).
# Then a long run: TB_DUPACK_LONG bytes at TB_DUPACK_LONG_RATE with cross
# traffic, which must complete byte-exact with no stall (no wait of more
# than 1 s between two reads with data at the server: vmtest/xfer.py).
#
# In the extended suite (make vmtest-extended; about 20 minutes), and
# behind the home router with a 50 MB long run (@home).
# TB_DUPACK_CONFIGS=lean runs three sender settings (CUBIC with SACK and
# timestamps, CUBIC with neither, Reno without SACK), for quick runs.
# tb-suite: extended
# tb-variant: home TB_ROUTER=home TB_DUPACK_LONG=50000000
set -e
. "$(dirname "$0")/../lib/testlib.sh"
trap tb_cleanup EXIT
tb_knob_int up TB_DUPACK_UP 20000000 1
tb_knob_match cross TB_DUPACK_CROSS 4M '[0-9]+(\.[0-9]+)?[KMG]?' 'a UDP rate for iperf3 -b (6M, 500K)'
tb_knob_int long TB_DUPACK_LONG 100000000 1
tb_knob_match which TB_DUPACK_CONFIGS all 'all|lean' 'all or lean'
tb_knob_match long_rate TB_DUPACK_LONG_RATE 20mbit '[1-9][0-9]*mbit' 'a rate in mbit (20mbit)'
tb_knob_match long_cross TB_DUPACK_LONG_CROSS 8M '[0-9]+(\.[0-9]+)?[KMG]?' 'a UDP rate for iperf3 -b (6M, 500K)'
require_cmd tcpdump jq python3 nstat

configs=("cubic 1 1" "cubic 1 0" "cubic 0 1" "cubic 0 0" "reno 1 1" "reno 0 1")
[ "$which" != lean ] ||
	configs=("cubic 1 1" "cubic 0 0" "reno 0 1")

RESP_KEYS="TcpExtTCPSackRecovery TcpExtTCPRenoRecovery"
UNDO_KEYS="TcpExtTCPFullUndo TcpExtTCPPartialUndo TcpExtTCPDSACKUndo TcpExtTCPLossUndo TcpExtTCPSpuriousRTOs"
OTHER_KEYS="TcpExtTCPTimeouts TcpExtTCPSACKReneging TcpExtTCPRenoReorder TcpExtTCPTSReorder TcpExtTCPSACKReorder TcpExtTCPDSACKRecv TcpRetransSegs"
PROXY_KEYS="congestion_events signals_withdrawn events_answered dupacks_injected acks_held acks_absorbed acks_copied tsecr_rewritten rexmit_suppressed dupack_aborts segs_dropped segs_ect_set edit_failed"

tb_proxy_load

# snap NAME: nstat (client) and proxy counters into $TB_OUT/NAME.snap
snap() {
	{
		tb_ns client nstat -az $RESP_KEYS $UNDO_KEYS $OTHER_KEYS |
			awk '$1 ~ /^Tcp/ { print $1, $2 }'
		tb_ns proxy cat /proc/net/ecn_proxy/stats
		tb_red_stats router "$(tb_bottleneck_dev)" |
			awk '{ print "red_marked", $1; print "red_early", $2; print "red_drops", $4 }'
	} >"$TB_OUT/$1.snap"
}

# upload NAME BYTES: one byte-exact upload, captured on both sides.  When
# RED drops the upgraded SYN (a Not-ECT packet behind the cross traffic),
# the proxy falls back to no ECN for that destination (RFC 3168 6.1.1.1,
# flows_fallback; proxy_synloss tests it): the flow is not proxied and
# says nothing about the simulated loss, so the fallback cache is flushed
# and the upload repeated, up to three times in all.
upload() {
	local name=$1 bytes=$2 try
	RET=0
	for try in 1 2 3; do
		snap "$name.0"
		tb_capture_start cs proxy eth0 "$TB_OUT/$name.cs.pcap" tcp port $XFER_PORT
		tb_capture_start srv server eth0 "$TB_OUT/$name.srv.pcap" tcp port $XFER_PORT
		tb_xfer "$name" 4 "$bytes" 1000 || check_err 1 "transfer not byte-exact"
		tb_capture_stop cs
		tb_capture_stop srv
		snap "$name.1"
		[ "$(tb_snap_delta "$name" flows_fallback)" != 0 ] || break
		log_info "$name: the upgraded SYN was lost, the proxy fell back (try $try)"
		echo flush | tb_ns proxy tee /proc/net/ecn_proxy/fallback >/dev/null
		[ "$try" = 3 ] || tb_fresh_transfer
	done
	[ "$(tb_snap_delta "$name" flows_fallback)" = 0 ] ||
		check_err 1 "three upgraded SYNs lost: the flow was never proxied"
	[ "$(tb_snap_delta "$name" segs_ect_set)" -gt 0 ] ||
		check_err 1 "no segment of N's was set ECT: the flow was not proxied"
	log_info "$name: $bytes bytes in $(jq -r .seconds "$TB_OUT/$name.client.json") s"
	log_test "$name: upload byte-exact, proxied"
	tb_home_check "$name"
	python3 -m ecnproxy.vmtest.pcap_delivery "$TB_OUT/$name.srv.pcap" $XFER_PORT \
		"$TB_OUT/$name.cs.pcap" >"$TB_OUT/$name.srv.json"
	pcap_ecn "$TB_OUT/$name.cs.pcap" >"$TB_OUT/$name.cs.json"
}

check_delivery() {
	local name=$1 gap dup stub sup lost dropped aborts
	RET=0
	gap=$(jq .max_gap "$TB_OUT/$name.srv.json")
	dup=$(jq .dup_lost "$TB_OUT/$name.srv.json")
	stub=$(jq .stub_lost "$TB_OUT/$name.srv.json")
	sup=$(tb_snap_delta "$name" rexmit_suppressed)
	lost=$(jq .lost "$TB_OUT/$name.srv.json")
	dropped=$(tb_snap_delta "$name" segs_dropped)
	aborts=$(tb_snap_delta "$name" dupack_aborts)
	log_info "$name: at the server $(jq -c . "$TB_OUT/$name.srv.json")"
	awk -v g="$gap" 'BEGIN { exit !(g <= 1.0) }' ||
		check_err 1 "a gap of $gap s in delivered data"
	[ "$dup" -le "$aborts" ] ||
		check_err 1 "the server received $dup duplicates of the $lost segments N was told were lost, $aborts after a give-up"
	# with SACK, the byte of each suppressed copy goes on; without, none
	[ "$stub" -le "$sup" ] ||
		check_err 1 "the server received $stub one-byte copies of 'lost' segments, $sup suppressed"
	case $name in
	*sack0*) [ "$stub" = 0 ] ||
		check_err 1 "without SACK, $stub one-byte copies reached the server" ;;
	*) [ "$stub" -gt 0 ] || [ "$sup" = 0 ] ||
		check_err 1 "with SACK, $sup copies suppressed and no one-byte copy at the server" ;;
	esac
	[ $((100 * aborts)) -le "$lost" ] || [ "$aborts" -le 1 ] ||
		check_err 1 "$aborts give-ups for $lost simulated losses (> 1 %)"
	[ "$dropped" = 0 ] || check_err 1 "the proxy dropped $dropped segments"
	log_test "$name: no stall > 1 s, no duplicate of a 'lost' segment ($lost) at the server but after a give-up ($aborts), nothing dropped"
	check_client_view "$name"
}

# check_client_view NAME: nothing of ECN reaches N
check_client_view() {
	local name=$1 ect ce ece cwr
	RET=0
	read -r ect ce ece cwr < <(jq -r '.s2c | "\(.ect_any) \(.ce) \(.ece) \(.cwr)"' \
		"$TB_OUT/$name.cs.json")
	[ "$ect$ce$ece$cwr" = 0000 ] ||
		check_err 1 "toward N: ECT=$ect CE=$ce ECE=$ece CWR=$cwr"
	log_test "$name: the client sees no ECT, CE, ECE or CWR"
}

TB_SETUP=upload
tb_up
tb_tcp server ecn=1
tb_proxy on dupack
tb_cross_start "$cross" up

for cfg in "${configs[@]}"; do
	read -r cc sack ts <<<"$cfg"
	name=$cc-sack$sack-ts$ts
	tb_tcp client ecn=0 sack="$sack" ts="$ts" cc="$cc"
	tb_fresh_transfer
	upload "$name" "$up"
	check_delivery "$name"

	ev=$(tb_snap_events "$name")
	resp=$(tb_snap_delta "$name" $RESP_KEYS)
	undo=$(tb_snap_delta "$name" $UNDO_KEYS)
	drops=$(tb_snap_delta "$name" red_drops)
	info="events=$ev responses=$resp undo=$undo"
	for k in $UNDO_KEYS $OTHER_KEYS; do
		info+=" ${k#TcpExt}=$(tb_snap_delta "$name" "$k")"
	done
	for k in $PROXY_KEYS red_marked red_early red_drops; do
		info+=" $k=$(tb_snap_delta "$name" "$k")"
	done
	log_info "$name: $info"
	echo "$name $info" >>"$TB_OUT/summary.txt"

	RET=0
	[ "$ev" -ge 5 ] || check_err 1 "only $ev congestion events: the test did not congest"
	[ $((10 * resp)) -ge $((9 * ev)) ] ||
		check_err 1 "$resp window reductions for $ev congestion events (< 90 %)"
	[ "$resp" -le $((ev + drops + 2)) ] ||
		check_err 1 "$resp window reductions for $ev events and $drops bottleneck drops"
	log_test "$name: one window reduction per congestion event ($resp for $ev)"

	check_undos "$name: " "$ev" "$undo"
done
tb_cross_stop
tb_down

# The long run: the thesis's uploads froze after a few thousand packets.
TB_SETUP=upload TB_RATE_LOW=$long_rate
tb_up
tb_tcp server ecn=1
tb_tcp client ecn=0
tb_proxy on dupack
tb_cross_start "$long_cross" up
upload long "$long"
# Near this rate TCG's CPU is the limit (one flow moved 50 MB in 45 s at
# 50mbit, 2026-11-26 on a 2.4 GHz host: 9 Mbit/s; 200 MB outlasted
# xfer.py's old 120 s bound on the whole send) and tcpdump drops packets,
# so the captures' gaps and duplicates are reported, not judged: a
# missing packet looks like a gap, a missing ACK like a "lost" segment.
# The stall is judged by the receiving application instead.
RET=0
gap=$(jq .max_gap "$TB_OUT/long.server.json")
log_info "long: at the server (capture, not judged) $(jq -c . "$TB_OUT/long.srv.json")"
awk -v g="$gap" 'BEGIN { exit !(g <= 1.0) }' ||
	check_err 1 "the server's application waited $gap s for data"
log_test "long: no stall > 1 s at the receiving application (longest wait $gap s)"
check_client_view long
log_info "long: events=$(tb_snap_events long) responses=$(tb_snap_delta long $RESP_KEYS) undo=$(tb_snap_delta long $UNDO_KEYS) timeouts=$(tb_snap_delta long TcpExtTCPTimeouts)"
tb_cross_stop

exit $EXIT_STATUS
