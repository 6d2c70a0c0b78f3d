#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# impair's split action (MBtest's segment splitter), IPv4 and IPv6: each
# variant of the cut (at N, in half) and of the option placement (first,
# second, both), "dataseg" selecting one segment, and GSO packets split
# after segmentation.  On the wire: piece counts and sizes, sequence
# numbers, which piece has the options, byte-exact transfers; checksums
# checked in the captures and by the receiver (no checksum offload on
# the proxy's devices, so every receiver verifies in software; the GSO
# case keeps the senders' offload, so the pieces come from
# CHECKSUM_PARTIAL segments).
#
#   client eth0 -- eth0 PROXY eth1 -- router -- eth0 server
#   capture c: A's segments as sent      capture p: as the proxy sent them on
#   capture s: A's as they arrive
#
# The pieces and the counters are checked against p: the bottleneck
# after the proxy (RED at 100 Mbit/s) drops some, which the module's
# counters cannot see; s must hold only what p has (impair_pcap split:
# "lost", and a problem for anything else).
# tb-suite: extended (make vmtest-extended and the MBtest experiment; not in make test, for time)
# tb-variant-extended: home TB_ROUTER=home
set -e
. "$(dirname "$0")/../lib/testlib.sh"
. "$TB_LIB_DIR/impair_lib.sh"
trap tb_cleanup EXIT
require_cmd jq python3 tcpdump ethtool nstat
# whole frames: the pieces' and the joined segments' checksums are
# checked in the captures too (expect_csum), not only by the receiver
IMPAIR_SNAPLEN=1600

# seg_check MODE CUT OPTS NAME: impair_pcap split (py/ecnproxy/vmtest/
# impair_pcap.py, split_check()) on NAME's captures: the client's data
# segments (c, a GSO packet as its MSS-sized segments) against what the
# proxy sent on (p), and what arrived (s); JSON: "sent", "split" (both
# pieces, as MODE/CUT/OPTS say), "whole", "bad" (first few problems),
# "arrived" (data segments the proxy sent on), "lost" (after the proxy).
# MODE "all" expects every segment longer than the cut split; "nth:K"
# only the Kth data segment.
seg_check() {
	impair_pcap split "$XFER_PORT" "$1" "$2" "$3" "$TB_OUT/$4.c.pcap" \
		"$TB_OUT/$4.p.pcap" "$TB_OUT/$4.s.pcap"
}

# csum_errors: the server's TcpInCsumErrors (the receiver's own check)
csum_errors() {
	tb_ns server nstat -az TcpInCsumErrors | awk '$1 == "TcpInCsumErrors" { print $2 }'
}

# split_case NAME FAM MODE CUT OPTS RULE...: one upload of 60000 bytes
# under RULE..., then the checks; the split rule is rule 1.  Sets R (the
# JSON of seg_check, for the caller's checks: not local) and SPLIT.
split_case() {
	local name=$1 fam=$2 mode=$3 cut=$4 opts=$5 e0 d0
	shift 5
	e0=$(csum_errors)
	d0=$(impair_stat split_done)
	impair_run "$name" "$fam" 60000 2000 "$@"
	R=$(seg_check "$mode" "$cut" "$opts" "$name")
	echo "$R" >"$TB_OUT/$name.split.json"
	log_info "$name: $(jq .lost <<<"$R") of the proxy's segments lost after it"
	expect "problems" "$(jq -c .bad <<<"$R")" "[]"
	expect "receiver's checksum errors" "$(($(csum_errors) - e0))" 0
	expect_csum
	SPLIT=$(jq .split <<<"$R")
	expect "split_done = segments split" "$(($(impair_stat split_done) - d0))" "$SPLIT"
	expect "hits = segments split" "$(impair_hits 1)" "$SPLIT"
}

impair_up
impair_csum_sw
set +e

for fam in 4 6; do
	RET=0
	split_case at-v$fam $fam all 100 first "dir initiator split at 100 opts first"
	[ "$SPLIT" -gt 10 ] || check_err 1 "only $SPLIT segments split"
	expect "arrived = sent + split" "$(jq .arrived <<<"$R")" "$(($(jq .sent <<<"$R") + SPLIT))"
	log_test "IPv$fam: split at 100 opts first: 100-byte piece with the options, the rest without"

	RET=0
	split_case half-v$fam $fam all 0 second "dir initiator split opts second"
	[ "$SPLIT" -gt 10 ] || check_err 1 "only $SPLIT segments split"
	log_test "IPv$fam: split half opts second: halves, options on the second"

	RET=0
	split_case one-v$fam $fam all 1 both "dir initiator split at 1 opts both"
	[ "$SPLIT" -gt 10 ] || check_err 1 "only $SPLIT segments split"
	log_test "IPv$fam: split at 1 opts both: a 1-byte piece, options on both"

	RET=0
	split_case nth-v$fam $fam nth:2 0 both "dir initiator dataseg 2 split"
	expect "segments split" "$SPLIT" 1
	expect "whole = sent - 1" "$(jq .whole <<<"$R")" "$(($(jq .sent <<<"$R") - 1))"
	log_test "IPv$fam: dataseg 2 split: only the initiator's second data segment"

	RET=0
	# a pure ACK or a segment shorter than the cut is left alone
	k0=$(impair_stat split_skipped)
	split_case long-v$fam $fam all 60000 both "dir initiator split at 60000"
	expect "segments split" "$SPLIT" 0
	[ "$(($(impair_stat split_skipped) - k0))" -gt 0 ] ||
		check_err 1 "split_skipped did not move"
	log_test "IPv$fam: split at 60000: no data segment long enough, counted as skipped"
done

# GSO: the senders keep their offloads (TSO); the proxy segments the
# super-packets first (gso_segmented), then splits each segment, whose
# checksum field holds the CHECKSUM_PARTIAL pseudo-header seed.
impair_csum_partial
for dev in eth0; do
	tb_ns client ethtool -K $dev tso on gso on >/dev/null 2>&1
	tb_ns server ethtool -K $dev tso on gso on >/dev/null 2>&1
done
for fam in 4 6; do
	RET=0
	g0=$(impair_stat gso_segmented)
	split_case gso-v$fam $fam all 0 both "dir initiator split"
	[ "$SPLIT" -gt 10 ] || check_err 1 "only $SPLIT segments split"
	max=$(jj '.p.a2b.max_len')
	[ "$max" -le 725 ] || check_err 1 "a segment of $max bytes arrived whole"
	log_info "IPv$fam: GSO packets segmented: $(($(impair_stat gso_segmented) - g0))"
	log_test "IPv$fam: split half with GSO senders: every segment halved, checksums right"

	RET=0
	# the second data segment is inside the first GSO packet (initial
	# window 10): a range that matches neither of its ends
	g0=$(impair_stat gso_segmented)
	split_case gsonth-v$fam $fam nth:2 0 both "dir initiator dataseg 2 split"
	expect "segments split" "$SPLIT" 1
	# the case is the one inside a GSO packet only if one was segmented
	[ "$(($(impair_stat gso_segmented) - g0))" -ge 1 ] ||
		check_err 1 "no GSO packet was segmented"
	log_test "IPv$fam: dataseg 2 split with GSO senders: the segment inside a GSO packet"
done

impair_set
expect "held" "$(impair_stat held)" 0
exit $EXIT_STATUS
