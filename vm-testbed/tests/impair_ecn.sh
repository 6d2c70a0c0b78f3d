#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# ECN impairments, IPv4 and IPv6, observed at the receiving side: ECN-setup
# SYNs dropped (the connection is still set up after Linux's SYN fallback,
# about 1 s later, without ECN), ECE/CWR cleared on SYNs, CE set on every
# packet or only on ECT ones, the ECN field bleached.  Byte-exact transfers;
# hit counters against the packets seen.
#
#   client eth0 -- eth0 PROXY eth1 -- router -- eth0 server
#   capture c: B's segments as they arrive    capture s: A's as they arrive
#                    capture p: B's before the rules
# tb-variant-extended: home TB_ROUTER=home
# tb-suite: extended (make vmtest-extended; not in make test, for time)
set -e
. "$(dirname "$0")/../lib/testlib.sh"
. "$TB_LIB_DIR/impair_lib.sh"
trap tb_cleanup EXIT
require_cmd jq python3 tcpdump

impair_up
tb_tcp client ecn=1
tb_tcp server ecn=1
set +e

UP=20000
DOWN=150000
for fam in 4 6; do
	RET=0
	impair_run block-v$fam $fam $UP $DOWN "ecn-block"
	expect "SYNs sent: ECE/CWR" "$(jj '[.c.a2b.syns[] | [.ece, .cwr]] | tostring')" \
		"[[true,true],[false,false]]"
	expect "SYNs at server: ECE/CWR" "$(jj '[.s.a2b.syns[] | [.ece, .cwr]] | tostring')" \
		"[[false,false]]"
	expect "SYN-ACK at client: ECE" "$(jj '.c.b2a.syns[0].ece')" false
	expect "ECT packets" "$(jj '.c.b2a.ect_any + .s.a2b.ect_any')" 0
	expect "hits (ECN-setup SYNs dropped)" "$(impair_hits 1)" 1
	setup=$(jj '.c.setup_s')
	python3 -c "import sys; sys.exit(not 0.9 <= $setup <= 3.5)" ||
		check_err 1 "set-up took $setup s, want about 1 s"
	log_test "IPv$fam: ecn-block: ECN-setup SYN dropped, non-ECN connection after ${setup} s"

	RET=0
	impair_run clear-v$fam $fam $UP $DOWN "flags syn ecn-clear-syn"
	expect "SYN sent: ECE/CWR" "$(jj '[.c.a2b.syns[] | [.ece, .cwr]] | tostring')" "[[true,true]]"
	expect "SYN at server: ECE/CWR" "$(jj '[.s.a2b.syns[] | [.ece, .cwr]] | tostring')" "[[false,false]]"
	expect "SYN-ACK at client: ECE" "$(jj '.c.b2a.syns[0].ece')" false
	expect "ECT packets" "$(jj '.c.b2a.ect_any + .s.a2b.ect_any')" 0
	expect "hits" "$(impair_hits 1)" 1
	log_test "IPv$fam: ecn-clear-syn: ECE/CWR cleared on the SYN, ECN not negotiated"

	RET=0
	# CE on B's ECN-capable packets only; A's ECN field bleached
	impair_run ce-v$fam $fam $UP $DOWN "dir responder ecn-set ce only-ect" \
		"dir initiator ecn-bleach"
	ce=$(jj '.c.b2a.ecn["3"]')
	[ "$ce" -gt 0 ] || check_err 1 "no CE at the client"
	expect "ECT(0)/ECT(1) at client" "$(jj '.c.b2a.ecn["2"] + .c.b2a.ecn["1"]')" 0
	expect "CE at client = ECN-capable packets reaching the proxy" "$ce" "$(jj '.p.b2a.ect_any')"
	[ "$(jj '.c.b2a.ecn["0"]')" -gt 0 ] || check_err 1 "no Not-ECT packet (SYN-ACK, ACKs)"
	expect "Not-ECT packets unchanged" "$(jj '.c.b2a.ecn["0"]')" "$(jj '.p.b2a.ecn["0"]')"
	[ "$(jj '.s.a2b.ece')" -gt 1 ] || check_err 1 "the client echoes no ECE"
	expect "hits = CE packets seen" "$(impair_hits 1)" "$ce"
	log_test "IPv$fam: ecn-set ce only-ect: CE on the $ce ECT packets only, echoed as ECE"

	RET=0
	ect=$(jj '.c.a2b.ect_any')
	[ "$ect" -gt 0 ] || check_err 1 "the client sent no ECT packet"
	expect "ECN-capable packets of A at server" "$(jj '.s.a2b.ect_any')" 0
	expect "hits = A's ECN-capable packets" "$(impair_hits 2)" "$ect"
	log_test "IPv$fam: ecn-bleach: Not-ECT on the wire, $ect packets bleached"
done

RET=0
impair_run ce-all-v4 4 $UP $DOWN "dir responder ecn-set ce"
n=$(jj '.c.b2a.packets')
expect "CE packets at client" "$(jj '.c.b2a.ecn["3"]')" "$n"
expect "hits = packets seen" "$(impair_hits 1)" "$n"
log_test "IPv4: ecn-set ce: CE on all $n packets, Not-ECT ones included"

RET=0
tb_tcp client ecn=0
impair_run ce-nonecn-v4 4 $UP $DOWN "dir responder ecn-set ce only-ect"
expect "CE at client (non-ECN flow)" "$(jj '.c.b2a.ecn["3"]')" 0
expect "hits" "$(impair_hits 1)" 0
log_test "IPv4: ecn-set ce only-ect leaves a non-ECN flow alone"

impair_set
exit $EXIT_STATUS
