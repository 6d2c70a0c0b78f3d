#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Control and bounds: invalid sysctl writes are rejected whole with EINVAL and
# a kernel log message; net.ecn_proxy.max_flows bounds the flow table, and
# the flows beyond it pass untouched and are counted.  Outside init_net the
# limits (max_flows, the timeouts) can only be lowered below init_net's,
# also by the owner of a user namespace, and init_net's value caps them at
# use (issue 11, M3); the log lines a write can trigger are rate-limited
# (L10); timeout_handshake outlasts Linux's SYN retries (L11).
#
#   client -- PROXY (max_flows=4) -- router -- server
#   iperf3 -P 10: 11 connections (control + 10 streams) at once
set -e
. "$(dirname "$0")/../lib/testlib.sh"
trap tb_cleanup EXIT
require_cmd iperf3 tcpdump unshare

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

LIMITS="max_flows timeout_handshake timeout_established timeout_closed fallback_timeout"

RET=0
hs=$(sysctl -n net.ecn_proxy.timeout_handshake)
[ "$hs" = 120 ] || check_err 1 "init_net's timeout_handshake is $hs, expected 120"
[ "$(tb_ns proxy sysctl -n net.ecn_proxy.timeout_handshake)" = 120 ] ||
	check_err 1 "the proxy namespace's timeout_handshake is not 120"
log_test "timeout_handshake outlasts Linux's SYN retries (120 s > 63 s)"

# The rejections above used up part of the log rate limit's burst (10 per
# 5 s per call site): start the next checks with a full one.
sleep 6
RET=0
for k in $LIMITS; do
	bound=$(sysctl -n "net.ecn_proxy.$k")
	[ "$(tb_ns proxy sysctl -n "net.ecn_proxy.$k")" -le "$bound" ] ||
		check_err 1 "$k above init_net's $bound in a new namespace"
	bad_write "$k" $((bound + 1))
	dmesg | tail -n 5 | grep "net.ecn_proxy.$k: rejected" | grep -q "init_net's $bound" ||
		check_err 1 "the log line for $k does not name init_net's bound $bound"
	tb_ns proxy sysctl -qw "net.ecn_proxy.$k=$((bound / 2))" ||
		check_err 1 "$k cannot be lowered in the proxy namespace"
	[ "$(tb_ns proxy sysctl -n "net.ecn_proxy.$k")" = $((bound / 2)) ] ||
		check_err 1 "$k did not take $((bound / 2))"
	tb_ns proxy sysctl -qw "net.ecn_proxy.$k=$bound" ||
		check_err 1 "$k cannot be set to init_net's value $bound"
done
log_test "outside init_net the limits can be lowered, not raised above init_net's"

RET=0
# as the owner of a user namespace: root there, nothing outside (no log
# line is checked here, so the rate limit's burst may be spent)
out=$(unshare -U -r -n sh -c '
	for kv in max_flows=1048576 timeout_handshake=86400 timeout_established=86400 \
		timeout_closed=86400 fallback_timeout=86400; do
		sysctl -w "net.ecn_proxy.$kv" >/dev/null 2>&1 && echo "raised $kv"
	done
	sysctl -qw net.ecn_proxy.max_flows=100 || echo "cannot lower max_flows"
	[ "$(sysctl -n net.ecn_proxy.max_flows)" = 100 ] || echo "max_flows did not take 100"
	sysctl -qw net.ecn_proxy.feedback=dupack || echo "cannot write feedback"
	sysctl -qw net.ecn_proxy.enabled=1 || echo "cannot write enabled"
	sysctl -qw net.ecn_proxy.enabled=0 || echo "cannot write enabled"
' 2>&1) || check_err 1 "unshare -U -r -n failed: $out"
[ -z "$out" ] || check_err 1 "in a user namespace: $(echo "$out" | tr '\n' ' ')"
log_test "the owner of a user namespace cannot raise the limits, can lower them, enable and pick the feedback"

RET=0
# 30 invalid writes to the fallback file (a call site of its own, with its
# own rate limit, not used above): at most a burst of 10 log lines
# (printk's default ratelimit: 10 per 5 s).  One shell does all 30 with its
# builtin echo, well inside 5 s even in a slow guest (a process per write
# took more than 5 s under TCG: two bursts).
l0=$(dmesg | grep -c "fallback: invalid write" || true)
t0=$(date +%s.%N)
acc=$(tb_ns proxy sh -c 'i=0; while [ $i -lt 30 ]; do
	echo bogus 2>/dev/null >/proc/net/ecn_proxy/fallback && echo accepted
	i=$((i + 1)); done' 2>/dev/null || true)
t1=$(date +%s.%N)
[ -z "$acc" ] || check_err 1 "writing 'bogus' to the fallback file succeeded"
log_info "30 invalid writes in $(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", b - a }') s"
l1=$(dmesg | grep -c "fallback: invalid write" || true)
[ $((l1 - l0)) -ge 1 ] && [ $((l1 - l0)) -le 10 ] ||
	check_err 1 "$((l1 - l0)) log lines for 30 invalid writes (expected 1-10)"
log_test "log lines a write can trigger are rate-limited ($((l1 - l0)) for 30 writes)"

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
# SYNs (no ACK) with CWR and ECE, and with neither: ecnproxy's pcapread in
# one pass, not tshark twice (each tshark takes about 25 s under TCG)
read -r upg plain < <(python3 - "$TB_OUT/limits.pcap" <<'PY'
import sys
from ecnproxy.analysis import pcapread
upg = plain = 0
for (_t, _e, _s, _d, _sp, _dp, _seq, _ack, fl, _w, _l) in pcapread.read_packets(sys.argv[1]):
    upg += fl & 0xd2 == 0xc2
    plain += fl & 0xd2 == 0x02
print(upg, plain)
PY
) || true
full=$(tb_proxy_stat table_full)
seen=$(tb_proxy_stat flows_seen)
upg=${upg:-unread} plain=${plain:-unread}
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

RET=0
# init_net lowers its bound below the namespace's own value: it applies
# there at once.  First let the flows above expire (timeout_closed); any
# left (a RST the proxy did not take as exact keeps a flow for
# timeout_established) are counted in.
for i in $(seq "$(tb_slow 120)"); do
	[ "$(tb_proxy_stat flows_active)" = 0 ] && break
	sleep 0.5
done
k=$(tb_proxy_stat flows_active)
[ "$k" = 0 ] || tb_ns proxy cat /proc/net/ecn_proxy/flows | sed 's/^/INFO: left: /'
tb_ns proxy sysctl -qw net.ecn_proxy.max_flows=$((k + 8))
sysctl -qw net.ecn_proxy.max_flows=$((k + 2))
n0=$(tb_proxy_stat table_full)
tb_iperf lowered client server -P 3 -t 1 || check_err 1 "iperf3 failed"
n=$(($(tb_proxy_stat table_full) - n0))
[ "$n" = 2 ] ||
	check_err 1 "table_full +$n for 4 connections with room for 2 under init_net's max_flows ($((k + 2)); the namespace's $((k + 8))), expected +2"
[ "$(tb_ns proxy sysctl -n net.ecn_proxy.max_flows)" = $((k + 8)) ] ||
	check_err 1 "the namespace's own value changed"
sysctl -qw net.ecn_proxy.max_flows=65536
log_test "lowering init_net's max_flows caps the namespace's table at once"

exit $EXIT_STATUS
