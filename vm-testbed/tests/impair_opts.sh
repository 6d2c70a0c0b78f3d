#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# TCP option and header-value impairments, IPv4 and IPv6, observed on the
# wire at the receiving side, byte-exact transfers, hit counters checked
# against the packets seen.  No checksum offload anywhere, so every
# receiver verifies the incrementally updated checksums in software, and
# the captures check them again.
#
#   client eth0 -- eth0 PROXY eth1 -- router -- eth0 server
#   capture c: B's segments as they arrive    capture s: A's as they arrive
#                    capture p: A's after the rules
# tb-suite: extended (make vmtest-extended; not in make test, for time)
# tb-variant-extended: home TB_ROUTER=home
set -e
. "$(dirname "$0")/../lib/testlib.sh"
. "$TB_LIB_DIR/impair_lib.sh"
trap tb_cleanup EXIT
require_cmd jq python3 tcpdump ethtool

impair_up
impair_csum_sw
set +e

for fam in 4 6; do
	# A Linux SYN has MSS, SACK-permitted, timestamps, NOP, wscale (40
	# bytes).  After the handshake every segment loses its timestamps (a
	# path change; one direction only would leave the other end's TSecr
	# stale and its RTO huge after a retransmission): the payload stays,
	# the header shrinks from 32 to 20 bytes.
	RET=0
	impair_run a-v$fam $fam 50000 150000 "flags syn strip sackok" "flags syn mss 536" \
		"flags synack mss-clamp 1000" "after 3 strip timestamp mode compact"
	expect "SYN at server: sackok" "$(jj '.s.a2b.syns[0].sackok')" false
	expect "SYN at server: header length" "$(jj '.s.a2b.syns[0].hdr_len')" 40
	expect "SYN at server: timestamps kept" "$(jj '.s.a2b.syns[0].ts')" true
	expect "SYN-ACK at client: sackok" "$(jj '.c.b2a.syns[0].sackok')" false
	expect "hits strip sackok" "$(impair_hits 1)" 1
	log_test "IPv$fam: strip sackok from the SYN (NOP mode): absent, length kept"

	RET=0
	expect "SYN at server: mss" "$(jj '.s.a2b.syns[0].mss')" 536
	expect "SYN-ACK at client: mss" "$(jj '.c.b2a.syns[0].mss')" 1000
	max=$(jj '.c.b2a.max_len')
	[ "$max" -le 536 ] && [ "$max" -ge 500 ] || check_err 1 "server segments up to $max bytes, want 500..536"
	max=$(jj '.s.a2b.max_len')
	[ "$max" -le 1000 ] && [ "$max" -gt 536 ] || check_err 1 "client segments up to $max bytes, want 537..1000"
	expect "hits mss" "$(impair_hits 2)" 1
	expect "hits mss-clamp" "$(impair_hits 3)" 1
	log_test "IPv$fam: MSS set on the SYN (536), clamped on the SYN-ACK (1000); segment sizes follow"

	RET=0
	expect "SYN-ACK at client: timestamps kept" "$(jj '.c.b2a.syns[0].ts')" true
	expect "data with timestamps at client" "$(jj '.c.b2a.data_with_ts')" 0
	expect "data with timestamps at server" "$(jj '.s.a2b.data_with_ts')" 0
	expect "server data header lengths at client" "$(jj '.c.b2a.data_hdr_lens | tostring')" "[20]"
	expect "client data header lengths at server" "$(jj '.s.a2b.data_hdr_lens | tostring')" "[20]"
	expect "server data header lengths sent" "$(jj '.p.b2a.data_hdr_lens | tostring')" "[32]"
	# (a RST carries no timestamps: not counted)
	expect "hits = segments with timestamps after the first 3" "$(impair_hits 4)" \
		"$(jj '.c.a2b.with_ts - 2 + .p.b2a.with_ts - 1')"
	expect_csum
	log_test "IPv$fam: strip timestamp from data after 3 segments (compact): byte-exact"

	RET=0
	# the client believes the server scales by 2 (not 7): it crawls, so
	# only a small upload
	impair_run b-v$fam $fam 10000 150000 "strip timestamp mode compact" \
		"flags synack wscale 2" "dir initiator window 4000"
	expect "SYN at server: timestamps" "$(jj '.s.a2b.syns[0].ts')" false
	expect "SYN at server: header length" "$(jj '.s.a2b.syns[0].hdr_len')" 32
	expect "SYN at server: sackok kept" "$(jj '.s.a2b.syns[0].sackok')" true
	expect "SYN at server: wscale kept" "$(jj '.s.a2b.syns[0].wscale')" 7
	expect "hits (only the SYN had timestamps)" "$(impair_hits 1)" 1
	log_test "IPv$fam: strip timestamp from the SYN (compact): 40 -> 32 bytes"

	RET=0
	expect "SYN-ACK at client: wscale" "$(jj '.c.b2a.syns[0].wscale')" 2
	expect "SYN-ACK sent: wscale" "$(jj '.p.b2a.syns[0].wscale')" 7
	expect "hits" "$(impair_hits 2)" 1
	log_test "IPv$fam: wscale of the SYN-ACK rewritten from 7 to 2"

	RET=0
	expect "client windows at server" "$(jj '.s.a2b.windows | tostring')" "[4000]"
	expect "hits = client segments forwarded" "$(impair_hits 3)" "$(jj '.p.a2b.packets')"
	expect_csum
	log_test "IPv$fam: window field of the initiator's segments set to 4000"
done

impair_set
exit $EXIT_STATUS
