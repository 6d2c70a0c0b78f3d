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
 * Which endpoint is lo: addresses compared as big-endian numbers (what
 * memcmp() said before), then ports; 0 if both are the same.
 */
static inline int tcpfwd_addr_cmp(const __be32 *a, const __be32 *b,
				  unsigned int words)
{
	unsigned int i;

	for (i = 0; i < words; i++)
		if (a[i] != b[i])
			return ntohl(a[i]) < ntohl(b[i]) ? -1 : 1;
	return 0;
}

/*
 * The canonical key of an IPv4 (@words 1) or IPv6 (4) packet from @saddr
 * to @daddr, ports from p->th.  Every word of the key is written (an IPv4
 * key's unused address words zero), so @p need not be cleared first.
 */
static inline void tcpfwd_key_fill(struct tcpfwd_pkt *p, const __be32 *saddr,
				   const __be32 *daddr, unsigned int words,
				   u8 family)
{
	struct tcpfwd_flow_key *k = &p->key;
	int cmp = tcpfwd_addr_cmp(saddr, daddr, words);
	const __be32 *lo, *hi;
	unsigned int i;

	if (!cmp)
		cmp = (int)ntohs(p->th.source) - (int)ntohs(p->th.dest);
	p->src_is_lo = cmp <= 0;
	lo = p->src_is_lo ? saddr : daddr;
	hi = p->src_is_lo ? daddr : saddr;
	for (i = 0; i < 4; i++) {
		k->lo_addr.s6_addr32[i] = i < words ? lo[i] : 0;
		k->hi_addr.s6_addr32[i] = i < words ? hi[i] : 0;
	}
	k->lo_port = p->src_is_lo ? p->th.source : p->th.dest;
	k->hi_port = p->src_is_lo ? p->th.dest : p->th.source;
	k->family = family;
	memset(k->pad, 0, sizeof(k->pad));
}

/**
 * tcpfwd_parse - find the TCP header of an IPv4/IPv6 packet
 * @tn: the user's netns state (its counters)
 * @skb: the packet, network header set
 * @family: NFPROTO_IPV4 or NFPROTO_IPV6
 * @p: filled on success
 *
 * Fragments, non-TCP packets and malformed headers (bad data offset,
 * truncated header) are refused; the caller must leave them untouched.
 * A malformed one is counted in the user's ops->stat_malformed.
 *
 * Return: 0, -EPROTONOSUPPORT for packets that are not ours, -EINVAL for
 * malformed ones.
 */
int tcpfwd_parse(struct tcpfwd_net *tn, struct sk_buff *skb, u8 family,
		 struct tcpfwd_pkt *p)
{
	const struct tcphdr *th;
	int thoff = tcpfwd_tcp_off(skb, family);

	/* every field of @p is written below: no memset() first */
	if (thoff < 0)
		return thoff;
	if (family == NFPROTO_IPV4)
		p->ecn = ip_hdr(skb)->tos & INET_ECN_MASK;
	else
		p->ecn = ipv6_get_dsfield(ipv6_hdr(skb)) & INET_ECN_MASK;

	th = skb_header_pointer(skb, thoff, sizeof(p->th), &p->th);
	if (!th)
		goto malformed;
	if (th != &p->th)
		memcpy(&p->th, th, sizeof(p->th));
	p->thoff = thoff;
	p->thlen = p->th.doff * 4;
	if (p->thlen < sizeof(struct tcphdr) || thoff + p->thlen > skb->len)
		goto malformed;
	p->payload = skb->len - thoff - p->thlen;

	if (family == NFPROTO_IPV4)
		tcpfwd_key_fill(p, &ip_hdr(skb)->saddr, &ip_hdr(skb)->daddr, 1,
				family);
	else
		tcpfwd_key_fill(p, ipv6_hdr(skb)->saddr.s6_addr32,
				ipv6_hdr(skb)->daddr.s6_addr32, 4, family);
	return 0;

malformed:
	tcpfwd_count(tn, tn->ops->stat_malformed);
	return -EINVAL;
}
EXPORT_SYMBOL_GPL(tcpfwd_parse);

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

/**
 * tcpfwd_set_ecn - set the IP ECN field
 * @skb: the packet
 * @p: its parse result (the family)
 * @ecn: INET_ECN_* codepoint
 *
 * The ECN field is not covered by the TCP checksum.  IPv4: the header
 * checksum is updated with it, so the header's sum (and skb->csum under
 * CHECKSUM_COMPLETE) does not change; IPv6: skb->csum is updated as
 * IP6_ECN_set_ce() does.
 *
 * Return: 0 or -ENOMEM.
 */
int tcpfwd_set_ecn(struct sk_buff *skb, const struct tcpfwd_pkt *p, u8 ecn)
{
	unsigned int len = skb_network_offset(skb);
	u8 family = p->key.family;
	u32 diff;

	len += family == NFPROTO_IPV4 ? sizeof(struct iphdr) :
					sizeof(struct ipv6hdr);
	if (tcpfwd_ensure_writable(skb, len))
		return -ENOMEM;
	if (family == NFPROTO_IPV4) {
		ipv4_change_dsfield(ip_hdr(skb), (u8)~INET_ECN_MASK, ecn);
	} else {
		diff = tcpfwd_ip6_change_dsfield(skb_network_header(skb),
						 (u8)~INET_ECN_MASK, ecn);
		tcpfwd_csum_complete_add(skb, diff);
	}
	return 0;
}
EXPORT_SYMBOL_GPL(tcpfwd_set_ecn);

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
