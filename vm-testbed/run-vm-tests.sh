#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Runs inside the guest: every VM test script in vm-testbed/tests/ (or those
# matching the shell glob in $TESTS), one after another, each with its own
# log.  Results go to OUTDIR/results.tap, one line per check:
#   ok - SCRIPT: CHECK | not ok - SCRIPT: CHECK | ok - SCRIPT # SKIP reason
#   run-vm-tests.sh OUTDIR
#   run-vm-tests.sh --list	(on the host too: the runs it would make, one
#				"NAME SCRIPT [VAR=VALUE...]" line each;
#				exit 2 if TESTS matches none)
set -u
shopt -s extglob	# TESTS may be e.g. @(red_ecn|proxy_*)
here=$(cd "$(dirname "$0")" && pwd)
list=0
if [ "${1:-}" = --list ]; then
	list=1
elif [ $# -eq 1 ] && [ -d "$1" ]; then
	outdir=$1
	: >"$outdir/results.tap"
	: >"$outdir/durations.txt"
	mkdir -p "$outdir/tests"
else
	echo "usage: run-vm-tests.sh OUTDIR | run-vm-tests.sh --list" >&2
	exit 2
fi

# Every script runs once as NAME; a script may also ask to run again on a
# variant of the testbed with header lines
#   # tb-variant: VARIANT VAR=VALUE...
# (e.g. "# tb-variant: home TB_ROUTER=home"), as NAME@VARIANT with those
# settings in its environment.  TESTS matches NAME and NAME@VARIANT.
#
# Two suites, so that make test stays well inside CI's time: the core suite
# (make test, make vmtest) and the extended one (make vmtest-extended).  A
# script with the header line "# tb-suite: extended" belongs to the
# extended suite, with the variants it declares with "# tb-variant:"; a
# variant declared with
#   # tb-variant-extended: VARIANT VAR=VALUE...
# is always in the extended suite, one declared with
#   # tb-variant-core: VARIANT VAR=VALUE...
# always in the core suite.
# TB_SUITE selects: core (the default), extended, or all; with TESTS set
# the default is all, so that TESTS names any run.
#
# make test boots two kernels (scripts/run-tests): the core suite is split
# between them, so that each core run is made once, on one of the two.
# A script with the header line "# tb-make-test: second-kernel" runs (its
# core runs) in the second kernel's guest, one with "# tb-make-test:
# both-kernels" in both, any other in the first kernel's.  TB_SUITE
# core-first and core-second select those halves; core is their union.
suite=${TB_SUITE:-}
[ -n "$suite" ] || { [ -n "${TESTS:-}" ] && suite=all || suite=core; }
case $suite in core | core-first | core-second | extended | all) ;;
*) echo "run-vm-tests: TB_SUITE must be core, core-first, core-second, extended or all, not '$suite'" >&2
   exit 2 ;;
esac
runs=()
listed=0
for t in "$here"/tests/*.sh; do
	name=$(basename "$t" .sh)
	s=core
	grep -q '^# tb-suite: extended' "$t" && s=extended
	# which kernel's guest make test runs its core runs in
	k=first
	grep -q '^# tb-make-test: second-kernel$' "$t" && k=second
	grep -q '^# tb-make-test: both-kernels$' "$t" && k=both
	runs+=("$s $k $name $t")
	while read -r kind variant env; do
		vs=$s
		[ "$kind" = tb-variant-extended: ] && vs=extended
		[ "$kind" = tb-variant-core: ] && vs=core
		runs+=("$vs $k $name@$variant $t $env")
	done < <(grep -E '^# tb-variant(-extended|-core)?: ' "$t" | cut -c3-)
done

for r in "${runs[@]}"; do
	read -r s k name t env <<<"$r"
	case $suite in
	all) ;;
	core-first | core-second)
		[ "$s" = core ] || continue
		[ "$k" = both ] || [ "core-$k" = "$suite" ] || continue
		;;
	*) [ "$s" = "$suite" ] || continue ;;
	esac
	# shellcheck disable=SC2053
	[ -n "${TESTS:-}" ] && [[ $name != $TESTS ]] && continue
	if [ $list = 1 ]; then
		echo "$name $t${env:+ $env}"
		listed=1
		continue
	fi
	tdir=$outdir/tests/$name
	mkdir -p "$tdir"
	: >"$tdir/results"
	echo "# ---- $name${env:+ ($env)}"
	start=$SECONDS
	# shellcheck disable=SC2086
	(cd "$tdir" && env $env TB_RESULTS="$tdir/results" TB_OUT="$tdir" \
		TB_STATE="/tmp/tb-state-$name" timeout -k 5 "${TEST_TIMEOUT:-1800}" \
		bash "$t") 2>&1 | tee "$tdir/log"
	rc=${PIPESTATUS[0]}
	echo "# $name: exit $rc after $((SECONDS - start)) s"
	echo "$name $((SECONDS - start)) $rc" >>"$outdir/durations.txt"
	if [ "$rc" -eq 4 ]; then
		reason=$(grep -m1 '^SKIP:' "$tdir/log" | cut -c7-)
		echo "ok - $name # SKIP ${reason:-skipped}" >>"$outdir/results.tap"
		continue
	fi
	sed "s/^\(\(not \)\{0,1\}ok\) - /\1 - $name: /" "$tdir/results" \
		>>"$outdir/results.tap"
	# A script that failed outside any check still fails.
	if [ "$rc" -ne 0 ] && ! grep -q '^not ok' "$tdir/results"; then
		echo "not ok - $name: script exited with $rc" >>"$outdir/results.tap"
	fi
	if [ ! -s "$tdir/results" ] && [ "$rc" -eq 0 ]; then
		echo "not ok - $name: ran no check" >>"$outdir/results.tap"
	fi
done
[ $list = 0 ] || [ $listed = 1 ] || {
	echo "run-vm-tests: no test in the $suite suite matches TESTS='${TESTS:-}'" >&2
	exit 2
}
exit 0
