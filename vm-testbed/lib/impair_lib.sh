# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
#
# Helpers for the impairment VM tests (vm-testbed/tests/impair_*.sh).
# Source after testlib.sh.  The impairment
# rules live in the proxy namespace (the router box whose FORWARD hook the
# modules use) unless a function takes a NODE.

IMPAIR_KO=$TB_KMOD/impair/impair.ko
IMPAIR_NODE=${IMPAIR_NODE:-proxy}

# impair_load: insmod impair.ko once (tcpfwd.ko first).
impair_load() {
	tb_core_load
	[ -d /sys/module/impair ] || insmod "$IMPAIR_KO"
}

# impair_up: the module and the testbed for functional checks: no
# bottleneck needed (100 Mbit/s), and no frozen RED average
# (tb_red_functional, see lib/topology.sh).
impair_up() {
	impair_load
	tb_red_functional
	TB_RATE_LOW=100mbit tb_up
}

# impair_write TEXT: one write(2) of TEXT (printf %b) to the rules file of
# $IMPAIR_NODE; returns the write's status (cat reads a regular file and
# writes it in one call).
impair_write() {
	local f
	f=$(mktemp)
	printf '%b' "$1" >"$f"
	tb_ns "$IMPAIR_NODE" sh -c "cat '$f' > /proc/net/impair/rules" 2>/dev/null
	local rc=$?
	rm -f "$f"
	return $rc
}

# impair_set RULE...: replace the rule set with these rules (one per arg).
impair_set() {
	local text="flush\n" r
	for r in "$@"; do
		text+="$r\n"
	done
	impair_write "$text"
}

impair_list() {
	tb_ns "$IMPAIR_NODE" cat /proc/net/impair/rules
}

# impair_hits N: hit counter of the Nth rule (1-based).
impair_hits() {
	impair_list | grep -v '^flush$' | sed -n "${1}p" |
		sed -n 's/.*# hits \([0-9]*\)$/\1/p'
}

# impair_stat NAME: one counter of /proc/net/impair/stats.
impair_stat() {
	tb_ns "$IMPAIR_NODE" awk -v k="$1" '$1 == k { print $2 }' \
		/proc/net/impair/stats
}

# impair_wait_stat NAME VALUE SECONDS: poll counter NAME every 0.1 s until it
# reads VALUE, for up to SECONDS (times TB_SLOW); print its last value.  For
# a state that a background client reaches after its start-up (a Python
# client takes most of a second to start in a TCG guest).
impair_wait_stat() {
	local v i
	for i in $(seq "$(tb_slow $(($3 * 10)))"); do
		v=$(impair_stat "$1")
		[ "$v" = "$2" ] && break
		sleep 0.1
	done
	echo "$v"
}

# impair_csum_sw: no checksum offload on any device (rx and tx), so every
# receiver verifies every TCP checksum in software and a wrong incremental
# update loses the segment (veth would otherwise pass CHECKSUM_PARTIAL or
# mark packets CHECKSUM_UNNECESSARY).
impair_csum_sw() {
	local n dev
	for n in "${!TB_IF_ADDR[@]}"; do
		ip netns exec "${n%%:*}" ethtool -K "${n#*:}" rx off tx off \
			>/dev/null 2>&1
	done
	for dev in br1 br2 p1-proxy p1-udp1 p1-router p2-router p2-server p2-udp2; do
		ip netns exec "$TB_SW" ethtool -K "$dev" rx off tx off >/dev/null 2>&1
	done
}

# impair_csum_partial: senders keep tx checksum offload (their segments
# cross the proxy as CHECKSUM_PARTIAL, so the rules edit the pseudo-header
# seed), the proxy's devices have none (the checksum is computed from that
# seed when the proxy transmits) and no device trusts a received checksum:
# every receiver verifies the result of the CHECKSUM_PARTIAL path.
impair_csum_partial() {
	impair_csum_sw
	tb_ns client ethtool -K eth0 tx on >/dev/null 2>&1
	tb_ns server ethtool -K eth0 tx on >/dev/null 2>&1
}

# impair_pcap ARGS...: py/ecnproxy/vmtest/impair_pcap.py
impair_pcap() {
	python3 -m ecnproxy.vmtest.impair_pcap "$@"
}

# impair_xfer NAME FAM UP DOWN [CLIENT SERVER]: tb_xfer that also stops
# the server when the transfer fails (so the next one can listen); 0 iff
# byte-exact.
impair_xfer() {
	tb_xfer "$@" && return 0
	tb_bg_stop "xfer-$1"
	return 1
}

# impair_captures NAME: tcpdump on the client's eth0 (cli), the server's
# eth0 (srv) and the proxy's eth1 (pin), into $TB_OUT/NAME.{c,s,p}.pcap,
# started together.  Frames are cut at IMPAIR_SNAPLEN bytes (128: the
# headers; the summary checks the TCP checksum of whole frames only, so
# 1600 checks the data segments').
impair_captures() {
	local snap=${IMPAIR_SNAPLEN:-128}
	tb_capture_start -n -s "$snap" cli client eth0 "$TB_OUT/$1.c.pcap" \
		tcp port $XFER_PORT
	tb_capture_start -n -s "$snap" srv server eth0 "$TB_OUT/$1.s.pcap" \
		tcp port $XFER_PORT
	tb_capture_start -s "$snap" pin proxy eth1 "$TB_OUT/$1.p.pcap" \
		tcp port $XFER_PORT
}

# impair_captures_stop: stop the three captures together.
impair_captures_stop() {
	tb_capture_stop cli srv pin
}

# impair_run NAME FAM UP DOWN RULE...: replace the rules, then one transfer
# (tb_xfer: the client sends UP bytes, the server DOWN) captured on the
# client's eth0 (c: what A sends, what B's segments look like when they
# arrive), the server's eth0 (s: the other way round) and the proxy's eth1
# (p: A's segments after the rules, B's before).  Sets J to the JSON of
# impair_pcap summary (keys c, s, p) and XFER_OK to 0 or 1.
impair_run() {
	local name=$1 fam=$2 up=$3 down=$4
	shift 4
	impair_set "$@" || check_err 1 "rules rejected: $*"
	impair_captures "$name"
	XFER_OK=1
	impair_xfer "$name" "$fam" "$up" "$down" || XFER_OK=0
	sleep 0.2
	impair_captures_stop
	J=$(impair_pcap summary $XFER_PORT c="$TB_OUT/$name.c.pcap" \
		s="$TB_OUT/$name.s.pcap" p="$TB_OUT/$name.p.pcap")
	echo "$J" >"$TB_OUT/$name.summary.json"
	[ "$XFER_OK" = 1 ] || check_err 1 "transfer not byte-exact"
	# TB_ROUTER=home: the firewall on the same box must not drop anything
	# as invalid, except under seqrand (conntrack sees A's real sequence
	# numbers and B's ACKs of the randomised ones: tests/home_seqrand.sh)
	tb_home_invalid_delta
	case " $* " in
	*" seqrand "*) [ "$HOME_INVALID" = 0 ] ||
		log_info "$name: the firewall dropped $HOME_INVALID packets as invalid (seqrand)" ;;
	*) [ "$HOME_INVALID" = 0 ] ||
		check_err 1 "the home router's firewall dropped $HOME_INVALID packets as invalid" ;;
	esac
}

# jj FILTER: jq -r FILTER on $J
jj() {
	jq -r "$1" <<<"$J"
}

# expect WHAT GOT WANT: a failed check after the case's first failure
# (which log_test reports) is logged too, so that a run shows them all.
expect() {
	[ "$2" = "$3" ] && return 0
	[ "$RET" -eq 0 ] || log_info "also failed: $1: got '$2', want '$3'"
	check_err 1 "$1: got '$2', want '$3'"
}

# expect_csum: no bad checksum in what the last impair_run's captures
# received (c: B's segments, s: A's) or the proxy sent on or received
# (p).  Not a sender's own segments in its own capture: under
# impair_csum_partial their checksum field holds the pseudo-header sum
# the device would have completed.
expect_csum() {
	local bad
	bad=$(jj '[.c.b2a, .s.a2b, .p.a2b, .p.b2a | .csum_bad // 0] | add')
	[ "$bad" = 0 ] || check_err 1 "$bad packets with a bad checksum on the wire"
}
