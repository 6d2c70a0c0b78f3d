/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Pure (skb-free) TCP option helpers shared by the ecnproxy modules:
 * option walker, option lookup and value access, option stripping (NOP
 * overwrite or compaction) and checksum-difference helpers.
 *
 * Everything here works on plain byte buffers and compiles both into the
 * kernel modules and into the userspace unit tests (kmod/tests/unit/).
 *
 * Terminology:
 *  - "option block": the bytes after the 20-byte fixed TCP header, up to
 *    doff * 4.  At most TCPMB_OPT_MAX_LEN (40) bytes.
 *  - "header buffer": a buffer starting at the first byte of the TCP
 *    header (source port); doff is read from byte 12.
 *
 * Validation: every helper that reads values from, or writes to, an option
 * block first walks the whole block; if the block is malformed it returns
 * a negative TCPMB_OPT_E* code and modifies nothing.  Bytes after an EOL
 * option are padding and are never interpreted or modified (except by the
 * compact strip modes, which rebuild the padding).
 *
 * Checksums: helpers that modify bytes accumulate a checksum difference in
 * a u32 "wsum" (same representation as the kernel's __wsum: a 32-bit
 * one's complement sum of 16-bit words loaded in host byte order).  The
 * caller starts with diff = 0 and applies the result once, in the kernel
 * with inet_proto_csum_replace_by_diff(&th->check, skb,
 * (__force __wsum)diff, false, false).  Differences assume the option
 * block starts at an even offset from the start of the TCP header, which
 * always holds (options start at byte 20).
 */
#ifndef _TCPMB_OPT_H
#define _TCPMB_OPT_H

#include "tcpmb_types.h"

/* Option kinds (IANA), as in include/net/tcp.h. */
#define TCPMB_OPT_EOL		0
#define TCPMB_OPT_NOP		1
#define TCPMB_OPT_MSS		2
#define TCPMB_OPT_WSCALE	3
#define TCPMB_OPT_SACK_PERM	4
#define TCPMB_OPT_SACK		5
#define TCPMB_OPT_TIMESTAMP	8
#define TCPMB_OPT_MD5SIG	19
#define TCPMB_OPT_AO		29
#define TCPMB_OPT_MPTCP		30
#define TCPMB_OPT_FASTOPEN	34
#define TCPMB_OPT_EXP		254

/* Option lengths (kind and length bytes included). */
#define TCPMB_OPTLEN_MSS	4
#define TCPMB_OPTLEN_WSCALE	3
#define TCPMB_OPTLEN_SACK_PERM	2
#define TCPMB_OPTLEN_TIMESTAMP	10
#define TCPMB_OPTLEN_SACK_BASE	2
#define TCPMB_OPTLEN_SACK_PERBLOCK	8

#define TCPMB_TCPHDR_LEN	20	/* fixed TCP header */
#define TCPMB_TCPHDR_MAX	60	/* doff == 15 */
#define TCPMB_OPT_MAX_LEN	40	/* 60 - 20: options in a header */
#define TCPMB_SACK_MAX_BLOCKS	4	/* (40 - 2) / 8 */

/*
 * Maximum number of options other than NOP in one block.  A real stack
 * sends at most about eight (MSS, SACK-permitted, timestamps, window
 * scale, MPTCP, Fast Open, MD5/AO, experimental); a block with more is
 * treated as malformed (TCPMB_OPT_ETOOMANY).  NOPs are not counted, so a
 * block of 40 NOPs is valid.
 */
#define TCPMB_OPT_MAX_OPTS	16

/*
 * Error codes (negative).  These are not errno values: callers treat any
 * negative return as "malformed, leave the packet alone" (or drop it) and
 * may log tcpmb_opt_strerror(err).
 */
enum tcpmb_opt_err {
	TCPMB_OPT_ETRUNC	= -1,	/* length byte missing at block end */
	TCPMB_OPT_EBADLEN	= -2,	/* length byte < 2 (0 or 1) */
	TCPMB_OPT_EOVERRUN	= -3,	/* option extends beyond the block */
	TCPMB_OPT_ETOOMANY	= -4,	/* more than TCPMB_OPT_MAX_OPTS */
	TCPMB_OPT_ETOOLONG	= -5,	/* block longer than 40 bytes */
	TCPMB_OPT_EHDR		= -6,	/* doff < 5 or beyond the buffer */
	TCPMB_OPT_ESIZE		= -7,	/* wrong length for the option kind */
	TCPMB_OPT_EINVAL	= -8,	/* invalid argument */
	TCPMB_OPT_ENOSPC	= -9,	/* output buffer too small */
};

/* One option, as yielded by the walker.  Offsets are into the block. */
struct tcpmb_opt {
	u8 kind;
	u8 off;		/* offset of the kind byte */
	u8 len;		/* total length, kind and length bytes included */
};

/*
 * Option walker.  Usage:
 *
 *	struct tcpmb_opt_iter it;
 *	struct tcpmb_opt o;
 *	int ret;
 *
 *	tcpmb_opt_iter_init(&it, opts, optlen);
 *	while ((ret = tcpmb_opt_next(&it, &o)) > 0)
 *		...;
 *	if (ret < 0)
 *		...malformed...;
 *
 * tcpmb_opt_next() returns 1 and fills *opt for each option, NOPs included
 * (len 1); 0 at the end of the block or at EOL (EOL itself is not yielded;
 * it->eol tells whether the walk stopped on one, and it->off is then the
 * offset of the EOL, otherwise the block length); a negative TCPMB_OPT_E*
 * code on a malformed block.  Errors are sticky.  It never reads outside
 * [opts, opts + len).  Options yielded before an error may be partial
 * evidence only: use tcpmb_opt_validate() first when atomicity matters.
 */
struct tcpmb_opt_iter {
	const u8 *opts;
	unsigned int len;
	unsigned int off;	/* offset of the next option */
	unsigned int count;	/* options other than NOP yielded so far */
	int err;		/* sticky error, 0 if none */
	bool done;
	bool eol;		/* the walk ended on an EOL option */
};

void tcpmb_opt_iter_init(struct tcpmb_opt_iter *it, const u8 *opts,
			 unsigned int len);
int tcpmb_opt_next(struct tcpmb_opt_iter *it, struct tcpmb_opt *opt);

/*
 * Walk the whole block.  Returns the number of options other than NOP
 * (EOL not counted) or a negative TCPMB_OPT_E* code.  If @end is not NULL
 * it receives the offset where the options end (EOL offset or @len).
 */
int tcpmb_opt_validate(const u8 *opts, unsigned int len, unsigned int *end);

/*
 * Find the first option of @kind (not EOL).  Returns 1 and fills *opt if
 * found, 0 if not, or a negative code if the block is malformed.
 */
int tcpmb_opt_find(const u8 *opts, unsigned int len, u8 kind,
		   struct tcpmb_opt *opt);

const char *tcpmb_opt_strerror(int err);

/*
 * Value access.  Getters return 1 (found, value stored), 0 (absent),
 * TCPMB_OPT_ESIZE if the first option of that kind has the wrong length
 * (Linux ignores such an option), or another negative code if the block
 * is malformed.  Setters return the same codes, write only if the value
 * differs and then add the change to *csum_diff (may be NULL).
 */
int tcpmb_opt_get_mss(const u8 *opts, unsigned int len, u16 *mss);
/* Set MSS to @mss; with @clamp only lower it (never raise it). */
int tcpmb_opt_set_mss(u8 *opts, unsigned int len, u16 mss, bool clamp,
		      u32 *csum_diff);
int tcpmb_opt_get_wscale(const u8 *opts, unsigned int len, u8 *wscale);
int tcpmb_opt_set_wscale(u8 *opts, unsigned int len, u8 wscale,
			 u32 *csum_diff);
int tcpmb_opt_get_ts(const u8 *opts, unsigned int len, u32 *tsval,
		     u32 *tsecr);
int tcpmb_opt_set_ts(u8 *opts, unsigned int len, u32 tsval, u32 tsecr,
		     u32 *csum_diff);

/* A SACK block in host byte order: [start, end) in sequence space. */
struct tcpmb_sack_block {
	u32 start;
	u32 end;
};

/*
 * Read the first SACK option: up to @max blocks into @blocks, the number
 * of blocks in the option into *nblocks (may exceed @max; only @max are
 * stored).  A SACK option whose length is not 2 + 8 * n, n >= 1, gives
 * TCPMB_OPT_ESIZE.
 */
int tcpmb_opt_get_sack(const u8 *opts, unsigned int len,
		       struct tcpmb_sack_block *blocks, unsigned int max,
		       unsigned int *nblocks);

/* 256-bit set of option kinds, for stripping. */
struct tcpmb_kindmask {
	u32 w[8];
};

static inline void tcpmb_kindmask_zero(struct tcpmb_kindmask *m)
{
	memset(m, 0, sizeof(*m));
}

static inline void tcpmb_kindmask_set(struct tcpmb_kindmask *m, u8 kind)
{
	m->w[kind >> 5] |= 1U << (kind & 31);
}

static inline void tcpmb_kindmask_clear(struct tcpmb_kindmask *m, u8 kind)
{
	m->w[kind >> 5] &= ~(1U << (kind & 31));
}

static inline bool tcpmb_kindmask_test(const struct tcpmb_kindmask *m,
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
struct tcpmb_strip_res {
	unsigned int old_hdrlen;	/* doff * 4 before */
	unsigned int new_hdrlen;	/* doff * 4 after */
	unsigned int removed;		/* old_hdrlen - new_hdrlen */
	unsigned int stripped;		/* options stripped */
	u32 csum_diff;			/* wsum difference, header bytes */
};

/*
 * All strip functions take a header buffer @th of @buflen bytes (at least
 * doff * 4), strip every option whose kind is in @mask (NOP and EOL are
 * never stripped, options after EOL are never looked at), fill *res and
 * return the number of options stripped (0: nothing modified at all), or
 * a negative TCPMB_OPT_E* code (nothing modified).
 *
 * tcpmb_opt_strip_nop(): overwrite each matching option with NOPs; the
 * header length is unchanged (res->removed == 0).  Checksum: apply
 * res->csum_diff (incremental, exact).
 *
 * tcpmb_opt_strip_compact(): @th holds the header followed by the payload
 * (@buflen = header + payload).  Matching options are removed together
 * with the run of NOPs directly before each of them (their alignment
 * padding); NOPs after the last kept option and everything from EOL on are
 * dropped; the kept options keep their order and their own leading NOPs,
 * and the block is padded to a multiple of 4 with an EOL followed by zero
 * bytes (RFC 9293).  The payload is moved down by res->removed bytes, the
 * data offset in byte 12 is updated (its low nibble is preserved) and the
 * last res->removed bytes of the buffer are left stale for the caller to
 * trim.  res->removed is always a multiple of 4, so the payload keeps its
 * 16-bit alignment and its checksum contribution.  Checksum: apply
 * res->csum_diff (header bytes) with pseudohdr=false, then change the
 * pseudo-header TCP length from old to new (inet_proto_csum_replace2/4
 * with pseudohdr=true), and fix the IP total/payload length (and the
 * IPv4 header checksum).  A full recompute is equally correct.  When
 * nothing is removed (e.g. only 2 bytes stripped inside a 4-byte pad) the
 * block may still be rewritten with res->removed == 0.
 *
 * tcpmb_opt_strip_compact_pull(): same result, but the payload stays
 * where it is and the rebuilt header is written so that it ends where the
 * old one ended: it starts at th + res->removed.  For paged or GSO skbs:
 * the caller then moves the bytes in front of the TCP header (IP header
 * and any extension headers) forward by res->removed and skb_pull()s
 * them.  The first res->removed bytes of @th are left stale.  @buflen
 * need only cover the header.  Checksum handling as for compact.
 */
int tcpmb_opt_strip_nop(u8 *th, unsigned int buflen,
			const struct tcpmb_kindmask *mask,
			struct tcpmb_strip_res *res);
int tcpmb_opt_strip_compact(u8 *th, unsigned int buflen,
			    const struct tcpmb_kindmask *mask,
			    struct tcpmb_strip_res *res);
int tcpmb_opt_strip_compact_pull(u8 *th, unsigned int buflen,
				 const struct tcpmb_kindmask *mask,
				 struct tcpmb_strip_res *res);

/* Header length doff * 4 from a header buffer, or TCPMB_OPT_EHDR. */
int tcpmb_tcp_hdrlen(const u8 *th, unsigned int buflen);

/*
 * Checksum helpers, same arithmetic as the kernel's csum_add(),
 * csum_sub(), csum_partial() and csum_fold().  tcpmb_csum_bytes() sums
 * @len bytes at @base + @off, placing each byte in its 16-bit word
 * according to the parity of its offset from @base (so @base must be
 * 16-bit aligned relative to the start of the checksummed data; @off and
 * @len may be odd).  tcpmb_csum_fold() returns the complemented folded sum
 * like csum_fold().
 */
u32 tcpmb_csum_add(u32 a, u32 b);
u32 tcpmb_csum_sub(u32 a, u32 b);
u32 tcpmb_csum_bytes(const u8 *base, unsigned int off, unsigned int len);
u16 tcpmb_csum_fold(u32 sum);

/* Big-endian loads and stores from unaligned byte pointers. */
static inline u16 tcpmb_get_be16(const u8 *p)
{
	return (u16)(((u16)p[0] << 8) | p[1]);
}

static inline u32 tcpmb_get_be32(const u8 *p)
{
	return ((u32)p[0] << 24) | ((u32)p[1] << 16) |
	       ((u32)p[2] << 8) | (u32)p[3];
}

static inline void tcpmb_put_be16(u8 *p, u16 v)
{
	p[0] = (u8)(v >> 8);
	p[1] = (u8)v;
}

static inline void tcpmb_put_be32(u8 *p, u32 v)
{
	p[0] = (u8)(v >> 24);
	p[1] = (u8)(v >> 16);
	p[2] = (u8)(v >> 8);
	p[3] = (u8)v;
}

#endif /* _TCPMB_OPT_H */
