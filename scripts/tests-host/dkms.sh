#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Host test (scripts/run-tests): install ecnproxy through Debian's dkms
# against the installed headers of the guest kernel KVER (scripts/kver.sh),
# as `make dkms-install` does, check where the modules landed and what
# depmod recorded, then remove it (`make dkms-remove`) and check that
# nothing is left.  No module is loaded: the host cannot load modules for
# KVER, modinfo and modprobe --show-depends read /lib/modules/KVER.
#
# Prints "ok - X" / "not ok - X" / "# ..." lines.  Skipped when not root
# or when an ecnproxy is already installed through DKMS (the test would
# replace it); `make dkms-remove` first.
set -uo pipefail

top=$(cd "$(dirname "$0")/../.." && pwd)
build=${BUILD:-$top/build}
kver=${KVER:-$("$top/scripts/kver.sh")}
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
if [ -z "$kver" ] || [ ! -d "/lib/modules/$kver/build" ]; then
	notok "dkms install and remove: no kernel headers for KVER='$kver'"
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

dest=/lib/modules/$kver/updates/dkms
ver=$("$top/scripts/dkms" version)
echo "# ecnproxy/$ver for $kver; log: $log"

t0=$SECONDS
installed=1
check "make dkms-install: dkms add, build and install ecnproxy/$ver for $kver" \
	"$top/scripts/dkms" install "$kver"
echo "# install took $((SECONDS - t0)) s"
check "dkms status: ecnproxy/$ver installed for $kver" \
	grep -q "^ecnproxy/$ver, $kver, [^:]*: installed" <(dkms status -m ecnproxy)

for m in "${mods[@]}"; do
	f=$(modinfo -k "$kver" -F filename "$m" 2>>"$log")
	if [ "$f" = "$dest/$m.ko" ]; then
		ok "modinfo -k $kver $m: $dest/$m.ko"
	else
		notok "modinfo -k $kver $m: '$f', not $dest/$m.ko"
	fi
	v=$(modinfo -k "$kver" -F vermagic "$m" 2>>"$log")
	check "$m.ko: vermagic of $kver ('$v')" test "${v%% *}" = "$kver"
done
check "klogtest (test-only) is not installed" \
	test ! -e "$dest/klogtest.ko" -a -z "$(modinfo -k "$kver" -F filename klogtest 2>/dev/null)"

# depmod's record of the dependencies (modules.dep), and what modprobe does
# with it: tcpfwd first
for m in ecn_proxy impair; do
	check "depmod: modules.dep has $m depending on tcpfwd" \
		grep -qx "updates/dkms/$m.ko: updates/dkms/tcpfwd.ko" "/lib/modules/$kver/modules.dep"
done
deps=$(modprobe -S "$kver" --show-depends ecn_proxy 2>>"$log" | awk '{print $2}' | tr '\n' ' ')
check "modprobe ecn_proxy loads $dest/tcpfwd.ko, then ecn_proxy.ko ($deps)" \
	test "$deps" = "$dest/tcpfwd.ko $dest/ecn_proxy.ko "

check "make dkms-install again: replaces the installed copy" \
	"$top/scripts/dkms" install "$kver"
check "dkms status: one ecnproxy entry after two installs" \
	test "$(dkms status -m ecnproxy | wc -l)" -eq 1

check "make dkms-remove" "$top/scripts/dkms" remove
installed=0
check "dkms status: no ecnproxy left" test -z "$(dkms status -m ecnproxy)"
check "no /usr/src/ecnproxy-* left" eval '! compgen -G "/usr/src/ecnproxy-*"'
for m in "${mods[@]}"; do
	check "$m: gone from $dest and from modinfo -k $kver" \
		test ! -e "$dest/$m.ko" -a -z "$(modinfo -k "$kver" -F filename "$m" 2>/dev/null)"
done
check "depmod: modules.dep no longer names ecn_proxy, impair or tcpfwd" \
	eval "! grep -E '(ecn_proxy|impair|tcpfwd)\.ko' /lib/modules/$kver/modules.dep"
if out=$("$top/scripts/dkms" remove 2>&1); then
	ok "make dkms-remove again: exit 0 ($out)"
else
	notok "make dkms-remove again: exit $? ($out)"
fi
exit 0
