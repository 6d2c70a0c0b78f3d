/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Pure (skb-free) arithmetic of impair's "split" and "coalesce" actions
 * (MBtest's segment splitter and coalescer, Hesmans et al. 2013): where a
 * segment is cut and what each piece carries, whether two segments may be
 * joined and what the result carries, and the TCP checksum of a new
 * segment.  Compiled into impair.ko and into the userspace unit tests
 * (kmod/tests/unit/test_impair_seg.c).
 *
 * Checksums: the new segments' checksums are not computed from the IP
 * addresses but from the original segment's checksum field: the "seed"
 * is the sum of the pseudo-header without its length (the addresses and
 * the protocol; an IPv6 routing header's final destination included),
 * recovered from a segment whose check field holds either a full checksum
 * or, under CHECKSUM_PARTIAL, the pseudo-header sum.  A segment whose
 * checksum was wrong gives pieces whose checksums are wrong too, and two
 * segments whose seeds differ (one of them corrupt) are not joined.  Sums
 * use the u32 "wsum" convention of kmod/core/tcpfwd_opt.h; a checksum
 * field is its two bytes loaded in host order (memcpy to a u16), as the
 * kernel's __sum16.
 */
#ifndef _IMPAIR_SEG_H
#define _IMPAIR_SEG_H

#include "../core/tcpfwd_pure.h"

/* TCP flags (byte 13 of the header). */
#define IMPAIR_TCP_FIN	0x01
#define IMPAIR_TCP_SYN	0x02
#define IMPAIR_TCP_RST	0x04
#define IMPAIR_TCP_PSH	0x08
#define IMPAIR_TCP_URG	0x20
#define IMPAIR_TCP_CWR	0x80

/* Never split or coalesced: sequence space or pointers the pieces share. */
#define IMPAIR_SEG_NEVER	(IMPAIR_TCP_SYN | IMPAIR_TCP_RST | IMPAIR_TCP_URG)

/* Which piece keeps the options (rule argument "opts"). */
enum impair_opts_to {
	IMPAIR_OPTS_FIRST = 0,
	IMPAIR_OPTS_SECOND,
	IMPAIR_OPTS_BOTH,	/* split only */
};

/* Why a segment is not split, held or joined (0: it is). */
enum impair_seg_why {
	IMPAIR_SEG_OK = 0,
	IMPAIR_SEG_NODATA,	/* no payload: not a data segment */
	IMPAIR_SEG_SHORT,	/* too short for the cut */
	IMPAIR_SEG_FLAGS,	/* SYN, RST, URG (or FIN for coalesce) */
	IMPAIR_SEG_GAP,		/* not the held segment's successor */
	IMPAIR_SEG_BIG,		/* over the path MTU or the peer's window */
	IMPAIR_SEG_CSUM,	/* the two checksum seeds differ */
	IMPAIR_SEG_DSFIELD,	/* the IP DS fields (DSCP, ECN) differ */
};

/* The two pieces of a split: [0] is sent first. */
struct impair_split_plan {
	u32 seq[2];
	unsigned int len[2];	/* payload bytes */
	unsigned int hdrlen[2];	/* TCP header length (20: no options) */
	u8 flags[2];		/* TCP flags byte */
};

/*
 * Plan the split of a segment with sequence number @seq, TCP flags
 * @flags, a TCP header of @hdrlen bytes and @payload payload bytes: cut
 * after @at bytes (0: in half, the first piece the smaller), the options
 * to the piece(s) @opts says.  The first piece loses FIN and PSH, the
 * second CWR (as tcp_fragment() and GSO do).  Returns IMPAIR_SEG_OK with
 * *plan filled, or why not (*plan undefined).
 */
int impair_split_plan(u32 seq, u8 flags, unsigned int hdrlen,
		      unsigned int payload, unsigned int at, u8 opts,
		      struct impair_split_plan *plan);

/* A data segment as coalesce sees it. */
struct impair_coal_seg {
	u32 seq;
	unsigned int len;	/* payload bytes */
	unsigned int hdrlen;	/* IP header (extension headers too) + TCP */
	u8 flags;
	u8 dsfield;		/* IPv4 TOS, IPv6 traffic class */
	u32 seed;		/* impair_csum_seed() */
};

/*
 * May @s be held for coalescing on a path of @mtu bytes: it has data, no
 * SYN, FIN, RST or URG, and room for more data.
 */
int impair_coalesce_can_hold(const struct impair_coal_seg *s,
			     unsigned int mtu);

/*
 * May @b be joined to the held @a: b starts where a ends, has data and
 * none of SYN, FIN, RST, URG; the result (with the headers of a for
 * IMPAIR_OPTS_FIRST, of b for IMPAIR_OPTS_SECOND) fits @mtu and its
 * payload the peer's window @window; the checksum seeds agree, and so do
 * the DS fields (as GRO, which does not merge segments whose DSCP or ECN
 * differ: a CE mark is not lost).
 */
int impair_coalesce_check(const struct impair_coal_seg *a,
			  const struct impair_coal_seg *b, u8 opts,
			  unsigned int mtu, u32 window);

/*
 * The TCP flags of the joined segment: those of the segment whose header
 * it takes, with PSH and CWR if either had them.
 */
u8 impair_coalesce_flags(u8 a_flags, u8 b_flags, u8 opts);

/*
 * The seed of a segment of @tcplen bytes (TCP header and payload) whose
 * checksum field is @check: under CHECKSUM_PARTIAL (@partial) the field
 * holds the pseudo-header sum; otherwise @seg_sum is the sum of the whole
 * segment, checksum field included.
 */
u32 impair_csum_seed(bool partial, u16 check, unsigned int tcplen,
		     u32 seg_sum);

/*
 * The checksum field of a new segment of @tcplen bytes from the same
 * seed, @seg_sum being the sum of the segment with its checksum field
 * zero.
 */
u16 impair_csum_finish(u32 seed, unsigned int tcplen, u32 seg_sum);

/* Do two seeds stand for the same pseudo-header? */
bool impair_csum_seed_eq(u32 a, u32 b);

/*
 * Must coalesce's release work be (re)armed for the oldest held segment,
 * due @delay jiffies after @now, the work being @pending to run at
 * @expires?  Yes if it is not pending, or pending for later than that:
 * queued for a segment released since (joined, sent on by a flush or a
 * FIN) under a longer coalesce_timeout_ms, or for a newer segment while
 * the work ran, it would keep the oldest one that long.  Wraps as jiffies
 * do.
 */
bool impair_hold_rearm(bool pending, unsigned long expires,
		       unsigned long now, unsigned long delay);

/*
 * How many segments a GSO packet of @payload TCP payload bytes stands
 * for: @gso_segs when the stack set it, else (a packet from a tun or
 * virtio device: virtio_net_hdr_to_skb() leaves gso_segs 0 for
 * qdisc_pkt_len_init() to count) the payload in pieces of @gso_size, as
 * GSO will cut it.  At least 1.
 */
unsigned int impair_gso_nsegs(unsigned int gso_segs, unsigned int gso_size,
			      unsigned int payload);

#endif /* _IMPAIR_SEG_H */
