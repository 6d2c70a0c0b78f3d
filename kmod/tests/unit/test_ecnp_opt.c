// SPDX-License-Identifier: GPL-2.0
/*
 * Unit tests for kmod/ecn_proxy/ecnp_opt.c, the ECN proxy's pure TCP option
 * code: what it reads from a SYN's options, and the option block and the
 * checksum of an ACK that dupack mode rewrites (checked against the
 * independent reference in csum_ref.h).
 *
 * Option blocks are copied into heap buffers of exactly their length so
 * that AddressSanitizer catches any read past the end.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdlib.h>
#include <cmocka.h>

#include "../../core/tcpfwd_opt.c"
#include "../../ecn_proxy/ecnp_opt.c"
#include "csum_ref.h"

/* A heap copy of exactly @len bytes of @opts (at least one allocated). */
static u8 *heap_copy(const u8 *opts, unsigned int len)
{
	u8 *buf = malloc(len ? len : 1);

	assert_non_null(buf);
	if (len)
		memcpy(buf, opts, len);
	return buf;
}

/* ecnp_syn_opts() on a heap copy of exactly @len bytes. */
static struct ecnp_pkt syn_opts(const u8 *opts, unsigned int len)
{
	struct ecnp_pkt ep = { 0 };
	u8 *buf = heap_copy(opts, len);

	ecnp_syn_opts(buf, len, &ep);
	free(buf);
	return ep;
}

#define SYN_OPTS(...) ({						\
	static const u8 o_[] = { __VA_ARGS__ };				\
	syn_opts(o_, sizeof(o_));					\
})

static void test_syn_opts_linux(void **state)
{
	struct ecnp_pkt ep;

	(void)state;
	/* Linux: MSS, SACK-permitted, TS, NOP, WS 7 */
	ep = SYN_OPTS(2, 4, 0x05, 0xb4, 4, 2, 8, 10, 1, 2, 3, 4, 0, 0, 0, 0,
		      1, 3, 3, 7);
	assert_int_equal(ep.opt, ECNP_OPT_SACK_PERM | ECNP_OPT_WSCALE);
	assert_int_equal(ep.wscale, 7);
	/* none of them */
	ep = SYN_OPTS(2, 4, 0x05, 0xb4);
	assert_int_equal(ep.opt, 0);
	ep = syn_opts(NULL, 0);
	assert_int_equal(ep.opt, 0);
}

/* As tcp_parse_options(): what comes before a malformed option counts. */
static void test_syn_opts_wscale_like_linux(void **state)
{
	struct ecnp_pkt ep;

	(void)state;
	/* window scale, then an option that overruns the block */
	ep = SYN_OPTS(1, 3, 3, 9, 2, 8, 0x05, 0xb4);
	assert_true(ep.opt & ECNP_OPT_WSCALE);
	assert_int_equal(ep.wscale, 9);
	/* ... then one of length 0 */
	ep = SYN_OPTS(3, 3, 5, 8, 0, 1, 1, 1);
	assert_true(ep.opt & ECNP_OPT_WSCALE);
	assert_int_equal(ep.wscale, 5);
	/* after a malformed option: not read */
	ep = SYN_OPTS(8, 1, 3, 3, 5, 1, 1, 1);
	assert_int_equal(ep.opt, 0);
	/* after EOL: padding */
	ep = SYN_OPTS(0, 3, 3, 5);
	assert_int_equal(ep.opt, 0);
	/* the wrong length is no window scale */
	ep = SYN_OPTS(3, 4, 5, 0);
	assert_int_equal(ep.opt, 0);
	/* twice: the last one */
	ep = SYN_OPTS(3, 3, 2, 1, 3, 3, 14, 1);
	assert_int_equal(ep.wscale, 14);
}

/* Its return value: negative for a block that cannot be walked to its end. */
static void test_syn_opts_ret(void **state)
{
	static const u8 good[] = { 2, 4, 0x05, 0xb4, 1, 3, 3, 7 };
	static const u8 overrun[] = { 1, 3, 3, 9, 2, 8, 0x05, 0xb4 };
	static const u8 len0[] = { 3, 3, 5, 8, 0, 1, 1, 1 };
	static const u8 eol[] = { 0, 19, 0 };
	struct ecnp_pkt ep = { 0 };

	(void)state;
	assert_int_equal(ecnp_syn_opts(good, sizeof(good), &ep), 0);
	assert_int_equal(ecnp_syn_opts(NULL, 0, &ep), 0);
	assert_int_equal(ecnp_syn_opts(eol, sizeof(eol), &ep), 0);
	assert_true(ecnp_syn_opts(overrun, sizeof(overrun), &ep) < 0);
	assert_true(ecnp_syn_opts(len0, sizeof(len0), &ep) < 0);
}

/* TCP-MD5 (RFC 2385) and TCP-AO (RFC 5925) sign the header (L5). */
static void test_syn_opts_signed(void **state)
{
	struct ecnp_pkt ep;

	(void)state;
	/* Linux with MD5: MD5 (18 bytes), NOP NOP, MSS, SACK-permitted */
	ep = SYN_OPTS(1, 1, 19, 18, 0xa1, 0xa2, 0xa3, 0xa4, 0xa5, 0xa6, 0xa7,
		      0xa8, 0xa9, 0xaa, 0xab, 0xac, 0xad, 0xae, 0xaf, 0xb0,
		      2, 4, 0x05, 0xb4, 1, 1, 4, 2);
	assert_true(ep.opt & ECNP_OPT_SIGNED);
	assert_true(ep.opt & ECNP_OPT_SACK_PERM);
	/* TCP-AO: kind 29, KeyID, RNextKeyID, a 12-byte MAC */
	ep = SYN_OPTS(29, 16, 1, 1, 0xc1, 0xc2, 0xc3, 0xc4, 0xc5, 0xc6, 0xc7,
		      0xc8, 0xc9, 0xca, 0xcb, 0xcc, 2, 4, 0x05, 0xb4);
	assert_int_equal(ep.opt, ECNP_OPT_SIGNED);
	/* a malformed MD5 option: still no license to edit */
	ep = SYN_OPTS(19, 6, 1, 2, 3, 4, 1, 1);
	assert_int_equal(ep.opt, ECNP_OPT_SIGNED);
	/* other kinds are not signatures */
	ep = SYN_OPTS(30, 4, 0, 0, 34, 2, 254, 2);
	assert_int_equal(ep.opt, 0);
}

/* ecnp_opts_signed() on a heap copy of exactly @len bytes. */
static bool opts_signed(const u8 *opts, unsigned int len)
{
	u8 *buf = heap_copy(opts, len);
	bool ret;

	ret = ecnp_opts_signed(buf, len);
	free(buf);
	return ret;
}

#define OPTS_SIGNED(...) ({						\
	static const u8 o_[] = { __VA_ARGS__ };				\
	opts_signed(o_, sizeof(o_));					\
})

/* A segment the proxy would pick up (ecnp_pickup_wanted()). */
static void test_opts_signed(void **state)
{
	(void)state;
	/* none, or Linux's NOP NOP TS, and SACK */
	assert_false(opts_signed(NULL, 0));
	assert_false(OPTS_SIGNED(1, 1, 8, 10, 0, 0, 0, 7, 0, 0, 0, 9));
	assert_false(OPTS_SIGNED(1, 1, 5, 10, 0, 0, 0, 1, 0, 0, 0, 2));
	/* MD5 after NOP NOP, as Linux sends it on every segment */
	assert_true(OPTS_SIGNED(1, 1, 19, 18, 0xa1, 0xa2, 0xa3, 0xa4, 0xa5,
				0xa6, 0xa7, 0xa8, 0xa9, 0xaa, 0xab, 0xac,
				0xad, 0xae, 0xaf, 0xb0));
	/* TCP-AO after a timestamp */
	assert_true(OPTS_SIGNED(1, 1, 8, 10, 0, 0, 0, 7, 0, 0, 0, 9, 29, 16,
				1, 1, 0xc1, 0xc2, 0xc3, 0xc4, 0xc5, 0xc6,
				0xc7, 0xc8, 0xc9, 0xca, 0xcb, 0xcc));
	/* of any length */
	assert_true(OPTS_SIGNED(19, 2));
	/* a block that cannot be walked: an overrun, a length below 2 */
	assert_true(OPTS_SIGNED(1, 1, 8, 10, 0, 0));
	assert_true(OPTS_SIGNED(30, 1, 1, 1));
	/* after EOL: padding, not an option */
	assert_false(OPTS_SIGNED(1, 0, 19, 18));
	/* other kinds */
	assert_false(OPTS_SIGNED(30, 4, 0, 0, 34, 2, 254, 2));
}

/* ---- the option block of a rebuilt ACK (L4) ----------------------------- */

struct blk {
	u32 start, end;
};

/* E's option block: NOP NOP TS, then NOP NOP SACK with @n blocks as given. */
static unsigned int e_opts(u8 *out, const struct blk *b, unsigned int n)
{
	unsigned int i, pos = 12;

	memcpy(out, (const u8[]){ 1, 1, 8, 10, 0, 0, 0, 7, 0, 0, 0, 9 }, 12);
	if (!n)
		return pos;
	out[pos++] = 1;
	out[pos++] = 1;
	out[pos++] = TCPFWD_OPT_SACK;
	out[pos++] = (u8)(2 + 8 * n);
	for (i = 0; i < n; i++) {
		tcpfwd_put_be32(out + pos, b[i].start);
		tcpfwd_put_be32(out + pos + 4, b[i].end);
		pos += 8;
	}
	return pos;
}

/* ecnp_build_opts() on E's blocks @in; the blocks it wrote into @out. */
static unsigned int rebuilt(const struct blk *in, unsigned int nin, u32 ack,
			    const struct ecnp_ack_edit *e, struct blk *out)
{
	struct tcpfwd_sack_block got[TCPFWD_SACK_MAX_BLOCKS];
	u8 opts[TCPFWD_OPT_MAX_LEN], res[TCPFWD_OPT_MAX_LEN];
	unsigned int len = e_opts(opts, in, nin), rlen, n = 0, i;
	u32 tsval, tsecr;

	rlen = ecnp_build_opts(res, opts, len, ack, e);
	assert_int_equal(rlen % 4, 0);
	assert_true(rlen <= TCPFWD_OPT_MAX_LEN);
	/* timestamps are always kept */
	assert_int_equal(tcpfwd_opt_get_ts(res, rlen, &tsval, &tsecr), 1);
	assert_int_equal(tsval, 7);
	assert_int_equal(tsecr, e->set_tsecr ? e->tsecr : 9);
	if (tcpfwd_opt_get_sack(res, rlen, got, ARRAY_SIZE(got), &n) != 1)
		return 0;
	for (i = 0; i < n; i++)
		out[i] = (struct blk){ got[i].start, got[i].end };
	return n;
}

#define EXPECT_BLOCKS(out, n, ...) do {					\
	const struct blk w_[] = { __VA_ARGS__ };			\
	unsigned int i_;						\
	assert_int_equal(n, ARRAY_SIZE(w_));				\
	for (i_ = 0; i_ < ARRAY_SIZE(w_); i_++) {			\
		assert_int_equal((out)[i_].start, w_[i_].start);	\
		assert_int_equal((out)[i_].end, w_[i_].end);		\
	}								\
} while (0)

/* The edits ecnp_fsm_ack_edit() makes: TSecr only, a held ACK, copies. */
static struct ecnp_ack_edit tsecr_only(u32 ack)
{
	return (struct ecnp_ack_edit){ .ack = ack, .tsecr = 5,
				       .set_tsecr = true };
}

static struct ecnp_ack_edit held(u32 l, u32 smss, u32 real_ack, u32 limit)
{
	return (struct ecnp_ack_edit){
		.ack = l, .sack = true, .sack_start = l + smss,
		.sack_end = real_ack, .lost = true, .lost_start = l,
		.lost_end = l + smss, .limit = true, .sack_limit = limit,
	};
}

/* E's D-SACK block (below its ACK) survives a rewrite, first. */
static void test_build_opts_dsack(void **state)
{
	struct ecnp_ack_edit e;
	struct blk out[4];
	unsigned int n;
	const u32 ack = 50000;

	(void)state;
	/* TSecr only: E's blocks as they were, the D-SACK first */
	e = tsecr_only(ack);
	n = rebuilt((struct blk[]){ { 40000, 41000 }, { 52000, 53000 } }, 2,
		    ack, &e, out);
	EXPECT_BLOCKS(out, n, { 40000, 41000 }, { 52000, 53000 });
	/* a held ACK (L = 30000): below L it stays a D-SACK, first */
	e = held(30000, 1000, ack, 60000);
	n = rebuilt((struct blk[]){ { 20000, 21000 }, { 52000, 53000 } }, 2,
		    ack, &e, out);
	EXPECT_BLOCKS(out, n, { 20000, 21000 }, { 31000, 50000 },
		      { 52000, 53000 });
	/* above L: first too, so that it lies inside the added block */
	n = rebuilt((struct blk[]){ { 40000, 41000 } }, 1, ack, &e, out);
	EXPECT_BLOCKS(out, n, { 40000, 41000 }, { 31000, 50000 });
	/* one that touches L is left out, as any block would be */
	n = rebuilt((struct blk[]){ { 30000, 31000 } }, 1, ack, &e, out);
	EXPECT_BLOCKS(out, n, { 31000, 50000 });
	/* RFC 2883's other form: the first block inside the second */
	n = rebuilt((struct blk[]){ { 52000, 52500 }, { 51000, 53000 } }, 2,
		    ack, &e, out);
	EXPECT_BLOCKS(out, n, { 52000, 52500 }, { 31000, 50000 },
		      { 51000, 53000 });
	/* the injected copies do not repeat it (the original carries it) */
	e = held(30000, 1000, ack, 0);
	e.limit = false;
	e.no_dsack = true;
	e.sack_end = 34000;
	n = rebuilt((struct blk[]){ { 20000, 21000 } }, 1, ack, &e, out);
	EXPECT_BLOCKS(out, n, { 31000, 34000 });
}

/* Blocks and ranges across sequence number 0. */
static void test_build_opts_wrap(void **state)
{
	struct ecnp_ack_edit e;
	struct blk out[4];
	unsigned int n;

	(void)state;
	/* TSecr only: a block across 0 (and a D-SACK across 0) stay */
	e = tsecr_only(0xfffff000u);
	n = rebuilt((struct blk[]){ { 0xffffff00u, 0x100 } }, 1, 0xfffff000u,
		    &e, out);
	EXPECT_BLOCKS(out, n, { 0xffffff00u, 0x100 });
	e = tsecr_only(0x200);
	n = rebuilt((struct blk[]){ { 0xffffff00u, 0x100 }, { 0x400, 0x800 } },
		    2, 0x200, &e, out);
	EXPECT_BLOCKS(out, n, { 0xffffff00u, 0x100 }, { 0x400, 0x800 });
	/* held with L across 0: blocks that touch it go, others stay */
	e = held(0xfffffe00u, 1000, 0x2000, 0x8000);
	n = rebuilt((struct blk[]){ { 0x100, 0x300 }, { 0x1000, 0x1800 },
				    { 0x3000, 0x3400 } }, 3, 0x2000, &e, out);
	/* (0x100 is inside L: [0xfffffe00, 0x1e8)) */
	EXPECT_BLOCKS(out, n, { 0x1e8, 0x2000 }, { 0x1000, 0x1800 },
		      { 0x3000, 0x3400 });
	/* the limit across 0 */
	e = held(0xffff0000u, 1000, 0xffff8000u, 0x100);
	n = rebuilt((struct blk[]){ { 0xffffff00u, 0x80 }, { 0x80, 0x180 } },
		    2, 0xffff8000u, &e, out);
	EXPECT_BLOCKS(out, n, { 0xffff03e8u, 0xffff8000u },
		      { 0xffffff00u, 0x80 });
}

/* An inverted or empty block is left out alone, never all of E's SACK. */
static void test_build_opts_inverted(void **state)
{
	struct ecnp_ack_edit e;
	struct blk out[4];
	unsigned int n;

	(void)state;
	e = tsecr_only(10000);
	n = rebuilt((struct blk[]){ { 12000, 13000 }, { 16000, 15000 },
				    { 17000, 18000 } }, 3, 10000, &e, out);
	EXPECT_BLOCKS(out, n, { 12000, 13000 }, { 17000, 18000 });
	n = rebuilt((struct blk[]){ { 12000, 12000 }, { 17000, 18000 } }, 2,
		    10000, &e, out);
	EXPECT_BLOCKS(out, n, { 17000, 18000 });
	e = held(5000, 1000, 10000, 20000);
	n = rebuilt((struct blk[]){ { 14000, 11000 }, { 12000, 13000 } }, 2,
		    10000, &e, out);
	EXPECT_BLOCKS(out, n, { 6000, 10000 }, { 12000, 13000 });
}


/* ---- the rebuilt ACK's checksum (L3) ------------------------------------ */

/* A pure ACK from E: seq 1000, ACK @ack, TS and E's SACK blocks @b. */
static unsigned int e_ack_hdr(u8 *th, u32 ack, const struct blk *b,
			      unsigned int n)
{
	unsigned int olen;

	memset(th, 0, TCPFWD_TCPHDR_MAX);
	tcpfwd_put_be16(th, 5001);
	tcpfwd_put_be16(th + 2, 40000);
	tcpfwd_put_be32(th + 4, 1000);
	tcpfwd_put_be32(th + 8, ack);
	olen = e_opts(th + TCPFWD_TCPHDR_LEN, b, n);
	th[12] = (u8)(((TCPFWD_TCPHDR_LEN + olen) / 4) << 4);
	th[13] = 0x10;
	tcpfwd_put_be16(th + 14, 600);
	return TCPFWD_TCPHDR_LEN + olen;
}

/* The SACK blocks of a TCP header. */
static unsigned int hdr_blocks(const u8 *th, unsigned int hlen,
			       struct blk *out)
{
	struct tcpfwd_sack_block got[TCPFWD_SACK_MAX_BLOCKS];
	unsigned int i, n = 0;

	assert_int_equal(tcpfwd_opt_get_sack(th + TCPFWD_TCPHDR_LEN,
					     hlen - TCPFWD_TCPHDR_LEN, got,
					     ARRAY_SIZE(got), &n), 1);
	for (i = 0; i < n; i++)
		out[i] = (struct blk){ got[i].start, got[i].end };
	return n;
}

/* What inet_proto_csum_replace4(htonl(@from), htonl(@to)) adds. */
static u32 be32_diff(u32 from, u32 to)
{
	u8 f[4], t[4];

	tcpfwd_put_be32(f, from);
	tcpfwd_put_be32(t, to);
	return tcpfwd_csum_sub(tcpfwd_csum_bytes(t, 0, 4),
			       tcpfwd_csum_bytes(f, 0, 4));
}

/* The plumbing's update: header bytes, then the pseudo-header length. */
static unsigned int rebuild_csum(u8 *th, unsigned int hlen,
				 const struct ecnp_ack_edit *e)
{
	unsigned int nlen;
	u32 diff;

	nlen = ecnp_ack_rebuild(th, hlen, e, &diff);
	kern_replace_by_diff(th, diff);
	kern_replace_by_diff(th, be32_diff(hlen, nlen));
	return nlen;
}

static void test_ack_rebuild_csum(void **state)
{
	static const struct blk own[] = { { 40000, 41000 }, { 52000, 53000 } };
	struct ecnp_ack_edit e;
	struct blk out[4];
	unsigned int hlen, nlen, n;
	u8 th[TCPFWD_TCPHDR_MAX];

	(void)state;
	/* grows: held, a block added */
	hlen = e_ack_hdr(th, 50000, own, 2);
	seg_csum_set(th, hlen);
	e = held(30000, 1000, 50000, 60000);
	e.win = 500;
	nlen = rebuild_csum(th, hlen, &e);
	assert_int_equal(nlen, hlen + 8);
	assert_true(seg_csum_ok(th, nlen));
	assert_int_equal(tcpfwd_get_be32(th + 8), 30000);
	assert_int_equal(tcpfwd_get_be16(th + 14), 500);
	assert_int_equal(th[12] >> 4, nlen / 4);
	assert_int_equal(th[13], 0x10);
	n = hdr_blocks(th, nlen, out);
	EXPECT_BLOCKS(out, n, { 40000, 41000 }, { 31000, 50000 },
		      { 52000, 53000 });
	/* shrinks: the copies drop E's D-SACK, TSecr raised */
	hlen = e_ack_hdr(th, 50000, own, 2);
	seg_csum_set(th, hlen);
	e = tsecr_only(50000);
	e.no_dsack = true;
	e.lost = true;
	e.lost_start = 52000;
	e.lost_end = 53000;
	nlen = rebuild_csum(th, hlen, &e);
	assert_int_equal(nlen, hlen - 20);
	assert_true(seg_csum_ok(th, nlen));
}

/* A corrupted ACK stays corrupted (the old full recompute repaired it). */
static void test_ack_rebuild_keeps_bad_csum(void **state)
{
	static const struct blk own[] = { { 52000, 53000 } };
	struct ecnp_ack_edit e = held(30000, 1000, 50000, 60000);
	unsigned int hlen, nlen;
	u8 th[TCPFWD_TCPHDR_MAX];

	(void)state;
	hlen = e_ack_hdr(th, 50000, own, 1);
	seg_csum_set(th, hlen);
	th[30] ^= 0x40;		/* a bit flipped on the way: TSval */
	assert_false(seg_csum_ok(th, hlen));
	nlen = rebuild_csum(th, hlen, &e);
	assert_false(seg_csum_ok(th, nlen));
}

/* IPv6 pseudo-header (RFC 8200 8.1): @dst is the final destination. */
static u32 pseudo6_sum(const u8 *src, const u8 *dst, unsigned int len)
{
	return ref_sum(dst, 16, ref_sum(src, 16, 0)) + len + 6;
}

/*
 * With a routing header the pseudo-header names the final destination,
 * not the IPv6 header's: the rebuild never needs either address.
 */
static void test_ack_rebuild_ipv6_rh(void **state)
{
	static const u8 src[16] = { 0xfd, 0x8e, 0xc9, 0xb0, 0x2a, 0x17, 0, 2,
				    [15] = 2 };
	static const u8 final[16] = { 0xfd, 0x8e, 0xc9, 0xb0, 0x2a, 0x17, 0, 0,
				      [15] = 2 };
	static const struct blk own[] = { { 52000, 53000 } };
	struct ecnp_ack_edit e = held(30000, 1000, 50000, 60000);
	unsigned int hlen, nlen;
	u8 th[TCPFWD_TCPHDR_MAX];

	(void)state;
	hlen = e_ack_hdr(th, 50000, own, 1);
	tcpfwd_put_be16(th + 16, (u16)~ref_fold(ref_sum(th, hlen,
				pseudo6_sum(src, final, hlen))));
	nlen = rebuild_csum(th, hlen, &e);
	assert_int_equal(ref_fold(ref_sum(th, nlen,
					  pseudo6_sum(src, final, nlen))),
			 0xffff);
}

/*
 * CHECKSUM_PARTIAL: th->check holds the pseudo-header's sum (the device or
 * skb_checksum_help() adds the rest); only the length part changes
 * (inet_proto_csum_replace*() with pseudohdr, the header diff is skipped).
 */
static void test_ack_rebuild_partial(void **state)
{
	static const struct blk own[] = { { 52000, 53000 } };
	struct ecnp_ack_edit e = held(30000, 1000, 50000, 60000);
	unsigned int hlen, nlen;
	u8 th[TCPFWD_TCPHDR_MAX];
	u16 seed;
	u32 diff;

	(void)state;
	hlen = e_ack_hdr(th, 50000, own, 1);
	tcpfwd_put_be16(th + 16, ref_fold(pseudo_sum(hlen)));
	nlen = ecnp_ack_rebuild(th, hlen, &e, &diff);
	/* ~csum_fold(csum_add(diff, csum_unfold(*sum))) for the length */
	memcpy(&seed, th + 16, 2);
	seed = (u16)~tcpfwd_csum_fold(tcpfwd_csum_add(be32_diff(hlen, nlen),
						      seed));
	memcpy(th + 16, &seed, 2);
	assert_int_equal(ref_fold(pseudo_sum(nlen)), tcpfwd_get_be16(th + 16));
	/* skb_checksum_help(): the folded sum over the header, seed included */
	tcpfwd_put_be16(th + 16, (u16)~ref_fold(ref_sum(th, nlen, 0)));
	assert_true(seg_csum_ok(th, nlen));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_syn_opts_linux),
		cmocka_unit_test(test_syn_opts_wscale_like_linux),
		cmocka_unit_test(test_syn_opts_signed),
		cmocka_unit_test(test_syn_opts_ret),
		cmocka_unit_test(test_opts_signed),
		cmocka_unit_test(test_build_opts_dsack),
		cmocka_unit_test(test_build_opts_wrap),
		cmocka_unit_test(test_build_opts_inverted),
		cmocka_unit_test(test_ack_rebuild_csum),
		cmocka_unit_test(test_ack_rebuild_keeps_bad_csum),
		cmocka_unit_test(test_ack_rebuild_ipv6_rh),
		cmocka_unit_test(test_ack_rebuild_partial),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
