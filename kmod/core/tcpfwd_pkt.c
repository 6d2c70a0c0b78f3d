// SPDX-License-Identifier: GPL-2.0
/*
 * Packets for tcpfwd.ko's users (see tcpfwd.h): TCP segment parsing (IPv4
 * and IPv6), header edits with incremental checksums, and handing packets
 * on from the last FORWARD hook (segments of a GSO packet, injected copies).
 */
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/netfilter.h>
#include <net/inet_ecn.h>
#include <net/ip.h>
#include <net/ipv6.h>
#include <net/tcp.h>

#include "tcpfwd.h"
#include "tcpfwd_compat.h"
#include "tcpfwd_iph.h"

/*
 * tcpfwd_tcp_off()'s IPv6 case with extension headers: the offset of the
 * TCP header, or -EPROTONOSUPPORT for a fragment or a chain without TCP.
 */
int tcpfwd_tcp_off6_ext(const struct sk_buff *skb)
{
	unsigned int off = 0;
	int fragflg = 0;

	if (ipv6_find_hdr(skb, &off, IPPROTO_TCP, NULL, &fragflg) < 0 ||
	    (fragflg & IP6_FH_F_FRAG))
		return -EPROTONOSUPPORT;
	return off;
}
EXPORT_SYMBOL_GPL(tcpfwd_tcp_off6_ext);

/**
 * tcpfwd_set_tcp_flags - set and clear TCP flag bits, fixing the checksum
 * @skb: the packet
 * @p: its parse result (thoff)
 * @set: TCPHDR_* bits to set
 * @clear: TCPHDR_* bits to clear
 *
 * Works on GSO packets (the flags are copied to every segment, except CWR
 * which tcp_gso_segment() keeps on the first) and under CHECKSUM_PARTIAL.
 *
 * Return: 0 or -ENOMEM if the header could not be made writable.
 */
int tcpfwd_set_tcp_flags(struct sk_buff *skb, const struct tcpfwd_pkt *p,
			 u8 set, u8 clear)
{
	struct tcphdr *th;
	__be16 old, new;
	u8 *flags;

	if (tcpfwd_ensure_writable(skb, p->thoff + sizeof(*th)))
		return -ENOMEM;
	th = (struct tcphdr *)(skb->data + p->thoff);
	flags = (u8 *)th + 13;
	old = *(__be16 *)((u8 *)th + 12);
	*flags = (*flags & ~clear) | set;
	new = *(__be16 *)((u8 *)th + 12);
	if (old != new)
		inet_proto_csum_replace2(&th->check, skb, old, new, false);
	/* as tcp_ecn_send(): segmentation must keep CWR on the first only */
	if ((set & TCPHDR_CWR) && skb_is_gso(skb))
		skb_shinfo(skb)->gso_type |= SKB_GSO_TCP_ECN;
	return 0;
}
EXPORT_SYMBOL_GPL(tcpfwd_set_tcp_flags);

/*
 * Keep skb->csum right after an edit of the IP header with the sum
 * difference @diff (tcpfwd_iph.h): under CHECKSUM_COMPLETE it covers the
 * whole packet from skb->data, the network header at the FORWARD hook, as
 * in IP6_ECN_set_ce().
 */
static void tcpfwd_csum_complete_add(struct sk_buff *skb, u32 diff)
{
	if (skb->ip_summed == CHECKSUM_COMPLETE)
		skb->csum = csum_add(skb->csum, (__force __wsum)diff);
}

/* tcpfwd_set_ecn() of an IPv6 packet (tcpfwd.h). */
int tcpfwd_set_ecn6(struct sk_buff *skb, u8 ecn)
{
	u32 diff;

	if (tcpfwd_ensure_writable(skb, skb_network_offset(skb) +
				   sizeof(struct ipv6hdr)))
		return -ENOMEM;
	diff = tcpfwd_ip6_change_dsfield(skb_network_header(skb),
					 (u8)~INET_ECN_MASK, ecn);
	tcpfwd_csum_complete_add(skb, diff);
	return 0;
}
EXPORT_SYMBOL_GPL(tcpfwd_set_ecn6);

/**
 * tcpfwd_skb_ip_resize - the IP length of a packet made longer or shorter
 * @skb: the packet, its IP header writable
 * @delta: the bytes it gained (lost if negative)
 *
 * tcpfwd_ip_resize() on the network header (the IPv4 header checksum
 * follows), and skb->csum under CHECKSUM_COMPLETE.
 *
 * Return: 0, or -EINVAL with nothing changed if the IP length is 0 (a BIG
 * TCP packet has no length to change) or would leave 1..65535.
 */
int tcpfwd_skb_ip_resize(struct sk_buff *skb, int delta)
{
	u32 diff;

	if (tcpfwd_ip_resize(skb_network_header(skb), delta, &diff))
		return -EINVAL;
	tcpfwd_csum_complete_add(skb, diff);
	return 0;
}
EXPORT_SYMBOL_GPL(tcpfwd_skb_ip_resize);

/* --- handing packets on from the last FORWARD hook ----------------------- */

/**
 * tcpfwd_pass_on - send a packet on, as if the hook had accepted it
 * @skb: the packet (a segment or a copy), consumed
 * @state: the hook state (the hook must be the last one in FORWARD, or the
 *	hooks after it are skipped)
 *
 * After an NFQUEUE verdict the hooks run in process context: okfn wants
 * BHs disabled.
 */
void tcpfwd_pass_on(struct sk_buff *skb, const struct nf_hook_state *state)
{
	local_bh_disable();
	state->okfn(state->net, state->sk, skb);
	local_bh_enable();
}
EXPORT_SYMBOL_GPL(tcpfwd_pass_on);

/**
 * tcpfwd_gso_each - segment a GSO packet and decide on each segment
 * @skb: the GSO packet
 * @state: the hook state (see tcpfwd_pass_on())
 * @verdict: called for each segment; NF_ACCEPT sends it on, NF_STOLEN
 *	means the verdict consumed it, anything else frees it
 * @ctx: passed to @verdict
 *
 * Return: NF_STOLEN (@skb is consumed), or a negative errno if it could not
 * be segmented (then it is untouched).
 */
int tcpfwd_gso_each(struct sk_buff *skb, const struct nf_hook_state *state,
		    unsigned int (*verdict)(struct sk_buff *seg,
					    const struct nf_hook_state *state,
					   void *ctx),
		   void *ctx)
{
	struct sk_buff *segs, *seg, *next;

	segs = skb_gso_segment(skb, 0);
	if (IS_ERR_OR_NULL(segs))
		return segs ? PTR_ERR(segs) : -EINVAL;
	skb_list_walk_safe(segs, seg, next) {
		skb_mark_not_on_list(seg);
		switch (verdict(seg, state, ctx)) {
		case NF_ACCEPT:
			tcpfwd_pass_on(seg, state);
			break;
		case NF_STOLEN:		/* the verdict consumed it */
			break;
		default:
			kfree_skb(seg);
		}
	}
	consume_skb(skb);
	return NF_STOLEN;
}
EXPORT_SYMBOL_GPL(tcpfwd_gso_each);
