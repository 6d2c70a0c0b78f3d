// SPDX-License-Identifier: GPL-2.0
/*
 * ecn_proxy beside conntrack on the same box.
 *
 * On a home router conntrack sees every forwarded packet in PREROUTING,
 * long before the proxy's hook at the end of FORWARD, and attaches its
 * entry to the skb.  The proxy keeps its own flow table (out-of-tree
 * modules cannot add conntrack extensions), but it reads that entry for
 * two things, with the inline accessors of <net/netfilter/nf_conntrack.h>
 * only, so ecn_proxy.ko neither needs nor loads nf_conntrack.ko:
 *
 *   - flow offloading: nftables' "flow offload @ft" (OpenWrt's fw4 with
 *     flow_offloading) moves an established connection to the flowtable's
 *     ingress fast path, where its packets never reach FORWARD again.  A
 *     proxied connection there would be half-ECN from its first data
 *     segment: E keeps sending ECT, nobody strips it toward N or echoes CE
 *     to E, and N's data is never ECT.  nft_flow_offload_eval() leaves an
 *     entry alone when it carries IPS_SEQ_ADJUST or IPS_NAT_CLASH.  The
 *     proxy sets IPS_NAT_CLASH (ecnp_ct_keep_slow()) on the entry of every
 *     connection it proxies, when it decides to, on B's SYN-ACK: conntrack
 *     is not ESTABLISHED before the handshake's last ACK, so no packet of
 *     the connection can have been offloaded yet.  IPS_NAT_CLASH marks a
 *     "loser" entry of a NAT clash race; nf_conntrack_core.c reads it only
 *     when it resolves such a race (before an entry is confirmed) and
 *     nf_conntrack_proto_udp.c only for UDP, so on a confirmed TCP entry
 *     it does nothing but keep the connection off the fast path.
 *     IPS_SEQ_ADJUST is no alternative: nf_ct_seq_adjust() would then
 *     dereference the seqadj extension the entry does not have.  An entry
 *     seen with IPS_OFFLOAD anyway (ecnp_ct_offloaded()) is counted: such
 *     a flow is half-ECN, and the proxy neither picks it up nor proxies
 *     it further;
 *   - lifetime: a proxied connection idle for hours must not lose its
 *     state while the router still forwards it.  Conntrack keeps an
 *     established TCP entry nf_conntrack_tcp_timeout_established (5 days)
 *     after its last packet; the proxy keeps a proxied flow at least as
 *     long as that entry (ecnp_ct_expires());
 *   - the bypass of flows that need nothing: once a flow is decided SAME
 *     or PASS, the proxy sets a bit of its own in the entry's status word,
 *     ECNP_CT_NOTHING_BIT (ecnp_ct_mark()), and the hook passes that
 *     connection's segments other than FIN or RST without SYN
 *     (ecnp_ct_path(): a SYN passes, never stepped) after reading
 *     skb->_nfct, that bit and the TCP flags, before parsing and hashing
 *     (ecnp_hook(), FSM.md "Flows that need nothing").
 *
 * Why that bit is safe (6.1 and 6.12 sources; docs/home-router.md has the
 * lines, scripts/tests/test_ct_bit.py checks them):
 *   - it is the top bit of the unsigned long, 31 or 63, and the kernel's
 *     IPS_* bits end below __IPS_MAX_BIT (16; asserted below at build
 *     time).  Conntrack writes the whole word only when it allocates an
 *     entry (__nf_conntrack_alloc(): status = 0; a template: IPS_TEMPLATE),
 *     so a reused (SLAB_TYPESAFE_BY_RCU) entry starts without it; every
 *     other write is a set_bit()/clear_bit() of one IPS_* bit or an |= on
 *     an entry not yet confirmed; __nf_ct_change_status() (ctnetlink,
 *     conntrackd, BPF's bpf_ct_change_status()) changes bits below
 *     __IPS_MAX_BIT only, so userspace can neither set nor clear it, and
 *     conntrackd does not copy it to a backup (which then only takes the
 *     slower path);
 *   - every kernel read of the word masks it with IPS_* bits, except
 *     those that hand the word to userspace: ctnetlink's CTA_STATUS (a
 *     32-bit attribute, htonl(ct->status)), nft's "ct status" and
 *     xt_conntrack's --ctstatus (both 32 bits, masked by the rule).  On a
 *     64-bit kernel bit 63 is cut off by all of them; on a 32-bit kernel
 *     bit 31 shows as 0x80000000, a bit no rule names;
 *   - it is set only with test_and_set_bit() (atomic: no bit is lost),
 *     under the flow's lock, on a confirmed TCP entry (an unconfirmed one
 *     is still written non-atomically by conntrack, and may lose a clash
 *     and be freed), and cleared, under the lock too, by a flow whose
 *     machine starts over (a guard: such a flow's entry is new, and a new
 *     entry is unconfirmed at FORWARD and never marked, so once set the
 *     bit lives as long as the entry); a SYN that meets it is passed, not
 *     stepped (ecnp_ct_path()): conntrack kills the entry and makes a new
 *     one for a SYN after a FIN or after an RST in the SYN's direction
 *     (tcp_packet()), so a SYN on a marked entry is a retransmission, a
 *     spoof conntrack ignored, or a connection conntrack resyncs onto the
 *     entry (a client's after a server's RST), which then passes end to
 *     end; a SYN in the reply direction conntrack finds invalid and
 *     detaches from the entry;
 *   - one entry is one connection in one netns, seen with the same
 *     4-tuple in both directions at the proxy's hook: NAT translates the
 *     destination in PREROUTING and the source in POSTROUTING, so at the
 *     end of FORWARD the original direction has the client's own and the
 *     server's real address and the reply direction the same pair
 *     reversed (also for IPv6 and NAT66);
 *   - what a wrong bit could do is bounded: it makes the proxy pass a
 *     connection's segments untouched, which is what it does for any
 *     connection it has no flow for.  Another out-of-tree module that
 *     borrows the same bit would do that to some connections.
 */
#include <linux/skbuff.h>
#include <net/netfilter/nf_conntrack.h>

#include "ecnp_ct.h"

#if IS_ENABLED(CONFIG_NF_CONNTRACK)

static_assert(__IPS_MAX_BIT <= ECNP_CT_NOTHING_BIT,
	      "ECNP_CT_NOTHING_BIT: a bit conntrack does not use");

/**
 * ecnp_ct_keep_slow - keep the packet's connection off the fast path
 * @skb: a forwarded packet of a connection the proxy proxies
 *
 * Return: true if this call set the bit (the first time for an entry).
 */
bool ecnp_ct_keep_slow(const struct sk_buff *skb)
{
	struct nf_conn *ct = ecnp_ct_get(skb);

	if (!ct || !nf_ct_is_confirmed(ct))
		return false;
	return !test_and_set_bit(IPS_NAT_CLASH_BIT, &ct->status);
}

/**
 * ecnp_ct_mark - say in the packet's entry whether its connection needs
 *	nothing
 * @skb: a forwarded TCP segment
 * @nothing: its flow is decided SAME or PASS (set the bit), or its machine
 *	is not (clear it)
 *
 * Under the flow's lock, so that a fast exit that sets the bit cannot
 * overtake a step that has just restarted the flow; nothing else clears
 * it (a SYN on a marked entry is passed, not stepped: ecnp_ct_path()).
 * Set only on a confirmed
 * TCP entry (see above); each write is atomic and only when the bit
 * changes.
 *
 * Return: true if this call set the bit (flows_ct_marked).
 */
bool ecnp_ct_mark(const struct sk_buff *skb, bool nothing)
{
	struct nf_conn *ct = ecnp_ct_get(skb);

	if (!ct || ecnp_ct_nothing(ct) == nothing)
		return false;
	if (!nothing) {
		clear_bit(ECNP_CT_NOTHING_BIT, &ct->status);
		return false;
	}
	if (!nf_ct_is_confirmed(ct) || nf_ct_protonum(ct) != IPPROTO_TCP)
		return false;
	return !test_and_set_bit(ECNP_CT_NOTHING_BIT, &ct->status);
}

#else

bool ecnp_ct_keep_slow(const struct sk_buff *skb)
{
	return false;
}

bool ecnp_ct_mark(const struct sk_buff *skb, bool nothing)
{
	return false;
}

#endif
