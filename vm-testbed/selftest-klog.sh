#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Guest side of the vm-run self-test: load klogtest with provoke=1, which
# WARNs once.  The script itself succeeds; vm-run must still fail the run
# (exit 125) because the kernel log shows the warning.
set -e
top=$(cd "$(dirname "$0")/.." && pwd)
insmod "$top/kmod/selftest/klogtest.ko" provoke=1
rmmod klogtest
echo "klogtest loaded and removed"
