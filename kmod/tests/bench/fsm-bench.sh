#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Instructions per segment (valgrind --tool=callgrind, deterministic) of
# the ECN proxy's state machine on a proxied flow in its steady state
# (bench_fsm.c says what is and is not counted): N's data segments and
# E's pure ACKs; with BASE_REV (default main) also the same code of that
# revision, for the change.  A benchmark, not a test.  Run from anywhere:
#
#   kmod/tests/bench/fsm-bench.sh [BASE_REV]
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
BENCH=bench_fsm BENCH_MOD=ecn_proxy BENCH_OUT=bench-fsm
. "$here/bench-lib.sh"
base=${1:-main}
n=3000

# ir BIN KIND: instructions in step_KIND()
ir() {
	bench_ir "step_$2" "$1" "$2" $n
}

bench_prepare "$base"

printf '# instructions per segment, %d of E and %d of N, %s\n' $n $((2 * n)) "$(cc --version | head -n 1)"
printf '%-8s %8s' segment head
[ $have_base = 1 ] && printf ' %8s %8s' "$base" "head/$base"
printf '\n'
for k in n e; do
	"$out/head/bench_fsm" $k 1 || exit 1
	h=$(ir "$out/head/bench_fsm" $k)
	# two of N's segments to one of E's
	steps=$n
	[ $k = n ] && steps=$((2 * n))
	line=$(awk -v h="$h" -v n=$steps -v k=$k 'BEGIN {
		printf "%-8s %8.1f", k == "n" ? "N data" : "E ACK", h / n }')
	if [ $have_base = 1 ]; then
		b=$(ir "$out/base/bench_fsm" $k)
		line+=$(awk -v h="$h" -v b="$b" -v n=$steps 'BEGIN {
			printf " %8.1f %8.2f", b / n, h / b }')
	fi
	echo "$line"
done
