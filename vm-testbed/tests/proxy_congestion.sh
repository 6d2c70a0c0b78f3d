#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Configuration 3 (client non-ECN, server ECN, proxy on) under congestion:
# download setup with UDP cross traffic udp2 -> udp1 through the same 10 Mbit/s
# bottleneck.  RED must mark the flow instead of dropping it, the proxy must
# echo the marks to the server, and the server must respond.
#
#   client -- PROXY(eth1: capture) -- router(eth1: HTB 10M + RED ecn) -- server
#                                        ^ udp1 <==== UDP ==== udp2
#
# Also logs the completion time of the same download in configurations 1
# (no ECN), 3 and 4 (end-to-end ECN), as a first look (not asserted).
# tb-variant: home TB_ROUTER=home
# tb-suite: extended (make vmtest-extended; not in make test, for time)
set -e
. "$(dirname "$0")/../lib/testlib.sh"
trap tb_cleanup EXIT
tb_knob_int down TB_CONG_DOWN 4000000 1
tb_knob_match cross TB_CONG_CROSS 6M '[0-9]+(\.[0-9]+)?[KMG]?' 'a UDP rate for iperf3 -b (6M, 500K)'
require_cmd tcpdump jq python3 nstat iperf3

tb_proxy_load
TB_SETUP=download
tb_up
dev=$(tb_bottleneck_dev)
tb_cross_start "$cross" down

nstat_val() {
	tb_ns "$1" nstat -az "$2" | awk -v k="$2" '$1 == k { print $2 }'
}

# download NAME CLIENT_ECN SERVER_ECN PROXY
download() {
	tb_tcp client ecn="$2"
	tb_tcp server ecn="$3"
	tb_proxy "$4" drop
	tb_xfer "$1" 4 1000 "$down"
	log_info "$1: download of $down bytes with cross traffic took" \
		"$(jq -r .seconds "$TB_OUT/$1.client.json") s"
}

# configuration 3, measured
before=($(tb_red_stats router "$dev"))
dce0=$(nstat_val server TcpExtTCPDeliveredCE)
tb_capture_start ss proxy eth1 "$TB_OUT/cfg3.pcap" tcp port $XFER_PORT
RET=0
download cfg3 0 1 on || check_err 1 "transfer not byte-exact"
tb_capture_stop ss
log_test "config 3 with cross traffic: transfer byte-exact"
tb_home_check "config 3"
after=($(tb_red_stats router "$dev"))
dce1=$(nstat_val server TcpExtTCPDeliveredCE)
pcap_ecn "$TB_OUT/cfg3.pcap" server >"$TB_OUT/cfg3.json"
tb_ns proxy cat /proc/net/ecn_proxy/stats >"$TB_OUT/cfg3.stats"
log_info "proxy stats: $(tr '\n' ' ' <"$TB_OUT/cfg3.stats")"

marked=$((after[0] - before[0]))
early=$((after[1] - before[1]))
read -r data retx < <(jq -r '.s2c | "\(.data) \(.retrans)"' "$TB_OUT/cfg3.json")
log_info "RED marked $marked, early drops $early (mostly UDP);" \
	"flow: $data data segments, $retx retransmitted"
RET=0
[ "$marked" -gt 0 ] || check_err 1 "RED marked $marked"
log_test "config 3: RED marks the server's data (marked > 0)"
RET=0
# near zero: at most 1 % of the flow's segments needed retransmission
[ $((retx * 100)) -le "$data" ] || check_err 1 "$retx of $data segments retransmitted"
log_test "config 3: the flow's drops stay near zero ($retx of $data)"
RET=0
[ $((dce1 - dce0)) -gt 0 ] || check_err 1 "TcpExtTCPDeliveredCE did not grow"
[ "$(awk '$1 == "segs_ece_set" { print $2 }' "$TB_OUT/cfg3.stats")" -gt 0 ] ||
	check_err 1 "the proxy set no ECE"
log_test "config 3: the server sees the echoed marks (TCPDeliveredCE +$((dce1 - dce0)))"

# feedback=none: the proxy never sets ECT toward E, so routers drop there
tb_capture_start none proxy eth1 "$TB_OUT/none.pcap" tcp port $XFER_PORT
tb_tcp client ecn=0
tb_tcp server ecn=1
tb_proxy on none
RET=0
tb_xfer none 4 1000000 1000 || check_err 1 "transfer not byte-exact"
tb_capture_stop none
pcap_ecn "$TB_OUT/none.pcap" server >"$TB_OUT/none.json"
read -r data ect < <(jq -r '.c2s | "\(.data) \(.ect_any)"' "$TB_OUT/none.json")
[ "$data" -gt 0 ] && [ "$ect" = 0 ] || check_err 1 "ECT on $ect of $data segments toward E"
log_test "feedback=none: no ECT toward the ECN host, transfer byte-exact"
tb_home_check "feedback=none"

# configurations 1 and 4, for comparison only
download cfg1 0 0 off || true
download cfg4 1 1 off || true
for c in cfg1 cfg3 cfg4; do
	echo "$c $(jq -r .seconds "$TB_OUT/$c.client.json")" >>"$TB_OUT/completion.txt"
done
tb_cross_stop

exit $EXIT_STATUS
