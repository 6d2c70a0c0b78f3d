// SPDX-License-Identifier: GPL-2.0
/*
 * Unit tests for kmod/core/tcpfwd_iph.c (IP header edits and their
 * checksum bookkeeping), and for the sequence of edits of impair's option
 * compaction (kmod/impair/impair_main.c, impair_compact()) on a whole
 * packet under CHECKSUM_COMPLETE.
 *
 * The oracle for skb->csum is the plain definition of the kernel's
 * csum_partial(): 16-bit words loaded in host order from the start of the
 * packet (the network header at the FORWARD hook), summed with end-around
 * carry; headers are also checked against the byte-wise RFC 1071
 * reference of csum_ref.h.  The kernel's csum_replace4() and
 * inet_proto_csum_replace4() are modelled line by line.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdlib.h>
#include <cmocka.h>

#include "../../core/tcpfwd_opt.c"
#include "../../core/tcpfwd_iph.c"
#include "../../impair/impair_strip.c"

#define RND_SEED 0x1b5eed01
#include "rnd.h"
#include "csum_ref.h"

/* csum_partial(@p, @len, 0) up to folding; @len even */
static u32 host_sum(const u8 *p, unsigned int len)
{
	unsigned int i;
	u32 sum = 0;
	u16 w;

	for (i = 0; i + 1 < len; i += 2) {
		memcpy(&w, p + i, 2);
		sum = tcpfwd_csum_add(sum, w);
	}
	return sum;
}

/* Two wsums are the same one's complement number (0 and 0xffff alike). */
static bool wsum_eq(u32 a, u32 b)
{
	u16 fa = tcpfwd_csum_fold(a), fb = tcpfwd_csum_fold(b);

	return fa == fb || (fa == 0 && fb == 0xffff) ||
	       (fa == 0xffff && fb == 0);
}

static void rnd_fill(u8 *p, unsigned int len)
{
	while (len--)
		*p++ = (u8)rnd();
}

/* A random IPv4 header (no options) with a valid checksum. */
static void mk_ip4(u8 *h, unsigned int tot_len)
{
	rnd_fill(h, 20);
	h[0] = 0x45;
	tcpfwd_put_be16(h + 2, (u16)tot_len);
	h[9] = 6;
	h[10] = 0;
	h[11] = 0;
	tcpfwd_put_be16(h + 10, (u16)~ref_fold(ref_sum(h, 20, 0)));
	assert_int_equal(ref_fold(ref_sum(h, 20, 0)), 0xffff);
}

static void mk_ip6(u8 *h, unsigned int plen)
{
	rnd_fill(h, 40);
	h[0] = (u8)(0x60 | (h[0] & 0x0f));
	tcpfwd_put_be16(h + 4, (u16)plen);
	h[6] = 6;
}

static u8 ip6_tc(const u8 *h)
{
	return (u8)((h[0] & 0x0f) << 4 | h[1] >> 4);
}

static void test_ip6_dsfield(void **state)
{
	static const u8 masks[] = { 0xfc, 0x03, 0x00, 0xff };
	unsigned int i;
	u8 h[40], before[40];

	(void)state;
	for (i = 0; i < 4000; i++) {
		u8 mask = masks[i % 4], value = (u8)rnd() & ~mask, tc;
		u32 diff;

		mk_ip6(h, 1000);
		memcpy(before, h, sizeof(h));
		tc = ip6_tc(h);
		diff = tcpfwd_ip6_change_dsfield(h, mask, value);
		assert_int_equal(ip6_tc(h), (tc & mask) | value);
		/* version, flow label and the rest untouched */
		assert_int_equal(h[0] >> 4, 6);
		assert_int_equal(h[1] & 0x0f, before[1] & 0x0f);
		assert_memory_equal(h + 2, before + 2, sizeof(h) - 2);
		/* skb->csum + diff is the sum of the new header */
		assert_true(wsum_eq(tcpfwd_csum_add(host_sum(before, 40), diff),
				    host_sum(h, 40)));
	}
	/* the ECN codepoints, as tcpfwd_set_ecn() uses it */
	mk_ip6(h, 100);
	h[0] = 0x6b;
	h[1] = 0x8f;		/* tc 0xb8: DSCP 46, Not-ECT */
	tcpfwd_ip6_change_dsfield(h, 0xfc, 3);
	assert_int_equal(h[0], 0x6b);
	assert_int_equal(h[1], 0xbf);
}

static void test_ip_len(void **state)
{
	u8 h[40];

	(void)state;
	mk_ip4(h, 1500);
	assert_int_equal(tcpfwd_ip_len(h), 1500);
	mk_ip6(h, 1460);
	assert_int_equal(tcpfwd_ip_len(h), 1460);
	h[0] = 0x50;
	assert_int_equal(tcpfwd_ip_len(h), 0);
}

static void test_ip4_shrink(void **state)
{
	unsigned int i;
	u8 h[20];

	(void)state;
	for (i = 0; i < 4000; i++) {
		unsigned int len = 40 + rnd() % 65496, by = 4 * (rnd() % 11);
		u32 diff = 1;

		mk_ip4(h, len);
		assert_int_equal(tcpfwd_ip_resize(h, -(int)by, &diff), 0);
		assert_int_equal(tcpfwd_ip_len(h), len - by);
		/* header checksum still valid: its sum, skb->csum, unchanged */
		assert_int_equal(ref_fold(ref_sum(h, 20, 0)), 0xffff);
		assert_int_equal(diff, 0);
	}
}

static void test_ip6_shrink(void **state)
{
	unsigned int i;
	u8 h[40], before[40];

	(void)state;
	for (i = 0; i < 4000; i++) {
		unsigned int len = 20 + rnd() % 65516, by = 4 * (rnd() % 5);
		u32 diff;

		mk_ip6(h, len);
		memcpy(before, h, sizeof(h));
		assert_int_equal(tcpfwd_ip_resize(h, -(int)by, &diff), 0);
		assert_int_equal(tcpfwd_ip_len(h), len - by);
		assert_memory_equal(h + 6, before + 6, 34);
		assert_true(wsum_eq(tcpfwd_csum_add(host_sum(before, 40), diff),
				    host_sum(h, 40)));
	}
}

/* Growth, as a rebuilt ACK with more options: the same checks. */
static void test_ip_grow(void **state)
{
	unsigned int i;
	u8 h[40], before[40];
	u32 diff;
	u16 sum;

	(void)state;
	for (i = 0; i < 4000; i++) {
		unsigned int len = 40 + rnd() % 65000, by = 4 * (rnd() % 11);

		diff = 1;
		mk_ip4(h, len);
		assert_int_equal(tcpfwd_ip_resize(h, (int)by, &diff), 0);
		assert_int_equal(tcpfwd_ip_len(h), len + by);
		assert_int_equal(ref_fold(ref_sum(h, 20, 0)), 0xffff);
		assert_int_equal(diff, 0);

		mk_ip6(h, len - 20);
		memcpy(before, h, sizeof(h));
		assert_int_equal(tcpfwd_ip_resize(h, (int)by, &diff), 0);
		assert_int_equal(tcpfwd_ip_len(h), len - 20 + by);
		assert_memory_equal(h + 6, before + 6, 34);
		assert_true(wsum_eq(tcpfwd_csum_add(host_sum(before, 40), diff),
				    host_sum(h, 40)));
	}
	/* a wrong IPv4 header checksum stays as wrong as it was */
	mk_ip4(h, 1000);
	h[10] ^= 0x5a;
	sum = ref_fold(ref_sum(h, 20, 0));
	assert_int_not_equal(sum, 0xffff);
	assert_int_equal(tcpfwd_ip_resize(h, 12, &diff), 0);
	assert_int_equal(tcpfwd_ip_len(h), 1012);
	assert_int_equal(ref_fold(ref_sum(h, 20, 0)), sum);
}

/*
 * L2: a BIG TCP packet has length field 0.  The old compaction computed
 * htons(0 - removed), e.g. 0xfff4 for 12 bytes: a 64 KiB length on a
 * packet of any size.  Now it is refused and nothing changes.
 */
static void test_shrink_refused(void **state)
{
	u8 h[40], before[40];
	u32 diff = 7;

	(void)state;
	mk_ip6(h, 0);
	memcpy(before, h, sizeof(h));
	assert_int_equal(tcpfwd_ip_len(h), 0);
	assert_int_equal(tcpfwd_ip_resize(h, -12, &diff), TCPFWD_OPT_EINVAL);
	assert_memory_equal(h, before, sizeof(h));
	assert_int_equal(diff, 0);

	mk_ip4(h, 0);
	memcpy(before, h, 20);
	assert_int_equal(tcpfwd_ip_resize(h, -12, &diff), TCPFWD_OPT_EINVAL);
	assert_memory_equal(h, before, 20);

	/* not longer than what would be removed */
	mk_ip6(h, 12);
	assert_int_equal(tcpfwd_ip_resize(h, -12, &diff), TCPFWD_OPT_EINVAL);
	assert_int_equal(tcpfwd_ip_len(h), 12);
	assert_int_equal(tcpfwd_ip_resize(h, -8, &diff), 0);
	assert_int_equal(tcpfwd_ip_len(h), 4);

	/* not beyond 16 bits */
	mk_ip4(h, 65530);
	memcpy(before, h, 20);
	assert_int_equal(tcpfwd_ip_resize(h, 8, &diff), TCPFWD_OPT_EINVAL);
	assert_memory_equal(h, before, 20);
	assert_int_equal(tcpfwd_ip_resize(h, 5, &diff), 0);
	assert_int_equal(tcpfwd_ip_len(h), 65535);

	/* not IP */
	mk_ip6(h, 1000);
	h[0] = 0x70;
	memcpy(before, h, sizeof(h));
	assert_int_equal(tcpfwd_ip_resize(h, -4, &diff), TCPFWD_OPT_EINVAL);
	assert_memory_equal(h, before, sizeof(h));
}

/* --- impair_compact()'s edits on a whole packet, CHECKSUM_COMPLETE --- */

struct model {
	u8 *pkt;		/* skb->data: the network header */
	unsigned int len;	/* skb->len */
	u32 csum;		/* skb->csum */
};

/* inet_proto_csum_replace4(check, skb, from, to, true), CHECKSUM_COMPLETE */
static void model_replace4_pseudo(struct model *m, u8 *check, u32 from,
				  u32 to)
{
	u8 f[4], t[4];
	u32 fr, tr;
	u16 sum;

	tcpfwd_put_be32(f, from);	/* htonl(): the raw __be32 */
	tcpfwd_put_be32(t, to);
	memcpy(&fr, f, 4);
	memcpy(&tr, t, 4);
	memcpy(&sum, check, 2);
	sum = tcpfwd_csum_fold(tcpfwd_csum_add(tcpfwd_csum_sub(~(u32)sum, fr),
					       tr));
	memcpy(check, &sum, 2);
	m->csum = ~tcpfwd_csum_add(tcpfwd_csum_sub(~m->csum, fr), tr);
}

/* The TCP checksum over the packet, with its pseudo-header, verifies. */
static bool tcp_csum_ok(const u8 *pkt, unsigned int thoff, unsigned int len)
{
	unsigned int tcplen = len - thoff;
	u32 acc;

	if (pkt[0] >> 4 == 4)
		acc = ref_sum(pkt + 12, 8, 0);
	else
		acc = ref_sum(pkt + 8, 32, 0);
	acc += 6 + (tcplen & 0xffff) + (tcplen >> 16);
	return ref_fold(ref_sum(pkt + thoff, tcplen, acc)) == 0xffff;
}

/*
 * A packet: IP header (IPv6 with an 8-byte extension header sometimes),
 * TCP header with @opts, payload; valid checksums; skb->csum its sum.
 */
static unsigned int mk_packet(u8 *pkt, bool v6, bool ext, const u8 *opts,
			      unsigned int optlen, unsigned int plen,
			      unsigned int *thoff)
{
	unsigned int nhl = v6 ? 40 + (ext ? 8 : 0) : 20;
	unsigned int thl = 20 + optlen, len = nhl + thl + plen, tcplen;
	u8 *th = pkt + nhl;
	u32 acc;

	if (v6) {
		mk_ip6(pkt, len - 40);
		if (ext) {
			pkt[6] = 60;	/* destination options */
			rnd_fill(pkt + 40, 8);
			pkt[40] = 6;
			pkt[41] = 0;
		}
	} else {
		mk_ip4(pkt, len);
	}
	rnd_fill(th, thl + plen);
	th[12] = (u8)((thl / 4) << 4);
	memcpy(th + 20, opts, optlen);
	th[16] = 0;
	th[17] = 0;
	tcplen = thl + plen;
	if (v6)
		acc = ref_sum(pkt + 8, 32, 0);
	else
		acc = ref_sum(pkt + 12, 8, 0);
	acc += 6 + tcplen;
	tcpfwd_put_be16(th + 16, (u16)~ref_fold(ref_sum(th, tcplen, acc)));
	assert_true(tcp_csum_ok(pkt, nhl, len));
	*thoff = nhl;
	return len;
}

/*
 * impair_compact() after its checks: the pure compaction, the header
 * difference (pseudohdr false), the pseudo-header length (pseudohdr
 * true), the move and pull, and tcpfwd_skb_ip_resize(): tcpfwd_ip_resize()
 * and tcpfwd_csum_complete_add().  Returns the bytes removed.
 */
static unsigned int model_compact(struct model *m, unsigned int thoff,
				  const struct impair_kindmask *mask)
{
	unsigned int old_tcplen = m->len - thoff, removed;
	struct impair_strip_res res;
	u8 *th = m->pkt + thoff;
	u32 diff;
	int ret;

	ret = impair_strip_opts_compact(th, m->len - thoff, mask, &res);
	assert_true(ret > 0);
	removed = res.removed;
	th += removed;
	/* pseudohdr false: skb->csum stays */
	kern_replace_by_diff(th, res.csum_diff);
	if (!removed)
		return 0;
	model_replace4_pseudo(m, th + 16, old_tcplen, old_tcplen - removed);
	memmove(m->pkt + removed, m->pkt, thoff);
	m->pkt += removed;
	m->len -= removed;
	assert_int_equal(tcpfwd_ip_resize(m->pkt, -(int)removed, &diff), 0);
	/* tcpfwd_csum_complete_add() */
	m->csum = tcpfwd_csum_add(m->csum, diff);
	return removed;
}

static const u8 syn_opts[] = {	/* MSS, SACK-permitted, TS, NOP, WS */
	2, 4, 0x05, 0xb4, 4, 2, 8, 10, 1, 2, 3, 4, 0, 0, 0, 0, 1, 3, 3, 7,
};

static const u8 data_opts[] = { 1, 1, 8, 10, 1, 2, 3, 4, 5, 6, 7, 8 };

static void check_compact(bool v6, bool ext, const u8 *opts,
			  unsigned int optlen, unsigned int plen)
{
	static const u8 kinds[] = { TCPFWD_OPT_TIMESTAMP };
	struct impair_kindmask mask;
	unsigned int len, thoff, removed;
	struct model m;
	u8 *buf = malloc(2000);

	assert_non_null(buf);
	impair_kindmask_zero(&mask);
	impair_kindmask_set(&mask, kinds[0]);
	len = mk_packet(buf, v6, ext, opts, optlen, plen, &thoff);
	m.pkt = buf;
	m.len = len;
	buf[len] = 0;	/* the pad byte of an odd length */
	m.csum = host_sum(buf, len + (len & 1));
	removed = model_compact(&m, thoff, &mask);
	assert_int_equal(removed, optlen == sizeof(syn_opts) ? 8 : 12);
	assert_int_equal(tcpfwd_ip_len(m.pkt), v6 ? m.len - 40 : m.len);
	assert_true(tcp_csum_ok(m.pkt, thoff, m.len));
	if (!v6)
		assert_int_equal(ref_fold(ref_sum(m.pkt, 20, 0)), 0xffff);
	/* L1: skb->csum is still the sum of the packet */
	assert_true(wsum_eq(m.csum, host_sum(m.pkt, m.len + (m.len & 1))));
	free(buf);
}

static void test_compact_checksum_complete(void **state)
{
	unsigned int i;

	(void)state;
	for (i = 0; i < 300; i++) {
		unsigned int plen = rnd() % 1400;

		check_compact(false, false, syn_opts, sizeof(syn_opts), plen);
		check_compact(false, false, data_opts, sizeof(data_opts), plen);
		check_compact(true, false, syn_opts, sizeof(syn_opts), plen);
		check_compact(true, false, data_opts, sizeof(data_opts), plen);
		check_compact(true, true, data_opts, sizeof(data_opts), plen);
	}
}

/* L1: tcpfwd_set_ecn() on IPv6 under CHECKSUM_COMPLETE */
static void test_ecn_checksum_complete(void **state)
{
	unsigned int i, thoff, len;
	u8 buf[1600];
	u32 csum;

	(void)state;
	for (i = 0; i < 1000; i++) {
		len = mk_packet(buf, true, i & 1, data_opts, sizeof(data_opts),
				2 * (rnd() % 700), &thoff);
		csum = host_sum(buf, len);
		csum = tcpfwd_csum_add(csum, tcpfwd_ip6_change_dsfield(buf, 0xfc,
								      rnd() & 3));
		assert_true(wsum_eq(csum, host_sum(buf, len)));
		assert_true(tcp_csum_ok(buf, thoff, len));
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ip6_dsfield),
		cmocka_unit_test(test_ip_len),
		cmocka_unit_test(test_ip4_shrink),
		cmocka_unit_test(test_ip6_shrink),
		cmocka_unit_test(test_ip_grow),
		cmocka_unit_test(test_shrink_refused),
		cmocka_unit_test(test_compact_checksum_complete),
		cmocka_unit_test(test_ecn_checksum_complete),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
