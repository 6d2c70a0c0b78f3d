#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Runs inside the guest (started by vm-run): prepares the guest, runs the
# script with OUTDIR as working directory, then saves the script's exit code
# and the kernel log into OUTDIR.  Its own exit code is the script's.
#   guest-init.sh OUTDIR SCRIPT [ARGS...]
#
# On a kernel with kmemleak (the debug kernel of make debugtest; or always
# with TB_KMEMLEAK=1, never with TB_KMEMLEAK=0) it also runs the end-of-guest
# checks: before the script a scan whose reports (boot-time objects) are
# cleared; after it a scan, the unloading of our modules, and a scan again.
# Every report goes to OUTDIR/kmemleak.txt, every step to
# OUTDIR/endcheck.log, and each failure (a leak, a module that does not
# unload, kmemleak unavailable) to a line of OUTDIR/endcheck-failed, which
# fails the run in vm-run.
outdir=$1
script=$2
shift 2

kmemleak=/sys/kernel/debug/kmemleak
endcheck_fail() {
	echo "$*" >>"$outdir/endcheck-failed"
	echo "endcheck: FAIL: $*"
}

# kmemleak_scan: print the objects kmemleak reports.  A scan reports an
# object only if it is older than 5 s and unreferenced; a second scan after
# a pause and, if anything is left, a third one drop the objects that were
# only in flight (the procedure of syzkaller's leak checker).
kmemleak_scan() {
	local i
	for i in 1 2 3; do
		echo scan >"$kmemleak" || return
		[ $i -eq 3 ] && break
		[ $i -eq 1 ] || [ -s "$kmemleak" ] || break
		sleep 6
	done
	cat "$kmemleak"
}

# kmemleak_report WHEN: a scan; any report fails the run.
kmemleak_report() {
	local r
	[ -e "$kmemleak" ] || return 0	# endcheck_start said so
	r=$(kmemleak_scan) || { endcheck_fail "kmemleak scan failed ($1)"; return; }
	echo "endcheck: kmemleak scan $1: $(grep -c '^unreferenced object' <<<"$r") reports"
	[ -z "$r" ] && return
	printf '### kmemleak %s\n%s\n' "$1" "$r" >>"$outdir/kmemleak.txt"
	endcheck_fail "kmemleak reports $(grep -c '^unreferenced object' <<<"$r") objects $1 (kmemleak.txt)"
}

# endcheck_start: the baseline, before the script.
endcheck_start() {
	[ "${TB_KMEMLEAK:-auto}" != 0 ] || return 1
	mountpoint -q /sys/kernel/debug || mount -t debugfs debugfs /sys/kernel/debug 2>/dev/null
	[ "${TB_KMEMLEAK:-auto}" = 1 ] || [ -e "$kmemleak" ] || return 1
	if [ ! -e "$kmemleak" ] || ! echo scan >"$kmemleak"; then
		endcheck_fail "kmemleak is not available (CONFIG_DEBUG_KMEMLEAK, kmemleak=on, disabled after an error?)"
		return 0
	fi
	sleep 6
	echo scan >"$kmemleak"
	echo "endcheck: baseline: $(grep -c '^unreferenced object' "$kmemleak") boot-time reports cleared"
	echo clear >"$kmemleak"
	return 0
}

# endcheck_end: after the script: scan, unload our modules, scan again.
endcheck_end() {
	local m
	kmemleak_report "before unloading the modules"
	for m in impair ecn_proxy klogtest flowbench tcpfwd; do
		[ -d /sys/module/$m ] || continue
		if rmmod $m; then
			echo "endcheck: rmmod $m"
		else
			endcheck_fail "rmmod $m failed"
		fi
	done
	kmemleak_report "after unloading the modules"
}

# Modules from the host's /lib/modules (read-only root) load as usual; a
# writable /var/run/netns comes from the tmpfs on /run.
mkdir -p /run/netns /tmp
sysctl -qw kernel.panic_on_warn=0 kernel.printk="7 4 1 7" 2>/dev/null
cd "$outdir" || exit 126

# What the guest booted, which the console log may cut short: the kernel,
# its command line (without virtme-ng's base64 script) and the paging mode
# (make debugtest's no5lvl: 4-level; LA57 in the flags means 5-level).
{
	echo "kernel: $(uname -r)"
	echo "cmdline: $(sed 's/virtme\.exec=`[^`]*` *//' /proc/cmdline)"
	if grep -qw la57 /proc/cpuinfo; then
		echo "paging: 5-level"
	else
		echo "paging: 4-level"
	fi
} >"$outdir/guest.txt" 2>/dev/null || {
	# vm-run takes a guest without guest.txt for one that died booting
	echo "guest-init: cannot write $outdir/guest.txt" >&2
	exit 126
}

# Receive timestamps stay on for the guest's life (TB_NETSTAMP_HOLD=0: they
# do not).  Each capture turns them on and, when it ends, off; each time
# the kernel rewrites the static branches on netstamp_needed_key
# (netif_rx_internal(), __netif_receive_skb_core()), and a 6.12 guest under
# TCG then dies on one of their int3s within seconds, none of our modules
# loaded (vm-testbed/diag/textpoke.sh; docs/findings.md, "6.12 under TCG").
# One socket that asks for them keeps the branches as they are.
netstamp_pid=
if [ "${TB_NETSTAMP_HOLD:-1}" = 1 ]; then
	python3 -c 'import signal, socket
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.setsockopt(socket.SOL_SOCKET, 29, 1)  # SO_TIMESTAMP
signal.pause()' &
	netstamp_pid=$!
	echo "netstamp: held" >>"$outdir/guest.txt"
fi

endcheck=0
if log=$(endcheck_start 2>&1); then
	endcheck=1
	printf '%s\n' "$log" | tee "$outdir/endcheck.log"
fi

# Script output goes to stdout only; stderr carries the kernel console.
bash "$script" "$@" 2>&1
rc=$?
[ -z "$netstamp_pid" ] || kill "$netstamp_pid" 2>/dev/null
[ $endcheck = 0 ] || endcheck_end 2>&1 | tee -a "$outdir/endcheck.log"
dmesg >"$outdir/dmesg.txt" 2>&1
echo "$rc" >"$outdir/exit-code"
sync
exit "$rc"
