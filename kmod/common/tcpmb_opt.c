// SPDX-License-Identifier: GPL-2.0
/*
 * Pure TCP option helpers: walker, lookup, value access, strip (NOP
 * overwrite and compaction) and checksum differences.  See tcpmb_opt.h.
 *
 * Modelled on net/netfilter/xt_TCPOPTSTRIP.c (NOP overwrite) and the
 * option walk in net/netfilter/nf_conntrack_seqadj.c, but strict: a
 * malformed block is reported and left untouched instead of being
 * partially processed.
 */
#include "tcpmb_types.h"
#include "tcpmb_opt.h"

void tcpmb_opt_iter_init(struct tcpmb_opt_iter *it, const u8 *opts,
			 unsigned int len)
{
	it->opts = opts;
	it->len = len;
	it->off = 0;
	it->count = 0;
	it->err = len > TCPMB_OPT_MAX_LEN ? TCPMB_OPT_ETOOLONG : 0;
	it->done = false;
	it->eol = false;
}

int tcpmb_opt_next(struct tcpmb_opt_iter *it, struct tcpmb_opt *opt)
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
	if (kind == TCPMB_OPT_EOL) {
		it->done = true;
		it->eol = true;
		return 0;
	}
	if (kind == TCPMB_OPT_NOP) {
		olen = 1;
	} else {
		if (it->len - off < 2) {
			it->err = TCPMB_OPT_ETRUNC;
			return it->err;
		}
		olen = it->opts[off + 1];
		if (olen < 2) {
			it->err = TCPMB_OPT_EBADLEN;
			return it->err;
		}
		if (olen > it->len - off) {
			it->err = TCPMB_OPT_EOVERRUN;
			return it->err;
		}
		if (++it->count > TCPMB_OPT_MAX_OPTS) {
			it->err = TCPMB_OPT_ETOOMANY;
			return it->err;
		}
	}

	opt->kind = kind;
	opt->off = (u8)off;
	opt->len = (u8)olen;
	it->off = off + olen;
	return 1;
}

int tcpmb_opt_validate(const u8 *opts, unsigned int len, unsigned int *end)
{
	struct tcpmb_opt_iter it;
	struct tcpmb_opt o;
	int ret;

	tcpmb_opt_iter_init(&it, opts, len);
	while ((ret = tcpmb_opt_next(&it, &o)) > 0)
		;
	if (ret < 0)
		return ret;
	if (end)
		*end = it.off;
	return it.count;
}

int tcpmb_opt_find(const u8 *opts, unsigned int len, u8 kind,
		   struct tcpmb_opt *opt)
{
	struct tcpmb_opt_iter it;
	struct tcpmb_opt o;
	bool found = false;
	int ret;

	/* Walk to the end even after a hit: a malformed tail is an error. */
	tcpmb_opt_iter_init(&it, opts, len);
	while ((ret = tcpmb_opt_next(&it, &o)) > 0) {
		if (!found && o.kind == kind) {
			*opt = o;
			found = true;
		}
	}
	if (ret < 0)
		return ret;
	return found ? 1 : 0;
}

const char *tcpmb_opt_strerror(int err)
{
	switch (err) {
	case 0:
		return "ok";
	case TCPMB_OPT_ETRUNC:
		return "option length byte missing";
	case TCPMB_OPT_EBADLEN:
		return "option length below 2";
	case TCPMB_OPT_EOVERRUN:
		return "option extends beyond the header";
	case TCPMB_OPT_ETOOMANY:
		return "too many options";
	case TCPMB_OPT_ETOOLONG:
		return "option block longer than 40 bytes";
	case TCPMB_OPT_EHDR:
		return "bad TCP data offset";
	case TCPMB_OPT_ESIZE:
		return "wrong length for option kind";
	case TCPMB_OPT_EINVAL:
		return "invalid argument";
	case TCPMB_OPT_ENOSPC:
		return "no space for option";
	default:
		return "unknown error";
	}
}

/* ---- checksum arithmetic ---- */

u32 tcpmb_csum_add(u32 a, u32 b)
{
	u32 res = a + b;

	return res + (res < b);
}

u32 tcpmb_csum_sub(u32 a, u32 b)
{
	return tcpmb_csum_add(a, ~b);
}

u32 tcpmb_csum_bytes(const u8 *base, unsigned int off, unsigned int len)
{
	unsigned int i;
	u32 sum = 0;

	for (i = off; i < off + len; i++) {
		u8 w[2] = { 0, 0 };
		u16 v;

		/* Byte at an even offset is the first byte of its word. */
		w[i & 1] = base[i];
		memcpy(&v, w, sizeof(v));
		sum += v;
	}
	/* len * 0xffff: no 32-bit overflow for any len below 64K. */
	return sum;
}

u16 tcpmb_csum_fold(u32 sum)
{
	sum = (sum & 0xffff) + (sum >> 16);
	sum = (sum & 0xffff) + (sum >> 16);
	return (u16)~sum;
}

static void tcpmb_csum_acc(u32 *csum_diff, u32 old_sum, u32 new_sum)
{
	if (csum_diff)
		*csum_diff = tcpmb_csum_add(*csum_diff,
					    tcpmb_csum_sub(new_sum, old_sum));
}

/* Overwrite @len bytes at @opts + @off, accounting for the checksum. */
static void tcpmb_opt_write(u8 *opts, unsigned int off, const u8 *val,
			    unsigned int len, u32 *csum_diff)
{
	u32 old_sum = tcpmb_csum_bytes(opts, off, len);

	memcpy(opts + off, val, len);
	tcpmb_csum_acc(csum_diff, old_sum, tcpmb_csum_bytes(opts, off, len));
}

/* ---- value access ---- */

/* Find @kind and check its length is exactly @want. */
static int tcpmb_opt_find_sized(const u8 *opts, unsigned int len, u8 kind,
				unsigned int want, struct tcpmb_opt *o)
{
	int ret = tcpmb_opt_find(opts, len, kind, o);

	if (ret <= 0)
		return ret;
	if (o->len != want)
		return TCPMB_OPT_ESIZE;
	return 1;
}

int tcpmb_opt_get_mss(const u8 *opts, unsigned int len, u16 *mss)
{
	struct tcpmb_opt o;
	int ret;

	ret = tcpmb_opt_find_sized(opts, len, TCPMB_OPT_MSS,
				   TCPMB_OPTLEN_MSS, &o);
	if (ret == 1)
		*mss = tcpmb_get_be16(opts + o.off + 2);
	return ret;
}

int tcpmb_opt_set_mss(u8 *opts, unsigned int len, u16 mss, bool clamp,
		      u32 *csum_diff)
{
	struct tcpmb_opt o;
	u16 cur;
	u8 val[2];
	int ret;

	ret = tcpmb_opt_find_sized(opts, len, TCPMB_OPT_MSS,
				   TCPMB_OPTLEN_MSS, &o);
	if (ret != 1)
		return ret;
	cur = tcpmb_get_be16(opts + o.off + 2);
	if (cur == mss || (clamp && cur < mss))
		return 1;
	tcpmb_put_be16(val, mss);
	tcpmb_opt_write(opts, o.off + 2, val, sizeof(val), csum_diff);
	return 1;
}

int tcpmb_opt_get_wscale(const u8 *opts, unsigned int len, u8 *wscale)
{
	struct tcpmb_opt o;
	int ret;

	ret = tcpmb_opt_find_sized(opts, len, TCPMB_OPT_WSCALE,
				   TCPMB_OPTLEN_WSCALE, &o);
	if (ret == 1)
		*wscale = opts[o.off + 2];
	return ret;
}

int tcpmb_opt_set_wscale(u8 *opts, unsigned int len, u8 wscale,
			 u32 *csum_diff)
{
	struct tcpmb_opt o;
	int ret;

	ret = tcpmb_opt_find_sized(opts, len, TCPMB_OPT_WSCALE,
				   TCPMB_OPTLEN_WSCALE, &o);
	if (ret != 1)
		return ret;
	if (opts[o.off + 2] != wscale)
		tcpmb_opt_write(opts, o.off + 2, &wscale, 1, csum_diff);
	return 1;
}

int tcpmb_opt_get_ts(const u8 *opts, unsigned int len, u32 *tsval,
		     u32 *tsecr)
{
	struct tcpmb_opt o;
	int ret;

	ret = tcpmb_opt_find_sized(opts, len, TCPMB_OPT_TIMESTAMP,
				   TCPMB_OPTLEN_TIMESTAMP, &o);
	if (ret == 1) {
		*tsval = tcpmb_get_be32(opts + o.off + 2);
		*tsecr = tcpmb_get_be32(opts + o.off + 6);
	}
	return ret;
}

int tcpmb_opt_set_ts(u8 *opts, unsigned int len, u32 tsval, u32 tsecr,
		     u32 *csum_diff)
{
	struct tcpmb_opt o;
	u8 val[8];
	int ret;

	ret = tcpmb_opt_find_sized(opts, len, TCPMB_OPT_TIMESTAMP,
				   TCPMB_OPTLEN_TIMESTAMP, &o);
	if (ret != 1)
		return ret;
	tcpmb_put_be32(val, tsval);
	tcpmb_put_be32(val + 4, tsecr);
	if (tcpmb_get_be32(opts + o.off + 2) != tsval ||
	    tcpmb_get_be32(opts + o.off + 6) != tsecr)
		tcpmb_opt_write(opts, o.off + 2, val, sizeof(val), csum_diff);
	return 1;
}

int tcpmb_opt_get_sack(const u8 *opts, unsigned int len,
		       struct tcpmb_sack_block *blocks, unsigned int max,
		       unsigned int *nblocks)
{
	struct tcpmb_opt o;
	unsigned int i, n;
	int ret;

	ret = tcpmb_opt_find(opts, len, TCPMB_OPT_SACK, &o);
	if (ret != 1)
		return ret;
	if (o.len < TCPMB_OPTLEN_SACK_BASE + TCPMB_OPTLEN_SACK_PERBLOCK ||
	    (o.len - TCPMB_OPTLEN_SACK_BASE) % TCPMB_OPTLEN_SACK_PERBLOCK)
		return TCPMB_OPT_ESIZE;
	n = (o.len - TCPMB_OPTLEN_SACK_BASE) / TCPMB_OPTLEN_SACK_PERBLOCK;
	for (i = 0; i < n && i < max; i++) {
		const u8 *p = opts + o.off + TCPMB_OPTLEN_SACK_BASE +
			      i * TCPMB_OPTLEN_SACK_PERBLOCK;

		blocks[i].start = tcpmb_get_be32(p);
		blocks[i].end = tcpmb_get_be32(p + 4);
	}
	*nblocks = n;
	return 1;
}

/* ---- strip ---- */

int tcpmb_tcp_hdrlen(const u8 *th, unsigned int buflen)
{
	unsigned int hdrlen;

	if (buflen < TCPMB_TCPHDR_LEN)
		return TCPMB_OPT_EHDR;
	hdrlen = (th[12] >> 4) * 4;
	if (hdrlen < TCPMB_TCPHDR_LEN || hdrlen > buflen)
		return TCPMB_OPT_EHDR;
	return hdrlen;
}

static bool tcpmb_opt_strippable(const struct tcpmb_kindmask *mask,
				 const struct tcpmb_opt *o)
{
	return o->kind != TCPMB_OPT_NOP && o->kind != TCPMB_OPT_EOL &&
	       tcpmb_kindmask_test(mask, o->kind);
}

/* Common prologue: check doff and validate the option block. */
static int tcpmb_strip_begin(const u8 *th, unsigned int buflen,
			     struct tcpmb_strip_res *res)
{
	int hdrlen, ret;

	hdrlen = tcpmb_tcp_hdrlen(th, buflen);
	if (hdrlen < 0)
		return hdrlen;
	ret = tcpmb_opt_validate(th + TCPMB_TCPHDR_LEN,
				 hdrlen - TCPMB_TCPHDR_LEN, NULL);
	if (ret < 0)
		return ret;
	res->old_hdrlen = hdrlen;
	res->new_hdrlen = hdrlen;
	res->removed = 0;
	res->stripped = 0;
	res->csum_diff = 0;
	return hdrlen;
}

int tcpmb_opt_strip_nop(u8 *th, unsigned int buflen,
			const struct tcpmb_kindmask *mask,
			struct tcpmb_strip_res *res)
{
	u8 *opts = th + TCPMB_TCPHDR_LEN;
	struct tcpmb_opt_iter it;
	struct tcpmb_opt o;
	int hdrlen, ret;

	hdrlen = tcpmb_strip_begin(th, buflen, res);
	if (hdrlen < 0)
		return hdrlen;

	tcpmb_opt_iter_init(&it, opts, hdrlen - TCPMB_TCPHDR_LEN);
	while ((ret = tcpmb_opt_next(&it, &o)) > 0) {
		u32 old_sum;

		if (!tcpmb_opt_strippable(mask, &o))
			continue;
		/* The walker has already moved past these bytes. */
		old_sum = tcpmb_csum_bytes(opts, o.off, o.len);
		memset(opts + o.off, TCPMB_OPT_NOP, o.len);
		tcpmb_csum_acc(&res->csum_diff, old_sum,
			       tcpmb_csum_bytes(opts, o.off, o.len));
		res->stripped++;
	}
	return res->stripped;
}

/*
 * Build the compacted option block into @out (TCPMB_OPT_MAX_LEN bytes).
 * Returns its padded length; *stripped gets the number of options removed.
 * The block has been validated by the caller.
 */
static unsigned int tcpmb_opt_compact_build(const u8 *opts, unsigned int len,
					    const struct tcpmb_kindmask *mask,
					    u8 *out, unsigned int *stripped)
{
	unsigned int n = 0, run = 0, padded;
	struct tcpmb_opt_iter it;
	struct tcpmb_opt o;
	bool in_run = false;

	*stripped = 0;
	tcpmb_opt_iter_init(&it, opts, len);
	while (tcpmb_opt_next(&it, &o) > 0) {
		if (o.kind == TCPMB_OPT_NOP) {
			/* A NOP run belongs to the option that follows it. */
			if (!in_run) {
				run = o.off;
				in_run = true;
			}
			continue;
		}
		if (tcpmb_opt_strippable(mask, &o)) {
			(*stripped)++;
		} else {
			unsigned int from = in_run ? run : o.off;
			unsigned int cnt = o.off + o.len - from;

			memcpy(out + n, opts + from, cnt);
			n += cnt;
		}
		in_run = false;
	}
	/* Trailing NOPs and everything from EOL on are dropped. */
	padded = (n + 3) & ~3U;
	memset(out + n, TCPMB_OPT_EOL, padded - n);
	return padded;
}

static void tcpmb_set_doff(u8 *th, unsigned int hdrlen)
{
	th[12] = (u8)((th[12] & 0x0f) | ((hdrlen / 4) << 4));
}

/* @pull: place the new header at the end of the old one's space. */
static int tcpmb_opt_strip_compact_common(u8 *th, unsigned int buflen,
					  const struct tcpmb_kindmask *mask,
					  struct tcpmb_strip_res *res,
					  bool pull)
{
	u8 out[TCPMB_OPT_MAX_LEN];
	u8 fixed[TCPMB_TCPHDR_LEN];
	unsigned int optlen, stripped, new_hdrlen, removed;
	u32 old_sum;
	u8 *nth;
	int hdrlen;

	hdrlen = tcpmb_strip_begin(th, buflen, res);
	if (hdrlen < 0)
		return hdrlen;

	optlen = tcpmb_opt_compact_build(th + TCPMB_TCPHDR_LEN,
					 hdrlen - TCPMB_TCPHDR_LEN, mask, out,
					 &stripped);
	if (!stripped)
		return 0;

	new_hdrlen = TCPMB_TCPHDR_LEN + optlen;
	removed = hdrlen - new_hdrlen;
	old_sum = tcpmb_csum_bytes(th, 0, hdrlen);

	if (pull) {
		nth = th + removed;
		memcpy(fixed, th, TCPMB_TCPHDR_LEN);
		memcpy(nth + TCPMB_TCPHDR_LEN, out, optlen);
		memcpy(nth, fixed, TCPMB_TCPHDR_LEN);
	} else {
		nth = th;
		memcpy(nth + TCPMB_TCPHDR_LEN, out, optlen);
		if (removed)
			memmove(nth + new_hdrlen, th + hdrlen, buflen - hdrlen);
	}
	tcpmb_set_doff(nth, new_hdrlen);

	res->new_hdrlen = new_hdrlen;
	res->removed = removed;
	res->stripped = stripped;
	/* removed is a multiple of 4: word parity is preserved. */
	res->csum_diff = tcpmb_csum_sub(tcpmb_csum_bytes(nth, 0, new_hdrlen),
					old_sum);
	return stripped;
}

int tcpmb_opt_strip_compact(u8 *th, unsigned int buflen,
			    const struct tcpmb_kindmask *mask,
			    struct tcpmb_strip_res *res)
{
	return tcpmb_opt_strip_compact_common(th, buflen, mask, res, false);
}

int tcpmb_opt_strip_compact_pull(u8 *th, unsigned int buflen,
				 const struct tcpmb_kindmask *mask,
				 struct tcpmb_strip_res *res)
{
	return tcpmb_opt_strip_compact_common(th, buflen, mask, res, true);
}
