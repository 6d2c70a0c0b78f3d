#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Robustness of the impairment module:
#  - malformed option blocks (zero length, length 1, overrun, truncated,
#    too many options) pass unmodified and are counted; options after EOL
#    are never touched; a well-formed SYN is edited (control), IPv4 + IPv6;
#  - offloads on: option compaction on GSO/GRO packets, and a drop rule
#    plus seqrand on GSO packets (segmented first): byte-exact transfers;
#  - rmmod while a transfer runs through impairing rules.
#
#   client (scapy) -- PROXY (impair rules) -- router -- server (tcpdump)
# tb-variant-extended: home TB_ROUTER=home
# tb-suite: extended (make vmtest-extended; not in make test, for time)
set -e
. "$(dirname "$0")/../lib/testlib.sh"
. "$TB_LIB_DIR/impair_lib.sh"
trap tb_cleanup EXIT
require_cmd jq python3 tcpdump
/usr/bin/python3 -c 'import scapy' 2>/dev/null || skip "python3-scapy is not installed"

impair_load
tb_up
set +e

for fam in 4 6; do
	RET=0
	impair_set "flags syn strip wscale,timestamp mode compact" "flags syn mss 536" \
		"flags syn strip sackok"
	m0=$(impair_stat malformed)
	tb_capture_start srv server eth0 "$TB_OUT/malformed-v$fam.pcap" tcp port 5002
	out=$(tb_ns client /usr/bin/python3 - "$(tb_addr client $fam)" "$(tb_addr server $fam)" \
		"$TB_OUT/malformed-v$fam.pcap" <<'PY'
import json, sys, time
from scapy.all import IP, IPv6, TCP, Raw, send, conf
conf.verb = 0
src, dst, pcap = sys.argv[1:4]
NOP = b"\x01"
cases = {   # name: option bytes (a multiple of 4)
    "zero-length": b"\x02\x00" + NOP * 10,
    "length-one": b"\x03\x01" + NOP * 10,
    "overrun": b"\x02\x04\x05\xb4\x08\x1e" + b"\x00" * 6,
    "truncated": NOP * 11 + b"\x08",
    "too-many": NOP * 2 + b"\x63\x02" * 17,
    "mss-wrong-size": b"\x02\x03\x05" + NOP * 9,
    "after-eol": b"\x01\x00\x02\x04\x05\xb4\x03\x03\x07" + b"\x00" * 3,
    "control": b"\x02\x04\x05\xb4\x04\x02\x08\x0a" + b"\x11" * 8 + b"\x01\x03\x03\x07",
}
ipl = IPv6 if ":" in src else IP
port = 40000
for name, opts in cases.items():
    port += 1
    tcp = TCP(sport=port, dport=5002, flags="S", seq=1000, window=1000,
              dataofs=5 + len(opts) // 4)
    send(ipl(src=src, dst=dst) / tcp / Raw(load=opts))
time.sleep(1)
print(json.dumps({n: p + 1 for n, p in zip(cases, range(40000, 40000 + len(cases)))}))
PY
)
	sleep 0.5
	tb_capture_stop srv
	res=$(/usr/bin/python3 - "$TB_OUT/malformed-v$fam.pcap" "$out" <<'PY'
import json, sys
from scapy.all import rdpcap, TCP
ports = json.loads(sys.argv[2])
got = {}
for p in rdpcap(sys.argv[1]):
    if TCP in p and p[TCP].dport == 5002:
        raw = bytes(p[TCP])
        got[p[TCP].sport] = raw[20:(raw[12] >> 4) * 4].hex()
print(json.dumps({n: got.get(port) for n, port in ports.items()}))
PY
)
	echo "$res" >"$TB_OUT/malformed-v$fam.json"
	expect "zero-length" "$(jq -r '."zero-length"' <<<"$res")" 020001010101010101010101
	expect "length-one" "$(jq -r '."length-one"' <<<"$res")" 030101010101010101010101
	# TB_ROUTER=home: fw4's MSS clamp (mangle, before impair) lowers the
	# well-formed MSS before the overrun to the route's: 1440 over IPv6;
	# also the one after EOL (6.1's nft_exthdr walks past EOL as a
	# one-byte option, where impair and tcp_parse_options() stop)
	mss=05b4
	[ "$TB_ROUTER/$fam" = home/6 ] && mss=05a0
	expect "overrun" "$(jq -r '.overrun' <<<"$res")" 0204${mss}081e000000000000
	expect "truncated" "$(jq -r '.truncated' <<<"$res")" 010101010101010101010108
	expect "too-many" "$(jq -r '."too-many"' <<<"$res")" 0101$(printf '6302%.0s' $(seq 17))
	expect "mss-wrong-size" "$(jq -r '."mss-wrong-size"' <<<"$res")" 020305010101010101010101
	expect "after-eol" "$(jq -r '."after-eol"' <<<"$res")" 01000204${mss}030307000000
	# control: MSS 1460 -> 536, SACK-permitted NOPed, TS and wscale removed
	expect "control" "$(jq -r '.control' <<<"$res")" 0204021801010000
	expect "malformed counted" $(($(impair_stat malformed) - m0)) 5
	log_test "IPv$fam: malformed options pass untouched and are counted; after EOL untouched"
done

# --- offloads on: GSO/GRO packets through the hook ---------------------
tb_down
TB_OFFLOADS=on tb_up

RET=0
impair_set "after 3 strip timestamp mode compact"
tb_capture_start cli client eth0 "$TB_OUT/gso-compact.cli.pcap" tcp port $XFER_PORT
impair_xfer gso-compact 4 100000 1000000 || check_err 1 "transfer not byte-exact"
tb_capture_stop cli
J=$(impair_pcap summary $XFER_PORT c="$TB_OUT/gso-compact.cli.pcap")
expect "server data with TS at client" "$(jj '.c.b2a.data_with_ts')" 0
[ "$(jj '.c.b2a.data_packets')" -gt 0 ] || check_err 1 "no data captured"
[ "$(impair_stat gso_packets)" -gt 0 ] || check_err 1 "no GSO packet reached the hook"
[ "$(impair_stat segs_compacted)" -gt 0 ] || check_err 1 "nothing compacted"
log_info "gso_packets $(impair_stat gso_packets) segs_compacted $(impair_stat segs_compacted)"
log_test "offloads on: timestamps compacted out of GSO packets, byte-exact"

RET=0
# TB_ROUTER=home: seqrand needs conntrack's liberal mode on the same box
# (tests/home_seqrand.sh shows why)
[ "$TB_ROUTER" = home ] &&
	tb_ns proxy sysctl -qw net.netfilter.nf_conntrack_tcp_be_liberal=1
impair_set "dport $XFER_PORT seqrand sack-fix" "dir initiator after 20 drop 0.02"
impair_xfer gso-drop 6 1000000 50000 || check_err 1 "transfer not byte-exact"
[ "$TB_ROUTER" = home ] &&
	tb_ns proxy sysctl -qw net.netfilter.nf_conntrack_tcp_be_liberal=0
[ "$(impair_stat gso_segmented)" -gt 0 ] || check_err 1 "no GSO packet was segmented"
[ "$(impair_hits 2)" -gt 0 ] || check_err 1 "nothing dropped"
log_info "gso_segmented $(impair_stat gso_segmented) drop hits $(impair_hits 2)"
log_test "offloads on: drop rule segments GSO packets; seqrand sack-fix flow byte-exact"

RET=0
impair_set "ecn-bleach" "after 3 strip timestamp mode compact" \
	"dir initiator window 60000" "drop 0.001"
s0=$(impair_stat segs)
tb_bg rmmod-xfer client bash -c ". $TB_LIB_DIR/testlib.sh; TB_OUT=$TB_OUT TB_STATE=$TB_STATE.x; \
	mkdir -p \$TB_STATE; tb_xfer rmmod 4 500000 2000000 && echo EXACT"
# unload once the transfer is flowing through the rules
for i in $(seq "$(tb_slow 300)"); do
	[ "$(impair_stat segs)" -gt $((s0 + 300)) ] && break
	sleep 0.1
done
log_info "rmmod after $(($(impair_stat segs) - s0)) segments"
rmmod impair || check_err 1 "rmmod failed"
[ ! -d /sys/module/impair ] || check_err 1 "module still loaded"
for i in $(seq "$(tb_slow 600)"); do
	[ -e "$TB_STATE/rmmod-xfer.pid" ] && kill -0 "$(cat "$TB_STATE/rmmod-xfer.pid")" 2>/dev/null || break
	sleep 0.1
done
grep -q EXACT "$TB_STATE/rmmod-xfer.log" || check_err 1 "transfer across rmmod not byte-exact: $(tail -n 3 "$TB_STATE/rmmod-xfer.log")"
log_test "rmmod while a transfer crosses impairing rules: clean, byte-exact"

exit $EXIT_STATUS
