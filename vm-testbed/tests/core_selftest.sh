#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# In-kernel checks of tcpfwd.ko's skb plumbing that the userspace unit
# tests cannot reach: kmod/selftest/tcpfwd_selftest.c runs them when it is
# loaded and refuses to load unless every one passes.  Today: the verdicts
# of tcpfwd_gso_each() (issue 11, L6: a segment a verdict stole was freed
# under it; each check counts the references left on every segment and on
# the GSO packet), and tcpfwd_net_init()'s refusal of a user module whose
# counters for the core are out of range.  Under make debugtest the same
# checks run with KASAN.
# No topology.
# tb-make-test: both-kernels
set -e
. "$(dirname "$0")/../lib/testlib.sh"
require_cmd dmesg

[ -d /sys/module/tcpfwd ] || insmod "$TB_KMOD/core/tcpfwd.ko"
mark=$(dmesg | wc -l)
RET=0
insmod "$TB_KMOD/selftest/tcpfwd_selftest.ko" || check_err 1 "tcpfwd_selftest refused to load"
dmesg | tail -n +"$((mark + 1))" | grep tcpfwd_selftest | sed 's/^/# /' || true
dmesg | tail -n +"$((mark + 1))" | grep -q 'tcpfwd_selftest: all checks passed' ||
	check_err 1 "no 'all checks passed' in the kernel log"
log_test "tcpfwd_gso_each: accepted segments sent on, stolen ones left to the verdict, others freed, the GSO packet consumed; tcpfwd_net_init: a counter out of range refused"
RET=0
dmesg | tail -n +"$((mark + 1))" |
	grep -q 'tcpfwd: tcpfwd_selftest: ops->stat_gso_unsegmented is 2: neither below nr_stats (2) nor TCPFWD_NO_STAT' ||
	check_err 1 "no message for the refused counter in the kernel log"
log_test "tcpfwd_net_init: the refusal names the counter"
[ ! -d /sys/module/tcpfwd_selftest ] || rmmod tcpfwd_selftest
exit $EXIT_STATUS
