// SPDX-License-Identifier: GPL-2.0
/*
 * Unit tests for kmod/ecn_proxy/ecnp_opt.c, the ECN proxy's pure TCP option
 * code: what it reads from a SYN's options.
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

/* ecnp_syn_opts() on a heap copy of exactly @len bytes. */
static struct ecnp_pkt syn_opts(const u8 *opts, unsigned int len)
{
	struct ecnp_pkt ep = { 0 };
	u8 *buf = malloc(len ? len : 1);

	assert_non_null(buf);
	if (len)
		memcpy(buf, opts, len);
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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_syn_opts_linux),
		cmocka_unit_test(test_syn_opts_wscale_like_linux),
		cmocka_unit_test(test_syn_opts_signed),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
