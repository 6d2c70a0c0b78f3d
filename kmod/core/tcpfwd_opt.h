/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Pure (skb-free) TCP option helpers of tcpfwd.ko, shared by ecn_proxy and
 * impair: option walker, option lookup and value access, SACK option
 * parsing and building, and checksum-difference helpers.
 *
 * Everything here works on plain byte buffers and compiles both into
 * tcpfwd.ko and into the userspace unit tests (kmod/tests/unit/).
 *
 * Terminology:
 *  - "option block": the bytes after the 20-byte fixed TCP header, up to
 *    doff * 4.  At most TCPFWD_OPT_MAX_LEN (40) bytes.
 *  - "header buffer": a buffer starting at the first byte of the TCP
 *    header (source port); doff is read from byte 12.
 *
 * Validation: every helper that reads values from, or writes to, an option
 * block first walks the whole block; if the block is malformed it returns
 * a negative TCPFWD_OPT_E* code and modifies nothing.  Bytes after an EOL
 * option are padding and are never interpreted or modified (except by the
 * compact strip of kmod/impair/impair_strip.c, which rebuilds the padding).
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
#ifndef _TCPFWD_OPT_H
#define _TCPFWD_OPT_H

#include "tcpfwd_pure.h"

/* Option kinds (IANA), as in include/net/tcp.h. */
#define TCPFWD_OPT_EOL		0
#define TCPFWD_OPT_NOP		1
#define TCPFWD_OPT_MSS		2
#define TCPFWD_OPT_WSCALE	3
#define TCPFWD_OPT_SACK_PERM	4
#define TCPFWD_OPT_SACK		5
#define TCPFWD_OPT_TIMESTAMP	8
#define TCPFWD_OPT_MD5SIG	19
#define TCPFWD_OPT_AO		29
#define TCPFWD_OPT_MPTCP		30
#define TCPFWD_OPT_FASTOPEN	34
#define TCPFWD_OPT_EXP		254

/* Option lengths (kind and length bytes included). */
#define TCPFWD_OPTLEN_MSS	4
#define TCPFWD_OPTLEN_WSCALE	3
#define TCPFWD_OPTLEN_SACK_PERM	2
#define TCPFWD_OPTLEN_TIMESTAMP	10
#define TCPFWD_OPTLEN_SACK_BASE	2
#define TCPFWD_OPTLEN_SACK_PERBLOCK	8

#define TCPFWD_TCPHDR_LEN	20	/* fixed TCP header */
#define TCPFWD_TCPHDR_MAX	60	/* doff == 15 */
#define TCPFWD_OPT_MAX_LEN	40	/* 60 - 20: options in a header */
#define TCPFWD_SACK_MAX_BLOCKS	4	/* (40 - 2) / 8 */

/*
 * Maximum number of options other than NOP in one block.  A real stack
 * sends at most about eight (MSS, SACK-permitted, timestamps, window
 * scale, MPTCP, Fast Open, MD5/AO, experimental); a block with more is
 * treated as malformed (TCPFWD_OPT_ETOOMANY).  NOPs are not counted, so a
 * block of 40 NOPs is valid.
 */
#define TCPFWD_OPT_MAX_OPTS	16

/*
 * Error codes (negative).  These are not errno values: callers treat any
 * negative return as "malformed, leave the packet alone" (or drop it) and
 * may log tcpfwd_opt_strerror(err).
 */
enum tcpfwd_opt_err {
	TCPFWD_OPT_ETRUNC	= -1,	/* length byte missing at block end */
	TCPFWD_OPT_EBADLEN	= -2,	/* length byte < 2 (0 or 1) */
	TCPFWD_OPT_EOVERRUN	= -3,	/* option extends beyond the block */
	TCPFWD_OPT_ETOOMANY	= -4,	/* more than TCPFWD_OPT_MAX_OPTS */
	TCPFWD_OPT_ETOOLONG	= -5,	/* block longer than 40 bytes */
	TCPFWD_OPT_EHDR		= -6,	/* doff < 5 or beyond the buffer */
	TCPFWD_OPT_ESIZE		= -7,	/* wrong length for the option kind */
	TCPFWD_OPT_EINVAL	= -8,	/* invalid argument */
	TCPFWD_OPT_ENOSPC	= -9,	/* output buffer too small */
};

/* One option, as yielded by the walker.  Offsets are into the block. */
struct tcpfwd_opt {
	u8 kind;
	u8 off;		/* offset of the kind byte */
	u8 len;		/* total length, kind and length bytes included */
};

/*
 * Option walker.  Usage:
 *
 *	struct tcpfwd_opt_iter it;
 *	struct tcpfwd_opt o;
 *	int ret;
 *
 *	tcpfwd_opt_iter_init(&it, opts, optlen);
 *	while ((ret = tcpfwd_opt_next(&it, &o)) > 0)
 *		...;
 *	if (ret < 0)
 *		...malformed...;
 *
 * tcpfwd_opt_next() returns 1 and fills *opt for each option, NOPs included
 * (len 1); 0 at the end of the block or at EOL (EOL itself is not yielded;
 * it->eol tells whether the walk stopped on one, and it->off is then the
 * offset of the EOL, otherwise the block length); a negative TCPFWD_OPT_E*
 * code on a malformed block.  Errors are sticky.  It never reads outside
 * [opts, opts + len).  Options yielded before an error may be partial
 * evidence only: use tcpfwd_opt_validate() first when atomicity matters.
 */
struct tcpfwd_opt_iter {
	const u8 *opts;
	unsigned int len;
	unsigned int off;	/* offset of the next option */
	unsigned int count;	/* options other than NOP yielded so far */
	int err;		/* sticky error, 0 if none */
	bool done;
	bool eol;		/* the walk ended on an EOL option */
};

void tcpfwd_opt_iter_init(struct tcpfwd_opt_iter *it, const u8 *opts,
			  unsigned int len);
int tcpfwd_opt_next(struct tcpfwd_opt_iter *it, struct tcpfwd_opt *opt);

/*
 * Walk the whole block.  Returns the number of options other than NOP
 * (EOL not counted) or a negative TCPFWD_OPT_E* code.  If @end is not NULL
 * it receives the offset where the options end (EOL offset or @len).
 */
int tcpfwd_opt_validate(const u8 *opts, unsigned int len, unsigned int *end);

/*
 * Find the first option of @kind (not EOL).  Returns 1 and fills *opt if
 * found, 0 if not, or a negative code if the block is malformed.
 */
int tcpfwd_opt_find(const u8 *opts, unsigned int len, u8 kind,
		    struct tcpfwd_opt *opt);

/*
 * Value access.  Getters return 1 (found, value stored), 0 (absent),
 * TCPFWD_OPT_ESIZE if the first option of that kind has the wrong length
 * (Linux ignores such an option), or another negative code if the block
 * is malformed.  Setters return the same codes, write only if the value
 * differs and then add the change to *csum_diff (may be NULL).
 */
/* Set MSS to @mss; with @clamp only lower it (never raise it). */
int tcpfwd_opt_set_mss(u8 *opts, unsigned int len, u16 mss, bool clamp,
		       u32 *csum_diff);
int tcpfwd_opt_set_wscale(u8 *opts, unsigned int len, u8 wscale,
			  u32 *csum_diff);
int tcpfwd_opt_get_ts(const u8 *opts, unsigned int len, u32 *tsval,
		      u32 *tsecr);
int tcpfwd_opt_set_ts(u8 *opts, unsigned int len, u32 tsval, u32 tsecr,
		      u32 *csum_diff);

/* A SACK block in host byte order: [start, end) in sequence space. */
struct tcpfwd_sack_block {
	u32 start;
	u32 end;
};

/*
 * Read the first SACK option: up to @max blocks into @blocks, the number
 * of blocks in the option into *nblocks (may exceed @max; only @max are
 * stored).  A SACK option whose length is not 2 + 8 * n, n >= 1, gives
 * TCPFWD_OPT_ESIZE.
 */
int tcpfwd_opt_get_sack(const u8 *opts, unsigned int len,
			struct tcpfwd_sack_block *blocks, unsigned int max,
		       unsigned int *nblocks);

/* Most SACK blocks that fit in @space option bytes (NOP NOP SACK). */
unsigned int tcpfwd_sack_max_blocks(unsigned int space);

/*
 * Build "NOP NOP SACK(kind 5, len 2 + 8k) blocks" into @out, with
 * k = min(n, 4, tcpfwd_sack_max_blocks(space)) of the given blocks, in
 * order (a D-SACK block, if any, goes first).  The result is 4 + 8k bytes,
 * a multiple of 4.  Returns that length, TCPFWD_OPT_EINVAL if n == 0 or a
 * written block is empty or inverted (!before(start, end)), or
 * TCPFWD_OPT_ENOSPC if not even one block fits (@space < 12).  Nothing is
 * written on error.
 */
int tcpfwd_sack_build(u8 *out, unsigned int space,
		      const struct tcpfwd_sack_block *blocks, unsigned int n);

/* Header length doff * 4 from a header buffer, or TCPFWD_OPT_EHDR. */
int tcpfwd_tcp_hdrlen(const u8 *th, unsigned int buflen);

/*
 * Checksum helpers, same arithmetic as the kernel's csum_add(),
 * csum_sub() and csum_partial().  tcpfwd_csum_bytes() sums
 * @len bytes at @base + @off, placing each byte in its 16-bit word
 * according to the parity of its offset from @base (so @base must be
 * 16-bit aligned relative to the start of the checksummed data; @off and
 * @len may be odd).
 */
u32 tcpfwd_csum_add(u32 a, u32 b);
u32 tcpfwd_csum_sub(u32 a, u32 b);
u32 tcpfwd_csum_bytes(const u8 *base, unsigned int off, unsigned int len);

/* Add the change from @old_sum to @new_sum to *csum_diff (may be NULL). */
static inline void tcpfwd_csum_acc(u32 *csum_diff, u32 old_sum, u32 new_sum)
{
	if (csum_diff)
		*csum_diff = tcpfwd_csum_add(*csum_diff,
					     tcpfwd_csum_sub(new_sum, old_sum));
}

/* Big-endian loads and stores from unaligned byte pointers. */
static inline u16 tcpfwd_get_be16(const u8 *p)
{
	return (u16)(((u16)p[0] << 8) | p[1]);
}

static inline u32 tcpfwd_get_be32(const u8 *p)
{
	return ((u32)p[0] << 24) | ((u32)p[1] << 16) |
	       ((u32)p[2] << 8) | (u32)p[3];
}

static inline void tcpfwd_put_be16(u8 *p, u16 v)
{
	p[0] = (u8)(v >> 8);
	p[1] = (u8)v;
}

static inline void tcpfwd_put_be32(u8 *p, u32 v)
{
	p[0] = (u8)(v >> 24);
	p[1] = (u8)(v >> 16);
	p[2] = (u8)(v >> 8);
	p[3] = (u8)v;
}

#endif /* _TCPFWD_OPT_H */
