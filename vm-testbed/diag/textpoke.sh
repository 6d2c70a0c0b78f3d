#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# textpoke.sh: does the guest kernel survive a static key that is switched
# on and off many times while packets are received, with none of this
# project's modules loaded?  A diagnostic for docs/findings.md ("6.12
# under TCG: an int3 oops when captures start and stop"), not a test.
#
#   TB_NETSTAMP_HOLD=0 vm-testbed/vm-run -k KVER -o OUTDIR -- \
#           vm-testbed/diag/textpoke.sh [SECONDS]
#
# Without TB_NETSTAMP_HOLD=0, guest-init.sh holds the key on for the whole
# guest (the testbed's remedy), the loop below changes only a count, and
# the run must end clean on every kernel.
#
#   ns a: va 198.18.200.1 ---- veth ---- vb 198.18.200.2 :ns b
#         iperf3 -c            (TCP, both ways)        iperf3 -s
#
# netstamp_needed_key (net/core/dev.c, tested at the top of
# __netif_receive_skb_core) goes on when the first socket asks for receive
# timestamps and off, from a work item, when the last one closes.  The
# loop below opens and closes such a socket every 20 ms, so the kernel
# rewrites that branch (text_poke_bp: int3, rest of the jump, first byte)
# about 50 times a second while the softirq runs through it.  It prints
# the number of switches and ends 0 if the kernel log stays clean; vm-run
# reports an oops as exit 125 or 126.
set -euo pipefail
secs=${1:-180}
cleanup() {
	ip netns del a 2>/dev/null || true
	ip netns del b 2>/dev/null || true
}
trap cleanup EXIT
ip netns add a
ip netns add b
ip link add va netns a type veth peer name vb netns b
ip -n a addr add 198.18.200.1/24 dev va
ip -n b addr add 198.18.200.2/24 dev vb
ip -n a link set va up
ip -n b link set vb up
ip -n a link set lo up
ip -n b link set lo up
ip netns exec b iperf3 -s -D -1 -p 5201
ip netns exec b iperf3 -s -D -1 -p 5202
sleep 1
ip netns exec a iperf3 -c 198.18.200.2 -p 5201 -t "$secs" -b 50M >iperf-up.txt &
up=$!
ip netns exec a iperf3 -c 198.18.200.2 -p 5202 -t "$secs" -b 50M -R >iperf-down.txt &
down=$!
python3 - "$secs" <<'PY'
import socket, sys, time
end = time.monotonic() + float(sys.argv[1]) - 2
n = 0
while time.monotonic() < end:
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.setsockopt(socket.SOL_SOCKET, 29, 1)  # SO_TIMESTAMP (asm-generic)
    time.sleep(0.01)
    s.close()
    time.sleep(0.01)
    n += 1
print(f"textpoke: {n} timestamp sockets opened and closed in {sys.argv[1]} s")
PY
wait "$up" "$down"
tail -n 4 iperf-up.txt iperf-down.txt
dmesg | grep -E "Oops|BUG|int3" && exit 1
echo "textpoke: kernel log clean"
