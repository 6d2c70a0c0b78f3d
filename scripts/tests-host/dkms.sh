#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Host test (scripts/run-tests): install ecnproxy through Debian's dkms
# against the installed headers of each supported kernel (scripts/kver.sh
# --supported: 6.12 and 6.1, when installed) and of KVER if it is another
# one, or of DKMS_KVERS (a list) alone, as `make dkms-install` does; check
# where the modules landed and what depmod recorded, then remove it (`make
# dkms-remove`) and check that nothing is left.  No module is loaded: the
# host cannot load modules for KVER, modinfo and modprobe --show-depends
# read /lib/modules/KVER.  A kernel whose modules are compressed (Debian's
# 6.12: .ko.xz) gets them compressed from dkms too.
#
# Prints "ok - X" / "not ok - X" / "# ..." lines.  Skipped when not root
# or when an ecnproxy is already installed through DKMS (the test would
# replace it); `make dkms-remove` first.
set -uo pipefail

top=$(cd "$(dirname "$0")/../.." && pwd)
build=${BUILD:-$top/build}
if [ -n "${DKMS_KVERS:-}" ]; then
	kvers=$DKMS_KVERS
else
	kvers=$("$top/scripts/kver.sh" --supported | tr '\n' ' ')
	[ -z "${KVER:-}" ] || [[ " $kvers " == *" $KVER "* ]] || kvers+=" $KVER"
fi
mods=(tcpfwd ecn_proxy impair)
log=$build/host/dkms.log
mkdir -p "$build/host"
: >"$log"

ok() { echo "ok - $*"; }
notok() { echo "not ok - $*"; }
check() { # check DESCRIPTION CMD...: ok if CMD succeeds
	local d=$1
	shift
	if "$@" >>"$log" 2>&1; then ok "$d"; else notok "$d"; fi
}

if [ "$(id -u)" -ne 0 ]; then
	ok "dkms install and remove # SKIP needs root"
	exit 0
fi
if ! command -v dkms >/dev/null; then
	notok "dkms install and remove: no dkms command (make deps installs Debian's dkms)"
	exit 0
fi
if [ -z "${kvers// /}" ]; then
	notok "dkms install and remove: no supported kernel with headers (make deps)"
	exit 0
fi

# one DKMS test at a time on this machine
mkdir -p /run/lock
exec 9>/run/lock/ecnproxy-dkms-test.lock
flock -w 600 9 || { notok "dkms: /run/lock/ecnproxy-dkms-test.lock busy for 10 min"; exit 0; }

if [ -n "$(dkms status -m ecnproxy 2>/dev/null)" ] || compgen -G '/usr/src/ecnproxy-*' >/dev/null; then
	ok "dkms install and remove # SKIP ecnproxy is already installed through DKMS ($(dkms status -m ecnproxy | head -n 1)); make dkms-remove first"
	exit 0
fi

installed=0
cleanup() { [ $installed = 0 ] || "$top/scripts/dkms" remove >>"$log" 2>&1; }
trap cleanup EXIT

# test_kver KVER: install, check and remove for one kernel
test_kver() {
	local kver=$1 dest ver t0 m f v deps out ext=.ko

	if [ ! -d "/lib/modules/$kver/build" ]; then
		notok "dkms install and remove: no kernel headers for '$kver'"
		return
	fi
	# compressed as the kernel's own modules are (Debian's 6.12: xz), by
	# dkms's rule: what modules.dep names
	for f in xz zst gz; do
		grep -q "\.ko\.$f:" "/lib/modules/$kver/modules.dep" 2>/dev/null && ext=.ko.$f
	done
	dest=/lib/modules/$kver/updates/dkms
	ver=$("$top/scripts/dkms" version)
	echo "# ecnproxy/$ver for $kver; log: $log"

	t0=$SECONDS
	installed=1
	check "make dkms-install: dkms add, build and install ecnproxy/$ver for $kver" \
		"$top/scripts/dkms" install "$kver"
	echo "# install took $((SECONDS - t0)) s"
	check "dkms status: ecnproxy/$ver installed for $kver" \
		grep -q "^ecnproxy/$ver, $kver, [^:]*: installed" <(dkms status -m ecnproxy 2>>"$log")

	for m in "${mods[@]}"; do
		f=$(modinfo -k "$kver" -F filename "$m" 2>>"$log")
		if [ "$f" = "$dest/$m$ext" ]; then
			ok "modinfo -k $kver $m: $dest/$m$ext"
		else
			notok "modinfo -k $kver $m: '$f', not $dest/$m$ext"
		fi
		v=$(modinfo -k "$kver" -F vermagic "$m" 2>>"$log")
		check "$m$ext: vermagic of $kver ('$v')" test "${v%% *}" = "$kver"
	done
	check "klogtest (test-only) is not installed" \
		test ! -e "$dest/klogtest$ext" -a -z "$(modinfo -k "$kver" -F filename klogtest 2>/dev/null)"

	# depmod's record of the dependencies (modules.dep), and what modprobe does
	# with it: tcpfwd first
	for m in ecn_proxy impair; do
		check "depmod: modules.dep has $m depending on tcpfwd" \
			grep -qx "updates/dkms/$m$ext: updates/dkms/tcpfwd$ext" "/lib/modules/$kver/modules.dep"
	done
	deps=$(modprobe -S "$kver" --show-depends ecn_proxy 2>>"$log" | awk '{print $2}' | tr '\n' ' ')
	check "modprobe ecn_proxy loads $dest/tcpfwd$ext, then ecn_proxy$ext ($deps)" \
		test "$deps" = "$dest/tcpfwd$ext $dest/ecn_proxy$ext "

	check "make dkms-install again: replaces the installed copy" \
		"$top/scripts/dkms" install "$kver"
	check "dkms status: one ecnproxy entry after two installs" \
		test "$(dkms status -m ecnproxy 2>>"$log" | wc -l)" -eq 1

	check "make dkms-remove" "$top/scripts/dkms" remove
	installed=0
	check "dkms status: no ecnproxy left" test -z "$(dkms status -m ecnproxy 2>>"$log")"
	check "no /usr/src/ecnproxy-* left" eval '! compgen -G "/usr/src/ecnproxy-*"'
	for m in "${mods[@]}"; do
		check "$m: gone from $dest and from modinfo -k $kver" \
			test ! -e "$dest/$m$ext" -a -z "$(modinfo -k "$kver" -F filename "$m" 2>/dev/null)"
	done
	check "depmod: modules.dep no longer names ecn_proxy, impair or tcpfwd" \
		eval "! grep -E '(ecn_proxy|impair|tcpfwd)\.ko' /lib/modules/$kver/modules.dep"
	if out=$("$top/scripts/dkms" remove 2>&1); then
		ok "make dkms-remove again: exit 0 ($out)"
	else
		notok "make dkms-remove again: exit $? ($out)"
	fi
}

for k in $kvers; do
	test_kver "$k"
done
exit 0
