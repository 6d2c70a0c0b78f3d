#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# What impair's seqrand does to a stateful firewall on the same box
# (TB_ROUTER=home: fw4's ruleset with conntrack and drop_invalid on the
# proxy node, where the impairment rules live):
#
#   client --[net0]-- eth0 PROXY eth1 --[net1]-- router -- server
#                      conntrack (PREROUTING) ... fw4 forward ... impair (FORWARD, LAST)
#
# Conntrack sees each packet in PREROUTING, before impair rewrites it in
# FORWARD: it tracks A's real sequence numbers, but B answers in the
# randomised space.  B's SYN-ACK and ACKs acknowledge sequence numbers
# conntrack never saw, tcp_in_window() finds them out of window and marks
# them invalid, and the firewall drops them: the connection cannot be
# set up.  Asserted: with the default conntrack settings the transfer
# fails (20 s limit) and the firewall's invalid counters grow; with
# net.netfilter.nf_conntrack_tcp_be_liberal=1 (conntrack stops judging
# windows) the same transfer is byte-exact.  Without seqrand, the same
# transfer is byte-exact with nothing dropped (control).
# tb-suite: extended (make vmtest-extended; not in make test, for time)
set -e
. "$(dirname "$0")/../lib/testlib.sh"
. "$TB_LIB_DIR/impair_lib.sh"
trap tb_cleanup EXIT
require_cmd jq python3 nft

TB_ROUTER=home
impair_up
set +e

# xfer_limited TAG FAM: tb_xfer with a 20 s limit; 0 iff byte-exact
xfer_limited() {
	local tag=$1 fam=$2 rc
	tb_bg "xfer-$tag" server timeout 25 python3 -m ecnproxy.vmtest.xfer server \
		$XFER_PORT 100000 --family "$fam"
	tb_wait_port server $XFER_PORT || return 1
	tb_ns client timeout 20 python3 -m ecnproxy.vmtest.xfer client \
		"$(tb_addr server "$fam")" $XFER_PORT 100000 \
		>"$TB_OUT/$tag.client.json" 2>"$TB_OUT/$tag.client.err"
	rc=$?
	tb_bg_stop "xfer-$tag"
	[ "$rc" = 0 ] || return 1
	[ "$(jq -r .received "$TB_OUT/$tag.client.json")" = 100000 ]
}

for fam in 4 6; do
	RET=0
	impair_set
	# the previous case's last segments (a failed connection's
	# retransmissions) are not this one's
	sleep 2
	tb_home_invalid_delta
	xfer_limited control-v$fam "$fam" || check_err 1 "transfer without seqrand failed"
	tb_home_invalid_delta
	[ "$HOME_INVALID" = 0 ] || check_err 1 "$HOME_INVALID packets dropped as invalid"
	log_test "IPv$fam: without seqrand the transfer is byte-exact, nothing invalid"

	RET=0
	impair_set "dport $XFER_PORT seqrand sack-fix"
	xfer_limited strict-v$fam "$fam" && check_err 1 "the transfer succeeded"
	tb_home_invalid_delta
	log_info "IPv$fam strict: $HOME_INVALID packets dropped as invalid, conntrack invalid $(tb_home_ct_invalid)"
	[ "$HOME_INVALID" -gt 0 ] || check_err 1 "the firewall dropped nothing as invalid"
	log_test "IPv$fam: seqrand behind conntrack + drop_invalid: the connection fails, its packets are invalid"

	RET=0
	tb_ns proxy sysctl -qw net.netfilter.nf_conntrack_tcp_be_liberal=1
	xfer_limited liberal-v$fam "$fam" || check_err 1 "the transfer failed with be_liberal=1"
	tb_home_invalid_delta
	log_info "IPv$fam liberal: $HOME_INVALID packets dropped as invalid"
	tb_ns proxy sysctl -qw net.netfilter.nf_conntrack_tcp_be_liberal=0
	log_test "IPv$fam: seqrand with nf_conntrack_tcp_be_liberal=1: byte-exact"
done

exit $EXIT_STATUS
