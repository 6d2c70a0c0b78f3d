# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
#
# kselftest-style helpers for the VM tests (after the kernel's
# tools/testing/selftests/net/forwarding/lib.sh).  A test script:
#
#   #!/bin/bash
#   # (topology diagram)
#   set -e
#   . "$(dirname "$0")/../lib/testlib.sh"
#   trap tb_cleanup EXIT
#   tb_up
#   RET=0
#   some_command || check_err $? "what went wrong"
#   [ "$x" -gt 0 ] || check_err 1 "x is $x, expected > 0"
#   log_test "what this case checks"
#   ...
#   exit $EXIT_STATUS
#
# Every log_test prints one "TEST: ... [ OK ]/[FAIL]" line and appends a
# TAP-style line to $TB_RESULTS (set by the runner); a script that cannot
# run exits with ksft_skip (4) through skip().

TB_LIB_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=topology.sh
. "$TB_LIB_DIR/topology.sh"

ksft_skip=4
RET=0
EXIT_STATUS=0
retmsg=
: "${TB_RESULTS:=/dev/null}"
: "${TB_OUT:=$PWD}"

# check_err ERR [MSG]: remember the first failure of the current case.
check_err() {
	local err=$1 msg=${2:-}
	if [ "$RET" -eq 0 ] && [ "$err" -ne 0 ]; then
		RET=$err
		retmsg=$msg
	fi
}

# check_fail ERR [MSG]: the case fails if ERR is 0 (the command succeeded).
check_fail() {
	local err=$1 msg=${2:-}
	if [ "$RET" -eq 0 ] && [ "$err" -eq 0 ]; then
		RET=1
		retmsg=$msg
	fi
}

# log_test NAME: report the current case and start a new one.
log_test() {
	local name=$1
	if [ "$RET" -ne 0 ]; then
		EXIT_STATUS=1
		printf "TEST: %-64s [FAIL]\n" "$name"
		[ -n "$retmsg" ] && printf "\t%s\n" "$retmsg"
		echo "not ok - $name${retmsg:+ # $retmsg}" >>"$TB_RESULTS"
	else
		printf "TEST: %-64s [ OK ]\n" "$name"
		echo "ok - $name" >>"$TB_RESULTS"
	fi
	RET=0
	retmsg=
	return 0
}

log_info() {
	echo "INFO: $*"
}

skip() {
	echo "SKIP: $*"
	exit $ksft_skip
}

require_cmd() {
	local c
	for c in "$@"; do
		command -v "$c" >/dev/null || skip "$c is not installed"
	done
}

# Test settings: the TB_* knobs a script reads from the environment
# (docs/testbed.md, "Settings: every `TB_*` variable").  A value the script cannot use fails the script at
# once, with a "not ok" line that names the setting: a mistyped setting
# must not pass a run, as a skip would.  Scripts read their settings
# before require_cmd and tb_up, so that nothing has run yet.

# tb_bad_knob MSG: fail the script over an unusable setting.
tb_bad_knob() {
	RET=1
	retmsg="$*"
	log_test "$(basename "$0" .sh): its settings (TB_*) are usable"
	exit 1
}

# tb_knob_int NAME VAR DEFAULT MIN [MAX]: NAME=${VAR:-DEFAULT}, a whole
# number from MIN to MAX (MAX absent: no upper bound), in decimal
# (tb_is_int, topology.sh).
tb_knob_int() {
	local _kn=$1 _kvar=$2 _kmin=$4 _kmax=${5:-} _kv _kwant
	_kv=${!_kvar:-$3}
	if tb_is_int "$_kv" "$_kmin" "$_kmax"; then
		printf -v "$_kn" %d "$((10#$_kv))"
		return 0
	fi
	_kwant="at least $_kmin"
	[ -z "$_kmax" ] || _kwant="from $_kmin to $_kmax"
	tb_bad_knob "$_kvar must be a whole number $_kwant, not '$_kv'"
}

# tb_knob_match NAME VAR DEFAULT ERE WHAT: NAME=${VAR:-DEFAULT}, which
# must match ^(ERE)$ (WHAT describes it in the refusal).
tb_knob_match() {
	local _kn=$1 _kvar=$2 _kre="^($4)\$" _kv
	_kv=${!_kvar:-$3}
	[[ $_kv =~ $_kre ]] || tb_bad_knob "$_kvar must be $5, not '$_kv'"
	printf -v "$_kn" %s "$_kv"
}

# tb_knob_list NAME VAR DEFAULT ERE WHAT: NAME=${VAR:-DEFAULT} as a
# space-separated list; the items (separated by commas or spaces) must
# each match ^(ERE)$, and there must be at least one.
tb_knob_list() {
	local _kn=$1 _kvar=$2 _kre="^($4)\$" _kv _ki _kl=()
	_kv=${!_kvar:-$3}
	for _ki in ${_kv//,/ }; do
		[[ $_ki =~ $_kre ]] ||
			tb_bad_knob "$_kvar must be a list of $5, not '$_kv' ('$_ki')"
		_kl+=("$_ki")
	done
	[ ${#_kl[@]} -gt 0 ] || tb_bad_knob "$_kvar must be a list of $5, not empty"
	printf -v "$_kn" %s "${_kl[*]}"
}

# tb_knob_ints NAME VAR DEFAULT MIN MAX MAXITEMS: NAME=${VAR:-DEFAULT} as a
# space-separated list of 1 to MAXITEMS whole numbers from MIN to MAX
# (separated by commas or spaces).
tb_knob_ints() {
	local _kn=$1 _kvar=$2 _kmin=$4 _kmax=$5 _kv _ki _kl=()
	_kv=${!_kvar:-$3}
	for _ki in ${_kv//,/ }; do
		tb_is_int "$_ki" "$_kmin" "$_kmax" ||
			tb_bad_knob "$_kvar must be a list of whole numbers from $_kmin to $_kmax, not '$_kv' ('$_ki')"
		_kl+=("$((10#$_ki))")
	done
	[ ${#_kl[@]} -ge 1 ] && [ ${#_kl[@]} -le "$6" ] ||
		tb_bad_knob "$_kvar must be a list of 1 to $6 numbers, not '$_kv'"
	printf -v "$_kn" %s "${_kl[*]}"
}

# TB_SLOW (topology.sh) multiplies the polling limits: a number.
tb_knob_int TB_SLOW TB_SLOW 1 1 100

tb_cleanup() {
	local rc=$?
	tb_down >/dev/null 2>&1 || true
	return $rc
}

# tb_iperf NAME NODE SERVER_NODE [IPERF3 ARGS...]: run one iperf3 client in
# NODE against an iperf3 server started in SERVER_NODE; the JSON goes to
# $TB_OUT/NAME.json.  Use -R for a download (server sends).
tb_iperf() {
	local name=$1 node=$2 srv=$3 port=5201
	shift 3
	tb_bg "iperf-srv-$name" "$srv" iperf3 -s -1 -p $port
	tb_wait_port "$srv" $port || return
	tb_ns "$node" iperf3 -c "$(tb_addr "$srv")" -p $port -J "$@" \
		>"$TB_OUT/$name.json"
	local rc=$?
	tb_bg_stop "iperf-srv-$name"
	return $rc
}

# tb_home_invalid_delta: with TB_ROUTER=home, sets HOME_INVALID to the
# packets the home router's firewall dropped as invalid since the last call
# (or since tb_up loaded the ruleset); 0 on the plain testbed.  Not in a
# $(...) subshell: it remembers the count.
tb_home_invalid_delta() {
	local now
	HOME_INVALID=0
	[ "$TB_ROUTER" = home ] || return 0
	now=$(tb_home_invalid) || return
	HOME_INVALID=$((now - TB_HOME_INVALID_SEEN))
	TB_HOME_INVALID_SEEN=$now
}

# tb_home_check NAME: with TB_ROUTER=home, one check that the firewall
# dropped no packet as invalid since the last call (injected duplicate
# ACKs, held ACKs and suppressed retransmissions must not make conntrack
# drop anything); nothing on the plain testbed.  Call it between cases.
tb_home_check() {
	[ "$TB_ROUTER" = home ] || return 0
	tb_home_invalid_delta
	RET=0
	[ "$HOME_INVALID" = 0 ] ||
		check_err 1 "the firewall dropped $HOME_INVALID packets as ct state invalid"
	log_test "$1: the home router's firewall dropped nothing as invalid"
}

# jq_num FILE FILTER: one number from a JSON file.
jq_num() {
	jq -r "$2" "$1"
}

# tshark_count FILE FILTER: number of packets in FILE matching FILTER.
tshark_count() {
	tshark -n -r "$1" -Y "$2" 2>/dev/null | wc -l
}

TB_TOP=$(cd "$TB_LIB_DIR/../.." && pwd)
# The tests' Python helpers: `python3 -m ecnproxy.vmtest.NAME`, from the
# checkout's package py/ecnproxy (the guest sees the checkout at its path).
case ":${PYTHONPATH:-}:" in
*":$TB_TOP/py:"*) ;;
*) export PYTHONPATH=$TB_TOP/py${PYTHONPATH:+:$PYTHONPATH} ;;
esac
# Where the built modules are: kmod/ of the checkout, or the copy that
# make debugtest builds against the debug kernel (build/debug/kmod).
TB_KMOD=${TB_KMOD:-$TB_TOP/kmod}
XFER_PORT=5001

# tb_core_load: insmod tcpfwd.ko, the plumbing both modules import.
tb_core_load() {
	[ -d /sys/module/tcpfwd ] || insmod "$TB_KMOD/core/tcpfwd.ko"
}

# tb_proxy_load: insmod ecn_proxy.ko (left disabled in the initial netns).
tb_proxy_load() {
	tb_core_load
	[ -d /sys/module/ecn_proxy ] ||
		insmod "$TB_KMOD/ecn_proxy/ecn_proxy.ko" enable_init_net=0
}

# tb_proxy on|off [FEEDBACK]: the proxy in the proxy namespace.
tb_proxy() {
	local on=0
	[ "$1" = on ] && on=1
	tb_ns proxy sysctl -qw net.ecn_proxy.enabled=$on
	[ -z "${2:-}" ] || tb_ns proxy sysctl -qw net.ecn_proxy.feedback="$2"
}

# tb_proxy_flush_fallback: empty the proxy's SYN fallback cache (proxy ns),
# saying so if it held anything.
tb_proxy_flush_fallback() {
	local held
	held=$(tb_ns proxy cat /proc/net/ecn_proxy/fallback)
	[ -z "$held" ] || log_info "fallback cache held: $(echo "$held" | tr '\n' ' ')"
	echo flush | tb_ns proxy tee /proc/net/ecn_proxy/fallback >/dev/null
}

# tb_proxy_stat NAME: one counter of /proc/net/ecn_proxy/stats (proxy ns).
tb_proxy_stat() {
	tb_ns proxy awk -v k="$1" '$1 == k { print $2 }' /proc/net/ecn_proxy/stats
}

# tb_proxy_stats ARRAY: every counter of /proc/net/ecn_proxy/stats (proxy
# ns) into the associative array ARRAY, in one read (one process).
tb_proxy_stats() {
	local -n _tps=$1
	local _k _v
	_tps=()
	while read -r _k _v; do
		_tps[$_k]=$_v
	done < <(tb_ns proxy cat /proc/net/ecn_proxy/stats)
	[ ${#_tps[@]} -gt 0 ] || tb_die "no counters in /proc/net/ecn_proxy/stats"
}

# tb_xfer NAME FAMILY UP_BYTES DOWN_BYTES [CLIENT SERVER]: one connection
# from the client to the server (nodes, by default client and server); the
# client sends UP_BYTES, then the server DOWN_BYTES.  The summaries go to
# $TB_OUT/NAME.{client,server}.json.  Returns 0 iff both directions arrived
# byte-exact.  XFER_CLIENT_OPTS: more options for the client (xfer's, e.g.
# "--pause 1"), split on spaces.
tb_xfer() {
	local name=$1 fam=$2 up=$3 down=$4 c=$TB_OUT/$1.client.json s=$TB_OUT/$1.server.json
	local cn=${5:-client} sn=${6:-server} copts
	read -r -a copts <<<"${XFER_CLIENT_OPTS:-}"
	tb_bg "xfer-$name" "$sn" python3 -m ecnproxy.vmtest.xfer server $XFER_PORT "$down" \
		--family "$fam"
	tb_wait_port "$sn" $XFER_PORT || return
	if ! tb_ns "$cn" python3 -m ecnproxy.vmtest.xfer client "$(tb_addr "$sn" "$fam")" \
		$XFER_PORT "$up" "${copts[@]}" >"$c" 2>"$TB_OUT/$name.client.err"; then
		echo "tb_xfer $name: client failed: $(tail -n1 "$TB_OUT/$name.client.err")"
		tb_bg_stop "xfer-$name"
		return 1
	fi
	wait "$(cat "$TB_STATE/xfer-$name.pid")" 2>/dev/null || true
	rm -f "$TB_STATE/xfer-$name.pid"
	cp "$TB_STATE/xfer-$name.log" "$s"
	# one jq for both summaries (a process costs under TCG); each is one
	# JSON line, and anything after it (the server's stderr is in its
	# file) fails the check
	jq -e -n --slurpfile c "$c" --slurpfile s "$s" --arg up "$up" --arg down "$down" '
		$c[0] as $c | $s[0] as $s |
		($c.sent_sha256 | type) == "string" and
		$c.sent_sha256 == $s.received_sha256 and
		$s.sent_sha256 == $c.received_sha256 and
		($s.received | tostring) == $up and ($c.received | tostring) == $down' \
		>/dev/null 2>&1
}

# tb_phases NAME FAMILY STEP...: one connection from the client to the
# server on XFER_PORT that runs ecnproxy.vmtest.phases' STEPs (down:N, up:N,
# idle:S) and stays open until the last; the client's JSON goes to
# $TB_OUT/NAME.client.json.  Returns 0 iff every step was byte-exact.
tb_phases() {
	local name=$1 fam=$2 c=$TB_OUT/$1.client.json
	shift 2
	tb_bg "phases-$name" server python3 -m ecnproxy.vmtest.phases server \
		$XFER_PORT --family "$fam"
	tb_wait_port server $XFER_PORT || return
	tb_ns client python3 -m ecnproxy.vmtest.phases client \
		"$(tb_addr server "$fam")" $XFER_PORT "$@" >"$c" \
		2>"$TB_OUT/$name.client.err"
	tb_bg_stop "phases-$name"
	[ "$(jq -r .ok "$c" 2>/dev/null)" = true ]
}

# tb_snap_delta NAME KEY...: the sum of KEY's increases from
# $TB_OUT/NAME.0.snap to NAME.1.snap (files of "key value" lines)
tb_snap_delta() {
	local name=$1 k sum=0 a b
	shift
	for k in "$@"; do
		a=$(awk -v k="$k" '$1 == k { print $2 }' "$TB_OUT/$name.0.snap")
		b=$(awk -v k="$k" '$1 == k { print $2 }' "$TB_OUT/$name.1.snap")
		sum=$((sum + ${b:-0} - ${a:-0}))
	done
	echo $sum
}

# tb_snap_events NAME: the proxy's congestion events from NAME.0.snap to
# NAME.1.snap: congestion_events less signals_withdrawn (signals withdrawn
# before N could be shown a loss, which congestion_events counts too)
tb_snap_events() {
	echo $(($(tb_snap_delta "$1" congestion_events) - $(tb_snap_delta "$1" signals_withdrawn)))
}

# check_undos PREFIX EVENTS UNDOS: a test result that N's reductions for
# EVENTS simulated losses were not undone; an undone reduction is a failed
# simulated loss, and a few may come from real losses the path caused at
# the same time: UNDOS <= max(1, EVENTS / 20).
check_undos() {
	local bound=$(($2 / 20))
	[ "$bound" -ge 1 ] || bound=1
	RET=0
	[ "$3" -le "$bound" ] || check_err 1 "$3 undos (bound $bound) for $2 events"
	log_test "$1reductions are not undone ($3 undos, bound $bound)"
}

# check_nothing_to_n N_JSON: check_err unless pcap_ecn's summary of a
# capture on N's side (E the server) shows no ECT, CE, ECE or CWR toward N.
check_nothing_to_n() {
	local ect ce ece cwr
	read -r ect ce ece cwr < <(jq -r '.s2c | "\(.ect_any) \(.ce) \(.ece) \(.cwr)"' "$1")
	[ "$ect$ce$ece$cwr" = 0000 ] ||
		check_err 1 "toward N: ECT=$ect CE=$ce ECE=$ece CWR=$cwr"
}

# check_ect_to_e E_JSON: check_err unless every segment N sent once is ECT
# in pcap_ecn's summary of a capture on E's side (with N_SIDE_PCAP); sets
# N2E_DATA and N2E_ECT.
check_ect_to_e() {
	read -r N2E_DATA N2E_ECT < <(jq -r '.n2e | "\(.data) \(.ect_data)"' "$1")
	[ "$N2E_DATA" -gt 0 ] && [ "$N2E_ECT" = "$N2E_DATA" ] ||
		check_err 1 "ECT on $N2E_ECT of the $N2E_DATA segments N sent once"
}

# check_echo_to_e E_JSON: check_err unless the router marked E's data and
# the proxy echoed it to E as an RFC 3168 receiver would (on >= 95 % of
# N's segments), in pcap_ecn's summary of a capture on E's side (ECN_HOST
# server); sets ECHO_CE, ECHO_ECE and ECHO_MATCH.
check_echo_to_e() {
	read -r ECHO_CE ECHO_ECE ECHO_MATCH < <(jq -r '"\(.s2c.ce) \(.echo.ece) \(.echo.match)"' "$1")
	[ "$ECHO_CE" -gt 0 ] || check_err 1 "RED marked none of E's data"
	[ "$ECHO_ECE" -gt 0 ] || check_err 1 "no ECE toward E"
	awk -v m="$ECHO_MATCH" 'BEGIN { exit !(m >= 0.95) }' ||
		check_err 1 "the echo matches RFC 3168 on only $ECHO_MATCH of N's segments"
}

# pcap_ecn PCAP [ECN_HOST [N_SIDE_PCAP]]: JSON summary of the xfer
# connection's ECN bits; with N_SIDE_PCAP, "n2e" judges the data toward the
# ECN host by what the non-ECN host sent (see py/ecnproxy/vmtest/pcap_ecn.py).
pcap_ecn() {
	python3 -m ecnproxy.vmtest.pcap_ecn "$1" $XFER_PORT ${2:+"$2"} ${3:+"$3"}
}
