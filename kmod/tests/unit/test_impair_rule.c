// SPDX-License-Identifier: GPL-2.0
/*
 * Unit tests for kmod/impair/impair_rule.c: the impairment rule grammar
 * (every behaviour, canonical printing and round trip, every error case
 * with its message and offending token), batches with flush and line
 * numbers, address/probability parsing and the packet matcher.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <cmocka.h>

#include "../../impair/impair_rule.c"

static struct impair_rule parse_ok(const char *line)
{
	struct impair_perr err;
	struct impair_rule r;
	int kind;

	kind = impair_line_parse(line, strlen(line), &r, &err);
	if (kind != IMPAIR_LINE_RULE)
		fail_msg("'%s': %d %s '%.*s'", line, kind,
			 err.msg ? err.msg : "-", (int)err.toklen,
			 err.tok ? err.tok : "");
	return r;
}

static const char *fmt(const struct impair_rule *r)
{
	static char buf[IMPAIR_FMT_MAX];

	impair_rule_format(r, buf, sizeof(buf));
	return buf;
}

/* parse, print, compare with @canon, parse again: identical rule */
static void roundtrip(const char *line, const char *canon)
{
	struct impair_rule a = parse_ok(line), b;

	assert_string_equal(fmt(&a), canon);
	b = parse_ok(fmt(&a));
	assert_memory_equal(&a, &b, sizeof(a));
}

/* One example per behaviour (the README's), canonical forms. */
static void test_examples_roundtrip(void **state)
{
	static const char *const cases[][2] = {
		{ "flags syn strip sackok", "flags syn strip sackok mode nop" },
		{ "strip mss,wscale,sackok,sack,timestamp,mptcp,fastopen mode compact",
		  "strip mss,wscale,sackok,sack,timestamp,mptcp,fastopen mode compact" },
		{ "strip ts,md5,ao,exp,253,7", "strip 7,timestamp,md5,ao,253,exp mode nop" },
		{ "after 3 strip timestamp", "after 3 strip timestamp mode nop" },
		{ "flags synack wscale 2", "flags synack wscale 2" },
		{ "dir responder flags synack strip wscale",
		  "dir responder flags synack strip wscale mode nop" },
		{ "flags syn mss 536", "flags syn mss 536" },
		{ "mss-clamp 1200", "mss-clamp 1200" },
		{ "dir initiator window 1000", "dir initiator window 1000" },
		{ "seqrand", "seqrand" },
		{ "seqrand sack-fix", "seqrand sack-fix" },
		{ "seqrand both sack-fix dport 5001", "dport 5001 seqrand sack-fix both" },
		{ "ecn-block", "ecn-block" },
		{ "flags syn ecn-clear-syn", "flags syn ecn-clear-syn" },
		{ "ecn-set ce", "ecn-set ce" },
		{ "ecn-set ce only-ect", "ecn-set ce only-ect" },
		{ "ecn-set ect1", "ecn-set ect1" },
		{ "ecn-bleach", "ecn-bleach" },
		{ "drop 0.01", "drop 0.01" },
		{ "drop 1%", "drop 0.01" },
		{ "drop 0.5%", "drop 0.005" },
		{ "drop 1", "drop 1" },
		{ "drop 100%", "drop 1" },
		{ "drop 0", "drop 0" },
		{ "drop 0.000001", "drop 0.000001" },
		{ "in eth0 out eth1 flags all drop 0.1",
		  "in eth0 out eth1 flags all drop 0.1" },
		{ "src 198.18.0.2 dst 198.18.2.0/24 sport 1024-65535 dport 5001 ecn-bleach",
		  "src 198.18.0.2 dst 198.18.2.0/24 sport 1024-65535 dport 5001 ecn-bleach" },
		{ "family ipv6 ecn-set ect0", "family ipv6 ecn-set ect0" },
		{ "split", "split half opts both" },
		{ "split half", "split half opts both" },
		{ "split at 100 opts first", "split at 100 opts first" },
		{ "dir initiator dataseg 2 split opts second",
		  "dir initiator dataseg 2 split half opts second" },
		{ "dataseg 3-5 split at 1 opts both ecn-bleach",
		  "dataseg 3-5 ecn-bleach split at 1 opts both" },
		{ "coalesce", "coalesce opts first" },
		{ "dir responder coalesce opts second",
		  "dir responder coalesce opts second" },
		{ "dataseg 1-4294967295 coalesce strip timestamp",
		  "dataseg 1-4294967295 strip timestamp mode nop coalesce opts first" },
		{ "src fd8e:c9b0:2a17:0:0:0:0:2 dst FD8E:C9B0:2A17:2::/64 ecn-block",
		  "src fd8e:c9b0:2a17::2 dst fd8e:c9b0:2a17:2::/64 ecn-block" },
		{ "  wscale 0\t# a comment\n", "wscale 0" },
		{ "flags syn strip sackok wscale 7 mss-clamp 1000 ecn-clear-syn ecn-set ect0 only-ect drop 0.2 # hits 12",
		  "flags syn strip sackok mode nop wscale 7 mss-clamp 1000 ecn-clear-syn ecn-set ect0 only-ect drop 0.2" },
	};
	unsigned int i;

	(void)state;
	for (i = 0; i < ARRAY_SIZE(cases); i++)
		roundtrip(cases[i][0], cases[i][1]);
}

static void test_fields(void **state)
{
	struct impair_rule r;

	(void)state;
	r = parse_ok("dir responder flags synack strip wscale mode compact");
	assert_int_equal(r.match, IMPAIR_M_DIR | IMPAIR_M_FLAGS);
	assert_int_equal(r.dir, IMPAIR_DIR_RESPONDER);
	assert_int_equal(r.flags, IMPAIR_FLAGS_SYNACK);
	assert_int_equal(r.act, IMPAIR_A_STRIP);
	assert_int_equal(r.strip_mode, IMPAIR_STRIP_COMPACT);
	assert_true(impair_kindmask_test(&r.strip, TCPFWD_OPT_WSCALE));
	assert_false(impair_kindmask_test(&r.strip, TCPFWD_OPT_MSS));

	r = parse_ok("seqrand sack-fix both");
	assert_true(r.seq_sack_fix && r.seq_both);
	r = parse_ok("seqrand");
	assert_false(r.seq_sack_fix || r.seq_both);

	r = parse_ok("drop 0.25");
	assert_int_equal(r.drop_ppm, 250000);
	r = parse_ok("drop 2.5%");
	assert_int_equal(r.drop_ppm, 25000);
	r = parse_ok("drop 0.0001%");
	assert_int_equal(r.drop_ppm, 1);

	r = parse_ok("ecn-set ce only-ect");
	assert_int_equal(r.ecn, 3);
	assert_true(r.ecn_only_ect);
	r = parse_ok("ecn-set ect0");
	assert_int_equal(r.ecn, 2);
	r = parse_ok("ecn-set ect1");
	assert_int_equal(r.ecn, 1);

	r = parse_ok("after 4294967295 window 0");
	assert_int_equal(r.after, 0xffffffffU);
	assert_int_equal(r.window, 0);
	r = parse_ok("mss 65535 sport 0-0 dport 65535");
	assert_int_equal(r.mss, 65535);
	assert_int_equal(r.sport_hi, 0);
	assert_int_equal(r.dport_lo, 65535);

	r = parse_ok("src 10.1.2.3/8 ecn-block");
	assert_int_equal(r.family, 4);
	assert_int_equal(r.src.plen, 8);
	assert_int_equal(r.src.addr[0], 10);
	assert_int_equal(r.src.addr[3], 3);

	r = parse_ok("in abcdefghijklmno ecn-block");	/* 15 chars */
	assert_string_equal(r.in, "abcdefghijklmno");
}

static void test_ipv6_forms(void **state)
{
	static const char *const ok[][2] = {
		{ "::", "::" },
		{ "::1", "::1" },
		{ "1::", "1::" },
		{ "1:0:0:2:0:0:0:3", "1:0:0:2::3" },
		{ "1:0:0:2:0:0:3:4", "1::2:0:0:3:4" },
		{ "1:2:3:4:5:6:7:8", "1:2:3:4:5:6:7:8" },
		{ "1:2:3:4:5:6:7::", "1:2:3:4:5:6:7:0" },
		{ "::2:3:4:5:6:7:8", "0:2:3:4:5:6:7:8" },
		{ "0:0:1:0:0:0:0:0", "0:0:1::" },
		{ "abcd:EF01::ffff", "abcd:ef01::ffff" },
	};
	static const char *const bad[] = {
		"1:::2", "12345::", "1:2:3:4:5:6:7:8:9", ":1::", "1::2::3",
		"g::", "1:2:3:4:5:6:7", "1:", ":", "::1:2:3:4:5:6:7:8",
		"1:2:3:4:5:6:7:8::", "::ffff:1.2.3.4", "",
	};
	char line[128], want[128];
	unsigned int i;
	u8 a[16];

	(void)state;
	for (i = 0; i < ARRAY_SIZE(ok); i++) {
		snprintf(line, sizeof(line), "src %s ecn-block", ok[i][0]);
		snprintf(want, sizeof(want), "src %s ecn-block", ok[i][1]);
		roundtrip(line, want);
	}
	for (i = 0; i < ARRAY_SIZE(bad); i++)
		assert_false(impair_parse_ipv6(bad[i], strlen(bad[i]), a));
	assert_true(impair_parse_ipv6("fd8e:c9b0:2a17:2::2", 19, a));
	assert_int_equal(a[0], 0xfd);
	assert_int_equal(a[7], 0x02);
	assert_int_equal(a[15], 0x02);
	assert_int_equal(a[14], 0x00);
}

static void test_ipv4_forms(void **state)
{
	static const char *const bad[] = {
		"1.2.3", "1.2.3.4.5", "256.1.1.1", "1..2.3", "1.2.3.4.",
		"a.b.c.d", "0001.2.3.4", "1.2.3.-4", "",
	};
	unsigned int i;
	u8 a[4];

	(void)state;
	for (i = 0; i < ARRAY_SIZE(bad); i++)
		assert_false(impair_parse_ipv4(bad[i], strlen(bad[i]), a));
	assert_true(impair_parse_ipv4("255.0.10.001", 12, a));
	assert_int_equal(a[0], 255);
	assert_int_equal(a[3], 1);
}

struct err_case {
	const char *line;
	const char *msg;
	const char *tok;	/* expected offending token, NULL: none */
};

/* Every way a line can be rejected. */
static void test_errors(void **state)
{
	static const struct err_case cases[] = {
		{ "bogus", "unknown keyword", "bogus" },
		{ "strip mss frobnicate", "unknown keyword", "frobnicate" },
		{ "ECN-BLOCK", "unknown keyword", "ECN-BLOCK" },
		{ "dir", "missing value after keyword", "dir" },
		{ "ecn-block sport", "missing value after keyword", "sport" },
		{ "strip mss mode", "missing value after keyword", "mode" },
		{ "dir sideways ecn-block", "expected initiator or responder", "sideways" },
		{ "flags fin ecn-block", "expected syn, synack or all", "fin" },
		{ "family ipx ecn-block", "expected ipv4 or ipv6", "ipx" },
		{ "family ipv6 src 1.2.3.4 ecn-block", "address family mismatch", "1.2.3.4" },
		{ "src 1.2.3.4 dst ::1 ecn-block", "address family mismatch", "::1" },
		{ "src ::1 family ipv4 ecn-block", "address family mismatch", "ipv4" },
		{ "src 1.2.3 ecn-block", "bad address", "1.2.3" },
		{ "dst fe80::1::2 ecn-block", "bad address", "fe80::1::2" },
		{ "src 1.2.3.4/33 ecn-block", "bad prefix length", "1.2.3.4/33" },
		{ "src ::/129 ecn-block", "bad prefix length", "::/129" },
		{ "src 1.2.3.4/ ecn-block", "bad prefix length", "1.2.3.4/" },
		{ "sport 70000 ecn-block", "bad port or port range", "70000" },
		{ "dport 10-5 ecn-block", "bad port or port range", "10-5" },
		{ "dport 10- ecn-block", "bad port or port range", "10-" },
		{ "dport -5 ecn-block", "bad port or port range", "-5" },
		{ "dport x ecn-block", "bad port or port range", "x" },
		{ "after -1 ecn-block", "not a number", "-1" },
		{ "dataseg 0 split", "bad data segment index or range (from 1)", "0" },
		{ "dataseg 0-3 split", "bad data segment index or range (from 1)", "0-3" },
		{ "dataseg 5-3 split", "bad data segment index or range (from 1)", "5-3" },
		{ "dataseg x split", "bad data segment index or range (from 1)", "x" },
		{ "dataseg 4294967296 split", "bad data segment index or range (from 1)", "4294967296" },
		{ "split at 0", "number out of range", "0" },
		{ "split at 65536", "number out of range", "65536" },
		{ "split at", "missing value after keyword", "at" },
		{ "split opts", "missing value after keyword", "opts" },
		{ "split opts none", "expected first, second or both", "none" },
		{ "coalesce opts both", "expected first or second", "both" },
		{ "split half at 5", "at must follow split", "at" },
		{ "at 5 split", "at must follow split", "at" },
		{ "half split", "half must follow split", "half" },
		{ "opts first coalesce", "opts must follow split or coalesce", "opts" },
		{ "split coalesce", "split and coalesce are exclusive", "coalesce" },
		{ "coalesce split", "split and coalesce are exclusive", "split" },
		{ "split split", "duplicate keyword", "split" },
		{ "after 4294967296 ecn-block", "number out of range", "4294967296" },
		{ "in abcdefghijklmnop ecn-block", "interface name too long", "abcdefghijklmnop" },
		{ "strip foo", "unknown option name", "foo" },
		{ "strip mss,,wscale", "empty element in option list", "mss,,wscale" },
		{ "strip mss,", "empty element in option list", "mss," },
		{ "strip ,mss", "empty element in option list", ",mss" },
		{ "strip 0", "EOL (0) and NOP (1) cannot be stripped", "0" },
		{ "strip mss,1", "EOL (0) and NOP (1) cannot be stripped", "1" },
		{ "strip 256", "option kind not in 2..255", "256" },
		{ "strip 3x", "option kind not in 2..255", "3x" },
		{ "strip mss mode delete", "expected nop or compact", "delete" },
		{ "mode nop strip mss", "mode must follow strip's option list", "mode" },
		{ "strip mss ecn-block mode nop", "mode must follow strip's option list", "mode" },
		{ "sack-fix seqrand", "sack-fix must follow seqrand", "sack-fix" },
		{ "seqrand sack-fix sack-fix", "sack-fix must follow seqrand", "sack-fix" },
		{ "seqrand both both", "both must follow seqrand", "both" },
		{ "ecn-block only-ect", "only-ect must follow ecn-set's codepoint", "only-ect" },
		{ "wscale 15", "number out of range", "15" },
		{ "wscale x", "not a number", "x" },
		{ "mss 0", "number out of range", "0" },
		{ "mss 65536", "number out of range", "65536" },
		{ "mss-clamp 1e3", "not a number", "1e3" },
		{ "window 65536", "number out of range", "65536" },
		{ "window +5", "not a number", "+5" },
		{ "ecn-set ect2", "expected ect0, ect1 or ce", "ect2" },
		{ "ecn-set not-ect", "expected ect0, ect1 or ce", "not-ect" },
		{ "drop 1.5", "probability above 1", "1.5" },
		{ "drop 101%", "bad probability", "101%" },
		{ "drop 150%", "bad probability", "150%" },
		{ "drop -0.1", "bad probability", "-0.1" },
		{ "drop .5", "bad probability", ".5" },
		{ "drop 0.", "bad probability", "0." },
		{ "drop 0.1x", "bad probability", "0.1x" },
		{ "drop %", "bad probability", "%" },
		{ "drop 0.0000001", "bad probability (too many decimals)", "0.0000001" },
		{ "drop 0.00001%", "bad probability (too many decimals)", "0.00001%" },
		{ "ecn-block ecn-block", "duplicate keyword", "ecn-block" },
		{ "dport 1 dport 2 ecn-block", "duplicate keyword", "dport" },
		{ "strip mss strip wscale", "duplicate keyword", "strip" },
		{ "mss 500 mss-clamp 400", "mss and mss-clamp are exclusive", "mss-clamp" },
		{ "ecn-bleach ecn-set ce", "ecn-set and ecn-bleach are exclusive", "ecn-set" },
		{ "dir initiator seqrand", "seqrand acts on whole flows: no dir, in, out, flags or after", "seqrand" },
		{ "seqrand flags syn", "seqrand acts on whole flows: no dir, in, out, flags or after", "flags" },
		{ "seqrand after 2", "seqrand acts on whole flows: no dir, in, out, flags or after", "after" },
		{ "in eth0 seqrand", "seqrand acts on whole flows: no dir, in, out, flags or after", "seqrand" },
		{ "seqrand out eth0", "seqrand acts on whole flows: no dir, in, out, flags or after", "out" },
		{ "dir initiator flags syn", "rule has no action", "dir initiator flags syn" },
		{ "src 1.2.3.4", "rule has no action", "src 1.2.3.4" },
		{ "flush now", "flush takes no argument", "now" },
	};
	unsigned int i;

	(void)state;
	for (i = 0; i < ARRAY_SIZE(cases); i++) {
		const struct err_case *c = &cases[i];
		struct impair_perr err;
		struct impair_rule r;
		int ret;

		ret = impair_line_parse(c->line, strlen(c->line), &r, &err);
		if (ret != -1)
			fail_msg("'%s' accepted (%d)", c->line, ret);
		assert_non_null(err.msg);
		if (strcmp(err.msg, c->msg))
			fail_msg("'%s': '%s', expected '%s'", c->line, err.msg,
				 c->msg);
		if (!c->tok)
			continue;
		assert_non_null(err.tok);
		if (err.toklen != strlen(c->tok) ||
		    memcmp(err.tok, c->tok, err.toklen))
			fail_msg("'%s': token '%.*s', expected '%s'", c->line,
				 (int)err.toklen, err.tok, c->tok);
	}
}

static void test_line_too_long(void **state)
{
	char line[IMPAIR_LINE_MAX + 2];
	struct impair_perr err;
	struct impair_rule r;

	(void)state;
	memset(line, ' ', sizeof(line));
	memcpy(line, "ecn-block", 9);
	assert_int_equal(impair_line_parse(line, IMPAIR_LINE_MAX, &r, &err),
			 IMPAIR_LINE_RULE);
	assert_int_equal(impair_line_parse(line, IMPAIR_LINE_MAX + 1, &r,
					   &err), -1);
	assert_string_equal(err.msg, "line too long");
}

static void test_empty_and_flush(void **state)
{
	struct impair_perr err;
	struct impair_rule r;

	(void)state;
	assert_int_equal(impair_line_parse("", 0, &r, &err), IMPAIR_LINE_EMPTY);
	assert_int_equal(impair_line_parse("  \t\r\n", 5, &r, &err),
			 IMPAIR_LINE_EMPTY);
	assert_int_equal(impair_line_parse("# ecn-block", 11, &r, &err),
			 IMPAIR_LINE_EMPTY);
	assert_int_equal(impair_line_parse(" flush ", 7, &r, &err),
			 IMPAIR_LINE_FLUSH);
	assert_int_equal(impair_line_parse("flush # all", 11, &r, &err),
			 IMPAIR_LINE_FLUSH);
	/* the line ends at len: "ecn-block" cut to "ecn-bl" */
	assert_int_equal(impair_line_parse("ecn-block", 6, &r, &err), -1);
	assert_int_equal(err.toklen, 6);
}

static void test_batch(void **state)
{
	struct impair_rule out[8];
	struct impair_perr err;
	unsigned int nkeep;
	const char *b;
	int n;

	(void)state;
	/* appends to the existing rules */
	nkeep = 3;
	b = "ecn-block\n\n# comment\ndrop 0.5\n";
	n = impair_batch_parse(b, strlen(b), out, 8, &nkeep, &err);
	assert_int_equal(n, 2);
	assert_int_equal(nkeep, 3);
	assert_int_equal(out[0].act, IMPAIR_A_ECN_BLOCK);
	assert_int_equal(out[1].act, IMPAIR_A_DROP);

	/* flush anywhere drops everything before it */
	nkeep = 3;
	b = "ecn-block\nflush\nwscale 1\nwindow 5";	/* no final newline */
	n = impair_batch_parse(b, strlen(b), out, 8, &nkeep, &err);
	assert_int_equal(n, 2);
	assert_int_equal(nkeep, 0);
	assert_int_equal(out[0].act, IMPAIR_A_WSCALE);
	assert_int_equal(out[1].act, IMPAIR_A_WINDOW);

	/* a listing read back: flush, rules with "# hits" */
	nkeep = 5;
	b = "flush\nflags syn strip sackok mode nop # hits 4\nseqrand # hits 0\n";
	n = impair_batch_parse(b, strlen(b), out, 8, &nkeep, &err);
	assert_int_equal(n, 2);
	assert_int_equal(nkeep, 0);

	/* an error names its line; nothing else matters */
	nkeep = 1;
	b = "ecn-block\nflush\n\nwscale 99\n";
	n = impair_batch_parse(b, strlen(b), out, 8, &nkeep, &err);
	assert_int_equal(n, -1);
	assert_int_equal(err.line, 4);
	assert_string_equal(err.msg, "number out of range");

	/* the limit counts kept rules too */
	nkeep = 7;
	b = "ecn-block\necn-bleach\n";
	n = impair_batch_parse(b, strlen(b), out, 8, &nkeep, &err);
	assert_int_equal(n, -1);
	assert_string_equal(err.msg, "too many rules");
	assert_int_equal(err.line, 2);
	nkeep = 7;
	b = "flush\necn-block\necn-bleach\n";
	n = impair_batch_parse(b, strlen(b), out, 8, &nkeep, &err);
	assert_int_equal(n, 2);
	assert_int_equal(nkeep, 0);

	/* CRLF and empty input */
	nkeep = 0;
	b = "ecn-block\r\n";
	assert_int_equal(impair_batch_parse(b, strlen(b), out, 8, &nkeep, &err),
			 1);
	assert_int_equal(impair_batch_parse("", 0, out, 8, &nkeep, &err), 0);
}

static void test_format_truncation(void **state)
{
	struct impair_rule r = parse_ok("dport 5001 seqrand sack-fix both");
	char buf[8];
	int n;

	(void)state;
	memset(buf, 'x', sizeof(buf));
	n = impair_rule_format(&r, buf, sizeof(buf));
	assert_int_equal(n, 7);
	assert_string_equal(buf, "dport 5");
	assert_int_equal(impair_rule_format(&r, buf, 0), 0);
	/* the longest possible rule fits IMPAIR_FMT_MAX */
	r = parse_ok("dir responder in abcdefghijklmno out abcdefghijklmno flags synack "
		     "family ipv6 src 1111:2222:3333:4444:5555:6666:7777:8888/127 "
		     "dst 1111:2222:3333:4444:5555:6666:7777:8888/127 sport 65535-65535 "
		     "dport 65534-65535 after 4294967295 "
		     "strip mss,wscale,sackok,sack,timestamp,md5,ao,mptcp,fastopen,exp mode compact "
		     "wscale 14 mss-clamp 65535 window 65535 ecn-clear-syn ecn-set ect0 only-ect drop 0.123456");
	n = impair_rule_format(&r, NULL, 0);
	assert_true(strlen(fmt(&r)) < IMPAIR_FMT_MAX - 1);
}

static void test_opt_names(void **state)
{
	(void)state;
	assert_string_equal(impair_opt_name(2), "mss");
	assert_string_equal(impair_opt_name(8), "timestamp");
	assert_string_equal(impair_opt_name(30), "mptcp");
	assert_null(impair_opt_name(1));
	assert_null(impair_opt_name(99));
}

static const u8 addr_a4[16] = { 198, 18, 0, 2 };
static const u8 addr_b4[16] = { 198, 18, 2, 2 };
static const u8 addr_b6[16] = { 0xfd, 0x8e, 0xc9, 0xb0, 0x2a, 0x17, 0, 2,
				0, 0, 0, 0, 0, 0, 0, 2 };

static struct impair_pkt pkt4(bool from_a, u8 flags, u32 seg)
{
	struct impair_pkt p = {
		.family = 4, .from_a = from_a, .seg_known = true,
		.tcp_flags = flags, .a_addr = addr_a4, .b_addr = addr_b4,
		.a_port = 40000, .b_port = 5001, .in = "eth0", .out = "eth1",
		.seg = seg,
	};

	return p;
}

static bool m(const char *line, const struct impair_pkt *p)
{
	struct impair_rule r = parse_ok(line);

	return impair_rule_match(&r, p);
}

static void test_match(void **state)
{
	struct impair_pkt syn = pkt4(true, 0x02, 0);
	struct impair_pkt synack = pkt4(false, 0x12, 1);
	struct impair_pkt data = pkt4(true, 0x18, 5);
	struct impair_pkt v6 = syn;

	(void)state;
	v6.family = 6;
	v6.b_addr = addr_b6;

	assert_true(m("ecn-block", &syn));
	assert_true(m("flags syn ecn-block", &syn));
	assert_false(m("flags syn ecn-block", &synack));
	assert_false(m("flags syn ecn-block", &data));
	assert_true(m("flags synack ecn-block", &synack));
	assert_false(m("flags synack ecn-block", &syn));
	assert_true(m("flags all ecn-block", &data));

	assert_true(m("dir initiator ecn-block", &syn));
	assert_false(m("dir initiator ecn-block", &synack));
	assert_true(m("dir responder ecn-block", &synack));

	assert_true(m("in eth0 out eth1 ecn-block", &data));
	assert_false(m("in eth1 ecn-block", &data));
	assert_false(m("out eth0 ecn-block", &data));
	data.in = NULL;
	assert_false(m("in eth0 ecn-block", &data));
	data.in = "eth0";

	/* roles, not packet direction */
	assert_true(m("src 198.18.0.2 dst 198.18.2.0/24 ecn-block", &synack));
	assert_false(m("src 198.18.2.2 ecn-block", &synack));
	assert_true(m("src 198.18.0.0/23 ecn-block", &syn));
	assert_false(m("src 198.18.2.0/23 ecn-block", &syn));
	assert_true(m("src 0.0.0.0/0 ecn-block", &syn));
	assert_true(m("sport 40000 dport 5001 ecn-block", &synack));
	assert_true(m("sport 1024-65535 dport 5000-5001 ecn-block", &syn));
	assert_false(m("dport 5002-6000 ecn-block", &syn));
	assert_false(m("sport 5001 ecn-block", &synack));

	/* family */
	assert_false(m("family ipv6 ecn-block", &syn));
	assert_true(m("family ipv6 ecn-block", &v6));
	assert_false(m("dst 198.18.2.2 ecn-block", &v6));
	assert_true(m("dst fd8e:c9b0:2a17:2::/64 ecn-block", &v6));
	assert_true(m("dst fd8e:c9b0:2a17:2::2 ecn-block", &v6));
	assert_false(m("dst fd8e:c9b0:2a17:3::/64 ecn-block", &v6));
	assert_true(m("dst fd8e:c9b0:2a17::/62 ecn-block", &v6));	/* :2 */
	assert_false(m("dst fd8e:c9b0:2a17::/63 ecn-block", &v6));
	assert_false(m("dst fd8e:c9b0:2a17::/64 ecn-block", &v6));

	/* after */
	assert_false(m("after 6 ecn-block", &data));
	assert_true(m("after 5 ecn-block", &data));
	assert_true(m("after 0 ecn-block", &data));
	data.seg_known = false;
	assert_false(m("after 1 ecn-block", &data));
	assert_true(m("ecn-block", &data));
}

/* dataseg: the sender's data segments, tracked flows only. */
static void test_match_dataseg(void **state)
{
	struct impair_pkt p = pkt4(true, 0x18, 7);

	(void)state;
	p.dseg = 2;
	assert_true(m("dataseg 2 split", &p));
	assert_true(m("dataseg 1-2 split", &p));
	assert_true(m("dataseg 2-4294967295 split", &p));
	assert_false(m("dataseg 1 split", &p));
	assert_false(m("dataseg 3-9 split", &p));
	assert_true(m("dir initiator dataseg 2 split", &p));
	assert_false(m("dir responder dataseg 2 split", &p));
	assert_true(m("after 7 dataseg 2 split", &p));
	assert_false(m("after 8 dataseg 2 split", &p));
	/* no payload: never a data segment */
	p.dseg = 0;
	assert_false(m("dataseg 1-4294967295 split", &p));
	assert_true(m("split", &p));
	/* untracked */
	p.dseg = 2;
	p.seg_known = false;
	assert_false(m("dataseg 2 split", &p));
	assert_true(m("coalesce", &p));
}

/* impair_rule_match_inside() of @line, on a GSO packet of data segments 1-10 */
static bool mi(const char *line, const struct impair_pkt *p)
{
	struct impair_rule r = parse_ok(line);

	return impair_rule_match_inside(&r, p, 10);
}

static void test_match_inside(void **state)
{
	/* segment 5 of the flow is the sender's data segment 1 */
	struct impair_pkt p = pkt4(true, 0x18, 5);

	(void)state;
	p.dseg = 1;
	assert_true(mi("dataseg 2 split", &p));
	assert_true(mi("dataseg 3-9 split", &p));
	/* a range that meets an end: the ends' own match decides */
	assert_false(mi("dataseg 1 split", &p));
	assert_false(mi("dataseg 9-10 split", &p));
	assert_false(mi("dataseg 2-12 split", &p));
	assert_false(mi("dataseg 11 split", &p));
	/* the other matches, at the range's last segment (flow segment 8) */
	assert_false(mi("dir responder dataseg 2-4 split", &p));
	assert_true(mi("after 8 dataseg 2-4 split", &p));
	assert_false(mi("after 9 dataseg 2-4 split", &p));
	/* no dataseg, no payload, untracked: never */
	assert_false(mi("split", &p));
	assert_false(mi("after 7 split", &p));
	p.dseg = 0;
	assert_false(mi("dataseg 2 split", &p));
	p.dseg = 1;
	p.seg_known = false;
	assert_false(mi("dataseg 2 split", &p));
}

static void test_needs_flow(void **state)
{
	static const struct {
		const char *line;
		bool flow, split;
	} cases[] = {
		{ "strip timestamp", false, false },
		{ "strip timestamp,sack mode compact", false, false },
		{ "flags syn strip sackok", false, false },
		{ "in eth0 out eth1 family ipv6 ecn-set ce only-ect", false, false },
		{ "flags synack dir responder wscale 2", false, false },
		{ "flags syn src 10.0.0.0/8 sport 1-9 dport 80 mss 536", false, false },
		{ "dir initiator window 1000", true, false },
		{ "src 10.0.0.0/8 ecn-bleach", true, false },
		{ "dst ::1 ecn-bleach", true, false },
		{ "sport 80 ecn-bleach", true, false },
		{ "dport 5001 seqrand", true, false },
		{ "after 3 strip timestamp", true, true },
		{ "flags syn after 1 strip timestamp", true, true },
		{ "drop 1%", false, true },
		{ "ecn-block", false, true },
		{ "split", false, true },
		{ "flags syn split at 5", false, true },
		{ "dataseg 2 strip timestamp", true, true },
		{ "dir initiator dataseg 2 split", true, true },
		{ "coalesce", true, false },
		{ "sport 80 coalesce opts second", true, false },
	};
	unsigned int i;

	(void)state;
	for (i = 0; i < ARRAY_SIZE(cases); i++) {
		struct impair_rule r = parse_ok(cases[i].line);

		if (impair_rule_needs_flow(&r) != cases[i].flow ||
		    impair_rule_may_split(&r) != cases[i].split)
			fail_msg("'%s': needs_flow %d may_split %d",
				 cases[i].line, impair_rule_needs_flow(&r),
				 impair_rule_may_split(&r));
	}
	assert_true(impair_sender_is_a(0x02));		/* SYN */
	assert_false(impair_sender_is_a(0x12));		/* SYN-ACK */
	assert_true(impair_sender_is_a(0x10));		/* ACK: a guess */
}

/*
 * What impair_rule_needs_flow() promises: a rule that needs no flow state
 * matches a segment the same with the true roles and segment index (a
 * tracked flow) as with the roles impair_sender_is_a() guesses and no
 * index (no lookup).  Random rules from the role, flags and "after"
 * matches against SYNs, SYN-ACKs and other segments sent by either end;
 * rules that do need state must differ somewhere, or the check proves
 * nothing.
 */
/*
 * A random rule into @line (256 bytes) and *@r: each of @n @parts with
 * probability 1/@one_in (LCG *@x), then @act.  False if it does not parse
 * (e.g. flags syn with flags synack).
 */
static bool random_rule(char *line, const char *const *parts, unsigned int n,
			unsigned int one_in, const char *act, u32 *x,
			struct impair_rule *r)
{
	struct impair_perr err;
	unsigned int i;

	line[0] = '\0';
	for (i = 0; i < n; i++) {
		*x = *x * 1103515245 + 12345;
		if ((*x >> 16) % one_in == 0) {
			strcat(line, parts[i]);
			strcat(line, " ");
		}
	}
	strcat(line, act);
	return impair_line_parse(line, strlen(line), r, &err) ==
	       IMPAIR_LINE_RULE;
}

static void test_needs_flow_promise(void **state)
{
	static const char *const parts[] = {
		"dir initiator", "dir responder", "flags syn", "flags synack",
		"src 10.0.0.1", "dst 10.0.0.1", "sport 1000", "dport 1000",
		"after 2", "family ipv4",
	};
	static const u8 flags[] = { 0x02, 0x12, 0x10, 0x18, 0x11 };
	static const u8 a4[4] = { 10, 0, 0, 1 }, b4[4] = { 10, 0, 0, 2 };
	unsigned int iter, i, differ = 0, stateless = 0;
	u32 x = 12345;

	(void)state;
	for (iter = 0; iter < 3000; iter++) {
		struct impair_rule r;
		char line[256];

		if (!random_rule(line, parts, ARRAY_SIZE(parts), 4, "ecn-bleach",
				 &x, &r))
			continue;
		stateless += !impair_rule_needs_flow(&r);
		for (i = 0; i < 2 * ARRAY_SIZE(flags); i++) {
			u8 fl = flags[i / 2];
			/* a SYN comes from A, a SYN-ACK from B */
			bool from_a = fl == 0x02 ? true : fl == 0x12 ? false : i & 1;
			bool guess = impair_sender_is_a(fl);
			struct impair_pkt t = {
				.family = 4, .from_a = from_a, .seg_known = true,
				.tcp_flags = fl, .a_addr = a4, .b_addr = b4,
				.a_port = 1000, .b_port = 2000, .seg = 1 + i,
			};
			struct impair_pkt g = t;

			g.seg_known = false;
			g.seg = 0;
			g.from_a = guess;
			if (guess != from_a) {	/* the guess swaps the ends */
				g.a_addr = b4;
				g.b_addr = a4;
				g.a_port = 2000;
				g.b_port = 1000;
			}
			if (impair_rule_match(&r, &t) == impair_rule_match(&r, &g))
				continue;
			if (!impair_rule_needs_flow(&r))
				fail_msg("'%s' matches flags 0x%02x differently "
					 "without flow state", line, fl);
			differ++;
		}
	}
	assert_true(stateless > 100);
	assert_true(differ > 100);
}

/*
 * impair_rule_matches_all() promises that the rule matches every segment
 * (impair_process() then skips matching a strip_fast rule set, and exits
 * early on a segment without the options it strips): random rules from
 * every match keyword and several actions, every rule without a keyword
 * checked against packets of both families, every flag combination, both
 * directions, with and without devices and flow state.
 */
static void test_strip_fast_promise(void **state)
{
	static const char *const parts[] = {
		"dir initiator", "dir responder", "flags syn", "flags synack",
		"src 10.0.0.1", "dst 10.0.0.1", "sport 1000", "dport 1000",
		"after 2", "family ipv4", "in eth0", "out eth1",
		"dataseg 2-3",
	};
	static const char *const acts[] = {
		"strip timestamp", "strip sack,timestamp mode compact",
		"ecn-bleach", "strip timestamp ecn-bleach",
	};
	static const u8 a6[16] = { 0xfd, 0, 0, 0, 0, 0, 0, 0,
				   0, 0, 0, 0, 0, 0, 0, 1 };
	unsigned int iter, i, all = 0, fast = 0, some = 0;
	u32 x = 4242;

	(void)state;
	for (iter = 0; iter < 2000; iter++) {
		struct impair_rule r;
		char line[256];

		x = x * 1103515245 + 12345;
		if (!random_rule(line, parts, ARRAY_SIZE(parts), 6,
				 acts[(x >> 16) % ARRAY_SIZE(acts)], &x, &r))
			continue;
		if (impair_rule_strip_fast(&r)) {
			fast++;
			assert_int_equal(r.act, IMPAIR_A_STRIP);
			assert_true(impair_rule_matches_all(&r));
			assert_false(impair_rule_needs_flow(&r));
			assert_false(impair_rule_may_split(&r));
		}
		if (!impair_rule_matches_all(&r)) {
			some++;
			continue;
		}
		all++;
		for (i = 0; i < 4 * 256; i++) {
			struct impair_pkt t = {
				.family = i & 1 ? 6 : 4, .from_a = i & 2,
				.seg_known = i & 4, .tcp_flags = (u8)(i >> 2),
				.a_addr = i & 1 ? a6 : addr_a4,
				.b_addr = i & 1 ? addr_b6 : addr_b4,
				.a_port = (u16)i, .b_port = 5001,
				.in = i & 8 ? "eth7" : NULL,
				.out = i & 16 ? NULL : "eth9",
				.seg = i & 4 ? i : 0, .dseg = i % 3,
			};

			if (!impair_rule_match(&r, &t))
				fail_msg("'%s' promises to match all, not 0x%x",
					 line, i);
		}
	}
	assert_true(all > 20 && fast > 5 && some > 100);
	assert_true(impair_rule_strip_fast(&(struct impair_rule){
		.act = IMPAIR_A_STRIP }));
	{
		struct impair_rule r = parse_ok("strip timestamp");

		assert_true(impair_rule_strip_fast(&r));
		r = parse_ok("dir initiator strip timestamp");
		assert_false(impair_rule_strip_fast(&r));
		r = parse_ok("family ipv6 strip timestamp");
		assert_false(impair_rule_strip_fast(&r));
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_examples_roundtrip),
		cmocka_unit_test(test_fields),
		cmocka_unit_test(test_ipv6_forms),
		cmocka_unit_test(test_ipv4_forms),
		cmocka_unit_test(test_errors),
		cmocka_unit_test(test_line_too_long),
		cmocka_unit_test(test_empty_and_flush),
		cmocka_unit_test(test_batch),
		cmocka_unit_test(test_format_truncation),
		cmocka_unit_test(test_opt_names),
		cmocka_unit_test(test_match),
		cmocka_unit_test(test_match_dataseg),
		cmocka_unit_test(test_match_inside),
		cmocka_unit_test(test_strip_fast_promise),
		cmocka_unit_test(test_needs_flow),
		cmocka_unit_test(test_needs_flow_promise),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
