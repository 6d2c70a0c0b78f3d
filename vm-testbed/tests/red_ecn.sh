#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The router's RED marks ECN-capable traffic and drops the rest.  Download
# setup: the router's eth1 (toward the proxy) is the 10 Mbit/s bottleneck
# with HTB + RED (thesis parameters, ecn).  No proxy module is involved.
#
#   client --[net0]-- proxy --[net1/br1]-- router(eth1: HTB 10M + RED ecn) ...
#     ^ capture                                    ... --[net2]-- server (iperf3 -R)
# tb-suite: extended (make vmtest-extended; not in make test, for time)
set -e
. "$(dirname "$0")/../lib/testlib.sh"
trap tb_cleanup EXIT
tb_knob_int secs TB_RED_ECN_SECS 8 1 3600
require_cmd iperf3 tcpdump tshark jq

TB_SETUP=download
tb_up
dev=$(tb_bottleneck_dev)

# flow NAME ECN: one download with tcp_ecn=ECN on both ends; sets
# marked/early/drops to the RED counter deltas and ce/ect to capture counts.
flow() {
	local name=$1 ecn=$2 before after
	tb_tcp client ecn="$ecn"
	tb_tcp server ecn="$ecn"
	before=($(tb_red_stats router "$dev"))
	tb_capture_start "$name" client eth0 "$TB_OUT/$name.pcap" tcp
	tb_iperf "$name" client server -R -t "$secs"
	tb_capture_stop "$name"
	after=($(tb_red_stats router "$dev"))
	marked=$((after[0] - before[0]))
	early=$((after[1] - before[1]))
	drops=$((after[3] - before[3]))
	ce=$(tshark_count "$TB_OUT/$name.pcap" "ip.dsfield.ecn == 3")
	ect=$(tshark_count "$TB_OUT/$name.pcap" "ip.dsfield.ecn == 1 || ip.dsfield.ecn == 2")
	log_info "$name: RED marked=$marked early=$early drops=$drops;" \
		"client capture: CE=$ce ECT=$ect"
}

flow ecn 1
RET=0
[ "$marked" -gt 0 ] || check_err 1 "RED marked $marked packets"
log_test "ECN flow: RED on the bottleneck marks (tc marked > 0)"
RET=0
[ "$ce" -gt 0 ] || check_err 1 "client saw $ce CE packets"
log_test "ECN flow: the client receives CE-marked packets"
RET=0
[ "$ect" -gt 0 ] || check_err 1 "client saw $ect ECT packets"
log_test "ECN flow: data arrives as ECT"

flow noecn 0
RET=0
[ "$marked" -eq 0 ] || check_err 1 "RED marked $marked packets of a non-ECT flow"
[ "$ce" -eq 0 ] && [ "$ect" -eq 0 ] || check_err 1 "client saw CE=$ce ECT=$ect"
log_test "non-ECT flow: no marks, no ECT or CE on the wire"
RET=0
[ "$drops" -gt 0 ] || check_err 1 "RED dropped $drops packets"
log_test "non-ECT flow: RED drops instead (tc drops > 0)"

exit $EXIT_STATUS
