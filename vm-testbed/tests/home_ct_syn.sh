#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# A spoofed SYN on a bypassed connection changes nothing (home router).
# Beside conntrack the proxy marks the entry of a connection that needs
# nothing (ECNP_CT_NOTHING_BIT, flows_ct_marked) and then passes its
# segments before parsing them; its own flow is no longer refreshed and
# expires timeout_closed later (kmod/ecn_proxy/FSM.md, "Flows that need
# nothing").  Conntrack ignores a SYN in the original direction on an
# ESTABLISHED entry (TCP_CONNTRACK_IGNORE) but forwards it with the entry
# attached, so fw4's "ct state established accept" lets it through: anyone
# who knows the 4-tuple can send one.  Stepped, such a SYN would clear the
# bit, make a new flow once the old one has expired (flows_seen), upgrade
# itself (ECE and CWR set on a forwarded SYN) and leave the connection
# unmarked, its later segments on the full path.  A SYN on a marked entry
# passes untouched instead, behind IPv6 extension headers too
# (ecnp_ct_bypass(), ecnp_ct_path()).
#
#   client(N) --[net0]-- eth0 PROXY eth1 --[net1]-- router(RED, down) -- server(N)
#   scapy SYNs ->       ^ capture  ^ capture   (fw4: conntrack, NAT44, drop_invalid)
#
# Per family (4, 6): a download (TB_CTSYN_SECS at TB_RATE_LOW), neither end
# ECN, the proxy's timeout_closed 1 s.  Set up: the connection is decided
# without ECN (flows_neither_ecn, or flows_fallback after a lost SYN), its
# entry marked (flows_ct_marked + 1) and its flow gone.  Then, from the
# client's namespace (raw frames out of its eth0 to the proxy's eth0 MAC,
# past its TCP stack), SYNs with the
# connection's 4-tuple as the client sends it (before NAT) and a random
# sequence number, 0.6 s apart: three plain ones, and for IPv6 first one
# with a Destination Options header.  The server answers each with a
# challenge ACK (RFC 5961 4), which the connection survives.  Expected:
#   - the transfer is byte-exact and still running after the last SYN
#     (else a set-up fault: raise TB_CTSYN_SECS);
#   - flows_seen and flows_ct_marked unchanged across the SYNs;
#   - no counter of /proc/net/ecn_proxy/stats moved across them;
#   - no flow line for the connection's client port after the SYNs nor
#     after the transfer;
#   - in both captures every spoofed SYN once, and on the server's side
#     unedited: flags, ECN field and extension header as sent;
#   - the firewall dropped nothing as invalid (tb_home_check).
# In make test it runs in the 6.12 guest, as home_offload: 94 s under TCG
# in results/vmtest-612-core-20261202/.
# tb-make-test: second-kernel
set -e
. "$(dirname "$0")/../lib/testlib.sh"
trap tb_cleanup EXIT
# how long the download lasts at TB_RATE_LOW: the SYNs start about 3 s
# after the connection and take about 3 s (more on the debug kernel)
tb_knob_int secs TB_CTSYN_SECS "$(tb_slow 12)" 5 3600
require_cmd tcpdump jq python3 nft ss
/usr/bin/python3 -c 'import scapy' 2>/dev/null || skip "python3-scapy is not installed"

TB_ROUTER=home
TB_SETUP=download
tb_red_functional
tb_proxy_load
tb_up
tb_tcp client ecn=0
tb_tcp server ecn=0
tb_proxy on drop
# the flow of a connection that needs nothing expires this long after the
# segment that marked its entry (ecn_proxy(7): at least 1)
tb_ns proxy sysctl -qw net.ecn_proxy.timeout_closed=1
proxy_mac=$(ip -n proxy -j link show eth0 | jq -r '.[0].address')

# bytes the download carries: TB_RATE_LOW (tc's units: kbit = 1000 bit/s)
# for secs seconds
rate=${TB_RATE_LOW%bit} mult=1
case $rate in
*k) mult=1000 ;;
*m) mult=1000000 ;;
*g) mult=1000000000 ;;
esac
down=$((${rate%[kmg]} * mult / 8 * secs))
# the server makes the bytes in memory: a gbit bottleneck is no reason for GBs
[ "$down" -le 100000000 ] || down=100000000

# SYNs of port 5001 (IPv4, IPv6 without extension headers) and every IPv6
# packet whose first extension header is a Destination Options one
SYN_FILTER="(ip and tcp port $XFER_PORT and tcp[13] & 2 != 0)"
SYN_FILTER+=" or (ip6 and tcp port $XFER_PORT and ip6[53] & 2 != 0)"
SYN_FILTER+=" or (ip6 and ip6[6] == 60)"

# flow_line FAMILY PORT: the proxy's line for the connection from client
# port PORT, if any
flow_line() {
	tb_ns proxy cat /proc/net/ecn_proxy/flows | grep "^ipv$1 " |
		grep -F ":$2 " | head -n 1 || true
}

# client_port FAMILY: the client's port of its established connection
client_port() {
	local a
	a=$(tb_ns client ss -Hnt -"$1" state established "( dport = :$XFER_PORT )" |
		awk 'NR == 1 { print $(NF - 1) }') || true
	[ -n "$a" ] && echo "${a##*:}"
	return 0
}

# stats_moved A B: the counters that differ between two snapshots of
# /proc/net/ecn_proxy/stats, "name before->after" each
stats_moved() {
	awk 'NR == FNR { a[$1] = $2; next }
	     $2 != a[$1] { printf "%s %s->%s ", $1, a[$1], $2 }' "$1" "$2"
}

# The spoofer: READY MAC WAIT JOB...  It loads scapy, creates READY, then
# for each JOB waits (up to WAIT s) for JOB.params ("SRC DST SPORT DPORT",
# written whole by a rename, or "skip"), sends the SYNs and writes what it
# sent to JOB.sent.json (by a rename).
SPOOF_PY='
import json, os, random, sys, time
# not scapy.all: every layer it loads costs seconds under TCG
from scapy.config import conf
from scapy.layers.l2 import Ether
from scapy.layers.inet import IP, TCP
from scapy.layers.inet6 import IPv6, IPv6ExtHdrDestOpt
from scapy.sendrecv import sendp
conf.verb = 0
ready, mac, wait, *jobs = sys.argv[1:]
open(ready, "w").close()
for job in jobs:
    for _ in range(int(float(wait) * 10)):
        if os.path.exists(job + ".params"):
            break
        time.sleep(0.1)
    else:
        sys.exit("no parameters for %s after %s s" % (job, wait))
    words = open(job + ".params").read().split()
    sent = []
    if words != ["skip"]:
        src, dst, sport, dport = words[0], words[1], int(words[2]), int(words[3])
        v6 = ":" in src
        # the one the hook cannot read first, while the entry is surely marked
        kinds = (["destopt"] if v6 else []) + ["plain"] * 3
        for i, kind in enumerate(kinds):
            seq = random.getrandbits(32)
            win = 40000 + i     # a tag: the proxy never edits the window of a SYN
            ip = IPv6(src=src, dst=dst, tc=0) if v6 else IP(src=src, dst=dst, tos=0)
            if kind == "destopt":
                ip = ip / IPv6ExtHdrDestOpt()
            tcp = TCP(sport=sport, dport=dport, seq=seq, ack=0, flags="S", window=win)
            sendp(Ether(dst=mac) / ip / tcp, iface="eth0")
            sent.append(dict(kind=kind, seq=seq, win=win, flags=0x02, ecn=0,
                             ext=kind == "destopt"))
            # past tcp_invalid_ratelimit (0.5 s): a challenge ACK for each
            time.sleep(0.6)
    with open(job + ".sent.json.tmp", "w") as f:
        json.dump(sent, f)
    os.rename(job + ".sent.json.tmp", job + ".sent.json")
    print(job, len(sent), flush=True)
'

# The checks on both captures (SYN_FILTER): a spoofed SYN is known by its
# sequence number and window; IPv6 extension headers are walked here
# (pcapread stops at them).  Prints JSON: per side ("c" the client's,
# "s" the server's) how many spoofed SYNs were seen once, and on the
# server's side how many exactly as sent, with the others listed; and the
# flags of the connection's own SYN toward the server.
CHECK_PY='
import json, struct, sys
from ecnproxy.analysis import pcapread
sent = json.load(open(sys.argv[1]))
want = {(s["seq"], s["win"]): s for s in sent}
port = int(sys.argv[4])

def syns(path):
    for _t, lt, pkt, _full in pcapread.records(path):
        net = pcapread.network(pkt, lt)
        if net is None:
            continue
        et, o = net
        ext = False
        if et == 0x0800 and len(pkt) >= o + 20 and pkt[o + 9] == 6:
            ecn = pkt[o + 1] & 3
            t = o + (pkt[o] & 15) * 4
        elif et == 0x86DD and len(pkt) >= o + 40:
            ecn = (pkt[o + 1] >> 4) & 3
            nh, t = pkt[o + 6], o + 40
            while nh in (0, 43, 60) and len(pkt) >= t + 2:
                ext = True
                nh, t = pkt[t], t + (pkt[t + 1] + 1) * 8
            if nh != 6:
                continue
        else:
            continue
        if len(pkt) < t + 16:
            continue
        _sp, dport, seq, _ack, _off, flags, win = struct.unpack_from("!HHIIBBH", pkt, t)
        if dport == port and flags & 0x02 and not flags & 0x10:
            yield seq, win, flags, ecn, ext

res = {}
for side, path in (("c", sys.argv[2]), ("s", sys.argv[3])):
    seen, real = {}, []
    for seq, win, flags, ecn, ext in syns(path):
        if (seq, win) in want:
            seen.setdefault((seq, win), []).append((flags, ecn, ext))
        else:
            real.append("0x%02x" % flags)
    edited = []
    for k, got in seen.items():
        s = want[k]
        edited += ["%s: flags 0x%02x ecn %d ext %s" % (s["kind"], f, e, x)
                   for f, e, x in got
                   if (f, e, x) != (s["flags"], s["ecn"], s["ext"])]
    res[side] = {"seen_once": sum(len(v) == 1 for v in seen.values()),
                 "copies": sum(len(v) for v in seen.values()),
                 "unedited": sum(len(v) for v in seen.values()) - len(edited),
                 "edited": edited, "real_syn_flags": real}
print(json.dumps(res))
'

run() {
	local fam=$1 tag=ctsyn-v$fam job=$TB_OUT/ctsyn-v$fam
	local seen0 marked0 neither0 fb0 port="" line="" marked=0 seen neither fb
	local i bgpid alive=0 ok=1 n after end res moved

	tb_red_reset
	tb_proxy_flush_fallback
	seen0=$(tb_proxy_stat flows_seen)
	marked0=$(tb_proxy_stat flows_ct_marked)
	neither0=$(tb_proxy_stat flows_neither_ecn)
	fb0=$(tb_proxy_stat flows_fallback)
	tb_capture_start -n c proxy eth0 "$TB_OUT/$tag.c.pcap" "$SYN_FILTER"
	tb_capture_start s proxy eth1 "$TB_OUT/$tag.s.pcap" "$SYN_FILTER"
	tb_bg "bg-$tag" client bash -c ". $TB_LIB_DIR/testlib.sh; \
		TB_OUT=$TB_OUT TB_STATE=$TB_STATE.$tag; mkdir -p \$TB_STATE; \
		tb_phases $tag $fam down:$down && echo EXACT"
	bgpid=$(cat "$TB_STATE/bg-$tag.pid")

	# the connection: decided, its entry marked, its flow expired
	for i in $(seq "$(tb_slow 150)"); do
		[ -n "$port" ] || port=$(client_port "$fam")
		marked=$(($(tb_proxy_stat flows_ct_marked) - marked0))
		if [ -n "$port" ]; then
			line=$(flow_line "$fam" "$port")
			[ "$marked" -ge 1 ] && [ -z "$line" ] && break
		fi
		sleep 0.1
	done
	seen=$(($(tb_proxy_stat flows_seen) - seen0))
	neither=$(($(tb_proxy_stat flows_neither_ecn) - neither0))
	fb=$(($(tb_proxy_stat flows_fallback) - fb0))
	log_info "IPv$fam: client port ${port:-?}, $down bytes down; flows_seen +$seen, flows_neither_ecn +$neither, flows_fallback +$fb, flows_ct_marked +$marked"
	RET=0
	if [ -z "$port" ]; then
		check_err 1 "no established connection in the client: $(tail -n 3 "$TB_STATE/bg-$tag.log")"
	elif [ -n "$line" ]; then
		check_err 1 "the flow did not expire (timeout_closed 1 s): $line"
	fi
	# decided "neither" (or, after a lost SYN or SYN-ACK, "fallback": no
	# ECN either), so marked; one flow, the connection's
	[ "$seen$((neither + fb))$marked" = 111 ] ||
		check_err 1 "flows_seen +$seen, flows_neither_ecn +$neither, flows_fallback +$fb, flows_ct_marked +$marked (want one flow, decided without ECN, marked)"
	kill -0 "$bgpid" 2>/dev/null ||
		check_err 1 "the transfer has ended already: $(tail -n 3 "$TB_STATE/bg-$tag.log")"
	[ "$RET" = 0 ] || ok=0
	log_test "IPv$fam: the connection is decided without ECN, marked once, its flow expired"

	if [ "$ok" = 1 ]; then
		# the collector counts flows_expired after its pass
		sleep 0.3
		tb_ns proxy cat /proc/net/ecn_proxy/stats >"$TB_OUT/$tag.0.snap"
		echo "$(tb_addr client "$fam") $(tb_addr server "$fam") $port $XFER_PORT" \
			>"$job.params.tmp"
	else
		echo skip >"$job.params.tmp"
	fi
	mv "$job.params.tmp" "$job.params"
	for i in $(seq "$(tb_slow 300)"); do
		[ -e "$job.sent.json" ] && break
		kill -0 "$SPOOFER" 2>/dev/null || break
		sleep 0.1
	done
	# the transfer must still run now: checked before anything else
	kill -0 "$bgpid" 2>/dev/null && alive=1
	sleep 0.5
	if [ "$ok" = 1 ]; then
		tb_ns proxy cat /proc/net/ecn_proxy/stats >"$TB_OUT/$tag.1.snap"
		after=$(flow_line "$fam" "$port")
		n=$(jq length "$job.sent.json" 2>/dev/null || echo 0)
		log_info "IPv$fam: $n SYNs spoofed; flow line after them: '$after'"
		RET=0
		[ "$n" -gt 0 ] ||
			check_err 1 "the spoofer failed: $(tail -n 3 "$TB_STATE/spoofer.log")"
		[ "$alive" = 1 ] ||
			check_err 1 "the transfer ended before the spoofs did (raise TB_CTSYN_SECS)"
		[ "$RET" = 0 ] || ok=0
		log_test "IPv$fam: $n SYNs spoofed with the connection's 4-tuple while it runs"
	fi

	for i in $(seq $(((4 * secs + $(tb_slow 60)) * 10))); do
		kill -0 "$bgpid" 2>/dev/null || break
		sleep 0.1
	done
	tb_bg_stop "bg-$tag"
	# and its server, if the client was stopped (tb_phases' own TB_STATE)
	(TB_STATE=$TB_STATE.$tag; tb_bg_stop "phases-$tag")
	tb_capture_stop c s
	[ "$ok" = 1 ] || return 0
	end=$(flow_line "$fam" "$port")

	RET=0
	grep -q EXACT "$TB_STATE/bg-$tag.log" ||
		check_err 1 "transfer not byte-exact: $(tail -n 3 "$TB_STATE/bg-$tag.log") $(cat "$TB_OUT/$tag.client.json" 2>/dev/null)"
	log_test "IPv$fam: transfer byte-exact across the spoofed SYNs"

	RET=0
	seen=$(tb_snap_delta "$tag" flows_seen)
	marked=$(tb_snap_delta "$tag" flows_ct_marked)
	[ "$seen$marked" = 00 ] ||
		check_err 1 "flows_seen +$seen, flows_ct_marked +$marked across the SYNs"
	log_test "IPv$fam: flows_seen and flows_ct_marked unchanged by the spoofed SYNs"

	RET=0
	moved=$(stats_moved "$TB_OUT/$tag.0.snap" "$TB_OUT/$tag.1.snap")
	[ -z "$moved" ] || check_err 1 "counters moved: $moved"
	log_test "IPv$fam: no proxy counter moved across the spoofed SYNs"

	RET=0
	[ -z "$after$end" ] ||
		check_err 1 "a flow for port $port: after the SYNs '$after', at the end '$end'"
	log_test "IPv$fam: no flow for the connection after the SYNs nor at its end"

	RET=0
	res=$(python3 -c "$CHECK_PY" "$job.sent.json" "$TB_OUT/$tag.c.pcap" \
		"$TB_OUT/$tag.s.pcap" "$XFER_PORT")
	echo "$res" >"$TB_OUT/$tag.syns-seen.json"
	log_info "IPv$fam: spoofed SYNs in the captures: $res"
	[ "$(jq .c.seen_once <<<"$res")" = "$n" ] ||
		check_err 1 "client side: $(jq .c.seen_once <<<"$res") of $n spoofed SYNs seen once"
	[ "$(jq .s.seen_once <<<"$res")" = "$n" ] ||
		check_err 1 "server side: $(jq .s.seen_once <<<"$res") of $n spoofed SYNs forwarded once"
	[ "$(jq .s.unedited <<<"$res")" = "$n" ] ||
		check_err 1 "server side: edited $(jq -c .s.edited <<<"$res")"
	log_test "IPv$fam: the spoofed SYNs crossed the proxy once each, unedited"

	tb_home_check "IPv$fam"
}

# the spoofer first, once for both families: its start-up (python3 and
# scapy under TCG: up to 25 s) must not eat into a transfer
rm -f "$TB_OUT"/ctsyn-v*.params "$TB_OUT"/ctsyn-v*.sent.json "$TB_OUT/spoofer.ready"
tb_bg spoofer client /usr/bin/python3 -c "$SPOOF_PY" "$TB_OUT/spoofer.ready" \
	"$proxy_mac" $((5 * secs + $(tb_slow 180))) "$TB_OUT/ctsyn-v4" "$TB_OUT/ctsyn-v6"
SPOOFER=$(cat "$TB_STATE/spoofer.pid")
for i in $(seq "$(tb_slow 1200)"); do
	[ -e "$TB_OUT/spoofer.ready" ] && break
	kill -0 "$SPOOFER" 2>/dev/null || break
	sleep 0.1
done
if [ ! -e "$TB_OUT/spoofer.ready" ]; then
	RET=0
	check_err 1 "the spoofer did not start: $(tail -n 3 "$TB_STATE/spoofer.log")"
	log_test "the spoofer starts"
	exit $EXIT_STATUS
fi

for fam in 4 6; do
	run "$fam"
done

exit $EXIT_STATUS
