#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Runs inside the guest (started by vm-run): prepares the guest, runs the
# script with OUTDIR as working directory, then saves the script's exit code
# and the kernel log into OUTDIR.  Its own exit code is the script's.
#   guest-init.sh OUTDIR SCRIPT [ARGS...]
outdir=$1
script=$2
shift 2

# Modules from the host's /lib/modules (read-only root) load as usual; a
# writable /var/run/netns comes from the tmpfs on /run.
mkdir -p /run/netns /tmp
sysctl -qw kernel.panic_on_warn=0 kernel.printk="7 4 1 7" 2>/dev/null
cd "$outdir" || exit 126

# Script output goes to stdout only; stderr carries the kernel console.
bash "$script" "$@" 2>&1
rc=$?
dmesg >"$outdir/dmesg.txt" 2>&1
echo "$rc" >"$outdir/exit-code"
sync
exit "$rc"
