#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Instructions per packet (valgrind --tool=callgrind, deterministic) of the
# pure part of impair's "strip timestamp" rule against a model of
# xt_TCPOPTSTRIP (see bench_strip.c for what is and is not counted), for
# four kinds of segment, as a ratio impair / xt; with BASE_REV (default
# main) also the same code of that revision, for the change.  A benchmark,
# not a test.  Run from anywhere:
#
#   kmod/tests/bench/strip-bench.sh [BASE_REV]
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
BENCH=bench_strip BENCH_MOD=impair BENCH_OUT=bench
. "$here/bench-lib.sh"
base=${1:-main}
n=20000

# ir BIN VARIANT PACKET: instructions in bench_run()
ir() {
	bench_ir bench_run "$1" "$2" "$3" $n
}

bench_prepare "$base"

printf '# instructions per packet, %d packets, %s\n' $n "$(cc --version | head -n 1)"
printf '%-6s %8s %8s %8s %8s' packet xt impair ratio ""
[ $have_base = 1 ] && printf ' %8s %8s' "$base" ratio
printf '\n'
for p in data sack syn none; do
	"$out/head/bench_strip" check $p 1 || exit 1
	c=$(ir "$out/head/bench_strip" copy $p)
	x=$(ir "$out/head/bench_strip" xt $p)
	i=$(ir "$out/head/bench_strip" impair $p)
	line=$(awk -v c="$c" -v x="$x" -v i="$i" -v n=$n -v p=$p 'BEGIN {
		printf "%-6s %8.1f %8.1f %8.2f %8s", p, (x - c) / n, (i - c) / n,
			(i - c) / (x - c), "" }')
	if [ $have_base = 1 ]; then
		cb=$(ir "$out/base/bench_strip" copy $p)
		ib=$(ir "$out/base/bench_strip" impair $p)
		line+=$(awk -v c="$cb" -v x="$x" -v xc="$c" -v i="$ib" -v n=$n 'BEGIN {
			printf " %8.1f %8.2f", (i - c) / n, (i - c) / (x - xc) }')
	fi
	echo "$line"
done
echo "# ratio: impair / xt (below 1: impair cheaper)"
