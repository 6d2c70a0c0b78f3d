// SPDX-License-Identifier: GPL-2.0
/*
 * Split and coalesce arithmetic of the impairment module; see
 * impair_seg.h.  Pure code: no skb, no allocation.
 */
#include "../core/tcpfwd_pure.h"
#include "../core/tcpfwd_opt.h"
#include "impair_seg.h"

int impair_split_plan(u32 seq, u8 flags, unsigned int hdrlen,
		      unsigned int payload, unsigned int at, u8 opts,
		      struct impair_split_plan *plan)
{
	unsigned int first;

	if (!payload)
		return IMPAIR_SEG_NODATA;
	if (flags & IMPAIR_SEG_NEVER)
		return IMPAIR_SEG_FLAGS;
	if (hdrlen < TCPFWD_TCPHDR_LEN || hdrlen > TCPFWD_TCPHDR_MAX ||
	    opts > IMPAIR_OPTS_BOTH)
		return IMPAIR_SEG_SHORT;
	first = at ? at : payload / 2;
	if (!first || first >= payload)
		return IMPAIR_SEG_SHORT;
	plan->seq[0] = seq;
	plan->seq[1] = seq + first;
	plan->len[0] = first;
	plan->len[1] = payload - first;
	plan->hdrlen[0] = opts == IMPAIR_OPTS_SECOND ? TCPFWD_TCPHDR_LEN :
						      hdrlen;
	plan->hdrlen[1] = opts == IMPAIR_OPTS_FIRST ? TCPFWD_TCPHDR_LEN :
						     hdrlen;
	plan->flags[0] = flags & ~(IMPAIR_TCP_FIN | IMPAIR_TCP_PSH);
	plan->flags[1] = flags & ~IMPAIR_TCP_CWR;
	return IMPAIR_SEG_OK;
}

int impair_coalesce_can_hold(const struct impair_coal_seg *s,
			     unsigned int mtu)
{
	if (!s->len)
		return IMPAIR_SEG_NODATA;
	if (s->flags & (IMPAIR_SEG_NEVER | IMPAIR_TCP_FIN))
		return IMPAIR_SEG_FLAGS;
	if (s->hdrlen + s->len >= mtu)
		return IMPAIR_SEG_BIG;
	return IMPAIR_SEG_OK;
}

int impair_coalesce_check(const struct impair_coal_seg *a,
			  const struct impair_coal_seg *b, u8 opts,
			  unsigned int mtu, u32 window)
{
	unsigned int hdrlen = opts == IMPAIR_OPTS_SECOND ? b->hdrlen :
							   a->hdrlen;
	u64 len = (u64)a->len + b->len;

	if (!b->len)
		return IMPAIR_SEG_NODATA;
	if (b->flags & (IMPAIR_SEG_NEVER | IMPAIR_TCP_FIN))
		return IMPAIR_SEG_FLAGS;
	if (a->seq + a->len != b->seq)
		return IMPAIR_SEG_GAP;
	if (hdrlen + len > mtu || len > window)
		return IMPAIR_SEG_BIG;
	if (!impair_csum_seed_eq(a->seed, b->seed))
		return IMPAIR_SEG_CSUM;
	if (a->dsfield != b->dsfield)
		return IMPAIR_SEG_DSFIELD;
	return IMPAIR_SEG_OK;
}

u8 impair_coalesce_flags(u8 a_flags, u8 b_flags, u8 opts)
{
	u8 base = opts == IMPAIR_OPTS_SECOND ? b_flags : a_flags;

	return base | ((a_flags | b_flags) & (IMPAIR_TCP_PSH | IMPAIR_TCP_CWR));
}

/* The sum of the pseudo-header's 16-bit length word (32 bits in IPv6). */
static u32 impair_len_sum(unsigned int tcplen)
{
	u8 w[4];

	tcpfwd_put_be32(w, tcplen);
	return tcpfwd_csum_bytes(w, 0, sizeof(w));
}

/* Folded to 16 bits, not complemented; 0xffff for a zero sum. */
static u16 impair_fold(u32 sum)
{
	sum = (sum & 0xffff) + (sum >> 16);
	sum = (sum & 0xffff) + (sum >> 16);
	return sum ? (u16)sum : 0xffff;
}

u32 impair_csum_seed(bool partial, u16 check, unsigned int tcplen,
		     u32 seg_sum)
{
	if (partial)
		return tcpfwd_csum_sub(check, impair_len_sum(tcplen));
	/* seed + length + segment sums to zero (0xffff) when valid */
	return ~tcpfwd_csum_add(impair_len_sum(tcplen), seg_sum);
}

u16 impair_csum_finish(u32 seed, unsigned int tcplen, u32 seg_sum)
{
	u32 sum = tcpfwd_csum_add(seed, impair_len_sum(tcplen));

	return (u16)~impair_fold(tcpfwd_csum_add(sum, seg_sum));
}

bool impair_csum_seed_eq(u32 a, u32 b)
{
	return impair_fold(a) == impair_fold(b);
}

bool impair_hold_rearm(bool pending, unsigned long expires,
		       unsigned long now, unsigned long delay)
{
	/* time_after(expires, now + delay) */
	return !pending || (long)(now + delay - expires) < 0;
}

unsigned int impair_gso_nsegs(unsigned int gso_segs, unsigned int gso_size,
			      unsigned int payload)
{
	if (gso_segs)
		return gso_segs;
	if (!gso_size || payload <= gso_size)
		return 1;
	return payload / gso_size + !!(payload % gso_size);
}
