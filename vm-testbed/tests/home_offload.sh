#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The proxy on a home router with fw4's software flow offloading
# (TB_ROUTER=home TB_OFFLOAD_FLOWS=1: "flowtable ft" on the proxy node's
# eth0/eth1 and "flow offload @ft" in the forward chain, before the
# proxy's hook).  An offloaded flow's packets take the flowtable's ingress
# fast path and never reach FORWARD: a proxied flow there would be
# half-ECN from its first data segment.  The proxy keeps the flows it
# proxies off the fast path (flows_offload_blocked) and leaves the others
# to it.
#
#   client --[net0]-- eth0 PROXY eth1 --[net1]-- router(RED, 10M down) -- server
#                     ^ capture cs     ^ capture ss      (fw4 + flowtable)
#
# Per family and configuration, one connection (vmtest/phases.py: the client
# asks for TB_OFFLOAD_DOWN bytes, which the server sends back through the
# marking bottleneck, then the client sends as many; the connection stays
# ESTABLISHED throughout: a half-closed one is never offloaded), with the
# proxy node's conntrack table sampled every 200 ms meanwhile:
#   srvecn+proxy, cliecn+proxy  proxied: never [OFFLOAD]; nothing of ECN
#                reaches the non-ECN host; the server's CE is echoed to it
#                as ECE (srvecn); counted in flows_offload_blocked;
#   noecn+proxy, bothecn+proxy  nothing to do: the flow IS offloaded (this
#                shows the flowtable works here, so that the first case
#                means something), ECN bits the same on both sides;
# all byte-exact, nothing dropped as invalid, and no proxied flow was ever
# seen offloaded (flows_offloaded_proxied stays 0).
# TB_OFFLOAD_FAMILIES (comma-separated): 4 in make test, 6 in the extended
# suite (@v6).
# tb-make-test: second-kernel
# tb-variant-extended: v6 TB_OFFLOAD_FAMILIES=6
set -e
. "$(dirname "$0")/../lib/testlib.sh"
trap tb_cleanup EXIT
tb_knob_int down TB_OFFLOAD_DOWN 2000000 1
tb_knob_list TB_OFFLOAD_FAMILIES TB_OFFLOAD_FAMILIES 4 '4|6' '4 and 6'
require_cmd tcpdump jq python3 nft

TB_ROUTER=home
TB_OFFLOAD_FLOWS=1
tb_proxy_load
tb_red_functional
tb_up
tb_proxy on drop

# sample_ct_start TAG / sample_ct_stop: conntrack lines of the transfer's
# connection, every 200 ms, into $TB_OUT/TAG.ct
sample_ct_start() {
	tb_bg ctsample proxy sh -c "while :; do grep -E 'tcp .*dport=$XFER_PORT ' /proc/net/nf_conntrack; sleep 0.2; done"
	CT_TAG=$1
}
sample_ct_stop() {
	tb_bg_stop ctsample
	cp "$TB_STATE/ctsample.log" "$TB_OUT/$CT_TAG.ct"
}

run() {
	local fam=$1 cfg=$2 cecn=$3 secn=$4 ehost=$5 tag=$2-v$1
	local cs=$TB_OUT/$tag.cs.json ss=$TB_OUT/$tag.ss.json b0 off

	tb_tcp client ecn="$cecn"
	tb_tcp server ecn="$secn"
	tb_proxy_flush_fallback
	b0=$(tb_proxy_stat flows_offload_blocked)
	tb_capture_start -n cs proxy eth0 "$TB_OUT/$tag.cs.pcap" tcp port $XFER_PORT
	tb_capture_start ss proxy eth1 "$TB_OUT/$tag.ss.pcap" tcp port $XFER_PORT
	sample_ct_start "$tag"
	RET=0
	tb_phases "$tag" "$fam" down:"$down" up:"$down" ||
		check_err 1 "transfer not byte-exact"
	sample_ct_stop
	tb_capture_stop cs ss
	log_test "$tag: transfer byte-exact"
	tb_home_check "$tag"
	pcap_ecn "$TB_OUT/$tag.cs.pcap" >"$cs"
	pcap_ecn "$TB_OUT/$tag.ss.pcap" "$ehost" >"$ss"
	off=$(grep -c OFFLOAD "$TB_OUT/$tag.ct" || true)

	RET=0
	if [ "$ehost" = - ]; then
		[ "$off" -gt 0 ] ||
			check_err 1 "never offloaded ($(wc -l <"$TB_OUT/$tag.ct") samples): is the flowtable working?"
		for d in c2s s2c; do
			for k in ect_any ce ece cwr; do
				a=$(jq ".$d.$k > 0" "$cs")
				b=$(jq ".$d.$k > 0" "$ss")
				[ "$a" = "$b" ] || check_err 1 "$d $k: client side $a, server side $b"
			done
		done
		log_test "$tag: a flow that needs nothing is offloaded ($off samples) and untouched"
		return
	fi
	[ "$off" = 0 ] || check_err 1 "the proxied flow was offloaded in $off samples"
	[ $(( $(tb_proxy_stat flows_offload_blocked) - b0 )) = 1 ] ||
		check_err 1 "flows_offload_blocked did not count the flow"
	log_test "$tag: the proxied flow stays off the fast path"

	RET=0
	local e2n nside eside
	if [ "$ehost" = server ]; then
		e2n=s2c nside=$cs eside=$ss
	else
		e2n=c2s nside=$ss eside=$cs
	fi
	read -r ect ce ece cwr < <(jq -r ".$e2n | \"\(.ect_any) \(.ce) \(.ece) \(.cwr)\"" "$nside")
	[ "$ect$ce$ece$cwr" = 0000 ] ||
		check_err 1 "toward N: ECT=$ect CE=$ce ECE=$ece CWR=$cwr"
	log_test "$tag: nothing of ECN reaches the non-ECN host"
	if [ "$ehost" = server ]; then
		RET=0
		read -r ce echoed < <(jq -r '"\(.s2c.ce) \(.echo.ece)"' "$eside")
		[ "$ce" -gt 0 ] && [ "$echoed" -gt 0 ] ||
			check_err 1 "CE from the router $ce, ECE toward the server $echoed"
		log_test "$tag: the server's CE marks are echoed to it ($echoed ECE)"
	fi
}

for fam in $TB_OFFLOAD_FAMILIES; do
	run "$fam" srvecn+proxy 0 1 server
	run "$fam" cliecn+proxy 1 0 client
	run "$fam" noecn+proxy 0 0 -
	run "$fam" bothecn+proxy 1 1 -
done

RET=0
[ "$(tb_proxy_stat flows_offloaded_proxied)" = 0 ] ||
	check_err 1 "$(tb_proxy_stat flows_offloaded_proxied) proxied flows were seen offloaded"
log_test "no proxied flow was ever offloaded past the proxy"

exit $EXIT_STATUS
