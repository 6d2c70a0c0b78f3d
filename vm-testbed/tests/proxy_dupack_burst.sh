#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# feedback=dupack against an application-limited sender: N writes a small
# burst, then nothing for a while, and the ECN server E sends nothing back
# until the end.  Upload from the non-ECN client N to E through the proxy,
# over the upload bottleneck, with UDP cross traffic above its rate, so that
# RED (marking ECT, dropping Not-ECT) marks N's bursts:
#
#   client(N) -- eth0 PROXY eth1 -- router(eth2: HTB 10M + RED ecn) -- server(E)
#                                            udp1 ===== UDP 11M =====> udp2
#
# A burst of TB_BURST_SEGS segments is often all acked by E right after the
# simulated loss starts.  Holding that ACK (N must see a loss) and dropping
# N's retransmission of L, as the proxy did until 2026-11-27, left no ACK of
# E's to end the hold: N, with nothing more to send, waited for its RTO.
# The proxy now sends that retransmission's first byte on, as any suppressed
# copy (rexmit_suppressed: E answers a duplicate byte at once), and leaves
# E's D-SACK for it out of the ACK that answers it (DUPACK.md, "When it gives
# up").  Until 2026-11-28 E's ACK of the whole burst ended the hold once N
# had been shown one held ACK, often before N's RACK timer fired: N saw no
# loss, 12-24 window reductions for 55-63 events.  It is now held until N's
# retransmission.  Asserted, with SACK and timestamps (CUBIC):
#   - the transfer is byte-exact;
#   - it congested (congestion_events >= 5) and N's retransmissions of L
#     were suppressed (rexmit_suppressed > 0);
#   - N reduced its window for at least 90 % of the events
#     (TcpExtTCPSackRecovery, as in proxy_dupack);
#   - no RTO on data: TcpExtTCPTimeouts minus TcpExtTCPSynRetrans in the
#     client's namespace is 0 (N's data is ECT, which RED marks; its drops,
#     reported, are the UDP traffic's).  The SYN is Not-ECT (RFC 3168
#     6.1.1), so RED may drop it: its retransmission after 1 s is a timeout
#     too (tcp_retransmit_timer counts it in TCPTimeouts), the same with or
#     without the proxy, and is reported, not failed;
#   - no undo: TCPFullUndo + TCPPartialUndo + TCPDSACKUndo + TCPLossUndo +
#     TCPSpuriousRTOs <= max(1, events / 20), as in proxy_dupack;
#   - every suppressed retransmission of L reaches E as one byte (capture
#     on the proxy's E side), and N receives no D-SACK (TCPDSACKRecv):
#     E's answer to that byte carries one, which the proxy leaves out;
#   - N sees no ECT, CE, ECE or CWR.
# With TB_BURST_MODE=dupack-fast (DUPACK.md, "dupack-fast") the proxy
# answers that retransmission itself with E's ACK of the burst, which it
# kept: the same assertions (the byte still goes on to E, so that E
# answers at once as under dupack), and some retransmissions answered so
# (rexmit_answered > 0; each is one of rexmit_suppressed).  The case where
# nothing else could end the hold is this test's, so a copy that does not
# reach N shows as an RTO.
# tb-suite: extended
# tb-variant-extended: fast TB_BURST_MODE=dupack-fast
set -e
. "$(dirname "$0")/../lib/testlib.sh"
trap tb_cleanup EXIT
tb_knob_int segs TB_BURST_SEGS 4 1 1000
tb_knob_int bursts TB_BURSTS 120 1
tb_knob_match pause TB_BURST_PAUSE 0.3 '[0-9]+(\.[0-9]+)?' 'seconds (0.3)'
tb_knob_match mode TB_BURST_MODE dupack 'dupack|dupack-fast' 'a feedback mode: dupack or dupack-fast'
tb_knob_match cross TB_BURST_CROSS 11M '[0-9]+(\.[0-9]+)?[KMG]?' 'a UDP rate for iperf3 -b (6M, 500K)'
require_cmd tcpdump jq python3 nstat

UNDO_KEYS="TcpExtTCPFullUndo TcpExtTCPPartialUndo TcpExtTCPDSACKUndo TcpExtTCPLossUndo TcpExtTCPSpuriousRTOs"
KEYS="$UNDO_KEYS TcpExtTCPTimeouts TcpExtTCPSynRetrans TcpExtTCPSackRecovery TcpExtTCPDSACKRecv TcpRetransSegs"
PKEYS="congestion_events signals_withdrawn acks_held rexmit_suppressed rexmit_answered tsecr_rewritten dupack_aborts segs_ect_set edit_failed"

# counters N: the client's nstat and the proxy's stats, one "key value"
# per line, into $TB_OUT/burst.N.snap (tb_snap_delta)
counters() {
	{
		tb_ns client nstat -az $KEYS | awk '$1 ~ /^Tcp/ { print $1, $2 }'
		tb_ns proxy cat /proc/net/ecn_proxy/stats
		tb_red_stats router "$(tb_bottleneck_dev)" | awk '{ print "red_drops", $4 }'
	} >"$TB_OUT/burst.$1.snap"
}

tb_proxy_load
TB_SETUP=upload
tb_up
tb_tcp server ecn=1
tb_tcp client ecn=0 sack=1 ts=1 cc=cubic
tb_proxy on "$mode"
tb_cross_start "$cross" up
tb_fresh_transfer

mss=1448
total=$((segs * mss * bursts))

# burst_once: one transfer, counters before (0) and after (1)
burst_once() {
	tb_bg burst-srv server python3 -m ecnproxy.vmtest.xfer server $XFER_PORT 0 --family 4
	tb_wait_port server $XFER_PORT
	counters 0
	tb_capture_start cs proxy eth0 "$TB_OUT/burst.cs.pcap" tcp port $XFER_PORT
	tb_capture_start es proxy eth1 "$TB_OUT/burst.es.pcap" tcp dst port $XFER_PORT
	# N: the payload xfer.py's server checks (seeded by the total), in bursts
	tb_ns client python3 - "$(tb_addr server 4)" $XFER_PORT "$total" "$((segs * mss))" \
		"$pause" >"$TB_OUT/burst.client.json" <<'EOF' || check_err 1 "the client failed"
import hashlib, json, random, socket, sys, time
host, port, total, size, pause = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), \
	int(sys.argv[4]), float(sys.argv[5])
data = random.Random(total).randbytes(total)
s = socket.create_connection((host, port), timeout=120)
t0 = time.monotonic()
for off in range(0, total, size):
	s.sendall(data[off:off + size])
	time.sleep(pause)
s.shutdown(socket.SHUT_WR)
while s.recv(65536):
	pass
print(json.dumps({"sent": total, "sent_sha256": hashlib.sha256(data).hexdigest(),
		  "seconds": round(time.monotonic() - t0, 3)}))
EOF
	wait "$(cat "$TB_STATE/burst-srv.pid")" 2>/dev/null || true
	rm -f "$TB_STATE/burst-srv.pid"
	tb_capture_stop cs
	tb_capture_stop es
	counters 1
	cp "$TB_STATE/burst-srv.log" "$TB_OUT/burst.server.json"
}

# RED drops the upgraded SYN (Not-ECT, behind UDP above the bottleneck's
# rate) often here; the proxy then falls back (flows_fallback) and the flow
# says nothing about dupack: flush the cache and repeat, as proxy_dupack does.
RET=0
for try in 1 2 3; do
	burst_once
	[ "$(tb_snap_delta burst flows_fallback)" != 0 ] || break
	log_info "the upgraded SYN was lost, the proxy fell back (try $try)"
	echo flush | tb_ns proxy tee /proc/net/ecn_proxy/fallback >/dev/null
	[ "$try" = 3 ] || tb_fresh_transfer
done
[ "$(jq -r .sent_sha256 "$TB_OUT/burst.client.json")" = \
	"$(jq -r .received_sha256 "$TB_OUT/burst.server.json")" ] &&
	[ "$(jq -r .received "$TB_OUT/burst.server.json")" = "$total" ] ||
	check_err 1 "transfer not byte-exact"
[ "$(tb_snap_delta burst segs_ect_set)" -gt 0 ] ||
	check_err 1 "no segment of N's was set ECT: the flow was not proxied"
log_test "$bursts bursts of $segs segments, $pause s apart: byte-exact, proxied"
tb_cross_stop

info=""
for k in $KEYS $PKEYS red_drops; do
	info+=" ${k#TcpExt}=$(tb_snap_delta burst "$k")"
done
log_info "burst:$info"
echo "burst$info" >"$TB_OUT/summary.txt"
# withdrawn: E acked L, alone in flight at the end of a burst, and N sent
# nothing after it
wd=$(tb_snap_delta burst signals_withdrawn)
ev=$(tb_snap_events burst)
sup=$(tb_snap_delta burst rexmit_suppressed)
syn=$(tb_snap_delta burst TcpExtTCPSynRetrans)
rto=$(($(tb_snap_delta burst TcpExtTCPTimeouts) - syn))
drops=$(tb_snap_delta burst red_drops)
undo=$(tb_snap_delta burst $UNDO_KEYS)

RET=0
[ "$ev" -ge 5 ] || check_err 1 "only $ev congestion events: the test did not congest"
[ "$sup" -gt 0 ] || check_err 1 "no retransmission of L suppressed: the case did not occur"
log_test "congested ($ev events, $wd signals withdrawn), $sup retransmissions of L suppressed"

if [ "$mode" = dupack-fast ]; then
	RET=0
	ans=$(tb_snap_delta burst rexmit_answered)
	[ "$ans" -gt 0 ] && [ "$ans" -le "$sup" ] ||
		check_err 1 "$ans of $sup retransmissions of L answered with E's kept ACK"
	log_test "dupack-fast: $ans of $sup retransmissions of L answered with E's kept ACK (edit_failed $(tb_snap_delta burst edit_failed))"
fi

RET=0
resp=$(tb_snap_delta burst TcpExtTCPSackRecovery)
[ $((10 * resp)) -ge $((9 * ev)) ] ||
	check_err 1 "$resp window reductions for $ev congestion events (< 90 %)"
log_test "N reduced its window for the events ($resp for $ev)"

RET=0
[ "$rto" = 0 ] || check_err 1 "$rto RTOs on data (the bottleneck dropped $drops packets)"
log_test "no RTO on data ($rto; $syn SYN retransmissions; the bottleneck dropped $drops packets, N's are ECT)"

check_undos "" "$ev" "$undo"

RET=0
ones=$(tcpdump -nr "$TB_OUT/burst.es.pcap" 2>/dev/null | grep -c ', length 1$' || true)
dsack=$(tb_snap_delta burst TcpExtTCPDSACKRecv)
[ "$ones" -ge "$sup" ] ||
	check_err 1 "$ones one-byte segments reached E for $sup suppressed retransmissions"
[ "$dsack" = 0 ] || check_err 1 "N received $dsack D-SACKs"
log_test "the $sup suppressed retransmissions reached E as one byte ($ones one-byte segments), N got no D-SACK"

RET=0
pcap_ecn "$TB_OUT/burst.cs.pcap" >"$TB_OUT/burst.cs.json"
check_nothing_to_n "$TB_OUT/burst.cs.json"
log_test "the client sees no ECT, CE, ECE or CWR"

exit "$EXIT_STATUS"
