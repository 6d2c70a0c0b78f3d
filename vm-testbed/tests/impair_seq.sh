#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Sequence-number randomising, IPv4 and IPv6: with and without SACK fix-up
# (SACK blocks shifted or left stale), one or both directions.  A 5 % drop
# rule on the initiator's data makes the server send SACK blocks.  The
# same connection is captured on both sides of the proxy and compared:
# one constant offset per direction for seq, ack and (with sack-fix) SACK.
#
#   client eth0 -- eth0 PROXY eth1 -- router -- eth0 server
#   capture: A's side (c)        (p)          capture: B's side (s)
# tb-suite: extended (make vmtest-extended; not in make test, for time)
set -e
. "$(dirname "$0")/../lib/testlib.sh"
. "$TB_LIB_DIR/impair_lib.sh"
trap tb_cleanup EXIT
require_cmd jq python3 tcpdump

impair_up
# the endpoints send CHECKSUM_PARTIAL segments, the receivers verify
impair_csum_partial
tb_tcp client sack=1
tb_tcp server sack=1
set +e

# run NAME FAM UP DOWN RULE...: impair_run, then seqmap of the client's
# and the server's capture into $M
run() {
	impair_run "$@"
	M=$(impair_pcap seqmap $XFER_PORT "$TB_OUT/$1.c.pcap" "$TB_OUT/$1.s.pcap")
	echo "$M" >"$TB_OUT/$1.seqmap.json"
	log_info "$1: $M"
	expect "bad checksums at the receivers" "$(jq '.csum_bad' <<<"$M")" 0
}

# hits: the seqrand rule counts every forwarded segment of the flow, the
# drop rule every dropped one (capture c: A's before the rules, B's after;
# capture p: A's after the rules)
check_hits() {
	expect "seqrand hits = segments forwarded" "$(impair_hits 1)" \
		"$(jj '.p.a2b.packets + .c.b2a.packets')"
	[ -z "${1:-}" ] ||
		expect "drop hits = A's segments lost" "$(impair_hits 2)" \
			"$(jj '.c.a2b.packets - .p.a2b.packets')"
}

DROP="dir initiator after 10 drop 0.06"
for fam in 4 6; do
	RET=0
	run fix-v$fam $fam 200000 1000 "dport $XFER_PORT seqrand sack-fix" "$DROP"
	expect "A's offset nonzero" "$(jq '.off_a != 0' <<<"$M")" true
	expect "B's offset (not randomised)" "$(jq '.off_b' <<<"$M")" 0
	for k in a2b_seq_ok a2b_ack_ok b2a_seq_ok b2a_ack_ok; do
		expect "$k" "$(jq ".$k" <<<"$M")" true
	done
	nb=$(jq '.sack_blocks_received' <<<"$M")
	[ "$nb" -gt 0 ] || check_err 1 "no SACK blocks reached the client"
	expect "SACK blocks shifted by A's offset" "$(jq '.sack_shifted' <<<"$M")" true
	expect "SACK blocks inside A's space" "$(jq '.sack_in_a_space' <<<"$M")" "$nb"
	check_hits drop
	log_test "IPv$fam: seqrand sack-fix: one offset for seq/ack/SACK, $nb SACK blocks shifted"

	RET=0
	run stale-v$fam $fam 200000 1000 "dport $XFER_PORT seqrand" "$DROP"
	expect "A's offset nonzero" "$(jq '.off_a != 0' <<<"$M")" true
	for k in a2b_seq_ok a2b_ack_ok b2a_seq_ok b2a_ack_ok; do
		expect "$k" "$(jq ".$k" <<<"$M")" true
	done
	nb=$(jq '.sack_blocks_received' <<<"$M")
	[ "$nb" -gt 0 ] || check_err 1 "no SACK blocks reached the client"
	expect "SACK blocks left as the server sent them" "$(jq '.sack_unchanged' <<<"$M")" true
	expect "SACK blocks inside A's space" "$(jq '.sack_in_a_space' <<<"$M")" 0
	check_hits drop
	log_test "IPv$fam: seqrand without sack-fix: seq/ack mapped, $nb SACK blocks stale"

	RET=0
	run both-v$fam $fam 30000 100000 "dport $XFER_PORT seqrand sack-fix both" \
		"after 3 strip timestamp mode compact"
	expect "A's offset nonzero" "$(jq '.off_a != 0' <<<"$M")" true
	expect "B's offset nonzero" "$(jq '.off_b != 0' <<<"$M")" true
	for k in a2b_seq_ok a2b_ack_ok b2a_seq_ok b2a_ack_ok; do
		expect "$k" "$(jq ".$k" <<<"$M")" true
	done
	check_hits
	[ "$(jq '.csum_checked' <<<"$M")" -gt 0 ] || check_err 1 "no checksum checked"
	log_test "IPv$fam: seqrand both (+ compaction), CHECKSUM_PARTIAL: offsets consistent, checksums right"
done

RET=0
expect "flows_seqrand" "$(impair_stat flows_seqrand)" 6
[ "$(impair_stat sack_blocks_mapped)" -gt 0 ] || check_err 1 "sack_blocks_mapped = 0"
log_test "stats: one seqrand flow per connection, SACK blocks mapped"

impair_set
exit $EXIT_STATUS
