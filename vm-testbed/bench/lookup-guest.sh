#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Guest side of scripts/bench-lookup: the cost of one flow-table lookup at
# each table size, timed inside the kernel (kmod/selftest/flowbench.c,
# through tcpfwd.ko's own insert and lookup) rather than from the guest's
# forwarding rate, which cannot resolve tens of nanoseconds
# (results/bench-flows-20261126).  No topology: the module fills its own
# table.  Its log lines go to $TB_OUT/raw.txt, the guest's memory before
# and after to $TB_OUT/meminfo.txt.
set -e
. "$(dirname "$0")/../lib/testlib.sh"
# flowbench.ko's bounds (kmod/selftest/flowbench.c)
tb_knob_ints sizes TB_BENCH_LEVELS "1000 100000 1000000" 1 1048576 4
tb_knob_int rounds TB_BENCH_REPS 5 1 100
tb_knob_int lookups TB_BENCH_LOOKUPS 100000 1000 10000000
tb_knob_int hot TB_BENCH_HOT 1000 1 1048576
[ -d /sys/module/tcpfwd ] || insmod "$TB_KMOD/core/tcpfwd.ko"
grep -E '^(MemTotal|MemFree|Slab):' /proc/meminfo >"$TB_OUT/meminfo.txt"
dmesg -C
insmod "$TB_KMOD/selftest/flowbench.ko" sizes="${sizes// /,}" \
	rounds="$rounds" lookups="$lookups" hot="$hot"
dmesg | sed -n 's/.*flowbench: //p' >"$TB_OUT/raw.txt"
rmmod flowbench
rmmod tcpfwd
grep -qx 'done' "$TB_OUT/raw.txt" || { echo "flowbench did not finish" >&2; exit 1; }
echo "lookup-guest: $(grep -c '^size=' "$TB_OUT/raw.txt") rounds"
