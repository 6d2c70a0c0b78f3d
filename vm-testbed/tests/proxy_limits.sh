#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Control and bounds: invalid sysctl writes are rejected whole with EINVAL and
# a kernel log message; net.ecn_proxy.max_flows bounds the flow table, and
# the flows beyond it pass untouched and are counted.
#
#   client -- PROXY (max_flows=4) -- router -- server
#   iperf3 -P 10: 11 connections (control + 10 streams) at once
set -e
. "$(dirname "$0")/../lib/testlib.sh"
trap tb_cleanup EXIT
require_cmd iperf3 tcpdump tshark

tb_proxy_load
tb_up

# bad_write KEY VALUE: must fail with EINVAL, leave the value, log why
bad_write() {
	local before after err
	before=$(tb_ns proxy sysctl -n "net.ecn_proxy.$1")
	if err=$(tb_ns proxy sysctl -w "net.ecn_proxy.$1=$2" 2>&1); then
		check_err 1 "writing '$2' to $1 succeeded"
	fi
	case $err in *"Invalid argument"*) ;; *) check_err 1 "$1='$2': '$err'" ;; esac
	after=$(tb_ns proxy sysctl -n "net.ecn_proxy.$1")
	[ "$before" = "$after" ] || check_err 1 "$1 changed from $before to $after"
	dmesg | tail -n 5 | grep -q "net.ecn_proxy.$1: rejected" ||
		check_err 1 "no kernel log message for $1='$2'"
}

RET=0
bad_write feedback bogus
bad_write feedback ""
bad_write max_flows 0
bad_write max_flows -5
bad_write max_flows 99999999
bad_write enabled 2
bad_write timeout_established 0
log_test "invalid sysctl writes are rejected with EINVAL and logged"

RET=0
for v in none dupack drop; do
	tb_ns proxy sysctl -qw net.ecn_proxy.feedback=$v
	[ "$(tb_ns proxy sysctl -n net.ecn_proxy.feedback)" = $v ] ||
		check_err 1 "feedback did not take '$v'"
done
log_test "feedback accepts none, dupack and drop"

RET=0
[ "$(sysctl -n net.ecn_proxy.enabled)" = 0 ] ||
	check_err 1 "enabled in the initial netns despite enable_init_net=0"
[ "$(tb_ns client sysctl -n net.ecn_proxy.enabled)" = 0 ] ||
	check_err 1 "enabled in the client namespace"
log_test "the proxy is off in namespaces that did not enable it"

tb_tcp client ecn=0
tb_tcp server ecn=1
tb_proxy on drop
tb_ns proxy sysctl -qw net.ecn_proxy.max_flows=4
tb_capture_start ss proxy eth1 "$TB_OUT/limits.pcap" tcp port 5201
RET=0
tb_iperf limits client server -P 10 -t 2 || check_err 1 "iperf3 failed"
tb_capture_stop ss
log_test "11 concurrent connections all complete"

RET=0
upg=$(tshark_count "$TB_OUT/limits.pcap" \
	"tcp.flags.syn == 1 && tcp.flags.ack == 0 && tcp.flags.cwr == 1 && tcp.flags.ece == 1")
plain=$(tshark_count "$TB_OUT/limits.pcap" \
	"tcp.flags.syn == 1 && tcp.flags.ack == 0 && tcp.flags.cwr == 0 && tcp.flags.ece == 0")
full=$(tb_proxy_stat table_full)
seen=$(tb_proxy_stat flows_seen)
log_info "upgraded SYNs $upg, untouched SYNs $plain, table_full $full, flows_seen $seen"
[ "$upg" = 4 ] || check_err 1 "$upg SYNs upgraded, expected 4 (max_flows)"
[ "$plain" = 7 ] || check_err 1 "$plain SYNs passed untouched, expected 7"
[ "$full" = 7 ] || check_err 1 "table_full = $full, expected 7"
log_test "max_flows=4: 4 flows proxied, 7 pass untouched and are counted"

RET=0
n=$(tb_ns proxy cat /proc/net/ecn_proxy/flows | wc -l)
[ "$n" -le 4 ] || check_err 1 "$n flows listed with max_flows=4"
tb_ns proxy cat /proc/net/ecn_proxy/flows | head -n 2 | sed 's/^/INFO: flows: /'
log_test "/proc/net/ecn_proxy/flows lists at most max_flows flows"

exit $EXIT_STATUS
