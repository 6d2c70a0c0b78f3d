/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Pure (skb-free) sequence-number mapping for impair's seqrand rules,
 * modelled on net/netfilter/nf_conntrack_seqadj.c.
 *
 * One struct impair_seqadj per direction of a flow.  For a segment
 * travelling in direction d:
 *   - its seq is mapped with the offset of direction d
 *     (impair_seqadj_map_seq(&adj[d], seq) == seq + offset);
 *   - its ack and its SACK/D-SACK block edges refer to the other
 *     direction's (rewritten) sequence space and are mapped back with the
 *     inverse offset of direction !d (impair_seqadj_map_ack(&adj[!d], ack)
 *     == ack - offset).
 * All arithmetic is modulo 2^32; negative offsets are passed as their
 * two's complement (e.g. (u32)-1000).  Comparisons use before()/after().
 *
 * A "stale SACK" middlebox (ISN randomiser that forgets SACK) is obtained
 * by mapping seq/ack only (impair_seqadj_rewrite() with sack_fix false).
 */
#ifndef _IMPAIR_SEQADJ_H
#define _IMPAIR_SEQADJ_H

#include "../core/tcpfwd_pure.h"
#include "../core/tcpfwd_opt.h"

/*
 * Like struct nf_ct_seqadj: sequence numbers after correction_pos get
 * offset_after, the others offset_before.  With a constant offset
 * (impair_seqadj_init()) both are equal and correction_pos is irrelevant.
 */
struct impair_seqadj {
	u32 correction_pos;
	u32 offset_before;
	u32 offset_after;
};

/* Constant offset @off for the whole flow (e.g. a random ISN offset). */
void impair_seqadj_init(struct impair_seqadj *adj, u32 off);

/* Offset applying to original sequence number @seq (nf_ct_seq_offset). */
u32 impair_seqadj_offset(const struct impair_seqadj *adj, u32 seq);

/* seq of a segment in this direction: original -> rewritten. */
u32 impair_seqadj_map_seq(const struct impair_seqadj *this_way, u32 seq);

/*
 * ack (or SACK edge) of a segment in the other direction: rewritten ->
 * original.  Inverse of impair_seqadj_map_seq() for the same struct.
 */
u32 impair_seqadj_map_ack(const struct impair_seqadj *other_way, u32 ack);

/*
 * Map both edges of every block of every well-formed SACK option in the
 * option block (the first block may be a D-SACK; it is mapped the same
 * way).  SACK options whose length is not 2 + 8 * n (n >= 1) are left
 * alone, as Linux ignores them.  Adds the change to *csum_diff (may be
 * NULL).  Returns the number of blocks mapped, or a negative TCPFWD_OPT_E*
 * code if the block is malformed (nothing modified).
 */
int impair_seqadj_map_sack(const struct impair_seqadj *other_way, u8 *opts,
			   unsigned int len, u32 *csum_diff);

/*
 * Rewrite a TCP header in place (header buffer, see tcpfwd_opt.h): seq with
 * @this_way, and if the ACK flag is set, ack with @other_way and, if
 * @sack_fix, the SACK blocks with @other_way.  A NULL adj means offset 0.
 * Adds the change to *csum_diff (may be NULL; apply with pseudohdr=false).
 * Returns the number of SACK blocks mapped (>= 0), or a negative
 * TCPFWD_OPT_E* code (bad doff, or with @sack_fix a malformed option
 * block); on error nothing is modified, and the caller may drop the
 * segment or retry with @sack_fix false.
 */
int impair_seqadj_rewrite(u8 *th, unsigned int buflen,
			  const struct impair_seqadj *this_way,
			 const struct impair_seqadj *other_way, bool sack_fix,
			 u32 *csum_diff);

#endif /* _IMPAIR_SEQADJ_H */
