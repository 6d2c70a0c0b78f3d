# SPDX-License-Identifier: GPL-2.0
#
# Sourced by the userspace microbenchmarks of this directory
# (strip-bench.sh, fsm-bench.sh): building one benchmark program against
# this tree and against an older revision's kmod/, and counting the
# instructions of one of its functions with callgrind.  The caller sets
# here (this directory), BENCH (the program, $BENCH.c here), BENCH_MOD
# (the kmod/ subdirectory whose sources it includes) and BENCH_OUT (its
# build directory under $BUILD).
top=$(cd "$here/../../.." && pwd)
out=${BUILD:-$top/build}/$BENCH_OUT
mkdir -p "$out/head" "$out/base"
command -v valgrind >/dev/null || { echo "$BENCH: needs valgrind" >&2; exit 1; }

# bench_build DIR ROOT: $BENCH.c against ROOT's kmod/ sources, into DIR
bench_build() {
	cc -std=gnu11 -O2 -Wall -Wextra -I "$2/kmod/core" -I "$2/kmod/$BENCH_MOD" \
		-I "$2/kmod/tests/unit" -o "$1/$BENCH" "$here/$BENCH.c"
}

# bench_ir FUNC BIN ARGS...: instructions executed in FUNC
bench_ir() {
	local fn=$1

	shift
	valgrind --tool=callgrind --callgrind-out-file="$out/callgrind.out" \
		--collect-atstart=no --toggle-collect="$fn" "$@" >/dev/null 2>&1
	awk '/^(summary|totals):/ { print $2; exit }' "$out/callgrind.out"
}

# bench_prepare BASE_REV: both builds; have_base=1 if BASE_REV's built
bench_prepare() {
	bench_build "$out/head" "$top"
	have_base=0
	rm -rf "${out:?}/base"/*
	if git -C "$top" archive "$1" kmod 2>/dev/null | tar -x -C "$out/base" 2>/dev/null &&
		bench_build "$out/base" "$out/base" 2>/dev/null; then
		have_base=1
	fi
}
