#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The proxy on a bridge (br_netfilter), with offloads on (issue 11, L7): a
# bridged GSO packet cannot be segmented by the proxy (okfn would need its
# MAC header on each segment), so when drop feedback wants one of its
# segments dropped it now goes through the state machine whole, nothing of
# it dropped (gso_drop_skipped), where it used to skip the state machine:
# no ECT toward E, n_nxt, the echo and a pending CWR left behind.  Per
# address family, an upload from the non-ECN client N to the ECN server E
# through the upload bottleneck (router eth2: HTB 10M + RED, which marks):
#   - byte-exact;
#   - gso_drop_skipped counts bridged GSO packets that were stepped whole
#     while a drop was pending;
#   - every segment N sent once reaches E as ECT (judged against the
#     capture on N's side, 2 % slack for what offloads hide, as
#     proxy_configs does);
#   - no segment of the connection is out of the window (M1's checks
#     accept GRO packets seen whole);
#   - nothing toward N carries ECT, CE, ECE or CWR.
#
#   client(.1.20) -- eth0 [br0: PROXY, br_netfilter] eth1 --+-- router -- server
#                    ^ capture            ^ capture        udp1
# tb-suite: extended (make vmtest-extended; not in make test, for time)
set -e
. "$(dirname "$0")/../lib/testlib.sh"
tb_knob_int up TB_BRIDGED_UP 8000000 1
require_cmd tcpdump jq python3
# br_netfilter applies to every bridge of every namespace: unload it again
# if this test loaded it, so that the tests after it see plain bridges.
brnf_was_loaded=0
[ ! -d /sys/module/br_netfilter ] || brnf_was_loaded=1
cleanup() {
	local rc=$?
	tb_cleanup
	[ "$brnf_was_loaded" = 1 ] || rmmod br_netfilter 2>/dev/null || true
	return $rc
}
trap cleanup EXIT
modprobe -q br_netfilter 2>/dev/null || [ -d /sys/module/br_netfilter ] ||
	skip "br_netfilter is not available"

TB_SETUP=upload
TB_OFFLOADS=on
tb_red_functional	# see lib/topology.sh: RED's frozen average
tb_proxy_load
tb_up

# The proxy bridges its two links; the client moves onto net1 behind it.
tb_ns proxy ip addr flush dev eth0
tb_ns proxy ip addr flush dev eth1
tb_ns proxy ip link add br0 type bridge stp_state 0 forward_delay 0 \
	mcast_snooping 0
tb_ns proxy ip link set eth0 master br0
tb_ns proxy ip link set eth1 master br0
tb_ns proxy ip link set br0 up
tb_ns proxy sysctl -qw net.bridge.bridge-nf-call-iptables=1 \
	net.bridge.bridge-nf-call-ip6tables=1
tb_ns client ip addr flush dev eth0
ip -n client addr add "$TB_V4.1.20/24" dev eth0
ip -n client -6 addr add "$TB_V6:1::20/64" dev eth0 nodad
ip -n client route replace default via "$(tb_fmt_addr 1.1 4)"
ip -n client -6 route replace default via "$(tb_fmt_addr 1.1 6)"
TB_HOST[client]=1.20

tb_tcp client ecn=0
tb_tcp server ecn=1
tb_proxy on drop

for fam in 4 6; do
	name=bridged-v$fam
	tb_red_reset
	o0=$(tb_proxy_stat out_of_window)
	e0=$(tb_proxy_stat congestion_events)
	g0=$(tb_proxy_stat gso_drop_skipped)
	tb_capture_start n proxy eth0 "$TB_OUT/$name.n.pcap" tcp port $XFER_PORT
	tb_capture_start e proxy eth1 "$TB_OUT/$name.e.pcap" tcp port $XFER_PORT
	RET=0
	tb_xfer "$name" "$fam" "$up" 1000 || check_err 1 "transfer not byte-exact"
	tb_capture_stop n
	tb_capture_stop e
	log_test "IPv$fam bridged: upload byte-exact"

	RET=0
	ev=$(($(tb_proxy_stat congestion_events) - e0))
	gso=$(($(tb_proxy_stat gso_drop_skipped) - g0))
	log_info "IPv$fam: congestion_events +$ev, gso_drop_skipped +$gso," \
		"gso_segmented $(tb_proxy_stat gso_segmented)"
	# (a drop stays pending over GSO packets: events may be few)
	[ "$gso" -gt 0 ] || check_err 1 "no bridged GSO packet was stepped whole"
	log_test "IPv$fam bridged: GSO packets that cannot be segmented are stepped and counted"

	RET=0
	read -r data ect < <(pcap_ecn "$TB_OUT/$name.e.pcap" server \
		"$TB_OUT/$name.n.pcap" | jq -r '.n2e | "\(.data) \(.ect_data)"')
	[ "$data" -gt 0 ] && [ $((ect * 100)) -ge $((data * 98)) ] ||
		check_err 1 "ECT on $ect of the $data segments N sent once (< 98 %)"
	log_test "IPv$fam bridged: data toward the ECN host carries ECT ($ect/$data)"

	RET=0
	o=$(($(tb_proxy_stat out_of_window) - o0))
	[ "$o" = 0 ] || check_err 1 "out_of_window +$o for a real connection"
	pcap_ecn "$TB_OUT/$name.n.pcap" >"$TB_OUT/$name.n.json"
	read -r ect ce ece cwr < <(jq -r '.s2c | "\(.ect_any) \(.ce) \(.ece) \(.cwr)"' \
		"$TB_OUT/$name.n.json")
	[ "$ect$ce$ece$cwr" = 0000 ] ||
		check_err 1 "toward N: ECT=$ect CE=$ce ECE=$ece CWR=$cwr"
	log_test "IPv$fam bridged: no segment out of the window, N sees plain TCP"
done

exit $EXIT_STATUS
