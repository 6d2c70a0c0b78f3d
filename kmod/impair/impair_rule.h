/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Pure (skb-free) part of the impairment module: the rule grammar (parser
 * and canonical printer) and the packet matcher.  Compiled into impair.ko
 * and into the userspace unit tests (kmod/tests/unit/test_impair_rule.c).
 *
 * One rule per line, tokens separated by blanks, '#' starts a comment:
 *
 *   rule    := match* action+
 *   match   := dir initiator|responder | in IFNAME | out IFNAME
 *            | flags syn|synack|all | family ipv4|ipv6
 *            | src ADDR[/LEN] | dst ADDR[/LEN]
 *            | sport N[-M] | dport N[-M] | after N | dataseg N[-M]
 *   action  := strip OPT[,OPT...] [mode nop|compact]
 *            | wscale N | mss N | mss-clamp N | window N
 *            | seqrand [sack-fix] [both]
 *            | ecn-block | ecn-clear-syn | ecn-set ect0|ect1|ce [only-ect]
 *            | ecn-bleach | drop P
 *            | split [half | at N] [opts first|second|both]
 *            | coalesce [opts first|second]
 *   OPT     := mss|wscale|sackok|sack|timestamp|md5|ao|mptcp|fastopen|exp
 *            | 2..255
 *   P       := 0..1 with up to 6 decimals (0.01), or a percentage (1%)
 *
 * Roles: the initiator A sent the flow's first SYN, the responder B
 * answered.  src/sport name A's address and port, dst/dport B's, whichever
 * way the segment travels; "dir" restricts a rule to the segments A sends
 * (initiator) or B sends (responder).  "after N" skips the first N segments
 * of the flow (both directions counted, the SYN is segment 0); "dataseg
 * N[-M]" matches the Nth (to Mth) segment with payload its sender sent
 * (counted per direction from 1, retransmissions too), so "dir initiator
 * dataseg 2 split" splits only the initiator's second data segment.
 * "split" cuts a data segment in two (in half, the first piece the
 * smaller, or after N payload bytes, 1..65535) with the options on the
 * first piece, the second or both (the default); "coalesce" holds one data
 * segment per flow until the next in-order one of the same direction and
 * sends the two as one, with the first's options (the default) or the
 * second's (kmod/impair/impair_seg.h).  Besides
 * rules, a line may be "flush" (remove every rule) or empty.
 */
#ifndef _IMPAIR_RULE_H
#define _IMPAIR_RULE_H

#include "../core/tcpfwd_pure.h"
#include "../core/tcpfwd_opt.h"
#include "impair_strip.h"
#include "impair_seg.h"

#define IMPAIR_IFNAMSIZ		16	/* IFNAMSIZ */
#define IMPAIR_LINE_MAX		512	/* bytes in one rule line */
#define IMPAIR_MAX_RULES	256	/* rules in one namespace */
#define IMPAIR_PPM		1000000	/* drop probability unit */
#define IMPAIR_FMT_MAX		512	/* enough for any formatted rule */

enum impair_dir {
	IMPAIR_DIR_ANY = 0,
	IMPAIR_DIR_INITIATOR,
	IMPAIR_DIR_RESPONDER,
};

enum impair_flags_match {
	IMPAIR_FLAGS_ALL = 0,
	IMPAIR_FLAGS_SYN,	/* SYN without ACK */
	IMPAIR_FLAGS_SYNACK,	/* SYN with ACK */
};

enum impair_strip_mode {
	IMPAIR_STRIP_NOP = 0,
	IMPAIR_STRIP_COMPACT,
};

/* Match fields present (struct impair_rule.match). */
#define IMPAIR_M_DIR		0x001
#define IMPAIR_M_IN		0x002
#define IMPAIR_M_OUT		0x004
#define IMPAIR_M_FLAGS		0x008
#define IMPAIR_M_FAMILY		0x010
#define IMPAIR_M_SRC		0x020
#define IMPAIR_M_DST		0x040
#define IMPAIR_M_SPORT		0x080
#define IMPAIR_M_DPORT		0x100
#define IMPAIR_M_AFTER		0x200
#define IMPAIR_M_DATASEG	0x400

/* Actions (struct impair_rule.act). */
#define IMPAIR_A_STRIP		0x001
#define IMPAIR_A_WSCALE		0x002
#define IMPAIR_A_MSS		0x004
#define IMPAIR_A_MSS_CLAMP	0x008
#define IMPAIR_A_WINDOW		0x010
#define IMPAIR_A_SEQRAND	0x020
#define IMPAIR_A_ECN_BLOCK	0x040
#define IMPAIR_A_ECN_CLEAR_SYN	0x080
#define IMPAIR_A_ECN_SET	0x100
#define IMPAIR_A_ECN_BLEACH	0x200
#define IMPAIR_A_DROP		0x400
#define IMPAIR_A_SPLIT		0x800
#define IMPAIR_A_COALESCE	0x1000

/* An address prefix; IPv4 in the first 4 bytes. */
struct impair_prefix {
	u8 addr[16];
	u8 plen;
	u8 family;		/* 4 or 6 */
};

struct impair_rule {
	/* match */
	u32 match;		/* IMPAIR_M_* */
	u8 dir;			/* enum impair_dir */
	u8 flags;		/* enum impair_flags_match */
	u8 family;		/* 0 (any), 4 or 6 */
	char in[IMPAIR_IFNAMSIZ];
	char out[IMPAIR_IFNAMSIZ];
	struct impair_prefix src;	/* the initiator's address */
	struct impair_prefix dst;	/* the responder's address */
	u16 sport_lo, sport_hi;		/* the initiator's port */
	u16 dport_lo, dport_hi;		/* the responder's port */
	u32 after;		/* first segment index the rule applies to */
	u32 dseg_lo, dseg_hi;	/* data segment indexes (from 1) */

	/* actions */
	u32 act;		/* IMPAIR_A_* */
	struct impair_kindmask strip;
	u8 strip_mode;		/* enum impair_strip_mode */
	u8 wscale;
	u16 mss;		/* for IMPAIR_A_MSS and IMPAIR_A_MSS_CLAMP */
	u16 window;
	bool seq_sack_fix;
	bool seq_both;
	u8 ecn;			/* INET_ECN_* codepoint for ecn-set */
	bool ecn_only_ect;
	u32 drop_ppm;		/* drop probability in parts per million */
	u16 split_at;		/* payload bytes of the first piece, 0: half */
	u8 split_opts;		/* enum impair_opts_to */
	u8 coalesce_opts;	/* enum impair_opts_to, not BOTH */
};

/* Why a line was rejected: the message and the offending token. */
struct impair_perr {
	const char *msg;
	const char *tok;	/* points into the parsed line; may be NULL */
	unsigned int toklen;
	unsigned int line;	/* 1-based, set by impair_batch_parse() */
};

enum impair_line_kind {
	IMPAIR_LINE_EMPTY = 0,	/* blank or comment only */
	IMPAIR_LINE_RULE,
	IMPAIR_LINE_FLUSH,
};

/*
 * Parse one line (@len bytes, no terminating NUL needed, a trailing
 * newline is allowed).  Returns an enum impair_line_kind, and fills *r for
 * IMPAIR_LINE_RULE; or -1 with *err filled (*r undefined).
 */
int impair_line_parse(const char *line, unsigned int len,
		      struct impair_rule *r, struct impair_perr *err);

/*
 * Parse a whole write: lines separated by '\n'.  Starting from @nkeep
 * existing rules (0 if the set starts empty), each "flush" line sets the
 * kept count to 0 and each rule line appends to @out[] (@max entries).
 * On success returns the number of new rules in @out and sets *nkeep to
 * the number of existing rules that survive (0 after any flush; the new
 * set is the first *nkeep old rules followed by @out).  On error returns
 * -1 with *err filled (err->line is the 1-based line number).
 */
int impair_batch_parse(const char *buf, unsigned int len,
		       struct impair_rule *out, unsigned int max,
		       unsigned int *nkeep, struct impair_perr *err);

/*
 * Canonical text of a rule (no newline), which impair_line_parse() reads
 * back into an identical rule.  Returns the length written (truncated to
 * @size - 1, always NUL-terminated when @size > 0).
 */
int impair_rule_format(const struct impair_rule *r, char *buf,
		       unsigned int size);

/* Name of an option kind as accepted by "strip", or NULL. */
const char *impair_opt_name(u8 kind);

/* What the matcher needs to know about a segment. */
struct impair_pkt {
	u8 family;		/* 4 or 6 */
	bool from_a;		/* sent by the initiator */
	bool seg_known;		/* seg is valid (the flow is tracked) */
	u8 tcp_flags;		/* byte 13 of the TCP header */
	const u8 *a_addr;	/* the initiator's address (4 or 16 bytes) */
	const u8 *b_addr;
	u16 a_port, b_port;
	const char *in;		/* input/output device names, may be NULL */
	const char *out;
	u32 seg;		/* index of this segment in its flow */
	u32 dseg;		/* index among its sender's data segments
				 * (from 1; 0: no payload), if seg_known
				 */
};

bool impair_rule_match(const struct impair_rule *r,
		       const struct impair_pkt *p);

/*
 * A GSO packet whose first segment is @p and whose last is its sender's
 * data segment @last_dseg (every segment of it has data): does @r match a
 * segment strictly inside it?  Only a dataseg range lying wholly inside
 * can match there and at neither end ("after N" is monotone).
 */
bool impair_rule_match_inside(const struct impair_rule *r,
			      const struct impair_pkt *p, u32 last_dseg);

/*
 * Without flow state: is the sender of a segment with TCP flags
 * @tcp_flags the initiator?  Known for a SYN (yes) and a SYN-ACK (no); a
 * guess (yes) for any other segment.
 */
static inline bool impair_sender_is_a(u8 tcp_flags)
{
	return (tcp_flags & (0x02 | 0x10)) != (0x02 | 0x10);	/* SYN, ACK */
}

/* Matches on the roles of the ends (A, the initiator, and B). */
#define IMPAIR_M_ROLES	(IMPAIR_M_DIR | IMPAIR_M_SRC | IMPAIR_M_DST | \
			 IMPAIR_M_SPORT | IMPAIR_M_DPORT)

/*
 * The rule needs per-flow state to match or act: the segment counts
 * ("after", "dataseg"), the random offsets (seqrand), the held segment
 * (coalesce), or the roles on segments other
 * than SYN and SYN-ACK.  A rule restricted to SYNs or to SYN-ACKs
 * (flags syn|synack) matches on roles without state: impair_sender_is_a()
 * knows them.  A rule set none of whose rules needs state is matched
 * without a flow table lookup.
 */
static inline bool impair_rule_needs_flow(const struct impair_rule *r)
{
	if ((r->match & (IMPAIR_M_AFTER | IMPAIR_M_DATASEG)) ||
	    (r->act & (IMPAIR_A_SEQRAND | IMPAIR_A_COALESCE)))
		return true;
	return (r->match & IMPAIR_M_ROLES) && r->flags == IMPAIR_FLAGS_ALL;
}

/*
 * On a GSO packet the rule may act on some segments only (a drop, an
 * "after" or "dataseg" boundary inside the packet), or on each segment
 * (split), so the packet may need segmenting.
 */
static inline bool impair_rule_may_split(const struct impair_rule *r)
{
	return (r->act & (IMPAIR_A_DROP | IMPAIR_A_ECN_BLOCK |
			  IMPAIR_A_SPLIT)) ||
	       r->after || (r->match & IMPAIR_M_DATASEG);
}

/*
 * A rule without any match keyword: impair_rule_match() is true for every
 * segment, whatever its flow, direction or devices.
 */
static inline bool impair_rule_matches_all(const struct impair_rule *r)
{
	return !r->match && !r->family && r->flags == IMPAIR_FLAGS_ALL &&
	       !r->after;
}

/*
 * An unconditional rule whose only action is to strip options: on a
 * segment without any of the options it strips it matches and does
 * nothing (impair_process()'s early exit; the segment is counted in segs
 * and segs_matched all the same).
 */
static inline bool impair_rule_strip_fast(const struct impair_rule *r)
{
	return r->act == IMPAIR_A_STRIP && impair_rule_matches_all(r);
}

#endif /* _IMPAIR_RULE_H */
