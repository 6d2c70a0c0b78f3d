#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Blind spoofing (issue 11, M1): a host that knows a proxied connection's
# 4-tuple but not its sequence numbers must change nothing.  udp1 sits on
# the router's proxy-side bridge and, during a proxied upload (the client N
# non-ECN, the server E ECN, feedback=drop), sends segments "from the
# server" straight to the proxy's eth1 MAC: CE on data, ECE, CWR, each
# with a wrong sequence number, a wrong ACK number or both (2^31 away), and
# RSTs with a wrong sequence number, one of them inside the client's window
# but not exact (RFC 5961 3.2).  Expected, per address family:
#   - the transfer is byte-exact (the client drops the spoofed segments;
#     the RSTs reset nothing);
#   - out_of_window grows by exactly the number of spoofed segments (no
#     segment of the real connection is out of the window);
#   - the flow stays in phase 2, state DEFAULT, its ece_set, cwr_set and
#     cong_events unchanged, congestion_events and segs_dropped too;
#   - both captures: every spoofed segment crossed the proxy once and
#     unedited (an out-of-window segment is forwarded as if the proxy did
#     not know the flow, kmod/ecn_proxy/FSM.md "Window checks": the client
#     drops it), no real segment toward N carries ECT, CE, ECE or CWR and
#     no real segment toward E carries ECE or CWR (no echo started, no
#     congestion event answered).
# RED drops instead of marking (TB_RED_ECN=0), so that the real connection
# has no congestion event of its own: any would be the spoofs'.
#
#   client(N) -- eth0 PROXY eth1 --+-- router(eth2: HTB 10M + RED, no ECN) -- server(E)
#               ^ capture  ^ capture |
#                                  udp1 (scapy: "server" -> client)
#
# TB_SPOOF_FAMILIES: 4 in make test, 6 in the extended suite (@v6).  The
# window checks are the same code for both families; the core suite's
# fuzz spoofs IPv6 segments blindly (its phase S: exact out_of_window
# count, flow state and counters unchanged, byte-exact).
# tb-variant-extended: v6 TB_SPOOF_FAMILIES=6
set -e
. "$(dirname "$0")/../lib/testlib.sh"
trap tb_cleanup EXIT
tb_knob_int up TB_SPOOF_UP 40000000 1
tb_knob_list families TB_SPOOF_FAMILIES 4 '4|6' '4 and 6'
require_cmd tcpdump jq python3
/usr/bin/python3 -c 'import scapy' 2>/dev/null || skip "python3-scapy is not installed"

# The spoofer starts (python3 and scapy under TCG on a busy host: up to
# 25 s) before the transfer, so the transfer need only outlast the spoofs
# themselves (12 segments, 0.3 to 1 s each, about 10 s in all): 40 MB, at
# least 32 s at 10 Mbit/s.  A transfer that ended before the last spoof
# fails the test as a set-up fault: the connection's own closing exchange
# (the server's stack answering the client's TIME-WAIT ACK of a spoof with
# an exact RST) would then close the flow, as it should.
TB_SETUP=upload
TB_RED_ECN=0
tb_red_functional	# see lib/topology.sh: RED's frozen average
tb_proxy_load
tb_up
tb_tcp client ecn=0
tb_tcp server ecn=1
tb_proxy on drop
proxy_mac=$(ip -n proxy -j link show eth1 | jq -r '.[0].address')

# flow_line FAMILY PORT: the proxy's line for the connection from client
# port PORT
flow_line() {
	tb_ns proxy cat /proc/net/ecn_proxy/flows | grep "^ipv$1 " |
		grep -F ":$2 " | head -n 1 || true
}

# field LINE KEY: the value of KEY=... in a flows line
field() {
	echo "$1" | tr ' ' '\n' | sed -n "s/^$2=//p"
}

# The checks on both captures: a spoofed segment is known by its sequence
# number, ACK number and window (a tag the proxy never changes).
CHECK_PY='
import json, sys
from ecnproxy.analysis import pcapread
spoofed = json.load(open(sys.argv[1]))
want = {(s["seq"], s["ack"], s["win"]): s for s in spoofed}
res = {}
for side, pcap in (("e", sys.argv[2]), ("n", sys.argv[3])):
    seen = {}
    real_to_n = real_to_e = 0
    for (_t, ecn, _s, _d, sport, dport, seq, ack, flags, win,
         plen) in pcapread.read_packets(pcap):
        k = (seq, ack, win)
        if sport == 5001 and k in want and plen == want[k]["len"]:
            seen.setdefault(k, []).append((ecn, flags))
        elif flags & 0x02:
            pass    # the handshake negotiates ECN: not counted
        elif sport == 5001:
            real_to_n += ecn != 0 or flags & 0xc0 != 0
        else:
            real_to_e += flags & 0xc0 != 0
    res[side] = {
        "spoofed_seen": sum(len(v) for v in seen.values()),
        "spoofed_once": sum(len(v) == 1 for v in seen.values()),
        # forwarded as sent: ECN field and TCP flags untouched
        "spoofed_unedited": sum(e == want[k]["ecn"] and f == want[k]["flags"]
                                for k, v in seen.items() for e, f in v),
        # real segments: toward N any ECN bit, toward E ECE or CWR
        "real_ecn_to_n": real_to_n,
        "real_ece_cwr_to_e": real_to_e,
    }
print(json.dumps(res))
'

# The spoofer: READY PARAMS MAC OUT.  It loads scapy, creates READY, waits
# for PARAMS ("SRC DST SPORT DPORT SEQ ACK", written whole by a rename),
# sends the segments and writes what it sent to OUT (JSON).  2^31 away is
# out of any window.
SPOOF_PY='
import json, os, sys, time
# not scapy.all: every layer it loads costs seconds under TCG
from scapy.config import conf
from scapy.layers.l2 import Ether
from scapy.layers.inet import IP, TCP
from scapy.layers.inet6 import IPv6
from scapy.packet import Raw
from scapy.sendrecv import sendp
conf.verb = 0
ready, params, mac, out = sys.argv[1:5]
open(ready, "w").close()
for _ in range(3000):
    if os.path.exists(params):
        break
    time.sleep(0.1)
else:
    sys.exit("no parameters after 300 s")
src, dst, *nums = open(params).read().split()
sport, dport, seq, ack = (int(x) for x in nums)
far = 1 << 31
bad_seq, bad_ack = (seq + far) % (1 << 32), (ack + far) % (1 << 32)
CE = 3
ECE, CWR, RST, ACK = 0x40, 0x80, 0x04, 0x10
# (kind, flags, seq, ack, ecn, payload length)
segs = []
for s, a in ((bad_seq, bad_ack), (seq, bad_ack), (bad_seq, ack)):
    segs.append(("ce", ACK, s, a, CE, 100))
    segs.append(("ece", ACK | ECE, s, a, 0, 0))
    segs.append(("cwr", ACK | CWR, s, a, 0, 100))
segs.append(("rst", RST | ACK, bad_seq, bad_ack, 0, 0))
segs.append(("rst", RST, bad_seq, 0, 0, 0))
# inside the client window, not its rcv_nxt: a challenge ACK, no reset
# (not seq + 1000: that is the snd_nxt of the server once it has sent its
# 1000-byte reply, an exact RST if the upload ended during the spoofs)
segs.append(("rst", RST, (seq + 2000) % (1 << 32), 0, 0, 0))
v6 = ":" in src
sent = []
for i, (kind, flags, s, a, ecn, n) in enumerate(segs):
    win = 40000 + i
    ip = IPv6(src=src, dst=dst, tc=ecn) if v6 else IP(src=src, dst=dst, tos=ecn)
    tcp = TCP(sport=sport, dport=dport, seq=s, ack=a, flags=flags, window=win)
    pkt = Ether(dst=mac) / ip / tcp
    if n:
        pkt = pkt / Raw(load=b"\x55" * n)
    sendp(pkt, iface="eth0")
    sent.append(dict(kind=kind, seq=s, ack=a, win=win, flags=flags, ecn=ecn,
                     len=n))
    time.sleep(0.3)
json.dump(sent, open(out, "w"))
print(len(sent))
'

spoof_run() {
	local fam=$1 name=spoof-v$fam port="" line before after i n st
	local o0 c0 d0 e0 w0 peek sport dport seq ack res pid alive

	# the spoofer first: its start-up must not eat into the transfer
	rm -f "$TB_OUT/$name.ready" "$TB_OUT/$name.params" "$TB_OUT/$name.spoofed.json"
	tb_bg "spoofer-$name" udp1 /usr/bin/python3 -c "$SPOOF_PY" \
		"$TB_OUT/$name.ready" "$TB_OUT/$name.params" "$proxy_mac" \
		"$TB_OUT/$name.spoofed.json"
	for i in $(seq "$(tb_slow 1200)"); do
		[ -e "$TB_OUT/$name.ready" ] && break
		kill -0 "$(cat "$TB_STATE/spoofer-$name.pid")" 2>/dev/null || break
		sleep 0.1
	done
	if [ ! -e "$TB_OUT/$name.ready" ]; then
		RET=0
		check_err 1 "the spoofer did not start: $(tail -n 3 "$TB_STATE/spoofer-$name.log")"
		log_test "IPv$fam: the spoofer starts"
		tb_bg_stop "spoofer-$name"
		return 0
	fi

	o0=$(tb_proxy_stat out_of_window)
	c0=$(tb_proxy_stat congestion_events)
	d0=$(tb_proxy_stat segs_dropped)
	tb_capture_start -n n proxy eth0 "$TB_OUT/$name.n.pcap" tcp port $XFER_PORT
	tb_capture_start e proxy eth1 "$TB_OUT/$name.e.pcap" tcp port $XFER_PORT
	tb_bg "bg-$name" client bash -c ". $TB_LIB_DIR/testlib.sh; \
		TB_OUT=$TB_OUT TB_STATE=$TB_STATE.$name; mkdir -p \$TB_STATE; \
		tb_xfer $name $fam $up 1000 && echo EXACT"

	# the upload is flowing through a phase 2 flow
	for i in $(seq "$(tb_slow 200)"); do
		line=$(tb_ns proxy cat /proc/net/ecn_proxy/flows | grep "^ipv$fam " |
			grep -F ":$XFER_PORT " | grep -F "phase=2" | head -n 1 || true)
		[ -n "$line" ] && [ "$(field "$line" segs)" -gt 300 ] && break
		sleep 0.1
	done
	RET=0
	[ -n "$line" ] || check_err 1 "no phase 2 flow for the upload"
	log_test "IPv$fam: the upload is proxied (phase 2)"

	# the connection's numbers as the server sends them (pure ACKs: its
	# sequence number does not move during the upload)
	peek=$TB_OUT/$name.peek.pcap
	tb_ns proxy timeout 20 tcpdump -i eth1 -c 5 -n -w "$peek" \
		"tcp src port $XFER_PORT" 2>/dev/null || true
	read -r sport dport seq ack < <(python3 - "$peek" <<'PY'
import sys
from ecnproxy.analysis import pcapread
last = None
for p in pcapread.read_packets(sys.argv[1]):
    if not p[8] & 0x02:
        last = p
if last:
    print(last[4], last[5], last[6], last[7])
PY
	)
	port=$dport
	before=$(flow_line "$fam" "$port")
	log_info "IPv$fam: client port $port, server seq $seq ack $ack; before: $before"

	echo "$(tb_addr server "$fam") $(tb_addr client "$fam") $sport $dport $seq $ack" \
		>"$TB_OUT/$name.params.tmp"
	mv "$TB_OUT/$name.params.tmp" "$TB_OUT/$name.params"
	pid=$(cat "$TB_STATE/spoofer-$name.pid")
	wait "$pid" || true
	rm -f "$TB_STATE/spoofer-$name.pid"
	# the transfer must still run now: checked before anything else
	alive=0
	kill -0 "$(cat "$TB_STATE/bg-$name.pid")" 2>/dev/null && alive=1
	sleep 0.5
	after=$(flow_line "$fam" "$port")
	n=$(tail -n 1 "$TB_STATE/spoofer-$name.log")
	log_info "IPv$fam: $n segments spoofed; after: $after"
	RET=0
	[ -s "$TB_OUT/$name.spoofed.json" ] ||
		check_err 1 "the spoofer failed: $(tail -n 3 "$TB_STATE/spoofer-$name.log")"
	[ "$alive" = 1 ] ||
		check_err 1 "the transfer ended before the spoofs did (raise TB_SPOOF_UP)"
	log_test "IPv$fam: $n segments spoofed while the transfer runs"

	for i in $(seq "$(tb_slow 1200)"); do
		[ -e "$TB_STATE/bg-$name.pid" ] &&
			kill -0 "$(cat "$TB_STATE/bg-$name.pid")" 2>/dev/null || break
		sleep 0.1
	done
	tb_capture_stop n e

	RET=0
	grep -q EXACT "$TB_STATE/bg-$name.log" ||
		check_err 1 "transfer not byte-exact: $(tail -n 3 "$TB_STATE/bg-$name.log")"
	log_test "IPv$fam: transfer byte-exact under spoofed CE, ECE, CWR and RST"

	RET=0
	w0=$(($(tb_proxy_stat out_of_window) - o0))
	[ "$w0" = "$n" ] ||
		check_err 1 "out_of_window grew by $w0, $n segments were spoofed"
	log_test "IPv$fam: out_of_window counts the $n spoofed segments, nothing else"

	RET=0
	st=$(field "$after" state)
	[ "$(field "$after" phase)" = 2 ] && [ "$st" = DEFAULT ] ||
		check_err 1 "after the spoofs: '$after'"
	for k in ece_set cwr_set cong_events dropped; do
		[ "$(field "$before" $k)" = "$(field "$after" $k)" ] ||
			check_err 1 "$k went from $(field "$before" $k) to $(field "$after" $k)"
	done
	c0=$(($(tb_proxy_stat congestion_events) - c0))
	d0=$(($(tb_proxy_stat segs_dropped) - d0))
	[ "$c0$d0" = 00 ] ||
		check_err 1 "congestion_events +$c0, segs_dropped +$d0"
	log_test "IPv$fam: the flow stays phase 2 DEFAULT, no congestion event, nothing dropped"

	RET=0
	res=$(python3 -c "$CHECK_PY" "$TB_OUT/$name.spoofed.json" \
		"$TB_OUT/$name.e.pcap" "$TB_OUT/$name.n.pcap")
	echo "$res" >"$TB_OUT/$name.spoofed-seen.json"
	log_info "IPv$fam: spoofed segments in the captures: $res"
	[ "$(jq .e.spoofed_once <<<"$res")" = "$n" ] ||
		check_err 1 "E side: not every spoofed segment seen once"
	[ "$(jq .n.spoofed_once <<<"$res")" = "$n" ] ||
		check_err 1 "N side: not every spoofed segment forwarded once"
	[ "$(jq .n.spoofed_unedited <<<"$res")" = "$n" ] ||
		check_err 1 "N side: $(jq .n.spoofed_unedited <<<"$res") of $n spoofed segments forwarded unedited"
	[ "$(jq .n.real_ecn_to_n <<<"$res")" = 0 ] ||
		check_err 1 "toward N: $(jq .n.real_ecn_to_n <<<"$res") segments of the connection with ECT, CE, ECE or CWR"
	[ "$(jq .e.real_ece_cwr_to_e <<<"$res")" = 0 ] ||
		check_err 1 "toward E: $(jq .e.real_ece_cwr_to_e <<<"$res") segments of the connection with ECE or CWR"
	log_test "IPv$fam: spoofed segments forwarded unedited; nothing of ECN toward N, no ECE/CWR toward E"
}

for fam in $families; do
	tb_red_reset
	spoof_run "$fam"
done

exit $EXIT_STATUS
