# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
#
# kselftest-style helpers for the VM tests (after the kernel's
# tools/testing/selftests/net/forwarding/lib.sh).  A test script:
#
#   #!/bin/bash
#   # (topology diagram)
#   set -e
#   . "$(dirname "$0")/../lib/testlib.sh"
#   trap tb_cleanup EXIT
#   tb_up
#   RET=0
#   some_command || check_err $? "what went wrong"
#   [ "$x" -gt 0 ] || check_err 1 "x is $x, expected > 0"
#   log_test "what this case checks"
#   ...
#   exit $EXIT_STATUS
#
# Every log_test prints one "TEST: ... [ OK ]/[FAIL]" line and appends a
# TAP-style line to $TB_RESULTS (set by the runner); a script that cannot
# run exits with ksft_skip (4) through skip().

TB_LIB_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=topology.sh
. "$TB_LIB_DIR/topology.sh"

ksft_skip=4
RET=0
EXIT_STATUS=0
retmsg=
: "${TB_RESULTS:=/dev/null}"
: "${TB_OUT:=$PWD}"

# check_err ERR [MSG]: remember the first failure of the current case.
check_err() {
	local err=$1 msg=${2:-}
	if [ "$RET" -eq 0 ] && [ "$err" -ne 0 ]; then
		RET=$err
		retmsg=$msg
	fi
}

# check_fail ERR [MSG]: the case fails if ERR is 0 (the command succeeded).
check_fail() {
	local err=$1 msg=${2:-}
	if [ "$RET" -eq 0 ] && [ "$err" -eq 0 ]; then
		RET=1
		retmsg=$msg
	fi
}

# log_test NAME: report the current case and start a new one.
log_test() {
	local name=$1
	if [ "$RET" -ne 0 ]; then
		EXIT_STATUS=1
		printf "TEST: %-64s [FAIL]\n" "$name"
		[ -n "$retmsg" ] && printf "\t%s\n" "$retmsg"
		echo "not ok - $name${retmsg:+ # $retmsg}" >>"$TB_RESULTS"
	else
		printf "TEST: %-64s [ OK ]\n" "$name"
		echo "ok - $name" >>"$TB_RESULTS"
	fi
	RET=0
	retmsg=
	return 0
}

log_info() {
	echo "INFO: $*"
}

skip() {
	echo "SKIP: $*"
	exit $ksft_skip
}

require_cmd() {
	local c
	for c in "$@"; do
		command -v "$c" >/dev/null || skip "$c is not installed"
	done
}

tb_cleanup() {
	local rc=$?
	tb_down >/dev/null 2>&1 || true
	return $rc
}

# tb_iperf NAME NODE SERVER_NODE [IPERF3 ARGS...]: run one iperf3 client in
# NODE against an iperf3 server started in SERVER_NODE; the JSON goes to
# $TB_OUT/NAME.json.  Use -R for a download (server sends).
tb_iperf() {
	local name=$1 node=$2 srv=$3 port=5201
	shift 3
	tb_bg "iperf-srv-$name" "$srv" iperf3 -s -1 -p $port
	tb_wait_port "$srv" $port || return
	tb_ns "$node" iperf3 -c "$(tb_addr "$srv")" -p $port -J "$@" \
		>"$TB_OUT/$name.json"
	local rc=$?
	tb_bg_stop "iperf-srv-$name"
	return $rc
}

# jq_num FILE FILTER: one number from a JSON file.
jq_num() {
	jq -r "$2" "$1"
}

# tshark_count FILE FILTER: number of packets in FILE matching FILTER.
tshark_count() {
	tshark -n -r "$1" -Y "$2" 2>/dev/null | wc -l
}
