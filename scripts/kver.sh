#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# Print the guest kernel version: the newest kernel that has both an image in
# /boot and headers in /lib/modules/VERSION/build.  Prints nothing if none.
for b in /lib/modules/*/build; do
	[ -d "$b" ] || continue
	v=$(basename "$(dirname "$b")")
	[ -e "/boot/vmlinuz-$v" ] && echo "$v"
done | sort -V | tail -n 1
