#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Multipath TCP over the testbed's two paths (TB_MPTCP=1: the topology of
# the MBtest experiment, exp-mbtest-mptcp): with no impairment, a
# connection opens its second subflow over path 2 and carries data on
# both paths, IPv4 and IPv6.  The experiment's control rows mean nothing
# without this.  Checked at both ends: the server's MIB counts a join SYN
# received and its third ACK (the join completed) and no RST sent, the
# client's no failed connection attempt; each path carries at least 10 %
# of the bytes (the client's eth0 and eth1 counters); the transfer is
# byte-exact and still MPTCP at both ends.
#
#   client eth0 -- proxy -- router -- eth0 server    (path 1)
#   client eth1 -- mbox ------------- eth1 server    (path 2)
#
# tb-suite: extended (make vmtest-extended; not in make test, for time)
set -e
. "$(dirname "$0")/../lib/testlib.sh"
. "$TB_LIB_DIR/impair_lib.sh"
trap tb_cleanup EXIT
require_cmd jq python3 nstat
BYTES=4000000
PORT=5402

# mib NODE NAME...: the sum of the named counters (nstat's names) in NODE
mib() {
	local node=$1
	shift
	tb_ns "$node" nstat -az "$@" | awk 'NR > 1 { s += $2 } END { print s + 0 }'
}

# tx DEV: the client's bytes sent on DEV
tx() {
	ip -n client -s -j link show dev "$1" | jq '.[0].stats64.tx.bytes'
}

TB_MPTCP=1 TB_SETUP=upload TB_RATE_LOW=100mbit
tb_red_functional
tb_up
set +e

for fam in 4 6; do
	RET=0
	name=mptcp-v$fam
	jr0=$(mib server MPTcpExtMPJoinSynRx)
	ja0=$(mib server MPTcpExtMPJoinAckRx)
	rst0=$(mib server TcpOutRsts)
	af0=$(mib client TcpAttemptFails)
	e0=$(tx eth0) e1=$(tx eth1)
	tb_bg "xfer-$name" server python3 -m ecnproxy.vmtest.xfer server $PORT 0 \
		--family "$fam" --mptcp
	tb_wait_port server $PORT || check_err 1 "no listener"
	if tb_ns client python3 -m ecnproxy.vmtest.xfer client "$(tb_addr server "$fam")" \
		$PORT $BYTES --mptcp >"$TB_OUT/$name.client.json" \
		2>"$TB_OUT/$name.client.err"; then
		wait "$(cat "$TB_STATE/xfer-$name.pid")" 2>/dev/null
		rm -f "$TB_STATE/xfer-$name.pid"
	else
		# the server may never have had a connection to end
		check_err 1 "client failed: $(tail -n1 "$TB_OUT/$name.client.err")"
		tb_bg_stop "xfer-$name"
	fi
	cp "$TB_STATE/xfer-$name.log" "$TB_OUT/$name.server.json"
	c=$TB_OUT/$name.client.json s=$TB_OUT/$name.server.json
	expect "bytes received" "$(jq -r .received "$s" 2>/dev/null)" $BYTES
	expect "digest" "$(jq -r .received_sha256 "$s" 2>/dev/null)" \
		"$(jq -r .sent_sha256 "$c" 2>/dev/null)"
	# TCP_IS_MPTCP (6.1 answers EOPNOTSUPP: null there, not a failure)
	for f in "$c" "$s"; do
		[ "$(jq -r '.mptcp.is_mptcp' "$f" 2>/dev/null)" != 0 ] ||
			check_err 1 "$(basename "$f" .json) fell back to TCP"
	done
	jr=$(($(mib server MPTcpExtMPJoinSynRx) - jr0))
	ja=$(($(mib server MPTcpExtMPJoinAckRx) - ja0))
	rst=$(($(mib server TcpOutRsts) - rst0))
	af=$(($(mib client TcpAttemptFails) - af0))
	d0=$(($(tx eth0) - e0)) d1=$(($(tx eth1) - e1))
	log_info "$name: join SYN rx $jr, join ACK rx $ja, server RSTs $rst, client attempt fails $af; client sent $d0 bytes on eth0 (path 1), $d1 on eth1 (path 2)"
	[ "$jr" -ge 1 ] || check_err 1 "the server received no join SYN"
	[ "$ja" -ge 1 ] || check_err 1 "no join completed at the server (MPJoinAckRx)"
	expect "server RSTs" "$rst" 0
	expect "client's failed connection attempts" "$af" 0
	[ $((d0 * 10)) -ge $BYTES ] || check_err 1 "path 1 carried $d0 bytes"
	[ $((d1 * 10)) -ge $BYTES ] || check_err 1 "path 2 carried $d1 bytes"
	log_test "IPv$fam: MPTCP opens its second subflow and both paths carry data"
done

exit $EXIT_STATUS
