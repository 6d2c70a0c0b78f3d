/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Pure (skb-free) option stripping for impair's "strip" rules, on a TCP
 * header buffer (see kmod/core/tcpfwd_opt.h for the terms and the checksum
 * convention).
 */
#ifndef _IMPAIR_STRIP_H
#define _IMPAIR_STRIP_H

#include "../core/tcpfwd_pure.h"
#include "../core/tcpfwd_opt.h"

/* 256-bit set of option kinds, for stripping. */
struct impair_kindmask {
	u32 w[8];
};

static inline void impair_kindmask_zero(struct impair_kindmask *m)
{
	memset(m, 0, sizeof(*m));
}

static inline void impair_kindmask_set(struct impair_kindmask *m, u8 kind)
{
	m->w[kind >> 5] |= 1U << (kind & 31);
}

static inline bool impair_kindmask_test(const struct impair_kindmask *m,
					u8 kind)
{
	return m->w[kind >> 5] & (1U << (kind & 31));
}

/*
 * Result of a strip.  Lengths in bytes.  csum_diff covers the TCP header
 * bytes only (options and, in compact modes, the data offset byte); it
 * does not cover the pseudo-header length, which the caller must update
 * itself in the compact modes (see below).
 */
struct impair_strip_res {
	unsigned int old_hdrlen;	/* doff * 4 before */
	unsigned int new_hdrlen;	/* doff * 4 after */
	unsigned int removed;		/* old_hdrlen - new_hdrlen */
	unsigned int stripped;		/* options stripped */
	u32 csum_diff;			/* wsum difference, header bytes */
};

/*
 * The options a strip removes, as found by impair_strip_scan(): offsets
 * and lengths in the option block, in order.  A valid block has at most
 * TCPFWD_OPT_MAX_OPTS options other than NOP.
 */
struct impair_strip_plan {
	unsigned int hdrlen;		/* doff * 4 */
	unsigned int n;
	u8 off[TCPFWD_OPT_MAX_OPTS];
	u8 len[TCPFWD_OPT_MAX_OPTS];
};

/*
 * One read-only walk over the header buffer @th (@buflen bytes, at least
 * doff * 4): validates the option block and records in *plan every option
 * whose kind is in @mask (NOP and EOL never, nothing after EOL).  Returns
 * plan->n (0: nothing to strip), or a negative TCPFWD_OPT_E* code if the
 * block is malformed.  Lets the caller skip making a packet writable when
 * nothing would change.
 */
int impair_strip_scan(const u8 *th, unsigned int buflen,
		      const struct impair_kindmask *mask,
		      struct impair_strip_plan *plan);

/*
 * Overwrite the options of @plan with NOPs in @th, the header the plan was
 * made from (the same bytes, now writable), without walking again: the
 * header length is unchanged (res->removed == 0); fills *res and returns
 * plan->n.  Checksum: apply res->csum_diff (incremental, exact).
 */
int impair_strip_apply_nop(u8 *th, const struct impair_strip_plan *plan,
			   struct impair_strip_res *res);

/*
 * impair_strip_opts_compact() takes a header buffer @th of @buflen bytes
 * (at least doff * 4), strips every option whose kind is in @mask (NOP and
 * EOL are never stripped, options after EOL are never looked at), fills
 * *res and returns the number of options stripped (0: nothing modified at
 * all), or a negative TCPFWD_OPT_E* code (nothing modified).  Matching
 * options are removed together with the
 * run of NOPs directly before each of them (their alignment padding); NOPs
 * after the last kept option and everything from EOL on are dropped; the
 * kept options keep their order and their own leading NOPs, and the block
 * is padded to a multiple of 4 with an EOL followed by zero bytes (RFC
 * 9293).  The rebuilt header is written so that it ends where the old one
 * ended: it starts at th + res->removed, and the payload (not in @th)
 * never moves, which suits paged and GSO skbs.  The caller then moves the
 * bytes in front of the TCP header (IP header and any extension headers)
 * forward by res->removed and skb_pull()s them; the first res->removed
 * bytes of @th are left stale.  The data offset is updated (its low nibble
 * is preserved); res->removed is a multiple of 4, so the payload keeps its
 * 16-bit alignment and its checksum contribution.  Checksum: apply
 * res->csum_diff (header bytes) with pseudohdr=false, then change the
 * pseudo-header TCP length from old to new (inet_proto_csum_replace4 with
 * pseudohdr=true), and fix the IP total/payload length (and the IPv4
 * header checksum).  When nothing is removed (e.g. only 2 bytes stripped
 * inside a 4-byte pad) the block may still be rewritten with
 * res->removed == 0.
 */
int impair_strip_opts_compact(u8 *th, unsigned int buflen,
			      const struct impair_kindmask *mask,
			 struct impair_strip_res *res);

#endif /* _IMPAIR_STRIP_H */
