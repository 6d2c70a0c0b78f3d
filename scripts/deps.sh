#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# make deps: install everything ecnproxy needs on a fresh Debian 12 machine.
# Idempotent: it checks first and does nothing when all is in place.
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
venv=${VENV:-$top/.venv}

# Debian packages, one per line in scripts/deps.debian (the versions are
# Debian 12's; dpkg records them, and every VM record logs them), and in
# the lists DEPS_EXTRA names (paths from the checkout's top, e.g.
# scripts/deps.slurm for make slurmtest).
lists=("$top/scripts/deps.debian")
for l in ${DEPS_EXTRA:-}; do
	[ -f "$top/$l" ] || { echo "deps: no package list $top/$l (DEPS_EXTRA)" >&2; exit 1; }
	lists+=("$top/$l")
done
mapfile -t pkgs < <(cat "${lists[@]}" | grep -v '^[[:space:]]*\(#\|$\)')

# NAME=VERSION: that version (apt-get install takes the same syntax)
missing=()
for p in "${pkgs[@]}"; do
	st=$(dpkg-query -W -f='${Status} ${Version}' "${p%%=*}" 2>/dev/null || true)
	case $p in
	*=*) [ "$st" = "install ok installed ${p#*=}" ] || missing+=("$p") ;;
	*) [ "${st% *}" = "install ok installed" ] || missing+=("$p") ;;
	esac
done

if [ ${#missing[@]} -gt 0 ]; then
	echo "deps: installing Debian packages: ${missing[*]}"
	if [ "$(id -u)" -ne 0 ]; then
		echo "deps: need root to install packages" >&2
		exit 1
	fi
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq
	apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

# The guest boots the Debian kernel whose headers we build against; make
# sure the pair exists for the default kernel, 6.1 (linux-image-amd64 and
# linux-headers-amd64 pull in the current ABI's packages).
if [ -z "$("$top/scripts/kver.sh")" ]; then
	echo "deps: no 6.1 kernel with both /boot/vmlinuz-V and /lib/modules/V/build after install" >&2
	exit 1
fi

# Project-local virtualenv with pinned Python tools (virtme-ng).
want=$(sha256sum "$top/requirements.txt" | cut -d' ' -f1)
if [ ! -x "$venv/bin/vng" ] || [ "$(cat "$venv/.requirements.sha256" 2>/dev/null)" != "$want" ]; then
	echo "deps: creating virtualenv $venv"
	/usr/bin/python3 -m venv --system-site-packages "$venv"
	"$venv/bin/pip" install -q --disable-pip-version-check -r "$top/requirements.txt"
	echo "$want" > "$venv/.requirements.sha256"
fi

# checkpatch.pl and its data files from Debian's linux-source-6.1
# (build/tools/checkpatch) and linux-source-6.12 (build/tools/
# checkpatch-6.12); make check runs both.
for s in 6.1 6.12; do
	ck=$top/build/tools/checkpatch
	[ "$s" = 6.1 ] || ck+=-$s
	[ ! -x "$ck/scripts/checkpatch.pl" ] || continue
	mkdir -p "$ck"
	tar -xf "/usr/src/linux-source-$s.tar.xz" -C "$ck" --strip-components=1 \
		--wildcards '*/scripts/checkpatch.pl' '*/scripts/spelling.txt' \
		'*/scripts/const_structs.checkpatch'
done

# cmocka's source for the unit tests on other ABIs (scripts/unit-cross builds
# it with each cross compiler): Debian's source package, pinned, fetched by
# apt-get with a private deb-src list and state, so the system's apt sources
# and dpkg architectures stay as they are.
cmocka_ver=1.1.5-2.1
cm=$top/build/tools/cmocka
if [ "$(cat "$cm/.version" 2>/dev/null)" != "$cmocka_ver" ]; then
	echo "deps: fetching Debian's cmocka $cmocka_ver source"
	tmp=$(mktemp -d)
	trap 'rm -rf "$tmp"' EXIT
	mkdir -p "$tmp/lists/partial" "$tmp/cache/archives/partial" "$tmp/dl"
	echo "deb-src [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian bookworm main" \
		>"$tmp/sources.list"
	apt=(apt-get -q -o Dir::Etc::SourceList="$tmp/sources.list"
		-o Dir::Etc::SourceParts=/dev/null -o Dir::State::Lists="$tmp/lists"
		-o Dir::Cache="$tmp/cache" -o APT::Sandbox::User="$(id -un)")
	# apt checks the files against the signed Sources index; dpkg-source
	# checks them again against the .dsc (the uploader's key is not
	# installed, so it warns that it cannot verify the .dsc's signature).
	if ! { "${apt[@]}" update &&
		(cd "$tmp/dl" && "${apt[@]}" source --download-only "cmocka=$cmocka_ver") &&
		rm -rf "$cm" &&
		dpkg-source --no-copy -x "$tmp/dl/cmocka_$cmocka_ver.dsc" "$cm"; } >"$tmp/log" 2>&1; then
		cat "$tmp/log" >&2
		echo "deps: could not fetch cmocka $cmocka_ver's source" >&2
		exit 1
	fi
	echo "$cmocka_ver" >"$cm/.version"
fi
exit 0
