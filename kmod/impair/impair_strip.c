// SPDX-License-Identifier: GPL-2.0
/*
 * Pure option stripping for impair's "strip" rules: NOP overwrite and
 * compaction.  See impair_strip.h.  Compiled into impair.ko and into the
 * userspace unit tests (kmod/tests/unit/test_tcpfwd_opt.c).
 */
#include "../core/tcpfwd_pure.h"
#include "../core/tcpfwd_opt.h"
#include "impair_strip.h"

static bool impair_strippable(const struct impair_kindmask *mask,
			      const struct tcpfwd_opt *o)
{
	return o->kind != TCPFWD_OPT_NOP && o->kind != TCPFWD_OPT_EOL &&
	       impair_kindmask_test(mask, o->kind);
}

/* Common prologue: check doff and validate the option block. */
static int impair_strip_begin(const u8 *th, unsigned int buflen,
			      struct impair_strip_res *res)
{
	int hdrlen, ret;

	hdrlen = tcpfwd_tcp_hdrlen(th, buflen);
	if (hdrlen < 0)
		return hdrlen;
	ret = tcpfwd_opt_validate(th + TCPFWD_TCPHDR_LEN,
				  hdrlen - TCPFWD_TCPHDR_LEN, NULL);
	if (ret < 0)
		return ret;
	res->old_hdrlen = hdrlen;
	res->new_hdrlen = hdrlen;
	res->removed = 0;
	res->stripped = 0;
	res->csum_diff = 0;
	return hdrlen;
}

int impair_strip_opts_nop(u8 *th, unsigned int buflen,
			  const struct impair_kindmask *mask,
			struct impair_strip_res *res)
{
	u8 *opts = th + TCPFWD_TCPHDR_LEN;
	struct tcpfwd_opt_iter it;
	struct tcpfwd_opt o;
	int hdrlen, ret;

	hdrlen = impair_strip_begin(th, buflen, res);
	if (hdrlen < 0)
		return hdrlen;

	tcpfwd_opt_iter_init(&it, opts, hdrlen - TCPFWD_TCPHDR_LEN);
	while ((ret = tcpfwd_opt_next(&it, &o)) > 0) {
		u32 old_sum;

		if (!impair_strippable(mask, &o))
			continue;
		/* The walker has already moved past these bytes. */
		old_sum = tcpfwd_csum_bytes(opts, o.off, o.len);
		memset(opts + o.off, TCPFWD_OPT_NOP, o.len);
		tcpfwd_csum_acc(&res->csum_diff, old_sum,
				tcpfwd_csum_bytes(opts, o.off, o.len));
		res->stripped++;
	}
	return res->stripped;
}

/*
 * Build the compacted option block into @out (TCPFWD_OPT_MAX_LEN bytes).
 * Returns its padded length; *stripped gets the number of options removed.
 * The block has been validated by the caller.
 */
static unsigned int impair_compact_build(const u8 *opts, unsigned int len,
					 const struct impair_kindmask *mask,
					    u8 *out, unsigned int *stripped)
{
	unsigned int n = 0, run = 0, padded;
	struct tcpfwd_opt_iter it;
	struct tcpfwd_opt o;
	bool in_run = false;

	*stripped = 0;
	tcpfwd_opt_iter_init(&it, opts, len);
	while (tcpfwd_opt_next(&it, &o) > 0) {
		if (o.kind == TCPFWD_OPT_NOP) {
			/* A NOP run belongs to the option that follows it. */
			if (!in_run) {
				run = o.off;
				in_run = true;
			}
			continue;
		}
		if (impair_strippable(mask, &o)) {
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
	memset(out + n, TCPFWD_OPT_EOL, padded - n);
	return padded;
}

static void impair_set_doff(u8 *th, unsigned int hdrlen)
{
	th[12] = (u8)((th[12] & 0x0f) | ((hdrlen / 4) << 4));
}

/* The new header ends where the old one ended: it starts at th + removed. */
int impair_strip_opts_compact(u8 *th, unsigned int buflen,
			      const struct impair_kindmask *mask,
			 struct impair_strip_res *res)
{
	u8 out[TCPFWD_OPT_MAX_LEN];
	u8 fixed[TCPFWD_TCPHDR_LEN];
	unsigned int optlen, stripped, new_hdrlen, removed;
	u32 old_sum;
	u8 *nth;
	int hdrlen;

	hdrlen = impair_strip_begin(th, buflen, res);
	if (hdrlen < 0)
		return hdrlen;

	optlen = impair_compact_build(th + TCPFWD_TCPHDR_LEN,
				      hdrlen - TCPFWD_TCPHDR_LEN, mask, out,
					 &stripped);
	if (!stripped)
		return 0;

	new_hdrlen = TCPFWD_TCPHDR_LEN + optlen;
	removed = hdrlen - new_hdrlen;
	old_sum = tcpfwd_csum_bytes(th, 0, hdrlen);

	nth = th + removed;
	memcpy(fixed, th, TCPFWD_TCPHDR_LEN);
	memcpy(nth + TCPFWD_TCPHDR_LEN, out, optlen);
	memcpy(nth, fixed, TCPFWD_TCPHDR_LEN);
	impair_set_doff(nth, new_hdrlen);

	res->new_hdrlen = new_hdrlen;
	res->removed = removed;
	res->stripped = stripped;
	/* removed is a multiple of 4: word parity is preserved. */
	res->csum_diff = tcpfwd_csum_sub(tcpfwd_csum_bytes(nth, 0, new_hdrlen),
					 old_sum);
	return stripped;
}
