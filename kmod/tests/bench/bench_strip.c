// SPDX-License-Identifier: GPL-2.0
/*
 * The per-packet work of impair's "strip timestamp" rule that is pure code
 * (the rule match, kmod/impair/impair_rule.c, and the option walk and NOP
 * overwrite with its checksum difference, kmod/impair/impair_strip.c and
 * kmod/core/tcpfwd_opt.c, compiled as shipped) against a model of
 * net/netfilter/xt_TCPOPTSTRIP.c's tcpoptstrip_mangle_packet() loop: one
 * option walk, for each byte of a stripped option one call of
 * inet_proto_csum_replace2() (modelled with csum_replace4() and the
 * generic csum_fold()), then memset().  Not modelled: the skb work both
 * share (parse, skb_ensure_writable()), x_tables' rule traversal, and
 * impair's flow lookup (none for a rule set that needs no flow state).
 * xt_TCPOPTSTRIP makes the header writable on every segment, options or
 * not; impair only when it strips something.
 *
 * A benchmark, not a test: kmod/tests/bench/strip-bench.sh runs it under
 * valgrind --tool=callgrind (instruction counts, deterministic) and prints
 * instructions per packet, side by side.
 *
 *   bench_strip VARIANT PACKET N
 *   VARIANT: copy (the baseline: the header copy every variant does),
 *            xt, impair; check: both give the same header (exit 1 if not)
 *   PACKET:  data (NOP NOP TS), sack (TS and two SACK blocks), syn (MSS,
 *            SACK-permitted, TS, NOP, WS), none (no options)
 *
 * Built with -I to the tree under test (its kmod/core, kmod/impair,
 * kmod/tests/unit), so that the script can also build it against an older
 * revision.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tcpfwd_opt.c"
#include "impair_strip.c"
#include "impair_rule.c"

static const u8 pkt_data[] = {	/* ACK, doff 8: NOP NOP TS */
	0x9c, 0x40, 0x13, 0x89, 0, 0, 1, 0, 0, 0, 2, 0, 0x80, 0x10,
	0x01, 0xf5, 0x12, 0x34, 0, 0,
	1, 1, 8, 10, 0x01, 0x02, 0x03, 0x04, 0xa1, 0xa2, 0xa3, 0xa4,
};

static const u8 pkt_sack[] = {	/* ACK, doff 13: NOP NOP TS NOP NOP SACK(2) */
	0x13, 0x89, 0x9c, 0x40, 0, 0, 2, 0, 0, 0, 1, 0, 0xd0, 0x10,
	0x01, 0xf5, 0x56, 0x78, 0, 0,
	1, 1, 8, 10, 0, 0, 0, 9, 0, 0, 0, 7,
	1, 1, 5, 18, 0, 0, 0x10, 0, 0, 0, 0x20, 0,
	0, 0, 0x30, 0, 0, 0, 0x40, 0,
};

static const u8 pkt_syn[] = {	/* SYN, doff 10: MSS, SACK-perm, TS, NOP, WS */
	0x9c, 0x40, 0x13, 0x89, 0, 0, 1, 0, 0, 0, 0, 0, 0xa0, 0x02,
	0xfa, 0xf0, 0x9a, 0xbc, 0, 0,
	2, 4, 0x05, 0xb4, 4, 2, 8, 10, 0x11, 0x22, 0x33, 0x44, 0, 0, 0, 0,
	1, 3, 3, 7,
};

static const u8 pkt_none[] = {	/* ACK, doff 5 */
	0x9c, 0x40, 0x13, 0x89, 0, 0, 1, 0, 0, 0, 2, 0, 0x50, 0x10,
	0x01, 0xf5, 0xde, 0xf0, 0, 0,
};

/* --- the model of xt_TCPOPTSTRIP --------------------------------------- */

static u32 csum_add32(u32 a, u32 b)
{
	u32 res = a + b;

	return res + (res < b);
}

/* csum_fold() of include/asm-generic/checksum.h */
static u16 csum_fold_generic(u32 sum)
{
	sum = (sum & 0xffff) + (sum >> 16);
	sum = (sum & 0xffff) + (sum >> 16);
	return (u16)~sum;
}

/*
 * inet_proto_csum_replace2(sum, skb, from, to, false) for a packet that is
 * not CHECKSUM_PARTIAL: csum_replace4() with the 16-bit values; out of
 * line, as inet_proto_csum_replace4() is in net/core/utils.c.
 */
static __attribute__((__noinline__)) void
model_csum_replace2(int ip_summed, u8 *check, u16 from, u16 to)
{
	u32 tmp;
	u16 sum;

	if (ip_summed == 3)	/* CHECKSUM_PARTIAL */
		return;
	memcpy(&sum, check, 2);
	tmp = csum_add32(~(u32)sum, ~(u32)from);
	sum = csum_fold_generic(csum_add32(tmp, to));
	memcpy(check, &sum, 2);
}

static unsigned int xt_optlen(const u8 *opt, unsigned int offset)
{
	if (opt[offset] <= 1 || opt[offset + 1] == 0)
		return 1;
	return opt[offset + 1];
}

static int xt_test_bit(const u32 *map, u8 kind)
{
	return (map[kind >> 5] >> (kind & 31)) & 1;
}

static __attribute__((__noinline__)) void
xt_strip(u8 *th, unsigned int tcp_hdrlen, const u32 *bmap, int ip_summed)
{
	unsigned int optl, i, j;
	u16 n, o;

	for (i = 20; i < tcp_hdrlen - 1; i += optl) {
		optl = xt_optlen(th, i);
		if (i + optl > tcp_hdrlen)
			break;
		if (!xt_test_bit(bmap, th[i]))
			continue;
		for (j = 0; j < optl; ++j) {
			o = th[i + j];
			n = 1;
			if ((i + j) % 2 == 0) {
				o <<= 8;
				n <<= 8;
			}
			/* htons(): the bytes in memory order */
			model_csum_replace2(ip_summed, th + 16,
					    (u16)(o >> 8 | o << 8),
					    (u16)(n >> 8 | n << 8));
		}
		memset(th + i, 1, optl);
	}
}

/* --- impair ------------------------------------------------------------- */

/* inet_proto_csum_replace_by_diff(&th->check, skb, diff, false, false) */
static __attribute__((__noinline__)) void
model_csum_replace_by_diff(int ip_summed, u8 *check, u32 diff)
{
	u16 sum;

	if (ip_summed == 3)
		return;
	memcpy(&sum, check, 2);
	sum = csum_fold_generic(csum_add32(diff, ~(u32)sum));
	memcpy(check, &sum, 2);
}

static struct impair_rule rule;
static struct impair_pkt ipkt;
static bool rs_strip_fast;

static __attribute__((__noinline__)) void impair_one(u8 *th, unsigned int len)
{
	struct impair_strip_plan plan;
	struct impair_strip_res res;

	/*
	 * as impair_process() in impair_main.c: a rule set of unconditional
	 * strip rules (rs->strip_fast, impair_rule_strip_fast(), known when
	 * the set is written) is not matched, a segment without options is
	 * done with at once (impair_strip_none()), and the one scan's plan
	 * serves the overwrite (impair_strip_nop())
	 */
	if (rs_strip_fast) {
		if (len <= TCPFWD_TCPHDR_LEN)
			return;
	} else if (!impair_rule_match(&rule, &ipkt)) {
		return;
	}
	if (impair_strip_scan(th, len, &rule.strip, &plan) > 0 &&
	    impair_strip_apply_nop(th, &plan, &res) > 0)
		model_csum_replace_by_diff(0, th + 16, res.csum_diff);
}

/* --- the loop callgrind counts ------------------------------------------ */

static u8 work[64];
static volatile u8 sink;

/* noipa: no clone with another name, for --toggle-collect */
static __attribute__((noipa)) void
bench_run(int variant, const u8 *pkt, unsigned int len, unsigned int n,
	  const u32 *bmap)
{
	unsigned int i;

	for (i = 0; i < n; i++) {
		memcpy(work, pkt, len);
		if (variant == 1)
			xt_strip(work, len, bmap, 0);
		else if (variant == 2)
			impair_one(work, len);
		sink = work[16];
	}
}

int main(int argc, char **argv)
{
	static const u8 a[4] = { 198, 18, 0, 2 }, b[4] = { 198, 18, 2, 2 };
	static const char line[] = "strip timestamp";
	u32 bmap[8] = { 0 };
	const u8 *pkt;
	struct impair_perr err;
	unsigned int len, n;
	int variant;

	if (argc != 4) {
		fprintf(stderr, "usage: %s copy|xt|impair|check data|sack|syn|none N\n",
			argv[0]);
		return 2;
	}
	variant = !strcmp(argv[1], "xt") ? 1 : !strcmp(argv[1], "impair") ? 2 :
		  !strcmp(argv[1], "copy") ? 0 : !strcmp(argv[1], "check") ? 3 :
		  -1;
	if (!strcmp(argv[2], "data")) {
		pkt = pkt_data;
		len = sizeof(pkt_data);
	} else if (!strcmp(argv[2], "sack")) {
		pkt = pkt_sack;
		len = sizeof(pkt_sack);
	} else if (!strcmp(argv[2], "syn")) {
		pkt = pkt_syn;
		len = sizeof(pkt_syn);
	} else if (!strcmp(argv[2], "none")) {
		pkt = pkt_none;
		len = sizeof(pkt_none);
	} else {
		variant = -1;
	}
	n = (unsigned int)strtoul(argv[3], NULL, 0);
	if (variant < 0 || !n) {
		fprintf(stderr, "bench_strip: bad arguments\n");
		return 2;
	}
	if (impair_line_parse(line, sizeof(line) - 1, &rule, &err) !=
	    IMPAIR_LINE_RULE) {
		fprintf(stderr, "bench_strip: '%s': %s\n", line, err.msg);
		return 1;
	}
	rs_strip_fast = impair_rule_strip_fast(&rule);
	bmap[TCPFWD_OPT_TIMESTAMP >> 5] |= 1U << (TCPFWD_OPT_TIMESTAMP & 31);
	ipkt = (struct impair_pkt){
		.family = 4, .from_a = true, .tcp_flags = pkt[13],
		.a_addr = a, .b_addr = b, .a_port = 40000, .b_port = 5001,
		.in = "eth0", .out = "eth1",
	};
	if (variant == 3) {
		/* both strip the same bytes, to the same checksum */
		u8 x[64];

		memcpy(x, pkt, len);
		xt_strip(x, len, bmap, 0);
		memcpy(work, pkt, len);
		impair_one(work, len);
		if (memcmp(x, work, len)) {
			fprintf(stderr, "bench_strip: xt and impair differ on %s\n",
				argv[2]);
			return 1;
		}
		return 0;
	}
	bench_run(variant, pkt, len, n, bmap);
	return 0;
}
