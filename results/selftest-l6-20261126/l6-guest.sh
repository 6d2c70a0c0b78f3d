#!/bin/bash
# L6 failing-before check: tcpfwd.ko with the old gso_each (every
# non-ACCEPT verdict freed), then tcpfwd_selftest.ko: must refuse to load.
insmod /work/main/build/kb-bug/kmod/core/tcpfwd.ko
if insmod /work/main/build/kb-bug/kmod/selftest/tcpfwd_selftest.ko; then
	echo "L6-before: tcpfwd_selftest LOADED (the check did not catch the old code)"
	rmmod tcpfwd_selftest
else
	echo "L6-before: tcpfwd_selftest refused to load, as it must on the old code"
fi
dmesg | grep tcpfwd_selftest
rmmod tcpfwd
