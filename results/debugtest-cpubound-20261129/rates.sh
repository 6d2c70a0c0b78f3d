#!/bin/bash
# The download's rate in each capture of pcaps/ (the proxy's client side,
# eth0): the server's TCP payload bytes over the time from its first to
# its last data segment.  Run from this directory: ./rates.sh > rates.txt
set -euo pipefail
printf 'capture\tbytes\tseconds\tMbit/s\n'
for x in pcaps/*.cs.pcap.xz; do
	p=$(mktemp)
	xz -dc "$x" >"$p"
	sport=$(tshark -r "$p" -Y 'tcp.flags.syn == 1 && tcp.flags.ack == 1' \
		-T fields -e tcp.srcport | head -n 1)
	tshark -r "$p" -Y "tcp.len > 0 && tcp.srcport == $sport" \
		-T fields -e frame.time_relative -e tcp.len |
		awk -v f="$(basename "$x" .cs.pcap.xz)" 'NR == 1 { t0 = $1 }
			{ b += $2; t = $1 }
			END { printf "%s\t%d\t%.2f\t%.2f\n", f, b, t - t0, b * 8 / (t - t0) / 1e6 }'
	rm -f "$p"
done
# For comparison, the stock kernel's guest (make test's core suite,
# results/vmtest-knobs-20261129): each proxy_configs transfer's bytes, up
# and down together, over its seconds (xfer.py's client summary).
printf '\nstock kernel (../vmtest-knobs-20261129), up + down\tbytes\tseconds\tMbit/s\n'
for j in ../vmtest-knobs-20261129/tests/proxy_configs/*.client.json; do
	jq -r --arg f "$(basename "$j" .client.json)" \
		'"\($f)\t\(.sent + .received)\t\(.seconds)\t\((.sent + .received) * 8 / .seconds / 1e6 * 100 | round / 100)"' "$j"
done
