// SPDX-License-Identifier: GPL-2.0
/*
 * Unit tests for kmod/impair/impair_seg.c: the split plan (cut point,
 * option placement, flags, sequence numbers across the wrap), the
 * coalesce conditions and flags, and the checksums of pieces and joined
 * segments derived from the original's checksum field (a full checksum or
 * a CHECKSUM_PARTIAL pseudo-header seed), checked against the independent
 * RFC 1071 sum of csum_ref.h; a corrupt segment's pieces stay corrupt.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdlib.h>
#include <cmocka.h>

#include "../../core/tcpfwd_opt.c"
#include "../../impair/impair_seg.c"

#define RND_SEED 0x6b43a9b5
#include "rnd.h"

#include "csum_ref.h"

#define SYN	IMPAIR_TCP_SYN
#define FIN	IMPAIR_TCP_FIN
#define RST	IMPAIR_TCP_RST
#define PSH	IMPAIR_TCP_PSH
#define URG	IMPAIR_TCP_URG
#define CWR	IMPAIR_TCP_CWR
#define ACK	0x10
#define ECE	0x40

/* ---- helpers ---- */

/* Timestamps (NOP, NOP, TS): a 32-byte header. */
static const u8 ts_opts[12] = {
	1, 1, 8, 10, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88,
};

/*
 * A segment (TCP header with @optlen bytes of @opts, then @plen bytes of
 * payload), its checksum right for csum_ref.h's pseudo-header.
 */
static unsigned int mkseg(u8 *seg, u32 seq, u8 flags, const u8 *opts,
			  unsigned int optlen, const u8 *payload,
			  unsigned int plen)
{
	unsigned int hl = 20 + optlen;

	memset(seg, 0, 20);
	tcpfwd_put_be16(seg, 40000);
	tcpfwd_put_be16(seg + 2, 5201);
	tcpfwd_put_be32(seg + 4, seq);
	tcpfwd_put_be32(seg + 8, 0x01020304);
	seg[12] = (u8)((hl / 4) << 4);
	seg[13] = flags;
	tcpfwd_put_be16(seg + 14, 512);
	memcpy(seg + 20, opts, optlen);
	memcpy(seg + hl, payload, plen);
	seg_csum_set(seg, hl + plen);
	return hl + plen;
}

static u16 get_check(const u8 *seg)
{
	u16 c;

	memcpy(&c, seg + 16, 2);
	return c;
}

/* The seed of @seg as impair.ko derives it. */
static u32 seed_of(const u8 *seg, unsigned int len, bool partial)
{
	return impair_csum_seed(partial, get_check(seg), len,
				partial ? 0 : tcpfwd_csum_bytes(seg, 0, len));
}

/* Give @seg the checksum field CHECKSUM_PARTIAL leaves: the pseudo sum. */
static void make_partial(u8 *seg, unsigned int len)
{
	tcpfwd_put_be16(seg + 16, ref_fold(pseudo_sum(len)));
}

/* Set the checksum of @seg (@len bytes) from @seed, as impair.ko does. */
static void finish(u8 *seg, unsigned int len, u32 seed)
{
	u16 c;

	seg[16] = 0;
	seg[17] = 0;
	c = impair_csum_finish(seed, len, tcpfwd_csum_bytes(seg, 0, len));
	memcpy(seg + 16, &c, 2);
}

/*
 * Piece @i of @plan, cut from @seg (header @hl bytes), into @out: the
 * header with or without its options, the piece's payload, seq, flags.
 */
static unsigned int mkpiece(u8 *out, const u8 *seg, unsigned int hl,
			    const struct impair_split_plan *plan, int i)
{
	unsigned int h = plan->hdrlen[i];
	unsigned int off = hl + (i ? plan->len[0] : 0);

	memcpy(out, seg, h);
	out[12] = (u8)((out[12] & 0x0f) | ((h / 4) << 4));
	out[13] = plan->flags[i];
	tcpfwd_put_be32(out + 4, plan->seq[i]);
	memcpy(out + h, seg + off, plan->len[i]);
	return h + plan->len[i];
}

/* ---- split plan ---- */

static void test_split_cut(void **state)
{
	struct impair_split_plan p;

	(void)state;
	assert_int_equal(impair_split_plan(1000, ACK, 32, 1448, 0,
					   IMPAIR_OPTS_BOTH, &p), 0);
	assert_int_equal(p.len[0], 724);
	assert_int_equal(p.len[1], 724);
	assert_int_equal(p.seq[0], 1000);
	assert_int_equal(p.seq[1], 1724);
	assert_int_equal(p.hdrlen[0], 32);
	assert_int_equal(p.hdrlen[1], 32);

	/* odd: the first piece is the smaller */
	assert_int_equal(impair_split_plan(1000, ACK, 32, 1001, 0,
					   IMPAIR_OPTS_FIRST, &p), 0);
	assert_int_equal(p.len[0], 500);
	assert_int_equal(p.len[1], 501);
	assert_int_equal(p.hdrlen[0], 32);
	assert_int_equal(p.hdrlen[1], 20);

	/* at N */
	assert_int_equal(impair_split_plan(1000, ACK, 32, 1448, 1,
					   IMPAIR_OPTS_SECOND, &p), 0);
	assert_int_equal(p.len[0], 1);
	assert_int_equal(p.len[1], 1447);
	assert_int_equal(p.seq[1], 1001);
	assert_int_equal(p.hdrlen[0], 20);
	assert_int_equal(p.hdrlen[1], 32);
	assert_int_equal(impair_split_plan(1000, ACK, 32, 1448, 1447,
					   IMPAIR_OPTS_SECOND, &p), 0);
	assert_int_equal(p.len[1], 1);

	/* too short, no data */
	assert_int_equal(impair_split_plan(1000, ACK, 32, 1448, 1448,
					   IMPAIR_OPTS_BOTH, &p),
			 IMPAIR_SEG_SHORT);
	assert_int_equal(impair_split_plan(1000, ACK, 32, 100, 5000,
					   IMPAIR_OPTS_BOTH, &p),
			 IMPAIR_SEG_SHORT);
	assert_int_equal(impair_split_plan(1000, ACK, 32, 1, 0,
					   IMPAIR_OPTS_BOTH, &p),
			 IMPAIR_SEG_SHORT);
	assert_int_equal(impair_split_plan(1000, ACK, 32, 2, 0,
					   IMPAIR_OPTS_BOTH, &p), 0);
	assert_int_equal(impair_split_plan(1000, ACK, 32, 0, 0,
					   IMPAIR_OPTS_BOTH, &p),
			 IMPAIR_SEG_NODATA);

	/* bad header length or opts */
	assert_int_equal(impair_split_plan(1000, ACK, 16, 100, 0,
					   IMPAIR_OPTS_BOTH, &p),
			 IMPAIR_SEG_SHORT);
	assert_int_equal(impair_split_plan(1000, ACK, 64, 100, 0,
					   IMPAIR_OPTS_BOTH, &p),
			 IMPAIR_SEG_SHORT);
	assert_int_equal(impair_split_plan(1000, ACK, 32, 100, 0, 3, &p),
			 IMPAIR_SEG_SHORT);

	/* sequence numbers across the wrap */
	assert_int_equal(impair_split_plan(0xfffffff0, ACK, 20, 100, 0x20,
					   IMPAIR_OPTS_BOTH, &p), 0);
	assert_int_equal(p.seq[1], 0x10);
}

static void test_split_flags(void **state)
{
	static const u8 never[] = { SYN, RST, URG, SYN | ACK, RST | ACK };
	struct impair_split_plan p;
	unsigned int i;

	(void)state;
	for (i = 0; i < sizeof(never); i++)
		assert_int_equal(impair_split_plan(1, never[i], 20, 100, 0,
						   IMPAIR_OPTS_BOTH, &p),
				 IMPAIR_SEG_FLAGS);
	/* FIN and PSH go to the second piece only, CWR to the first */
	assert_int_equal(impair_split_plan(1, ACK | PSH | FIN | CWR | ECE, 20,
					   100, 0, IMPAIR_OPTS_BOTH, &p), 0);
	assert_int_equal(p.flags[0], ACK | CWR | ECE);
	assert_int_equal(p.flags[1], ACK | PSH | FIN | ECE);
}

/* ---- checksums of the pieces ---- */

/* Split random segments at random points: both pieces verify. */
static void test_split_csum_random(void **state)
{
	u8 seg[1600], piece[1600], payload[1500];
	unsigned int n, i;

	(void)state;
	for (n = 0; n < 3000; n++) {
		struct impair_split_plan p;
		unsigned int optlen = (rnd() % 2) ? sizeof(ts_opts) : 0;
		unsigned int plen = 2 + rnd() % 1460, len, at;
		bool partial = rnd() % 3 == 0;
		u8 opts = (u8)(rnd() % 3);
		u32 seed;

		for (i = 0; i < plen; i++)
			payload[i] = (u8)rnd();
		len = mkseg(seg, rnd(), ACK | (rnd() % 2 ? PSH : 0), ts_opts,
			    optlen, payload, plen);
		if (partial)
			make_partial(seg, len);
		else
			assert_true(seg_csum_ok(seg, len));
		seed = seed_of(seg, len, partial);
		at = rnd() % 2 ? 0 : 1 + rnd() % (plen - 1);
		assert_int_equal(impair_split_plan(tcpfwd_get_be32(seg + 4),
						   seg[13], 20 + optlen, plen,
						   at, opts, &p), 0);
		assert_int_equal(p.len[0] + p.len[1], plen);
		for (i = 0; i < 2; i++) {
			unsigned int l = mkpiece(piece, seg, 20 + optlen, &p,
						 (int)i);

			finish(piece, l, seed);
			assert_true(seg_csum_ok(piece, l));
			assert_memory_equal(piece + p.hdrlen[i],
					    payload + (i ? p.len[0] : 0),
					    p.len[i]);
		}
	}
}

/* A segment whose checksum is wrong yields two wrong pieces. */
static void test_split_csum_corrupt(void **state)
{
	u8 seg[200], piece[200], payload[101];
	struct impair_split_plan p;
	unsigned int len, i, where;
	u32 seed;

	(void)state;
	for (where = 0; where < sizeof(payload); where += 7) {
		memset(payload, 0x5a, sizeof(payload));
		len = mkseg(seg, 7, ACK, ts_opts, sizeof(ts_opts), payload,
			    sizeof(payload));
		seg[32 + where] ^= 0x10;	/* corrupted in transit */
		assert_false(seg_csum_ok(seg, len));
		seed = seed_of(seg, len, false);
		assert_int_equal(impair_split_plan(7, ACK, 32, sizeof(payload),
						   0, IMPAIR_OPTS_BOTH, &p), 0);
		for (i = 0; i < 2; i++) {
			unsigned int l = mkpiece(piece, seg, 32, &p, (int)i);

			finish(piece, l, seed);
			assert_false(seg_csum_ok(piece, l));
		}
	}
}

/* ---- coalesce ---- */

static void test_coalesce_check(void **state)
{
	struct impair_coal_seg a = {
		.seq = 1000, .len = 500, .hdrlen = 52, .flags = ACK,
		.seed = 0x1234,
	};
	struct impair_coal_seg b = {
		.seq = 1500, .len = 600, .hdrlen = 40, .flags = ACK | PSH,
		.seed = 0x1234,
	};
	struct impair_coal_seg t;
	u8 fl;

	(void)state;
	assert_int_equal(impair_coalesce_can_hold(&a, 1500), 0);
	assert_int_equal(impair_coalesce_check(&a, &b, IMPAIR_OPTS_FIRST,
					       1500, 65535), 0);
	/* MTU: 52 + 1100 with a's headers, 40 + 1100 with b's */
	assert_int_equal(impair_coalesce_check(&a, &b, IMPAIR_OPTS_FIRST,
					       1151, 65535),
			 IMPAIR_SEG_BIG);
	assert_int_equal(impair_coalesce_check(&a, &b, IMPAIR_OPTS_FIRST,
					       1152, 65535), 0);
	assert_int_equal(impair_coalesce_check(&a, &b, IMPAIR_OPTS_SECOND,
					       1140, 65535), 0);
	assert_int_equal(impair_coalesce_check(&a, &b, IMPAIR_OPTS_SECOND,
					       1139, 65535),
			 IMPAIR_SEG_BIG);
	/* the peer's window */
	assert_int_equal(impair_coalesce_check(&a, &b, IMPAIR_OPTS_FIRST,
					       1500, 1100), 0);
	assert_int_equal(impair_coalesce_check(&a, &b, IMPAIR_OPTS_FIRST,
					       1500, 1099),
			 IMPAIR_SEG_BIG);
	assert_int_equal(impair_coalesce_check(&a, &b, IMPAIR_OPTS_FIRST,
					       1500, 0),
			 IMPAIR_SEG_BIG);
	/* not consecutive: a gap, an overlap, a retransmission */
	t = b;
	t.seq = 1501;
	assert_int_equal(impair_coalesce_check(&a, &t, 0, 1500, 65535),
			 IMPAIR_SEG_GAP);
	t.seq = 1499;
	assert_int_equal(impair_coalesce_check(&a, &t, 0, 1500, 65535),
			 IMPAIR_SEG_GAP);
	t.seq = 1000;
	assert_int_equal(impair_coalesce_check(&a, &t, 0, 1500, 65535),
			 IMPAIR_SEG_GAP);
	/* across the wrap */
	t = a;
	t.seq = 0xffffff00;
	t.len = 0x100;
	b.seq = 0;
	assert_int_equal(impair_coalesce_check(&t, &b, 0, 1500, 65535), 0);
	b.seq = 1500;
	/* flags */
	for (fl = 0; fl < 4; fl++) {
		static const u8 bad[] = { SYN, FIN, RST, URG };

		t = b;
		t.flags = ACK | bad[fl];
		assert_int_equal(impair_coalesce_check(&a, &t, 0, 1500, 65535),
				 IMPAIR_SEG_FLAGS);
		assert_int_equal(impair_coalesce_can_hold(&t, 1500),
				 IMPAIR_SEG_FLAGS);
	}
	/* no data */
	t = b;
	t.len = 0;
	assert_int_equal(impair_coalesce_check(&a, &t, 0, 1500, 65535),
			 IMPAIR_SEG_NODATA);
	assert_int_equal(impair_coalesce_can_hold(&t, 1500),
			 IMPAIR_SEG_NODATA);
	/* nothing more fits */
	t = a;
	t.len = 1448;
	assert_int_equal(impair_coalesce_can_hold(&t, 1500), IMPAIR_SEG_BIG);
	t.len = 1447;
	assert_int_equal(impair_coalesce_can_hold(&t, 1500), 0);
	/* seeds: one segment corrupt; the two zeros of one's complement */
	t = b;
	t.seed = 0x1235;
	assert_int_equal(impair_coalesce_check(&a, &t, 0, 1500, 65535),
			 IMPAIR_SEG_CSUM);
	/* the DS fields: a CE mark, or another DSCP, on one of the two */
	for (fl = 0; fl < 2; fl++) {
		t = b;
		t.dsfield = fl ? 0x20 : 0x03;	/* DSCP 8; CE */
		assert_int_equal(impair_coalesce_check(&a, &t, 0, 1500, 65535),
				 IMPAIR_SEG_DSFIELD);
	}
	assert_true(impair_csum_seed_eq(0, 0xffff));
	assert_true(impair_csum_seed_eq(0xffffffff, 0));
	assert_true(impair_csum_seed_eq(0x00010000, 1));
	assert_false(impair_csum_seed_eq(1, 2));
}

static void test_coalesce_flags(void **state)
{
	(void)state;
	assert_int_equal(impair_coalesce_flags(ACK, ACK | PSH,
					       IMPAIR_OPTS_FIRST), ACK | PSH);
	assert_int_equal(impair_coalesce_flags(ACK | CWR, ACK | ECE,
					       IMPAIR_OPTS_SECOND),
			 ACK | ECE | CWR);
	assert_int_equal(impair_coalesce_flags(ACK | ECE, ACK,
					       IMPAIR_OPTS_SECOND), ACK);
}

/*
 * Join random consecutive segments (odd lengths too: the second payload
 * changes its byte parity) with either header: the result verifies and
 * carries both payloads; full and CHECKSUM_PARTIAL seeds agree.
 */
static void test_coalesce_csum_random(void **state)
{
	u8 a[800], b[800], j[1600], pa[700], pb[700];
	unsigned int n, i;

	(void)state;
	for (n = 0; n < 3000; n++) {
		unsigned int la = 1 + rnd() % 700, lb = 1 + rnd() % 700;
		unsigned int oa = rnd() % 2 ? sizeof(ts_opts) : 0;
		unsigned int ob = rnd() % 2 ? sizeof(ts_opts) : 0;
		u8 opts = (u8)(rnd() % 2), flags;
		struct impair_coal_seg ca, cb;
		unsigned int lena, lenb, h, len;
		u32 seq = rnd();
		const u8 *base;

		for (i = 0; i < la; i++)
			pa[i] = (u8)rnd();
		for (i = 0; i < lb; i++)
			pb[i] = (u8)rnd();
		lena = mkseg(a, seq, ACK, ts_opts, oa, pa, la);
		lenb = mkseg(b, seq + la, ACK | PSH, ts_opts, ob, pb, lb);
		ca = (struct impair_coal_seg){
			.seq = seq, .len = la, .hdrlen = 20 + oa,
			.flags = ACK, .seed = seed_of(a, lena, false) };
		cb = (struct impair_coal_seg){
			.seq = seq + la, .len = lb, .hdrlen = 20 + ob,
			.flags = ACK | PSH, .seed = seed_of(b, lenb, false) };
		if (rnd() % 2) {	/* the second under CHECKSUM_PARTIAL */
			make_partial(b, lenb);
			cb.seed = seed_of(b, lenb, true);
		}
		assert_int_equal(impair_coalesce_check(&ca, &cb, opts, 1500,
						       65535), 0);
		base = opts == IMPAIR_OPTS_SECOND ? b : a;
		h = opts == IMPAIR_OPTS_SECOND ? 20 + ob : 20 + oa;
		flags = impair_coalesce_flags(ca.flags, cb.flags, opts);
		memcpy(j, base, h);
		tcpfwd_put_be32(j + 4, seq);
		j[13] = flags;
		memcpy(j + h, pa, la);
		memcpy(j + h + la, pb, lb);
		len = h + la + lb;
		finish(j, len, opts == IMPAIR_OPTS_SECOND ? cb.seed : ca.seed);
		assert_true(seg_csum_ok(j, len));
		assert_int_equal(j[13], ACK | PSH);
	}
}

/*
 * The release work for the oldest held segment, due @delay after @now:
 * armed if not pending, and brought forward if pending for later (for a
 * segment released since under a longer coalesce_timeout_ms, or for a
 * newer segment, armed while the work ran); never pushed back.  Across
 * the jiffies wrap.
 */
static void test_hold_rearm(void **state)
{
	const unsigned long near_wrap = (unsigned long)-100;
	unsigned long now = 5000;

	(void)state;
	assert_true(impair_hold_rearm(false, 0, now, 50));
	assert_true(impair_hold_rearm(false, now + 10, now, 50));
	/* pending for a segment held earlier, same timeout: left alone */
	assert_false(impair_hold_rearm(true, now + 20, now, 50));
	assert_false(impair_hold_rearm(true, now + 50, now, 50));
	/* pending for a released segment's 10 s timeout: brought forward */
	assert_true(impair_hold_rearm(true, now + 10000, now, 50));
	assert_true(impair_hold_rearm(true, now + 51, now, 50));
	/* a timer that has fired, its work queued: left alone */
	assert_false(impair_hold_rearm(true, now - 3, now, 50));
	/* jiffies about to wrap */
	assert_false(impair_hold_rearm(true, near_wrap + 30, near_wrap, 50));
	assert_true(impair_hold_rearm(true, near_wrap + 10000, near_wrap, 50));
	assert_false(impair_hold_rearm(true, near_wrap - 1, near_wrap, 50));
}

/*
 * The segments a GSO packet stands for: gso_segs when set; counted from
 * gso_size when a tun or virtio device left it 0, the last piece short.
 */
static void test_gso_nsegs(void **state)
{
	(void)state;
	assert_int_equal(impair_gso_nsegs(3, 1448, 4344), 3);
	/* the stack's count wins, even where gso_size says otherwise */
	assert_int_equal(impair_gso_nsegs(2, 1448, 4344), 2);
	assert_int_equal(impair_gso_nsegs(0, 1448, 4344), 3);
	assert_int_equal(impair_gso_nsegs(0, 1448, 4345), 4);
	assert_int_equal(impair_gso_nsegs(0, 1448, 4343), 3);
	assert_int_equal(impair_gso_nsegs(0, 1448, 1448), 1);
	assert_int_equal(impair_gso_nsegs(0, 1448, 1), 1);
	assert_int_equal(impair_gso_nsegs(0, 1448, 0), 1);
	assert_int_equal(impair_gso_nsegs(0, 0, 4344), 1);
	assert_int_equal(impair_gso_nsegs(0, 1, 65535), 65535);
	assert_int_equal(impair_gso_nsegs(0, 536, 65535), 123);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_split_cut),
		cmocka_unit_test(test_split_flags),
		cmocka_unit_test(test_split_csum_random),
		cmocka_unit_test(test_split_csum_corrupt),
		cmocka_unit_test(test_coalesce_check),
		cmocka_unit_test(test_coalesce_flags),
		cmocka_unit_test(test_coalesce_csum_random),
		cmocka_unit_test(test_hold_rearm),
		cmocka_unit_test(test_gso_nsegs),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
