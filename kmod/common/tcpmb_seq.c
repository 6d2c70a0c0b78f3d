// SPDX-License-Identifier: GPL-2.0
/*
 * Pure sequence-number mapping (seq, ack, SACK and D-SACK edges), SACK
 * option builder and D-SACK test.  See tcpmb_seq.h.
 *
 * The mapping follows net/netfilter/nf_conntrack_seqadj.c:
 * nf_ct_seq_adjust() and nf_ct_sack_block_adjust().
 */
#include "tcpmb_types.h"
#include "tcpmb_opt.h"
#include "tcpmb_seq.h"

#define TCPMB_TH_SEQ	4	/* offsets in the fixed TCP header */
#define TCPMB_TH_ACK	8
#define TCPMB_TH_FLAGS	13
#define TCPMB_TH_F_ACK	0x10

void tcpmb_seqadj_init(struct tcpmb_seqadj *adj, u32 off)
{
	adj->correction_pos = 0;
	adj->offset_before = off;
	adj->offset_after = off;
}

void tcpmb_seqadj_set(struct tcpmb_seqadj *adj, u32 seq, u32 delta)
{
	if (!delta)
		return;
	if (adj->offset_before == adj->offset_after ||
	    before(adj->correction_pos, seq)) {
		adj->correction_pos = seq;
		adj->offset_before = adj->offset_after;
		adj->offset_after += delta;
	}
}

u32 tcpmb_seqadj_offset(const struct tcpmb_seqadj *adj, u32 seq)
{
	return after(seq, adj->correction_pos) ? adj->offset_after :
						 adj->offset_before;
}

u32 tcpmb_seqadj_map_seq(const struct tcpmb_seqadj *this_way, u32 seq)
{
	return seq + tcpmb_seqadj_offset(this_way, seq);
}

u32 tcpmb_seqadj_map_ack(const struct tcpmb_seqadj *other_way, u32 ack)
{
	if (after(ack - other_way->offset_before, other_way->correction_pos))
		return ack - other_way->offset_after;
	return ack - other_way->offset_before;
}

/* Map the 32-bit big-endian value at @p + @off, accounting for csum. */
static void tcpmb_map_be32(u8 *p, unsigned int off, u32 val, u32 *csum_diff)
{
	u32 old_sum = tcpmb_csum_bytes(p, off, 4), new_sum;

	tcpmb_put_be32(p + off, val);
	if (!csum_diff)
		return;
	new_sum = tcpmb_csum_bytes(p, off, 4);
	*csum_diff = tcpmb_csum_add(*csum_diff,
				    tcpmb_csum_sub(new_sum, old_sum));
}

static bool tcpmb_sack_len_ok(unsigned int len)
{
	return len >= TCPMB_OPTLEN_SACK_BASE + TCPMB_OPTLEN_SACK_PERBLOCK &&
	       !((len - TCPMB_OPTLEN_SACK_BASE) % TCPMB_OPTLEN_SACK_PERBLOCK);
}

int tcpmb_seqadj_map_sack(const struct tcpmb_seqadj *other_way, u8 *opts,
			  unsigned int len, u32 *csum_diff)
{
	struct tcpmb_opt_iter it;
	struct tcpmb_opt o;
	int ret, nblocks = 0;

	ret = tcpmb_opt_validate(opts, len, NULL);
	if (ret < 0)
		return ret;

	tcpmb_opt_iter_init(&it, opts, len);
	while (tcpmb_opt_next(&it, &o) > 0) {
		unsigned int off;

		if (o.kind != TCPMB_OPT_SACK || !tcpmb_sack_len_ok(o.len))
			continue;
		for (off = o.off + TCPMB_OPTLEN_SACK_BASE; off < o.off + o.len;
		     off += 4) {
			u32 edge = tcpmb_get_be32(opts + off);

			tcpmb_map_be32(opts, off,
				       tcpmb_seqadj_map_ack(other_way, edge),
				       csum_diff);
		}
		nblocks += (o.len - TCPMB_OPTLEN_SACK_BASE) /
			   TCPMB_OPTLEN_SACK_PERBLOCK;
	}
	return nblocks;
}

int tcpmb_seqadj_rewrite(u8 *th, unsigned int buflen,
			 const struct tcpmb_seqadj *this_way,
			 const struct tcpmb_seqadj *other_way, bool sack_fix,
			 u32 *csum_diff)
{
	bool ack;
	int hdrlen, ret;
	u32 val;

	hdrlen = tcpmb_tcp_hdrlen(th, buflen);
	if (hdrlen < 0)
		return hdrlen;
	ack = th[TCPMB_TH_FLAGS] & TCPMB_TH_F_ACK;

	/* Validate before touching anything. */
	if (ack && sack_fix && other_way) {
		ret = tcpmb_opt_validate(th + TCPMB_TCPHDR_LEN,
					 hdrlen - TCPMB_TCPHDR_LEN, NULL);
		if (ret < 0)
			return ret;
	}

	if (this_way) {
		val = tcpmb_get_be32(th + TCPMB_TH_SEQ);
		val = tcpmb_seqadj_map_seq(this_way, val);
		tcpmb_map_be32(th, TCPMB_TH_SEQ, val, csum_diff);
	}
	if (!ack || !other_way)
		return 0;
	val = tcpmb_get_be32(th + TCPMB_TH_ACK);
	val = tcpmb_seqadj_map_ack(other_way, val);
	tcpmb_map_be32(th, TCPMB_TH_ACK, val, csum_diff);
	if (!sack_fix)
		return 0;
	/* The option block starts at an even offset: same word parity. */
	return tcpmb_seqadj_map_sack(other_way, th + TCPMB_TCPHDR_LEN,
				     hdrlen - TCPMB_TCPHDR_LEN, csum_diff);
}

unsigned int tcpmb_sack_max_blocks(unsigned int space)
{
	unsigned int n;

	if (space < 2 + TCPMB_OPTLEN_SACK_BASE + TCPMB_OPTLEN_SACK_PERBLOCK)
		return 0;
	n = (space - 2 - TCPMB_OPTLEN_SACK_BASE) / TCPMB_OPTLEN_SACK_PERBLOCK;
	return n < TCPMB_SACK_MAX_BLOCKS ? n : TCPMB_SACK_MAX_BLOCKS;
}

int tcpmb_sack_build(u8 *out, unsigned int space,
		     const struct tcpmb_sack_block *blocks, unsigned int n)
{
	unsigned int k, i, len;

	if (!n)
		return TCPMB_OPT_EINVAL;
	k = tcpmb_sack_max_blocks(space);
	if (!k)
		return TCPMB_OPT_ENOSPC;
	if (k > n)
		k = n;
	for (i = 0; i < k; i++)
		if (!before(blocks[i].start, blocks[i].end))
			return TCPMB_OPT_EINVAL;

	len = TCPMB_OPTLEN_SACK_BASE + k * TCPMB_OPTLEN_SACK_PERBLOCK;
	out[0] = TCPMB_OPT_NOP;
	out[1] = TCPMB_OPT_NOP;
	out[2] = TCPMB_OPT_SACK;
	out[3] = (u8)len;
	for (i = 0; i < k; i++) {
		u8 *p = out + 4 + i * TCPMB_OPTLEN_SACK_PERBLOCK;

		tcpmb_put_be32(p, blocks[i].start);
		tcpmb_put_be32(p + 4, blocks[i].end);
	}
	return 2 + len;
}

bool tcpmb_sack_is_dsack(const struct tcpmb_sack_block *blocks,
			 unsigned int n, u32 ack)
{
	if (!n)
		return false;
	if (before(blocks[0].start, ack))
		return true;
	if (n < 2)
		return false;
	return !after(blocks[0].end, blocks[1].end) &&
	       !before(blocks[0].start, blocks[1].start);
}
