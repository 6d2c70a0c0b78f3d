// SPDX-License-Identifier: GPL-2.0
/*
 * Pure sequence-number mapping (seq, ack, SACK and D-SACK edges) for
 * impair's "seqrand" rules.  See impair_seqadj.h.
 *
 * The mapping follows net/netfilter/nf_conntrack_seqadj.c:
 * nf_ct_seq_adjust() and nf_ct_sack_block_adjust().
 */
#include "../core/tcpfwd_pure.h"
#include "../core/tcpfwd_opt.h"
#include "impair_seqadj.h"

#define IMPAIR_TH_SEQ	4	/* offsets in the fixed TCP header */
#define IMPAIR_TH_ACK	8
#define IMPAIR_TH_FLAGS	13
#define IMPAIR_TH_F_ACK	0x10

void impair_seqadj_init(struct impair_seqadj *adj, u32 off)
{
	adj->correction_pos = 0;
	adj->offset_before = off;
	adj->offset_after = off;
}

u32 impair_seqadj_offset(const struct impair_seqadj *adj, u32 seq)
{
	return after(seq, adj->correction_pos) ? adj->offset_after :
						 adj->offset_before;
}

u32 impair_seqadj_map_seq(const struct impair_seqadj *this_way, u32 seq)
{
	return seq + impair_seqadj_offset(this_way, seq);
}

u32 impair_seqadj_map_ack(const struct impair_seqadj *other_way, u32 ack)
{
	if (after(ack - other_way->offset_before, other_way->correction_pos))
		return ack - other_way->offset_after;
	return ack - other_way->offset_before;
}

/* Map the 32-bit big-endian value at @p + @off, accounting for csum. */
static void impair_map_be32(u8 *p, unsigned int off, u32 val, u32 *csum_diff)
{
	u32 old_sum = tcpfwd_csum_bytes(p, off, 4), new_sum;

	tcpfwd_put_be32(p + off, val);
	if (!csum_diff)
		return;
	new_sum = tcpfwd_csum_bytes(p, off, 4);
	*csum_diff = tcpfwd_csum_add(*csum_diff,
				     tcpfwd_csum_sub(new_sum, old_sum));
}

static bool impair_sack_len_ok(unsigned int len)
{
	return len >= TCPFWD_OPTLEN_SACK_BASE + TCPFWD_OPTLEN_SACK_PERBLOCK &&
	       !((len - TCPFWD_OPTLEN_SACK_BASE) % TCPFWD_OPTLEN_SACK_PERBLOCK);
}

int impair_seqadj_map_sack(const struct impair_seqadj *other_way, u8 *opts,
			   unsigned int len, u32 *csum_diff)
{
	struct tcpfwd_opt_iter it;
	struct tcpfwd_opt o;
	int ret, nblocks = 0;

	ret = tcpfwd_opt_validate(opts, len, NULL);
	if (ret < 0)
		return ret;

	tcpfwd_opt_iter_init(&it, opts, len);
	while (tcpfwd_opt_next(&it, &o) > 0) {
		unsigned int off;

		if (o.kind != TCPFWD_OPT_SACK || !impair_sack_len_ok(o.len))
			continue;
		for (off = o.off + TCPFWD_OPTLEN_SACK_BASE; off < o.off + o.len;
		     off += 4) {
			u32 edge = tcpfwd_get_be32(opts + off);

			impair_map_be32(opts, off,
					impair_seqadj_map_ack(other_way, edge),
				       csum_diff);
		}
		nblocks += (o.len - TCPFWD_OPTLEN_SACK_BASE) /
			   TCPFWD_OPTLEN_SACK_PERBLOCK;
	}
	return nblocks;
}

int impair_seqadj_rewrite(u8 *th, unsigned int buflen,
			  const struct impair_seqadj *this_way,
			 const struct impair_seqadj *other_way, bool sack_fix,
			 u32 *csum_diff)
{
	bool ack;
	int hdrlen, ret;
	u32 val;

	hdrlen = tcpfwd_tcp_hdrlen(th, buflen);
	if (hdrlen < 0)
		return hdrlen;
	ack = th[IMPAIR_TH_FLAGS] & IMPAIR_TH_F_ACK;

	/* Validate before touching anything. */
	if (ack && sack_fix && other_way) {
		ret = tcpfwd_opt_validate(th + TCPFWD_TCPHDR_LEN,
					  hdrlen - TCPFWD_TCPHDR_LEN, NULL);
		if (ret < 0)
			return ret;
	}

	if (this_way) {
		val = tcpfwd_get_be32(th + IMPAIR_TH_SEQ);
		val = impair_seqadj_map_seq(this_way, val);
		impair_map_be32(th, IMPAIR_TH_SEQ, val, csum_diff);
	}
	if (!ack || !other_way)
		return 0;
	val = tcpfwd_get_be32(th + IMPAIR_TH_ACK);
	val = impair_seqadj_map_ack(other_way, val);
	impair_map_be32(th, IMPAIR_TH_ACK, val, csum_diff);
	if (!sack_fix)
		return 0;
	/* The option block starts at an even offset: same word parity. */
	return impair_seqadj_map_sack(other_way, th + TCPFWD_TCPHDR_LEN,
				     hdrlen - TCPFWD_TCPHDR_LEN, csum_diff);
}
