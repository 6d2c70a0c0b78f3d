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
 *     long as that entry (ecnp_ct_expires()).
 */
#include <linux/skbuff.h>
#include <net/netfilter/nf_conntrack.h>

#include "ecnp_ct.h"

#if IS_ENABLED(CONFIG_NF_CONNTRACK)

static struct nf_conn *ecnp_ct(const struct sk_buff *skb)
{
	enum ip_conntrack_info ctinfo;

	return nf_ct_get(skb, &ctinfo);
}

/**
 * ecnp_ct_offloaded - the packet's connection is in a flowtable
 * @skb: a forwarded packet
 *
 * Its other packets take the flowtable's fast path and never reach the
 * proxy's hook; this one came back to the slow path (FIN, RST, a route or
 * MTU change).
 */
bool ecnp_ct_offloaded(const struct sk_buff *skb)
{
	const struct nf_conn *ct = ecnp_ct(skb);

	return ct && test_bit(IPS_OFFLOAD_BIT, &ct->status);
}

/**
 * ecnp_ct_keep_slow - keep the packet's connection off the fast path
 * @skb: a forwarded packet of a connection the proxy proxies
 *
 * Return: true if this call set the bit (the first time for an entry).
 */
bool ecnp_ct_keep_slow(const struct sk_buff *skb)
{
	struct nf_conn *ct = ecnp_ct(skb);

	if (!ct || !nf_ct_is_confirmed(ct))
		return false;
	return !test_and_set_bit(IPS_NAT_CLASH_BIT, &ct->status);
}

/**
 * ecnp_ct_expires - how long conntrack keeps the packet's connection
 * @skb: a forwarded packet
 *
 * Return: jiffies until its entry times out, 0 without one.
 */
unsigned long ecnp_ct_expires(const struct sk_buff *skb)
{
	const struct nf_conn *ct = ecnp_ct(skb);

	return ct ? nf_ct_expires(ct) : 0;
}

#else

bool ecnp_ct_offloaded(const struct sk_buff *skb)
{
	return false;
}

bool ecnp_ct_keep_slow(const struct sk_buff *skb)
{
	return false;
}

unsigned long ecnp_ct_expires(const struct sk_buff *skb)
{
	return 0;
}

#endif
