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
#   capture c: A's segments as sent      capture s: A's as they arrive
# tb-suite: extended (make vmtest-extended and the MBtest experiment; not in make test, for time)
# tb-variant-extended: home TB_ROUTER=home
set -e
. "$(dirname "$0")/../lib/testlib.sh"
. "$TB_LIB_DIR/impair_lib.sh"
trap tb_cleanup EXIT
require_cmd jq python3 tcpdump ethtool nstat

# seg_check MODE CUT OPTS C_PCAP S_PCAP: the client's data segments (c)
# against those arriving at the server (s), as JSON: "sent" data segments,
# "split" (both pieces found, as MODE/CUT/OPTS say), "whole" (arrived
# unsplit), "bad" (what is wrong, first few), "arrived" data segments.
# MODE "all" expects every segment longer than the cut split; "nth:K"
# only the Kth data segment.
seg_check() {
	python3 - "$@" <<'EOF'
import json, sys
from ecnproxy.analysis import pcapread
from ecnproxy.vmtest.impair_pcap import packets

mode, cut, opts, cpcap, spcap = sys.argv[1:6]
cut = int(cut)
port = 5001
sent = [x for x in packets(cpcap, port) if x["dir"] == "a2b" and x["len"]]
got = [x for x in packets(spcap, port) if x["dir"] == "a2b" and x["len"]]
have = {(x["seq"], x["len"]): x for x in got}
res = {"sent": len(sent), "arrived": len(got), "split": 0, "whole": 0,
       "bad": []}
for i, x in enumerate(sent):
    want = mode == "all" or mode == "nth:%d" % (i + 1)
    first = cut if cut else x["len"] // 2
    if (x["seq"], x["len"]) in have:
        res["whole"] += 1
        if want and 0 < first < x["len"]:
            res["bad"].append("seq %d len %d not split" % (x["seq"], x["len"]))
        continue
    if not want or not 0 < first < x["len"]:
        res["bad"].append("seq %d len %d missing" % (x["seq"], x["len"]))
        continue
    a = have.get((x["seq"], first))
    b = have.get(((x["seq"] + first) % (1 << 32), x["len"] - first))
    if not a or not b:
        res["bad"].append("seq %d len %d: pieces missing" % (x["seq"], x["len"]))
        continue
    hl = x["hdr_len"]
    want_h = {"first": (hl, 20), "second": (20, hl), "both": (hl, hl)}[opts]
    if (a["hdr_len"], b["hdr_len"]) != want_h or \
            (a["ts"], b["ts"]) != (want_h[0] > 20 and x["ts"], want_h[1] > 20 and x["ts"]):
        res["bad"].append("seq %d: header lengths %d/%d, want %d/%d" %
                          (x["seq"], a["hdr_len"], b["hdr_len"], *want_h))
        continue
    res["split"] += 1
res["bad"] = res["bad"][:5]
print(json.dumps(res))
EOF
}

# csum_errors: the server's TcpInCsumErrors (the receiver's own check)
csum_errors() {
	tb_ns server nstat -az TcpInCsumErrors | awk '$1 == "TcpInCsumErrors" { print $2 }'
}

# split_case NAME FAM MODE CUT OPTS RULE...: one upload of 60000 bytes
# under RULE..., then the checks; the split rule is rule 1.
split_case() {
	local name=$1 fam=$2 mode=$3 cut=$4 opts=$5 e0 d0 R
	shift 5
	e0=$(csum_errors)
	d0=$(impair_stat split_done)
	impair_run "$name" "$fam" 60000 2000 "$@"
	R=$(seg_check "$mode" "$cut" "$opts" "$TB_OUT/$name.c.pcap" "$TB_OUT/$name.s.pcap")
	echo "$R" >"$TB_OUT/$name.split.json"
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
	max=$(jj '.s.a2b.max_len')
	[ "$max" -le 725 ] || check_err 1 "a segment of $max bytes arrived whole"
	log_info "IPv$fam: GSO packets segmented: $(($(impair_stat gso_segmented) - g0))"
	log_test "IPv$fam: split half with GSO senders: every segment halved, checksums right"
done

impair_set
expect "held" "$(impair_stat held)" 0
exit $EXIT_STATUS
