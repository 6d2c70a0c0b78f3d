#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# /proc/net/impair/rules: adding, listing with hit counters, writing a
# listing back, atomic replacement, rejection of invalid lines (EINVAL,
# nothing applied, the kernel log names line and token), per-namespace rule
# sets, the write size limit; bounded module parameters; rules replaced
# under traffic.
#
#   client -- PROXY (impair.ko rules) -- router -- server
# tb-make-test: second-kernel
# tb-variant-extended: home TB_ROUTER=home
set -e
. "$(dirname "$0")/../lib/testlib.sh"
. "$TB_LIB_DIR/impair_lib.sh"
trap tb_cleanup EXIT
require_cmd jq python3

impair_up
set +e

rules_only() { impair_list | grep -v '^flush$' | sed 's/ # hits [0-9]*$//'; }

RET=0
[ "$(impair_list)" = flush ] || check_err 1 "a new namespace has rules: $(impair_list)"
[ "$(impair_stat rules)" = 0 ] || check_err 1 "stats: rules != 0"
log_test "a new namespace starts with no rules"

RET=0
impair_write "flags syn strip sackok\n" || check_err 1 "valid rule rejected"
impair_write "dport 5001 seqrand sack-fix # a comment\n\n" || check_err 1 "second rule rejected"
want=$'flags syn strip sackok mode nop\ndport 5001 seqrand sack-fix'
[ "$(rules_only)" = "$want" ] || check_err 1 "listing: $(impair_list)"
impair_list | grep -v '^flush$' | grep -qv ' # hits 0$' && check_err 1 "hits not 0"
log_test "each write adds its rules; listing in canonical syntax with hits"

RET=0
before=$(impair_list)
dmesg -C
impair_write "ecn-bleach\nwscale 15\nwindow 10\n"
rc=$?
[ $rc -ne 0 ] || check_err 1 "invalid write accepted"
[ "$(impair_list)" = "$before" ] || check_err 1 "invalid write changed the rules"
dmesg | grep -q "impair: rules: line 2 rejected: number out of range: '15'" ||
	check_err 1 "kernel log: $(dmesg | tail -n 2)"
# the exact errno: EINVAL
err=$(tb_ns proxy python3 -c '
import errno, os
fd = os.open("/proc/net/impair/rules", os.O_WRONLY)
try:
    os.write(fd, b"strip nothing\n")
except OSError as e:
    print(errno.errorcode[e.errno])
')
[ "$err" = EINVAL ] || check_err 1 "errno $err, expected EINVAL"
dmesg | grep -q "line 1 rejected: unknown option name: 'nothing'" ||
	check_err 1 "kernel log does not name the token"
# the token is the user's: control bytes reach the log escaped
dmesg -C
impair_write "strip \\033[2Jx\n" && check_err 1 "invalid write accepted"
dmesg | grep -qF "unknown option name: '\\e[2Jx'" ||
	check_err 1 "control byte not escaped: $(dmesg | tail -n 1 | od -c | head -n 2)"
# ratelimited: 100 bad writes, a burst (10) of lines per 5 s at most
dmesg -C
t0=$SECONDS
tb_ns proxy sh -c 'for i in $(seq 100); do
	echo "window 99999999" >/proc/net/impair/rules; done' 2>/dev/null
n=$(dmesg | grep -c "impair: rules: line 1 rejected")
max=$((10 * (1 + (SECONDS - t0) / 5)))
[ "$n" -le "$max" ] || check_err 1 "$n log lines for 100 bad writes (at most $max)"
sleep 6		# a new ratelimit interval (5 s) for the checks below
log_test "an invalid line fails the write with EINVAL, nothing applied, logged (ratelimited, escaped)"

RET=0
impair_write "flush\ndir responder flags synack wscale 2\necn-set ce only-ect\ndrop 1%\n" ||
	check_err 1 "replacement rejected"
want=$'dir responder flags synack wscale 2\necn-set ce only-ect\ndrop 0.01'
[ "$(rules_only)" = "$want" ] || check_err 1 "after flush+rules: $(impair_list)"
saved=$(impair_list)
impair_write "$saved\n" || check_err 1 "writing the listing back failed"
[ "$(impair_list)" = "$saved" ] || check_err 1 "listing written back differs: $(impair_list)"
[ "$(impair_stat rules)" = 3 ] || check_err 1 "stats rules = $(impair_stat rules)"
log_test "a file starting with flush replaces the set; a listing writes back as is"

RET=0
# 256 rules fit, the 257th does not (and nothing of that write applies)
big=flush
for i in $(seq 256); do big+="\\ndport $i ecn-block"; done
impair_write "$big\n" || check_err 1 "256 rules rejected"
[ "$(impair_stat rules)" = 256 ] || check_err 1 "rules = $(impair_stat rules)"
impair_write "ecn-bleach\n" && check_err 1 "rule 257 accepted"
dmesg | grep -q "too many rules" || check_err 1 "no 'too many rules' in the log"
huge=$(head -c 70000 /dev/zero | tr '\0' '#')
impair_write "$huge\n" && check_err 1 "a 70 kB write was accepted"
[ "$(impair_stat rules)" = 256 ] || check_err 1 "rules changed"
impair_write "flush\n" || check_err 1 "flush failed"
[ "$(impair_list)" = flush ] || check_err 1 "flush left: $(impair_list)"
log_test "limits: 256 rules, 64 KiB per write; flush empties the set"

RET=0
# module parameters: bounded, a bad value rejected whole and logged
par=/sys/module/impair/parameters
dmesg -C
for bad in "max_flows 0" "max_flows 1048577" "max_flows -1" "max_flows 12x" \
	"flow_timeout 0" "flow_timeout 86401" "flow_timeout 4294968"; do
	set -- $bad
	old=$(cat "$par/$1")
	echo "$2" 2>/dev/null >"$par/$1" && check_err 1 "$1=$2 accepted"
	[ "$(cat "$par/$1")" = "$old" ] || check_err 1 "$1 changed to $(cat "$par/$1") by $2"
done
dmesg | grep -q "impair: parameter flow_timeout rejected: must be 1..86400" ||
	check_err 1 "kernel log: $(dmesg | tail -n 1)"
old=$(cat "$par/flow_timeout")
echo 86400 >"$par/flow_timeout" || check_err 1 "flow_timeout 86400 rejected"
echo "$old" >"$par/flow_timeout"
old=$(cat "$par/max_flows")
echo 1048576 >"$par/max_flows" || check_err 1 "max_flows 2^20 rejected"
echo "$old" >"$par/max_flows"
log_test "module parameters bounded: max_flows 1..2^20, flow_timeout 1..86400 s"

RET=0
IMPAIR_NODE=router impair_write "ecn-block\n" || check_err 1 "router write failed"
[ "$(impair_list)" = flush ] || check_err 1 "router's rule visible in proxy"
[ "$(IMPAIR_NODE=router impair_list | grep -c ecn-block)" = 1 ] ||
	check_err 1 "router's rule missing"
IMPAIR_NODE=router impair_write "flush\n"
log_test "rule sets are per network namespace"

RET=0
# replace rules continuously while a transfer crosses the proxy
tb_bg churn proxy bash -c 'while :; do
	printf "flush\nflags syn strip sackok\nwindow 60000 dir responder\necn-bleach\n" >/tmp/r1
	printf "flush\nafter 3 strip timestamp mode compact\nmss-clamp 1400\n" >/tmp/r2
	cat /tmp/r1 >/proc/net/impair/rules; cat /tmp/r2 >/proc/net/impair/rules
done'
impair_xfer churn 4 100000 400000 || check_err 1 "transfer under rule churn not byte-exact"
tb_bg_stop churn
impair_write "flush\n"
log_test "rules replaced continuously under traffic: byte-exact transfer"

exit $EXIT_STATUS
