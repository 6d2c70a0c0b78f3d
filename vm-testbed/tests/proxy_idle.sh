#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Long-idle proxied connections stay whole.  One connection from the
# non-ECN client N to the ECN server E, proxied with feedback=dupack, both
# router directions at TB_RATE_LOW (HTB + RED ecn), so that RED marks E's
# data and N's data:
#
#   client(N) --[net0]-- eth0 PROXY eth1 --[net1]-- router(RED both ways) -- server(E)
#              ^ capture "n" (N's side)  ^ capture "e" (E's side)
#
# Steps of the connection (ecnproxy.vmtest.phases): a 300 kB download (the flow is
# proxied, phase 2), then silence for 3 x the proxy's timeouts
# (timeout_established = timeout_handshake = IDLE_T s, TB_IDLE_TIMEOUT,
# default 5 x TB_SLOW), then, captured on
# both sides of the proxy, a marked download and a marked upload.  Cases:
#   idle     the proxy stays loaded: on the plain testbed the flow's state
#            expires and is picked up again when the connection wakes up
#            (flows_expired_proxied, flows_picked_up); on the home router
#            (tb-variant home) conntrack still holds the connection, and
#            the proxy keeps the flow as long as conntrack does (nothing
#            expires);
#   reload   the module is unloaded and loaded again while the connection
#            is silent: all state is lost and the flow is picked up from
#            its packets when E's data carries CE (flows_picked_up).
# After the wake-up (for "reload": from 200 ms after the first CE-marked
# segment reached N's side, the earliest the proxy can recognise the flow),
# asserted on the wire: nothing of ECN reaches N (no ECT, CE, ECE or CWR);
# N's new data carries ECT toward E; E's CE marks are echoed to E as ECE
# (RFC 3168 echo replayed on E's side); N gets its congestion feedback
# (congestion_events); byte-exact in every step.
# TB_IDLE_FAMILIES (comma-separated): 4 in make test; IPv6 (@v6) and the
# home router (@home, both families) in the extended suite.
# tb-make-test: second-kernel
# tb-variant-extended: v6 TB_IDLE_FAMILIES=6
# tb-variant-extended: home TB_ROUTER=home TB_IDLE_FAMILIES=4,6
set -e
. "$(dirname "$0")/../lib/testlib.sh"
trap tb_cleanup EXIT
# The proxy's timeouts in the test (IDLE_T) scale with TB_SLOW: the check
# after the marked download reads the flow's line some seconds after its
# last packet (2 s on the stock kernel, over 5 s on the debug kernel, where
# the flow had expired: results/debugtest-20261129, run-20261129-s3).
tb_knob_int IDLE_T TB_IDLE_TIMEOUT "$(tb_slow 5)" 1 86400
tb_knob_list TB_IDLE_FAMILIES TB_IDLE_FAMILIES 4 '4|6' '4 and 6'
tb_knob_int DOWN TB_IDLE_DOWN 3000000 1
tb_knob_int UP TB_IDLE_UP 3000000 1
require_cmd tcpdump jq python3

PORT=5003

tb_proxy_load
tb_red_functional
TB_RATE_HIGH=$TB_RATE_LOW
tb_up
tb_tcp client ecn=0
tb_tcp server ecn=1

proxy_sysctls() {
	tb_proxy on dupack
	tb_ns proxy sysctl -qw net.ecn_proxy.timeout_established="$IDLE_T" \
		net.ecn_proxy.timeout_handshake="$IDLE_T" \
		net.ecn_proxy.timeout_closed=2
}

# flow_line: the connection's line in /proc/net/ecn_proxy/flows, if any
flow_line() {
	tb_ns proxy grep -E "[:.]$PORT( |$)|:$PORT " /proc/net/ecn_proxy/flows || true
}

# wait_mark NAME: until the client has written mark NAME
wait_mark() {
	local i
	for i in $(seq "$(tb_slow 600)"); do
		grep -q "^$1 " "$TB_OUT/$CASE.marks" 2>/dev/null && return 0
		sleep 0.1
	done
	return 1
}

run() {
	local case=$1 fam=$2 tag=$1-v$2 srv
	CASE=$tag
	proxy_sysctls
	rm -f "$TB_OUT/$tag".*
	tb_bg "ph-srv" server python3 -m ecnproxy.vmtest.phases server $PORT --family "$fam"
	tb_wait_port server $PORT
	srv=$(tb_addr server "$fam")
	tb_bg "ph-cli" client python3 -m ecnproxy.vmtest.phases client "$srv" $PORT \
		down:300000 mark:before idle:$((3 * IDLE_T + 2)) mark:after \
		down:"$DOWN" mark:mid up:"$UP" --marks "$TB_OUT/$tag.marks"

	RET=0
	wait_mark before || check_err 1 "the client never reached the idle period"
	flow_line >"$TB_OUT/$tag.flow-before"
	grep -q "phase=2" "$TB_OUT/$tag.flow-before" ||
		check_err 1 "not proxied before the idle period: $(cat "$TB_OUT/$tag.flow-before")"
	exp0=$(tb_proxy_stat flows_expired_proxied)
	touch "$TB_OUT/before.go"
	if [ "$case" = reload ]; then
		sleep 1
		rmmod ecn_proxy
		tb_proxy_load
		proxy_sysctls
	fi
	wait_mark after || check_err 1 "the client never woke up"
	flow_line >"$TB_OUT/$tag.flow-idle"
	log_info "$tag: after $((3 * IDLE_T + 2)) s of silence: '$(cat "$TB_OUT/$tag.flow-idle")'"
	ev0=$(tb_proxy_stat congestion_events)
	pu0=$(tb_proxy_stat flows_picked_up)
	tb_capture_start -n n proxy eth0 "$TB_OUT/$tag.n.pcap" tcp port $PORT
	tb_capture_start e proxy eth1 "$TB_OUT/$tag.e.pcap" tcp port $PORT
	touch "$TB_OUT/after.go"
	# between the marked download and the upload: the flow as it is
	wait_mark mid || check_err 1 "the client never finished the download"
	flow_line >"$TB_OUT/$tag.flow-after"
	touch "$TB_OUT/mid.go"
	wait "$(cat "$TB_STATE/ph-cli.pid")" 2>/dev/null || true
	tb_capture_stop n e
	cp "$TB_STATE/ph-cli.log" "$TB_OUT/$tag.client.json"
	tb_bg_stop ph-srv
	rm -f "$TB_OUT/before.go" "$TB_OUT/after.go" "$TB_OUT/mid.go" \
		"$TB_STATE/ph-cli.pid"
	[ "$(jq -r .ok "$TB_OUT/$tag.client.json" 2>/dev/null)" = true ] ||
		check_err 1 "not byte-exact: $(cat "$TB_OUT/$tag.client.json")"
	log_test "$tag: every step byte-exact, idle $((3 * IDLE_T + 2)) s between"
	tb_home_check "$tag"

	RET=0
	local pu ev exp
	pu=$(( $(tb_proxy_stat flows_picked_up) - pu0 ))
	ev=$(( $(tb_proxy_stat congestion_events) - ev0 ))
	exp=$(( $(tb_proxy_stat flows_expired_proxied) - exp0 ))
	log_info "$tag: picked up $pu, expired $exp, congestion events $ev; flow '$(cat "$TB_OUT/$tag.flow-after")'"
	if [ ! -s "$TB_OUT/$tag.flow-after" ]; then
		check_err 1 "no flow line after the download: gone within timeout_established ($IDLE_T s) of its last packet? (TB_IDLE_TIMEOUT)"
	elif ! grep -q "phase=2" "$TB_OUT/$tag.flow-after"; then
		check_err 1 "not proxied after the wake-up"
	fi
	case $case/$TB_ROUTER in
	idle/home)
		# conntrack holds the connection: the proxy keeps the flow
		[ "$exp" = 0 ] && [ "$pu" = 0 ] ||
			check_err 1 "expired $exp, picked up $pu: the flow should outlive the timeout with conntrack"
		grep -q "picked_up" "$TB_OUT/$tag.flow-after" &&
			check_err 1 "the flow was picked up, not kept" ;;
	*)
		[ "$pu" -ge 1 ] || check_err 1 "the flow was not picked up again"
		grep -q "picked_up" "$TB_OUT/$tag.flow-after" ||
			check_err 1 "the flow is not marked picked_up" ;;
	esac
	log_test "$tag: proxied again after the silence ($case, $TB_ROUTER)"

	# from when on the proxy must have the flow: at once if its state was
	# kept or remembered, else 200 ms after the first CE reached N's side
	local after=() t
	if [ "$case" = reload ]; then
		t=$(python3 -m ecnproxy.vmtest.pcap_ecn --first-ce s2c "$TB_OUT/$tag.n.pcap" $PORT)
		[ -n "$t" ] && after=(--after "$(awk -v t="$t" 'BEGIN { printf "%.6f", t + 0.2 }')")
	fi
	python3 -m ecnproxy.vmtest.pcap_ecn "${after[@]}" "$TB_OUT/$tag.n.pcap" $PORT \
		>"$TB_OUT/$tag.n.json"
	python3 -m ecnproxy.vmtest.pcap_ecn "${after[@]}" "$TB_OUT/$tag.e.pcap" $PORT server \
		"$TB_OUT/$tag.n.pcap" >"$TB_OUT/$tag.e.json"

	RET=0
	check_nothing_to_n "$TB_OUT/$tag.n.json"
	log_test "$tag: after the wake-up no ECT, CE, ECE or CWR reaches N"

	RET=0
	check_ect_to_e "$TB_OUT/$tag.e.json"
	log_test "$tag: N's data carries ECT toward E after the wake-up ($N2E_ECT/$N2E_DATA)"

	RET=0
	check_echo_to_e "$TB_OUT/$tag.e.json"
	log_info "$tag: CE on E's data $ECHO_CE, ECE toward E $ECHO_ECE, echo match $ECHO_MATCH"
	log_test "$tag: E's CE marks are echoed to E"

	RET=0
	[ "$ev" -gt 0 ] || check_err 1 "no congestion event signalled to N"
	log_test "$tag: N gets its congestion feedback ($ev events)"
}

for fam in $TB_IDLE_FAMILIES; do
	run idle "$fam"
	run reload "$fam"
done

exit $EXIT_STATUS
