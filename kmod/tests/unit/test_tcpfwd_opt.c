// SPDX-License-Identifier: GPL-2.0
/*
 * Unit tests for kmod/core/tcpfwd_opt.c (option walker, lookup, value
 * access, checksum differences) and kmod/impair/impair_strip.c (strip, NOP
 * and compact modes).
 *
 * Option blocks are copied into heap buffers of exactly their length so
 * that AddressSanitizer catches any read past the end.  Checksums are
 * checked against an independent big-endian RFC 1071 implementation over
 * an IPv4 pseudo-header and the whole segment, after applying the
 * reported differences the way the kernel's csum_replace_by_diff() and
 * csum_replace2() would.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdlib.h>
#include <cmocka.h>

#include "../../core/tcpfwd_opt.c"
#include "../../impair/impair_strip.c"

#define NOP	TCPFWD_OPT_NOP
#define EOL	TCPFWD_OPT_EOL

/*
 * NOP mode as impair.ko runs it: the read-only scan, then the overwrite
 * of what it found (impair_strip_find() and impair_strip_nop() in
 * impair_main.c).
 */
static int strip_nop(u8 *th, unsigned int buflen,
		     const struct impair_kindmask *mask,
		     struct impair_strip_res *res)
{
	struct impair_strip_plan plan;
	int ret;

	ret = impair_strip_scan(th, buflen, mask, &plan);
	if (ret < 0)
		return ret;
	return impair_strip_apply_nop(th, &plan, res);
}

/* Linux SYN: MSS 1460, SACK-permitted, TS, NOP, WS 7 (20 bytes). */
static const u8 syn_linux[] = {
	2, 4, 0x05, 0xb4,
	4, 2, 8, 10, 0x11, 0x22, 0x33, 0x44, 0, 0, 0, 0,
	1, 3, 3, 7,
};

/* BSD-style SYN: MSS, NOP WS, NOP NOP TS, NOP NOP SACK-permitted (24). */
static const u8 syn_bsd[] = {
	2, 4, 0x05, 0x78,
	1, 3, 3, 6,
	1, 1, 8, 10, 0xde, 0xad, 0xbe, 0xef, 0, 0, 0, 0,
	1, 1, 4, 2,
};

/* Data segment: NOP NOP TS (12). */
static const u8 data_ts[] = {
	1, 1, 8, 10, 0x01, 0x02, 0x03, 0x04, 0xa1, 0xa2, 0xa3, 0xa4,
};

/* ACK with TS and two SACK blocks (32). */
static const u8 ack_ts_sack2[] = {
	1, 1, 8, 10, 0, 0, 0, 9, 0, 0, 0, 7,
	1, 1, 5, 18,
	0x00, 0x00, 0x10, 0x00, 0x00, 0x00, 0x20, 0x00,
	0x00, 0x00, 0x30, 0x00, 0x00, 0x00, 0x40, 0x00,
};

struct exp_opt {
	u8 kind;
	u8 off;
	u8 len;
};

/* ---- helpers ---- */

#define RND_SEED 0x12345678
#include "rnd.h"

/* Heap copy of exactly @len bytes (ASan catches overreads). */
static u8 *xdup(const u8 *src, unsigned int len)
{
	u8 *p = malloc(len ? len : 1);

	assert_non_null(p);
	if (len)
		memcpy(p, src, len);
	return p;
}

/* Walk @opts; compare with @exp; return the final walker code. */
static int check_walk(const u8 *opts, unsigned int len,
		      const struct exp_opt *exp, unsigned int nexp)
{
	u8 *buf = xdup(opts, len);
	struct tcpfwd_opt_iter it;
	struct tcpfwd_opt o;
	unsigned int n = 0;
	int ret;

	tcpfwd_opt_iter_init(&it, buf, len);
	while ((ret = tcpfwd_opt_next(&it, &o)) > 0) {
		assert_true(n < nexp);
		assert_int_equal(o.kind, exp[n].kind);
		assert_int_equal(o.off, exp[n].off);
		assert_int_equal(o.len, exp[n].len);
		assert_true(o.off + o.len <= len);
		n++;
	}
	assert_int_equal(n, nexp);
	/* Errors and the end are sticky. */
	assert_int_equal(tcpfwd_opt_next(&it, &o), ret);
	assert_int_equal(tcpfwd_opt_next(&it, &o), ret);
	free(buf);
	return ret;
}

#include "csum_ref.h"

/*
 * Test oracles the modules do not need: the value bytes of an option of
 * exactly @want bytes (MSS, window scale), read big-endian.
 */
static int opt_get_value(const u8 *opts, unsigned int len, u8 kind,
			 unsigned int want, u32 *val)
{
	struct tcpfwd_opt o;
	int ret = tcpfwd_opt_find_sized(opts, len, kind, want, &o);
	unsigned int i;

	if (ret == 1)
		for (*val = 0, i = 2; i < want; i++)
			*val = *val << 8 | opts[o.off + i];
	return ret;
}

static int tcpfwd_opt_get_mss(const u8 *opts, unsigned int len, u16 *mss)
{
	u32 v = 0;
	int ret = opt_get_value(opts, len, TCPFWD_OPT_MSS, TCPFWD_OPTLEN_MSS, &v);

	*mss = ret == 1 ? (u16)v : *mss;
	return ret;
}

static int tcpfwd_opt_get_wscale(const u8 *opts, unsigned int len, u8 *ws)
{
	u32 v = 0;
	int ret = opt_get_value(opts, len, TCPFWD_OPT_WSCALE,
				TCPFWD_OPTLEN_WSCALE, &v);

	*ws = ret == 1 ? (u8)v : *ws;
	return ret;
}

static void impair_kindmask_clear(struct impair_kindmask *m, u8 kind)
{
	m->w[kind >> 5] &= ~(1U << (kind & 31));
}

/*
 * Compaction of a header followed by its payload in one buffer: the
 * module's compaction (header rebuilt to end where it ended), then the
 * new header and the payload moved down to @th.
 */
static int strip_compact_moved(u8 *th, unsigned int buflen,
			       const struct impair_kindmask *mask,
			       struct impair_strip_res *res)
{
	int ret = impair_strip_opts_compact(th, buflen, mask, res);

	if (ret > 0 && res->removed)
		memmove(th, th + res->removed, buflen - res->removed);
	return ret;
}

/* inet_proto_csum_replace2(&th->check, skb, htons(from), htons(to), true) */
static void kern_replace2(u8 *seg, u16 from, u16 to)
{
	u8 f[2], t[2];
	u16 fn, tn, sum;

	tcpfwd_put_be16(f, from);
	tcpfwd_put_be16(t, to);
	memcpy(&fn, f, 2);
	memcpy(&tn, t, 2);
	memcpy(&sum, seg + 16, 2);
	sum = tcpfwd_csum_fold(tcpfwd_csum_add(tcpfwd_csum_sub(~(u32)sum, fn),
					     tn));
	memcpy(seg + 16, &sum, 2);
}

/*
 * Build a segment: fixed header (ACK, doff from @optlen rounded up),
 * options, payload; valid checksum.  Returns the segment length.
 */
static unsigned int mkseg(u8 *seg, const u8 *opts, unsigned int optlen,
			  const u8 *payload, unsigned int plen)
{
	static const u8 fixed[TCPFWD_TCPHDR_LEN] = {
		0x9c, 0x40, 0x00, 0x50,		/* ports 40000 -> 80 */
		0x11, 0x22, 0x33, 0x44,		/* seq */
		0x55, 0x66, 0x77, 0x88,		/* ack */
		0x00, 0x10,			/* doff, flags ACK */
		0xff, 0xff, 0x00, 0x00, 0x00, 0x00,
	};
	unsigned int hl = TCPFWD_TCPHDR_LEN + ((optlen + 3) & ~3U);

	memcpy(seg, fixed, sizeof(fixed));
	seg[12] = (u8)((hl / 4) << 4);
	memset(seg + TCPFWD_TCPHDR_LEN, EOL, hl - TCPFWD_TCPHDR_LEN);
	if (optlen)
		memcpy(seg + TCPFWD_TCPHDR_LEN, opts, optlen);
	if (plen)
		memcpy(seg + hl, payload, plen);
	seg_csum_set(seg, hl + plen);
	assert_true(seg_csum_ok(seg, hl + plen));
	return hl + plen;
}

static void mask_of(struct impair_kindmask *m, const u8 *kinds, unsigned int n)
{
	unsigned int i;

	impair_kindmask_zero(m);
	for (i = 0; i < n; i++)
		impair_kindmask_set(m, kinds[i]);
}

/* ---- walker: well-formed ---- */

static void test_walk_empty(void **state)
{
	unsigned int end = 99;

	(void)state;
	assert_int_equal(check_walk(NULL, 0, NULL, 0), 0);
	assert_int_equal(tcpfwd_opt_validate(NULL, 0, &end), 0);
	assert_int_equal(end, 0);
}

static void test_walk_syn_linux(void **state)
{
	static const struct exp_opt exp[] = {
		{ 2, 0, 4 }, { 4, 4, 2 }, { 8, 6, 10 }, { 1, 16, 1 },
		{ 3, 17, 3 },
	};
	unsigned int end = 0;

	(void)state;
	assert_int_equal(check_walk(syn_linux, sizeof(syn_linux), exp,
				    ARRAY_SIZE(exp)), 0);
	assert_int_equal(tcpfwd_opt_validate(syn_linux, sizeof(syn_linux),
					    &end), 4);
	assert_int_equal(end, sizeof(syn_linux));
}

static void test_walk_syn_bsd(void **state)
{
	static const struct exp_opt exp[] = {
		{ 2, 0, 4 }, { 1, 4, 1 }, { 3, 5, 3 }, { 1, 8, 1 },
		{ 1, 9, 1 }, { 8, 10, 10 }, { 1, 20, 1 }, { 1, 21, 1 },
		{ 4, 22, 2 },
	};

	(void)state;
	assert_int_equal(check_walk(syn_bsd, sizeof(syn_bsd), exp,
				    ARRAY_SIZE(exp)), 0);
	assert_int_equal(tcpfwd_opt_validate(syn_bsd, sizeof(syn_bsd), NULL),
			 4);
}

static void test_walk_data_ts(void **state)
{
	static const struct exp_opt exp[] = {
		{ 1, 0, 1 }, { 1, 1, 1 }, { 8, 2, 10 },
	};

	(void)state;
	assert_int_equal(check_walk(data_ts, sizeof(data_ts), exp,
				    ARRAY_SIZE(exp)), 0);
}

static void test_walk_sack_blocks(void **state)
{
	unsigned int n, i;

	(void)state;
	for (n = 1; n <= 4; n++) {
		struct exp_opt exp[3] = {
			{ 1, 0, 1 }, { 1, 1, 1 },
			{ 5, 2, (u8)(2 + 8 * n) },
		};
		struct tcpfwd_sack_block b[4];
		u8 opts[40];
		unsigned int len = 4 + 8 * n, got = 0;

		opts[0] = NOP;
		opts[1] = NOP;
		opts[2] = TCPFWD_OPT_SACK;
		opts[3] = (u8)(2 + 8 * n);
		for (i = 0; i < n; i++) {
			u32 start = 0xfffff000 + i * 0x1000;

			tcpfwd_put_be32(opts + 4 + 8 * i, start);
			tcpfwd_put_be32(opts + 8 + 8 * i, start + 0x800);
		}
		assert_int_equal(check_walk(opts, len, exp, 3), 0);
		assert_int_equal(tcpfwd_opt_get_sack(opts, len, b, 4, &got), 1);
		assert_int_equal(got, n);
		for (i = 0; i < n; i++) {
			assert_int_equal(b[i].start, 0xfffff000 + i * 0x1000);
			assert_int_equal(b[i].end, 0xfffff800 + i * 0x1000);
		}
	}
}

static void test_walk_40_nops(void **state)
{
	struct exp_opt exp[40];
	u8 opts[41];
	unsigned int i, end = 0;

	(void)state;
	memset(opts, NOP, sizeof(opts));
	for (i = 0; i < 40; i++) {
		exp[i].kind = NOP;
		exp[i].off = (u8)i;
		exp[i].len = 1;
	}
	assert_int_equal(check_walk(opts, 40, exp, 40), 0);
	assert_int_equal(tcpfwd_opt_validate(opts, 40, &end), 0);
	assert_int_equal(end, 40);
	/* 41 bytes cannot come from a TCP header. */
	assert_int_equal(check_walk(opts, 41, NULL, 0), TCPFWD_OPT_ETOOLONG);
	assert_int_equal(tcpfwd_opt_validate(opts, 41, NULL),
			 TCPFWD_OPT_ETOOLONG);
}

static void test_walk_eol_middle_junk(void **state)
{
	/* MSS, EOL, then junk that would be malformed if parsed. */
	static const u8 opts[] = {
		2, 4, 0x05, 0xb4, EOL, 3, 0, 0xff, 8, 200, 4, 2,
	};
	static const struct exp_opt exp[] = { { 2, 0, 4 } };
	struct tcpfwd_opt_iter it;
	struct tcpfwd_opt o;
	unsigned int end = 0;
	u8 *buf;

	(void)state;
	assert_int_equal(check_walk(opts, sizeof(opts), exp, 1), 0);
	assert_int_equal(tcpfwd_opt_validate(opts, sizeof(opts), &end), 1);
	assert_int_equal(end, 4);

	buf = xdup(opts, sizeof(opts));
	tcpfwd_opt_iter_init(&it, buf, sizeof(opts));
	assert_int_equal(tcpfwd_opt_next(&it, &o), 1);
	assert_int_equal(tcpfwd_opt_next(&it, &o), 0);
	assert_true(it.eol);
	assert_int_equal(it.off, 4);
	/* Options hidden after EOL are not found. */
	assert_int_equal(tcpfwd_opt_find(buf, sizeof(opts), 4, &o), 0);
	assert_int_equal(tcpfwd_opt_find(buf, sizeof(opts), 3, &o), 0);
	free(buf);

	/* Leading EOL: empty block, no eol junk parsed. */
	assert_int_equal(tcpfwd_opt_validate(opts + 4, sizeof(opts) - 4, &end),
			 0);
	assert_int_equal(end, 0);
}

static void test_walk_no_eol_flag_at_end(void **state)
{
	struct tcpfwd_opt_iter it;
	struct tcpfwd_opt o;

	(void)state;
	tcpfwd_opt_iter_init(&it, data_ts, sizeof(data_ts));
	while (tcpfwd_opt_next(&it, &o) > 0)
		;
	assert_false(it.eol);
	assert_int_equal(it.off, sizeof(data_ts));
	assert_int_equal(it.count, 1);
}

/* ---- walker: malformed ---- */

static void test_walk_zero_length(void **state)
{
	static const u8 a[] = { 2, 0, 0x05, 0xb4 };
	static const u8 b[] = { 1, 1, 8, 0, 1, 1, 1, 1 };
	static const u8 c[] = { 34, 0 };
	static const struct exp_opt exp_b[] = { { 1, 0, 1 }, { 1, 1, 1 } };

	(void)state;
	assert_int_equal(check_walk(a, sizeof(a), NULL, 0), TCPFWD_OPT_EBADLEN);
	assert_int_equal(check_walk(b, sizeof(b), exp_b, 2),
			 TCPFWD_OPT_EBADLEN);
	assert_int_equal(check_walk(c, sizeof(c), NULL, 0), TCPFWD_OPT_EBADLEN);
	assert_int_equal(tcpfwd_opt_validate(b, sizeof(b), NULL),
			 TCPFWD_OPT_EBADLEN);
}

static void test_walk_length_one(void **state)
{
	static const u8 a[] = { 2, 4, 0x05, 0xb4, 8, 1, 0, 0 };
	static const struct exp_opt exp[] = { { 2, 0, 4 } };

	(void)state;
	assert_int_equal(check_walk(a, sizeof(a), exp, 1), TCPFWD_OPT_EBADLEN);
}

static void test_walk_overrun(void **state)
{
	/* TS claims 10 bytes, 6 remain. */
	static const u8 a[] = { 1, 1, 8, 10, 0, 0, 0, 1 };
	/* Length 255. */
	static const u8 b[] = { 2, 255, 0x05, 0xb4 };
	/* One byte too long at the very end. */
	static const u8 c[] = { 2, 4, 5, 0xb4, 1, 3, 4, 7 };
	static const u8 d[] = { 2, 4, 5, 0xb4, 1, 3, 3, 7 };
	static const struct exp_opt exp_a[] = { { 1, 0, 1 }, { 1, 1, 1 } };
	static const struct exp_opt exp_c[] = { { 2, 0, 4 }, { 1, 4, 1 } };

	(void)state;
	assert_int_equal(check_walk(a, sizeof(a), exp_a, 2),
			 TCPFWD_OPT_EOVERRUN);
	assert_int_equal(check_walk(b, sizeof(b), NULL, 0),
			 TCPFWD_OPT_EOVERRUN);
	assert_int_equal(check_walk(c, sizeof(c), exp_c, 2),
			 TCPFWD_OPT_EOVERRUN);
	/* Exactly fitting is fine, one byte less is not. */
	assert_int_equal(tcpfwd_opt_validate(d, sizeof(d), NULL), 2);
	assert_int_equal(check_walk(d, sizeof(d) - 1, exp_c, 2),
			 TCPFWD_OPT_EOVERRUN);
}

static void test_walk_truncated_length_byte(void **state)
{
	static const u8 a[] = { 1, 1, 1, 2 };
	static const u8 b[] = { 8 };
	static const struct exp_opt exp_a[] = {
		{ 1, 0, 1 }, { 1, 1, 1 }, { 1, 2, 1 },
	};

	(void)state;
	assert_int_equal(check_walk(a, sizeof(a), exp_a, 3), TCPFWD_OPT_ETRUNC);
	assert_int_equal(check_walk(b, sizeof(b), NULL, 0), TCPFWD_OPT_ETRUNC);
	/* A lone NOP or EOL at the end is fine. */
	assert_int_equal(tcpfwd_opt_validate(a, 3, NULL), 0);
}

static void test_walk_too_many(void **state)
{
	struct exp_opt exp[TCPFWD_OPT_MAX_OPTS + 1];
	u8 opts[40];
	unsigned int i;

	(void)state;
	for (i = 0; i < 20; i++) {
		opts[2 * i] = TCPFWD_OPT_SACK_PERM;
		opts[2 * i + 1] = 2;
	}
	for (i = 0; i <= TCPFWD_OPT_MAX_OPTS; i++) {
		exp[i].kind = TCPFWD_OPT_SACK_PERM;
		exp[i].off = (u8)(2 * i);
		exp[i].len = 2;
	}
	/* Exactly the limit is accepted. */
	assert_int_equal(tcpfwd_opt_validate(opts, 2 * TCPFWD_OPT_MAX_OPTS,
					    NULL), TCPFWD_OPT_MAX_OPTS);
	/* One more is rejected; the first MAX are yielded before. */
	assert_int_equal(check_walk(opts, 2 * (TCPFWD_OPT_MAX_OPTS + 1), exp,
				    TCPFWD_OPT_MAX_OPTS), TCPFWD_OPT_ETOOMANY);
	assert_int_equal(tcpfwd_opt_validate(opts, 40, NULL),
			 TCPFWD_OPT_ETOOMANY);
	/* NOPs in between do not count. */
	for (i = 0; i < 40; i++)
		opts[i] = (i % 3 == 2) ? NOP : ((i % 3) ? 2 : 4);
	assert_int_equal(tcpfwd_opt_validate(opts, 39, NULL), 13);
}

static void test_walk_unknown_kinds(void **state)
{
	/* Unknown kinds with valid lengths are walked over. */
	static const u8 a[] = { 253, 4, 0xab, 0xcd, 200, 2, 30, 2 };
	static const struct exp_opt exp[] = {
		{ 253, 0, 4 }, { 200, 4, 2 }, { 30, 6, 2 },
	};

	(void)state;
	assert_int_equal(check_walk(a, sizeof(a), exp, 3), 0);
}

/*
 * Independent reference parser (RFC 9293 rules plus our limits), used to
 * cross-check the walker on random blocks.
 */
static int ref_parse(const u8 *p, unsigned int len, struct tcpfwd_opt *out,
		     unsigned int *n, unsigned int *end)
{
	unsigned int i = 0, cnt = 0, l;

	*n = 0;
	if (len > 40)
		return TCPFWD_OPT_ETOOLONG;
	while (i < len) {
		if (p[i] == EOL) {
			*end = i;
			return 0;
		}
		if (p[i] == NOP) {
			out[*n].kind = NOP;
			out[*n].off = (u8)i;
			out[(*n)++].len = 1;
			i++;
			continue;
		}
		if (i + 1 >= len)
			return TCPFWD_OPT_ETRUNC;
		l = p[i + 1];
		if (l < 2)
			return TCPFWD_OPT_EBADLEN;
		if (i + l > len)
			return TCPFWD_OPT_EOVERRUN;
		if (++cnt > TCPFWD_OPT_MAX_OPTS)
			return TCPFWD_OPT_ETOOMANY;
		out[*n].kind = p[i];
		out[*n].off = (u8)i;
		out[(*n)++].len = (u8)l;
		i += l;
	}
	*end = len;
	return 0;
}

static void test_walk_random_vs_reference(void **state)
{
	static const u8 interesting[] = {
		0, 1, 2, 3, 4, 5, 8, 10, 30, 34, 255, 40, 6, 12,
	};
	unsigned int iter, seen[10] = { 0 };

	(void)state;
	rnd_state = 0xdecafbad;
	for (iter = 0; iter < 200000; iter++) {
		struct tcpfwd_opt ref[44], o;
		struct tcpfwd_opt_iter it;
		unsigned int len = rnd() % 45, i, nref = 0, n = 0;
		unsigned int ref_end = 0, end = 0;
		u8 src[44], *buf;
		int ref_ret, ret;

		for (i = 0; i < len; i++)
			src[i] = (rnd() & 1) ?
				 interesting[rnd() % sizeof(interesting)] :
				 (u8)rnd();
		if (!(iter & 7)) {
			/* Many short options, one byte mutated. */
			for (i = 0; i + 1 < len; i += 2) {
				src[i] = (u8)(2 + rnd() % 40);
				src[i + 1] = 2;
			}
			if (len)
				src[rnd() % len] = (u8)rnd();
		}
		buf = xdup(src, len);
		ref_ret = ref_parse(src, len, ref, &nref, &ref_end);

		tcpfwd_opt_iter_init(&it, buf, len);
		while ((ret = tcpfwd_opt_next(&it, &o)) > 0) {
			assert_true(n < nref);
			assert_int_equal(o.kind, ref[n].kind);
			assert_int_equal(o.off, ref[n].off);
			assert_int_equal(o.len, ref[n].len);
			n++;
			assert_true(n <= 40);
		}
		assert_int_equal(ret, ref_ret);
		seen[-ret]++;
		if (!ret) {
			assert_int_equal(n, nref);
			assert_true(tcpfwd_opt_validate(buf, len, &end) >= 0);
			assert_int_equal(end, ref_end);
		} else {
			assert_int_equal(tcpfwd_opt_validate(buf, len, NULL),
					 ref_ret);
		}
		free(buf);
	}
	/* Every outcome was exercised. */
	for (iter = 0; iter <= (unsigned int)-TCPFWD_OPT_ETOOLONG; iter++)
		assert_true(seen[iter] > 100);
}

/* ---- find and values ---- */

static void test_find(void **state)
{
	static const u8 dup[] = { 3, 3, 1, 1, 3, 3, 9, 0 };
	static const u8 bad_tail[] = { 2, 4, 5, 0xb4, 8, 0, 0, 0 };
	struct tcpfwd_opt o;

	(void)state;
	assert_int_equal(tcpfwd_opt_find(syn_linux, sizeof(syn_linux), 8, &o),
			 1);
	assert_int_equal(o.off, 6);
	assert_int_equal(o.len, 10);
	assert_int_equal(tcpfwd_opt_find(syn_linux, sizeof(syn_linux), 5, &o),
			 0);
	assert_int_equal(tcpfwd_opt_find(data_ts, sizeof(data_ts), NOP, &o), 1);
	assert_int_equal(o.off, 0);
	assert_int_equal(tcpfwd_opt_find(data_ts, sizeof(data_ts), EOL, &o), 0);
	/* First occurrence. */
	assert_int_equal(tcpfwd_opt_find(dup, sizeof(dup), 3, &o), 1);
	assert_int_equal(o.off, 0);
	assert_int_equal(o.len, 3);
	/* A malformed tail after the hit is still an error. */
	assert_int_equal(tcpfwd_opt_find(bad_tail, sizeof(bad_tail), 2, &o),
			 TCPFWD_OPT_EBADLEN);
}

static void test_get_values(void **state)
{
	u32 tsval = 0, tsecr = 1;
	u16 mss = 0;
	u8 ws = 0;

	(void)state;
	assert_int_equal(tcpfwd_opt_get_mss(syn_linux, sizeof(syn_linux), &mss),
			 1);
	assert_int_equal(mss, 1460);
	assert_int_equal(tcpfwd_opt_get_wscale(syn_linux, sizeof(syn_linux),
					      &ws), 1);
	assert_int_equal(ws, 7);
	assert_int_equal(tcpfwd_opt_get_ts(syn_linux, sizeof(syn_linux),
					  &tsval, &tsecr), 1);
	assert_int_equal(tsval, 0x11223344);
	assert_int_equal(tsecr, 0);
	assert_int_equal(tcpfwd_opt_get_mss(syn_bsd, sizeof(syn_bsd), &mss), 1);
	assert_int_equal(mss, 1400);
	assert_int_equal(tcpfwd_opt_get_wscale(syn_bsd, sizeof(syn_bsd), &ws),
			 1);
	assert_int_equal(ws, 6);
	assert_int_equal(tcpfwd_opt_get_ts(data_ts, sizeof(data_ts), &tsval,
					  &tsecr), 1);
	assert_int_equal(tsval, 0x01020304);
	assert_int_equal(tsecr, 0xa1a2a3a4);
	/* Absent. */
	mss = 77;
	assert_int_equal(tcpfwd_opt_get_mss(data_ts, sizeof(data_ts), &mss), 0);
	assert_int_equal(mss, 77);
	assert_int_equal(tcpfwd_opt_get_wscale(data_ts, sizeof(data_ts), &ws),
			 0);
}

static void test_get_values_bad_size(void **state)
{
	static const u8 mss3[] = { 2, 3, 5, 1 };
	static const u8 ws4[] = { 3, 4, 7, 0 };
	static const u8 ts8[] = { 8, 8, 0, 0, 0, 1, 0, 0 };
	static const u8 sack6[] = { 1, 1, 5, 6, 0, 0, 0, 1 };
	static const u8 sack11[] = { 5, 11, 0, 0, 0, 1, 0, 0, 0, 2, 9, 1 };
	static const u8 malformed[] = { 2, 4, 5, 0xb4, 3, 1, 1, 1 };
	struct tcpfwd_sack_block b[4];
	unsigned int n;
	u32 a, c;
	u16 mss;
	u8 ws;

	(void)state;
	assert_int_equal(tcpfwd_opt_get_mss(mss3, sizeof(mss3), &mss),
			 TCPFWD_OPT_ESIZE);
	assert_int_equal(tcpfwd_opt_get_wscale(ws4, sizeof(ws4), &ws),
			 TCPFWD_OPT_ESIZE);
	assert_int_equal(tcpfwd_opt_get_ts(ts8, sizeof(ts8), &a, &c),
			 TCPFWD_OPT_ESIZE);
	assert_int_equal(tcpfwd_opt_get_sack(sack6, sizeof(sack6), b, 4, &n),
			 TCPFWD_OPT_ESIZE);
	assert_int_equal(tcpfwd_opt_get_sack(sack11, sizeof(sack11), b, 4, &n),
			 TCPFWD_OPT_ESIZE);
	assert_int_equal(tcpfwd_opt_get_mss(malformed, sizeof(malformed), &mss),
			 TCPFWD_OPT_EBADLEN);
}

static void test_get_sack_max(void **state)
{
	struct tcpfwd_sack_block b[2] = { { 0, 0 }, { 0, 0 } };
	unsigned int n = 0;

	(void)state;
	/* Two blocks in the option; room for one. */
	assert_int_equal(tcpfwd_opt_get_sack(ack_ts_sack2, sizeof(ack_ts_sack2),
					    b, 1, &n), 1);
	assert_int_equal(n, 2);
	assert_int_equal(b[0].start, 0x1000);
	assert_int_equal(b[0].end, 0x2000);
	assert_int_equal(b[1].start, 0);
	assert_int_equal(tcpfwd_opt_get_sack(ack_ts_sack2, sizeof(ack_ts_sack2),
					    b, 2, &n), 1);
	assert_int_equal(b[1].start, 0x3000);
	assert_int_equal(b[1].end, 0x4000);
	assert_int_equal(tcpfwd_opt_get_sack(data_ts, sizeof(data_ts), b, 2,
					    &n), 0);
}

static void test_set_values_checksum(void **state)
{
	u8 seg[80], before[80];
	u32 diff = 0, tsval, tsecr;
	unsigned int len;
	u8 *opts = seg + TCPFWD_TCPHDR_LEN;
	u16 mss;
	u8 ws;

	(void)state;
	len = mkseg(seg, syn_linux, sizeof(syn_linux), NULL, 0);

	/* Clamp never raises. */
	memcpy(before, seg, len);
	assert_int_equal(tcpfwd_opt_set_mss(opts, 20, 9000, true, &diff), 1);
	assert_memory_equal(seg, before, len);
	assert_int_equal(diff, 0);

	assert_int_equal(tcpfwd_opt_set_mss(opts, 20, 1200, true, &diff), 1);
	assert_int_equal(tcpfwd_opt_get_mss(opts, 20, &mss), 1);
	assert_int_equal(mss, 1200);
	assert_int_equal(tcpfwd_opt_set_mss(opts, 20, 1300, false, &diff), 1);
	assert_int_equal(tcpfwd_opt_get_mss(opts, 20, &mss), 1);
	assert_int_equal(mss, 1300);

	/* WS value byte is at an odd offset (39) of the header. */
	assert_int_equal(tcpfwd_opt_set_wscale(opts, 20, 14, &diff), 1);
	assert_int_equal(tcpfwd_opt_get_wscale(opts, 20, &ws), 1);
	assert_int_equal(ws, 14);
	assert_int_equal(seg[TCPFWD_TCPHDR_LEN + 19], 14);

	assert_int_equal(tcpfwd_opt_set_ts(opts, 20, 0xcafebabe, 0x01020304,
					  &diff), 1);
	assert_int_equal(tcpfwd_opt_get_ts(opts, 20, &tsval, &tsecr), 1);
	assert_int_equal(tsval, 0xcafebabe);
	assert_int_equal(tsecr, 0x01020304);

	/* Other bytes untouched. */
	assert_int_equal(seg[20], 2);
	assert_int_equal(seg[24], 4);
	assert_int_equal(seg[36], NOP);

	assert_false(seg_csum_ok(seg, len));
	kern_replace_by_diff(seg, diff);
	assert_true(seg_csum_ok(seg, len));

	/* Absent option: nothing written, diff unchanged. */
	len = mkseg(seg, data_ts, sizeof(data_ts), NULL, 0);
	memcpy(before, seg, len);
	diff = 0;
	assert_int_equal(tcpfwd_opt_set_mss(opts, 12, 500, false, &diff), 0);
	assert_int_equal(tcpfwd_opt_set_wscale(opts, 12, 0, &diff), 0);
	assert_int_equal(diff, 0);
	assert_memory_equal(seg, before, len);
	/* NULL csum_diff is allowed. */
	assert_int_equal(tcpfwd_opt_set_ts(opts, 12, 1, 2, NULL), 1);
}

/* ---- checksum helpers ---- */

static void test_csum_rfc1071(void **state)
{
	/* RFC 1071 section 3 example: sum is 0xddf2. */
	static const u8 data[] = { 0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5,
				   0xf6, 0xf7 };
	u8 b[2], padded[10];
	u32 sum;
	u16 r;

	(void)state;
	r = tcpfwd_csum_fold(tcpfwd_csum_bytes(data, 0, sizeof(data)));
	memcpy(b, &r, 2);
	assert_int_equal(b[0], 0x22);	/* ~0xddf2 in memory order */
	assert_int_equal(b[1], 0x0d);

	/* Odd offset and length: same as summing a zero-padded copy. */
	memset(padded, 0, sizeof(padded));
	memcpy(padded + 1, data + 1, 5);
	assert_int_equal(tcpfwd_csum_fold(tcpfwd_csum_bytes(data, 1, 5)),
			 tcpfwd_csum_fold(tcpfwd_csum_bytes(padded, 0, 10)));
	/* Splitting a range does not change the sum. */
	sum = tcpfwd_csum_add(tcpfwd_csum_bytes(data, 0, 3),
			     tcpfwd_csum_bytes(data, 3, 5));
	assert_int_equal(tcpfwd_csum_fold(sum), r);
	assert_int_equal(tcpfwd_csum_add(0xffffffff, 1), 1);
	assert_int_equal(tcpfwd_csum_sub(5, 5), 0xffffffff);
}

/* ---- kind mask ---- */

/*
 * tcpfwd_csum_bytes() sums words, not bytes: the same value as placing
 * each byte in its word one at a time, for every offset and length.
 */
static void test_csum_bytes_wordwise(void **state)
{
	unsigned int off, len, i;
	u8 buf[70];

	(void)state;
	for (i = 0; i < sizeof(buf); i++)
		buf[i] = (u8)rnd();
	for (off = 0; off < 64; off++) {
		for (len = 0; off + len <= sizeof(buf); len++) {
			u32 want = 0;

			for (i = off; i < off + len; i++) {
				u8 w[2] = { 0, 0 };
				u16 v;

				w[i & 1] = buf[i];
				memcpy(&v, w, 2);
				want += v;
			}
			assert_int_equal(tcpfwd_csum_bytes(buf, off, len), want);
		}
	}
}

static void test_kindmask(void **state)
{
	struct impair_kindmask m;
	unsigned int k, j;

	(void)state;
	impair_kindmask_zero(&m);
	for (k = 0; k < 256; k++) {
		assert_false(impair_kindmask_test(&m, (u8)k));
		impair_kindmask_set(&m, (u8)k);
		for (j = 0; j < 256; j++)
			assert_int_equal(impair_kindmask_test(&m, (u8)j),
					 j == k);
		impair_kindmask_clear(&m, (u8)k);
	}
	impair_kindmask_set(&m, 255);
	impair_kindmask_set(&m, 0);
	assert_int_equal(m.w[7], 0x80000000u);
	assert_int_equal(m.w[0], 1);
}

/* ---- strip, NOP mode ---- */

static void test_strip_nop_sackperm(void **state)
{
	static const u8 want[] = {
		2, 4, 0x05, 0xb4,
		1, 1, 8, 10, 0x11, 0x22, 0x33, 0x44, 0, 0, 0, 0,
		1, 3, 3, 7,
	};
	static const u8 kinds[] = { TCPFWD_OPT_SACK_PERM };
	static const u8 payload[] = "hello";
	struct impair_strip_res res;
	struct impair_kindmask m;
	u8 seg[80], before[80];
	unsigned int len;

	(void)state;
	mask_of(&m, kinds, 1);
	len = mkseg(seg, syn_linux, sizeof(syn_linux), payload, 5);
	memcpy(before, seg, len);
	assert_int_equal(strip_nop(seg, len, &m, &res), 1);
	assert_int_equal(res.stripped, 1);
	assert_int_equal(res.old_hdrlen, 40);
	assert_int_equal(res.new_hdrlen, 40);
	assert_int_equal(res.removed, 0);
	assert_memory_equal(seg, before, 16);	/* fixed header, not csum */
	assert_memory_equal(seg + 18, before + 18, 2);
	assert_memory_equal(seg + 20, want, sizeof(want));
	assert_memory_equal(seg + 40, payload, 5);
	kern_replace_by_diff(seg, res.csum_diff);
	assert_true(seg_csum_ok(seg, len));
}

static void test_strip_nop_several(void **state)
{
	static const u8 want[] = {
		2, 4, 0x05, 0x78,
		1, 1, 1, 1,
		1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
		1, 1, 4, 2,
	};
	static const u8 kinds[] = { TCPFWD_OPT_TIMESTAMP, TCPFWD_OPT_WSCALE,
				    TCPFWD_OPT_SACK };
	struct impair_strip_res res;
	struct impair_kindmask m;
	unsigned int len;
	u8 seg[80];

	(void)state;
	mask_of(&m, kinds, 3);
	len = mkseg(seg, syn_bsd, sizeof(syn_bsd), NULL, 0);
	assert_int_equal(len, 44);
	assert_int_equal(strip_nop(seg, len, &m, &res), 2);
	assert_memory_equal(seg + 20, want, sizeof(want));
	assert_int_equal(seg[12] >> 4, 11);
	kern_replace_by_diff(seg, res.csum_diff);
	assert_true(seg_csum_ok(seg, len));
}

static void test_strip_nop_never_nop_eol(void **state)
{
	static const u8 opts[] = {
		1, 1, 8, 10, 0, 0, 0, 1, 0, 0, 0, 2,
		2, 4, 5, 0xb4, EOL, 0, 4, 2,
	};
	struct impair_strip_res res;
	struct impair_kindmask m;
	unsigned int len, i;
	u8 seg[80];

	(void)state;
	memset(&m, 0xff, sizeof(m));	/* every kind, NOP and EOL included */
	len = mkseg(seg, opts, sizeof(opts), NULL, 0);
	assert_int_equal(strip_nop(seg, len, &m, &res), 2);
	for (i = 0; i < 16; i++)
		assert_int_equal(seg[20 + i], NOP);
	/* EOL and the padding after it are untouched. */
	assert_memory_equal(seg + 36, opts + 16, 4);
	kern_replace_by_diff(seg, res.csum_diff);
	assert_true(seg_csum_ok(seg, len));
}

static void test_strip_nop_nomatch(void **state)
{
	static const u8 kinds[] = { TCPFWD_OPT_MPTCP, TCPFWD_OPT_SACK };
	struct impair_strip_res res;
	struct impair_kindmask m;
	u8 seg[80], before[80];
	unsigned int len;

	(void)state;
	mask_of(&m, kinds, 2);
	len = mkseg(seg, syn_linux, sizeof(syn_linux), NULL, 0);
	memcpy(before, seg, len);
	assert_int_equal(strip_nop(seg, len, &m, &res), 0);
	assert_int_equal(res.csum_diff, 0);
	assert_int_equal(res.stripped, 0);
	assert_memory_equal(seg, before, len);
	assert_int_equal(strip_compact_moved(seg, len, &m, &res), 0);
	assert_int_equal(impair_strip_opts_compact(seg, len, &m, &res), 0);
	assert_int_equal(res.removed, 0);
	assert_int_equal(res.new_hdrlen, 40);
	assert_memory_equal(seg, before, len);
}

static void test_strip_malformed_untouched(void **state)
{
	/* MSS (strippable) then a zero-length option. */
	static const u8 opts[] = { 2, 4, 5, 0xb4, 1, 1, 8, 0 };
	static const u8 kinds[] = { TCPFWD_OPT_MSS };
	struct impair_strip_res res;
	struct impair_kindmask m;
	u8 seg[80], before[80];
	unsigned int len;

	(void)state;
	mask_of(&m, kinds, 1);
	len = mkseg(seg, opts, sizeof(opts), (const u8 *)"xyz", 3);
	memcpy(before, seg, len);
	assert_int_equal(strip_nop(seg, len, &m, &res),
			 TCPFWD_OPT_EBADLEN);
	assert_memory_equal(seg, before, len);
	assert_int_equal(strip_compact_moved(seg, len, &m, &res),
			 TCPFWD_OPT_EBADLEN);
	assert_memory_equal(seg, before, len);
	assert_int_equal(impair_strip_opts_compact(seg, len, &m, &res),
			 TCPFWD_OPT_EBADLEN);
	assert_memory_equal(seg, before, len);
}

static void test_strip_bad_doff(void **state)
{
	static const u8 kinds[] = { TCPFWD_OPT_MSS };
	struct impair_strip_res res;
	struct impair_kindmask m;
	u8 seg[80];
	u8 *exact;
	unsigned int len;

	(void)state;
	mask_of(&m, kinds, 1);
	len = mkseg(seg, syn_linux, sizeof(syn_linux), NULL, 0);
	/* Buffer shorter than doff * 4. */
	exact = xdup(seg, len - 1);
	assert_int_equal(strip_nop(exact, len - 1, &m, &res),
			 TCPFWD_OPT_EHDR);
	assert_int_equal(strip_compact_moved(exact, len - 1, &m, &res),
			 TCPFWD_OPT_EHDR);
	free(exact);
	/* Shorter than the fixed header. */
	exact = xdup(seg, 19);
	assert_int_equal(strip_nop(exact, 19, &m, &res),
			 TCPFWD_OPT_EHDR);
	assert_int_equal(tcpfwd_tcp_hdrlen(exact, 19), TCPFWD_OPT_EHDR);
	free(exact);
	/* doff below 5. */
	seg[12] = 0x40;
	assert_int_equal(strip_nop(seg, len, &m, &res),
			 TCPFWD_OPT_EHDR);
	seg[12] = 0xf0;		/* 60 > 40 bytes available */
	assert_int_equal(impair_strip_opts_compact(seg, len, &m, &res),
			 TCPFWD_OPT_EHDR);
	/* doff 5: no options, nothing to strip. */
	seg[12] = 0x50;
	assert_int_equal(strip_nop(seg, 20, &m, &res), 0);
	assert_int_equal(tcpfwd_tcp_hdrlen(seg, 20), 20);
}

/* ---- strip, compact modes ---- */

struct compact_case {
	const char *name;
	const u8 *opts;
	unsigned int optlen;
	u8 kinds[4];
	unsigned int nkinds;
	const u8 *want;
	unsigned int wantlen;	/* new option block length, multiple of 4 */
	int stripped;
};

static const u8 want_syn_no_sackperm[] = {
	2, 4, 0x05, 0xb4,
	8, 10, 0x11, 0x22, 0x33, 0x44, 0, 0, 0, 0,
	1, 3, 3, 7, EOL, 0,
};

static const u8 want_syn_no_ts[] = {
	2, 4, 0x05, 0xb4, 4, 2, 1, 3, 3, 7, EOL, 0,
};

static const u8 want_bsd_no_ts_ws[] = {
	2, 4, 0x05, 0x78, 1, 1, 4, 2,
};

static const u8 want_ack_no_sack[] = {
	1, 1, 8, 10, 0, 0, 0, 9, 0, 0, 0, 7,
};

static const u8 want_ack_no_ts[] = {
	1, 1, 5, 18,
	0x00, 0x00, 0x10, 0x00, 0x00, 0x00, 0x20, 0x00,
	0x00, 0x00, 0x30, 0x00, 0x00, 0x00, 0x40, 0x00,
};

/* MSS, WS, EOL, junk that looks like SACK-permitted */
static const u8 eol_junk[] = { 2, 4, 5, 0xb4, 3, 3, 2, EOL, 4, 2, 9, 9 };
static const u8 want_eol_junk[] = { 2, 4, 5, 0xb4 };

/* SACK-permitted, MSS, trailing NOPs */
static const u8 trailing[] = { 4, 2, 2, 4, 5, 0xb4, 1, 1 };
static const u8 want_trailing[] = { 2, 4, 5, 0xb4 };

/* A NOP run in front of a kept option stays with it. */
static const u8 runs[] = { 30, 4, 1, 2, 1, 1, 1, 3, 3, 5, 1, 1 };
static const u8 want_runs[] = { 1, 1, 1, 3, 3, 5, EOL, 0 };

static const struct compact_case compact_cases[] = {
	{ "syn-sackperm", syn_linux, sizeof(syn_linux),
	  { TCPFWD_OPT_SACK_PERM }, 1,
	  want_syn_no_sackperm, sizeof(want_syn_no_sackperm), 1 },
	{ "syn-ts", syn_linux, sizeof(syn_linux),
	  { TCPFWD_OPT_TIMESTAMP }, 1,
	  want_syn_no_ts, sizeof(want_syn_no_ts), 1 },
	{ "bsd-ts-ws", syn_bsd, sizeof(syn_bsd),
	  { TCPFWD_OPT_TIMESTAMP, TCPFWD_OPT_WSCALE }, 2,
	  want_bsd_no_ts_ws, sizeof(want_bsd_no_ts_ws), 2 },
	{ "data-ts", data_ts, sizeof(data_ts),
	  { TCPFWD_OPT_TIMESTAMP }, 1, NULL, 0, 1 },
	{ "ack-sack", ack_ts_sack2, sizeof(ack_ts_sack2),
	  { TCPFWD_OPT_SACK }, 1,
	  want_ack_no_sack, sizeof(want_ack_no_sack), 1 },
	{ "ack-ts", ack_ts_sack2, sizeof(ack_ts_sack2),
	  { TCPFWD_OPT_TIMESTAMP }, 1,
	  want_ack_no_ts, sizeof(want_ack_no_ts), 1 },
	{ "all", syn_bsd, sizeof(syn_bsd),
	  { 2, 3, 4, 8 }, 4, NULL, 0, 4 },
	{ "eol-junk", eol_junk, sizeof(eol_junk),
	  { TCPFWD_OPT_WSCALE, TCPFWD_OPT_SACK_PERM }, 2,
	  want_eol_junk, sizeof(want_eol_junk), 1 },
	{ "trailing-nops", trailing, sizeof(trailing),
	  { TCPFWD_OPT_SACK_PERM }, 1,
	  want_trailing, sizeof(want_trailing), 1 },
	{ "nop-runs", runs, sizeof(runs),
	  { TCPFWD_OPT_MPTCP }, 1, want_runs, sizeof(want_runs), 1 },
};

static void test_strip_compact_cases(void **state)
{
	static const u8 payload[] = "0123456789abcdefghijklmnopqrstuvwxyz!";
	unsigned int c, plen = sizeof(payload) - 1;

	(void)state;
	for (c = 0; c < ARRAY_SIZE(compact_cases); c++) {
		const struct compact_case *cc = &compact_cases[c];
		struct impair_strip_res res, res2;
		struct impair_kindmask m;
		unsigned int len, hl, new_hl;
		u8 seg[120], seg2[120], before[120];
		u8 *buf, *nth;

		print_message("# case %s\n", cc->name);
		mask_of(&m, cc->kinds, cc->nkinds);
		len = mkseg(seg, cc->opts, cc->optlen, payload, plen);
		hl = len - plen;
		new_hl = TCPFWD_TCPHDR_LEN + cc->wantlen;
		seg[12] |= 0x01;	/* AE flag in the doff byte's nibble */
		seg_csum_set(seg, len);
		memcpy(before, seg, len);
		memcpy(seg2, seg, len);

		/* Payload moves down. */
		buf = xdup(seg, len);
		assert_int_equal(strip_compact_moved(buf, len, &m, &res),
				 cc->stripped);
		assert_int_equal(res.stripped, cc->stripped);
		assert_int_equal(res.old_hdrlen, hl);
		assert_int_equal(res.new_hdrlen, new_hl);
		assert_int_equal(res.removed, hl - new_hl);
		assert_int_equal(res.new_hdrlen % 4, 0);
		assert_int_equal(buf[12], ((new_hl / 4) << 4) | 0x01);
		assert_int_equal(buf[13], before[13]);
		assert_memory_equal(buf, before, 12);
		if (cc->wantlen)
			assert_memory_equal(buf + 20, cc->want, cc->wantlen);
		assert_memory_equal(buf + new_hl, payload, plen);
		assert_int_equal(tcpfwd_opt_validate(buf + 20, cc->wantlen,
						    NULL) >= 0, 1);
		/* Checksum: header diff, then pseudo-header length. */
		kern_replace_by_diff(buf, res.csum_diff);
		kern_replace2(buf, (u16)len, (u16)(len - res.removed));
		assert_true(seg_csum_ok(buf, len - res.removed));
		memcpy(seg, buf, len - res.removed);
		free(buf);

		/* Header moves up to the payload. */
		buf = xdup(seg2, len);
		assert_int_equal(impair_strip_opts_compact(buf, len, &m,
							      &res2),
				 cc->stripped);
		assert_int_equal(res2.removed, res.removed);
		assert_int_equal(res2.new_hdrlen, res.new_hdrlen);
		assert_int_equal(res2.csum_diff, res.csum_diff);
		nth = buf + res2.removed;
		assert_memory_equal(buf + hl, payload, plen);
		kern_replace_by_diff(nth, res2.csum_diff);
		kern_replace2(nth, (u16)len, (u16)(len - res2.removed));
		assert_memory_equal(nth, seg, len - res2.removed);
		assert_true(seg_csum_ok(nth, len - res2.removed));
		free(buf);
	}
}

/* No match: not even padding, trailing NOPs or post-EOL junk change. */
static void test_strip_compact_nomatch_untouched(void **state)
{
	static const u8 kinds[] = { TCPFWD_OPT_FASTOPEN, TCPFWD_OPT_EXP };
	const u8 *blocks[] = { eol_junk, trailing, runs };
	const unsigned int lens[] = { sizeof(eol_junk), sizeof(trailing),
				      sizeof(runs) };
	struct impair_strip_res res;
	struct impair_kindmask m;
	u8 seg[80], before[80];
	unsigned int i, len;

	(void)state;
	mask_of(&m, kinds, 2);
	for (i = 0; i < ARRAY_SIZE(blocks); i++) {
		len = mkseg(seg, blocks[i], lens[i], (const u8 *)"pl", 2);
		memcpy(before, seg, len);
		assert_int_equal(strip_compact_moved(seg, len, &m, &res),
				 0);
		assert_memory_equal(seg, before, len);
		assert_int_equal(res.removed, 0);
		assert_int_equal(res.csum_diff, 0);
		assert_int_equal(impair_strip_opts_compact(seg, len, &m,
							      &res), 0);
		assert_memory_equal(seg, before, len);
	}
}

static void test_strip_compact_header_only_buffer(void **state)
{
	static const u8 kinds[] = { TCPFWD_OPT_TIMESTAMP };
	struct impair_strip_res res;
	struct impair_kindmask m;
	unsigned int len;
	u8 seg[80];
	u8 *buf;

	(void)state;
	mask_of(&m, kinds, 1);
	len = mkseg(seg, data_ts, sizeof(data_ts), NULL, 0);
	buf = xdup(seg, len);
	assert_int_equal(strip_compact_moved(buf, len, &m, &res), 1);
	assert_int_equal(res.new_hdrlen, 20);
	assert_int_equal(res.removed, 12);
	assert_int_equal(buf[12] >> 4, 5);
	free(buf);
	buf = xdup(seg, len);
	assert_int_equal(impair_strip_opts_compact(buf, len, &m, &res), 1);
	assert_int_equal(buf[12 + 12] >> 4, 5);
	assert_memory_equal(buf + 12, seg, 12);
	free(buf);
}

/*
 * Random well-formed blocks (with EOL and junk sometimes), random masks:
 * check the properties of all three strip functions.
 */
static unsigned int gen_block(u8 *b, unsigned int total)
{
	unsigned int n = 0;

	while (n < total) {
		unsigned int left = total - n, r = rnd() % 10, l;

		if (r < 3 || left < 2) {
			b[n++] = NOP;
		} else if (r == 3 && (rnd() & 3) == 0) {
			b[n++] = EOL;
			while (n < total)
				b[n++] = (u8)rnd();
		} else {
			static const u8 k[] = { 2, 3, 4, 5, 8, 30, 34, 99 };

			l = 2 + rnd() % (left - 1);
			if (l > 12)
				l = 2 + rnd() % 11;
			b[n] = k[rnd() % sizeof(k)];
			b[n + 1] = (u8)l;
			for (r = 2; r < l; r++)
				b[n + r] = (u8)rnd();
			n += l;
		}
	}
	return n;
}

/* Non-NOP options before EOL, as (kind, len, bytes) sequence. */
static unsigned int kept_seq(const u8 *opts, unsigned int len,
			     const struct impair_kindmask *m, u8 *out)
{
	struct tcpfwd_opt_iter it;
	struct tcpfwd_opt o;
	unsigned int n = 0;

	tcpfwd_opt_iter_init(&it, opts, len);
	while (tcpfwd_opt_next(&it, &o) > 0) {
		if (o.kind == NOP || (m && impair_kindmask_test(m, o.kind)))
			continue;
		memcpy(out + n, opts + o.off, o.len);
		n += o.len;
	}
	assert_int_equal(it.err, 0);
	return n;
}

/*
 * impair_strip_scan() walks the block with its own loop: the same verdict
 * and error code as tcpfwd_opt_validate(), and the same options as the
 * walker, on random bytes (mostly malformed) and random valid blocks.
 */
static const struct {
	u8 opts[40];
	unsigned int len;
} scan_cases[] = {
	{ { 1, 1, 1, 99 }, 4 },				/* truncated */
	{ { 99, 0, 1, 1 }, 4 },				/* zero length */
	{ { 99, 1, 1, 1 }, 4 },				/* length one */
	{ { 99, 6, 1, 1 }, 4 },				/* overrun */
	{ { 99, 2, 0, 99, 0, 9, 9, 9 }, 8 },		/* junk after EOL */
	{ { 1, 1, 99, 2, 99, 2, 99, 2, 99, 2, 99, 2, 99, 2, 99, 2,
	    99, 2, 99, 2, 99, 2, 99, 2, 99, 2, 99, 2, 99, 2, 99, 2,
	    99, 2, 1, 1 }, 36 },			/* 16 options */
	{ { 1, 1, 99, 2, 99, 2, 99, 2, 99, 2, 99, 2, 99, 2, 99, 2,
	    99, 2, 99, 2, 99, 2, 99, 2, 99, 2, 99, 2, 99, 2, 99, 2,
	    99, 2, 99, 2 }, 36 },			/* 17 options */
	{ { 1 }, 0 },					/* none */
};

static void test_strip_scan_vs_walker(void **state)
{
	unsigned int iter, i;

	(void)state;
	rnd_state = 0x5ca11e55;
	for (iter = 0; iter < 200000; iter++) {
		unsigned int optlen = 4 * (rnd() % 11), n = 0;
		struct impair_strip_plan plan;
		struct tcpfwd_opt_iter it;
		struct impair_kindmask m;
		struct tcpfwd_opt o;
		u8 seg[60], *buf;
		int ret, want;

		memset(seg, 0, 20);
		seg[12] = (u8)((20 + optlen) / 4 << 4);
		if (iter & 1) {
			gen_block(seg + 20, optlen);
		} else {
			for (i = 0; i < optlen; i++)	/* small kinds and lengths */
				seg[20 + i] = (u8)(rnd() % 12);
		}
		if (iter < ARRAY_SIZE(scan_cases)) {	/* the edge cases first */
			optlen = scan_cases[iter].len;
			seg[12] = (u8)((20 + optlen) / 4 << 4);
			memcpy(seg + 20, scan_cases[iter].opts, optlen);
		}
		impair_kindmask_zero(&m);
		for (i = 0; i < 4; i++)
			impair_kindmask_set(&m, (u8)(rnd() % 12));
		if (iter < ARRAY_SIZE(scan_cases))
			impair_kindmask_set(&m, 99);
		buf = xdup(seg, 20 + optlen);
		ret = impair_strip_scan(buf, 20 + optlen, &m, &plan);
		want = tcpfwd_opt_validate(seg + 20, optlen, NULL);
		if (want < 0) {
			assert_int_equal(ret, want);
			free(buf);
			continue;
		}
		tcpfwd_opt_iter_init(&it, seg + 20, optlen);
		while (tcpfwd_opt_next(&it, &o) > 0) {
			if (o.kind == NOP || !impair_kindmask_test(&m, o.kind))
				continue;
			assert_true(n < plan.n);
			assert_int_equal(plan.off[n], o.off);
			assert_int_equal(plan.len[n], o.len);
			n++;
		}
		assert_int_equal(ret, n);
		assert_int_equal(plan.n, n);
		assert_int_equal(plan.hdrlen, 20 + optlen);
		free(buf);
	}
}

static void test_strip_random_properties(void **state)
{
	static const u8 payload[] = "PAYLOAD-bytes-0123456789";
	unsigned int iter, plen = sizeof(payload) - 1;

	(void)state;
	rnd_state = 0x5eed1234;
	for (iter = 0; iter < 20000; iter++) {
		unsigned int optlen = 4 * (rnd() % 11), len, hl, i, nk, nk2;
		struct impair_strip_res r1, r2, r3;
		struct impair_strip_plan plan;
		u8 blk[40], seg[120], kseq[40], kseq2[40], nops[40];
		u8 *a, *b, *c;
		struct impair_kindmask m;
		int s1, s2, s3;

		memset(nops, NOP, sizeof(nops));
		gen_block(blk, optlen);
		if (tcpfwd_opt_validate(blk, optlen, NULL) < 0)
			continue;	/* > 16 options, rare */
		impair_kindmask_zero(&m);
		for (i = 0; i < 3; i++) {
			static const u8 k[] = { 0, 1, 2, 3, 4, 5, 8, 30, 34 };

			impair_kindmask_set(&m, k[rnd() % sizeof(k)]);
		}
		len = mkseg(seg, blk, optlen, payload, plen);
		hl = len - plen;
		nk = kept_seq(blk, optlen, &m, kseq);

		/* NOP mode. */
		a = xdup(seg, len);
		s1 = strip_nop(a, len, &m, &r1);
		assert_true(s1 >= 0);
		assert_int_equal(r1.removed, 0);
		assert_int_equal(a[12], seg[12]);
		for (i = 0; i < len; i++) {
			bool in_opts = i >= 20 && i < hl;
			bool is_csum = i == 16 || i == 17;

			assert_true(a[i] == seg[i] || is_csum ||
				    (in_opts && a[i] == NOP));
		}
		nk2 = kept_seq(a + 20, optlen, NULL, kseq2);
		assert_int_equal(nk2, nk);
		assert_memory_equal(kseq2, kseq, nk);
		kern_replace_by_diff(a, r1.csum_diff);
		assert_true(seg_csum_ok(a, len));

		/* Scan (read-only, the options in order) then apply. */
		assert_int_equal(impair_strip_scan(seg, len, &m, &plan), s1);
		for (i = 0; i < plan.n; i++) {
			assert_true(impair_kindmask_test(&m,
							 seg[20 + plan.off[i]]));
			assert_memory_equal(a + 20 + plan.off[i], nops,
					    plan.len[i]);
			assert_true(!i || plan.off[i] >= plan.off[i - 1] +
							 plan.len[i - 1]);
		}
		b = xdup(seg, len);
		assert_int_equal(impair_strip_apply_nop(b, &plan, &r2), s1);
		assert_memory_equal(&r2, &r1, sizeof(r1));
		kern_replace_by_diff(b, r2.csum_diff);
		assert_memory_equal(b, a, len);
		free(b);

		/* Compact mode. */
		b = xdup(seg, len);
		s2 = strip_compact_moved(b, len, &m, &r2);
		assert_int_equal(s2, s1);
		assert_int_equal(r2.new_hdrlen % 4, 0);
		assert_true(r2.new_hdrlen <= hl);
		assert_int_equal(b[12] >> 4, r2.new_hdrlen / 4);
		assert_true(tcpfwd_opt_validate(b + 20, r2.new_hdrlen - 20,
					       NULL) >= 0);
		nk2 = kept_seq(b + 20, r2.new_hdrlen - 20, NULL, kseq2);
		if (s2) {
			assert_int_equal(nk2, nk);
			assert_memory_equal(kseq2, kseq, nk);
		}
		assert_memory_equal(b + r2.new_hdrlen, payload, plen);
		kern_replace_by_diff(b, r2.csum_diff);
		kern_replace2(b, (u16)len, (u16)(len - r2.removed));
		assert_true(seg_csum_ok(b, len - r2.removed));

		/* Pull mode gives the same segment. */
		c = xdup(seg, len);
		s3 = impair_strip_opts_compact(c, len, &m, &r3);
		assert_int_equal(s3, s2);
		assert_int_equal(r3.removed, r2.removed);
		kern_replace_by_diff(c + r3.removed, r3.csum_diff);
		kern_replace2(c + r3.removed, (u16)len,
			      (u16)(len - r3.removed));
		assert_memory_equal(c + r3.removed, b, len - r2.removed);

		free(a);
		free(b);
		free(c);
	}
}

/*
 * cmocka's test table type, struct CMUnitTest, spelled by token pasting so
 * that checkpatch's CamelCase check does not flag a name we cannot change.
 */
#define CMOCKA_TYPE(a, b, c, d) a##b##c##d
#define CMOCKA_UNIT_TEST_T struct CMOCKA_TYPE(CMU, nit, T, est)

int main(void)
{
	const CMOCKA_UNIT_TEST_T tests[] = {
		cmocka_unit_test(test_walk_empty),
		cmocka_unit_test(test_walk_syn_linux),
		cmocka_unit_test(test_walk_syn_bsd),
		cmocka_unit_test(test_walk_data_ts),
		cmocka_unit_test(test_walk_sack_blocks),
		cmocka_unit_test(test_walk_40_nops),
		cmocka_unit_test(test_walk_eol_middle_junk),
		cmocka_unit_test(test_walk_no_eol_flag_at_end),
		cmocka_unit_test(test_walk_zero_length),
		cmocka_unit_test(test_walk_length_one),
		cmocka_unit_test(test_walk_overrun),
		cmocka_unit_test(test_walk_truncated_length_byte),
		cmocka_unit_test(test_walk_too_many),
		cmocka_unit_test(test_walk_unknown_kinds),
		cmocka_unit_test(test_walk_random_vs_reference),
		cmocka_unit_test(test_find),
		cmocka_unit_test(test_get_values),
		cmocka_unit_test(test_get_values_bad_size),
		cmocka_unit_test(test_get_sack_max),
		cmocka_unit_test(test_set_values_checksum),
		cmocka_unit_test(test_csum_rfc1071),
		cmocka_unit_test(test_csum_bytes_wordwise),
		cmocka_unit_test(test_kindmask),
		cmocka_unit_test(test_strip_nop_sackperm),
		cmocka_unit_test(test_strip_nop_several),
		cmocka_unit_test(test_strip_nop_never_nop_eol),
		cmocka_unit_test(test_strip_nop_nomatch),
		cmocka_unit_test(test_strip_malformed_untouched),
		cmocka_unit_test(test_strip_bad_doff),
		cmocka_unit_test(test_strip_compact_cases),
		cmocka_unit_test(test_strip_compact_nomatch_untouched),
		cmocka_unit_test(test_strip_compact_header_only_buffer),
		cmocka_unit_test(test_strip_scan_vs_walker),
		cmocka_unit_test(test_strip_random_properties),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
