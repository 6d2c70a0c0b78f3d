#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Unloading under traffic: rmmod ecn_proxy in the middle of a proxied
# download (configuration 3, drop feedback, 10 Mbit/s bottleneck).  The
# transfer must complete byte-exact and the kernel log must stay clean
# (vm-run also fails the whole run on any warning).
#
# Once the proxy is gone the flow is half-ECN: the server still sends ECT
# but nobody echoes CE to it, so it never slows down for marks, RED's
# average climbs above max_th and stays frozen there (see topology.sh),
# and every Not-ECT retransmission is dropped: minutes of RTO back-off
# (measured: 8 MB in 241 s; once over 120 s without a byte, and xfer.py
# gave up).  That is the documented cost of unloading under traffic, not
# what this test is about, so at rmmod the router switches to dropping
# (RED without ecn, average reset): the byte-exact check then shows that
# the unload itself lost or corrupted nothing.
#
# With TB_RMMOD_MODE=dupack-fast (variant fast) the transfer is an upload
# under dupack-fast (TB_SETUP=upload), and rmmod waits until the proxy has answered some of
# N's retransmissions with a kept copy of E's ACK (rexmit_answered): a
# flow may hold such a copy when the table is destroyed, and the module
# warns (WARN_ON_ONCE in ecnp_net_exit(), which fails the run) if one was
# neither sent nor freed with its flow.  Whether a copy is held at the
# instant of rmmod is not observable from here; the run logs how many
# were answered before it.
#
#   client -- PROXY (rmmod during the transfer) -- router -- server
# tb-make-test: second-kernel
# tb-variant-extended: fast TB_RMMOD_MODE=dupack-fast
set -e
. "$(dirname "$0")/../lib/testlib.sh"
trap tb_cleanup EXIT
tb_knob_match mode TB_RMMOD_MODE drop 'drop|dupack-fast' 'a feedback mode: drop or dupack-fast'
require_cmd python3 jq

tb_proxy_load
# the upload's bottleneck toward the server
[ "$mode" = drop ] || TB_SETUP=upload
tb_up
tb_tcp client ecn=0
tb_tcp server ecn=1
tb_proxy on "$mode"
mark=$(dmesg | wc -l)

if [ "$mode" = drop ]; then
	tb_xfer rm 4 1000 8000000 &
else
	tb_xfer rm 4 8000000 1000 &
fi
xfer=$!
# wait (up to 30 s x TB_SLOW) until the transfer is proxied and under way
# (dupack-fast: and some retransmissions answered)
RET=0
for i in $(seq "$(tb_slow 300)"); do
	flows=$(tb_ns proxy cat /proc/net/ecn_proxy/flows)
	segs=$(echo "$flows" | sed -n 's/.*e=B phase=2 .* segs=\([0-9]*\).*/\1/p')
	[ "$mode" = drop ] || ans=$(tb_proxy_stat rexmit_answered)
	[ "${segs:-0}" -ge 500 ] && { [ "$mode" = drop ] || [ "${ans:-0}" -ge 20 ]; } && break
	sleep 0.1
done
echo "$flows" | sed 's/^/INFO: flow: /'
[ "${segs:-0}" -ge 500 ] || check_err 1 "the transfer is not proxied"
[ "$mode" = drop ] || [ "${ans:-0}" -ge 20 ] ||
	check_err 1 "dupack-fast answered ${ans:-0} retransmissions before rmmod (20 wanted)"
[ "$mode" = drop ] || log_info "dupack-fast: $ans retransmissions answered before rmmod"
kill -0 $xfer 2>/dev/null || check_err 1 "the transfer ended before rmmod"
rmmod ecn_proxy || check_err 1 "rmmod failed"
[ ! -d /sys/module/ecn_proxy ] || check_err 1 "module still loaded"
TB_RED_ECN=0 tb_red_reset || check_err 1 "cannot switch RED to dropping"
t_rmmod=$(date +%s.%N)
tc -n router qdisc show dev "$(tb_bottleneck_dev)" | sed "s/^/INFO: router: /"
log_test "rmmod ecn_proxy while a proxied transfer runs ($mode)"

RET=0
wait $xfer || check_err 1 "transfer not byte-exact"
awk -v a="$t_rmmod" -v b="$(date +%s.%N)" 'BEGIN { printf "INFO: the transfer ended %.1f s after rmmod\n", b - a }'
log_test "the transfer completes byte-exact after rmmod"

RET=0
if dmesg | tail -n +"$mark" | grep -E "BUG:|WARNING:|Oops|refcount_t|list_del"; then
	check_err 1 "kernel log shows a problem after rmmod"
fi
log_test "no warning in the kernel log after rmmod"

RET=0
tb_proxy_load || check_err 1 "reload failed"
log_test "the module loads again"

exit $EXIT_STATUS
