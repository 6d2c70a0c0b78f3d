#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# SYN fallback (RFC 3168 6.1.1.1) through a path that drops ECN-setup SYNs:
# an nftables rule in the router (nft calls ECE "ecn") plays the ECN-blocking middlebox.  The
# client is non-ECN, the server ECN-capable, the proxy upgrades the SYN.
#
#   client -- PROXY (upgrades SYN) -- router (nft: drop SYN with ECE+CWR) -- server
#
# The first connection must still succeed after the client's SYN
# retransmission (which the proxy forwards unmodified) and be remembered; the
# next connection to the same server must not be upgraded, so it connects
# without the 1 s retransmission delay.
# tb-suite: extended (make vmtest-extended; not in make test, for time)
set -e
. "$(dirname "$0")/../lib/testlib.sh"
trap tb_cleanup EXIT
require_cmd nft jq python3 tcpdump tshark

tb_proxy_load
tb_up
tb_tcp client ecn=0
tb_tcp server ecn=1
tb_proxy on drop
tb_ns router nft -f - <<'NFT'
table inet ecnblock {
	chain forward {
		type filter hook forward priority 0;
		tcp flags & (syn | ack | ecn | cwr) == syn | ecn | cwr counter drop
	}
}
NFT

for fam in 4 6; do
	tb_capture_start srv server eth0 "$TB_OUT/fb-v$fam.pcap" tcp port $XFER_PORT
	RET=0
	tb_xfer "fb1-v$fam" "$fam" 1000 1000 || check_err 1 "first connection failed"
	log_test "IPv$fam: connection through the ECN-blocking path succeeds"
	RET=0
	tb_xfer "fb2-v$fam" "$fam" 1000 1000 || check_err 1 "second connection failed"
	tb_capture_stop srv
	upg=$(tshark_count "$TB_OUT/fb-v$fam.pcap" \
		"tcp.flags.syn == 1 && tcp.flags.ack == 0 && tcp.flags.cwr == 1")
	[ "$upg" = 0 ] || check_err 1 "$upg ECN-setup SYNs reached the server"
	log_test "IPv$fam: no ECN-setup SYN crosses the blocking path"
done

RET=0
fb=$(tb_proxy_stat syn_fallbacks)
hits=$(tb_proxy_stat fallback_cache_hits)
drops=$(tb_ns router nft list ruleset | sed -n 's/.*packets \([0-9]*\).*/\1/p')
log_info "syn_fallbacks=$fb fallback_cache_hits=$hits nft drops=$drops"
[ "$fb" = 2 ] || check_err 1 "syn_fallbacks = $fb, expected 2 (one per family)"
[ "$hits" = 2 ] || check_err 1 "fallback_cache_hits = $hits, expected 2"
[ "$drops" = 2 ] || check_err 1 "the path dropped $drops SYNs, expected 2"
log_test "each destination falls back once and is remembered"

exit $EXIT_STATUS
