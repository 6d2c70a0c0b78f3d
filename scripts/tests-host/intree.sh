#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Host test (scripts/run-tests): the in-tree patch series kernel-patches/.
#   1. it is what scripts/gen-kernel-patches makes from kmod/ today;
#   2. `git am` applies it to net/netfilter/ of Debian's linux-source-S,
#      S being KVER's major.minor (KVER: scripts/kver.sh, 6.1 unless
#      KVER says otherwise, e.g. KVER=6.12); the patches are made against
#      6.1 and go into 6.12 as they are (scripts/gen-kernel-patches);
#   3. `patch -p1` applies it to a full linux-source-S tree, kept in a
#      cache outside the checkout ($ECNPROXY_CACHE/intree, default
#      /var/cache/ecnproxy/intree, ~/.cache/ecnproxy/intree when not
#      root): extracted once per linux-source-S version, and only the
#      files the series touches are reset before each run;
#   4. `make olddefconfig` from Debian's config of the guest kernel
#      (/boot/config-$KVER) with the series' options set to m keeps them m;
#   5. `make modules_prepare` (incremental after the first run);
#   6. `make W=1 M=net/netfilter/tcpfwd` builds exactly the series'
#      modules with no warning.  modules_prepare makes no vmlinux, so
#      modpost has no symbol table of the kernel.  For an in-tree target
#      (`make net/netfilter/tcpfwd/ecn_proxy.ko`) scripts/Makefile.modpost
#      cannot be given one: it runs modpost -w on vmlinux.o, which is
#      missing, and every kernel symbol becomes an "undefined!" warning.
#      An M= build reads $(objtree)/Module.symvers when it is there and
#      only falls back to -w when it is not, so the test copies the
#      Module.symvers of KVER's headers (the same Debian config) into
#      the tree: modpost then runs strict, an unresolved
#      symbol is an error, and the only accepted output is warning-free;
#   7. negative control: a W=1-only warning (a missing prototype) in a
#      probe file compiled the same way is caught by the same check.
#
# Prints "ok - X" / "not ok - X" / "# ..." lines.  Builds run as
# `nice -n 19 make -j$INTREE_JOBS` (default 2).  The first run extracts the
# tarball and prepares the tree (see docs/install.md, "Installing: in-tree", for
# the times); later runs rebuild only what the series changed.
set -uo pipefail

top=$(cd "$(dirname "$0")/../.." && pwd)
build=${BUILD:-$top/build}
kver=${KVER:-$("$top/scripts/kver.sh")}
# the kernel's series, 6.1 of 6.1.0-57-amd64, 6.12 of 6.12.117+deb12-amd64
kseries=$(sed -n 's/^\([0-9]*\.[0-9]*\).*/\1/p' <<<"$kver")
src=linux-source-$kseries
# the tree's tarball (INTREE_TARBALL); the drift check regenerates the
# series from its own base, linux-source-6.1 (LINUX_SOURCE_TARBALL)
tarball=${INTREE_TARBALL:-/usr/src/$src.tar.xz}
cache=$("$top/scripts/cachedir.sh")/intree
jobs=${INTREE_JOBS:-2}
log=$build/host/intree.log
mkdir -p "$build/host"
: >"$log"

ok() { echo "ok - $*"; }
notok() { echo "not ok - $*"; }
kmake() { nice -n 19 make -j"$jobs" -C "$tree" "$@"; }
# warnings FILE: the compiler's, modpost's and Kbuild's warnings and errors
warnings() { grep -E '(warning|error):|^WARNING|^ERROR' "$1"; }
# show FILE: the last lines of a log as TAP comments
show() { tail -n "${2:-20}" "$1" | sed 's/^/#   /'; }

series=("$top"/kernel-patches/*.patch)
if [ ! -e "${series[0]}" ]; then
	notok "in-tree: no kernel-patches/*.patch (scripts/gen-kernel-patches makes them)"
	exit 0
fi
if [ -z "$kseries" ] || [ ! -r "/boot/config-$kver" ]; then
	notok "in-tree: no Debian config /boot/config-$kver of KVER='$kver'"
	exit 0
fi
if [ ! -r "$tarball" ]; then
	notok "in-tree: no $tarball (make deps installs $src)"
	exit 0
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# 1. no drift from kmod/
if ! "$top/scripts/gen-kernel-patches" "$tmp/fresh" >"$tmp/gen.log" 2>&1; then
	notok "scripts/gen-kernel-patches failed"
	show "$tmp/gen.log"
elif diff -r -u "$top/kernel-patches" "$tmp/fresh" -x README.md >"$tmp/drift" 2>&1; then
	ok "kernel-patches/ is what scripts/gen-kernel-patches makes from kmod/"
else
	notok "kernel-patches/ differs from what scripts/gen-kernel-patches makes from kmod/: run scripts/gen-kernel-patches (make kernel-patches) and commit the result"
	show "$tmp/drift" 30
fi

# the cache: one tree per linux-source version, one test at a time
mkdir -p "$cache"
exec 9>"$cache/lock"
flock -w 1800 9 || { notok "in-tree: $cache/lock busy for 30 min"; exit 0; }
key=$(dpkg-query -W -f='${Version}' "$src" 2>/dev/null) ||
	key=$(stat -c %s-%Y "$tarball")
base=$cache/${src}_$key
tree=$base/tree
# older trees of this series (linux-source-6.1_* is not linux-source-6.12_*)
for d in "$cache/${src}"_*; do
	[ -d "$d" ] && [ "$d" != "$base" ] && rm -rf "$d"
done
echo "# tree $tree ($src $key, for $kver), log $log"

t0=$SECONDS
if [ ! -e "$base/extracted" ]; then
	rm -rf "$base"
	mkdir -p "$tree" "$base/pristine"
	if ! nice -n 19 tar -xf "$tarball" -C "$tree" --strip-components=1 >>"$log" 2>&1; then
		notok "in-tree: extract $tarball"
		show "$log"
		rm -rf "$base"
		exit 0
	fi
	: >"$base/touched"
	: >"$base/created"
	touch "$base/extracted"
	echo "# extracted $tarball in $((SECONDS - t0)) s"
fi

# back to pristine: the files earlier series changed or created
while read -r f; do
	if [ -e "$base/pristine/$f" ]; then
		cp "$base/pristine/$f" "$tree/$f"
	else
		rm -f "$tree/$f"
	fi
done <"$base/touched"
while read -r d; do
	rm -rf "${tree:?}/$d"
done <"$base/created"
# record what this series touches while the tree is pristine
for f in $(sed -n -e 's|^--- a/||p' -e 's|^+++ b/||p' "${series[@]}" | sort -u); do
	grep -qxF "$f" "$base/touched" && continue
	if [ -e "$tree/$f" ]; then
		install -D -m 0644 "$tree/$f" "$base/pristine/$f"
	else
		d=$f
		while [ ! -e "$tree/$(dirname "$d")" ]; do d=$(dirname "$d"); done
		[ "$d" = "$f" ] || grep -qxF "$d" "$base/created" || echo "$d" >>"$base/created"
	fi
	echo "$f" >>"$base/touched"
done
# 2. git am on the tree's files the series edits, in a scratch repo
(
	set -e
	mkdir "$tmp/am" && cd "$tmp/am"
	export GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null
	git init -q
	git config user.name test
	git config user.email test@invalid
	cp -a "$base/pristine/." .
	git add -A
	git commit -q -m base
	git am -q "${series[@]}"
) >>"$log" 2>&1
if [ $? -eq 0 ]; then
	ok "git am applies the series (${#series[@]} patches) to $src"
else
	notok "git am applies the series (${#series[@]} patches) to $src"
	show "$log"
fi

# 3. patch -p1 on the cached tree
applied=1
for p in "${series[@]}"; do
	if ! patch -d "$tree" -p1 -s --forward --batch <"$p" >>"$log" 2>&1; then
		applied=0
		notok "patch -p1 applies $(basename "$p")"
		show "$log"
		break
	fi
done
[ $applied = 1 ] || exit 0
ok "patch -p1 applies the series to $src $key"

# 4. Debian's config with the new options as modules
syms=$(sed -n 's/^+config \([A-Z0-9_]*\)$/\1/p' "${series[@]}")
cp "/boot/config-$kver" "$tree/.config"
for s in $syms; do
	"$tree/scripts/config" --file "$tree/.config" --module "$s"
done
t1=$SECONDS
if kmake olddefconfig >>"$log" 2>&1; then
	bad=
	for s in $syms; do
		grep -qx "CONFIG_$s=m" "$tree/.config" || bad+=" $s"
	done
	if [ -z "$bad" ]; then
		ok "make olddefconfig (/boot/config-$kver): $(echo $syms | sed 's/\([^ ]*\)/CONFIG_\1=m/g')"
	else
		notok "make olddefconfig (/boot/config-$kver) dropped:$bad (unmet 'depends on'?)"
	fi
else
	notok "make olddefconfig"
	show "$log"
	exit 0
fi

# 5. the headers and host tools a module build needs
if kmake modules_prepare >"$tmp/prepare.log" 2>&1; then
	ok "make modules_prepare ($((SECONDS - t1)) s)"
else
	notok "make modules_prepare"
	show "$tmp/prepare.log"
	exit 0
fi
cat "$tmp/prepare.log" >>"$log"
echo "# config and modules_prepare took $((SECONDS - t1)) s"

# 6. the series' modules, W=1, no warning, against the kernel's symbols
cp "/lib/modules/$kver/build/Module.symvers" "$tree/Module.symvers"
dir=$(sed -n 's|^+++ b/\(.*\)/Makefile$|\1|p' "${series[@]}" | grep -v '^net/netfilter$' | sort -u)
want=$(sed -n 's/^+obj-\$(CONFIG_[A-Z0-9_]*) += \([a-z0-9_]*\)\.o$/\1.ko/p' "${series[@]}" | sort -u)
t2=$SECONDS
kmake W=1 M="$dir" modules >"$tmp/build.log" 2>&1
rc=$?
cat "$tmp/build.log" >>"$log"
got=$(cd "$tree/$dir" && ls -- *.ko 2>/dev/null | sort)
if [ $rc -eq 0 ] && [ "$got" = "$want" ] && ! warnings "$tmp/build.log" >/dev/null; then
	ok "make W=1 M=$dir: $(echo $got), no warning ($((SECONDS - t2)) s)"
else
	notok "make W=1 M=$dir: exit $rc, built '$(echo $got)' (want '$(echo $want)'), $(warnings "$tmp/build.log" | wc -l) warnings"
	warnings "$tmp/build.log" | head -n 20 | sed 's/^/#   /'
	[ $rc -eq 0 ] || show "$tmp/build.log"
fi
for m in $want; do
	[ "$m" = tcpfwd.ko ] && continue
	d=$(modinfo -F depends "$tree/$dir/$m" 2>/dev/null)
	if [ "$d" = tcpfwd ]; then
		ok "$m depends on tcpfwd (modpost against the kernel's Module.symvers)"
	else
		notok "$m depends on '$d', not tcpfwd"
	fi
done

# 7. negative control: the same build and check catch a W=1 warning
probe=$tree/$dir/w1_probe.c
printf 'int w1_probe_no_prototype(void)\n{\n\treturn 0;\n}\n' >"$probe"
kmake W=1 M="$dir" w1_probe.o >"$tmp/probe.log" 2>&1
if warnings "$tmp/probe.log" | grep -q 'w1_probe_no_prototype.*-Wmissing-prototypes'; then
	ok "negative control: a W=1-only warning (missing prototype) is caught"
else
	notok "negative control: a W=1-only warning (missing prototype) is not caught"
	show "$tmp/probe.log"
fi
rm -f "$probe" "$tree/$dir/w1_probe.o" "$tree/$dir/.w1_probe.o.cmd"
echo "# in-tree test: $((SECONDS - t0)) s after the drift check"
exit 0
