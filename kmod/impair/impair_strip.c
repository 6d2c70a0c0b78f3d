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

/*
 * The walk of tcpfwd_opt_next() and tcpfwd_opt_validate() (the same checks
 * and error codes, in the same order; test_tcpfwd_opt.c checks that they
 * agree), as one loop: this runs on every packet a strip rule matches, and
 * the walker is a call per option into tcpfwd.ko.
 */
int impair_strip_scan(const u8 *th, unsigned int buflen,
		      const struct impair_kindmask *mask,
		      struct impair_strip_plan *plan)
{
	const u8 *opts = th + TCPFWD_TCPHDR_LEN;
	unsigned int off = 0, len, olen, count = 0;
	int hdrlen;

	hdrlen = tcpfwd_tcp_hdrlen(th, buflen);
	if (hdrlen < 0)
		return hdrlen;
	plan->hdrlen = hdrlen;
	plan->n = 0;
	len = hdrlen - TCPFWD_TCPHDR_LEN;	/* at most 40: doff < 16 */
	while (off < len) {
		u8 kind = opts[off];

		if (kind == TCPFWD_OPT_EOL)
			break;
		if (kind == TCPFWD_OPT_NOP) {
			off++;
			continue;
		}
		if (len - off < 2)
			return TCPFWD_OPT_ETRUNC;
		olen = opts[off + 1];
		if (olen < 2)
			return TCPFWD_OPT_EBADLEN;
		if (olen > len - off)
			return TCPFWD_OPT_EOVERRUN;
		if (++count > TCPFWD_OPT_MAX_OPTS)
			return TCPFWD_OPT_ETOOMANY;
		if (impair_kindmask_test(mask, kind)) {
			plan->off[plan->n] = (u8)off;
			plan->len[plan->n] = (u8)olen;
			plan->n++;
		}
		off += olen;
	}
	return (int)plan->n;
}

static void impair_strip_res_init(struct impair_strip_res *res,
				  unsigned int hdrlen)
{
	res->old_hdrlen = hdrlen;
	res->new_hdrlen = hdrlen;
	res->removed = 0;
	res->stripped = 0;
	res->csum_diff = 0;
}

/* The sum of @len NOP bytes at offset @off (see tcpfwd_csum_bytes()). */
static u32 impair_nop_sum(unsigned int off, unsigned int len)
{
	static const u8 nop_word[2] = { TCPFWD_OPT_NOP, TCPFWD_OPT_NOP };
	unsigned int first = (len + !(off & 1)) / 2;	/* at even offsets */

	return first * tcpfwd_csum_bytes(nop_word, 0, 1) +
	       (len - first) * tcpfwd_csum_bytes(nop_word, 1, 1);
}

int impair_strip_apply_nop(u8 *th, const struct impair_strip_plan *plan,
			   struct impair_strip_res *res)
{
	u8 *opts = th + TCPFWD_TCPHDR_LEN;
	u32 old_sum = 0, new_sum = 0;
	unsigned int i;

	impair_strip_res_init(res, plan->hdrlen);
	for (i = 0; i < plan->n; i++) {
		old_sum += tcpfwd_csum_bytes(opts, plan->off[i], plan->len[i]);
		new_sum += impair_nop_sum(plan->off[i], plan->len[i]);
		memset(opts + plan->off[i], TCPFWD_OPT_NOP, plan->len[i]);
	}
	if (plan->n)
		tcpfwd_csum_acc(&res->csum_diff, old_sum, new_sum);
	res->stripped = plan->n;
	return plan->n;
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
	struct impair_strip_plan plan;
	int hdrlen, ret;
	u32 old_sum;
	u8 *nth;

	ret = impair_strip_scan(th, buflen, mask, &plan);
	if (ret < 0)
		return ret;
	hdrlen = plan.hdrlen;
	impair_strip_res_init(res, hdrlen);
	if (!ret)
		return 0;
	optlen = impair_compact_build(th + TCPFWD_TCPHDR_LEN,
				      hdrlen - TCPFWD_TCPHDR_LEN, mask, out,
					 &stripped);

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
