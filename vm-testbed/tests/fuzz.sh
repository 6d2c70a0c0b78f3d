#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The fuzz campaign (issue 11): malformed and adversarial TCP/IPv4/IPv6
# packets (ecnproxy.vmtest.fuzzgen, reproducible from TB_FUZZ_SEED) through both
# modules at once, the proxy in each feedback mode and impair with a rule
# of every action, while real proxied connections run beside them.
#
#   client(N) -- eth0 PROXY eth1 --+-- router -- server(E)
#   fuzzgen side A ^               |     blackholes 198.18.7.0/24 and
#   (client's ns)                 udp1   fd8e:c9b0:2a17:7::/64, the fuzz
#                                 fuzzgen side B    prefix
#
# TB_FUZZ_PACKETS packets in all (default 30000; make debugtest: 10^6):
# 30 % per feedback mode, 10 % for the unload round (so more than
# TB_FUZZ_PACKETS with more than three modes).  TB_FUZZ_MODES picks the
# modes: `dupack` in the core suite (make test; the module's default and
# the mode with the most per-flow code: holds, trims, ACK edits), all
# five (none, drop, dupack, dupack-rwnd, dupack-fast) in the extended
# suite (fuzz@modes), none, drop and dupack in make debugtest.  A mode's
# seed is TB_FUZZ_SEED plus its index in "none drop dupack unload
# dupack-rwnd dupack-fast" (the unload round's is 3), whichever modes
# run.  Per mode, in order:
#   M  header damage (vmtest/fuzzgen.py): both modules count exactly the
#      packets whose TCP header is broken and that reach the FORWARD hook
#      (`malformed`), nothing else: IP-level damage dies in IP input,
#      fragments, cut and overlong extension headers are not TCP to them;
#      the real connections see no out-of-window segment;
#   O  option blocks, flag and ECN combinations, and made-up connections
#      that the proxy upgrades and then drives with CE, ECE, CWR, SACK,
#      retransmissions, FIN and RST: no accounting, the modules must
#      survive it (any kernel report fails the guest in vm-run);
#   S  blind spoofs (random sequence and ACK numbers) on two real proxied
#      connections, IPv4 and IPv6, kept open at a pause: `out_of_window`
#      grows by exactly the number spoofed, the flows keep their state and
#      counters, no congestion event, drop or injection happens (RED does
#      not mark: TB_RED_ECN=0), and both connections then finish
#      byte-exact.
# Real connections (IPv4 and IPv6 in turn, 300 kB up and 1 MB down, the
# client non-ECN, the server ECN: proxied) run in a loop through M and O,
# and every one must be byte-exact.  Last, the unload round: phases M and
# O again with no real traffic, and rmmod impair, ecn_proxy and tcpfwd
# while they run.
#
# Every frame must reach the proxy for the exact counts: the backlog is
# raised (net.core.netdev_max_backlog) and the softnet drops checked.
#
# tb-variant-extended: modes TB_FUZZ_MODES=none,drop,dupack,dupack-rwnd,dupack-fast
set -e
. "$(dirname "$0")/../lib/testlib.sh"
. "$(dirname "$0")/../lib/impair_lib.sh"
tb_knob_int total TB_FUZZ_PACKETS 30000 100
tb_knob_list modes TB_FUZZ_MODES dupack 'none|drop|dupack|dupack-rwnd|dupack-fast' 'feedback modes (none, drop, dupack, dupack-rwnd, dupack-fast)'
tb_knob_int seed TB_FUZZ_SEED 20261126 0
require_cmd python3 jq

per_mode=$((total * 3 / 10))
n_m=$((per_mode * 40 / 100))
n_o=$((per_mode * 45 / 100))
n_s=$((per_mode - n_m - n_o))
n_rm=$((total - 3 * per_mode))
FUZZ4=198.18.7.0/24
FUZZ6=fd8e:c9b0:2a17:7::/64

backlog0=$(sysctl -n net.core.netdev_max_backlog)
cleanup() {
	local rc=$?
	[ ! -e "$TB_STATE/bulk.pid" ] || kill "$(cat "$TB_STATE/bulk.pid")" 2>/dev/null || true
	sysctl -qw net.core.netdev_max_backlog="$backlog0" || true
	tb_down >/dev/null 2>&1 || true
	return $rc
}
trap cleanup EXIT

TB_RED_ECN=0
tb_red_functional
tb_proxy_load
impair_load
tb_up
tb_tcp client ecn=0
tb_tcp server ecn=1
sysctl -qw net.core.netdev_max_backlog=200000
tb_ns router ip route add blackhole $FUZZ4
tb_ns router ip -6 route add blackhole $FUZZ6

mac() {
	ip -n "$1" -j link show "$2" | jq -r '.[0].address'
}
SIDE_A="client,eth0,$(mac client eth0),$(mac proxy eth0),$(tb_addr client 4),$(tb_addr client 6)"
SIDE_B="udp1,eth0,$(mac udp1 eth0),$(mac proxy eth1)"
log_info "seed $seed, $total packets: per mode ($modes) M $n_m, O $n_o, S $n_s; unload round $n_rm"

# impair: a rule of every action, all on the fuzz prefix (the real
# connections match none); split and coalesce act after the others, the
# first rule with either of them that matches (docs/man/impair.7)
RULES=()
for net in $FUZZ4 $FUZZ6; do
	RULES+=("dst $net flags syn strip sackok,wscale mode nop"
		"dst $net strip timestamp,mptcp,exp mode compact"
		"dst $net after 3 strip sack mode compact"
		"dst $net flags synack wscale 2"
		"dst $net flags syn mss 536"
		"dst $net mss-clamp 1200"
		"dst $net dir initiator window 1000"
		"dst $net seqrand sack-fix both"
		"dst $net flags syn ecn-clear-syn"
		"dst $net dir responder ecn-set ce only-ect"
		"dst $net dir initiator ecn-set ect1"
		"dst $net ecn-bleach"
		"dst $net ecn-block"
		"dst $net dir initiator after 20 drop 1%"
		"dst $net dir responder dataseg 2-4 split half opts both"
		"dst $net dir responder split at 7 opts second"
		"dst $net dir initiator coalesce opts second")
done
RET=0
impair_set "${RULES[@]}" || check_err 1 "impair rejected the rule set"
[ "$(impair_list | grep -c '# hits')" = "${#RULES[@]}" ] ||
	check_err 1 "impair holds $(impair_list | grep -c '# hits') rules, not ${#RULES[@]}"
log_test "impair holds ${#RULES[@]} rules, every action on the fuzz prefix"

# pstat NAME / istat NAME: the proxy's and impair's counters
pstat() {
	tb_proxy_stat "$1"
}
istat() {
	impair_stat "$1"
}
softnet_drops() {
	local s=0 f
	while read -r -a f; do
		s=$((s + 16#${f[1]}))
	done </proc/net/softnet_stat
	echo $s
}

# gen PHASE COUNT OUT [ARGS...]: one generator run (seed per mode)
gen() {
	local ph=$1 n=$2 out=$3
	shift 3
	python3 -m ecnproxy.vmtest.fuzzgen --phase "$ph" --count "$n" --seed "$gseed" --out "$out" \
		--a "$SIDE_A" --b "$SIDE_B" --fuzz4 $FUZZ4 --fuzz6 $FUZZ6 "$@"
}

# the real connections' loop, in the background until bulk.stop
bulk_start() {
	rm -f "$TB_STATE/bulk.stop"
	(
		set +e
		i=0
		while [ ! -e "$TB_STATE/bulk.stop" ]; do
			i=$((i + 1))
			fam=$((i % 2 ? 4 : 6))
			if tb_xfer "bulk-$1-$i" $fam 300000 1000000; then
				echo "exact bulk-$1-$i IPv$fam"
			else
				echo "FAILED bulk-$1-$i IPv$fam"
			fi
		done
	) >"$TB_OUT/bulk-$1.log" 2>&1 &
	echo $! >"$TB_STATE/bulk.pid"
}

bulk_stop() {
	touch "$TB_STATE/bulk.stop"
	wait "$(cat "$TB_STATE/bulk.pid")" || true
	rm -f "$TB_STATE/bulk.pid"
	RET=0
	local ok bad
	ok=$(grep -c '^exact' "$TB_OUT/bulk-$1.log" || true)
	bad=$(grep -c '^FAILED' "$TB_OUT/bulk-$1.log" || true)
	[ "$ok" -ge 2 ] || check_err 1 "only $ok real connections completed"
	[ "$bad" = 0 ] || check_err 1 "$bad real connections were not byte-exact"
	log_test "$1: $ok real proxied connections beside the fuzz, all byte-exact"
}

# flow_of PORT: the proxy's line for the connection to server port PORT
flow_of() {
	tb_ns proxy cat /proc/net/ecn_proxy/flows | grep -E ":$1 e=" | head -n 1 || true
}

field() {
	echo "$1" | tr ' ' '\n' | sed -n "s/^$2=//p"
}

# endpoint LINE N: "addr port" of the Nth endpoint (1 = A) of a flows line
endpoint() {
	echo "$1" | awk -v n=$(($2 + 1)) '{ e = $n; p = e; sub(/.*:/, "", p);
		a = substr(e, 1, length(e) - length(p) - 1); gsub(/[][]/, "", a);
		print a, p }'
}

fuzz_mode() {
	local mode=$1 out m0 i0 w0 d0 p0 tcpbad v c0 s0 j0 k
	local -A line0 port
	case $mode in
	none) gseed=$seed ;;
	drop) gseed=$((seed + 1)) ;;
	dupack) gseed=$((seed + 2)) ;;
	dupack-rwnd) gseed=$((seed + 4)) ;;
	dupack-fast) gseed=$((seed + 5)) ;;
	esac
	tb_proxy on "$mode"
	tb_red_reset
	bulk_start "$mode"

	# M: header damage
	out=$TB_OUT/fuzz-$mode-M.json
	m0=$(pstat malformed); i0=$(istat malformed); w0=$(pstat out_of_window)
	d0=$(softnet_drops)
	gen M "$n_m" "$out"
	sleep 1
	RET=0
	d0=$(($(softnet_drops) - d0))
	[ "$d0" = 0 ] || check_err 1 "$d0 frames dropped in the backlog: the counts below cannot be exact"
	log_info "$mode M: $(jq -c '{pps, classes}' "$out")"
	log_test "$mode: $n_m header-damaged packets sent (seed $gseed), none lost before the proxy"
	tcpbad=$(jq '[.classes | to_entries[] | select(.key | startswith("tcp_bad")) | .value] | add // 0' "$out")
	RET=0
	m0=$(($(pstat malformed) - m0))
	i0=$(($(istat malformed) - i0))
	[ "$m0" = "$tcpbad" ] || check_err 1 "ecn_proxy counted $m0 malformed, $tcpbad TCP headers were broken"
	[ "$i0" = "$tcpbad" ] || check_err 1 "impair counted $i0 malformed, $tcpbad TCP headers were broken"
	w0=$(($(pstat out_of_window) - w0))
	[ "$w0" = 0 ] || check_err 1 "out_of_window grew by $w0 (no segment of a known flow was sent)"
	log_test "$mode: both modules count the $tcpbad broken TCP headers malformed, and only them"

	# O: options, flags, made-up connections
	out=$TB_OUT/fuzz-$mode-O.json
	s0=$(pstat flows_seen)
	gen O "$n_o" "$out"
	sleep 1
	RET=0
	log_info "$mode O: $(jq -c '{pps, classes}' "$out")"
	log_info "$mode O: ecn_proxy $(tb_ns proxy cat /proc/net/ecn_proxy/stats | tr '\n' ' ')"
	log_info "$mode O: impair $(tb_ns proxy cat /proc/net/impair/stats | tr '\n' ' ')"
	s0=$(($(pstat flows_seen) - s0))
	[ "$s0" -gt 0 ] || check_err 1 "the proxy saw no flow of the fuzz"
	[ "$(pstat flows_active)" -le "$(tb_ns proxy sysctl -n net.ecn_proxy.max_flows)" ] ||
		check_err 1 "flows_active above max_flows"
	log_test "$mode: $n_o option/flag packets and made-up connections ($s0 flows), the modules keep working"
	bulk_stop "$mode"

	# S: blind spoofs on two real connections paused mid-way
	rm -f "$TB_OUT"/marks-* "$TB_OUT"/spoof.go
	for v in 4 6; do
		port[$v]=$((5100 + v))
		tb_bg "ph-srv-$v" server python3 -m ecnproxy.vmtest.phases server "${port[$v]}" --family $v
		tb_wait_port server "${port[$v]}"
		tb_bg "ph-cli-$v" client python3 -m ecnproxy.vmtest.phases client \
			"$(tb_addr server $v)" "${port[$v]}" up:300000 down:300000 mark:spoof \
			up:300000 down:300000 --marks "$TB_OUT/marks-$v"
	done
	RET=0
	for v in 4 6; do
		for k in $(seq "$(tb_slow 300)"); do
			[ -s "$TB_OUT/marks-$v" ] && break
			sleep 0.1
		done
		[ -s "$TB_OUT/marks-$v" ] || check_err 1 "IPv$v: the connection did not reach its pause"
		line0[$v]=$(flow_of "${port[$v]}")
		[ "$(field "${line0[$v]}" phase)" = 2 ] ||
			check_err 1 "IPv$v: not proxied: '${line0[$v]}'"
	done
	log_test "$mode: two proxied connections (IPv4, IPv6) paused for the spoofs"
	local spoofs=()
	for v in 4 6; do
		read -r a ap < <(endpoint "${line0[$v]}" 1)
		read -r b bp < <(endpoint "${line0[$v]}" 2)
		spoofs+=(--spoof "$v,$a,$ap,$b,$bp")
	done
	out=$TB_OUT/fuzz-$mode-S.json
	w0=$(pstat out_of_window); c0=$(pstat congestion_events)
	p0=$(pstat segs_dropped); j0=$(pstat dupacks_injected)
	h0=$(pstat acks_held)
	d0=$(softnet_drops)
	gen S "$n_s" "$out" "${spoofs[@]}"
	sleep 1
	log_info "$mode S: $(jq -c '{pps, classes}' "$out")"
	RET=0
	w0=$(($(pstat out_of_window) - w0))
	d0=$(($(softnet_drops) - d0))
	[ "$d0" = 0 ] || check_err 1 "$d0 frames dropped in the backlog"
	[ "$w0" = "$n_s" ] || check_err 1 "out_of_window grew by $w0, $n_s segments were spoofed"
	log_test "$mode: out_of_window counts the $n_s blind spoofs exactly"
	RET=0
	for v in 4 6; do
		line=$(flow_of "${port[$v]}")
		log_info "IPv$v before: ${line0[$v]}"
		log_info "IPv$v after:  $line"
		for k in phase state e ece_set cwr_set cong_events dropped ect_set ce_cleared; do
			[ "$(field "${line0[$v]}" $k)" = "$(field "$line" $k)" ] ||
				check_err 1 "IPv$v: $k went from $(field "${line0[$v]}" $k) to $(field "$line" $k)"
		done
	done
	c0=$(($(pstat congestion_events) - c0))
	p0=$(($(pstat segs_dropped) - p0))
	j0=$(($(pstat dupacks_injected) - j0))
	h0=$(($(pstat acks_held) - h0))
	[ "$c0/$p0/$j0/$h0" = 0/0/0/0 ] ||
		check_err 1 "congestion_events +$c0, segs_dropped +$p0, dupacks_injected +$j0, acks_held +$h0"
	log_test "$mode: the spoofed flows keep state and counters; no event, drop, injection or held ACK"
	touch "$TB_OUT/spoof.go"
	RET=0
	for v in 4 6; do
		for k in $(seq "$(tb_slow 600)"); do
			kill -0 "$(cat "$TB_STATE/ph-cli-$v.pid")" 2>/dev/null || break
			sleep 0.1
		done
		wait "$(cat "$TB_STATE/ph-cli-$v.pid")" 2>/dev/null || true
		cp "$TB_STATE/ph-cli-$v.log" "$TB_OUT/phases-$mode-$v.json"
		[ "$(jq -r .ok "$TB_OUT/phases-$mode-$v.json" 2>/dev/null)" = true ] ||
			check_err 1 "IPv$v: $(head -c 300 "$TB_OUT/phases-$mode-$v.json")"
		tb_bg_stop "ph-srv-$v"
		tb_bg_stop "ph-cli-$v"
	done
	log_test "$mode: both spoofed connections finish byte-exact"
}

for mode in $modes; do
	fuzz_mode "$mode"
done

# The unload round: rmmod while the fuzz runs (no real traffic: a
# connection the proxy upgraded is half-ECN once it is gone, ecn_proxy(7) CAVEATS)
gseed=$((seed + 3))
tb_proxy on dupack
RET=0
mark=$(dmesg | wc -l)
(gen M $((n_rm / 2)) "$TB_OUT/fuzz-rmmod-M.json" && gen O $((n_rm - n_rm / 2)) "$TB_OUT/fuzz-rmmod-O.json") &
g=$!
sleep 1
kill -0 $g 2>/dev/null || log_info "the generator ended before the unload (a small TB_FUZZ_PACKETS)"
rmmod impair || check_err 1 "rmmod impair failed"
sleep 0.5
rmmod ecn_proxy || check_err 1 "rmmod ecn_proxy failed"
rmmod tcpfwd || check_err 1 "rmmod tcpfwd failed"
wait $g || check_err 1 "the generator failed"
if dmesg | tail -n +"$mark" | grep -E "BUG:|WARNING:|Oops|refcount_t|list_del"; then
	check_err 1 "kernel log shows a problem after the unloads"
fi
log_test "rmmod impair, ecn_proxy and tcpfwd during the fuzz"

RET=0
tb_proxy_load && impair_load || check_err 1 "reload failed"
log_test "the modules load again"

exit $EXIT_STATUS
