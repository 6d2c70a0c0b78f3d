// SPDX-License-Identifier: GPL-2.0
/*
 * Rule parser, canonical printer and matcher of the impairment module.
 * See impair_rule.h for the grammar.  Pure code: no allocation, no skb,
 * every input byte is bounds-checked against the given length.
 */
#include "../core/tcpfwd_pure.h"
#include "../core/tcpfwd_opt.h"
#include "impair_rule.h"

#define IMPAIR_SEQRAND_EXCL \
	(IMPAIR_M_DIR | IMPAIR_M_IN | IMPAIR_M_OUT | IMPAIR_M_AFTER)

/* A token: [s, s + len) of the line. */
struct impair_tok {
	const char *s;
	unsigned int len;
};

struct impair_lexer {
	const char *p;
	const char *end;
};

static bool impair_blank(char c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\v' ||
	       c == '\f';
}

/* Next token; false at the end of the line or at a comment. */
static bool impair_next(struct impair_lexer *lx, struct impair_tok *t)
{
	while (lx->p < lx->end && impair_blank(*lx->p))
		lx->p++;
	if (lx->p >= lx->end || *lx->p == '#') {
		lx->p = lx->end;
		return false;
	}
	t->s = lx->p;
	while (lx->p < lx->end && !impair_blank(*lx->p))
		lx->p++;
	t->len = (unsigned int)(lx->p - t->s);
	return true;
}

/* Peek: is the next token @word?  Consumes it if so. */
static bool impair_accept(struct impair_lexer *lx, const char *word)
{
	struct impair_lexer save = *lx;
	struct impair_tok t;

	if (impair_next(lx, &t) && t.len == strlen(word) &&
	    !memcmp(t.s, word, t.len))
		return true;
	*lx = save;
	return false;
}

static bool impair_tok_is(const struct impair_tok *t, const char *word)
{
	return t->len == strlen(word) && !memcmp(t->s, word, t->len);
}

static int impair_fail(struct impair_perr *err, const char *msg,
		       const struct impair_tok *t)
{
	err->msg = msg;
	err->tok = t ? t->s : NULL;
	err->toklen = t ? t->len : 0;
	return -1;
}

static bool impair_digit(char c)
{
	return c >= '0' && c <= '9';
}

static int impair_hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/*
 * Decimal number in [s, s + len) up to @max.  Returns 0, -1 (not a
 * number) or -2 (out of range).
 */
static int impair_parse_num(const char *s, unsigned int len, u32 max,
			    u32 *val)
{
	unsigned int i;
	u64 v = 0;

	if (!len)
		return -1;
	for (i = 0; i < len; i++) {
		if (!impair_digit(s[i]))
			return -1;
		v = v * 10 + (u64)(s[i] - '0');
		if (v > max)
			return -2;
	}
	*val = (u32)v;
	return 0;
}

static int impair_num_tok(const struct impair_tok *t, u32 min, u32 max,
			  u32 *val, struct impair_perr *err)
{
	int ret = impair_parse_num(t->s, t->len, max, val);

	if (ret == -1)
		return impair_fail(err, "not a number", t);
	if (ret == -2 || *val < min)
		return impair_fail(err, "number out of range", t);
	return 0;
}

/* "N" or "N-M", @min <= N <= M <= @max; @msg on error. */
static int impair_span_tok(const struct impair_tok *t, u32 min, u32 max,
			   u32 *lo, u32 *hi, const char *msg,
			   struct impair_perr *err)
{
	unsigned int i;
	u32 a, b;

	for (i = 0; i < t->len && t->s[i] != '-'; i++)
		;
	if (impair_parse_num(t->s, i, max, &a))
		return impair_fail(err, msg, t);
	b = a;
	if (i < t->len &&
	    impair_parse_num(t->s + i + 1, t->len - i - 1, max, &b))
		return impair_fail(err, msg, t);
	if (b < a || a < min)
		return impair_fail(err, msg, t);
	*lo = a;
	*hi = b;
	return 0;
}

/* "N" or "N-M", 0 <= N <= M <= 65535. */
static int impair_range_tok(const struct impair_tok *t, u16 *lo, u16 *hi,
			    struct impair_perr *err)
{
	u32 a, b;

	if (impair_span_tok(t, 0, 65535, &a, &b, "bad port or port range",
			    err))
		return -1;
	*lo = (u16)a;
	*hi = (u16)b;
	return 0;
}

static bool impair_parse_ipv4(const char *s, unsigned int len, u8 *out)
{
	unsigned int i = 0, part;

	for (part = 0; part < 4; part++) {
		unsigned int start = i;
		u32 v;

		while (i < len && impair_digit(s[i]))
			i++;
		if (i - start > 3 || impair_parse_num(s + start, i - start,
						      255, &v))
			return false;
		out[part] = (u8)v;
		if (part < 3) {
			if (i >= len || s[i] != '.')
				return false;
			i++;
		}
	}
	return i == len;
}

/* Hex groups with at most one "::"; no embedded IPv4. */
static bool impair_parse_ipv6(const char *s, unsigned int len, u8 *out)
{
	u16 head[8], tail[8];
	unsigned int nh = 0, nt = 0, i = 0, k;
	bool gap = false;

	if (len >= 2 && s[0] == ':' && s[1] == ':') {
		gap = true;
		i = 2;
	} else if (len && s[0] == ':') {
		return false;
	}
	while (i < len) {
		unsigned int start = i;
		u32 v = 0;

		while (i < len && impair_hexval(s[i]) >= 0 && i - start < 5) {
			v = (v << 4) | (u32)impair_hexval(s[i]);
			i++;
		}
		if (i == start || i - start > 4)
			return false;
		if (nh + nt >= 8)
			return false;
		if (gap)
			tail[nt++] = (u16)v;
		else
			head[nh++] = (u16)v;
		if (i == len)
			break;
		if (s[i] != ':')
			return false;
		i++;
		if (i < len && s[i] == ':') {
			if (gap)
				return false;
			gap = true;
			i++;
			if (i == len)
				break;
		} else if (i == len) {
			return false;	/* trailing single ':' */
		}
	}
	if (gap ? nh + nt > 7 : nh != 8)
		return false;
	memset(out, 0, 16);
	for (k = 0; k < nh; k++)
		tcpfwd_put_be16(out + 2 * k, head[k]);
	for (k = 0; k < nt; k++)
		tcpfwd_put_be16(out + 16 - 2 * (nt - k), tail[k]);
	return true;
}

static int impair_prefix_tok(const struct impair_tok *t,
			     struct impair_prefix *pf, struct impair_perr *err)
{
	unsigned int alen, i;
	bool v6 = false;
	u32 plen;

	for (alen = 0; alen < t->len && t->s[alen] != '/'; alen++)
		;
	for (i = 0; i < alen; i++)
		if (t->s[i] == ':')
			v6 = true;
	memset(pf, 0, sizeof(*pf));
	if (v6 ? !impair_parse_ipv6(t->s, alen, pf->addr) :
		 !impair_parse_ipv4(t->s, alen, pf->addr))
		return impair_fail(err, "bad address", t);
	pf->family = v6 ? 6 : 4;
	plen = v6 ? 128 : 32;
	if (alen < t->len &&
	    impair_parse_num(t->s + alen + 1, t->len - alen - 1, plen, &plen))
		return impair_fail(err, "bad prefix length", t);
	pf->plen = (u8)plen;
	return 0;
}

/* Names accepted by "strip", indexed by kind. */
static const struct {
	u8 kind;
	const char *name;
} impair_opt_names[] = {
	{ TCPFWD_OPT_MSS,	"mss" },
	{ TCPFWD_OPT_WSCALE,	"wscale" },
	{ TCPFWD_OPT_SACK_PERM,	"sackok" },
	{ TCPFWD_OPT_SACK,	"sack" },
	{ TCPFWD_OPT_TIMESTAMP,	"timestamp" },
	{ TCPFWD_OPT_MD5SIG,	"md5" },
	{ TCPFWD_OPT_AO,		"ao" },
	{ TCPFWD_OPT_MPTCP,	"mptcp" },
	{ TCPFWD_OPT_FASTOPEN,	"fastopen" },
	{ TCPFWD_OPT_EXP,	"exp" },
};

const char *impair_opt_name(u8 kind)
{
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(impair_opt_names); i++)
		if (impair_opt_names[i].kind == kind)
			return impair_opt_names[i].name;
	return NULL;
}

static int impair_strip_tok(const struct impair_tok *t,
			    struct impair_kindmask *m, struct impair_perr *err)
{
	unsigned int i = 0;

	impair_kindmask_zero(m);
	while (i <= t->len) {
		struct impair_tok e = { .s = t->s + i };
		unsigned int k;
		bool found = false;
		u32 kind;

		while (i < t->len && t->s[i] != ',')
			i++;
		e.len = (unsigned int)(t->s + i - e.s);
		i++;		/* past the ',' (or the end) */
		if (!e.len)
			return impair_fail(err, "empty element in option list",
					   t);
		for (k = 0; k < ARRAY_SIZE(impair_opt_names); k++) {
			if (impair_tok_is(&e, impair_opt_names[k].name)) {
				impair_kindmask_set(m, impair_opt_names[k].kind);
				found = true;
			}
		}
		if (impair_tok_is(&e, "ts")) {
			impair_kindmask_set(m, TCPFWD_OPT_TIMESTAMP);
			found = true;
		}
		if (found)
			continue;
		if (!impair_digit(e.s[0]))
			return impair_fail(err, "unknown option name", &e);
		if (impair_parse_num(e.s, e.len, 255, &kind))
			return impair_fail(err, "option kind not in 2..255",
					   &e);
		if (kind < 2)
			return impair_fail(err,
					   "EOL (0) and NOP (1) cannot be stripped",
					   &e);
		impair_kindmask_set(m, (u8)kind);
	}
	return 0;
}

/* Probability: "0", "1", "0.25" (up to 6 decimals), or "N[.M]%". */
static int impair_prob_tok(const struct impair_tok *t, u32 *ppm,
			   struct impair_perr *err)
{
	unsigned int len = t->len, i = 0, decimals = 0, maxdec = 6;
	u64 v = 0, scale;

	if (len && t->s[len - 1] == '%') {
		len--;
		maxdec = 4;
	}
	if (!len || !impair_digit(t->s[0]))
		return impair_fail(err, "bad probability", t);
	while (i < len && impair_digit(t->s[i])) {
		v = v * 10 + (u64)(t->s[i] - '0');
		if (v > 100)
			return impair_fail(err, "bad probability", t);
		i++;
	}
	if (i < len && t->s[i] == '.') {
		i++;
		if (i == len)
			return impair_fail(err, "bad probability", t);
		while (i < len && impair_digit(t->s[i])) {
			if (++decimals > maxdec)
				return impair_fail(err,
						   "bad probability (too many decimals)",
						   t);
			v = v * 10 + (u64)(t->s[i] - '0');
			i++;
		}
	}
	if (i != len)
		return impair_fail(err, "bad probability", t);
	/* v * 10^-decimals, times 10^6 (or 10^4 for a percentage) */
	scale = 1;
	while (decimals++ < maxdec)
		scale *= 10;
	v *= scale;
	if (v > IMPAIR_PPM)
		return impair_fail(err, "probability above 1", t);
	*ppm = (u32)v;
	return 0;
}

static int impair_ifname_tok(const struct impair_tok *t, char *name,
			     struct impair_perr *err)
{
	if (t->len >= IMPAIR_IFNAMSIZ)
		return impair_fail(err, "interface name too long", t);
	memcpy(name, t->s, t->len);
	name[t->len] = '\0';
	return 0;
}

static const char *const impair_ecn_names[] = {
	"not-ect", "ect1", "ect0", "ce"	/* INET_ECN_* order */
};

/* Keywords and their bit, to report duplicates. */
enum impair_kw_type { IMPAIR_KW_MATCH, IMPAIR_KW_ACT };

/* One switch over both kinds of bits: actions in the upper half. */
#define IMPAIR_ACT_KEY(bit)	((bit) << 16)

static const struct {
	const char *name;
	u8 type;
	u32 bit;
} impair_keywords[] = {
	{ "dir",	   IMPAIR_KW_MATCH, IMPAIR_M_DIR },
	{ "in",		   IMPAIR_KW_MATCH, IMPAIR_M_IN },
	{ "out",	   IMPAIR_KW_MATCH, IMPAIR_M_OUT },
	{ "flags",	   IMPAIR_KW_MATCH, IMPAIR_M_FLAGS },
	{ "family",	   IMPAIR_KW_MATCH, IMPAIR_M_FAMILY },
	{ "src",	   IMPAIR_KW_MATCH, IMPAIR_M_SRC },
	{ "dst",	   IMPAIR_KW_MATCH, IMPAIR_M_DST },
	{ "sport",	   IMPAIR_KW_MATCH, IMPAIR_M_SPORT },
	{ "dport",	   IMPAIR_KW_MATCH, IMPAIR_M_DPORT },
	{ "after",	   IMPAIR_KW_MATCH, IMPAIR_M_AFTER },
	{ "dataseg",	   IMPAIR_KW_MATCH, IMPAIR_M_DATASEG },
	{ "strip",	   IMPAIR_KW_ACT, IMPAIR_A_STRIP },
	{ "wscale",	   IMPAIR_KW_ACT, IMPAIR_A_WSCALE },
	{ "mss",	   IMPAIR_KW_ACT, IMPAIR_A_MSS },
	{ "mss-clamp",	   IMPAIR_KW_ACT, IMPAIR_A_MSS_CLAMP },
	{ "window",	   IMPAIR_KW_ACT, IMPAIR_A_WINDOW },
	{ "seqrand",	   IMPAIR_KW_ACT, IMPAIR_A_SEQRAND },
	{ "ecn-block",	   IMPAIR_KW_ACT, IMPAIR_A_ECN_BLOCK },
	{ "ecn-clear-syn", IMPAIR_KW_ACT, IMPAIR_A_ECN_CLEAR_SYN },
	{ "ecn-set",	   IMPAIR_KW_ACT, IMPAIR_A_ECN_SET },
	{ "ecn-bleach",	   IMPAIR_KW_ACT, IMPAIR_A_ECN_BLEACH },
	{ "drop",	   IMPAIR_KW_ACT, IMPAIR_A_DROP },
	{ "split",	   IMPAIR_KW_ACT, IMPAIR_A_SPLIT },
	{ "coalesce",	   IMPAIR_KW_ACT, IMPAIR_A_COALESCE },
};

/* Keywords valid only right after another one. */
static const struct {
	const char *name;
	const char *msg;
} impair_modifiers[] = {
	{ "mode",     "mode must follow strip's option list" },
	{ "sack-fix", "sack-fix must follow seqrand" },
	{ "both",     "both must follow seqrand" },
	{ "only-ect", "only-ect must follow ecn-set's codepoint" },
	{ "half",     "half must follow split" },
	{ "at",	      "at must follow split" },
	{ "opts",     "opts must follow split or coalesce" },
};

/* The argument of @kw; an error if the line ends. */
static int impair_arg(struct impair_lexer *lx, const struct impair_tok *kw,
		      struct impair_tok *arg, struct impair_perr *err)
{
	if (!impair_next(lx, arg))
		return impair_fail(err, "missing value after keyword", kw);
	return 0;
}

/* "opts first|second[|both]" after split or coalesce, if there. */
static int impair_opts_arg(struct impair_lexer *lx, bool both, u8 *opts,
			   struct impair_perr *err)
{
	struct impair_tok kw = { .s = "opts", .len = 4 }, a;

	if (!impair_accept(lx, "opts"))
		return 0;
	if (impair_arg(lx, &kw, &a, err))
		return -1;
	if (impair_tok_is(&a, "first"))
		*opts = IMPAIR_OPTS_FIRST;
	else if (impair_tok_is(&a, "second"))
		*opts = IMPAIR_OPTS_SECOND;
	else if (both && impair_tok_is(&a, "both"))
		*opts = IMPAIR_OPTS_BOTH;
	else
		return impair_fail(err, both ?
				   "expected first, second or both" :
				   "expected first or second", &a);
	return 0;
}

/* split's arguments: [half | at N] [opts first|second|both] */
static int impair_split_args(struct impair_lexer *lx, struct impair_rule *r,
			     struct impair_perr *err)
{
	struct impair_tok kw = { .s = "at", .len = 2 }, a;
	u32 v;

	r->split_at = 0;
	r->split_opts = IMPAIR_OPTS_BOTH;
	if (impair_accept(lx, "at")) {
		if (impair_arg(lx, &kw, &a, err) ||
		    impair_num_tok(&a, 1, 65535, &v, err))
			return -1;
		r->split_at = (u16)v;
	} else {
		impair_accept(lx, "half");
	}
	return impair_opts_arg(lx, true, &r->split_opts, err);
}

static int impair_family_set(struct impair_rule *r, u8 family,
			     const struct impair_tok *t,
			     struct impair_perr *err)
{
	if (r->family && r->family != family)
		return impair_fail(err, "address family mismatch", t);
	r->family = family;
	return 0;
}

/* A match keyword's (IMPAIR_M_*) argument @a into @r. */
static int impair_match_arg(const struct impair_tok *a, u32 key,
			    struct impair_rule *r, struct impair_perr *err)
{
	switch (key) {
	case IMPAIR_M_DIR:
		if (impair_tok_is(a, "initiator"))
			r->dir = IMPAIR_DIR_INITIATOR;
		else if (impair_tok_is(a, "responder"))
			r->dir = IMPAIR_DIR_RESPONDER;
		else
			return impair_fail(err,
					   "expected initiator or responder",
					   a);
		return 0;
	case IMPAIR_M_IN:
		return impair_ifname_tok(a, r->in, err);
	case IMPAIR_M_OUT:
		return impair_ifname_tok(a, r->out, err);
	case IMPAIR_M_FLAGS:
		if (impair_tok_is(a, "syn"))
			r->flags = IMPAIR_FLAGS_SYN;
		else if (impair_tok_is(a, "synack"))
			r->flags = IMPAIR_FLAGS_SYNACK;
		else if (impair_tok_is(a, "all"))
			r->flags = IMPAIR_FLAGS_ALL;
		else
			return impair_fail(err, "expected syn, synack or all",
					   a);
		return 0;
	case IMPAIR_M_FAMILY:
		if (impair_tok_is(a, "ipv4"))
			return impair_family_set(r, 4, a, err);
		if (impair_tok_is(a, "ipv6"))
			return impair_family_set(r, 6, a, err);
		return impair_fail(err, "expected ipv4 or ipv6", a);
	case IMPAIR_M_SRC:
	case IMPAIR_M_DST: {
		struct impair_prefix *pf = key == IMPAIR_M_SRC ? &r->src :
								 &r->dst;

		if (impair_prefix_tok(a, pf, err))
			return -1;
		return impair_family_set(r, pf->family, a, err);
	}
	case IMPAIR_M_SPORT:
		return impair_range_tok(a, &r->sport_lo, &r->sport_hi, err);
	case IMPAIR_M_DPORT:
		return impair_range_tok(a, &r->dport_lo, &r->dport_hi, err);
	case IMPAIR_M_AFTER:
		return impair_num_tok(a, 0, 0xffffffffU, &r->after, err);
	default:	/* IMPAIR_M_DATASEG */
		return impair_span_tok(a, 1, 0xffffffffU, &r->dseg_lo,
				       &r->dseg_hi,
				       "bad data segment index or range (from 1)",
				       err);
	}
}

/* strip KINDS [mode nop|compact]: @a is KINDS. */
static int impair_strip_args(struct impair_lexer *lx,
			     const struct impair_tok *a, struct impair_rule *r,
			     struct impair_perr *err)
{
	struct impair_tok m = { .s = "mode", .len = 4 }, mode = { };

	if (impair_strip_tok(a, &r->strip, err))
		return -1;
	r->strip_mode = IMPAIR_STRIP_NOP;
	if (!impair_accept(lx, "mode"))
		return 0;
	if (impair_arg(lx, &m, &mode, err))
		return -1;
	if (impair_tok_is(&mode, "nop"))
		r->strip_mode = IMPAIR_STRIP_NOP;
	else if (impair_tok_is(&mode, "compact"))
		r->strip_mode = IMPAIR_STRIP_COMPACT;
	else
		return impair_fail(err, "expected nop or compact", &mode);
	return 0;
}

/* ecn-set ect0|ect1|ce [only-ect]: @a is the codepoint. */
static int impair_ecn_set_args(struct impair_lexer *lx,
			       const struct impair_tok *a,
			       struct impair_rule *r, struct impair_perr *err)
{
	u32 v;

	for (v = 1; v < ARRAY_SIZE(impair_ecn_names); v++)
		if (impair_tok_is(a, impair_ecn_names[v]))
			break;
	if (v == ARRAY_SIZE(impair_ecn_names))
		return impair_fail(err, "expected ect0, ect1 or ce", a);
	r->ecn = (u8)v;
	r->ecn_only_ect = impair_accept(lx, "only-ect");
	return 0;
}

/* An action keyword's (IMPAIR_ACT_KEY()) argument @a, if any, into @r. */
static int impair_action_arg(struct impair_lexer *lx,
			     const struct impair_tok *a, u32 key,
			     struct impair_rule *r, struct impair_perr *err)
{
	u32 v;

	switch (key) {
	case IMPAIR_ACT_KEY(IMPAIR_A_STRIP):
		return impair_strip_args(lx, a, r, err);
	case IMPAIR_ACT_KEY(IMPAIR_A_WSCALE):
		if (impair_num_tok(a, 0, 14, &v, err))
			return -1;
		r->wscale = (u8)v;
		return 0;
	case IMPAIR_ACT_KEY(IMPAIR_A_MSS):
	case IMPAIR_ACT_KEY(IMPAIR_A_MSS_CLAMP):
		if (impair_num_tok(a, 1, 65535, &v, err))
			return -1;
		r->mss = (u16)v;
		return 0;
	case IMPAIR_ACT_KEY(IMPAIR_A_WINDOW):
		if (impair_num_tok(a, 0, 65535, &v, err))
			return -1;
		r->window = (u16)v;
		return 0;
	case IMPAIR_ACT_KEY(IMPAIR_A_SEQRAND):
		for (;;) {
			if (!r->seq_sack_fix && impair_accept(lx, "sack-fix"))
				r->seq_sack_fix = true;
			else if (!r->seq_both && impair_accept(lx, "both"))
				r->seq_both = true;
			else
				return 0;
		}
	case IMPAIR_ACT_KEY(IMPAIR_A_ECN_SET):
		return impair_ecn_set_args(lx, a, r, err);
	case IMPAIR_ACT_KEY(IMPAIR_A_DROP):
		return impair_prob_tok(a, &r->drop_ppm, err);
	case IMPAIR_ACT_KEY(IMPAIR_A_SPLIT):
		return impair_split_args(lx, r, err);
	case IMPAIR_ACT_KEY(IMPAIR_A_COALESCE):
		r->coalesce_opts = IMPAIR_OPTS_FIRST;
		return impair_opts_arg(lx, false, &r->coalesce_opts, err);
	default:	/* ecn-block, ecn-clear-syn, ecn-bleach: no argument */
		return 0;
	}
}

/* Keywords whose argument, if any, their own parser reads. */
static bool impair_key_takes_arg(u32 key)
{
	return key != IMPAIR_ACT_KEY(IMPAIR_A_SEQRAND) &&
	       key != IMPAIR_ACT_KEY(IMPAIR_A_ECN_BLOCK) &&
	       key != IMPAIR_ACT_KEY(IMPAIR_A_ECN_CLEAR_SYN) &&
	       key != IMPAIR_ACT_KEY(IMPAIR_A_ECN_BLEACH) &&
	       key != IMPAIR_ACT_KEY(IMPAIR_A_SPLIT) &&
	       key != IMPAIR_ACT_KEY(IMPAIR_A_COALESCE);
}

/* One keyword (already known, not a duplicate) and its arguments. */
static int impair_keyword(struct impair_lexer *lx, const struct impair_tok *kw,
			  u32 key, struct impair_rule *r,
			  struct impair_perr *err)
{
	struct impair_tok a = { };

	if (impair_key_takes_arg(key) && impair_arg(lx, kw, &a, err))
		return -1;
	if (key < IMPAIR_ACT_KEY(1))
		return impair_match_arg(&a, key, r, err);
	return impair_action_arg(lx, &a, key, r, err);
}

/*
 * The keyword @t: *@have is the set of @r it belongs to (match or act),
 * *@bit its bit there.  Return: 0, or -1 for an unknown word or a
 * modifier out of its place (@err says which).
 */
static int impair_kw_find(const struct impair_tok *t, struct impair_rule *r,
			  u32 **have, u32 *bit, struct impair_perr *err)
{
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(impair_keywords); i++) {
		if (impair_tok_is(t, impair_keywords[i].name)) {
			*bit = impair_keywords[i].bit;
			*have = impair_keywords[i].type == IMPAIR_KW_MATCH ?
				&r->match : &r->act;
			return 0;
		}
	}
	for (i = 0; i < ARRAY_SIZE(impair_modifiers); i++)
		if (impair_tok_is(t, impair_modifiers[i].name))
			return impair_fail(err, impair_modifiers[i].msg, t);
	return impair_fail(err, "unknown keyword", t);
}

/* Keywords of @r so far that exclude each other: why, or NULL. */
static const char *impair_rule_conflict(const struct impair_rule *r)
{
	if ((r->act & IMPAIR_A_MSS) && (r->act & IMPAIR_A_MSS_CLAMP))
		return "mss and mss-clamp are exclusive";
	if ((r->act & IMPAIR_A_ECN_SET) && (r->act & IMPAIR_A_ECN_BLEACH))
		return "ecn-set and ecn-bleach are exclusive";
	if ((r->act & IMPAIR_A_SPLIT) && (r->act & IMPAIR_A_COALESCE))
		return "split and coalesce are exclusive";
	if ((r->act & IMPAIR_A_SEQRAND) &&
	    ((r->match & IMPAIR_SEQRAND_EXCL) || r->flags != IMPAIR_FLAGS_ALL))
		return "seqrand acts on whole flows: no dir, in, out, flags or after";
	return NULL;
}

int impair_line_parse(const char *line, unsigned int len,
		      struct impair_rule *r, struct impair_perr *err)
{
	struct impair_lexer lx = { .p = line, .end = line + len };
	struct impair_tok t, first;

	memset(r, 0, sizeof(*r));
	err->msg = NULL;
	err->tok = NULL;
	err->toklen = 0;
	if (len > IMPAIR_LINE_MAX) {
		t.s = line;
		t.len = 16;
		return impair_fail(err, "line too long", &t);
	}
	if (!impair_next(&lx, &first))
		return IMPAIR_LINE_EMPTY;
	if (impair_tok_is(&first, "flush")) {
		if (impair_next(&lx, &t))
			return impair_fail(err, "flush takes no argument", &t);
		return IMPAIR_LINE_FLUSH;
	}

	lx.p = first.s;
	while (impair_next(&lx, &t)) {
		const char *conflict;
		u32 *have, bit;

		if (impair_kw_find(&t, r, &have, &bit, err))
			return -1;
		if (*have & bit)
			return impair_fail(err, "duplicate keyword", &t);
		if (impair_keyword(&lx, &t, have == &r->act ?
				   IMPAIR_ACT_KEY(bit) : bit, r, err))
			return -1;
		*have |= bit;
		conflict = impair_rule_conflict(r);
		if (conflict)
			return impair_fail(err, conflict, &t);
	}
	if (!r->act) {
		first.len = (unsigned int)(lx.p - first.s);
		return impair_fail(err, "rule has no action", &first);
	}
	return IMPAIR_LINE_RULE;
}

int impair_batch_parse(const char *buf, unsigned int len,
		       struct impair_rule *out, unsigned int max,
		       unsigned int *nkeep, struct impair_perr *err)
{
	unsigned int pos = 0, n = 0, line = 0;

	while (pos < len) {
		unsigned int end = pos;
		struct impair_rule r;
		int kind;

		while (end < len && buf[end] != '\n')
			end++;
		line++;
		err->line = line;
		kind = impair_line_parse(buf + pos, end - pos, &r, err);
		if (kind < 0)
			return -1;
		if (kind == IMPAIR_LINE_FLUSH) {
			*nkeep = 0;
			n = 0;
		} else if (kind == IMPAIR_LINE_RULE) {
			if (*nkeep + n >= max) {
				struct impair_tok t = {
					.s = buf + pos,
					.len = end - pos < 16 ? end - pos : 16,
				};

				return impair_fail(err, "too many rules", &t);
			}
			out[n++] = r;
		}
		pos = end + 1;
	}
	return (int)n;
}

/* ---- printing ---- */

struct impair_out {
	char *buf;
	unsigned int size;
	unsigned int len;	/* would-be length, may exceed size */
};

static void impair_puts(struct impair_out *o, const char *s)
{
	for (; *s; s++, o->len++)
		if (o->len + 1 < o->size)
			o->buf[o->len] = *s;
}

static void impair_putu(struct impair_out *o, u32 v)
{
	char tmp[11];
	int i = (int)sizeof(tmp) - 1;

	tmp[i] = '\0';
	do {
		tmp[--i] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	impair_puts(o, tmp + i);
}

static void impair_puthex(struct impair_out *o, u16 v)
{
	static const char hex[] = "0123456789abcdef";
	char tmp[5];
	int i = 4;

	tmp[i] = '\0';
	do {
		tmp[--i] = hex[v & 0xf];
		v >>= 4;
	} while (v);
	impair_puts(o, tmp + i);
}

/* RFC 5952: longest run (>= 2) of zero groups becomes "::". */
static void impair_put_ipv6(struct impair_out *o, const u8 *a)
{
	int best = -1, bestlen = 1, i, run;

	for (i = 0; i < 8; i = run > 0 ? i + run : i + 1) {
		run = 0;
		while (i + run < 8 && !tcpfwd_get_be16(a + 2 * (i + run)))
			run++;
		if (run > bestlen) {
			best = i;
			bestlen = run;
		}
	}
	for (i = 0; i < 8; i++) {
		if (i == best) {
			impair_puts(o, "::");
			i += bestlen - 1;
			continue;
		}
		if (i && i != best + bestlen)
			impair_puts(o, ":");
		impair_puthex(o, tcpfwd_get_be16(a + 2 * i));
	}
}

static void impair_put_prefix(struct impair_out *o,
			      const struct impair_prefix *pf)
{
	unsigned int i;

	if (pf->family == 4) {
		for (i = 0; i < 4; i++) {
			if (i)
				impair_puts(o, ".");
			impair_putu(o, pf->addr[i]);
		}
	} else {
		impair_put_ipv6(o, pf->addr);
	}
	if (pf->plen != (pf->family == 4 ? 32 : 128)) {
		impair_puts(o, "/");
		impair_putu(o, pf->plen);
	}
}

static void impair_put_range(struct impair_out *o, u16 lo, u16 hi)
{
	impair_putu(o, lo);
	if (hi != lo) {
		impair_puts(o, "-");
		impair_putu(o, hi);
	}
}

static void impair_put_prob(struct impair_out *o, u32 ppm)
{
	char frac[7];
	int i;

	if (ppm >= IMPAIR_PPM) {
		impair_puts(o, "1");
		return;
	}
	impair_puts(o, "0");
	if (!ppm)
		return;
	for (i = 5; i >= 0; i--, ppm /= 10)
		frac[i] = (char)('0' + ppm % 10);
	for (i = 6; i > 0 && frac[i - 1] == '0'; i--)
		;
	frac[i] = '\0';
	impair_puts(o, ".");
	impair_puts(o, frac);
}

/* " keyword" (the first item gets no leading blank) */
static void impair_kw(struct impair_out *o, const char *kw)
{
	if (o->len)
		impair_puts(o, " ");
	impair_puts(o, kw);
}

static void impair_put_strip(struct impair_out *o, const struct impair_rule *r)
{
	bool first = true;
	unsigned int k;

	impair_kw(o, "strip ");
	for (k = 2; k < 256; k++) {
		const char *name;

		if (!impair_kindmask_test(&r->strip, (u8)k))
			continue;
		if (!first)
			impair_puts(o, ",");
		first = false;
		name = impair_opt_name((u8)k);
		if (name)
			impair_puts(o, name);
		else
			impair_putu(o, k);
	}
	impair_puts(o, r->strip_mode == IMPAIR_STRIP_COMPACT ?
		    " mode compact" : " mode nop");
}

/* The match part of impair_rule_format(). */
static void impair_format_match(struct impair_out *o,
				const struct impair_rule *r)
{
	static const char *const flags[] = { "all", "syn", "synack" };

	if (r->match & IMPAIR_M_DIR)
		impair_kw(o, r->dir == IMPAIR_DIR_INITIATOR ?
			  "dir initiator" : "dir responder");
	if (r->match & IMPAIR_M_IN) {
		impair_kw(o, "in ");
		impair_puts(o, r->in);
	}
	if (r->match & IMPAIR_M_OUT) {
		impair_kw(o, "out ");
		impair_puts(o, r->out);
	}
	if (r->match & IMPAIR_M_FLAGS) {
		impair_kw(o, "flags ");
		impair_puts(o, flags[r->flags % 3]);
	}
	if (r->match & IMPAIR_M_FAMILY)
		impair_kw(o, r->family == 6 ? "family ipv6" : "family ipv4");
	if (r->match & IMPAIR_M_SRC) {
		impair_kw(o, "src ");
		impair_put_prefix(o, &r->src);
	}
	if (r->match & IMPAIR_M_DST) {
		impair_kw(o, "dst ");
		impair_put_prefix(o, &r->dst);
	}
	if (r->match & IMPAIR_M_SPORT) {
		impair_kw(o, "sport ");
		impair_put_range(o, r->sport_lo, r->sport_hi);
	}
	if (r->match & IMPAIR_M_DPORT) {
		impair_kw(o, "dport ");
		impair_put_range(o, r->dport_lo, r->dport_hi);
	}
	if (r->match & IMPAIR_M_AFTER) {
		impair_kw(o, "after ");
		impair_putu(o, r->after);
	}
	if (r->match & IMPAIR_M_DATASEG) {
		impair_kw(o, "dataseg ");
		impair_putu(o, r->dseg_lo);
		if (r->dseg_hi != r->dseg_lo) {
			impair_puts(o, "-");
			impair_putu(o, r->dseg_hi);
		}
	}
}

/* The actions that edit headers or sequence numbers, in order. */
static void impair_format_edits(struct impair_out *o,
				const struct impair_rule *r)
{
	if (r->act & IMPAIR_A_STRIP)
		impair_put_strip(o, r);
	if (r->act & IMPAIR_A_WSCALE) {
		impair_kw(o, "wscale ");
		impair_putu(o, r->wscale);
	}
	if (r->act & (IMPAIR_A_MSS | IMPAIR_A_MSS_CLAMP)) {
		impair_kw(o, r->act & IMPAIR_A_MSS ? "mss " : "mss-clamp ");
		impair_putu(o, r->mss);
	}
	if (r->act & IMPAIR_A_WINDOW) {
		impair_kw(o, "window ");
		impair_putu(o, r->window);
	}
	if (r->act & IMPAIR_A_SEQRAND) {
		impair_kw(o, "seqrand");
		if (r->seq_sack_fix)
			impair_puts(o, " sack-fix");
		if (r->seq_both)
			impair_puts(o, " both");
	}
}

/* The ECN, loss and segmentation actions, in order. */
static void impair_format_others(struct impair_out *o,
				 const struct impair_rule *r)
{
	static const char *const opts[] = { "first", "second", "both" };

	if (r->act & IMPAIR_A_ECN_BLOCK)
		impair_kw(o, "ecn-block");
	if (r->act & IMPAIR_A_ECN_CLEAR_SYN)
		impair_kw(o, "ecn-clear-syn");
	if (r->act & IMPAIR_A_ECN_SET) {
		impair_kw(o, "ecn-set ");
		impair_puts(o, impair_ecn_names[r->ecn & 3]);
		if (r->ecn_only_ect)
			impair_puts(o, " only-ect");
	}
	if (r->act & IMPAIR_A_ECN_BLEACH)
		impair_kw(o, "ecn-bleach");
	if (r->act & IMPAIR_A_DROP) {
		impair_kw(o, "drop ");
		impair_put_prob(o, r->drop_ppm);
	}
	if (r->act & IMPAIR_A_SPLIT) {
		impair_kw(o, r->split_at ? "split at " : "split half");
		if (r->split_at)
			impair_putu(o, r->split_at);
		impair_puts(o, " opts ");
		impair_puts(o, opts[r->split_opts % 3]);
	}
	if (r->act & IMPAIR_A_COALESCE) {
		impair_kw(o, "coalesce opts ");
		impair_puts(o, opts[r->coalesce_opts % 3]);
	}
}

int impair_rule_format(const struct impair_rule *r, char *buf,
		       unsigned int size)
{
	struct impair_out o = { .buf = buf, .size = size, .len = 0 };

	impair_format_match(&o, r);
	impair_format_edits(&o, r);
	impair_format_others(&o, r);
	if (size)
		buf[o.len < size ? o.len : size - 1] = '\0';
	return (int)(o.len < size ? o.len : (size ? size - 1 : 0));
}

/* ---- matching ---- */

static bool impair_prefix_match(const struct impair_prefix *pf, const u8 *a)
{
	unsigned int full = pf->plen / 8, rest = pf->plen % 8;

	if (memcmp(pf->addr, a, full))
		return false;
	if (!rest)
		return true;
	return !((pf->addr[full] ^ a[full]) & (u8)(0xff << (8 - rest)));
}

bool impair_rule_match(const struct impair_rule *r,
		       const struct impair_pkt *p)
{
	u8 synack = p->tcp_flags & (0x02 | 0x10);	/* SYN, ACK */
	bool want_a = r->dir == IMPAIR_DIR_INITIATOR;
	u32 m = r->match;

	if (r->family && r->family != p->family)
		return false;
	if ((m & IMPAIR_M_DIR) && p->from_a != want_a)
		return false;
	if ((m & IMPAIR_M_IN) &&
	    (!p->in || strncmp(r->in, p->in, IMPAIR_IFNAMSIZ)))
		return false;
	if ((m & IMPAIR_M_OUT) &&
	    (!p->out || strncmp(r->out, p->out, IMPAIR_IFNAMSIZ)))
		return false;
	if (r->flags == IMPAIR_FLAGS_SYN && synack != 0x02)
		return false;
	if (r->flags == IMPAIR_FLAGS_SYNACK && synack != (0x02 | 0x10))
		return false;
	if ((m & IMPAIR_M_SRC) && !impair_prefix_match(&r->src, p->a_addr))
		return false;
	if ((m & IMPAIR_M_DST) && !impair_prefix_match(&r->dst, p->b_addr))
		return false;
	if ((m & IMPAIR_M_SPORT) &&
	    (p->a_port < r->sport_lo || p->a_port > r->sport_hi))
		return false;
	if ((m & IMPAIR_M_DPORT) &&
	    (p->b_port < r->dport_lo || p->b_port > r->dport_hi))
		return false;
	if (r->after && (!p->seg_known || p->seg < r->after))
		return false;
	if ((m & IMPAIR_M_DATASEG) &&
	    (!p->seg_known || !p->dseg || p->dseg < r->dseg_lo ||
	     p->dseg > r->dseg_hi))
		return false;
	return true;
}

bool impair_rule_match_inside(const struct impair_rule *r,
			      const struct impair_pkt *p, u32 last_dseg)
{
	struct impair_pkt q = *p;

	if (!(r->match & IMPAIR_M_DATASEG) || !p->seg_known || !p->dseg ||
	    p->dseg >= r->dseg_lo || r->dseg_hi >= last_dseg)
		return false;
	/* the range's last segment: the indexes advance together */
	q.dseg = r->dseg_hi;
	q.seg = p->seg + (r->dseg_hi - p->dseg);
	return impair_rule_match(r, &q);
}
