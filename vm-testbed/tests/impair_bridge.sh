#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Option compaction on bridged frames (issue 11, M4).  With br_netfilter
# and bridge-nf-call-ip(6)tables on in the switch namespace "sw", the
# impair rules of "sw" see the frames that br1 forwards, at the IP FORWARD
# hook.  Compaction moves the IP header forward; the Ethernet header must
# move with it, because br_dev_queue_push_xmit() pushes it back in front of
# the IP header after the hook (before the fix the frames left with stale
# bytes there, and the receiver dropped them).  The transfer runs between
# the proxy and the router namespaces, so that every segment crosses one
# bridge, once ("after 3" counts the handshake only).  Checked, IPv4 and
# IPv6, offloads off and on (GSO frames are compacted in place, not
# segmented): byte-exact transfers; every TCP frame at the router's eth1
# from the proxy's eth1, and every one at the proxy's eth1 from the
# router's eth1 (MAC addresses); no timestamps in the data after br1 in
# either direction; the compaction counted in "sw" and none refused
# (compact_bridged_skipped).
#
#   proxy eth1 (xfer client) --[br1 in sw]-- eth1 router (xfer server)
#   sw: impair rule "after 3 strip timestamp mode compact"
#   captures: the proxy's eth1 (p), the router's eth1 (r), tcpdump -e
# tb-suite: extended (make vmtest-extended; not in make test, for time)
set -e
. "$(dirname "$0")/../lib/testlib.sh"
. "$TB_LIB_DIR/impair_lib.sh"
require_cmd jq python3 tcpdump

brnf_loaded=0
bridge_cleanup() {
	local rc=$?
	IMPAIR_NODE=sw impair_set >/dev/null 2>&1 || true
	tb_down >/dev/null 2>&1 || true
	# br_netfilter makes every bridge call the IP hooks: unload it again
	[ "$brnf_loaded" = 0 ] || rmmod br_netfilter 2>/dev/null || true
	return $rc
}
trap bridge_cleanup EXIT

if [ ! -d /sys/module/br_netfilter ]; then
	modprobe br_netfilter 2>/dev/null || skip "no br_netfilter module"
	brnf_loaded=1
fi
impair_load
IMPAIR_NODE=sw

# brnf_on: the bridges of sw call the IPv4 and IPv6 hooks.
brnf_on() {
	tb_ns sw sysctl -qw net.bridge.bridge-nf-call-iptables=1 \
		net.bridge.bridge-nf-call-ip6tables=1
}

mac() {
	tb_ns "$1" cat "/sys/class/net/$2/address"
}

# frames_ok PCAP SRC_NODE SRC_IF DST_NODE DST_IF: every TCP frame to DST
# in PCAP comes from SRC with both MAC addresses intact.
frames_ok() {
	local want bad
	want="$(mac "$2" "$3") > $(mac "$4" "$5"),"
	bad=$(tcpdump -e -n -r "$1" "tcp port $XFER_PORT and ether dst $(mac "$4" "$5")" \
		2>/dev/null | awk -v w="$want" '$2 " " $3 " " $4 != w')
	[ -z "$bad" ] && return 0
	log_info "$(wc -l <<<"$bad") frames not '$want', e.g. $(head -n 1 <<<"$bad")"
	return 1
}

for offl in off on; do
	TB_OFFLOADS=$offl tb_up
	brnf_on
	set +e
	for fam in 4 6; do
		RET=0
		name=bridge-$offl-v$fam
		c0=$(impair_stat segs_compacted)
		s0=$(impair_stat compact_bridged_skipped)
		impair_set "after 3 strip timestamp mode compact" ||
			check_err 1 "rules rejected"
		tb_capture_start p proxy eth1 "$TB_OUT/$name.p.pcap" tcp port $XFER_PORT
		tb_capture_start r router eth1 "$TB_OUT/$name.r.pcap" tcp port $XFER_PORT
		# the proxy sends first, the router answers: across br1 only
		impair_xfer "$name" $fam 300000 1000000 proxy router ||
			check_err 1 "transfer not byte-exact"
		sleep 0.2
		tb_capture_stop p
		tb_capture_stop r
		J=$(impair_pcap summary $XFER_PORT p="$TB_OUT/$name.p.pcap" \
			r="$TB_OUT/$name.r.pcap")
		echo "$J" >"$TB_OUT/$name.summary.json"
		expect "SYN after br1: timestamps kept" "$(jj '.r.a2b.syns[0].ts')" true
		expect "SYN-ACK after br1: timestamps kept" "$(jj '.p.b2a.syns[0].ts')" true
		[ "$(jj '.p.a2b.data_with_ts')" -gt 0 ] ||
			check_err 1 "the proxy sent no data with timestamps"
		expect "proxy data with timestamps after br1" "$(jj '.r.a2b.data_with_ts')" 0
		expect "router data with timestamps after br1" "$(jj '.p.b2a.data_with_ts')" 0
		[ "$(jj '.r.a2b.data_packets')" -gt 0 ] || check_err 1 "no proxy data captured"
		[ "$(jj '.p.b2a.data_packets')" -gt 0 ] || check_err 1 "no router data captured"
		frames_ok "$TB_OUT/$name.r.pcap" proxy eth1 router eth1 ||
			check_err 1 "frames to the router with a stale Ethernet header"
		frames_ok "$TB_OUT/$name.p.pcap" router eth1 proxy eth1 ||
			check_err 1 "frames to the proxy with a stale Ethernet header"
		c=$(($(impair_stat segs_compacted) - c0))
		[ "$c" -gt 0 ] || check_err 1 "nothing compacted in sw (br_netfilter not calling the hooks?)"
		expect "compact_bridged_skipped" "$(($(impair_stat compact_bridged_skipped) - s0))" 0
		log_info "offloads $offl IPv$fam: segs_compacted +$c gso_packets $(impair_stat gso_packets)"
		log_test "offloads $offl, IPv$fam: compaction of bridged frames keeps their Ethernet header"
	done
	set -e
	impair_set
	tb_down
done

exit $EXIT_STATUS
