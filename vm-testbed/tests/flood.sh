#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The SYN flood (issue 11): the proxy's table at max_flows while
# TB_FLOOD_SYNS spoofed SYNs arrive per round (make test: 20000; make
# debugtest: 10^5), a quarter of them IPv6, half of them ECN-setup
# (ecnproxy.vmtest.syn_flood: random sources in net0, random destinations in
# 198.18.7.0/24 and fd8e:c9b0:2a17:7::/64, which the router drops).
# The proxy namespace runs with max_flows=2048 and timeout_handshake=HS
# (TB_FLOOD_HS, default 90 s x TB_SLOW; init_net's is raised to HS if
# lower, and restored), so that no flood flow expires during round 1's
# flood: none before the legitimate transfers below have ended, and no
# freed flow (RCU, KASAN's quarantine) counted in the slab's growth.
# HS must outlast the flooder, which the debug kernel slows far more than
# TB_SLOW says (make debugtest sets TB_FLOOD_HS).  On the stock kernel the
# 20000 SYNs took 48 s (results/vmtest-flood-hs-20261129/): 90 s leaves a
# slower CI host almost twice that.
#
#   client(N, syn_flood) -- eth0 PROXY eth1 --+-- router -- server(E)
#                      max_flows=2048    ^capture |   drops the flood's
#                                                udp1  prefixes (nft, raw)
#
# Round 1, the flood spread over 40 s x TB_SLOW (faster is not needed):
#   - the flooder sent every SYN; the proxy saw (nearly) all of them:
#     flows_seen + table_full + alloc_failed >= 90 % of the SYNs sent,
#     table_full > 0;
#   - flows_active (sampled every 0.2 s) reaches max_flows and never
#     exceeds it but by the places being reserved by CPUs at that instant
#     (tcpfwd_flow_insert() counts before it checks: at most one per CPU);
#   - memory: the slab cache of the flows (ecnp_flow, or the cache SLUB
#     merged it into: then the growth includes other users' noise) grows
#     by at most max_flows objects plus a constant C, i.e. in bytes
#     max_flows x objsize + C x objsize, where objsize is the cache's
#     object footprint (= flow_alloc_bytes on the stock kernel, more with
#     red zones and KASAN metadata); C = (1 + the per-CPU partial slabs)
#     per CPU + min_partial + 10 slabs, SLUB's free objects kept outside
#     the node lists, from /sys/kernel/slab (not the number of SYNs);
#     flow_struct_bytes <= flow_alloc_bytes <= objsize;
#   - legitimate connections started after the table filled, while the
#     flood runs (tb_xfer IPv4 then IPv6, 200 kB up, 500 kB down; the
#     table full before each and no flow expired during it): byte-
#     exact, and untouched (table_full): no flow for them in
#     /proc/net/ecn_proxy/flows, no ECE/CWR on their SYNs and no ECN
#     codepoint on any of their packets at the proxy's eth1;
#   - after the flood, the table drains to 0 within HS + 20 s x TB_SLOW,
#     flows_seen - flows_expired == 0 (every flow counted once each way),
#     and after a shrink the cache is back within C objects of where it
#     started (the flows were freed).
# Round 2: the flood again, and while it runs: rmmod ecn_proxy (and
# tcpfwd if nothing else holds it) with a reader looping over the proxy's
# proc files, insmod again, re-enable the proxy, which takes flows from
# the running flood; the kernel log shows no BUG, WARNING, Oops, KASAN or
# UBSAN report (vm-run also scans the whole log), and a transfer after the
# flood is byte-exact.  The cleanup deletes the proxy namespace with a
# full table (pernet exit with live flows).
set -e
. "$(dirname "$0")/../lib/testlib.sh"
# init_net's timeout_handshake as found, restored at the end (see hs below)
init_hs0=
flood_cleanup() {
	local rc=$?
	[ -z "$init_hs0" ] || [ ! -d /sys/module/ecn_proxy ] ||
		sysctl -qw net.ecn_proxy.timeout_handshake="$init_hs0" || true
	tb_cleanup
	return $rc
}
trap flood_cleanup EXIT
tb_knob_int SYNS TB_FLOOD_SYNS 20000 5000
# timeout_handshake during the flood: see hs below
tb_knob_int hs TB_FLOOD_HS "$(tb_slow 90)" 1 86400
require_cmd python3 jq tcpdump nft

MAXF=2048
FLOOD4=198.18.7.0/24
FLOOD6=fd8e:c9b0:2a17:7::/64
[ -r /proc/slabinfo ] || skip "no /proc/slabinfo"

tb_red_functional
tb_proxy_load
tb_up
tb_tcp client ecn=0
tb_tcp server ecn=1
tb_proxy on drop
# The router drops the flood before routing (an input route to a
# blackhole would allocate a dst per packet, from a slab cache that the
# flows' may be merged with); the blackhole routes only back that up.
tb_ns router nft -f - <<NFT
table inet flood {
	chain pre {
		type filter hook prerouting priority raw; policy accept;
		ip daddr $FLOOD4 counter drop
		ip6 daddr $FLOOD6 counter drop
	}
}
NFT
tb_ns router ip route add blackhole $FLOOD4
tb_ns router ip -6 route add blackhole $FLOOD6
# timeout_handshake outlasts the flood's first 40 s: no flow expires
# while the legitimate transfers meet the full table.  The proxy namespace
# may only lower init_net's limits, so on a slow guest (TB_SLOW; the debug
# kernel's transfers take minutes) init_net's is raised too, and restored
# at the end (and again after the reload of round 2, which resets it).
init_hs0=$(sysctl -n net.ecn_proxy.timeout_handshake)
init_hs_raise() {
	[ "$hs" -le "$(sysctl -n net.ecn_proxy.timeout_handshake)" ] ||
		sysctl -qw net.ecn_proxy.timeout_handshake="$hs"
}
init_hs_raise
[ "$MAXF" -le "$(sysctl -n net.ecn_proxy.max_flows)" ] ||
	skip "init_net's max_flows is below $MAXF"
tb_ns proxy sysctl -qw net.ecn_proxy.max_flows=$MAXF \
	net.ecn_proxy.timeout_handshake="$hs"
log_info "proxy: max_flows $MAXF, timeout_handshake $hs s; rp_filter all $(tb_ns proxy sysctl -n net.ipv4.conf.all.rp_filter), eth0 $(tb_ns proxy sysctl -n net.ipv4.conf.eth0.rp_filter) (the spoofed sources are in eth0's subnet)"

# flood NAME SECONDS: start TB_FLOOD_SYNS SYNs from the client, spread
# over at least SECONDS; its JSON summary ends up in $TB_STATE/NAME.log
flood() {
	tb_bg "$1" client python3 -m ecnproxy.vmtest.syn_flood "$SYNS" --src4 198.18.0.0/24 \
		--dst4 $FLOOD4 --src6 fd8e:c9b0:2a17::/64 --dst6 $FLOOD6 \
		--v6 0.25 --ecn 0.5 --seconds "$2"
}

# flood_running NAME
flood_running() {
	[ -e "$TB_STATE/$1.pid" ] && kill -0 "$(cat "$TB_STATE/$1.pid")" 2>/dev/null
}

# flood_wait NAME SECONDS: until the flooder exits (stopped after SECONDS)
flood_wait() {
	local _
	for _ in $(seq $(($2 * 10))); do
		flood_running "$1" || break
		sleep 0.1
	done
	flood_running "$1" && log_info "$1: still running after $2 s, stopped"
	tb_bg_stop "$1"
}

# wait_flows N SECONDS: until flows_active >= N
wait_flows() {
	local _
	for _ in $(seq $(($2 * 10))); do
		[ "$(tb_proxy_stat flows_active 2>/dev/null || echo 0)" -ge "$1" ] &&
			return 0
		sleep 0.1
	done
	return 1
}

stats_save() {
	tb_ns proxy cat /proc/net/ecn_proxy/stats >"$1"
}

# stat_delta FILE NAME: NAME's growth since stats_save FILE
stat_delta() {
	local now was
	now=$(tb_proxy_stat "$2")
	was=$(awk -v k="$2" '$1 == k { print $2 }' "$1")
	echo $((now - was))
}

# --- the flows' slab cache ------------------------------------------------
# flow_cache: SLAB_NAME is the /proc/slabinfo line that holds the flows:
# ecnp_flow (SLAB_OWN=1), or, on a kernel that merged the cache into a
# compatible one (SLUB's slab_merge, the stock kernel), that cache
# (SLAB_OWN=0, found through the /sys/kernel/slab alias).
flow_cache() {
	local target
	SLAB_OWN=1
	SLAB_NAME=ecnp_flow
	awk '$1 == "ecnp_flow" { f = 1 } END { exit !f }' /proc/slabinfo &&
		return 0
	SLAB_OWN=0
	# the aliases are symlinks to the merged cache's directory (:0000192)
	target=$(readlink /sys/kernel/slab/ecnp_flow) || return 1
	SLAB_NAME=$(find /sys/kernel/slab/ -maxdepth 1 -lname "$target" -printf '%f\n' |
		awk 'NR == FNR { a[$1] = 1; next }
		     FNR > 2 && ($1 in a) { print $1; exit }' - /proc/slabinfo)
	[ -n "$SLAB_NAME" ]
}

# slab: "active_objs num_objs objsize objperslab pagesperslab" of SLAB_NAME
slab() {
	awk -v n="$SLAB_NAME" '$1 == n { print $2, $3, $4, $5, $6 }' /proc/slabinfo
}

# sysfs of the cache (SLUB): FILE's first number, or DEFAULT
slab_sys() {
	local v
	v=$(cut -d' ' -f1 "/sys/kernel/slab/$SLAB_NAME/$1" 2>/dev/null) || v=
	[[ $v =~ ^[0-9]+$ ]] && echo "$v" || echo "$2"
}

# sampler FILE: "flows_active active_objs num_objs" every 0.2 s
sampler() {
	local f s
	while :; do
		f=$(tb_proxy_stat flows_active 2>/dev/null) || f=
		s=$(slab)
		echo "${f:--1} ${s% * * *}" >>"$1"
		sleep 0.2
	done
}

RET=0
if ! flow_cache; then
	check_err 1 "no slab cache holds ecnp_flow (/proc/slabinfo, /sys/kernel/slab)"
	log_test "the flows' slab cache is found"
	exit $EXIT_STATUS
fi
read -r a0 n0 objsize perslab pages < <(slab)
fsb=$(tb_proxy_stat flow_struct_bytes)
fab=$(tb_proxy_stat flow_alloc_bytes)
cpus=$(nproc)
cpu_partial=$(slab_sys cpu_partial 120)
min_partial=$(slab_sys min_partial 10)
# the per-CPU partial slabs SLUB keeps: cpu_partial objects x 2 (6.1's
# slub_set_cpu_partial()), in slabs of perslab objects
cslabs=$((cpus * (1 + (2 * cpu_partial + perslab - 1) / perslab) + min_partial + 10))
C=$((cslabs * perslab))
log_info "slab cache '$SLAB_NAME' (own cache: $SLAB_OWN): objsize $objsize, $perslab per slab of $pages pages, cpu_partial $cpu_partial, min_partial $min_partial; $cpus CPUs: C = $cslabs slabs = $C objects"
log_info "flow_struct_bytes $fsb, flow_alloc_bytes $fab; before the flood: active_objs $a0, num_objs $n0"
[ "$fsb" -le "$fab" ] || check_err 1 "flow_struct_bytes $fsb > flow_alloc_bytes $fab"
[ "$fab" -le "$objsize" ] || check_err 1 "flow_alloc_bytes $fab > the cache's objsize $objsize"
log_test "the flows' slab cache is found and flow_alloc_bytes is its object size"

# --- round 1 --------------------------------------------------------------
stats_save "$TB_OUT/stats0"
samples=$TB_OUT/samples.txt
: >"$samples"
sampler "$samples" &
echo $! >"$TB_STATE/sampler.pid"
t0=$SECONDS
flood flood1 "$(tb_slow 40)"

RET=0
wait_flows $MAXF "$(tb_slow 60)" ||
	check_err 1 "the table never reached max_flows: $(tb_proxy_stat flows_active) flows"
flood_running flood1 || check_err 1 "the flood ended before the table was full"
log_info "table full after $((SECONDS - t0)) s"
log_test "the flood fills the table to max_flows ($MAXF)"

# the legitimate connections, while the flood runs
RET=0
# (the flood's random ports may hit XFER_PORT: only the server's packets)
srv4=$(tb_addr server 4)
srv6=$(tb_addr server 6)
tb_capture_start legit proxy eth1 "$TB_OUT/legit.pcap" tcp port $XFER_PORT \
	and \( host "$srv4" or host "$srv6" \)
for fam in 4 6; do
	flood_running flood1 || check_err 1 "the flood ended before the IPv$fam transfer"
	# full before, and no flow expired until after: the transfer's SYN
	# met a full table (table_full)
	[ "$(tb_proxy_stat flows_active)" -ge $MAXF ] ||
		check_err 1 "the table is not full before the IPv$fam transfer"
	ex0=$(tb_proxy_stat flows_expired)
	if ! tb_xfer "legit$fam" $fam 200000 500000; then
		check_err 1 "IPv$fam transfer during the flood not byte-exact"
		tb_bg_stop "xfer-legit$fam"
	fi
	[ "$(tb_proxy_stat flows_expired)" = "$ex0" ] ||
		check_err 1 "flows expired during the IPv$fam transfer: the table had room (timeout_handshake $hs s: raise TB_FLOOD_HS)"
	n=$(tb_ns proxy cat /proc/net/ecn_proxy/flows |
		grep -cF -e " $srv4:$XFER_PORT " -e " [$srv6]:$XFER_PORT " || true)
	[ "$n" = 0 ] || check_err 1 "IPv$fam: $n flows of the transfer in the proxy's table"
done
still=0
flood_running flood1 && still=1
tb_capture_stop legit
# ecnproxy's pcapread, not tshark: tshark takes minutes to start under TCG
read -r all syn syn_ecn ecn < <(python3 - "$TB_OUT/legit.pcap" <<'PY'
import sys
from ecnproxy.analysis import pcapread
n = syn = syn_ecn = ecn = 0
for (_t, e, _s, _d, _sp, _dp, _seq, _ack, fl, _w, _l) in pcapread.read_packets(sys.argv[1]):
    n += 1
    syn += fl & 0x12 == 0x02
    syn_ecn += bool(fl & 0x02 and fl & 0xc0)
    ecn += e != 0
print(n, syn, syn_ecn, ecn)
PY
)
log_info "legit: $all packets at the proxy's eth1, $syn SYNs, $syn_ecn SYN/SYN-ACKs with ECE/CWR, $ecn with an ECN codepoint; flood still running after them: $still"
[ "$syn" -ge 2 ] || check_err 1 "$syn SYNs of the transfers captured, expected 2"
[ "$syn_ecn" = 0 ] || check_err 1 "$syn_ecn SYN/SYN-ACKs with ECE or CWR: the proxy touched them"
[ "$ecn" = 0 ] || check_err 1 "$ecn packets with ECT or CE: the proxy touched them"
log_test "transfers started during the flood (IPv4, IPv6) are byte-exact and untouched"

flood_wait flood1 "$(tb_slow 300)"
t_end=$SECONDS
RET=0
sum=$(tail -n 1 "$TB_STATE/flood1.log")
log_info "flood 1: $sum"
sent=$(jq -r .sent <<<"$sum" 2>/dev/null) || sent=0
[ "$sent" = "$SYNS" ] || check_err 1 "the flooder sent $sent SYNs of $SYNS: $sum"
fs=$(stat_delta "$TB_OUT/stats0" flows_seen)
tf=$(stat_delta "$TB_OUT/stats0" table_full)
af=$(stat_delta "$TB_OUT/stats0" alloc_failed)
ex=$(stat_delta "$TB_OUT/stats0" flows_expired)
log_info "flows_seen +$fs, table_full +$tf, alloc_failed +$af, flows_expired +$ex during the flood ($((t_end - t0)) s)"
# flows that expired and were replaced during the flood: the transfers may
# have met a table with room, and freed flows still count in the slab
why=
[ "$ex" = 0 ] ||
	why=" ($ex flows expired during the $((t_end - t0)) s flood, timeout_handshake $hs s: raise TB_FLOOD_HS)"
[ "$tf" -gt 0 ] || check_err 1 "table_full did not grow"
[ $((10 * (fs + tf + af))) -ge $((9 * sent)) ] ||
	check_err 1 "the proxy saw $((fs + tf + af)) SYNs of $sent sent (rp_filter? drops?)"
log_test "$SYNS spoofed SYNs (IPv4 and IPv6) reach the proxy, the excess is counted as table_full"

kill "$(cat "$TB_STATE/sampler.pid")" 2>/dev/null || true
wait "$(cat "$TB_STATE/sampler.pid")" 2>/dev/null || true
rm -f "$TB_STATE/sampler.pid"
RET=0
read -r fmax amax nmax < <(awk 'NR == 1 { f = $1; a = $2; n = $3 }
	{ if ($1 > f) f = $1; if ($2 > a) a = $2; if ($3 > n) n = $3 }
	END { print f + 0, a + 0, n + 0 }' "$samples")
log_info "$(wc -l <"$samples") samples: flows_active max $fmax, $SLAB_NAME active_objs max $amax, num_objs max $nmax"
[ "$(wc -l <"$samples")" -ge 5 ] || check_err 1 "only $(wc -l <"$samples") samples"
# tcpfwd_flow_insert() reserves a place (atomic_inc_return) before it
# knows the table is full and gives it back at once: a reader may see one
# such reservation per CPU in flight, never a flow beyond max_flows
[ "$fmax" -le $((MAXF + cpus)) ] ||
	check_err 1 "flows_active reached $fmax > max_flows $MAXF (+ $cpus CPUs' reservations)"
[ "$fmax" -ge $MAXF ] || check_err 1 "flows_active never sampled at max_flows (max $fmax)"
over=$(awk -v m=$MAXF '$1 > m' "$samples" | wc -l)
[ "$over" = 0 ] || log_info "$over samples above max_flows (reservations in flight)"
log_test "flows_active never exceeds max_flows during the flood"

RET=0
grow=$((nmax - n0))
bound=$(((MAXF + C) * objsize))
log_info "slab growth $grow objects = $((grow * objsize)) bytes; bound: max_flows x $objsize + C = $bound bytes ($((MAXF * fab)) bytes of flows at flow_alloc_bytes)"
[ $((grow * objsize)) -le "$bound" ] ||
	check_err 1 "$SLAB_NAME grew by $((grow * objsize)) bytes > $bound$why"
[ $((amax - a0 + C)) -ge "$MAXF" ] ||
	check_err 1 "$SLAB_NAME's objects in use grew by only $((amax - a0)) for $MAXF flows: not where the flows are"
log_test "slab memory of the flows stays within max_flows x objsize + C"

RET=0
for _ in $(seq $((hs + $(tb_slow 20)))); do
	[ "$(tb_proxy_stat flows_active)" = 0 ] && break
	sleep 1
done
left=$(tb_proxy_stat flows_active)
log_info "flows_active $left, $((SECONDS - t_end)) s after the flood"
[ "$left" = 0 ] || check_err 1 "$left flows left $((SECONDS - t_end)) s after the flood (timeout_handshake $hs s)"
fs=$(stat_delta "$TB_OUT/stats0" flows_seen)
ex=$(stat_delta "$TB_OUT/stats0" flows_expired)
[ "$fs" = "$ex" ] ||
	check_err 1 "flows_seen +$fs but flows_expired +$ex with the table empty"
log_test "the table drains after timeout_handshake; every flow seen expired once"

RET=0
# the flows are freed after an RCU grace period; then empty the per-CPU
# slabs back to the node lists (kmem_cache_shrink), so that active_objs
# counts objects in use only
sleep 2
echo 1 >"/sys/kernel/slab/$SLAB_NAME/shrink" 2>/dev/null || true
read -r a1 n1 _ < <(slab)
log_info "after the drain and a shrink: $SLAB_NAME active_objs $a1 (was $a0), num_objs $n1 (was $n0)"
[ $((a1 - a0)) -le "$C" ] ||
	check_err 1 "$SLAB_NAME still holds $((a1 - a0)) more objects than before the flood (C = $C)"
log_test "the flows' memory is freed after the drain"

# --- round 2: rmmod during the flood ---------------------------------------
RET=0
mark=$(dmesg | wc -l)
tb_bg reader proxy sh -c 'while :; do
	cat /proc/net/ecn_proxy/flows /proc/net/ecn_proxy/stats \
		/proc/net/ecn_proxy/fallback >/dev/null 2>&1; sleep 0.05; done'
flood flood2 "$(tb_slow 15)"
wait_flows $((MAXF / 2)) "$(tb_slow 60)" ||
	check_err 1 "the second flood did not fill the table: $(tb_proxy_stat flows_active) flows"
flood_running flood2 || check_err 1 "the flood ended before rmmod"
log_info "rmmod with $(tb_proxy_stat flows_active) flows"
rmmod ecn_proxy || check_err 1 "rmmod ecn_proxy failed"
[ ! -d /sys/module/ecn_proxy ] || check_err 1 "ecn_proxy still loaded"
if [ -z "$(ls /sys/module/tcpfwd/holders 2>/dev/null)" ]; then
	rmmod tcpfwd || check_err 1 "rmmod tcpfwd failed"
	[ ! -d /sys/module/tcpfwd ] || check_err 1 "tcpfwd still loaded"
else
	log_info "tcpfwd stays: held by $(echo /sys/module/tcpfwd/holders/* | sed 's|[^ ]*/||g')"
fi
flood_running flood2 || check_err 1 "the flood ended before the modules were gone"
log_test "rmmod ecn_proxy (and tcpfwd) during the flood"

RET=0
sleep 1
tb_proxy_load || check_err 1 "insmod failed"
init_hs_raise || check_err 1 "init_net's timeout_handshake after reload"
tb_ns proxy sysctl -qw net.ecn_proxy.max_flows=$MAXF \
	net.ecn_proxy.timeout_handshake="$hs" || check_err 1 "sysctls after reload"
tb_proxy on drop || check_err 1 "cannot enable the proxy after reload"
if flood_running flood2; then
	wait_flows 1 "$(tb_slow 30)" ||
		check_err 1 "the reloaded proxy takes no flow from the running flood"
else
	log_info "the flood ended before the reload: nothing to take"
fi
log_test "insmod during the flood: the proxy takes flows again"

flood_wait flood2 "$(tb_slow 300)"
tb_bg_stop reader
log_info "flood 2: $(tail -n 1 "$TB_STATE/flood2.log"); flows_active $(tb_proxy_stat flows_active), table_full $(tb_proxy_stat table_full)"
RET=0
[ "$(tb_proxy_stat flows_active)" -le $MAXF ] ||
	check_err 1 "flows_active $(tb_proxy_stat flows_active) > max_flows after the reload"
tb_xfer after 4 100000 300000 || check_err 1 "transfer after the flood not byte-exact"
if dmesg | tail -n +"$mark" |
	grep -E "BUG:|WARNING:|Oops|KASAN|UBSAN|refcount_t|list_del|general protection"; then
	check_err 1 "the kernel log shows a problem after rmmod under the flood"
fi
log_test "no kernel report after rmmod under the flood; a transfer afterwards is byte-exact"

exit $EXIT_STATUS
