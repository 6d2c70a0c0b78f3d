// SPDX-License-Identifier: GPL-2.0
/*
 * Pure TCP option helpers: walker, lookup, value access, strip (NOP
 * overwrite and compaction) and checksum differences.  See tcpfwd_opt.h.
 *
 * Modelled on net/netfilter/xt_TCPOPTSTRIP.c (NOP overwrite) and the
 * option walk in net/netfilter/nf_conntrack_seqadj.c, but strict: a
 * malformed block is reported and left untouched instead of being
 * partially processed.
 */
#include "tcpfwd_pure.h"
#include "tcpfwd_opt.h"

void tcpfwd_opt_iter_init(struct tcpfwd_opt_iter *it, const u8 *opts,
			  unsigned int len)
{
	it->opts = opts;
	it->len = len;
	it->off = 0;
	it->count = 0;
	it->err = len > TCPFWD_OPT_MAX_LEN ? TCPFWD_OPT_ETOOLONG : 0;
	it->done = false;
	it->eol = false;
}
EXPORT_SYMBOL_GPL(tcpfwd_opt_iter_init);

int tcpfwd_opt_next(struct tcpfwd_opt_iter *it, struct tcpfwd_opt *opt)
{
	unsigned int off = it->off;
	unsigned int olen;
	u8 kind;

	if (it->err)
		return it->err;
	if (it->done)
		return 0;
	if (off >= it->len) {
		it->done = true;
		return 0;
	}

	kind = it->opts[off];
	if (kind == TCPFWD_OPT_EOL) {
		it->done = true;
		it->eol = true;
		return 0;
	}
	if (kind == TCPFWD_OPT_NOP) {
		olen = 1;
	} else {
		if (it->len - off < 2) {
			it->err = TCPFWD_OPT_ETRUNC;
			return it->err;
		}
		olen = it->opts[off + 1];
		if (olen < 2) {
			it->err = TCPFWD_OPT_EBADLEN;
			return it->err;
		}
		if (olen > it->len - off) {
			it->err = TCPFWD_OPT_EOVERRUN;
			return it->err;
		}
		if (++it->count > TCPFWD_OPT_MAX_OPTS) {
			it->err = TCPFWD_OPT_ETOOMANY;
			return it->err;
		}
	}

	opt->kind = kind;
	opt->off = (u8)off;
	opt->len = (u8)olen;
	it->off = off + olen;
	return 1;
}
EXPORT_SYMBOL_GPL(tcpfwd_opt_next);

int tcpfwd_opt_validate(const u8 *opts, unsigned int len, unsigned int *end)
{
	struct tcpfwd_opt_iter it;
	struct tcpfwd_opt o;
	int ret;

	tcpfwd_opt_iter_init(&it, opts, len);
	while ((ret = tcpfwd_opt_next(&it, &o)) > 0)
		;
	if (ret < 0)
		return ret;
	if (end)
		*end = it.off;
	return it.count;
}
EXPORT_SYMBOL_GPL(tcpfwd_opt_validate);

int tcpfwd_opt_find(const u8 *opts, unsigned int len, u8 kind,
		    struct tcpfwd_opt *opt)
{
	struct tcpfwd_opt_iter it;
	struct tcpfwd_opt o;
	bool found = false;
	int ret;

	/* Walk to the end even after a hit: a malformed tail is an error. */
	tcpfwd_opt_iter_init(&it, opts, len);
	while ((ret = tcpfwd_opt_next(&it, &o)) > 0) {
		if (!found && o.kind == kind) {
			*opt = o;
			found = true;
		}
	}
	if (ret < 0)
		return ret;
	return found ? 1 : 0;
}
EXPORT_SYMBOL_GPL(tcpfwd_opt_find);

/* ---- checksum arithmetic ---- */

u32 tcpfwd_csum_add(u32 a, u32 b)
{
	u32 res = a + b;

	return res + (res < b);
}
EXPORT_SYMBOL_GPL(tcpfwd_csum_add);

u32 tcpfwd_csum_sub(u32 a, u32 b)
{
	return tcpfwd_csum_add(a, ~b);
}
EXPORT_SYMBOL_GPL(tcpfwd_csum_sub);

/* One byte in its place in a 16-bit word: the first if @first. */
static u16 tcpfwd_csum_byte(u8 b, bool first)
{
	u8 w[2] = { 0, 0 };
	u16 v;

	w[!first] = b;
	memcpy(&v, w, sizeof(v));
	return v;
}

u32 tcpfwd_csum_bytes(const u8 *base, unsigned int off, unsigned int len)
{
	unsigned int i = off, end = off + len;
	u32 sum = 0;
	u16 v;

	/* A byte at an even offset is the first byte of its word. */
	if ((i & 1) && i < end)
		sum += tcpfwd_csum_byte(base[i++], false);
	for (; i + 1 < end; i += 2) {
		memcpy(&v, base + i, sizeof(v));
		sum += v;
	}
	if (i < end)
		sum += tcpfwd_csum_byte(base[i], true);
	/* len / 2 * 0xffff: no 32-bit overflow for any len below 64K. */
	return sum;
}
EXPORT_SYMBOL_GPL(tcpfwd_csum_bytes);

/* Overwrite @len bytes at @opts + @off, accounting for the checksum. */
static void tcpfwd_opt_write(u8 *opts, unsigned int off, const u8 *val,
			     unsigned int len, u32 *csum_diff)
{
	u32 old_sum = tcpfwd_csum_bytes(opts, off, len);

	memcpy(opts + off, val, len);
	tcpfwd_csum_acc(csum_diff, old_sum, tcpfwd_csum_bytes(opts, off, len));
}

/* ---- value access ---- */

/* Find @kind and check its length is exactly @want. */
static int tcpfwd_opt_find_sized(const u8 *opts, unsigned int len, u8 kind,
				 unsigned int want, struct tcpfwd_opt *o)
{
	int ret = tcpfwd_opt_find(opts, len, kind, o);

	if (ret <= 0)
		return ret;
	if (o->len != want)
		return TCPFWD_OPT_ESIZE;
	return 1;
}

int tcpfwd_opt_set_mss(u8 *opts, unsigned int len, u16 mss, bool clamp,
		       u32 *csum_diff)
{
	struct tcpfwd_opt o;
	u16 cur;
	u8 val[2];
	int ret;

	ret = tcpfwd_opt_find_sized(opts, len, TCPFWD_OPT_MSS,
				    TCPFWD_OPTLEN_MSS, &o);
	if (ret != 1)
		return ret;
	cur = tcpfwd_get_be16(opts + o.off + 2);
	if (cur == mss || (clamp && cur < mss))
		return 1;
	tcpfwd_put_be16(val, mss);
	tcpfwd_opt_write(opts, o.off + 2, val, sizeof(val), csum_diff);
	return 1;
}
EXPORT_SYMBOL_GPL(tcpfwd_opt_set_mss);

int tcpfwd_opt_set_wscale(u8 *opts, unsigned int len, u8 wscale,
			  u32 *csum_diff)
{
	struct tcpfwd_opt o;
	int ret;

	ret = tcpfwd_opt_find_sized(opts, len, TCPFWD_OPT_WSCALE,
				    TCPFWD_OPTLEN_WSCALE, &o);
	if (ret != 1)
		return ret;
	if (opts[o.off + 2] != wscale)
		tcpfwd_opt_write(opts, o.off + 2, &wscale, 1, csum_diff);
	return 1;
}
EXPORT_SYMBOL_GPL(tcpfwd_opt_set_wscale);

int tcpfwd_opt_get_ts(const u8 *opts, unsigned int len, u32 *tsval,
		      u32 *tsecr)
{
	struct tcpfwd_opt o;
	int ret;

	ret = tcpfwd_opt_find_sized(opts, len, TCPFWD_OPT_TIMESTAMP,
				    TCPFWD_OPTLEN_TIMESTAMP, &o);
	if (ret == 1) {
		*tsval = tcpfwd_get_be32(opts + o.off + 2);
		*tsecr = tcpfwd_get_be32(opts + o.off + 6);
	}
	return ret;
}
EXPORT_SYMBOL_GPL(tcpfwd_opt_get_ts);

int tcpfwd_opt_set_ts(u8 *opts, unsigned int len, u32 tsval, u32 tsecr,
		      u32 *csum_diff)
{
	struct tcpfwd_opt o;
	u8 val[8];
	int ret;

	ret = tcpfwd_opt_find_sized(opts, len, TCPFWD_OPT_TIMESTAMP,
				    TCPFWD_OPTLEN_TIMESTAMP, &o);
	if (ret != 1)
		return ret;
	tcpfwd_put_be32(val, tsval);
	tcpfwd_put_be32(val + 4, tsecr);
	if (tcpfwd_get_be32(opts + o.off + 2) != tsval ||
	    tcpfwd_get_be32(opts + o.off + 6) != tsecr)
		tcpfwd_opt_write(opts, o.off + 2, val, sizeof(val), csum_diff);
	return 1;
}
EXPORT_SYMBOL_GPL(tcpfwd_opt_set_ts);

int tcpfwd_opt_get_sack(const u8 *opts, unsigned int len,
			struct tcpfwd_sack_block *blocks, unsigned int max,
		       unsigned int *nblocks)
{
	struct tcpfwd_opt o;
	unsigned int i, n;
	int ret;

	ret = tcpfwd_opt_find(opts, len, TCPFWD_OPT_SACK, &o);
	if (ret != 1)
		return ret;
	if (o.len < TCPFWD_OPTLEN_SACK_BASE + TCPFWD_OPTLEN_SACK_PERBLOCK ||
	    (o.len - TCPFWD_OPTLEN_SACK_BASE) % TCPFWD_OPTLEN_SACK_PERBLOCK)
		return TCPFWD_OPT_ESIZE;
	n = (o.len - TCPFWD_OPTLEN_SACK_BASE) / TCPFWD_OPTLEN_SACK_PERBLOCK;
	for (i = 0; i < n && i < max; i++) {
		const u8 *p = opts + o.off + TCPFWD_OPTLEN_SACK_BASE +
			      i * TCPFWD_OPTLEN_SACK_PERBLOCK;

		blocks[i].start = tcpfwd_get_be32(p);
		blocks[i].end = tcpfwd_get_be32(p + 4);
	}
	*nblocks = n;
	return 1;
}
EXPORT_SYMBOL_GPL(tcpfwd_opt_get_sack);

/* ---- SACK option and header length ---- */

int tcpfwd_tcp_hdrlen(const u8 *th, unsigned int buflen)
{
	unsigned int hdrlen;

	if (buflen < TCPFWD_TCPHDR_LEN)
		return TCPFWD_OPT_EHDR;
	hdrlen = (th[12] >> 4) * 4;
	if (hdrlen < TCPFWD_TCPHDR_LEN || hdrlen > buflen)
		return TCPFWD_OPT_EHDR;
	return hdrlen;
}
EXPORT_SYMBOL_GPL(tcpfwd_tcp_hdrlen);

unsigned int tcpfwd_sack_max_blocks(unsigned int space)
{
	unsigned int n;

	if (space < 2 + TCPFWD_OPTLEN_SACK_BASE + TCPFWD_OPTLEN_SACK_PERBLOCK)
		return 0;
	n = (space - 2 - TCPFWD_OPTLEN_SACK_BASE) / TCPFWD_OPTLEN_SACK_PERBLOCK;
	return n < TCPFWD_SACK_MAX_BLOCKS ? n : TCPFWD_SACK_MAX_BLOCKS;
}

int tcpfwd_sack_build(u8 *out, unsigned int space,
		      const struct tcpfwd_sack_block *blocks, unsigned int n)
{
	unsigned int k, i, len;

	if (!n)
		return TCPFWD_OPT_EINVAL;
	k = tcpfwd_sack_max_blocks(space);
	if (!k)
		return TCPFWD_OPT_ENOSPC;
	if (k > n)
		k = n;
	for (i = 0; i < k; i++)
		if (!before(blocks[i].start, blocks[i].end))
			return TCPFWD_OPT_EINVAL;

	len = TCPFWD_OPTLEN_SACK_BASE + k * TCPFWD_OPTLEN_SACK_PERBLOCK;
	out[0] = TCPFWD_OPT_NOP;
	out[1] = TCPFWD_OPT_NOP;
	out[2] = TCPFWD_OPT_SACK;
	out[3] = (u8)len;
	for (i = 0; i < k; i++) {
		u8 *p = out + 4 + i * TCPFWD_OPTLEN_SACK_PERBLOCK;

		tcpfwd_put_be32(p, blocks[i].start);
		tcpfwd_put_be32(p + 4, blocks[i].end);
	}
	return 2 + len;
}
EXPORT_SYMBOL_GPL(tcpfwd_sack_build);
