#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# The kernel ecnproxy builds for and the guest boots (KVER).
#
#   scripts/kver.sh              the default kernel: series 6.1
#   scripts/kver.sh SERIES       that series' kernel, e.g. 6.12
#   scripts/kver.sh --supported  every supported series' kernel that is
#                                installed, one a line, the default last
#
# A series' kernel is its newest installed kernel that has both an image in
# /boot and headers in /lib/modules/VERSION/build (6.1: 6.1.0-57-amd64;
# 6.12: 6.12.117+deb12-amd64).  Prints nothing for a series with none.
# The default is a fixed series, not the newest kernel: make deps installs
# 6.12 beside 6.1, and KVER must not move to it unless asked (KVER=6.12 or
# KVER=6.12.117+deb12-amd64).
default=6.1
supported="6.12 $default"

newest() {
	for b in /lib/modules/*/build; do
		[ -d "$b" ] || continue
		v=$(basename "$(dirname "$b")")
		# 6.1 is 6.1.0-57-amd64, 6.1.192, never 6.12.x
		case $v in "$1".* | "$1"-* | "$1"+*) ;; *) continue ;; esac
		[ -e "/boot/vmlinuz-$v" ] && echo "$v"
	done | sort -V | tail -n 1
}

case ${1:-$default} in
--supported)
	for s in $supported; do
		newest "$s"
	done
	;;
[0-9]*.[0-9]*)
	newest "${1:-$default}"
	;;
*)
	sed -n '6,9p' "$0" | sed 's/^# \{0,1\}//' >&2
	exit 2
	;;
esac
