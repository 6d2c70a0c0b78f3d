// SPDX-License-Identifier: GPL-2.0
/*
 * Unit tests for the pure ECN proxy state machine (kmod/ecn_proxy/ecnp_fsm.c).
 *
 * Built from the repository root with
 *   cc -std=gnu11 -O1 -g -Wall -Wextra -Werror -fsanitize=address,undefined
 *      -fno-omit-frame-pointer -I kmod/common -o build/unit/<name> <this file>
 *      -lcmocka
 * and run with CMOCKA_MESSAGE_OUTPUT=TAP.  It includes ecnp_fsm.c itself, so
 * the static helpers of the state machine are visible here.
 *
 * Every row of both tables in ecn-proxy-reference.md has a test named after
 * it (test_p1_row* and test_p2_row*); each failure message names the row and
 * the variant (roles, feedback mode, sequence numbers near 2^32 or not).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdio.h>
#include <cmocka.h>

#include "../../ecn_proxy/ecnp_fsm.c"

/*
 * The quick step (ecnp_quick()) against the full one: every step of every
 * test below goes through checked_step(), which also steps a copy of the
 * flow with ecnp_step_full(), and, where ecnp_quick() takes the segment,
 * a second copy with it: same result, same state, byte for byte.  Counted
 * for test_quick_step_coverage().
 */
static unsigned long steps_all, steps_quick;

static u32 checked_step(struct ecnp_fsm *f, const struct ecnp_pkt *p,
			enum ecnp_feedback mode, bool dst_no_upgrade)
{
	struct ecnp_fsm full, quick;
	u32 want, got;

	memcpy(&full, f, sizeof(full));
	memcpy(&quick, f, sizeof(quick));
	want = ecnp_step_full(&full, p, mode, dst_no_upgrade);
	steps_all++;
	if (ecnp_quick(&quick, p, mode, &got)) {
		steps_quick++;
		if (got != want || memcmp(&quick, &full, sizeof(full))) {
			print_error("quick step differs: state %u dir %u "
				    "flags 0x%x seq %u ack %u len %u ecn %u: "
				    "0x%x, full 0x%x\n", f->state, p->dir,
				    p->flags, p->seq, p->ack, p->len, p->ecn,
				    got, want);
			fail();
		}
	}
	got = ecnp_fsm_step(f, p, mode, dst_no_upgrade);
	if (got != want || memcmp(f, &full, sizeof(full))) {
		print_error("ecnp_fsm_step() differs from the full step\n");
		fail();
	}
	return got;
}

#define ecnp_fsm_step checked_step

#define A	ECNP_DIR_A
#define B	ECNP_DIR_B
#define SYN	ECNP_TCP_SYN
#define ACK	ECNP_TCP_ACK
#define FIN	ECNP_TCP_FIN
#define RST	ECNP_TCP_RST
#define ECE	ECNP_TCP_ECE
#define CWR	ECNP_TCP_CWR
#define AE	ECNP_TCP_AE
#define NOT_ECT	ECNP_ECN_NOT_ECT
#define ECT1	ECNP_ECN_ECT_1
#define ECT0	ECNP_ECN_ECT_0
#define CE	ECNP_ECN_CE

#define SET_ECE		ECNP_ACT_SET_ECE
#define CLR_ECE		ECNP_ACT_CLEAR_ECE
#define SET_CWR		ECNP_ACT_SET_CWR
#define CLR_CWR		ECNP_ACT_CLEAR_CWR
#define SET_ECT0	ECNP_ACT_SET_ECT0
#define CLR_ECN		ECNP_ACT_CLEAR_ECN
#define DROP		ECNP_ACT_DROP
#define TRIM		ECNP_ACT_TRIM
#define CLAMP		ECNP_ACT_CLAMP_WIN
#define STASH		ECNP_ACT_STASH
/*
 * N's (Not-ECT) retransmission of L during a hold: with SACK its first
 * byte goes on, without SACK none of it
 */
#define SUPPRESS	(TRIM | SET_ECT0 | ECNP_EV_REXMIT_SUPPRESSED)
#define suppressed(fl)	(ecnp_sack_ok(&(fl)->f) ? SUPPRESS : \
			 DROP | ECNP_EV_REXMIT_SUPPRESSED)

#define MSS	1000u

/* ---- failure messages that name the row / variant ---------------------- */

static char ctx[256];

#define CTX(...) snprintf(ctx, sizeof(ctx), __VA_ARGS__)

static const char *act_str(u32 v)
{
	static const char * const names[] = {
		"SET_ECE", "CLEAR_ECE", "SET_CWR", "CLEAR_CWR", "SET_ECT0",
		"CLEAR_ECN", "DROP", "HOLD_ACK", "SET_TSECR", "INJECT_DUPACKS",
		"COPIES(1)", "COPIES(2)", "NO_DSACK",
		"TRIM", "?14", "?15", "OUT_BOTH", "OUT_NEITHER", "OUT_E_RESP",
		"OUT_E_INIT", "OUT_FALLBACK", "OUT_PASS", "CONG_SIGNAL",
		"SYN_FALLBACK", "CLOSED", "REXMIT_SUPPRESSED", "DUPACK_ABORT",
		"ACK_ABSORBED", "CONG_ANSWERED", "OUT_OF_WINDOW", "SIGNED",
		"NOT_DROPPED",
	};
	static char bufs[4][256];
	static unsigned int n;
	char *buf = bufs[n++ % 4];
	size_t len = 0;
	unsigned int i;

	buf[0] = '\0';
	for (i = 0; i < 32; i++) {
		if (!(v & (1u << i)))
			continue;
		len += snprintf(buf + len, sizeof(bufs[0]) - len, "%s%s",
				len ? "|" : "",
				i < ARRAY_SIZE(names) ? names[i] : "?");
	}
	if (!len)
		snprintf(buf, sizeof(bufs[0]), "0");
	return buf;
}

#define EXPECT(cond) do {						\
	if (!(cond)) {							\
		print_error("%s\n  %s:%d: expected %s\n", ctx,		\
			    __FILE__, __LINE__, #cond);			\
		fail();							\
	}								\
} while (0)

#define EXPECT_EQ(a, b) do {						\
	unsigned long long a_ = (a), b_ = (b);				\
	if (a_ != b_) {							\
		print_error("%s\n  %s:%d: %s = 0x%llx, expected %s = 0x%llx\n", \
			    ctx, __FILE__, __LINE__, #a, a_, #b, b_);	\
		fail();							\
	}								\
} while (0)

/* Compare a step result, printing the bits by name. */
#define EXPECT_R(r, want) do {						\
	u32 r_ = (r), w_ = (want);					\
	if (r_ != w_) {							\
		print_error("%s\n  %s:%d: result %s, expected %s\n", ctx,	\
			    __FILE__, __LINE__, act_str(r_), act_str(w_)); \
		fail();							\
	}								\
} while (0)

#define EXPECT_STATE(fsm, s) do {					\
	unsigned int st_ = (fsm)->state, sw_ = (s);			\
	if (st_ != sw_) {						\
		print_error("%s\n  %s:%d: state %s, expected %s\n", ctx,	\
			    __FILE__, __LINE__, ecnp_state_name(st_),	\
			    ecnp_state_name(sw_));			\
		fail();							\
	}								\
} while (0)

/* ---- packets and the plumbing's view of them ---------------------------- */

/* A segment with an unscaled window of 64 KB (no window scale option). */
static struct ecnp_pkt mkp(u8 dir, u16 flags, u32 seq, u32 ack, u32 len,
			   u8 ecn)
{
	struct ecnp_pkt p = {
		.seq = seq, .ack = ack, .len = len,
		.flags = flags, .dir = dir, .ecn = ecn,
		.seg_len = (u16)(len < 0xffff ? len : 0xffff),
		.win = 0xffff,
	};
	return p;
}

/* Apply header edits like the plumbing does. */
static struct ecnp_pkt apply(struct ecnp_pkt p, u32 act)
{
	if (act & SET_ECE)
		p.flags |= ECE;
	if (act & CLR_ECE)
		p.flags &= ~ECE;
	if (act & SET_CWR)
		p.flags |= CWR;
	if (act & CLR_CWR)
		p.flags &= ~CWR;
	if (act & SET_ECT0)
		p.ecn = ECT0;
	if (act & CLR_ECN)
		p.ecn = NOT_ECT;
	return p;
}

/* Linux's rules (tcp_ecn_rcv_syn / tcp_ecn_rcv_synack) */
static bool linux_syn_wants_ecn(const struct ecnp_pkt *p)
{
	return (p->flags & (ECE | CWR)) == (ECE | CWR);
}

static bool linux_synack_accepts_ecn(const struct ecnp_pkt *p)
{
	return (p->flags & ECE) && !(p->flags & CWR);
}

/* ---- a flow driven through the FSM -------------------------------------- */

struct flow {
	struct ecnp_fsm f;
	bool e_is_a;
	enum ecnp_feedback mode;
	u32 n_seq;	/* N's next new sequence number */
	u32 e_seq;	/* E's next new sequence number */
};

static u8 n_dir(const struct flow *fl)
{
	return fl->e_is_a ? B : A;
}

static u8 e_dir(const struct flow *fl)
{
	return fl->e_is_a ? A : B;
}

static u32 step(struct flow *fl, struct ecnp_pkt p)
{
	return ecnp_fsm_step(&fl->f, &p, fl->mode, false);
}

/* Full handshake into phase 2; checks every step. */
static void flow_open(struct flow *fl, bool e_is_a, enum ecnp_feedback mode,
		      u32 isn_a, u32 isn_b)
{
	u32 r;

	memset(fl, 0, sizeof(*fl));
	ecnp_fsm_init(&fl->f);
	fl->e_is_a = e_is_a;
	fl->mode = mode;
	if (e_is_a) {
		r = step(fl, mkp(A, SYN | ECE | CWR, isn_a, 0, 0, NOT_ECT));
		EXPECT_R(r, 0);
		EXPECT_STATE(&fl->f, ECNP_S_A_C);
		r = step(fl, mkp(B, SYN | ACK, isn_b, isn_a + 1, 0, NOT_ECT));
		EXPECT_R(r, SET_ECE | ECNP_EV_OUT_E_INIT);
	} else {
		r = step(fl, mkp(A, SYN, isn_a, 0, 0, NOT_ECT));
		EXPECT_R(r, SET_ECE | SET_CWR);
		EXPECT_STATE(&fl->f, ECNP_S_A_NC);
		r = step(fl, mkp(B, SYN | ACK | ECE, isn_b, isn_a + 1, 0,
				 NOT_ECT));
		EXPECT_R(r, CLR_ECE | ECNP_EV_OUT_E_RESP);
	}
	EXPECT_STATE(&fl->f, ECNP_S_WAIT_ACK);
	EXPECT_EQ(ecnp_fsm_e_is_a(&fl->f), e_is_a);
	r = step(fl, mkp(A, ACK, isn_a + 1, isn_b + 1, 0, NOT_ECT));
	EXPECT_R(r, 0);
	EXPECT_STATE(&fl->f, ECNP_S_DEFAULT);
	fl->n_seq = (e_is_a ? isn_b : isn_a) + 1;
	fl->e_seq = (e_is_a ? isn_a : isn_b) + 1;
	EXPECT_EQ(fl->f.n_nxt, fl->n_seq);
}

/* N sends @len bytes of new data (0: a pure ACK) with extra @flags. */
static u32 n_send(struct flow *fl, u16 flags, u32 len)
{
	struct ecnp_pkt p = mkp(n_dir(fl), ACK | flags, fl->n_seq, fl->e_seq,
				len, NOT_ECT);

	fl->n_seq += len + !!(flags & FIN);
	return step(fl, p);
}

/* N retransmits @len bytes at @seq. */
static u32 n_retx(struct flow *fl, u32 seq, u32 len)
{
	return step(fl, mkp(n_dir(fl), ACK, seq, fl->e_seq, len, NOT_ECT));
}

/* E sends @len bytes with @flags and IP ECN field @ecn, acknowledging @ack. */
static u32 e_send(struct flow *fl, u16 flags, u32 len, u8 ecn, u32 ack)
{
	struct ecnp_pkt p = mkp(e_dir(fl), ACK | flags, fl->e_seq, ack, len,
				ecn);

	fl->e_seq += len + !!(flags & FIN);
	return step(fl, p);
}

/*
 * The next segments, not stepped: from E (@len bytes, @flags, @ecn)
 * acking all N sent, and from N.
 */
static struct ecnp_pkt e_next(const struct flow *fl, u16 flags, u32 len,
			      u8 ecn)
{
	return mkp(e_dir(fl), ACK | flags, fl->e_seq, fl->n_seq, len, ecn);
}

static struct ecnp_pkt n_next(const struct flow *fl, u16 flags, u32 len)
{
	return mkp(n_dir(fl), ACK | flags, fl->n_seq, fl->e_seq, len,
		   NOT_ECT);
}

/* Reach a phase 2 state the way the reference table does. */
static void reach(struct flow *fl, u8 target)
{
	u32 r;

	r = n_send(fl, 0, MSS);
	EXPECT_R(r, fl->mode == ECNP_FB_NONE ? 0 : SET_ECT0);
	switch (target) {
	case ECNP_S_DEFAULT:
		break;
	case ECNP_S_ECE:
		r = e_send(fl, 0, MSS, CE, fl->n_seq);
		EXPECT_R(r, CLR_ECN);
		break;
	case ECNP_S_DUPACK:
		r = e_send(fl, ECE, 0, NOT_ECT, fl->n_seq);
		EXPECT_R(r, CLR_ECE);
		break;
	case ECNP_S_ECE_DUPACK:
		r = e_send(fl, ECE, MSS, CE, fl->n_seq);
		EXPECT_R(r, CLR_ECE | CLR_ECN);
		break;
	default:
		fail();
	}
	EXPECT_STATE(&fl->f, target);
}

struct variant {
	const char *name;
	bool e_is_a;
	enum ecnp_feedback mode;
	u32 isn_a;
	u32 isn_b;
};

/*
 * The reference rows, in drop mode (the signal is the drop of the next
 * new-data segment).  dupack mode, whose signal is given on an E->N ACK,
 * has its own tests (test_dupack_*).
 */
static const struct variant p2_variants[] = {
	{ "E=B responder, drop", false, ECNP_FB_DROP, 0x1000, 0x80000000u },
	{ "E=A initiator, drop", true, ECNP_FB_DROP, 0x1000, 0x80000000u },
	{ "E=B responder, drop, other ISNs", false, ECNP_FB_DROP, 0x1000,
	  0x7000 },
	{ "E=A initiator, drop, other ISNs", true, ECNP_FB_DROP, 0x7000,
	  0x1000 },
	{ "E=B, drop, seq wraps", false, ECNP_FB_DROP,
	  0xfffffc00u, 0xffffff00u },
	{ "E=A, drop, seq wraps", true, ECNP_FB_DROP,
	  0xfffffe00u, 0xfffffc00u },
};

static void run_p2_row(const char *row, void (*body)(struct flow *fl))
{
	struct flow fl;
	size_t i;

	for (i = 0; i < ARRAY_SIZE(p2_variants); i++) {
		const struct variant *v = &p2_variants[i];

		CTX("%s [%s]", row, v->name);
		flow_open(&fl, v->e_is_a, v->mode, v->isn_a, v->isn_b);
		body(&fl);
	}
}

/*
 * N's pure ACK overtakes data N sent before it (two CPUs in N's host): its
 * sequence number is ahead of that data, which is still new and must be
 * ECT (proxy_idle reload-v6, proxy_modes drop-v6: one segment in 2000
 * went out Not-ECT).  A pure ACK does not move n_nxt.
 */
static void p2_ect_on_data_overtaken_by_pure_ack(struct flow *fl)
{
	u32 seq = fl->n_seq, nxt, r;

	EXPECT(n_send(fl, 0, MSS) & SET_ECT0);
	nxt = fl->f.n_nxt;
	/* N's duplicate ACK, sent after the next segment, arrives first */
	r = step(fl, mkp(n_dir(fl), ACK, fl->n_seq + MSS, fl->e_seq, 0,
			 NOT_ECT));
	EXPECT(!(r & SET_ECT0));
	EXPECT_EQ(fl->f.n_nxt, nxt);
	/* the overtaken segment: new data */
	EXPECT(n_send(fl, 0, MSS) & SET_ECT0);
	/* a retransmission stays Not-ECT */
	EXPECT(!(n_retx(fl, seq, MSS) & SET_ECT0));
}

static void test_ect_on_data_overtaken_by_pure_ack(void **state)
{
	(void)state;
	run_p2_row("N's pure ACK ahead of its late data", p2_ect_on_data_overtaken_by_pure_ack);
}

/*
 * N's host reorders two segments: the later one opens a gap at the proxy,
 * the earlier one fills it and is new to E's path: ECT, or RED drops it
 * early and a dupack signal that claimed it SACKed ends in reneging and
 * an RTO (proxy_dupack, 2026-11-26).  A retransmission below the gap
 * stays Not-ECT.
 */
static void p2_ect_on_gap_fill(struct flow *fl)
{
	u32 seq = fl->n_seq, r;

	EXPECT(n_send(fl, 0, MSS) & SET_ECT0);
	/* the second segment overtakes the first... */
	r = step(fl, mkp(n_dir(fl), ACK, seq + 2 * MSS, fl->e_seq, MSS,
			 NOT_ECT));
	EXPECT(r & SET_ECT0);
	EXPECT(fl->f.dflags & ECNP_DF_GAP);
	/* ...which fills the gap: ECT */
	r = step(fl, mkp(n_dir(fl), ACK, seq + MSS, fl->e_seq, MSS, NOT_ECT));
	EXPECT(r & SET_ECT0);
	EXPECT(!(fl->f.dflags & ECNP_DF_GAP));
	fl->n_seq = seq + 3 * MSS;
	/* below the closed gap: a retransmission, Not-ECT */
	EXPECT(!(n_retx(fl, seq + MSS, MSS) & SET_ECT0));
	EXPECT(n_send(fl, 0, MSS) & SET_ECT0);
}

static void test_ect_on_gap_fill(void **state)
{
	(void)state;
	run_p2_row("N's reordered segment fills a gap at the proxy", p2_ect_on_gap_fill);
}

/* ======================= Phase 1: reference rows ======================== */

static void test_p1_row1_init_ecn_syn_to_a_c(void **state)
{
	struct ecnp_fsm f;
	struct ecnp_pkt p = mkp(A, SYN | ECE | CWR, 100, 0, 0, NOT_ECT);
	u32 r;

	(void)state;
	CTX("P1 row 1: INIT | ECN-setup SYN from A | A_C | none");
	ecnp_fsm_init(&f);
	r = ecnp_fsm_step(&f, &p, ECNP_FB_DROP, false);
	EXPECT_R(r, 0);
	EXPECT_STATE(&f, ECNP_S_A_C);
	EXPECT_EQ(f.a_isn, 100);
	EXPECT(!ecnp_fsm_proxied(&f));
}

static void test_p1_row2_init_plain_syn_upgraded_to_a_nc(void **state)
{
	static const u16 syn_flags[] = { 0, ECE, CWR, ECE | ECNP_TCP_PSH };
	struct ecnp_fsm f;
	struct ecnp_pkt p, seen;
	size_t i;
	u32 r;

	(void)state;
	for (i = 0; i < ARRAY_SIZE(syn_flags); i++) {
		CTX("P1 row 2: INIT | plain SYN from A | A_NC | set ECE+CWR [flags 0x%x]",
		    syn_flags[i]);
		ecnp_fsm_init(&f);
		p = mkp(A, SYN | syn_flags[i], 0xfffffffeu, 0, 0, NOT_ECT);
		r = ecnp_fsm_step(&f, &p, ECNP_FB_DROP, false);
		EXPECT_STATE(&f, ECNP_S_A_NC);
		EXPECT_EQ(r & ECNP_EV_MASK, 0);
		/* only the bits that change, never ECT on a SYN */
		EXPECT_EQ(r & ~(u32)(SET_ECE | SET_CWR), 0);
		seen = apply(p, r);
		EXPECT(linux_syn_wants_ecn(&seen));
		EXPECT_EQ(seen.ecn, NOT_ECT);
		EXPECT(f.hflags & ECNP_HF_SYN_UP);
		if (!syn_flags[i])
			EXPECT_R(r, ECNP_ACT_SYN_ECN_SETUP);
	}
}

static void test_p1_row3_a_c_ecn_synack_same_both(void **state)
{
	struct ecnp_fsm f;
	struct ecnp_pkt syn = mkp(A, SYN | ECE | CWR, 100, 0, 0, NOT_ECT);
	struct ecnp_pkt sa = mkp(B, SYN | ACK | ECE, 5000, 101, 0, NOT_ECT);
	u32 r;

	(void)state;
	CTX("P1 row 3: A_C | ECN-setup SYN-ACK | SAME (both) | none");
	ecnp_fsm_init(&f);
	ecnp_fsm_step(&f, &syn, ECNP_FB_DROP, false);
	r = ecnp_fsm_step(&f, &sa, ECNP_FB_DROP, false);
	EXPECT_R(r, ECNP_EV_OUT_BOTH);
	EXPECT_STATE(&f, ECNP_S_SAME);
}

static void test_p1_row4_a_c_plain_synack_upgraded_wait_ack(void **state)
{
	static const u16 sa_flags[] = { 0, CWR, ECE | CWR };
	struct ecnp_fsm f;
	struct ecnp_pkt syn = mkp(A, SYN | ECE | CWR, 100, 0, 0, NOT_ECT);
	struct ecnp_pkt sa, seen;
	size_t i;
	u32 r;

	(void)state;
	for (i = 0; i < ARRAY_SIZE(sa_flags); i++) {
		CTX("P1 row 4: A_C | plain SYN-ACK | WAIT_ACK E=A | upgrade (ours) [0x%x]",
		    sa_flags[i]);
		ecnp_fsm_init(&f);
		ecnp_fsm_step(&f, &syn, ECNP_FB_DROP, false);
		sa = mkp(B, SYN | ACK | sa_flags[i], 5000, 101, 0, NOT_ECT);
		r = ecnp_fsm_step(&f, &sa, ECNP_FB_DROP, false);
		EXPECT_STATE(&f, ECNP_S_WAIT_ACK);
		EXPECT(ecnp_fsm_e_is_a(&f));
		EXPECT(ecnp_fsm_proxied(&f));
		EXPECT_EQ(r & ECNP_EV_MASK, ECNP_EV_OUT_E_INIT);
		seen = apply(sa, r);
		EXPECT(linux_synack_accepts_ecn(&seen));
		EXPECT_EQ(seen.ecn, NOT_ECT);
		EXPECT_EQ(f.b_isn, 5000);
	}
}

static void test_p1_row5_a_nc_ecn_synack_downgraded_wait_ack(void **state)
{
	static const u8 sa_ecn[] = { NOT_ECT, ECT0, ECT1 };
	struct ecnp_fsm f;
	struct ecnp_pkt syn = mkp(A, SYN, 100, 0, 0, NOT_ECT);
	struct ecnp_pkt sa, seen;
	size_t i;
	u32 r;

	(void)state;
	for (i = 0; i < ARRAY_SIZE(sa_ecn); i++) {
		CTX("P1 row 5: A_NC | ECN SYN-ACK | WAIT_ACK E=B | downgrade [ecn %u]",
		    sa_ecn[i]);
		ecnp_fsm_init(&f);
		r = ecnp_fsm_step(&f, &syn, ECNP_FB_DROP, false);
		seen = apply(syn, r);
		EXPECT(linux_syn_wants_ecn(&seen));
		sa = mkp(B, SYN | ACK | ECE, 5000, 101, 0, sa_ecn[i]);
		r = ecnp_fsm_step(&f, &sa, ECNP_FB_DROP, false);
		EXPECT_STATE(&f, ECNP_S_WAIT_ACK);
		EXPECT(!ecnp_fsm_e_is_a(&f));
		EXPECT_EQ(r & ECNP_EV_MASK, ECNP_EV_OUT_E_RESP);
		seen = apply(sa, r);
		EXPECT(!linux_synack_accepts_ecn(&seen));
		EXPECT_EQ(seen.flags & (ECE | CWR), 0);
		/* E->N: Not-ECT */
		EXPECT_EQ(seen.ecn, NOT_ECT);
	}
}

static void test_p1_row6_a_nc_plain_synack_same_neither(void **state)
{
	struct ecnp_fsm f;
	struct ecnp_pkt syn = mkp(A, SYN, 100, 0, 0, NOT_ECT);
	struct ecnp_pkt sa = mkp(B, SYN | ACK, 5000, 101, 0, NOT_ECT);
	u32 r;

	(void)state;
	CTX("P1 row 6: A_NC | plain SYN-ACK | SAME (neither) | none");
	ecnp_fsm_init(&f);
	ecnp_fsm_step(&f, &syn, ECNP_FB_DROP, false);
	r = ecnp_fsm_step(&f, &sa, ECNP_FB_DROP, false);
	EXPECT_R(r, ECNP_EV_OUT_NEITHER);
	EXPECT_STATE(&f, ECNP_S_SAME);
}

static void test_p1_row7_wait_ack_handshake_ack_to_phase2(void **state)
{
	struct flow fl;
	size_t i;

	(void)state;
	for (i = 0; i < ARRAY_SIZE(p2_variants); i++) {
		const struct variant *v = &p2_variants[i];

		CTX("P1 row 7: WAIT_ACK | handshake ACK from A | phase 2 [%s]",
		    v->name);
		/* flow_open() checks the transition and n_nxt */
		flow_open(&fl, v->e_is_a, v->mode, v->isn_a, v->isn_b);
		EXPECT(ecnp_fsm_in_phase2(&fl.f));
		EXPECT_EQ(fl.f.flags & (ECNP_FL_CWR_PENDING |
					ECNP_FL_IN_WINDOW), 0);
	}
}

/* Handshake ACK from A carrying data: phase 2 rules apply to it at once. */
static void test_p1_row7_handshake_ack_with_data(void **state)
{
	struct ecnp_fsm f;
	struct ecnp_pkt syn = mkp(A, SYN, 100, 0, 0, NOT_ECT);
	struct ecnp_pkt sa = mkp(B, SYN | ACK | ECE, 5000, 101, 0, NOT_ECT);
	struct ecnp_pkt ack = mkp(A, ACK, 101, 5001, MSS, NOT_ECT);
	u32 r;

	(void)state;
	CTX("P1 row 7: WAIT_ACK | ACK from A (N) with data | DEFAULT | ECT");
	ecnp_fsm_init(&f);
	ecnp_fsm_step(&f, &syn, ECNP_FB_DROP, false);
	ecnp_fsm_step(&f, &sa, ECNP_FB_DROP, false);
	r = ecnp_fsm_step(&f, &ack, ECNP_FB_DROP, false);
	EXPECT_R(r, SET_ECT0);
	EXPECT_STATE(&f, ECNP_S_DEFAULT);
}

static void check_same_untouched(struct ecnp_fsm *f)
{
	struct ecnp_pkt pk[] = {
		mkp(A, ACK, 101, 5001, MSS, NOT_ECT),
		mkp(A, ACK, 1101, 5001, MSS, ECT0),
		mkp(B, ACK, 5001, 2101, MSS, CE),
		mkp(A, ACK | ECE, 2101, 6001, 0, NOT_ECT),
		mkp(B, ACK | CWR, 6001, 2101, MSS, ECT1),
		mkp(A, ACK, 101, 6001, MSS, NOT_ECT),	/* retransmission */
		mkp(B, SYN | ACK | ECE, 5000, 101, 0, NOT_ECT),
		mkp(B, SYN | ACK, 5000, 101, 0, NOT_ECT),
		mkp(A, SYN, 100, 0, 0, NOT_ECT),
		mkp(A, SYN | ECE | CWR, 100, 0, 0, NOT_ECT),
		mkp(A, SYN, 7777, 0, 0, NOT_ECT),	/* other ISN */
		mkp(B, SYN, 9999, 0, 0, NOT_ECT),
		mkp(A, ACK | FIN, 2101, 7001, 0, NOT_ECT),
	};
	struct ecnp_fsm prev;
	size_t i;
	u32 r;

	for (i = 0; i < ARRAY_SIZE(pk); i++) {
		prev = *f;
		r = ecnp_fsm_step(f, &pk[i], ECNP_FB_DROP, false);
		EXPECT_R(r & ECNP_ACT_MASK, 0);
		EXPECT_STATE(f, ECNP_S_SAME);
		/* only the window model follows the connection */
		memcpy(prev.win, f->win, sizeof(prev.win));
		if (!(pk[i].flags & FIN))
			EXPECT(!memcmp(&prev, f, sizeof(*f)));
	}
}

static void test_p1_row8_same_anything_untouched(void **state)
{
	struct ecnp_fsm f;
	struct ecnp_pkt syn, sa;

	(void)state;
	CTX("P1 row 8: SAME (both) | anything | SAME | none");
	ecnp_fsm_init(&f);
	syn = mkp(A, SYN | ECE | CWR, 100, 0, 0, NOT_ECT);
	sa = mkp(B, SYN | ACK | ECE, 5000, 101, 0, NOT_ECT);
	ecnp_fsm_step(&f, &syn, ECNP_FB_DROP, false);
	ecnp_fsm_step(&f, &sa, ECNP_FB_DROP, false);
	check_same_untouched(&f);

	CTX("P1 row 8: SAME (neither) | anything | SAME | none");
	ecnp_fsm_init(&f);
	syn = mkp(A, SYN, 100, 0, 0, NOT_ECT);
	sa = mkp(B, SYN | ACK, 5000, 101, 0, NOT_ECT);
	ecnp_fsm_step(&f, &syn, ECNP_FB_DROP, false);
	ecnp_fsm_step(&f, &sa, ECNP_FB_DROP, false);
	check_same_untouched(&f);
}

/*
 * The plumbing's fast exit (tcpfwd.h): a decided flow's segments without
 * SYN, FIN or RST are not stepped, so after ecnp_fsm_untrack() the flow
 * must take a FIN or RST wherever it lies (its windows fell behind), and
 * a SYN from A after both FINs or a RST must still start a new connection.
 */
static void test_untrack_decided_flow(void **state)
{
	static const struct {
		const char *name;
		u16 syn_flags, sa_flags;
	} kinds[] = {
		{ "both", SYN | ECE | CWR, SYN | ACK | ECE },
		{ "neither", SYN, SYN | ACK },
	};
	struct ecnp_fsm f, kept;
	struct ecnp_pkt p;
	size_t i;
	u32 r;

	(void)state;
	for (i = 0; i < ARRAY_SIZE(kinds); i++) {
		CTX("untrack (%s): the windows fell 3 GB behind", kinds[i].name);
		ecnp_fsm_init(&f);
		p = mkp(A, kinds[i].syn_flags, 100, 0, 0, NOT_ECT);
		ecnp_fsm_step(&f, &p, ECNP_FB_DROP, false);
		p = mkp(B, kinds[i].sa_flags, 5000, 101, 0, NOT_ECT);
		ecnp_fsm_step(&f, &p, ECNP_FB_DROP, false);
		EXPECT_STATE(&f, ECNP_S_SAME);
		EXPECT(ecnp_fsm_needs_nothing(&f));
		kept = f;
		/* without it: a FIN far beyond what was seen changes nothing */
		p = mkp(A, ACK | FIN, 100 + 3000000000u, 5001, 0, NOT_ECT);
		EXPECT_R(ecnp_fsm_step(&kept, &p, ECNP_FB_DROP, false),
			 ECNP_EV_OUT_OF_WINDOW);
		ecnp_fsm_untrack(&f);
		EXPECT_R(ecnp_fsm_step(&f, &p, ECNP_FB_DROP, false), 0);
		EXPECT_STATE(&f, ECNP_S_SAME);
		p = mkp(B, ACK | FIN, 5000 + 2000000000u, 101 + 3000000001u, 0,
			NOT_ECT);
		r = ecnp_fsm_step(&f, &p, ECNP_FB_DROP, false);
		EXPECT_R(r, ECNP_EV_CLOSED);
		CTX("untrack (%s): a new connection after both FINs",
		    kinds[i].name);
		p = mkp(A, SYN, 777, 0, 0, NOT_ECT);
		r = ecnp_fsm_step(&f, &p, ECNP_FB_DROP, false);
		EXPECT_R(r, SET_ECE | SET_CWR);
		EXPECT_STATE(&f, ECNP_S_A_NC);
		EXPECT(!ecnp_fsm_needs_nothing(&f));

		CTX("untrack (%s): a RST anywhere closes", kinds[i].name);
		f = kept;
		ecnp_fsm_untrack(&f);
		p = mkp(B, RST, 5000 + 123456789u, 0, 0, NOT_ECT);
		EXPECT_R(ecnp_fsm_step(&f, &p, ECNP_FB_DROP, false),
			 ECNP_EV_CLOSED);
		EXPECT_STATE(&f, ECNP_S_CLOSED);
		EXPECT(!ecnp_fsm_needs_nothing(&f));
	}

	CTX("needs nothing: SAME and PASS only");
	for (i = 0; i < ECNP_S_NR; i++) {
		f.state = (u8)i;
		EXPECT_EQ(ecnp_fsm_needs_nothing(&f),
			  i == ECNP_S_SAME || i == ECNP_S_PASS);
	}
}

/* tcpfwd_pure.h: which segments may take the fast exit, and when. */
static void test_fast_exit_rules(void **state)
{
	static const unsigned long ts[] = { 0, 1, 3, 4, 1000, 10000 };
	const unsigned long wrap = (unsigned long)-1;
	unsigned int fl;
	size_t i;

	(void)state;
	CTX("fast exit: never with SYN, FIN or RST");
	for (fl = 0; fl < 0x100; fl++)
		EXPECT_EQ(tcpfwd_fast_flags_ok((u8)fl),
			  !(fl & (SYN | FIN | RST)));

	for (i = 0; i < ARRAY_SIZE(ts); i++) {
		unsigned long t = ts[i], base;
		unsigned int k;

		/* around 0, and across the wrap of jiffies */
		for (k = 0; k < 2; k++) {
			base = k ? wrap - t / 2 : 5;
			CTX("refresh: timeout %lu, set at %lu", t, base);
			/* just set: not due until a quarter has gone */
			EXPECT(!tcpfwd_refresh_due(base + t, base, t) || !t);
			EXPECT(!tcpfwd_refresh_due(base + t, base + t / 4, t) ||
			       !t);
			EXPECT(tcpfwd_refresh_due(base + t, base + t / 4 + 1,
						  t));
			/* at and past the expiry: due */
			EXPECT(tcpfwd_refresh_due(base + t, base + t + 1, t));
			EXPECT(tcpfwd_refresh_due(base + t, base + 3 * t + 7,
						  t));
			/* set from a longer timeout than this one: not due */
			EXPECT(!tcpfwd_refresh_due(base + 2 * t + 1, base, t));
		}
	}
}

/*
 * The conntrack-assisted bypass (ecnp_hook(), ecnp_process(),
 * ecnp_ct_path()): a segment of a connection conntrack says needs nothing
 * passes unless it is a FIN or RST without SYN; a SYN passes too, never
 * stepped, so that no SYN (a spoofed one) can start a decided
 * connection's machine over.  Stepped, a SYN does start it over:
 * ecnp_step() then clears the bit of an entry conntrack made for the new
 * connection (conntrack gives one its own entry).
 */
static void test_ct_bypass_rules(void **state)
{
	struct flow fl;
	unsigned int f;
	u32 r;

	/* by SYN, FIN, RST: the rule as a truth table */
	static const struct {
		u8 flags;
		enum ecnp_ct_path want;
	} table[] = {
		{ 0, ECNP_CT_PASS },
		{ SYN, ECNP_CT_PASS },
		{ FIN, ECNP_CT_SLOW },
		{ RST, ECNP_CT_SLOW },
		{ FIN | RST, ECNP_CT_SLOW },
		{ SYN | FIN, ECNP_CT_PASS },
		{ SYN | RST, ECNP_CT_PASS },
		{ SYN | FIN | RST, ECNP_CT_PASS },
	};
	unsigned int i;

	(void)state;
	for (i = 0; i < ARRAY_SIZE(table); i++) {
		CTX("ct bypass: table row %u", i);
		EXPECT_EQ(ecnp_ct_path(table[i].flags), table[i].want);
	}
	/* the other five flags change nothing */
	for (f = 0; f < 0x100; f++) {
		CTX("ct bypass: flags 0x%02x", f);
		EXPECT_EQ(ecnp_ct_path((u8)f),
			  ecnp_ct_path((u8)(f & (SYN | FIN | RST))));
		/* what the fast exit passes passes here too */
		if (tcpfwd_fast_flags_ok((u8)f))
			EXPECT_EQ(ecnp_ct_path((u8)f), ECNP_CT_PASS);
	}
	EXPECT_EQ(ecnp_ct_path(SYN | ACK), ECNP_CT_PASS);
	EXPECT_EQ(ecnp_ct_path(FIN | ACK), ECNP_CT_SLOW);

	/* a neither-ECN flow: decided at once, undecided by a stepped SYN */
	CTX("ct bypass: neither ECN, then a new connection");
	memset(&fl, 0, sizeof(fl));
	ecnp_fsm_init(&fl.f);
	fl.mode = ECNP_FB_DUPACK;
	r = step(&fl, mkp(A, SYN, 100, 0, 0, NOT_ECT));
	r = step(&fl, mkp(B, SYN | ACK, 900, 101, 0, NOT_ECT));
	EXPECT(ecnp_fsm_needs_nothing(&fl.f));
	ecnp_fsm_untrack(&fl.f);
	r = step(&fl, mkp(A, ACK | RST, 101, 901, 0, NOT_ECT));
	r = step(&fl, mkp(A, SYN, 5000, 0, 0, NOT_ECT));
	(void)r;
	EXPECT(!ecnp_fsm_needs_nothing(&fl.f));
}

/* ======================= Phase 2: reference rows ======================== */

static void p2_row01(struct flow *fl)
{
	EXPECT_R(n_send(fl, 0, MSS), SET_ECT0);
	EXPECT_STATE(&fl->f, ECNP_S_DEFAULT);
	EXPECT_R(n_send(fl, 0, 0), 0);
	EXPECT_STATE(&fl->f, ECNP_S_DEFAULT);
	EXPECT_R(n_send(fl, ECNP_TCP_PSH, 1), SET_ECT0);
	EXPECT_STATE(&fl->f, ECNP_S_DEFAULT);
}

static void p2_row02(struct flow *fl)
{
	EXPECT_R(n_send(fl, 0, MSS), SET_ECT0);
	EXPECT_R(e_send(fl, 0, MSS, CE, fl->n_seq), CLR_ECN);
	EXPECT_STATE(&fl->f, ECNP_S_ECE);
	EXPECT_EQ(fl->f.flags & ECNP_FL_IN_WINDOW, 0);
	/* no E packet without CE/ECE/CWR leaves DEFAULT/ECE */
	EXPECT_R(e_send(fl, 0, MSS, ECT0, fl->n_seq), CLR_ECN);
	EXPECT_STATE(&fl->f, ECNP_S_ECE);
}

static void p2_row03(struct flow *fl)
{
	u32 ack;

	EXPECT_R(n_send(fl, 0, MSS), SET_ECT0);
	EXPECT_R(n_send(fl, 0, MSS), SET_ECT0);
	ack = fl->n_seq - MSS;
	EXPECT_R(e_send(fl, ECE, MSS, CE, ack), CLR_ECE | CLR_ECN);
	EXPECT_STATE(&fl->f, ECNP_S_ECE_DUPACK);
	EXPECT_EQ(fl->f.saved_ack, ack);
	EXPECT_EQ(fl->f.dup_cnt, 0);
	EXPECT_EQ(fl->f.recover, fl->n_seq);
}

static void p2_row04(struct flow *fl)
{
	u32 ack;

	EXPECT_R(n_send(fl, 0, MSS), SET_ECT0);
	ack = fl->n_seq;
	EXPECT_R(e_send(fl, ECE, 0, NOT_ECT, ack), CLR_ECE);
	EXPECT_STATE(&fl->f, ECNP_S_DUPACK);
	EXPECT_EQ(fl->f.saved_ack, ack);
	EXPECT_EQ(fl->f.dup_cnt, 0);
	EXPECT_EQ(fl->f.recover, fl->n_seq);
	/* without CE: no echo toward E */
	EXPECT_R(n_send(fl, 0, 0), 0);
}

static void p2_row05(struct flow *fl)
{
	u32 old = fl->n_seq;

	reach(fl, ECNP_S_DUPACK);
	EXPECT_R(n_send(fl, 0, 0), 0);			/* pure ACK */
	EXPECT_STATE(&fl->f, ECNP_S_DUPACK);
	EXPECT_R(n_retx(fl, old, MSS), 0);		/* retransmission */
	EXPECT_STATE(&fl->f, ECNP_S_DUPACK);
	EXPECT_R(n_send(fl, FIN, 0), 0);		/* bare FIN */
	EXPECT_STATE(&fl->f, ECNP_S_DUPACK);
}

static void p2_row06(struct flow *fl)
{
	u32 saved;

	reach(fl, ECNP_S_DUPACK);
	saved = fl->f.saved_ack;
	/* no ACK number rewrite on E's real segments (see FSM.md) */
	EXPECT_R(e_send(fl, 0, 0, NOT_ECT, fl->n_seq), 0);
	EXPECT_STATE(&fl->f, ECNP_S_DUPACK);
	EXPECT_R(e_send(fl, ECE, MSS, ECT0, fl->n_seq), CLR_ECE | CLR_ECN);
	EXPECT_STATE(&fl->f, ECNP_S_DUPACK);
	EXPECT_EQ(fl->f.saved_ack, saved);
	EXPECT_R(e_send(fl, 0, MSS, CE, fl->n_seq), CLR_ECN);
	EXPECT_STATE(&fl->f, ECNP_S_ECE_DUPACK);
}

static void p2_row07(struct flow *fl)
{
	reach(fl, ECNP_S_DUPACK);
	/* the signal (drop mode: one dropped new-data segment) ends DUPACK */
	EXPECT_R(n_send(fl, 0, MSS), DROP | ECNP_EV_CONG_SIGNAL);
	EXPECT_STATE(&fl->f, ECNP_S_DEFAULT);
	/* then CWR toward E, once */
	EXPECT_R(n_send(fl, 0, MSS), SET_ECT0 | SET_CWR);
	EXPECT_R(n_send(fl, 0, MSS), SET_ECT0);
	EXPECT_STATE(&fl->f, ECNP_S_DEFAULT);
}

static void p2_row07_ce(struct flow *fl)
{
	reach(fl, ECNP_S_DUPACK);
	EXPECT_R(e_send(fl, 0, MSS, CE, fl->n_seq - MSS), CLR_ECN);
	EXPECT_R(n_send(fl, 0, MSS), DROP | ECNP_EV_CONG_SIGNAL);
	EXPECT_STATE(&fl->f, ECNP_S_ECE);
	EXPECT_R(n_send(fl, 0, MSS), SET_ECT0 | SET_CWR | SET_ECE);
	EXPECT_R(n_send(fl, 0, MSS), SET_ECT0 | SET_ECE);
	EXPECT_STATE(&fl->f, ECNP_S_ECE);
}

static void p2_row08(struct flow *fl)
{
	u32 old = fl->n_seq;

	reach(fl, ECNP_S_ECE_DUPACK);
	EXPECT_R(n_send(fl, 0, 0), SET_ECE);
	EXPECT_STATE(&fl->f, ECNP_S_ECE_DUPACK);
	EXPECT_R(n_retx(fl, old, MSS), SET_ECE);
	EXPECT_STATE(&fl->f, ECNP_S_ECE_DUPACK);
}

static void p2_row09(struct flow *fl)
{
	reach(fl, ECNP_S_ECE_DUPACK);
	EXPECT_R(e_send(fl, 0, 0, NOT_ECT, fl->n_seq), 0);
	EXPECT_STATE(&fl->f, ECNP_S_ECE_DUPACK);
	EXPECT_R(e_send(fl, ECE, MSS, ECT0, fl->n_seq), CLR_ECE | CLR_ECN);
	EXPECT_STATE(&fl->f, ECNP_S_ECE_DUPACK);
	EXPECT_R(e_send(fl, CWR, MSS, ECT0, fl->n_seq), CLR_CWR | CLR_ECN);
	EXPECT_STATE(&fl->f, ECNP_S_DUPACK);
	/* echo stopped */
	EXPECT_R(n_send(fl, 0, 0), 0);
}

static void p2_row10(struct flow *fl)
{
	reach(fl, ECNP_S_ECE_DUPACK);
	EXPECT_R(n_send(fl, 0, MSS), DROP | ECNP_EV_CONG_SIGNAL);
	EXPECT_STATE(&fl->f, ECNP_S_ECE);
	EXPECT_R(n_send(fl, 0, MSS), SET_ECE | SET_CWR | SET_ECT0);
	EXPECT_STATE(&fl->f, ECNP_S_ECE);
}

static void p2_row10_cwr(struct flow *fl)
{
	reach(fl, ECNP_S_ECE_DUPACK);
	EXPECT_R(e_send(fl, CWR, MSS, ECT0, fl->n_seq), CLR_CWR | CLR_ECN);
	EXPECT_STATE(&fl->f, ECNP_S_DUPACK);
	EXPECT_R(n_send(fl, 0, MSS), DROP | ECNP_EV_CONG_SIGNAL);
	EXPECT_STATE(&fl->f, ECNP_S_DEFAULT);
	EXPECT_R(n_send(fl, 0, MSS), SET_CWR | SET_ECT0);
}

static void p2_row11(struct flow *fl)
{
	u32 old = fl->n_seq;

	reach(fl, ECNP_S_ECE);
	EXPECT_R(n_send(fl, 0, MSS), SET_ECE | SET_ECT0);
	EXPECT_STATE(&fl->f, ECNP_S_ECE);
	EXPECT_R(n_send(fl, 0, 0), SET_ECE);
	EXPECT_R(n_retx(fl, old, MSS), SET_ECE);
	EXPECT_STATE(&fl->f, ECNP_S_ECE);
	/* N setting ECE itself: nothing to change */
	EXPECT_R(n_send(fl, ECE, 0), 0);
}

static void p2_row12(struct flow *fl)
{
	reach(fl, ECNP_S_ECE);
	EXPECT_R(e_send(fl, CWR, MSS, ECT0, fl->n_seq), CLR_CWR | CLR_ECN);
	EXPECT_STATE(&fl->f, ECNP_S_DEFAULT);
	EXPECT_R(n_send(fl, 0, 0), 0);
	EXPECT_R(n_send(fl, 0, MSS), SET_ECT0);
}

static void p2_row13(struct flow *fl)
{
	u32 ack;

	reach(fl, ECNP_S_ECE);
	ack = fl->n_seq;
	EXPECT_R(e_send(fl, CWR | ECE, MSS, ECT0, ack),
		 CLR_CWR | CLR_ECE | CLR_ECN);
	EXPECT_STATE(&fl->f, ECNP_S_DUPACK);
	EXPECT_EQ(fl->f.saved_ack, ack);
	EXPECT_EQ(fl->f.dup_cnt, 0);
}

static void p2_row14(struct flow *fl)
{
	u32 ack;

	reach(fl, ECNP_S_ECE);
	ack = fl->n_seq;
	EXPECT_R(e_send(fl, ECE, 0, NOT_ECT, ack), CLR_ECE);
	EXPECT_STATE(&fl->f, ECNP_S_ECE_DUPACK);
	EXPECT_EQ(fl->f.saved_ack, ack);
	EXPECT_EQ(fl->f.dup_cnt, 0);
}

#define P2_ROW_TEST(fn, body, row)					\
static void fn(void **state)						\
{									\
	(void)state;							\
	run_p2_row(row, body);						\
}

P2_ROW_TEST(test_p2_row01_default_from_n, p2_row01,
	    "P2 row 1: DEFAULT | from N | - | DEFAULT | - (ECT on new data)")
P2_ROW_TEST(test_p2_row02_default_e_ce_to_ece, p2_row02,
	    "P2 row 2: DEFAULT | from E | CE, no ECE | ECE")
P2_ROW_TEST(test_p2_row03_default_e_ce_ece_to_ece_dupack, p2_row03,
	    "P2 row 3: DEFAULT | from E | CE and ECE | ECE_DUPACK | save ACK, count=0")
P2_ROW_TEST(test_p2_row04_default_e_ece_to_dupack, p2_row04,
	    "P2 row 4: DEFAULT | from E | ECE, no CE | DUPACK | save ACK, count=0")
P2_ROW_TEST(test_p2_row05_dupack_from_n, p2_row05,
	    "P2 row 5: DUPACK | from N (no new data) | - | DUPACK")
P2_ROW_TEST(test_p2_row06_dupack_from_e_pending, p2_row06,
	    "P2 row 6: DUPACK | from E | signal pending (count<3) | DUPACK, or ECE_DUPACK if CE")
P2_ROW_TEST(test_p2_row07_dupack_signal_done_to_default, p2_row07,
	    "P2 row 7: DUPACK | signal given (count==3) | DEFAULT | then CWR toward E")
P2_ROW_TEST(test_p2_row07_dupack_signal_done_ce_to_ece, p2_row07_ce,
	    "P2 row 7: DUPACK | signal given (count==3) | ECE if CE | then CWR toward E")
P2_ROW_TEST(test_p2_row08_ece_dupack_from_n_sets_ece, p2_row08,
	    "P2 row 8: ECE_DUPACK | from N | - | ECE_DUPACK | set ECE")
P2_ROW_TEST(test_p2_row09_ece_dupack_from_e_pending, p2_row09,
	    "P2 row 9: ECE_DUPACK | from E | pending (count<3) | ECE_DUPACK, or DUPACK if CWR")
P2_ROW_TEST(test_p2_row10_ece_dupack_signal_done_to_ece, p2_row10,
	    "P2 row 10: ECE_DUPACK | signal given (count==3) | ECE")
P2_ROW_TEST(test_p2_row10_ece_dupack_cwr_signal_done_to_default, p2_row10_cwr,
	    "P2 row 10: ECE_DUPACK | CWR then signal given (count==3) | DEFAULT if CWR")
P2_ROW_TEST(test_p2_row11_ece_from_n_sets_ece, p2_row11,
	    "P2 row 11: ECE | from N | - | ECE | set ECE")
P2_ROW_TEST(test_p2_row12_ece_e_cwr_to_default, p2_row12,
	    "P2 row 12: ECE | from E | CWR, no ECE | DEFAULT")
P2_ROW_TEST(test_p2_row13_ece_e_cwr_ece_to_dupack, p2_row13,
	    "P2 row 13: ECE | from E | CWR and ECE | DUPACK | save ACK, count=0")
P2_ROW_TEST(test_p2_row14_ece_e_ece_to_ece_dupack, p2_row14,
	    "P2 row 14: ECE | from E | ECE, no CWR | ECE_DUPACK | save ACK, count=0")

/* ======================= handshake extras =============================== */

/* Symmetric case end to end: A is ECN, B is not. */
static void test_symmetric_case_e_is_initiator(void **state)
{
	struct ecnp_fsm f;
	struct ecnp_pkt p, seen;
	u32 r;

	(void)state;
	CTX("symmetric case: ECN initiator A, non-ECN responder B");
	ecnp_fsm_init(&f);
	p = mkp(A, SYN | ECE | CWR, 1, 0, 0, NOT_ECT);
	EXPECT_R(ecnp_fsm_step(&f, &p, ECNP_FB_DROP, false), 0);
	p = mkp(B, SYN | ACK, 9, 2, 0, NOT_ECT);
	r = ecnp_fsm_step(&f, &p, ECNP_FB_DROP, false);
	seen = apply(p, r);
	EXPECT(linux_synack_accepts_ecn(&seen));
	EXPECT_EQ(r & ECNP_EV_MASK, ECNP_EV_OUT_E_INIT);
	p = mkp(A, ACK, 2, 10, 0, NOT_ECT);
	EXPECT_R(ecnp_fsm_step(&f, &p, ECNP_FB_DROP, false), 0);
	EXPECT_STATE(&f, ECNP_S_DEFAULT);
	/* B (N) sends data toward A (E): ECT(0) */
	p = mkp(B, ACK, 10, 2, MSS, NOT_ECT);
	EXPECT_R(ecnp_fsm_step(&f, &p, ECNP_FB_DROP, false), SET_ECT0);
	/* A's ECT data toward B: Not-ECT; CE is echoed toward A */
	p = mkp(A, ACK, 2, 10 + MSS, MSS, CE);
	EXPECT_R(ecnp_fsm_step(&f, &p, ECNP_FB_DROP, false), CLR_ECN);
	EXPECT_STATE(&f, ECNP_S_ECE);
	p = mkp(B, ACK, 10 + MSS, 2 + MSS, 0, NOT_ECT);
	EXPECT_R(ecnp_fsm_step(&f, &p, ECNP_FB_DROP, false), SET_ECE);
	/* A echoes ECE for B's data: one of B's segments is dropped */
	p = mkp(A, ACK | ECE | CWR, 2 + MSS, 10 + MSS, MSS, ECT0);
	EXPECT_R(ecnp_fsm_step(&f, &p, ECNP_FB_DROP, false),
		 CLR_ECE | CLR_CWR | CLR_ECN);
	EXPECT_STATE(&f, ECNP_S_DUPACK);
	p = mkp(B, ACK, 10 + MSS, 2 + 2 * MSS, MSS, NOT_ECT);
	EXPECT_R(ecnp_fsm_step(&f, &p, ECNP_FB_DROP, false),
		 DROP | ECNP_EV_CONG_SIGNAL);
	p = mkp(B, ACK, 10 + 2 * MSS, 2 + 2 * MSS, MSS, NOT_ECT);
	EXPECT_R(ecnp_fsm_step(&f, &p, ECNP_FB_DROP, false),
		 SET_ECT0 | SET_CWR);
}

/* RFC 3168 6.1.1.1: retransmitted upgraded SYN goes out unmodified. */
static void test_syn_retx_fallback(void **state)
{
	struct ecnp_fsm f;
	struct ecnp_pkt syn = mkp(A, SYN, 0xffffffffu, 0, 0, NOT_ECT);
	struct ecnp_pkt sa = mkp(B, SYN | ACK, 77, 0, 0, NOT_ECT);
	u32 r;

	(void)state;
	CTX("SYN retransmission fallback");
	ecnp_fsm_init(&f);
	EXPECT_R(ecnp_fsm_step(&f, &syn, ECNP_FB_DROP, false),
		 SET_ECE | SET_CWR);
	r = ecnp_fsm_step(&f, &syn, ECNP_FB_DROP, false);
	EXPECT_R(r, 0);		/* no edit: unmodified; no event yet */
	EXPECT_STATE(&f, ECNP_S_A_NC);
	EXPECT(f.flags & ECNP_FL_FELLBACK);
	/* further retransmissions: unmodified */
	EXPECT_R(ecnp_fsm_step(&f, &syn, ECNP_FB_DROP, false), 0);
	EXPECT_R(ecnp_fsm_step(&f, &syn, ECNP_FB_DROP, true), 0);
	/* B answers the plain SYN plainly: "fallback", remember B */
	r = ecnp_fsm_step(&f, &sa, ECNP_FB_DROP, false);
	EXPECT_R(r, ECNP_EV_OUT_FALLBACK | ECNP_EV_SYN_FALLBACK);
	EXPECT_STATE(&f, ECNP_S_SAME);
	/* a late SYN-ACK retransmission raises nothing again */
	EXPECT_R(ecnp_fsm_step(&f, &sa, ECNP_FB_DROP, false), 0);
}

/* B got the first upgraded SYN; its SYN-ACK arrives after the fallback. */
static void test_syn_retx_fallback_then_ecn_synack(void **state)
{
	struct ecnp_fsm f;
	struct ecnp_pkt syn = mkp(A, SYN, 5, 0, 0, NOT_ECT);
	struct ecnp_pkt sa = mkp(B, SYN | ACK | ECE, 77, 6, 0, NOT_ECT);
	struct ecnp_pkt ack = mkp(A, ACK, 6, 78, 0, NOT_ECT);

	(void)state;
	CTX("SYN fallback, then ECN-setup SYN-ACK: proxied E=B");
	ecnp_fsm_init(&f);
	ecnp_fsm_step(&f, &syn, ECNP_FB_DROP, false);
	EXPECT_R(ecnp_fsm_step(&f, &syn, ECNP_FB_DROP, false), 0);
	/* B got the upgraded SYN (its SYN-ACK was lost): not remembered */
	EXPECT_R(ecnp_fsm_step(&f, &sa, ECNP_FB_DROP, false),
		 CLR_ECE | ECNP_EV_OUT_E_RESP);
	EXPECT_R(ecnp_fsm_step(&f, &ack, ECNP_FB_DROP, false), 0);
	EXPECT_STATE(&f, ECNP_S_DEFAULT);
	/* no more upgrades: a late SYN retransmission stays plain */
	EXPECT_R(ecnp_fsm_step(&f, &syn, ECNP_FB_DROP, false), 0);
}

/* B accepted the upgraded SYN: later SYN retransmissions keep its view. */
static void test_syn_retx_after_synack_reapplies_upgrade(void **state)
{
	struct ecnp_fsm f, prev;
	struct ecnp_pkt syn = mkp(A, SYN, 5, 0, 0, NOT_ECT);
	struct ecnp_pkt sa = mkp(B, SYN | ACK | ECE, 77, 6, 0, NOT_ECT);
	struct ecnp_pkt ack = mkp(A, ACK, 6, 78, 0, NOT_ECT);

	(void)state;
	CTX("SYN retransmission after B's ECN-setup SYN-ACK");
	ecnp_fsm_init(&f);
	ecnp_fsm_step(&f, &syn, ECNP_FB_DROP, false);
	ecnp_fsm_step(&f, &sa, ECNP_FB_DROP, false);
	prev = f;
	EXPECT_R(ecnp_fsm_step(&f, &syn, ECNP_FB_DROP, false),
		 SET_ECE | SET_CWR);
	EXPECT(!memcmp(&prev, &f, sizeof(f)));
	ecnp_fsm_step(&f, &ack, ECNP_FB_DROP, false);
	prev = f;
	EXPECT_R(ecnp_fsm_step(&f, &syn, ECNP_FB_DROP, false),
		 SET_ECE | SET_CWR);
	EXPECT(!memcmp(&prev, &f, sizeof(f)));
}

/*
 * A (ECN) retransmits its SYN without ECE/CWR (RFC 3168 6.1.1.1): never
 * upgraded; B's plain SYN-ACK ends it there, an ECN-setup one goes to A
 * untouched and the flow waits in VERIFY (test_verify_*).
 */
static void test_a_c_own_syn_fallback(void **state)
{
	struct ecnp_fsm f;
	struct ecnp_pkt syn = mkp(A, SYN | ECE | CWR, 5, 0, 0, NOT_ECT);
	struct ecnp_pkt syn2 = mkp(A, SYN, 5, 0, 0, NOT_ECT);
	struct ecnp_pkt sa = mkp(B, SYN | ACK, 77, 6, 0, NOT_ECT);
	struct ecnp_pkt sa_ecn = mkp(B, SYN | ACK | ECE, 77, 6, 0, NOT_ECT);

	(void)state;
	CTX("A_C: A's own SYN fallback, plain SYN-ACK");
	ecnp_fsm_init(&f);
	ecnp_fsm_step(&f, &syn, ECNP_FB_DROP, false);
	EXPECT_R(ecnp_fsm_step(&f, &syn, ECNP_FB_DROP, false), 0);
	EXPECT_STATE(&f, ECNP_S_A_C);
	EXPECT_R(ecnp_fsm_step(&f, &syn2, ECNP_FB_DROP, false), 0);
	EXPECT_STATE(&f, ECNP_S_A_NC);
	/* not upgraded, not upgraded later either */
	EXPECT_R(ecnp_fsm_step(&f, &syn2, ECNP_FB_DROP, false), 0);
	EXPECT_R(ecnp_fsm_step(&f, &sa, ECNP_FB_DROP, false),
		 ECNP_EV_OUT_FALLBACK);
	EXPECT_STATE(&f, ECNP_S_SAME);

	CTX("A_C: A's own SYN fallback, ECN SYN-ACK (to the first SYN)");
	ecnp_fsm_init(&f);
	ecnp_fsm_step(&f, &syn, ECNP_FB_DROP, false);
	ecnp_fsm_step(&f, &syn2, ECNP_FB_DROP, false);
	EXPECT_R(ecnp_fsm_step(&f, &sa_ecn, ECNP_FB_DROP, false), 0);
	EXPECT_STATE(&f, ECNP_S_VERIFY);
	EXPECT(!ecnp_fsm_proxied(&f));
	/* retransmissions of either side's handshake: untouched */
	EXPECT_R(ecnp_fsm_step(&f, &sa_ecn, ECNP_FB_DROP, false), 0);
	EXPECT_R(ecnp_fsm_step(&f, &syn2, ECNP_FB_DROP, false), 0);
	EXPECT_R(ecnp_fsm_step(&f, &syn, ECNP_FB_DROP, false), 0);
	EXPECT_STATE(&f, ECNP_S_VERIFY);

	CTX("A_NC after our upgrade: a plain retransmission is not VERIFY");
	ecnp_fsm_init(&f);
	ecnp_fsm_step(&f, &syn2, ECNP_FB_DROP, false);
	ecnp_fsm_step(&f, &syn2, ECNP_FB_DROP, false);
	EXPECT_R(ecnp_fsm_step(&f, &sa_ecn, ECNP_FB_DROP, false),
		 CLR_ECE | ECNP_EV_OUT_E_RESP);
	EXPECT_STATE(&f, ECNP_S_WAIT_ACK);
}

/*
 * VERIFY, reached as in test_a_c_own_syn_fallback: A's ISN 5, B's 77,
 * A's handshake ACK seen.
 */
static void verify_open(struct ecnp_fsm *f)
{
	struct ecnp_pkt syn = mkp(A, SYN | ECE | CWR, 5, 0, 0, NOT_ECT);
	struct ecnp_pkt syn2 = mkp(A, SYN, 5, 0, 0, NOT_ECT);
	struct ecnp_pkt sa_ecn = mkp(B, SYN | ACK | ECE, 77, 6, 0, NOT_ECT);
	struct ecnp_pkt ack = mkp(A, ACK, 6, 78, 0, NOT_ECT);

	ecnp_fsm_init(f);
	ecnp_fsm_step(f, &syn, ECNP_FB_DUPACK, false);
	ecnp_fsm_step(f, &syn2, ECNP_FB_DUPACK, false);
	EXPECT_R(ecnp_fsm_step(f, &sa_ecn, ECNP_FB_DUPACK, false), 0);
	EXPECT_R(ecnp_fsm_step(f, &ack, ECNP_FB_DUPACK, false), 0);
	EXPECT_STATE(f, ECNP_S_VERIFY);
}

/* A shows it uses ECN: both ends, untouched from then on. */
static void test_verify_a_uses_ecn(void **state)
{
	struct ecnp_pkt ect = mkp(A, ACK, 6, 78, MSS, ECT0);
	struct ecnp_pkt ce = mkp(B, ACK, 78, 6, MSS, CE);
	struct ecnp_pkt echo = mkp(A, ACK | ECE, 6, 78 + MSS, 0, NOT_ECT);
	struct ecnp_pkt cwr = mkp(B, ACK | CWR, 78, 6, MSS, ECT0);
	struct ecnp_fsm f;

	(void)state;
	CTX("VERIFY: A's first data is ECT");
	verify_open(&f);
	EXPECT_R(ecnp_fsm_step(&f, &ect, ECNP_FB_DUPACK, false),
		 ECNP_EV_OUT_BOTH);
	EXPECT_STATE(&f, ECNP_S_SAME);
	check_same_untouched(&f);

	CTX("VERIFY: A echoes B's CE");
	verify_open(&f);
	EXPECT_R(ecnp_fsm_step(&f, &ce, ECNP_FB_DUPACK, false), 0);
	EXPECT_STATE(&f, ECNP_S_VERIFY);
	EXPECT_R(ecnp_fsm_step(&f, &echo, ECNP_FB_DUPACK, false),
		 ECNP_EV_OUT_BOTH);
	EXPECT_STATE(&f, ECNP_S_SAME);

	CTX("VERIFY: CWR from B (someone echoed)");
	verify_open(&f);
	EXPECT_R(ecnp_fsm_step(&f, &cwr, ECNP_FB_DUPACK, false),
		 ECNP_EV_OUT_BOTH);
	EXPECT_STATE(&f, ECNP_S_SAME);

	CTX("VERIFY: AE from A (AccECN's counter: never edited)");
	verify_open(&f);
	echo.flags = ACK | AE;
	EXPECT_R(ecnp_fsm_step(&f, &echo, ECNP_FB_DUPACK, false),
		 ECNP_EV_OUT_BOTH);
	EXPECT_STATE(&f, ECNP_S_SAME);
}

/* A shows it does not use ECN: proxied from that segment on, E = B. */
static void test_verify_a_is_n(void **state)
{
	struct ecnp_pkt plain = mkp(A, ACK, 6, 78, MSS, NOT_ECT);
	struct ecnp_pkt ce = mkp(B, ACK, 78, 6, MSS, CE);
	struct ecnp_pkt ce2 = mkp(B, ACK, 78 + MSS, 6, MSS, CE);
	struct ecnp_pkt early = mkp(A, ACK, 6, 78, 0, NOT_ECT);
	struct ecnp_pkt no_echo = mkp(A, ACK, 6, 78 + MSS, 0, NOT_ECT);
	struct ecnp_pkt rtx = mkp(A, ACK, 6, 78, MSS, NOT_ECT);
	struct ecnp_fsm f;

	(void)state;
	CTX("VERIFY: A's first data is Not-ECT");
	verify_open(&f);
	EXPECT_R(ecnp_fsm_step(&f, &plain, ECNP_FB_DUPACK, false),
		 SET_ECT0 | ECNP_EV_OUT_E_RESP);
	EXPECT_STATE(&f, ECNP_S_DEFAULT);
	EXPECT(ecnp_fsm_proxied(&f) && !ecnp_fsm_e_is_a(&f));
	EXPECT_EQ(f.n_nxt, 6 + MSS);
	/* A's retransmission of it: no ECT (phase 2's rule) */
	EXPECT_R(ecnp_fsm_step(&f, &rtx, ECNP_FB_DUPACK, false), 0);
	/* B's CE toward A is cleared and echoed */
	EXPECT_R(ecnp_fsm_step(&f, &ce, ECNP_FB_DUPACK, false), CLR_ECN);
	EXPECT_STATE(&f, ECNP_S_ECE);

	CTX("VERIFY: A acks B's CE without ECE");
	verify_open(&f);
	EXPECT_R(ecnp_fsm_step(&f, &ce, ECNP_FB_DUPACK, false), 0);
	/* an ACK below the marked segment's end decides nothing */
	EXPECT_R(ecnp_fsm_step(&f, &early, ECNP_FB_DUPACK, false), 0);
	EXPECT_STATE(&f, ECNP_S_VERIFY);
	/* a second CE does not move the mark */
	EXPECT_R(ecnp_fsm_step(&f, &ce2, ECNP_FB_DUPACK, false), 0);
	EXPECT_EQ(f.hold_end, 78 + MSS);
	/* the echo the proxy owes B starts on this ACK */
	EXPECT_R(ecnp_fsm_step(&f, &no_echo, ECNP_FB_DUPACK, false),
		 SET_ECE | ECNP_EV_OUT_E_RESP);
	EXPECT_STATE(&f, ECNP_S_ECE);
	EXPECT(!ecnp_fsm_e_is_a(&f));

	CTX("VERIFY: A's Not-ECT data after B's CE: the echo is owed");
	verify_open(&f);
	ecnp_fsm_step(&f, &ce, ECNP_FB_DUPACK, false);
	plain.ack = 78;
	EXPECT_R(ecnp_fsm_step(&f, &plain, ECNP_FB_DUPACK, false),
		 SET_ECT0 | SET_ECE | ECNP_EV_OUT_E_RESP);
	EXPECT_STATE(&f, ECNP_S_ECE);
}

/* What decides nothing in VERIFY: retransmissions, spoofed segments. */
static void test_verify_undecided(void **state)
{
	struct ecnp_pkt data = mkp(A, ACK, 6, 78, MSS, ECT0);
	struct ecnp_pkt rtx = mkp(A, ACK, 6, 78, MSS, NOT_ECT);
	struct ecnp_pkt b_data = mkp(B, ACK, 78, 6 + MSS, MSS, ECT0);
	struct ecnp_pkt blind_ce = mkp(B, ACK, 78 + 0x40000000u, 6, MSS, CE);
	struct ecnp_pkt blind = mkp(A, ACK, 6 + 0x40000000u, 78, MSS,
				    NOT_ECT);
	struct ecnp_fsm f, prev;

	(void)state;
	CTX("VERIFY: B's data unmarked, A's pure ACKs");
	verify_open(&f);
	EXPECT_R(ecnp_fsm_step(&f, &b_data, ECNP_FB_DUPACK, false), 0);
	EXPECT_STATE(&f, ECNP_S_VERIFY);

	CTX("VERIFY: A's retransmission is Not-ECT on an ECN connection too");
	verify_open(&f);
	EXPECT_R(ecnp_fsm_step(&f, &data, ECNP_FB_DUPACK, false),
		 ECNP_EV_OUT_BOTH);
	verify_open(&f);
	f.win[A].end = 6 + 2 * MSS;	/* A sent [6, 6 + 2 MSS) already */
	EXPECT_R(ecnp_fsm_step(&f, &rtx, ECNP_FB_DUPACK, false), 0);
	EXPECT_STATE(&f, ECNP_S_VERIFY);

	CTX("VERIFY: B resends its marked data: the mark may be lost, forgotten");
	verify_open(&f);
	b_data = mkp(B, ACK, 78, 6, MSS, CE);
	EXPECT_R(ecnp_fsm_step(&f, &b_data, ECNP_FB_DUPACK, false), 0);
	EXPECT_EQ(f.hold_end, 78 + MSS);
	b_data.ecn = NOT_ECT;	/* the retransmission */
	EXPECT_R(ecnp_fsm_step(&f, &b_data, ECNP_FB_DUPACK, false), 0);
	EXPECT_EQ(f.hold_end, 0);
	/* A acks it without ECE: it may never have seen the mark */
	rtx = mkp(A, ACK, 6, 78 + MSS, 0, NOT_ECT);
	EXPECT_R(ecnp_fsm_step(&f, &rtx, ECNP_FB_DUPACK, false), 0);
	EXPECT_STATE(&f, ECNP_S_VERIFY);
	/* B's next mark, acked without ECE, decides */
	b_data = mkp(B, ACK, 78 + MSS, 6, MSS, CE);
	EXPECT_R(ecnp_fsm_step(&f, &b_data, ECNP_FB_DUPACK, false), 0);
	EXPECT_EQ(f.hold_end, 78 + 2 * MSS);
	rtx.ack = 78 + 2 * MSS;
	EXPECT_R(ecnp_fsm_step(&f, &rtx, ECNP_FB_DUPACK, false),
		 SET_ECE | ECNP_EV_OUT_E_RESP);
	EXPECT_STATE(&f, ECNP_S_ECE);

	CTX("VERIFY: out of the window: no mark, no decision");
	verify_open(&f);
	prev = f;
	EXPECT_R(ecnp_fsm_step(&f, &blind_ce, ECNP_FB_DUPACK, false),
		 ECNP_EV_OUT_OF_WINDOW);
	EXPECT_R(ecnp_fsm_step(&f, &blind, ECNP_FB_DUPACK, false),
		 ECNP_EV_OUT_OF_WINDOW);
	EXPECT(!memcmp(&prev, &f, sizeof(f)));
}

/* Some stacks answer an ECN-setup SYN with RST: remember the destination. */
static void test_rst_to_upgraded_syn_fallback(void **state)
{
	struct ecnp_fsm f;
	struct ecnp_pkt syn = mkp(A, SYN, 5, 0, 0, NOT_ECT);
	struct ecnp_pkt rst = mkp(B, RST | ACK, 0, 6, 0, NOT_ECT);
	struct ecnp_pkt blind = mkp(B, RST, 1234, 0, 0, NOT_ECT);

	(void)state;
	CTX("RST answering the upgraded SYN");
	ecnp_fsm_init(&f);
	ecnp_fsm_step(&f, &syn, ECNP_FB_DROP, false);
	EXPECT_R(ecnp_fsm_step(&f, &rst, ECNP_FB_DROP, false),
		 ECNP_EV_SYN_FALLBACK | ECNP_EV_CLOSED);
	EXPECT_STATE(&f, ECNP_S_CLOSED);

	/* SYN-SENT (RFC 793 3.9): a RST counts only if it acks the SYN */
	CTX("RST acking something else in A_NC: ignored, no fallback event");
	ecnp_fsm_init(&f);
	ecnp_fsm_step(&f, &syn, ECNP_FB_DROP, false);
	EXPECT_R(ecnp_fsm_step(&f, &(struct ecnp_pkt){ .dir = B,
			       .flags = RST | ACK, .ack = 5 }, ECNP_FB_DROP,
			       false), ECNP_EV_OUT_OF_WINDOW);
	EXPECT_STATE(&f, ECNP_S_A_NC);

	CTX("RST without ACK in A_NC: ignored, no fallback event");
	ecnp_fsm_init(&f);
	ecnp_fsm_step(&f, &syn, ECNP_FB_DROP, false);
	EXPECT_R(ecnp_fsm_step(&f, &blind, ECNP_FB_DROP, false),
		 ECNP_EV_OUT_OF_WINDOW);
	EXPECT_STATE(&f, ECNP_S_A_NC);
	/* the real answer still counts */
	EXPECT_R(ecnp_fsm_step(&f, &rst, ECNP_FB_DROP, false),
		 ECNP_EV_SYN_FALLBACK | ECNP_EV_CLOSED);

	CTX("RST to a SYN we did not upgrade: no fallback event");
	ecnp_fsm_init(&f);
	ecnp_fsm_step(&f, &syn, ECNP_FB_DROP, true);
	EXPECT_R(ecnp_fsm_step(&f, &rst, ECNP_FB_DROP, false),
		 ECNP_EV_CLOSED);
}

static void test_dst_no_upgrade_plain_syn(void **state)
{
	struct ecnp_fsm f;
	struct ecnp_pkt syn = mkp(A, SYN, 5, 0, 0, NOT_ECT);
	struct ecnp_pkt sa = mkp(B, SYN | ACK, 77, 6, 0, NOT_ECT);

	(void)state;
	CTX("dst_no_upgrade: plain SYN is not upgraded");
	ecnp_fsm_init(&f);
	EXPECT_R(ecnp_fsm_step(&f, &syn, ECNP_FB_DROP, true), 0);
	EXPECT_STATE(&f, ECNP_S_A_NC);
	/* its retransmission is no fallback event: nothing was upgraded */
	EXPECT_R(ecnp_fsm_step(&f, &syn, ECNP_FB_DROP, true), 0);
	EXPECT_R(ecnp_fsm_step(&f, &sa, ECNP_FB_DROP, false),
		 ECNP_EV_OUT_FALLBACK);
	EXPECT_STATE(&f, ECNP_S_SAME);
}

/* dst_no_upgrade also forbids the symmetric SYN-ACK upgrade (latched). */
static void test_dst_no_upgrade_symmetric_latched(void **state)
{
	struct ecnp_fsm f;
	struct ecnp_pkt syn = mkp(A, SYN | ECE | CWR, 5, 0, 0, NOT_ECT);
	struct ecnp_pkt sa = mkp(B, SYN | ACK, 77, 6, 0, NOT_ECT);
	struct ecnp_pkt data = mkp(B, ACK, 78, 6, MSS, NOT_ECT);

	(void)state;
	CTX("dst_no_upgrade on the SYN only; SYN-ACK later with false");
	ecnp_fsm_init(&f);
	EXPECT_R(ecnp_fsm_step(&f, &syn, ECNP_FB_DROP, true), 0);
	EXPECT_R(ecnp_fsm_step(&f, &sa, ECNP_FB_DROP, false),
		 ECNP_EV_OUT_FALLBACK);
	EXPECT_STATE(&f, ECNP_S_SAME);
	EXPECT_R(ecnp_fsm_step(&f, &sa, ECNP_FB_DROP, false), 0);
	EXPECT_R(ecnp_fsm_step(&f, &data, ECNP_FB_DROP, false), 0);

	CTX("dst_no_upgrade raised between SYN and SYN-ACK");
	ecnp_fsm_init(&f);
	EXPECT_R(ecnp_fsm_step(&f, &syn, ECNP_FB_DROP, false), 0);
	EXPECT_R(ecnp_fsm_step(&f, &sa, ECNP_FB_DROP, true),
		 ECNP_EV_OUT_FALLBACK);
	EXPECT_STATE(&f, ECNP_S_SAME);

	CTX("dst_no_upgrade ignored once roles are decided");
	ecnp_fsm_init(&f);
	ecnp_fsm_step(&f, &syn, ECNP_FB_DROP, false);
	EXPECT_R(ecnp_fsm_step(&f, &sa, ECNP_FB_DROP, false),
		 SET_ECE | ECNP_EV_OUT_E_INIT);
	EXPECT_R(ecnp_fsm_step(&f, &sa, ECNP_FB_DROP, true), SET_ECE);
}

static void test_accecn_passthrough(void **state)
{
	static const u16 syns[] = {
		SYN | AE | CWR | ECE, SYN | AE, SYN | AE | CWR, SYN | AE | ECE,
	};
	struct ecnp_fsm f;
	struct ecnp_pkt pk[] = {
		mkp(B, SYN | ACK | AE | CWR, 77, 6, 0, NOT_ECT),
		mkp(B, SYN | ACK, 77, 6, 0, NOT_ECT),
		mkp(A, ACK | AE, 6, 78, 0, NOT_ECT),
		mkp(A, ACK, 6, 78, MSS, ECT1),
		mkp(B, ACK | ECE, 78, 6 + MSS, MSS, CE),
		mkp(A, ACK | CWR, 6 + MSS, 78 + MSS, MSS, NOT_ECT),
		mkp(A, SYN, 5, 0, 0, NOT_ECT),
		mkp(B, ACK | FIN, 78 + MSS, 6 + MSS, 0, NOT_ECT),
	};
	struct ecnp_pkt syn;
	size_t i, j;
	u32 r;

	(void)state;
	for (i = 0; i < ARRAY_SIZE(syns); i++) {
		CTX("AccECN SYN (flags 0x%x) passes untouched", syns[i]);
		ecnp_fsm_init(&f);
		syn = mkp(A, syns[i], 5, 0, 0, NOT_ECT);
		EXPECT_R(ecnp_fsm_step(&f, &syn, ECNP_FB_DROP, false),
			 ECNP_EV_OUT_PASS);
		EXPECT_STATE(&f, ECNP_S_PASS);
		for (j = 0; j < ARRAY_SIZE(pk); j++) {
			r = ecnp_fsm_step(&f, &pk[j], ECNP_FB_DROP, false);
			EXPECT_R(r & ~(u32)ECNP_EV_CLOSED, 0);
			EXPECT_STATE(&f, ECNP_S_PASS);
		}
	}

	CTX("AccECN SYN from B in a simultaneous open: pass");
	ecnp_fsm_init(&f);
	syn = mkp(A, SYN, 5, 0, 0, NOT_ECT);
	ecnp_fsm_step(&f, &syn, ECNP_FB_DROP, false);
	syn = mkp(B, SYN | AE | CWR | ECE, 77, 0, 0, NOT_ECT);
	EXPECT_R(ecnp_fsm_step(&f, &syn, ECNP_FB_DROP, false),
		 ECNP_EV_OUT_PASS);
	EXPECT_STATE(&f, ECNP_S_PASS);
}

/*
 * TCP-MD5 and TCP-AO sign the header: a SYN that carries either passes
 * untouched, and so does the rest of its flow; counted (L5).  Upgraded,
 * the signature broke, the server dropped the SYN, and the retransmission
 * put it in the fallback cache.
 */
static void test_signed_syn_passthrough(void **state)
{
	static const u16 syns[] = { SYN, SYN | ECE | CWR };
	struct ecnp_pkt pk[] = {
		mkp(B, SYN | ACK | ECE, 77, 6, 0, NOT_ECT),
		mkp(B, SYN | ACK, 77, 6, 0, NOT_ECT),
		mkp(A, ACK, 6, 78, MSS, NOT_ECT),
		mkp(B, ACK | ECE, 78, 6 + MSS, MSS, CE),
		mkp(A, SYN, 5, 0, 0, NOT_ECT),
	};
	struct ecnp_pkt p;
	struct ecnp_fsm f;
	size_t i, j;

	(void)state;
	for (i = 0; i < ARRAY_SIZE(syns); i++) {
		CTX("signed SYN (flags 0x%x) passes untouched", syns[i]);
		ecnp_fsm_init(&f);
		p = mkp(A, syns[i], 5, 0, 0, NOT_ECT);
		p.opt = ECNP_OPT_SIGNED;
		EXPECT_R(ecnp_fsm_step(&f, &p, ECNP_FB_DROP, false),
			 ECNP_EV_OUT_PASS | ECNP_EV_SIGNED);
		EXPECT_STATE(&f, ECNP_S_PASS);
		for (j = 0; j < ARRAY_SIZE(pk); j++) {
			p = pk[j];
			if (p.flags & SYN)
				p.opt = ECNP_OPT_SIGNED;
			EXPECT_R(ecnp_fsm_step(&f, &p, ECNP_FB_DROP, false) &
				 ~(u32)ECNP_EV_OUT_OF_WINDOW, 0);
			EXPECT_STATE(&f, ECNP_S_PASS);
		}
		/* control: unsigned, a plain SYN is upgraded */
		ecnp_fsm_init(&f);
		p = mkp(A, syns[i], 5, 0, 0, NOT_ECT);
		EXPECT(ecnp_fsm_step(&f, &p, ECNP_FB_DROP, false) ==
		       (syns[i] == SYN ? (u32)(SET_ECE | SET_CWR) : 0));
	}

	CTX("signed SYN from B in a simultaneous open: pass");
	ecnp_fsm_init(&f);
	p = mkp(A, SYN, 5, 0, 0, NOT_ECT);
	ecnp_fsm_step(&f, &p, ECNP_FB_DROP, false);
	p = mkp(B, SYN, 77, 0, 0, NOT_ECT);
	p.opt = ECNP_OPT_SIGNED;
	EXPECT_R(ecnp_fsm_step(&f, &p, ECNP_FB_DROP, false),
		 ECNP_EV_OUT_PASS | ECNP_EV_SIGNED);
	EXPECT_STATE(&f, ECNP_S_PASS);
}

static void test_first_packet_not_syn_passthrough(void **state)
{
	struct ecnp_pkt first[] = {
		mkp(A, ACK, 5, 6, MSS, NOT_ECT),
		mkp(B, SYN, 5, 0, 0, NOT_ECT),
		mkp(A, SYN | ACK, 5, 6, 0, NOT_ECT),
	};
	struct ecnp_pkt more = mkp(B, ACK | ECE, 6, 5, MSS, CE);
	struct ecnp_fsm f;
	size_t i;

	(void)state;
	for (i = 0; i < ARRAY_SIZE(first); i++) {
		CTX("first packet #%zu is not a SYN from A: pass", i);
		ecnp_fsm_init(&f);
		EXPECT_R(ecnp_fsm_step(&f, &first[i], ECNP_FB_DROP, false),
			 ECNP_EV_OUT_PASS);
		EXPECT_STATE(&f, ECNP_S_PASS);
		EXPECT_R(ecnp_fsm_step(&f, &more, ECNP_FB_DROP, false), 0);
	}
}

/* Simultaneous open: no upgrades; views come from the SYN-ACKs. */
struct simopen_case {
	const char *name;
	u16 a_syn;		/* flags of A's SYN */
	u32 a_syn_act;		/* expected edit on it */
	u16 a_sa;		/* flags of A's SYN-ACK (0: never seen) */
	u16 b_sa;		/* flags of B's SYN-ACK (0: never seen) */
	u32 outcome;
	u8 final;
	bool e_is_a;
};

static void test_simultaneous_open(void **state)
{
	static const struct simopen_case cases[] = {
		{ "neither", SYN, SET_ECE | SET_CWR, SYN | ACK, SYN | ACK,
		  ECNP_EV_OUT_NEITHER, ECNP_S_SAME, false },
		{ "both", SYN | ECE | CWR, 0, SYN | ACK | ECE,
		  SYN | ACK | ECE, ECNP_EV_OUT_BOTH, ECNP_S_SAME, false },
		{ "B took our upgraded SYN: E=B", SYN, SET_ECE | SET_CWR,
		  SYN | ACK, SYN | ACK | ECE, ECNP_EV_OUT_E_RESP,
		  ECNP_S_DEFAULT, false },
		{ "only A: E=A", SYN | ECE | CWR, 0, SYN | ACK | ECE,
		  SYN | ACK, ECNP_EV_OUT_E_INIT, ECNP_S_DEFAULT, true },
		{ "B's SYN-ACK missed: B counts as non-ECN", SYN | ECE | CWR,
		  0, SYN | ACK | ECE, 0, ECNP_EV_OUT_E_INIT,
		  ECNP_S_DEFAULT, true },
		{ "no SYN-ACK seen", SYN, SET_ECE | SET_CWR, 0, 0,
		  ECNP_EV_OUT_NEITHER, ECNP_S_SAME, false },
	};
	struct ecnp_fsm f, prev;
	struct ecnp_pkt p;
	size_t i;
	u32 r, outcome = 0;

	(void)state;
	for (i = 0; i < ARRAY_SIZE(cases); i++) {
		const struct simopen_case *c = &cases[i];

		CTX("simultaneous open: %s", c->name);
		outcome = 0;
		ecnp_fsm_init(&f);
		p = mkp(A, c->a_syn, 100, 0, 0, NOT_ECT);
		EXPECT_R(ecnp_fsm_step(&f, &p, ECNP_FB_DROP, false),
			 c->a_syn_act);
		p = mkp(B, SYN | ECE | CWR, 900, 0, 0, NOT_ECT);
		EXPECT_R(ecnp_fsm_step(&f, &p, ECNP_FB_DROP, false), 0);
		EXPECT_STATE(&f, ECNP_S_SIMOPEN);
		/* B's SYN toward A is never modified, nor retransmissions */
		prev = f;
		EXPECT_R(ecnp_fsm_step(&f, &p, ECNP_FB_DROP, false), 0);
		EXPECT(!memcmp(&prev, &f, sizeof(f)));
		if (c->a_sa) {
			p = mkp(A, c->a_sa, 100, 901, 0, NOT_ECT);
			r = ecnp_fsm_step(&f, &p, ECNP_FB_DROP, false);
			EXPECT_R(r & ECNP_ACT_MASK, 0);
			outcome |= r & ECNP_EV_OUT_MASK;
		}
		if (c->b_sa) {
			p = mkp(B, c->b_sa, 900, 101, 0, NOT_ECT);
			r = ecnp_fsm_step(&f, &p, ECNP_FB_DROP, false);
			EXPECT_R(r & ECNP_ACT_MASK, 0);
			outcome |= r & ECNP_EV_OUT_MASK;
		}
		/* the first ACK ends the handshake in any case */
		p = mkp(A, ACK, 101, 901, 0, NOT_ECT);
		r = ecnp_fsm_step(&f, &p, ECNP_FB_DROP, false);
		outcome |= r & ECNP_EV_OUT_MASK;
		EXPECT_R(outcome, c->outcome);
		EXPECT_STATE(&f, c->final);
		if (ecnp_fsm_in_phase2(&f)) {
			EXPECT_EQ(ecnp_fsm_e_is_a(&f), c->e_is_a);
			/* N's data toward E gets ECT, E's data is stripped */
			p = mkp(c->e_is_a ? B : A, ACK, c->e_is_a ? 901 : 101,
				c->e_is_a ? 101 : 901, MSS, NOT_ECT);
			EXPECT_R(ecnp_fsm_step(&f, &p, ECNP_FB_DROP, false),
				 SET_ECT0);
			p = mkp(c->e_is_a ? A : B, ACK, c->e_is_a ? 101 : 901,
				c->e_is_a ? 901 : 101, MSS, ECT0);
			EXPECT_R(ecnp_fsm_step(&f, &p, ECNP_FB_DROP, false),
				 CLR_ECN);
		}
		/* a later SYN-ACK retransmission changes nothing */
		prev = f;
		p = mkp(B, SYN | ACK, 900, 101, 0, NOT_ECT);
		r = ecnp_fsm_step(&f, &p, ECNP_FB_DROP, false);
		EXPECT_R(r & ECNP_EV_MASK, 0);
		EXPECT(!memcmp(&prev, &f, sizeof(f)));
	}
}

/* ---- scenarios that put a flow into every state ------------------------- */

enum scen {
	SC_INIT, SC_A_C, SC_A_NC, SC_SIMOPEN, SC_WAIT_ACK_EA, SC_WAIT_ACK_EB,
	SC_SAME_BOTH, SC_SAME_NEITHER, SC_PASS, SC_DEFAULT_EA, SC_DEFAULT_EB,
	SC_ECE, SC_DUPACK, SC_ECE_DUPACK, SC_CLOSED, SC_NR,
};

static const char * const scen_names[SC_NR] = {
	"INIT", "A_C", "A_NC", "SIMOPEN", "WAIT_ACK E=A", "WAIT_ACK E=B",
	"SAME both", "SAME neither", "PASS", "DEFAULT E=A", "DEFAULT E=B",
	"ECE", "DUPACK", "ECE_DUPACK", "CLOSED",
};

#define S_ISN_A	1000u
#define S_ISN_B	50000u

static u8 build(struct flow *fl, enum scen sc)
{
	struct ecnp_pkt p;

	memset(fl, 0, sizeof(*fl));
	ecnp_fsm_init(&fl->f);
	fl->mode = ECNP_FB_DROP;
	switch (sc) {
	case SC_INIT:
		return ECNP_S_INIT;
	case SC_A_C:
	case SC_SAME_BOTH:
	case SC_WAIT_ACK_EA:
		step(fl, mkp(A, SYN | ECE | CWR, S_ISN_A, 0, 0, NOT_ECT));
		if (sc == SC_A_C)
			return ECNP_S_A_C;
		p = mkp(B, SYN | ACK | (sc == SC_SAME_BOTH ? ECE : 0),
			S_ISN_B, S_ISN_A + 1, 0, NOT_ECT);
		step(fl, p);
		return sc == SC_SAME_BOTH ? ECNP_S_SAME : ECNP_S_WAIT_ACK;
	case SC_A_NC:
	case SC_SAME_NEITHER:
	case SC_WAIT_ACK_EB:
	case SC_SIMOPEN:
		step(fl, mkp(A, SYN, S_ISN_A, 0, 0, NOT_ECT));
		if (sc == SC_A_NC)
			return ECNP_S_A_NC;
		if (sc == SC_SIMOPEN) {
			step(fl, mkp(B, SYN, S_ISN_B, 0, 0, NOT_ECT));
			return ECNP_S_SIMOPEN;
		}
		p = mkp(B, SYN | ACK | (sc == SC_WAIT_ACK_EB ? ECE : 0),
			S_ISN_B, S_ISN_A + 1, 0, NOT_ECT);
		step(fl, p);
		return sc == SC_WAIT_ACK_EB ? ECNP_S_WAIT_ACK : ECNP_S_SAME;
	case SC_PASS:
		step(fl, mkp(A, SYN | AE | ECE | CWR, S_ISN_A, 0, 0, NOT_ECT));
		return ECNP_S_PASS;
	case SC_DEFAULT_EA:
		flow_open(fl, true, ECNP_FB_DROP, S_ISN_A, S_ISN_B);
		return ECNP_S_DEFAULT;
	case SC_DEFAULT_EB:
		flow_open(fl, false, ECNP_FB_DROP, S_ISN_A, S_ISN_B);
		return ECNP_S_DEFAULT;
	case SC_ECE:
		flow_open(fl, false, ECNP_FB_DROP, S_ISN_A, S_ISN_B);
		reach(fl, ECNP_S_ECE);
		return ECNP_S_ECE;
	case SC_DUPACK:
		flow_open(fl, true, ECNP_FB_DROP, S_ISN_A, S_ISN_B);
		reach(fl, ECNP_S_DUPACK);
		return ECNP_S_DUPACK;
	case SC_ECE_DUPACK:
		flow_open(fl, false, ECNP_FB_DROP, S_ISN_A, S_ISN_B);
		reach(fl, ECNP_S_ECE_DUPACK);
		return ECNP_S_ECE_DUPACK;
	case SC_CLOSED:
		flow_open(fl, false, ECNP_FB_DROP, S_ISN_A, S_ISN_B);
		step(fl, mkp(B, RST, S_ISN_B + 1, 0, 0, NOT_ECT));
		return ECNP_S_CLOSED;
	default:
		fail();
	}
	return ECNP_S_NR;
}

/* The sequence number @dir sends next in a flow built by build(). */
static u32 next_seq(const struct flow *fl, enum scen sc, u8 dir)
{
	if (sc >= SC_DEFAULT_EA && sc != SC_PASS)
		return dir == n_dir(fl) ? fl->n_seq : fl->e_seq;
	return (dir == A ? S_ISN_A : S_ISN_B) + 1;
}

/*
 * The RST that closes a flow from @dir (@exact), or one in the window that
 * must not (RFC 5961 3.2: a Linux receiver answers it with a challenge
 * ACK), or a blind one (@off: far away).  While B's SYN-ACK is
 * outstanding, A is in SYN-SENT: a RST from B closes iff it acks A's SYN
 * (RFC 793 3.9), so the ACK number is what is off there.
 */
static struct ecnp_pkt rst_of(const struct flow *fl, enum scen sc, u8 dir,
			      u32 off)
{
	u32 seq = next_seq(fl, sc, dir), ack = next_seq(fl, sc, !dir);

	if (sc == SC_A_C || sc == SC_A_NC || sc == SC_PASS) {
		if (dir == B)
			return mkp(B, RST | ACK | ECE | CWR, 0, S_ISN_A + 1 + off,
				   0, CE);
		return mkp(A, RST | ECE | CWR, S_ISN_A + 1 + off, 0, 0, CE);
	}
	return mkp(dir, RST | ACK | ECE | CWR, seq + off, ack, 0, CE);
}

static void test_rst_in_each_state(void **state)
{
	static const u8 dirs[] = { A, B };
	static const u32 offs[] = { 1, 100, 60000, 0x40000000u, 0x90000000u };
	struct ecnp_pkt rst, seen, data;
	struct ecnp_fsm prev;
	unsigned int sc, d, o;
	struct flow fl;
	u32 r, ev;
	u8 st;

	(void)state;
	for (sc = 0; sc < SC_NR; sc++) {
		for (d = 0; d < ARRAY_SIZE(dirs); d++) {
			/* not exact: nothing changes, counted (no flow yet in
			 * INIT, nothing to do in CLOSED)
			 */
			for (o = 0; sc != SC_INIT && o < ARRAY_SIZE(offs); o++) {
				CTX("RST from %c in %s, off by 0x%x",
				    dirs[d] == A ? 'A' : 'B', scen_names[sc],
				    offs[o]);
				st = build(&fl, sc);
				prev = fl.f;
				rst = rst_of(&fl, sc, dirs[d], offs[o]);
				r = step(&fl, rst);
				EXPECT_STATE(&fl.f, st);
				EXPECT(!memcmp(&prev, &fl.f, sizeof(prev)));
				EXPECT_EQ(r & ECNP_EV_MASK, sc == SC_CLOSED ? 0 :
					  ECNP_EV_OUT_OF_WINDOW);
				/* the stateless edits: E->N stripped */
				seen = apply(rst, r);
				EXPECT_EQ(r & (SET_ECT0 | DROP | SET_ECE |
					       SET_CWR), 0);
				if (r & ECNP_ACT_MASK) {
					EXPECT(ecnp_fsm_proxied(&fl.f) &&
					       ecnp_from_e(&fl.f, &rst));
					EXPECT_EQ(seen.ecn, NOT_ECT);
					EXPECT_EQ(seen.flags & (ECE | CWR), 0);
				}
			}
			CTX("RST from %c in %s, exact", dirs[d] == A ? 'A' : 'B',
			    scen_names[sc]);
			st = build(&fl, sc);
			EXPECT_STATE(&fl.f, st);
			rst = rst_of(&fl, sc, dirs[d], 0);
			r = step(&fl, rst);
			EXPECT_STATE(&fl.f, ECNP_S_CLOSED);
			ev = sc == SC_CLOSED ? 0 : ECNP_EV_CLOSED;
			/* B resets our upgraded SYN: remember B */
			if (sc == SC_A_NC && dirs[d] == B)
				ev |= ECNP_EV_SYN_FALLBACK;
			EXPECT_R(r & ~(u32)ECNP_ACT_MASK, ev);
			seen = apply(rst, r);
			EXPECT_EQ(seen.ecn == CE, !(r & CLR_ECN));
			/* never ECT or a drop on a RST */
			EXPECT_EQ(r & (SET_ECT0 | DROP | SET_ECE | SET_CWR), 0);
			if (r & ECNP_ACT_MASK) {
				/* only E->N RSTs of proxied flows: stripped */
				EXPECT(st >= ECNP_S_WAIT_ACK &&
				       st != ECNP_S_SAME && st != ECNP_S_PASS &&
				       st != ECNP_S_CLOSED);
				EXPECT_EQ(seen.ecn, NOT_ECT);
				EXPECT_EQ(seen.flags & (ECE | CWR), 0);
			}
			/* a second RST: nothing new */
			EXPECT_R(step(&fl, rst), 0);
			/* after RST: everything passes untouched */
			data = mkp(dirs[d], ACK | ECE, 7, 8, MSS, CE);
			EXPECT_R(step(&fl, data), 0);
			data = mkp(B, SYN | ACK, 7, 8, 0, NOT_ECT);
			EXPECT_R(step(&fl, data), 0);
			EXPECT_STATE(&fl.f, ECNP_S_CLOSED);
		}
	}
}

/* Wait: RSTs from E in proxied states are stripped to Not-ECT. */
static void test_rst_from_e_stripped(void **state)
{
	struct flow fl;
	u32 r;

	(void)state;
	CTX("RST from E in phase 2 is stripped, from N left alone");
	flow_open(&fl, false, ECNP_FB_DROP, 10, 20);
	r = step(&fl, mkp(B, RST | ACK | ECE, 21, 11, 0, ECT0));
	EXPECT_R(r, CLR_ECE | CLR_ECN | ECNP_EV_CLOSED);
	flow_open(&fl, false, ECNP_FB_DROP, 10, 20);
	r = step(&fl, mkp(A, RST | ACK, 11, 21, 0, NOT_ECT));
	EXPECT_R(r, ECNP_EV_CLOSED);
}

static void test_closed_new_syn_restarts(void **state)
{
	struct flow fl;
	u32 r;

	(void)state;
	CTX("CLOSED: a new SYN from A starts a new incarnation");
	build(&fl, SC_CLOSED);
	r = step(&fl, mkp(A, SYN, 777, 0, 0, NOT_ECT));
	EXPECT_R(r, SET_ECE | SET_CWR);
	EXPECT_STATE(&fl.f, ECNP_S_A_NC);
	EXPECT_EQ(fl.f.a_isn, 777);
	r = step(&fl, mkp(B, SYN | ACK, 9000, 778, 0, NOT_ECT));
	EXPECT_R(r, ECNP_EV_OUT_NEITHER);

	CTX("CLOSED: new SYN to a remembered destination");
	build(&fl, SC_CLOSED);
	r = ecnp_fsm_step(&fl.f, &(struct ecnp_pkt){ .dir = A, .flags = SYN,
			  .seq = 5 }, ECNP_FB_DROP, true);
	EXPECT_R(r, 0);
	EXPECT_STATE(&fl.f, ECNP_S_A_NC);

	CTX("CLOSED: a SYN from B does not restart");
	build(&fl, SC_CLOSED);
	EXPECT_R(step(&fl, mkp(B, SYN, 5, 0, 0, NOT_ECT)), 0);
	EXPECT_STATE(&fl.f, ECNP_S_CLOSED);
}

static void test_fin_closes_once_and_processing_continues(void **state)
{
	struct flow fl;
	size_t i;
	u32 fin_seq, r;

	(void)state;
	for (i = 0; i < ARRAY_SIZE(p2_variants); i++) {
		const struct variant *v = &p2_variants[i];

		CTX("FIN handling [%s]", v->name);
		flow_open(&fl, v->e_is_a, v->mode, v->isn_a, v->isn_b);
		/* data + FIN from N: new data, ECT */
		EXPECT_R(n_send(&fl, FIN, MSS), SET_ECT0);
		fin_seq = fl.n_seq - 1 - MSS;
		/* retransmitted data+FIN and a bare FIN: no ECT */
		EXPECT_R(n_retx(&fl, fin_seq, MSS), 0);
		EXPECT_R(step(&fl, mkp(n_dir(&fl), ACK | FIN, fl.n_seq - 1,
				       fl.e_seq, 0, NOT_ECT)), 0);
		EXPECT_EQ(fl.f.n_nxt, fl.n_seq);
		/* E keeps sending, with CE: stripped, echo starts */
		EXPECT_R(e_send(&fl, 0, MSS, CE, fl.n_seq), CLR_ECN);
		EXPECT_R(n_send(&fl, 0, 0), SET_ECE);
		/* second FIN: closed, exactly once */
		r = e_send(&fl, FIN | CWR, 0, ECT0, fl.n_seq);
		EXPECT_R(r, CLR_CWR | CLR_ECN | ECNP_EV_CLOSED);
		r = step(&fl, mkp(e_dir(&fl), ACK | FIN, fl.e_seq - 1,
				  fl.n_seq, 0, NOT_ECT));
		EXPECT_R(r, 0);
		/* the last ACKs are still handled */
		EXPECT_R(n_send(&fl, 0, 0), 0);
		EXPECT_R(e_send(&fl, ECE, 0, NOT_ECT, fl.n_seq), CLR_ECE);
		EXPECT(ecnp_fsm_in_phase2(&fl.f));
	}
}

/* Port reuse: a SYN with a new ISN after both FINs starts a new flow. */
static void test_port_reuse_after_fins(void **state)
{
	struct flow fl;
	u32 r;

	(void)state;
	CTX("port reuse after FINs");
	flow_open(&fl, true, ECNP_FB_DROP, 100, 200);
	EXPECT_R(n_send(&fl, FIN, 0), 0);
	EXPECT_R(e_send(&fl, FIN, 0, NOT_ECT, fl.n_seq), ECNP_EV_CLOSED);
	r = step(&fl, mkp(A, SYN, 100000, 0, 0, NOT_ECT));
	EXPECT_R(r, SET_ECE | SET_CWR);
	EXPECT_STATE(&fl.f, ECNP_S_A_NC);
	EXPECT_EQ(fl.f.flags & (ECNP_FL_FIN_A | ECNP_FL_FIN_B), 0);
}

/* A SYN with another ISN in the middle of a live flow is left alone. */
static void test_new_isn_syn_midflow_ignored(void **state)
{
	static const enum scen scs[] = {
		SC_A_C, SC_A_NC, SC_SIMOPEN, SC_WAIT_ACK_EA, SC_WAIT_ACK_EB,
		SC_SAME_BOTH, SC_PASS, SC_DEFAULT_EB, SC_ECE_DUPACK,
	};
	struct ecnp_fsm prev;
	struct flow fl;
	size_t i;

	(void)state;
	for (i = 0; i < ARRAY_SIZE(scs); i++) {
		CTX("SYN with a new ISN in %s", scen_names[scs[i]]);
		build(&fl, scs[i]);
		prev = fl.f;
		/* RFC 5961 4: counted as out of the window */
		EXPECT_R(step(&fl, mkp(A, SYN, S_ISN_A + 99999, 0, 0,
				       NOT_ECT)), ECNP_EV_OUT_OF_WINDOW);
		EXPECT(!memcmp(&prev, &fl.f, sizeof(prev)));
	}
}

/* SYN-ACK retransmissions re-apply the same edit and change no state. */
static void test_synack_retx_idempotent(void **state)
{
	struct flow fl;
	struct ecnp_fsm prev;
	struct ecnp_pkt sa;
	u32 first, r;
	int e_is_a, k;

	(void)state;
	for (e_is_a = 0; e_is_a < 2; e_is_a++) {
		CTX("SYN-ACK retransmission, E=%c", e_is_a ? 'A' : 'B');
		memset(&fl, 0, sizeof(fl));
		ecnp_fsm_init(&fl.f);
		fl.mode = ECNP_FB_DROP;
		step(&fl, mkp(A, e_is_a ? SYN | ECE | CWR : SYN, 10, 0, 0,
			      NOT_ECT));
		sa = mkp(B, SYN | ACK | (e_is_a ? 0 : ECE), 0xfffffff0u, 11,
			 0, NOT_ECT);
		first = step(&fl, sa);
		EXPECT_EQ(first & ECNP_EV_MASK, e_is_a ? ECNP_EV_OUT_E_INIT :
			  ECNP_EV_OUT_E_RESP);
		for (k = 0; k < 3; k++) {
			prev = fl.f;
			r = step(&fl, sa);
			EXPECT_R(r, first & ECNP_ACT_MASK);
			EXPECT(!memcmp(&prev, &fl.f, sizeof(prev)));
		}
		/* into phase 2, pick up some state, retransmit again */
		step(&fl, mkp(A, ACK, 11, 0xfffffff1u, 0, NOT_ECT));
		fl.e_is_a = e_is_a;
		fl.n_seq = e_is_a ? 0xfffffff1u : 11;
		fl.e_seq = e_is_a ? 11 : 0xfffffff1u;
		reach(&fl, ECNP_S_ECE_DUPACK);
		for (k = 0; k < 3; k++) {
			prev = fl.f;
			r = step(&fl, sa);
			EXPECT_R(r, first & ECNP_ACT_MASK);
			EXPECT(!memcmp(&prev, &fl.f, sizeof(prev)));
		}
		/* a SYN-ACK carrying ECT from E is made Not-ECT */
		sa.ecn = ECT0;
		r = step(&fl, sa);
		EXPECT_R(r, (first & ECNP_ACT_MASK) |
			 (e_is_a ? 0 : CLR_ECN));
		EXPECT_EQ(apply(sa, r).flags & (ECE | CWR),
			  e_is_a ? ECE : 0);
	}
}

/* A SYN-ACK with another ISN (SYN cookies): A's ACK says which one counts. */
static void test_synack_new_isn_ack_picks_it(void **state)
{
	struct flow fl;

	(void)state;
	CTX("second SYN-ACK with another ISN, N=B");
	memset(&fl, 0, sizeof(fl));
	ecnp_fsm_init(&fl.f);
	fl.mode = ECNP_FB_DROP;
	fl.e_is_a = true;
	step(&fl, mkp(A, SYN | ECE | CWR, 10, 0, 0, NOT_ECT));
	EXPECT_R(step(&fl, mkp(B, SYN | ACK, 500000, 11, 0, NOT_ECT)),
		 SET_ECE | ECNP_EV_OUT_E_INIT);
	EXPECT_R(step(&fl, mkp(B, SYN | ACK, 9000, 11, 0, NOT_ECT)), SET_ECE);
	EXPECT_R(step(&fl, mkp(A, ACK, 11, 9001, 0, NOT_ECT)), 0);
	EXPECT_EQ(fl.f.b_isn, 9000);
	EXPECT_EQ(fl.f.n_nxt, 9001);
	/* B's first data is new data, not a "retransmission" */
	EXPECT_R(step(&fl, mkp(B, ACK, 9001, 11, MSS, NOT_ECT)), SET_ECT0);
}

/* ======================= phase 2 properties ============================= */

/* ECT(0) never on SYN, SYN-ACK, pure ACK, RST, bare FIN, retransmission. */
static void test_ect_never_on_syn_pure_ack_rst_retx(void **state)
{
	struct flow fl;
	size_t i;
	u32 old, r;

	(void)state;
	for (i = 0; i < ARRAY_SIZE(p2_variants); i++) {
		const struct variant *v = &p2_variants[i];
		u8 n;

		CTX("no ECT on non-data or old data [%s]", v->name);
		/* handshake: SYN and SYN-ACK never get ECT (flow_open checks
		 * the exact results)
		 */
		flow_open(&fl, v->e_is_a, v->mode, v->isn_a, v->isn_b);
		n = n_dir(&fl);
		old = fl.n_seq;
		EXPECT_R(n_send(&fl, 0, MSS), SET_ECT0);
		EXPECT_R(n_send(&fl, 0, MSS), SET_ECT0);
		EXPECT_R(n_send(&fl, 0, 0), 0);			/* pure ACK */
		EXPECT_R(n_send(&fl, ECNP_TCP_PSH | ECNP_TCP_URG, 0), 0);
		EXPECT_R(n_retx(&fl, old, MSS), 0);		/* retx */
		EXPECT_R(n_retx(&fl, old + MSS, MSS), 0);	/* retx */
		EXPECT_R(n_retx(&fl, old, 2 * MSS), 0);		/* repacked */
		/* partial overlap with new data counts as retransmission */
		EXPECT_R(n_retx(&fl, fl.n_seq - 10, MSS), 0);
		fl.n_seq += MSS - 10;
		/* SYN-ACK retransmission from N */
		r = step(&fl, mkp(B, SYN | ACK, v->isn_b, v->isn_a + 1, 0,
				  NOT_ECT));
		EXPECT_EQ(r & SET_ECT0, 0);
		/* SYN retransmission from A */
		r = step(&fl, mkp(A, SYN, v->isn_a, 0, 0, NOT_ECT));
		EXPECT_EQ(r & SET_ECT0, 0);
		/* next new data: ECT again (state not disturbed) */
		EXPECT_R(n_send(&fl, 0, MSS), SET_ECT0);
		/* N's own ECT/CE is left alone */
		r = step(&fl, mkp(n, ACK, fl.n_seq, fl.e_seq, MSS, ECT1));
		fl.n_seq += MSS;
		EXPECT_R(r, 0);
		/* RST with data: no ECT */
		r = step(&fl, mkp(n, RST | ACK, fl.n_seq, fl.e_seq, MSS,
				  NOT_ECT));
		EXPECT_R(r, ECNP_EV_CLOSED);
	}
}

/* E->N segments always reach N as plain TCP. */
static void test_e_to_n_always_plain(void **state)
{
	static const u8 states[] = {
		ECNP_S_DEFAULT, ECNP_S_ECE, ECNP_S_DUPACK, ECNP_S_ECE_DUPACK,
	};
	static const u16 fl_bits[] = { 0, ECE, CWR, ECE | CWR };
	struct flow fl;
	struct ecnp_pkt p, seen;
	size_t s, b, i;
	u8 ecn;
	u32 r;

	(void)state;
	for (i = 0; i < ARRAY_SIZE(p2_variants); i++) {
		for (s = 0; s < ARRAY_SIZE(states); s++) {
			for (b = 0; b < ARRAY_SIZE(fl_bits); b++) {
				for (ecn = 0; ecn < 4; ecn++) {
					CTX("E->N plain [%s] state %s flags 0x%x ecn %u",
					    p2_variants[i].name,
					    ecnp_state_name(states[s]),
					    fl_bits[b], ecn);
					flow_open(&fl, p2_variants[i].e_is_a,
						  p2_variants[i].mode,
						  p2_variants[i].isn_a,
						  p2_variants[i].isn_b);
					reach(&fl, states[s]);
					p = mkp(e_dir(&fl), ACK | fl_bits[b],
						fl.e_seq, fl.n_seq, MSS, ecn);
					r = step(&fl, p);
					seen = apply(p, r);
					EXPECT_EQ(seen.ecn, NOT_ECT);
					EXPECT_EQ(seen.flags & (ECE | CWR), 0);
					EXPECT_EQ(r & (DROP | SET_ECT0 |
						       SET_ECE | SET_CWR), 0);
				}
			}
		}
	}
}

/* N's own ECE/CWR never reach E unless the proxy means them. */
static void test_n_to_e_own_ece_cwr_cleared(void **state)
{
	struct flow fl;

	(void)state;
	CTX("N's stray ECE/CWR are cleared");
	flow_open(&fl, false, ECNP_FB_DROP, 1, 2);
	EXPECT_R(n_send(&fl, ECE | CWR, MSS), CLR_ECE | CLR_CWR | SET_ECT0);
	EXPECT_R(n_send(&fl, ECE, 0), CLR_ECE);
	EXPECT_STATE(&fl.f, ECNP_S_DEFAULT);
}

static void test_ece_echo_until_cwr(void **state)
{
	struct flow fl;
	size_t i;
	int k;

	(void)state;
	for (i = 0; i < ARRAY_SIZE(p2_variants); i++) {
		const struct variant *v = &p2_variants[i];

		CTX("ECE echoed until CWR [%s]", v->name);
		flow_open(&fl, v->e_is_a, v->mode, v->isn_a, v->isn_b);
		/* CE on a pure ACK is not echoed (tcp_ecn_check_ce) */
		EXPECT_R(e_send(&fl, 0, 0, CE, fl.n_seq), CLR_ECN);
		EXPECT_STATE(&fl.f, ECNP_S_DEFAULT);
		EXPECT_R(e_send(&fl, 0, MSS, CE, fl.n_seq), CLR_ECN);
		for (k = 0; k < 5; k++) {
			EXPECT_R(n_send(&fl, 0, 0), SET_ECE);
			EXPECT_R(n_send(&fl, 0, MSS), SET_ECE | SET_ECT0);
			EXPECT_R(e_send(&fl, 0, MSS, ECT0, fl.n_seq), CLR_ECN);
		}
		/* CWR together with CE: the echo goes on (RFC 3168 6.1.3) */
		EXPECT_R(e_send(&fl, CWR, MSS, CE, fl.n_seq),
			 CLR_CWR | CLR_ECN);
		EXPECT_STATE(&fl.f, ECNP_S_ECE);
		EXPECT_R(n_send(&fl, 0, 0), SET_ECE);
		/* CWR alone: it stops */
		EXPECT_R(e_send(&fl, CWR, MSS, ECT0, fl.n_seq),
			 CLR_CWR | CLR_ECN);
		EXPECT_STATE(&fl.f, ECNP_S_DEFAULT);
		EXPECT_R(n_send(&fl, 0, 0), 0);
		EXPECT_R(n_send(&fl, 0, MSS), SET_ECT0);
	}
}

/* Once per window: further ECEs start no event until E's ACK passes. */
static void test_once_per_window(void **state)
{
	struct flow fl;
	size_t i;
	u32 recover, hole;
	int k;

	(void)state;
	for (i = 0; i < ARRAY_SIZE(p2_variants); i++) {
		const struct variant *v = &p2_variants[i];

		CTX("once per window [%s]", v->name);
		flow_open(&fl, v->e_is_a, v->mode, v->isn_a, v->isn_b);
		for (k = 0; k < 10; k++)
			n_send(&fl, 0, MSS);
		recover = fl.n_seq;
		EXPECT_R(e_send(&fl, ECE, 0, NOT_ECT, recover - 9 * MSS),
			 CLR_ECE);
		EXPECT_STATE(&fl.f, ECNP_S_DUPACK);
		EXPECT_EQ(fl.f.recover, recover);
		/* more ECEs, before the signal: nothing new */
		for (k = 8; k >= 0; k--)
			EXPECT_R(e_send(&fl, ECE, 0, NOT_ECT,
					recover - k * MSS), CLR_ECE);
		EXPECT_STATE(&fl.f, ECNP_S_DUPACK);
		EXPECT_EQ(fl.f.recover, recover);
		/* the signal */
		hole = fl.n_seq;
		EXPECT_R(n_send(&fl, 0, MSS), DROP | ECNP_EV_CONG_SIGNAL);
		EXPECT_R(n_send(&fl, 0, MSS), SET_ECT0 | SET_CWR);
		/* ECEs up to and at recover: no new event */
		for (k = 0; k < 5; k++) {
			EXPECT_R(e_send(&fl, ECE, 0, NOT_ECT, hole), CLR_ECE);
			EXPECT_STATE(&fl.f, ECNP_S_DEFAULT);
			EXPECT_R(n_send(&fl, 0, MSS), SET_ECT0);
		}
		EXPECT_EQ(hole, recover);
		/* the retransmission fills the hole; its ACK passes recover */
		EXPECT_R(n_retx(&fl, hole, MSS), 0);
		EXPECT(fl.f.flags & ECNP_FL_IN_WINDOW);
		EXPECT_R(e_send(&fl, 0, 0, NOT_ECT, fl.n_seq), 0);
		EXPECT(!(fl.f.flags & ECNP_FL_IN_WINDOW));
		/* new congestion: a new event */
		EXPECT_R(e_send(&fl, ECE, 0, NOT_ECT, fl.n_seq), CLR_ECE);
		EXPECT_STATE(&fl.f, ECNP_S_DUPACK);
		EXPECT_EQ(fl.f.recover, fl.n_seq);
		EXPECT_R(n_send(&fl, 0, MSS), DROP | ECNP_EV_CONG_SIGNAL);
	}
}

/* Once per window across the 2^32 wrap, with the window straddling 0. */
static void test_once_per_window_wraparound(void **state)
{
	static const u32 isns[] = {
		0xffffd000u, 0xfffffffeu, 0xffffffffu, 0x7fffff00u,
	};
	struct flow fl;
	size_t i;
	int round, k, events;
	u32 hole, r;

	(void)state;
	for (i = 0; i < ARRAY_SIZE(isns); i++) {
		CTX("once per window, wraparound, N ISN 0x%08x", isns[i]);
		flow_open(&fl, false, ECNP_FB_DROP, isns[i], 0x1234);
		events = 0;
		for (round = 0; round < 8; round++) {
			for (k = 0; k < 6; k++)
				EXPECT_R(n_send(&fl, 0, MSS), SET_ECT0);
			/* many ECEs for this window */
			for (k = 0; k < 6; k++) {
				r = e_send(&fl, ECE, 0, NOT_ECT,
					   fl.n_seq - (6 - k) * MSS);
				EXPECT_R(r, CLR_ECE);
			}
			hole = fl.n_seq;
			r = n_send(&fl, 0, MSS);
			EXPECT_R(r, DROP | ECNP_EV_CONG_SIGNAL);
			events++;
			EXPECT_R(n_send(&fl, 0, MSS), SET_ECT0 | SET_CWR);
			EXPECT_R(e_send(&fl, ECE, 0, NOT_ECT, hole), CLR_ECE);
			EXPECT_R(n_send(&fl, 0, MSS), SET_ECT0);
			EXPECT_R(n_retx(&fl, hole, MSS), 0);
			EXPECT_R(e_send(&fl, 0, 0, NOT_ECT, fl.n_seq), 0);
			EXPECT_STATE(&fl.f, ECNP_S_DEFAULT);
		}
		EXPECT_EQ(events, 8);
		/* the sequence space did wrap for the low ISNs */
		if (isns[i] > 0xffff0000u)
			EXPECT(fl.n_seq < isns[i]);
	}
}

/* While a CWR is still owed to E, its ECEs are stale: no new event. */
static void test_stale_ece_while_cwr_pending(void **state)
{
	struct flow fl;
	u32 hole;

	(void)state;
	CTX("stale ECE while CWR is pending");
	flow_open(&fl, false, ECNP_FB_DROP, 0xfffff000u, 5);
	n_send(&fl, 0, MSS);
	EXPECT_R(e_send(&fl, ECE, 0, NOT_ECT, fl.n_seq), CLR_ECE);
	hole = fl.n_seq;
	/* N's last segment is the one dropped; no later new data */
	EXPECT_R(n_send(&fl, 0, MSS), DROP | ECNP_EV_CONG_SIGNAL);
	/* N retransmits it (no CWR on retransmissions) */
	EXPECT_R(n_retx(&fl, hole, MSS), 0);
	/* E never saw CWR: it still echoes, with an ACK past recover */
	EXPECT_R(e_send(&fl, ECE, 0, NOT_ECT, fl.n_seq), CLR_ECE);
	EXPECT_STATE(&fl.f, ECNP_S_DEFAULT);
	EXPECT_R(e_send(&fl, ECE, 0, NOT_ECT, fl.n_seq), CLR_ECE);
	EXPECT_STATE(&fl.f, ECNP_S_DEFAULT);
	/* new data carries the CWR */
	EXPECT_R(n_send(&fl, 0, MSS), SET_ECT0 | SET_CWR);
	/* E acks it, without ECE; then a real new ECE is an event again */
	EXPECT_R(e_send(&fl, 0, 0, NOT_ECT, fl.n_seq), 0);
	EXPECT_R(e_send(&fl, ECE, 0, NOT_ECT, fl.n_seq), CLR_ECE);
	EXPECT_STATE(&fl.f, ECNP_S_DUPACK);
}

static void test_cwr_set_once_after_response(void **state)
{
	struct flow fl;
	size_t i;
	u32 old;
	int k;

	(void)state;
	for (i = 0; i < ARRAY_SIZE(p2_variants); i++) {
		const struct variant *v = &p2_variants[i];

		CTX("CWR once after the response [%s]", v->name);
		flow_open(&fl, v->e_is_a, v->mode, v->isn_a, v->isn_b);
		old = fl.n_seq;
		reach(&fl, ECNP_S_DUPACK);
		/* before the signal: no CWR anywhere */
		EXPECT_R(n_send(&fl, CWR, 0), CLR_CWR);
		EXPECT_R(n_send(&fl, 0, MSS), DROP | ECNP_EV_CONG_SIGNAL);
		/* pure ACKs and retransmissions do not take the CWR */
		EXPECT_R(n_send(&fl, 0, 0), 0);
		EXPECT_R(n_retx(&fl, old, MSS), 0);
		EXPECT_R(n_send(&fl, 0, MSS), SET_CWR | SET_ECT0);
		for (k = 0; k < 5; k++)
			EXPECT_R(n_send(&fl, 0, MSS), SET_ECT0);
		/* N's own CWR on new data when none is due: cleared */
		EXPECT_R(n_send(&fl, CWR, MSS), CLR_CWR | SET_ECT0);
	}
}

/* none: never ECT; E's ECE still gets its CWR, but no drop, no event. */
static void test_none_mode_never_ect(void **state)
{
	struct flow fl;
	u32 r, old;
	int k, e_is_a;

	(void)state;
	for (e_is_a = 0; e_is_a < 2; e_is_a++) {
		CTX("mode none, E=%c", e_is_a ? 'A' : 'B');
		flow_open(&fl, e_is_a, ECNP_FB_NONE, 0xffffff00u, 77);
		old = fl.n_seq;
		for (k = 0; k < 20; k++) {
			r = n_send(&fl, 0, MSS);
			EXPECT_EQ(r & (SET_ECT0 | DROP), 0);
			r = n_retx(&fl, old, MSS);
			EXPECT_EQ(r & (SET_ECT0 | DROP), 0);
			/* echo of CE on E's data still works */
			r = e_send(&fl, k == 3 ? CWR : 0, MSS,
				   k == 2 ? CE : ECT0, fl.n_seq);
			EXPECT_EQ(r & CLR_ECN, CLR_ECN);
		}
		EXPECT_STATE(&fl.f, ECNP_S_DEFAULT);
		/* an ECE from E: no DUPACK, no drop, no event; one CWR */
		r = e_send(&fl, ECE, 0, NOT_ECT, fl.n_seq);
		EXPECT_R(r, CLR_ECE);
		EXPECT_STATE(&fl.f, ECNP_S_DEFAULT);
		EXPECT_R(n_send(&fl, 0, 0), 0);
		EXPECT_R(n_send(&fl, 0, MSS), SET_CWR);
		EXPECT_R(n_send(&fl, 0, MSS), 0);
		EXPECT(!ecnp_fsm_wants_drop(&fl.f, &(struct ecnp_pkt){
			.dir = n_dir(&fl), .flags = ACK, .seq = fl.n_seq,
			.len = MSS }, ECNP_FB_NONE));
	}
}

/* The mode may change at run time while a signal is pending. */
static void test_mode_switch_while_pending(void **state)
{
	struct flow fl;

	(void)state;
	CTX("drop -> none while DUPACK");
	flow_open(&fl, false, ECNP_FB_DROP, 1, 2);
	reach(&fl, ECNP_S_DUPACK);
	fl.mode = ECNP_FB_NONE;
	EXPECT_R(n_send(&fl, 0, MSS), SET_CWR);
	EXPECT_STATE(&fl.f, ECNP_S_DEFAULT);

	CTX("none -> drop: ECT resumes on new data only");
	fl.mode = ECNP_FB_DROP;
	EXPECT_R(n_retx(&fl, 2, MSS), 0);
	EXPECT_R(n_send(&fl, 0, MSS), SET_ECT0);

	CTX("drop -> dupack while DUPACK: the next suitable ACK gives it");
	reach(&fl, ECNP_S_DUPACK);
	fl.mode = ECNP_FB_DUPACK;
	EXPECT_R(n_send(&fl, 0, MSS), SET_ECT0);
	EXPECT_STATE(&fl.f, ECNP_S_DUPACK);
	n_send(&fl, 0, MSS);
	n_send(&fl, 0, MSS);
	n_send(&fl, 0, MSS);
	n_send(&fl, 0, MSS);
	EXPECT_R(e_send(&fl, 0, 0, NOT_ECT, fl.n_seq - 4 * MSS),
		 ECNP_ACT_INJECT_DUPACKS | ECNP_EV_CONG_SIGNAL);
	EXPECT_STATE(&fl.f, ECNP_S_DEFAULT);
}

/* ---- dupack: the simulated loss ------------------------------------------ */

static u32 rnd(u32 *s);
static struct ecnp_pkt last_e;

/* A pure ACK from E, remembered in last_e. */
static struct ecnp_pkt e_ack_pkt(struct flow *fl, u16 flags, u32 ack, u8 opt,
				 u32 tsecr, u16 win)
{
	struct ecnp_pkt p = mkp(e_dir(fl), ACK | flags, fl->e_seq, ack, 0,
				NOT_ECT);

	p.opt = opt;
	p.tsval = 777;
	p.tsecr = tsecr;
	p.win = win;
	last_e = p;
	return p;
}

static u32 e_ack(struct flow *fl, u16 flags, u32 ack, u8 opt, u32 tsecr,
		 u16 win)
{
	return step(fl, e_ack_pkt(fl, flags, ack, opt, tsecr, win));
}

/* N negotiated SACK (what the handshake tests set from the options). */
static void flow_sack(struct flow *fl)
{
	fl->f.dflags |= ECNP_DF_SACK_A | ECNP_DF_SACK_B;
}

static struct ecnp_ack_edit edit_of(struct flow *fl, u32 r)
{
	struct ecnp_ack_edit e;

	ecnp_fsm_ack_edit(&fl->f, &last_e, r, &e);
	return e;
}

/* N retransmits one segment at @seq with TSval @tsval. */
static u32 n_retx_ts(struct flow *fl, u32 seq, u32 tsval, bool *wd)
{
	struct ecnp_pkt p = mkp(n_dir(fl), ACK, seq, fl->e_seq, MSS, NOT_ECT);

	p.opt = ECNP_OPT_TS;
	p.tsval = tsval;
	*wd = ecnp_fsm_wants_drop(&fl->f, &p, fl->mode);
	return step(fl, p);
}

static void test_dupack_handshake_sack(void **state)
{
	struct ecnp_fsm f;
	struct ecnp_pkt syn = mkp(A, SYN, 5, 0, 0, NOT_ECT);
	struct ecnp_pkt sa = mkp(B, SYN | ACK | ECE, 77, 6, 0, NOT_ECT);
	int a, b;

	(void)state;
	for (a = 0; a < 2; a++) {
		for (b = 0; b < 2; b++) {
			CTX("SACK-permitted on SYN %d, SYN-ACK %d", a, b);
			ecnp_fsm_init(&f);
			syn.opt = a ? ECNP_OPT_SACK_PERM : 0;
			sa.opt = b ? ECNP_OPT_SACK_PERM : 0;
			ecnp_fsm_step(&f, &syn, ECNP_FB_DUPACK, false);
			ecnp_fsm_step(&f, &sa, ECNP_FB_DUPACK, false);
			EXPECT_EQ(ecnp_sack_ok(&f), a && b);
		}
	}
}

/* The signal's action: injected duplicates without SACK, none with it. */
#define DUPACK_SIG(sack) ((sack) ? 0 : ECNP_ACT_INJECT_DUPACKS)

static void dupack_basic(bool sack, bool ts)
{
	static const struct { bool e_is_a; u32 ia, ib; } v[] = {
		{ false, 0x1000, 0x7000 },
		{ true, 0xfffffe00u, 0xfffffc00u },	/* wraps */
	};
	struct ecnp_ack_edit e;
	u8 opt = ts ? ECNP_OPT_TS : 0;
	struct flow fl;
	u32 r, u, end1;
	size_t i;
	bool wd;
	int k;

	for (i = 0; i < ARRAY_SIZE(v); i++) {
		CTX("dupack sack %d ts %d E=%c", sack, ts, v[i].e_is_a ? 'A' : 'B');
		flow_open(&fl, v[i].e_is_a, ECNP_FB_DUPACK, v[i].ia, v[i].ib);
		if (sack)
			flow_sack(&fl);
		for (k = 0; k < 10; k++)
			EXPECT_R(n_send(&fl, 0, MSS), SET_ECT0);
		EXPECT_EQ(fl.f.smss, MSS);
		u = fl.n_seq - 8 * MSS;
		/* the ECE: forwarded (stripped), then the duplicates */
		r = e_ack(&fl, ECE, u, opt, 100, 500);
		EXPECT_R(r, CLR_ECE | DUPACK_SIG(sack) | ECNP_EV_CONG_SIGNAL);
		EXPECT_STATE(&fl.f, ECNP_S_DEFAULT);
		EXPECT(fl.f.dflags & ECNP_DF_HOLD);
		EXPECT_EQ(fl.f.saved_ack, u);
		EXPECT_EQ(fl.f.hold_end, fl.n_seq);
		EXPECT_EQ(fl.f.dup_cnt, 0);
		EXPECT_EQ(fl.f.dup_shown, sack ? 0 : ECNP_DUPACKS);
		/*
		 * Without SACK, E's first ACKs after the event are absorbed
		 * (test_dupack_no_sack_absorbs); here, as if N had been shown
		 * no duplicate yet, only those showing no segment above L.
		 */
		fl.f.dup_shown = 0;
		e = edit_of(&fl, r);
		EXPECT_EQ(e.ack, u);
		EXPECT_EQ(e.win, 500);
		EXPECT(!e.set_tsecr);
		if (sack) {
			/* the ACK as E sent it: no block claimed */
			EXPECT(!e.lost && !e.sack);
		} else {
			EXPECT_EQ(e.lost_start, u);
			EXPECT_EQ(e.lost_end, u + MSS);
			/* the copies: no limit, L and E's D-SACK left out */
			EXPECT(e.lost && !e.limit && e.no_dsack && !e.sack);
		}
		/* an ECE while the loss is simulated: no new event */
		EXPECT_R(e_ack(&fl, ECE, u, opt, 100, 500),
			 CLR_ECE | ECNP_ACT_HOLD_ACK);
		/* (without SACK, a repeat of U: shown, and counted) */
		EXPECT_EQ(fl.f.dup_shown, !sack);
		fl.f.dup_shown = 0;
		/* N's new data carries the CWR */
		EXPECT_R(n_send(&fl, 0, MSS), SET_ECT0 | SET_CWR);
		end1 = fl.n_seq;
		/* N retransmits L: suppressed once, N's clock remembered */
		r = n_retx_ts(&fl, u, 5000, &wd);
		EXPECT(wd);
		EXPECT_R(r, suppressed(&fl));
		EXPECT_EQ(fl.f.hold_end, end1);
		EXPECT_EQ(fl.f.recover, end1);
		if (ts) {
			/* sent before the retransmission, seen after it */
			struct ecnp_pkt late = mkp(n_dir(&fl), ACK, fl.n_seq,
						   fl.e_seq, MSS, NOT_ECT);

			late.opt = ECNP_OPT_TS;
			late.tsval = 4999;
			fl.n_seq += MSS;
			EXPECT_R(step(&fl, late), SET_ECT0);
			end1 = fl.n_seq;
			EXPECT_EQ(fl.f.hold_end, end1);
			/* one of the same tick does not extend the hold */
			late.seq = fl.n_seq;
			late.tsval = 5000;
			fl.n_seq += MSS;
			EXPECT_R(step(&fl, late), SET_ECT0);
			EXPECT_EQ(fl.f.hold_end, end1);
		}
		/* a second one would end the hold: tested separately */
		/* E's progress is held at L and shown as SACK */
		r = e_ack(&fl, 0, u + 2 * MSS, opt, 4000, 600);
		EXPECT_R(r, ECNP_ACT_HOLD_ACK);
		e = edit_of(&fl, r);
		EXPECT_EQ(e.ack, u);
		EXPECT_EQ(e.win, 500);
		/* held: L and beyond hold_end left out, E's D-SACK kept */
		EXPECT(e.lost && e.limit && !e.no_dsack);
		EXPECT_EQ(e.sack_limit, fl.f.hold_end);
		EXPECT_EQ(e.set_tsecr, ts);
		if (ts)
			EXPECT_EQ(e.tsecr, 0);
		EXPECT_EQ(e.sack, sack);
		if (sack) {
			EXPECT_EQ(e.sack_start, u + MSS);
			EXPECT_EQ(e.sack_end, u + 2 * MSS);
		}
		/* ACK of L only: nothing to SACK (nor to show, without) */
		r = e_ack(&fl, 0, u + MSS, opt, 4000, 600);
		if (sack) {
			e = edit_of(&fl, r);
			EXPECT_EQ(e.ack, u);
			EXPECT(!e.sack);
		} else {
			EXPECT_R(r, DROP | ECNP_EV_ACK_ABSORBED);
		}
		/* an old ACK (below L) is left alone */
		EXPECT_R(e_ack(&fl, 0, u - MSS, opt, 4000, 600), 0);
		/* a fresh TSecr is not touched */
		e = edit_of(&fl, e_ack(&fl, 0, end1 - MSS, opt, 5001, 600));
		EXPECT(!e.set_tsecr);
		/* E acks all N had sent at its retransmission: released */
		r = e_ack(&fl, 0, end1, opt, 4999, 600);
		EXPECT_R(r, ts ? ECNP_ACT_SET_TSECR : 0);
		EXPECT(!(fl.f.dflags & ECNP_DF_HOLD));
		e = edit_of(&fl, r);
		EXPECT_EQ(e.ack, end1);
		EXPECT_EQ(e.win, 600);
		/* released: E's blocks as they are, but one touching L */
		EXPECT(!e.limit && !e.no_dsack && !e.sack);
		EXPECT_EQ(e.lost, ts);
		if (ts)
			EXPECT_EQ(e.tsecr, 0);
		EXPECT_R(e_ack(&fl, 0, end1, opt, 6000, 600), 0);
		/* after the release, a stale echo is still fixed */
		EXPECT_R(e_ack(&fl, 0, end1, opt, 4998, 600),
			 ts ? ECNP_ACT_SET_TSECR : 0);
		/* next window: a new event */
		for (k = 0; k < 6; k++)
			n_send(&fl, 0, MSS);
		EXPECT_R(e_ack(&fl, ECE, end1 + MSS, opt, 6000, 600),
			 CLR_ECE | DUPACK_SIG(sack) | ECNP_EV_CONG_SIGNAL);
	}
}

static void test_dupack_sack_ts(void **state)
{
	(void)state;
	dupack_basic(true, true);
	dupack_basic(true, false);
}

static void test_dupack_no_sack_no_ts(void **state)
{
	(void)state;
	dupack_basic(false, true);
	dupack_basic(false, false);
}

/* Too little in flight for three duplicates: wait; never drop new data. */
static void test_dupack_waits_for_flight(void **state)
{
	struct ecnp_pkt p;
	struct flow fl;
	u32 r, hole_end;
	int k;

	(void)state;
	CTX("dupack waits for four segments in flight");
	flow_open(&fl, false, ECNP_FB_DUPACK, 1, 2);
	/* no data yet: smss unknown */
	EXPECT_R(e_ack(&fl, ECE, fl.n_seq, 0, 0, 9), CLR_ECE);
	EXPECT_STATE(&fl.f, ECNP_S_DUPACK);
	n_send(&fl, 0, MSS);
	n_send(&fl, 0, MSS);
	EXPECT_R(e_ack(&fl, 0, fl.n_seq - 2 * MSS, 0, 0, 9), 0);
	EXPECT_STATE(&fl.f, ECNP_S_DUPACK);
	/* new data in dupack mode is never dropped */
	p = mkp(n_dir(&fl), ACK, fl.n_seq, fl.e_seq, MSS, NOT_ECT);
	EXPECT(!ecnp_fsm_wants_drop(&fl.f, &p, ECNP_FB_DUPACK));
	EXPECT_R(n_send(&fl, 0, MSS), SET_ECT0);
	EXPECT_R(n_send(&fl, 0, MSS), SET_ECT0);
	EXPECT_R(e_ack(&fl, 0, fl.n_seq - 3 * MSS, 0, 0, 9), 0);
	EXPECT_R(n_send(&fl, 0, MSS), SET_ECT0);
	/* an ACK carrying data does not start it either */
	EXPECT_R(e_send(&fl, 0, MSS, NOT_ECT, fl.n_seq - 4 * MSS), 0);
	/* nor a pure ACK repeating its ACK number: a duplicate ACK */
	EXPECT_R(e_ack(&fl, 0, fl.n_seq - 4 * MSS, 0, 0, 9), 0);
	EXPECT_STATE(&fl.f, ECNP_S_DUPACK);
	/* a hole at E: nor an ACK below what N had sent by then */
	EXPECT(fl.f.e_rep);
	hole_end = fl.n_seq;
	for (k = 0; k < 4; k++)
		EXPECT_R(n_send(&fl, 0, MSS), SET_ECT0);
	EXPECT_R(e_ack(&fl, 0, hole_end - MSS, 0, 0, 9), 0);
	EXPECT_STATE(&fl.f, ECNP_S_DUPACK);
	/* E acks all of it: the hole is closed, the signal given */
	r = e_ack(&fl, 0, hole_end, 0, 0, 9);
	EXPECT_EQ(fl.f.e_rep, 0);
	EXPECT_R(r, ECNP_ACT_INJECT_DUPACKS | ECNP_EV_CONG_SIGNAL);
	EXPECT_STATE(&fl.f, ECNP_S_DEFAULT);
	EXPECT_R(n_send(&fl, 0, MSS), SET_ECT0 | SET_CWR);
}

/*
 * A SACK flow in @mode, 2 of N's segments out, E's ECE ACK for the first:
 * the signal with L alone in flight.  Return: L's start.
 */
static u32 one_in_flight_signal_in(struct flow *fl, enum ecnp_feedback mode)
{
	u32 u;

	flow_open(fl, false, mode, 0x7ffff000u, 5);
	flow_sack(fl);
	EXPECT_R(n_send(fl, 0, MSS), SET_ECT0);
	EXPECT_R(n_send(fl, 0, MSS), SET_ECT0);
	u = fl->n_seq - MSS;
	EXPECT_R(e_ack(fl, ECE, u, 0, 0, 500), CLR_ECE | ECNP_EV_CONG_SIGNAL);
	return u;
}

static u32 one_in_flight_signal(struct flow *fl)
{
	return one_in_flight_signal_in(fl, ECNP_FB_DUPACK);
}

/*
 * A flow with SACK in @mode: N sends @flight + 1 segments.  Return: the
 * ACK number that leaves @flight of them in flight beyond it.
 */
static u32 sack_flight_at(struct flow *fl, enum ecnp_feedback mode,
			  int flight, u32 isn)
{
	int k;

	flow_open(fl, false, mode, isn, 5);
	flow_sack(fl);
	for (k = 0; k <= flight; k++)
		EXPECT_R(n_send(fl, 0, MSS), SET_ECT0);
	return fl->n_seq - flight * MSS;
}

static u32 sack_flight(struct flow *fl, enum ecnp_feedback mode, int flight)
{
	return sack_flight_at(fl, mode, flight, 0x7ffff000u);
}

/*
 * With SACK, one segment in flight is enough: E's held ACKs SACK what N
 * sends above L and RACK marks L lost.  A sender at a small window (2-4
 * segments: 10 Mbit/s, a few ms of RTT) otherwise got a signal for few
 * marked round trips, and none at two segments, while an ECN sender
 * beside it reduced at every one (results/fairness-upload-20261123,
 * results/fairness-rtt0-20261202).  Nothing is claimed.
 */
static void test_dupack_sack_small_window(void **state)
{
	static const int flights[] = { 2, 3, 4, 9 };
	struct ecnp_ack_edit e;
	struct flow fl;
	size_t i;
	u32 r, u;
	int k;

	(void)state;
	for (i = 0; i < ARRAY_SIZE(flights); i++) {
		CTX("dupack with SACK, %d segments in flight", flights[i]);
		u = sack_flight(&fl, ECNP_FB_DUPACK, flights[i]);
		/* the signal: nothing injected, the ACK goes out as it is */
		r = e_ack(&fl, ECE, u, 0, 0, 500);
		EXPECT_R(r, CLR_ECE | ECNP_EV_CONG_SIGNAL);
		EXPECT(fl.f.dflags & ECNP_DF_HOLD);
		EXPECT_EQ(fl.f.claimed, 0);
		/*
		 * E's next ACK acks everything N sent: held all the same,
		 * as N has been shown nothing yet; its SACK block is E's
		 * real progress, no further than E's ACK
		 */
		r = e_ack(&fl, 0, fl.n_seq, 0, 0, 500);
		EXPECT_R(r, ECNP_ACT_HOLD_ACK);
		e = edit_of(&fl, r);
		EXPECT_EQ(e.ack, u);
		EXPECT(e.sack);
		EXPECT_EQ(e.sack_start, u + MSS);
		EXPECT_EQ(e.sack_end, fl.n_seq);
		/*
		 * N's retransmission of L: E has acked all N sent, so no
		 * other ACK of E's would end the hold if N has nothing more
		 * to send (N would wait for its RTO).  Its first byte goes
		 * on, ECT (dropped at the bottleneck, N would wait for its
		 * RTO), which E answers at once; not the whole copy, which
		 * would take a segment of the bottleneck for nothing.
		 */
		r = n_retx(&fl, u, MSS);
		EXPECT_R(r, SUPPRESS);
		EXPECT(fl.f.dflags & ECNP_DF_HOLD);
		if (flights[i] == 2) {
			/*
			 * E answers the duplicate with its real ACK and a
			 * D-SACK for L: that ends the hold, the D-SACK left
			 * out (it would undo N's reduction)
			 */
			r = e_ack(&fl, 0, fl.n_seq, ECNP_OPT_DSACK, 0, 500);
			EXPECT_R(r, ECNP_ACT_SET_TSECR | ECNP_ACT_NO_DSACK);
			EXPECT(!(fl.f.dflags & ECNP_DF_HOLD));
			e = edit_of(&fl, r);
			EXPECT_EQ(e.ack, fl.n_seq);
			EXPECT(!e.set_tsecr && e.lost && !e.sack && e.no_dsack);
			EXPECT_EQ(e.lost_start, u);
			EXPECT_EQ(e.lost_end, u + MSS);
			/*
			 * a later one, without timestamps too: options are
			 * read until the next event (ecnp_fsm_wants_opts()),
			 * and a D-SACK is left out (the one for the byte of
			 * a trimmed copy may come after the release)
			 */
			EXPECT(ecnp_fsm_wants_opts(&fl.f, ACK, ECNP_FB_DUPACK));
			r = e_ack(&fl, 0, fl.n_seq, ECNP_OPT_DSACK, 0, 500);
			EXPECT_R(r, ECNP_ACT_SET_TSECR | ECNP_ACT_NO_DSACK);
			e = edit_of(&fl, r);
			EXPECT(!e.set_tsecr && e.no_dsack);
			continue;
		}
		/* or N sends new data: E's ACK of it releases the hold */
		EXPECT_R(n_send(&fl, 0, MSS), SET_ECT0 | SET_CWR);
		EXPECT_R(e_ack(&fl, 0, fl.n_seq, 0, 0, 500), 0);
		EXPECT(!(fl.f.dflags & ECNP_DF_HOLD));
	}

	/*
	 * At Linux's floor of two segments, L alone is in flight when E's
	 * ECE ACK arrives: the signal all the same.  N sends one segment
	 * on it; E's ACK of L is held as a plain duplicate (nothing above
	 * L yet), its ACK of that segment shows it SACKed.
	 */
	CTX("dupack with SACK, one segment in flight: signal");
	u = one_in_flight_signal(&fl);
	EXPECT(fl.f.dflags & ECNP_DF_HOLD);
	EXPECT_R(n_send(&fl, 0, MSS), SET_ECT0 | SET_CWR);
	r = e_ack(&fl, 0, u + MSS, 0, 0, 500);
	EXPECT_R(r, ECNP_ACT_HOLD_ACK);
	e = edit_of(&fl, r);
	EXPECT(e.ack == u && !e.sack);
	r = e_ack(&fl, 0, fl.n_seq, 0, 0, 500);
	EXPECT_R(r, ECNP_ACT_HOLD_ACK);
	e = edit_of(&fl, r);
	EXPECT(e.ack == u && e.sack);
	EXPECT(e.sack_start == u + MSS && e.sack_end == fl.n_seq);
	/* E has all N sent: the copy's first byte goes on, E's answer ends it */
	EXPECT_R(n_retx(&fl, u, MSS), SUPPRESS);
	r = e_ack(&fl, 0, fl.n_seq, ECNP_OPT_DSACK, 0, 500);
	EXPECT_R(r, ECNP_ACT_SET_TSECR | ECNP_ACT_NO_DSACK);
	EXPECT(!(fl.f.dflags & ECNP_DF_HOLD));

	/*
	 * N sends nothing on the signal (application-limited): E's ACK of
	 * L acks all N sent and nothing above L can be shown, so RACK
	 * would never fire and N would wait for its loss probe.  The
	 * signal is withdrawn: that ACK goes as E sent it, no CWR is set
	 * later, and the signal is pending for the next ACK that has a
	 * segment in flight beyond it.
	 */
	CTX("dupack with SACK, one segment in flight, N sends no more");
	u = one_in_flight_signal(&fl);
	r = e_ack(&fl, ECE, fl.n_seq, 0, 0, 500);
	EXPECT_R(r, CLR_ECE | ECNP_EV_SIGNAL_WITHDRAWN);
	EXPECT(!(fl.f.dflags & ECNP_DF_HOLD));
	EXPECT_STATE(&fl.f, ECNP_S_DUPACK);
	EXPECT(!(fl.f.flags & (ECNP_FL_CWR_PENDING | ECNP_FL_IN_WINDOW)));
	/* nothing in flight beyond an ACK: still pending */
	EXPECT_R(n_send(&fl, 0, MSS), SET_ECT0);
	EXPECT_R(e_ack(&fl, 0, fl.n_seq, 0, 0, 500), 0);
	EXPECT_STATE(&fl.f, ECNP_S_DUPACK);
	/* half a segment beyond it is not a segment either */
	EXPECT_R(n_send(&fl, 0, MSS / 2), SET_ECT0);
	EXPECT_R(n_send(&fl, 0, MSS), SET_ECT0);
	EXPECT_R(e_ack(&fl, 0, fl.n_seq - MSS / 2, 0, 0, 500), 0);
	EXPECT_STATE(&fl.f, ECNP_S_DUPACK);
	/*
	 * L and half a segment: the held ACK's block would cover part of
	 * a packet, which Linux ignores (RACK would never fire)
	 */
	EXPECT_R(n_send(&fl, 0, MSS), SET_ECT0);
	EXPECT_R(n_send(&fl, 0, MSS / 2), SET_ECT0);
	EXPECT_R(e_ack(&fl, 0, fl.n_seq - MSS - MSS / 2, 0, 0, 500), 0);
	EXPECT_STATE(&fl.f, ECNP_S_DUPACK);
	/* L alone, all N has sent: the signal */
	EXPECT_R(n_send(&fl, 0, MSS), SET_ECT0);
	u = fl.n_seq - MSS;
	EXPECT_R(e_ack(&fl, 0, u, 0, 0, 500), ECNP_EV_CONG_SIGNAL);
	EXPECT(fl.f.dflags & ECNP_DF_HOLD);
	EXPECT_R(n_send(&fl, 0, MSS), SET_ECT0 | SET_CWR);

	CTX("dupack without SACK, three segments in flight: waits");
	flow_open(&fl, false, ECNP_FB_DUPACK, 0x7ffff000u, 5);
	for (k = 0; k < 4; k++)
		EXPECT_R(n_send(&fl, 0, MSS), SET_ECT0);
	EXPECT_R(e_ack(&fl, ECE, fl.n_seq - 3 * MSS, 0, 0, 500), CLR_ECE);
	EXPECT_STATE(&fl.f, ECNP_S_DUPACK);
	EXPECT(!(fl.f.dflags & ECNP_DF_HOLD));
}

static u32 nosack_window_signal(struct flow *fl);

/* N retransmits @len bytes at @seq; the plumbing's flags @pflags. */
static u32 n_retx_pf(struct flow *fl, u32 seq, u32 len, u8 pflags)
{
	struct ecnp_pkt p = mkp(n_dir(fl), ACK, seq, fl->e_seq, len, NOT_ECT);

	p.pflags = pflags;
	return step(fl, p);
}

/*
 * dupack-fast at Linux's floor (a SACK flow, L and one more segment sent,
 * E's ECE ACK leaves L alone in flight): N sends one segment on the
 * signal; E's ACK of L, then its ACK of all N sent, are held, each kept
 * (ECNP_ACT_STASH) as E's newest.  Return: L's start.
 */
static u32 fast_floor_held(struct flow *fl)
{
	struct ecnp_ack_edit e;
	u32 u, r;

	u = one_in_flight_signal_in(fl, ECNP_FB_DUPACK_FAST);
	EXPECT_R(n_send(fl, 0, MSS), SET_ECT0 | SET_CWR);
	/* acks L, not all N sent: held, kept as E's newest */
	EXPECT_R(e_ack(fl, 0, u + MSS, ECNP_OPT_TS, 40, 500),
		 ECNP_ACT_HOLD_ACK | STASH);
	r = e_ack(fl, 0, fl->n_seq, ECNP_OPT_TS, 41, 500);
	EXPECT_R(r, ECNP_ACT_HOLD_ACK | STASH);
	e = edit_of(fl, r);
	EXPECT(e.ack == u && e.sack && e.sack_end == fl->n_seq);
	return u;
}

/*
 * dupack-fast: with SACK, when E has acked all N had sent by its
 * retransmission of L, the proxy answers that retransmission itself with
 * E's ACK of it (kept from the held ACK): the copy is dropped and the hold
 * ends at once, not a round trip later with E's answer to a trimmed byte.
 * Everything else as dupack.
 */
static void test_dupack_fast_release(void **state)
{
	struct flow fl;
	u32 u, r;
	bool wd;
	int i;

	(void)state;
	CTX("dupack-fast: the floor, E's ACK kept, released at the copy");
	u = fast_floor_held(&fl);
	/* E's ACK repeated: kept again (the newest copy stands) */
	EXPECT_R(e_ack(&fl, 0, fl.n_seq, ECNP_OPT_TS, 41, 500),
		 ECNP_ACT_HOLD_ACK | STASH);
	r = n_retx_pf(&fl, u, MSS, ECNP_PF_STASHED);
	EXPECT_R(r, SUPPRESS | STASH);
	EXPECT(!(fl.f.dflags & ECNP_DF_HOLD));
	EXPECT(fl.f.dflags & ECNP_DF_REXMIT);
	EXPECT_EQ(fl.f.hold_end, fl.n_seq);
	EXPECT(!ecnp_fsm_stash_wanted(&fl.f));
	/* N sends on; E's ACK of it goes as E sent it, nothing held */
	EXPECT_R(n_send(&fl, 0, MSS), SET_ECT0);
	EXPECT_R(e_ack(&fl, 0, fl.n_seq, ECNP_OPT_TS, 50, 500), 0);
	/* a second copy of L from N: its own, passed as it is */
	EXPECT_R(n_retx_pf(&fl, u, MSS, ECNP_PF_STASHED), 0);

	CTX("dupack-fast: no copy kept, so the copy is trimmed");
	u = fast_floor_held(&fl);
	EXPECT_R(n_retx_pf(&fl, u, MSS, 0), SUPPRESS);
	EXPECT(fl.f.dflags & ECNP_DF_HOLD);

	/*
	 * N sent more after E's newest ACK: that ACK goes to N all the same,
	 * a partial ACK (N stays in recovery); E's ACK of the rest passes,
	 * its echo of a segment sent before the retransmission cleared
	 */
	CTX("dupack-fast: N sent more after E's ACK: a partial answer");
	u = fast_floor_held(&fl);
	EXPECT_R(n_send(&fl, 0, MSS), SET_ECT0);
	r = n_retx_ts(&fl, u, 60, &wd);
	EXPECT(wd);
	EXPECT_R(r, SUPPRESS);
	EXPECT(fl.f.dflags & ECNP_DF_HOLD);
	u = fast_floor_held(&fl);
	EXPECT_R(n_send(&fl, 0, MSS), SET_ECT0);
	{
		struct ecnp_pkt p = mkp(n_dir(&fl), ACK, u, fl.e_seq, MSS,
					NOT_ECT);

		p.opt = ECNP_OPT_TS;
		p.tsval = 60;
		p.pflags = ECNP_PF_STASHED;
		EXPECT_R(step(&fl, p), SUPPRESS | STASH);
	}
	EXPECT(!(fl.f.dflags & ECNP_DF_HOLD));
	EXPECT_EQ(fl.f.hold_end, fl.n_seq);
	EXPECT_R(e_ack(&fl, 0, fl.n_seq, ECNP_OPT_TS, 50, 500),
		 ECNP_ACT_SET_TSECR);
	EXPECT_R(e_ack(&fl, 0, fl.n_seq, ECNP_OPT_TS, 60, 500), 0);

	CTX("dupack-fast: E's ACK not past L is not kept");
	u = one_in_flight_signal_in(&fl, ECNP_FB_DUPACK_FAST);
	EXPECT_R(n_send(&fl, 0, MSS), SET_ECT0 | SET_CWR);
	EXPECT_R(e_ack(&fl, 0, u, ECNP_OPT_TS, 40, 500) & STASH, 0);

	CTX("dupack-fast: what is not kept");
	for (i = 0; i < 4; i++) {
		u = fast_floor_held(&fl);
		switch (i) {
		case 0:	/* a SACK block: E has a hole */
			r = e_ack(&fl, 0, fl.n_seq, ECNP_OPT_SACK, 0, 500);
			break;
		case 1:	/* a D-SACK would undo N's reduction */
			r = e_ack(&fl, 0, fl.n_seq, ECNP_OPT_DSACK, 0, 500);
			break;
		case 2:	/* E's FIN */
			r = e_ack(&fl, FIN, fl.n_seq, 0, 0, 500);
			break;
		default: /* after N's retransmission */
			EXPECT_R(n_retx_pf(&fl, u, MSS, 0), SUPPRESS);
			r = e_ack(&fl, 0, fl.n_seq, 0, 0, 500);
			break;
		}
		EXPECT(!(r & STASH));
	}

	CTX("dupack: nothing kept, the copy trimmed");
	u = one_in_flight_signal(&fl);
	EXPECT_R(n_send(&fl, 0, MSS), SET_ECT0 | SET_CWR);
	EXPECT_R(e_ack(&fl, 0, fl.n_seq, 0, 0, 500), ECNP_ACT_HOLD_ACK);
	EXPECT_R(n_retx_pf(&fl, u, MSS, ECNP_PF_STASHED), SUPPRESS);

	CTX("dupack-fast without SACK: as dupack, the copy dropped whole");
	u = nosack_window_signal(&fl);
	fl.mode = ECNP_FB_DUPACK_FAST;
	r = e_ack(&fl, 0, fl.n_seq, 0, 0, 500);
	EXPECT(!(r & STASH));
	EXPECT_R(n_retx_pf(&fl, u, MSS, ECNP_PF_STASHED),
		 DROP | ECNP_EV_REXMIT_SUPPRESSED);
}

/* A SACK flow, 3 of N's segments out, E's ECE ACK for the first: signal. */
static u32 small_window_signal(struct flow *fl)
{
	u32 u;
	int k;

	flow_open(fl, false, ECNP_FB_DUPACK, 0x7ffff000u, 5);
	flow_sack(fl);
	for (k = 0; k < 3; k++)
		EXPECT_R(n_send(fl, 0, MSS), SET_ECT0);
	u = fl->n_seq - 2 * MSS;
	EXPECT_R(e_ack(fl, ECE, u, 0, 0, 500), CLR_ECE | ECNP_EV_CONG_SIGNAL);
	return u;
}

/*
 * After small_window_signal(): E's ACK of all N had sent is held, as N has
 * been shown nothing yet: L missing, the rest SACKed.
 */
static void small_window_shown(struct flow *fl, u32 u)
{
	struct ecnp_ack_edit e;
	u32 r = e_ack(fl, 0, fl->n_seq, 0, 0, 500);

	EXPECT_R(r, ECNP_ACT_HOLD_ACK);
	e = edit_of(fl, r);
	EXPECT_EQ(e.ack, u);
	EXPECT(e.sack);
	EXPECT_EQ(e.sack_end, fl->n_seq);
}

/* A flow without SACK, 5 of N's segments out, E's ECE ACK for the first. */
static u32 nosack_window_signal(struct flow *fl)
{
	u32 u;
	int k;

	flow_open(fl, false, ECNP_FB_DUPACK, 0x7ffff000u, 5);
	for (k = 0; k < 5; k++)
		EXPECT_R(n_send(fl, 0, MSS), SET_ECT0);
	u = fl->n_seq - 4 * MSS;
	EXPECT_R(e_ack(fl, ECE, u, 0, 0, 500) & ~ECNP_ACT_COPY_MASK,
		 CLR_ECE | ECNP_ACT_INJECT_DUPACKS | ECNP_EV_CONG_SIGNAL);
	return u;
}

/*
 * With SACK, E's ACK of everything is held until N's retransmission of L
 * is seen, however many held ACKs N was shown: a small window is all
 * acked before N's RACK timer (a quarter of min_rtt, rounded up to
 * jiffies) makes it retransmit L, and released then, N either took no
 * loss or undid it at once, its TSecr older than N's retransmission
 * (proxy_dupack, 2026-11-27: 102 undos in 1011 events).  The copy is let
 * through (E has acked all N sent) and E's answer ends the hold.
 *
 * Without SACK the hold still ends at E's ACK of everything (N may need
 * more duplicates than it was shown), and the copy of L that N still
 * sends is dropped, not delivered as a duplicate: only that one copy,
 * only once E has acked it, and its TSval clears the older TSecrs E
 * still echoes.
 */
static void test_dupack_late_rexmit(void **state)
{
	struct ecnp_ack_edit e;
	struct ecnp_pkt p;
	struct flow fl;
	u32 u, end, r;
	bool wd;
	int k;

	(void)state;
	CTX("dupack with SACK: E's ACK of everything held until N's copy");
	u = small_window_signal(&fl);
	small_window_shown(&fl, u);
	/* PRR lets N send on; E acks everything before N retransmits L */
	EXPECT_R(n_send(&fl, 0, MSS), SET_ECT0 | SET_CWR);
	EXPECT_R(n_send(&fl, 0, MSS), SET_ECT0);
	end = fl.n_seq;
	for (k = 0; k < 2; k++) {
		r = e_ack(&fl, 0, end, 0, 0, 500);
		EXPECT_R(r, ECNP_ACT_HOLD_ACK);
		e = edit_of(&fl, r);
		EXPECT_EQ(e.ack, u);
		EXPECT(e.sack);
		EXPECT_EQ(e.sack_end, end);
		EXPECT(fl.f.dflags & ECNP_DF_HOLD);
		EXPECT(!(fl.f.dflags & ECNP_DF_LATE));
	}
	/*
	 * N's retransmission of L: its first byte goes on, ECT, as any
	 * suppressed copy (E answers a duplicate byte at once)
	 */
	EXPECT_R(n_retx(&fl, u, MSS), SUPPRESS);
	/* E's answer: released, its D-SACK left out */
	r = e_ack(&fl, 0, end, ECNP_OPT_DSACK, 0, 500);
	EXPECT_R(r, ECNP_ACT_SET_TSECR | ECNP_ACT_NO_DSACK);
	EXPECT(!(fl.f.dflags & (ECNP_DF_HOLD | ECNP_DF_LATE)));
	/* N's RTO copy of L would be its own business: forwarded */
	EXPECT_R(n_retx(&fl, u, MSS), 0);

	CTX("dupack with SACK and timestamps: the TSecr of the held ACKs");
	u = small_window_signal(&fl);
	small_window_shown(&fl, u);
	EXPECT_R(e_ack(&fl, 0, fl.n_seq, ECNP_OPT_TS, 100, 500),
		 ECNP_ACT_HOLD_ACK);
	EXPECT_R(n_retx_ts(&fl, u, 200, &wd), SUPPRESS);
	EXPECT(wd);
	/* an ACK older than the copy's answer: released, no echo */
	r = e_ack(&fl, 0, fl.n_seq, ECNP_OPT_TS, 150, 500);
	EXPECT_R(r, ECNP_ACT_SET_TSECR);
	e = edit_of(&fl, r);
	EXPECT(e.set_tsecr);
	EXPECT_EQ(e.tsecr, 0);
	/* E's answer to the copy echoes it: as it is */
	r = e_ack(&fl, 0, fl.n_seq, ECNP_OPT_TS | ECNP_OPT_DSACK, 200, 500);
	e = edit_of(&fl, r);
	EXPECT(!e.set_tsecr);

	CTX("dupack without SACK: release before N's retransmission");
	u = nosack_window_signal(&fl);
	/* E acks everything before N's retransmission reaches the proxy */
	end = fl.n_seq;
	EXPECT_R(e_ack(&fl, 0, end, 0, 0, 500), 0);
	EXPECT(!(fl.f.dflags & ECNP_DF_HOLD));
	EXPECT(fl.f.dflags & ECNP_DF_LATE);
	/* the options of N's segments are read: its TSval counts */
	EXPECT(ecnp_fsm_wants_opts(&fl.f, ACK, ECNP_FB_DUPACK));
	/* a copy that is not L, or reaches beyond E's ACK, goes through */
	EXPECT_R(n_retx(&fl, u + MSS, MSS), 0);
	/* N's retransmission of L: dropped, once */
	p = mkp(n_dir(&fl), ACK, u, fl.e_seq, MSS, NOT_ECT);
	EXPECT(ecnp_fsm_wants_drop(&fl.f, &p, ECNP_FB_DUPACK));
	EXPECT_R(n_retx_ts(&fl, u, 300, &wd), ECNP_ACT_DROP |
		 ECNP_EV_REXMIT_SUPPRESSED);
	EXPECT(wd);
	EXPECT(!(fl.f.dflags & ECNP_DF_LATE));
	EXPECT(!ecnp_fsm_wants_drop(&fl.f, &p, ECNP_FB_DUPACK));
	EXPECT_R(n_retx(&fl, u, MSS), 0);
	/* E's ACKs echoing segments older than that copy: no echo */
	r = e_ack(&fl, 0, end, ECNP_OPT_TS, 299, 500);
	EXPECT_R(r, ECNP_ACT_SET_TSECR);
	e = edit_of(&fl, r);
	EXPECT(e.set_tsecr);
	EXPECT_EQ(e.tsecr, 0);
	EXPECT_R(e_ack(&fl, 0, end, ECNP_OPT_TS, 300, 500), 0);

	CTX("dupack without SACK: the releasing ACK carries ECE");
	u = nosack_window_signal(&fl);
	EXPECT_R(n_send(&fl, 0, MSS), SET_ECT0 | SET_CWR);
	/* E acked all, with a new ECE: the next event waits for data */
	EXPECT_R(e_ack(&fl, ECE, fl.n_seq, 0, 0, 500), CLR_ECE);
	EXPECT_STATE(&fl.f, ECNP_S_DUPACK);
	EXPECT_EQ(fl.f.saved_ack, fl.n_seq);
	EXPECT_R(n_retx(&fl, u, MSS), ECNP_ACT_DROP |
		 ECNP_EV_REXMIT_SUPPRESSED);

	CTX("dupack without SACK: release after N's retransmission");
	u = nosack_window_signal(&fl);
	EXPECT_R(n_retx(&fl, u, MSS), suppressed(&fl));
	EXPECT_R(e_ack(&fl, 0, fl.n_seq, 0, 0, 500), 0);
	EXPECT(!(fl.f.dflags & (ECNP_DF_HOLD | ECNP_DF_LATE)));
	EXPECT_R(n_retx(&fl, u, MSS), 0);

	CTX("dupack without SACK: the next event forgets a late copy");
	u = nosack_window_signal(&fl);
	EXPECT_R(e_ack(&fl, 0, fl.n_seq, 0, 0, 500), 0);
	EXPECT(fl.f.dflags & ECNP_DF_LATE);
	EXPECT_R(n_send(&fl, 0, MSS), SET_ECT0 | SET_CWR);
	for (k = 0; k < 4; k++)
		EXPECT_R(n_send(&fl, 0, MSS), SET_ECT0);
	r = e_ack(&fl, ECE, fl.n_seq - 4 * MSS, 0, 0, 500);
	EXPECT_R(r & ~ECNP_ACT_COPY_MASK, CLR_ECE | ECNP_ACT_INJECT_DUPACKS |
		 ECNP_EV_CONG_SIGNAL);
	EXPECT(!(fl.f.dflags & ECNP_DF_LATE));
}

/* A dupack flow (E = B) with @n full segments of N in flight: the first. */
static u32 n_flight(struct flow *fl, enum ecnp_feedback mode, bool sack,
		    int n)
{
	int k;

	flow_open(fl, false, mode, 0x7ffff000u, 5);
	if (sack)
		flow_sack(fl);
	for (k = 0; k < n; k++)
		n_send(fl, 0, MSS);
	return fl->n_seq - n * MSS;
}

/*
 * Without SACK, E repeating its ACK is the only sign of a hole at E.  The
 * ACK that then advances may be a partial ACK whose next segment E lacks
 * too (proxy_dupack, CUBIC without SACK: the original was delayed and
 * discarded by PAWS behind N's retransmission of the segment below; the
 * simulated loss started there suppressed the retransmission E needed, and
 * N waited for its RTO).  No simulated loss starts before E acks all that
 * N had sent by the last repeat; after ECNP_DUPACKS repeats N is repairing
 * a loss of this window itself, which answers the event.
 */
static void test_dupack_no_sack_hole_at_e(void **state)
{
	struct ecnp_pkt p;
	struct flow fl;
	u32 a, hole_end, r;
	int k;

	(void)state;
	CTX("dupack without SACK: three repeats, N's own recovery answers");
	a = n_flight(&fl, ECNP_FB_DUPACK, false, 10);
	/* E's ACK at a, then three repeats: a real hole */
	EXPECT_R(e_ack(&fl, 0, a + MSS, 0, 0, 9), 0);
	for (k = 0; k < ECNP_DUPACKS; k++) {
		EXPECT_R(e_ack(&fl, 0, a + MSS, 0, 0, 9), 0);
		EXPECT(fl.f.e_rep);
		EXPECT_EQ(fl.f.e_rep, k + 1);
	}
	hole_end = fl.n_seq;
	EXPECT_EQ(fl.f.e_hole_end, hole_end);
	/* N's retransmission fills it; E's partial ACK carries ECE */
	EXPECT_R(n_retx(&fl, a + MSS, MSS), 0);
	r = e_ack(&fl, ECE, a + 2 * MSS, 0, 0, 9);
	EXPECT_R(r, CLR_ECE | ECNP_EV_CONG_ANSWERED);
	EXPECT(!(fl.f.dflags & ECNP_DF_HOLD));
	EXPECT_STATE(&fl.f, ECNP_S_DEFAULT);
	/* the proxy still sends CWR toward E, once */
	EXPECT_R(n_send(&fl, 0, MSS), SET_ECT0 | SET_CWR);
	EXPECT_R(n_send(&fl, 0, MSS), SET_ECT0);
	/* N retransmits the next hole itself: never suppressed */
	p = mkp(n_dir(&fl), ACK, a + 2 * MSS, fl.e_seq, MSS, NOT_ECT);
	EXPECT(!ecnp_fsm_wants_drop(&fl.f, &p, ECNP_FB_DUPACK));
	EXPECT_R(n_retx(&fl, a + 2 * MSS, MSS), 0);
	/* E acks everything up to the hole's end: the hole is closed */
	EXPECT_R(e_ack(&fl, 0, hole_end, 0, 0, 9), 0);
	EXPECT_EQ(fl.f.e_rep, 0);
	EXPECT_EQ(fl.f.e_rep, 0);
	/* the next window's ECE gives a simulated loss again */
	for (k = 0; k < 4; k++)
		n_send(&fl, 0, MSS);
	r = e_ack(&fl, ECE, fl.n_seq - 5 * MSS, 0, 0, 9);
	EXPECT_R(r, CLR_ECE | ECNP_ACT_INJECT_DUPACKS | ECNP_EV_CONG_SIGNAL);

	CTX("dupack without SACK: one repeat defers the signal");
	a = n_flight(&fl, ECNP_FB_DUPACK, false, 10);
	EXPECT_R(e_ack(&fl, 0, a + MSS, 0, 0, 9), 0);
	EXPECT_R(e_ack(&fl, 0, a + MSS, 0, 0, 9), 0);
	hole_end = fl.n_seq;
	/* ECE on the ACK that advances inside the hole: pending */
	EXPECT_R(e_ack(&fl, ECE, a + 3 * MSS, 0, 0, 9), CLR_ECE);
	EXPECT_STATE(&fl.f, ECNP_S_DUPACK);
	for (k = 0; k < 4; k++)
		n_send(&fl, 0, MSS);
	EXPECT_R(e_ack(&fl, 0, hole_end - MSS, 0, 0, 9), 0);
	EXPECT_STATE(&fl.f, ECNP_S_DUPACK);
	/* (a window update or an old ACK is not a repeat) */
	EXPECT_R(e_ack(&fl, 0, hole_end - 2 * MSS, 0, 0, 9), 0);
	EXPECT_R(e_ack(&fl, 0, hole_end, 0, 0, 9),
		 ECNP_ACT_INJECT_DUPACKS | ECNP_EV_CONG_SIGNAL);

	CTX("dupack with SACK: E's blocks show holes, repeats are not tracked");
	a = n_flight(&fl, ECNP_FB_DUPACK, true, 10);
	for (k = 0; k < 4; k++)
		EXPECT_R(e_ack(&fl, 0, a + MSS, 0, 0, 9), 0);
	EXPECT_EQ(fl.f.e_rep, 0);
	EXPECT_R(e_ack(&fl, ECE, a + 2 * MSS, 0, 0, 9),
		 CLR_ECE | ECNP_EV_CONG_SIGNAL);

	CTX("drop mode: repeats are not tracked");
	a = n_flight(&fl, ECNP_FB_DROP, false, 10);
	for (k = 0; k < 4; k++)
		e_ack(&fl, 0, a + MSS, 0, 0, 9);
	EXPECT_EQ(fl.f.e_rep, 0);
}

/*
 * E's ECE ACK already reports a hole (SACK above its ACK number: reordering
 * or a real loss on the path): N reads the hole from it and may retransmit
 * beyond L, so the simulated loss waits for an ACK without one.  The
 * options of such ACKs are read (ecnp_fsm_wants_opts).
 */
static void test_dupack_not_on_a_hole(void **state)
{
	struct flow fl;
	u32 u;
	int k;

	(void)state;
	CTX("dupack: not started on an ACK that reports a hole");
	flow_open(&fl, true, ECNP_FB_DUPACK, 0xfffff000u, 3);
	flow_sack(&fl);
	EXPECT(!ecnp_fsm_wants_opts(&fl.f, ACK, ECNP_FB_DUPACK));
	EXPECT(ecnp_fsm_wants_opts(&fl.f, ACK | ECE, ECNP_FB_DUPACK));
	EXPECT(ecnp_fsm_wants_opts(&fl.f, SYN, ECNP_FB_DUPACK));
	/* other modes read them on SYNs only, outside a simulated loss */
	EXPECT(!ecnp_fsm_wants_opts(&fl.f, ACK | ECE, ECNP_FB_DROP));
	EXPECT(!ecnp_fsm_wants_opts(&fl.f, ACK | ECE, ECNP_FB_NONE));
	EXPECT(ecnp_fsm_wants_opts(&fl.f, SYN, ECNP_FB_DROP));
	for (k = 0; k < 10; k++)
		n_send(&fl, 0, MSS);
	u = fl.n_seq - 8 * MSS;
	EXPECT_R(e_ack(&fl, ECE, u, ECNP_OPT_SACK, 0, 9), CLR_ECE);
	EXPECT_STATE(&fl.f, ECNP_S_DUPACK);
	EXPECT(!(fl.f.dflags & ECNP_DF_HOLD));
	/* the signal is pending: options of every E ACK are read */
	EXPECT(ecnp_fsm_wants_opts(&fl.f, ACK, ECNP_FB_DUPACK));
	EXPECT_R(e_ack(&fl, 0, u, ECNP_OPT_SACK, 0, 9), 0);
	EXPECT_STATE(&fl.f, ECNP_S_DUPACK);
	/* the hole is filled: the next clean ACK gives the signal */
	EXPECT_R(e_ack(&fl, 0, u + 3 * MSS, 0, 0, 9),
		 ECNP_EV_CONG_SIGNAL);
	EXPECT(fl.f.dflags & ECNP_DF_HOLD);
	EXPECT(ecnp_fsm_wants_opts(&fl.f, ACK, ECNP_FB_DUPACK));
}

/*
 * A dupack flow (E = A iff @e_a, ISNs @isn_a, @isn_b, SACK iff @sack) with
 * 10 segments in flight and a simulated loss started by E's ECE ACK 8
 * segments back (options @opt, TSecr 1); returns U.
 */
static u32 held_flow(struct flow *fl, bool e_a, u32 isn_a, u32 isn_b,
		     bool sack, u8 opt)
{
	u32 u;
	int k;

	flow_open(fl, e_a, ECNP_FB_DUPACK, isn_a, isn_b);
	if (sack)
		flow_sack(fl);
	for (k = 0; k < 10; k++)
		n_send(fl, 0, MSS);
	u = fl->n_seq - 8 * MSS;
	e_ack(fl, ECE, u, opt, 1, 9);
	EXPECT(fl->f.dflags & ECNP_DF_HOLD);
	return u;
}

static u32 sack_hold(struct flow *fl, u32 isn)
{
	return held_flow(fl, true, isn, 3, true, ECNP_OPT_TS);
}

/* E SACKs data sent after the suppressed retransmission. */
static u32 e_ack_sack(struct flow *fl, u32 ack, u32 sack_high, u32 tsecr)
{
	struct ecnp_pkt p = e_ack_pkt(fl, 0, ack, ECNP_OPT_SACK | ECNP_OPT_TS,
				      tsecr, 9);

	p.sack_high = sack_high;
	last_e = p;
	return step(fl, p);
}

/*
 * While held, E SACKs data that N sent after its suppressed retransmission
 * of L (a hole below: reordering or a real loss).  Shown to N, RACK would
 * send L again.  Before the retransmission or while E lacks L, the held
 * ACK leaves such blocks out; once E has L and the copy was suppressed,
 * the hold ends and N sees its retransmission acked.
 */
static void test_dupack_sack_beyond_hold_end(void **state)
{
	struct ecnp_ack_edit e;
	struct flow fl;
	u32 u, end, r;
	bool wd;

	(void)state;
	CTX("dupack: E SACKs data sent after the retransmission");
	u = sack_hold(&fl, 0xffffe000u);
	/* before the retransmission: held, blocks beyond hold_end left out */
	n_send(&fl, 0, MSS);
	r = e_ack_sack(&fl, u + 2 * MSS, fl.n_seq, 1);
	EXPECT_R(r, ECNP_ACT_HOLD_ACK);
	e = edit_of(&fl, r);
	EXPECT_EQ(e.ack, u);
	EXPECT_EQ(e.sack_limit, fl.f.hold_end);
	EXPECT(before(e.sack_limit, fl.n_seq));
	/* the retransmission, then one more new segment */
	EXPECT_R(n_retx_ts(&fl, u, 50, &wd), suppressed(&fl));
	EXPECT(wd);
	end = fl.f.hold_end;
	EXPECT_EQ(end, fl.n_seq);
	n_send(&fl, 0, MSS);
	/* E lacks L: still held, the block is left out */
	r = e_ack_sack(&fl, u, fl.n_seq, 1);
	EXPECT_R(r, ECNP_ACT_HOLD_ACK);
	EXPECT_EQ(edit_of(&fl, r).sack_limit, end);
	/*
	 * E has L and reports a hole above it, even with blocks up to
	 * hold_end only: released, TSecr cleared (no claimed range that N
	 * could take for reneged)
	 */
	r = e_ack_sack(&fl, u + 2 * MSS, end, 1);
	EXPECT_R(r, ECNP_ACT_SET_TSECR);
	EXPECT(!(fl.f.dflags & ECNP_DF_HOLD));
	e = edit_of(&fl, r);
	EXPECT_EQ(e.ack, u + 2 * MSS);
	EXPECT_EQ(e.tsecr, 0);
	/* N's next retransmission is N's own: not suppressed */
	EXPECT_R(n_retx_ts(&fl, u + 2 * MSS, 60, &wd), 0);
	EXPECT(!wd);

	CTX("dupack: E SACKs beyond hold_end");
	u = sack_hold(&fl, 0x200);
	EXPECT_R(n_retx_ts(&fl, u, 50, &wd), suppressed(&fl));
	n_send(&fl, 0, MSS);
	r = e_ack_sack(&fl, u + 3 * MSS, fl.n_seq, 1);
	EXPECT_R(r, ECNP_ACT_SET_TSECR);
	EXPECT(!(fl.f.dflags & ECNP_DF_HOLD));
	EXPECT_EQ(edit_of(&fl, r).ack, u + 3 * MSS);
}

/*
 * While held, N retransmits a segment X above the claimed range after its
 * suppressed retransmission of L (RACK, after reordering behind the
 * proxy).  A held ACK showing X SACKed makes RACK declare L's
 * retransmission lost and send L again, a duplicate at E (proxy_dupack:
 * 4.98 s and 19.52 s in cubic-sack1-ts1).  The hold ends below X instead.
 */
static void test_dupack_rexmit_above_l(void **state)
{
	struct ecnp_ack_edit e;
	struct flow fl;
	u32 u, x, end, r;
	bool wd;

	(void)state;
	CTX("dupack: N retransmits above L during the hold");
	u = sack_hold(&fl, 0xffffe000u);
	EXPECT_R(n_retx_ts(&fl, u, 50, &wd), suppressed(&fl));
	end = fl.f.hold_end;
	x = u + 5 * MSS;
	/* sent before L's retransmission (older TSval): no change */
	EXPECT_R(n_retx_ts(&fl, x, 49, &wd), 0);
	EXPECT_EQ(fl.f.hold_end, end);
	/* N's RACK retransmits X: the hold ends below it */
	EXPECT_R(n_retx_ts(&fl, x, 60, &wd), 0);
	EXPECT(!wd);
	EXPECT_EQ(fl.f.hold_end, x);
	/* E has L, with blocks up to X: released, N sees L acked */
	r = e_ack_sack(&fl, u + 3 * MSS, x, 1);
	EXPECT_R(r, ECNP_ACT_SET_TSECR);
	EXPECT(!(fl.f.dflags & ECNP_DF_HOLD));
	e = edit_of(&fl, r);
	EXPECT_EQ(e.ack, u + 3 * MSS);
	EXPECT_EQ(e.tsecr, 0);
	/* or E's ACK at X: released as well */
	u = sack_hold(&fl, 0x100);
	n_retx_ts(&fl, u, 50, &wd);
	x = u + 6 * MSS;
	n_retx_ts(&fl, x, 51, &wd);
	EXPECT_EQ(fl.f.hold_end, x);
	r = e_ack_sack(&fl, x, 0, 1);
	EXPECT_R(r, ECNP_ACT_SET_TSECR);
	EXPECT(!(fl.f.dflags & ECNP_DF_HOLD));
	/* the next copy of L is N's own: not suppressed */
	EXPECT_R(n_retx_ts(&fl, u, 70, &wd), 0);
	EXPECT(!wd);
}

/*
 * After L's copy was suppressed, E reports a hole above L but below
 * hold_end (N's segments reordered behind the proxy).  Held, N
 * would see the hole, retransmit it after L, and take E's next ACK, which
 * SACKs the hole (the originals arrive) before its retransmission passed
 * the proxy, for the delivery of that retransmission: RACK sends L again,
 * a duplicate at E (proxy_dupack, 2026-11-26, cubic-sack1-ts0 at 147.0 s,
 * cubic-sack1-ts1 at 23.5 s).  The hold ends at the hole instead.
 */
static void test_dupack_hole_above_claimed(void **state)
{
	struct ecnp_ack_edit e;
	struct flow fl;
	u32 u, end, r;
	bool wd;

	(void)state;
	CTX("dupack: a hole at E above L ends the hold");
	u = sack_hold(&fl, 0xffffe000u);
	EXPECT_EQ(fl.f.claimed, 0);
	/* before the retransmission of L: held (N is yet to resend L) */
	r = e_ack_sack(&fl, u + 4 * MSS, u + 6 * MSS, 1);
	EXPECT_R(r, ECNP_ACT_HOLD_ACK);
	EXPECT_R(n_retx_ts(&fl, u, 50, &wd), suppressed(&fl));
	EXPECT(wd);
	end = fl.f.hold_end;
	EXPECT_EQ(end, u + 8 * MSS);
	/* E has L and reports a hole above it: released, as it is */
	r = e_ack_sack(&fl, u + 2 * MSS, end, 1);
	EXPECT_R(r, ECNP_ACT_SET_TSECR);
	EXPECT(!(fl.f.dflags & ECNP_DF_HOLD));
	e = edit_of(&fl, r);
	EXPECT_EQ(e.ack, u + 2 * MSS);
	EXPECT_EQ(e.tsecr, 0);
	/* E's blocks kept, but one touching L (a D-SACK for it) */
	EXPECT(!e.sack && !e.limit && e.lost);
	/* E's next ACK SACKs the hole before N's copy of it passed: as is */
	r = e_ack_sack(&fl, u + 6 * MSS, end, 1);
	EXPECT(!(r & ECNP_ACT_HOLD_ACK));
	EXPECT_EQ(edit_of(&fl, r).ack, u + 6 * MSS);
	/* N's copy of the hole and any later copy of L: N's own */
	EXPECT_R(n_retx_ts(&fl, u + 2 * MSS, 60, &wd), 0);
	EXPECT(!wd);
	EXPECT_R(n_retx_ts(&fl, u, 61, &wd), 0);
	EXPECT(!wd);

	CTX("dupack: E's ACK past L without a hole is held; the boundary");
	u = sack_hold(&fl, 0x100);
	n_retx_ts(&fl, u, 50, &wd);
	EXPECT_EQ(ecnp_fake_end(&fl.f), u + MSS);
	r = e_ack(&fl, 0, u + 5 * MSS, ECNP_OPT_TS, 1, 9);
	EXPECT_R(r, ECNP_ACT_HOLD_ACK);
	EXPECT_EQ(edit_of(&fl, r).ack, u);
	/* E lacks the end of L, a hole above: held (E needs N's copy) */
	r = e_ack_sack(&fl, u + MSS - 1, u + 6 * MSS, 1);
	EXPECT_R(r, ECNP_ACT_HOLD_ACK);
	r = e_ack_sack(&fl, u + MSS, u + 6 * MSS, 1);
	EXPECT_R(r, ECNP_ACT_SET_TSECR);
	EXPECT(!(fl.f.dflags & ECNP_DF_HOLD));
}

/*
 * N needs more than three duplicates (its dupthresh grew with reordering):
 * E's ACKs past hold_end stay held until N's retransmission was seen,
 * unless E acked all N sent.
 */
static void test_dupack_hold_until_rexmit(void **state)
{
	struct flow fl;
	u32 u, start_end;
	bool wd;
	int k;

	(void)state;
	CTX("dupack: no release before N's retransmission");
	flow_open(&fl, false, ECNP_FB_DUPACK, 0x7ffff000u, 5);
	for (k = 0; k < 6; k++)
		n_send(&fl, 0, MSS);
	u = fl.n_seq - 5 * MSS;
	e_ack(&fl, ECE, u, ECNP_OPT_TS, 1, 9);
	EXPECT(fl.f.dflags & ECNP_DF_HOLD);
	start_end = fl.f.hold_end;
	n_send(&fl, 0, MSS);
	n_send(&fl, 0, MSS);
	/*
	 * past hold_end, but no retransmission yet: held (five segments
	 * above L, three shown: the held ACK and one copy, without SACK)
	 */
	EXPECT_R(e_ack(&fl, 0, start_end + MSS, ECNP_OPT_TS, 1, 9),
		 ECNP_ACT_HOLD_ACK | ECNP_ACT_COPIES(1));
	EXPECT_EQ(fl.f.dup_shown, 5);
	EXPECT(fl.f.dflags & ECNP_DF_HOLD);
	/* N's retransmission: suppressed, hold_end moves to N's n_nxt */
	EXPECT_R(n_retx_ts(&fl, u, 50, &wd), suppressed(&fl));
	EXPECT_EQ(fl.f.hold_end, fl.n_seq);
	EXPECT_R(e_ack(&fl, 0, fl.n_seq - MSS, ECNP_OPT_TS, 1, 9),
		 ECNP_ACT_HOLD_ACK);
	EXPECT_R(e_ack(&fl, 0, fl.n_seq, ECNP_OPT_TS, 1, 9),
		 ECNP_ACT_SET_TSECR);
	EXPECT(!(fl.f.dflags & ECNP_DF_HOLD));

	CTX("dupack: an ACK with a stale TSecr starts no event");
	/* (seven: the ACK below advances E's, a repeat would be a hole) */
	for (k = 0; k < 7; k++)
		n_send(&fl, 0, MSS);
	/* a stale TSecr alone is cleared ... */
	u = fl.n_seq - 5 * MSS;
	EXPECT_R(e_ack(&fl, 0, u - MSS, ECNP_OPT_TS, 1, 9), ECNP_ACT_SET_TSECR);
	/*
	 * ... and with ECE too: an ACK that is copied goes out as E sent
	 * it, and with this TSecr N would undo the previous reduction
	 */
	EXPECT_R(e_ack(&fl, ECE, u, ECNP_OPT_TS, 1, 9),
		 CLR_ECE | ECNP_ACT_SET_TSECR);
	EXPECT(!(fl.f.dflags & ECNP_DF_HOLD));
	EXPECT_STATE(&fl.f, ECNP_S_DUPACK);
	/* E's next ACK echoes a segment sent after the retransmission */
	EXPECT_R(e_ack(&fl, 0, u + MSS, ECNP_OPT_TS, 50, 9),
		 ECNP_ACT_INJECT_DUPACKS | ECNP_EV_CONG_SIGNAL);
	EXPECT(fl.f.dflags & ECNP_DF_HOLD);

	CTX("dupack: released without a retransmission when E has it all");
	flow_open(&fl, false, ECNP_FB_DUPACK, 0x7ffff000u, 5);
	for (k = 0; k < 6; k++)
		n_send(&fl, 0, MSS);
	u = fl.n_seq - 5 * MSS;
	e_ack(&fl, ECE, u, 0, 0, 9);
	EXPECT(fl.f.dflags & ECNP_DF_HOLD);
	EXPECT_R(e_ack(&fl, 0, fl.n_seq, 0, 0, 9), 0);
	EXPECT(!(fl.f.dflags & ECNP_DF_HOLD));
}

/* A real loss where the duplicates claimed data: give up, let N repair. */
static void test_dupack_real_hole_aborts(void **state)
{
	struct flow fl;
	u32 u, r;
	bool wd;
	int k;

	(void)state;
	CTX("dupack: E reports L missing (lost or reordered after the proxy)");
	u = sack_hold(&fl, 0xffffff00u);
	/* E's ACK at L with SACK above: reordering, a few keep the hold */
	for (k = 1; k < ECNP_HOLE_ACKS; k++)
		EXPECT_R(e_ack(&fl, 0, u, ECNP_OPT_SACK | ECNP_OPT_TS, 1, 9),
			 ECNP_ACT_HOLD_ACK);
	r = e_ack(&fl, 0, u, ECNP_OPT_SACK | ECNP_OPT_TS, 1, 9);
	EXPECT_R(r, ECNP_EV_DUPACK_ABORT);
	EXPECT(!(fl.f.dflags & ECNP_DF_HOLD));
	/* E's ACKs pass as they are, N's retransmissions too */
	EXPECT_R(e_ack(&fl, 0, u, ECNP_OPT_SACK, 1, 9), 0);
	EXPECT_R(n_retx_ts(&fl, u, 50, &wd), 0);
	EXPECT(!wd);

	CTX("dupack: N retransmits L a second time (RTO): hold ends");
	u = held_flow(&fl, false, 7, 0xfffffff0u, true, 0);
	EXPECT_R(n_retx(&fl, u, MSS), suppressed(&fl));
	EXPECT_R(e_ack(&fl, 0, u + 3 * MSS, 0, 0, 9), ECNP_ACT_HOLD_ACK);
	EXPECT_R(n_retx(&fl, u, MSS), ECNP_EV_DUPACK_ABORT);
	EXPECT(!(fl.f.dflags & ECNP_DF_HOLD));
	EXPECT_R(e_ack(&fl, 0, u + 3 * MSS, 0, 0, 9), 0);

	CTX("dupack without SACK: E repeats its ACK (a real hole)");
	u = held_flow(&fl, false, 7, 0xfffffff0u, false, 0);
	EXPECT_R(n_retx(&fl, u, MSS), suppressed(&fl));
	/* (two segments above L acked, three duplicates shown: absorbed) */
	EXPECT_R(e_ack(&fl, 0, u + 3 * MSS, 0, 0, 9),
		 DROP | ECNP_EV_ACK_ABSORBED);
	/* E's repeats are shown: N must keep sending for E to repeat */
	for (k = 1; k < ECNP_HOLE_ACKS; k++)
		EXPECT_R(e_ack(&fl, 0, u + 3 * MSS, 0, 0, 9),
			 ECNP_ACT_HOLD_ACK);
	EXPECT_R(e_ack(&fl, 0, u + 3 * MSS, 0, 0, 9), ECNP_EV_DUPACK_ABORT);
	EXPECT(!(fl.f.dflags & ECNP_DF_HOLD));
	EXPECT_R(e_ack(&fl, 0, u + 3 * MSS, 0, 0, 9), 0);
}

/*
 * Without SACK each duplicate ACK counts as a segment delivered: N is never
 * shown more of them than E has acked segments above L (the three injected
 * ones stand for the first three), or Linux takes the excess for reordering
 * and raises its dupthresh to a window.
 */
static void test_dupack_no_sack_absorbs(void **state)
{
	struct ecnp_pkt p;
	struct flow fl;
	bool wd;
	u32 u;

	(void)state;
	CTX("dupack without SACK: E's ACKs for the claimed segments absorbed");
	u = held_flow(&fl, false, 0xfffff000u, 77, false, ECNP_OPT_TS);
	EXPECT_EQ(fl.f.dup_shown, ECNP_DUPACKS);
	EXPECT_R(n_retx_ts(&fl, u, 50, &wd), suppressed(&fl));
	/* L, then one, three segments above it: already claimed */
	EXPECT_R(e_ack(&fl, 0, u + MSS, ECNP_OPT_TS, 50, 9),
		 DROP | ECNP_EV_ACK_ABSORBED);
	EXPECT_R(e_ack(&fl, 0, u + 2 * MSS, ECNP_OPT_TS, 50, 9),
		 DROP | ECNP_EV_ACK_ABSORBED);
	EXPECT_R(e_ack(&fl, 0, u + 4 * MSS, ECNP_OPT_TS, 50, 9),
		 DROP | ECNP_EV_ACK_ABSORBED);
	EXPECT_EQ(fl.f.dup_shown, ECNP_DUPACKS);
	/* the fourth segment above L is news: a duplicate, and counted */
	EXPECT_R(e_ack(&fl, 0, u + 5 * MSS, ECNP_OPT_TS, 50, 9),
		 ECNP_ACT_HOLD_ACK);
	EXPECT_EQ(fl.f.dup_shown, ECNP_DUPACKS + 1);
	/*
	 * E acking two segments at once (delayed ACKs): two duplicates, the
	 * ACK and a copy, so that N is shown one per segment delivered
	 * (one per ACK ran out before a dupthresh grown with reordering)
	 */
	EXPECT_R(e_ack(&fl, 0, u + 7 * MSS, ECNP_OPT_TS, 50, 9),
		 ECNP_ACT_HOLD_ACK | ECNP_ACT_COPIES(1));
	EXPECT_EQ(fl.f.dup_shown, ECNP_DUPACKS + 3);
	EXPECT_EQ(edit_of(&fl, ECNP_ACT_HOLD_ACK | ECNP_ACT_COPIES(1)).copies,
		  1);
	EXPECT_EQ(edit_of(&fl, ECNP_ACT_HOLD_ACK).copies, 0);
	/* nothing new: absorbed */
	EXPECT_R(e_ack(&fl, 0, u + 7 * MSS + 100, ECNP_OPT_TS, 50, 9),
		 DROP | ECNP_EV_ACK_ABSORBED);
	EXPECT_R(e_ack(&fl, 0, u + 7 * MSS + 200, ECNP_OPT_TS, 50, 9),
		 DROP | ECNP_EV_ACK_ABSORBED);
	EXPECT(fl.f.dflags & ECNP_DF_HOLD);
	/*
	 * E repeats its ACK (a segment above a hole): shown while N has
	 * more segments beyond L in flight than duplicates (8 here)
	 */
	EXPECT_R(e_ack(&fl, 0, u + 7 * MSS + 200, ECNP_OPT_TS, 50, 9),
		 ECNP_ACT_HOLD_ACK);
	EXPECT_EQ(fl.f.dup_shown, 7);
	EXPECT_R(e_ack(&fl, 0, u + 7 * MSS + 200, ECNP_OPT_TS, 50, 9),
		 DROP | ECNP_EV_ACK_ABSORBED);
	EXPECT_EQ(fl.f.dup_shown, 7);
	/* an ACK that carries data is never absorbed */
	p = mkp(e_dir(&fl), ACK, fl.e_seq, u + 7 * MSS + 300, 100, NOT_ECT);
	fl.e_seq += 100;
	EXPECT_R(step(&fl, p), ECNP_ACT_HOLD_ACK);
	/* the release goes through */
	EXPECT_R(e_ack(&fl, 0, fl.n_seq, ECNP_OPT_TS, 50, 9), 0);
	EXPECT(!(fl.f.dflags & ECNP_DF_HOLD));

	CTX("dupack with SACK: nothing absorbed");
	u = held_flow(&fl, false, 0xfffff000u, 77, true, ECNP_OPT_TS);
	EXPECT_R(e_ack(&fl, 0, u + MSS, ECNP_OPT_TS, 1, 9), ECNP_ACT_HOLD_ACK);
	EXPECT_R(e_ack(&fl, 0, u + 2 * MSS, ECNP_OPT_TS, 1, 9),
		 ECNP_ACT_HOLD_ACK);
}

/*
 * E's ACKs forwarded out of order (two CPUs): an ECE ACK older than one N
 * already saw starts nothing; the signal waits for an ACK at E's newest.
 */
static void test_dupack_not_on_an_old_ack(void **state)
{
	struct flow fl;
	u32 u;
	int k;

	(void)state;
	CTX("dupack: no simulated loss on an ACK older than one forwarded");
	flow_open(&fl, false, ECNP_FB_DUPACK, 0x7fffff00u, 3);
	flow_sack(&fl);
	for (k = 0; k < 12; k++)
		n_send(&fl, 0, MSS);
	u = fl.n_seq - 10 * MSS;
	EXPECT_R(e_ack(&fl, 0, u + 3 * MSS, ECNP_OPT_TS, 1, 9), 0);
	EXPECT_EQ(fl.f.e_ack, u + 3 * MSS);
	/* the ECE ACK for u, overtaken by the one for u + 3 segments */
	EXPECT_R(e_ack(&fl, ECE, u, ECNP_OPT_TS, 1, 9), CLR_ECE);
	EXPECT(!(fl.f.dflags & ECNP_DF_HOLD));
	EXPECT_STATE(&fl.f, ECNP_S_DUPACK);
	EXPECT_EQ(fl.f.e_ack, u + 3 * MSS);
	/* an ACK beyond what N sent is not E's newest */
	EXPECT_R(e_ack(&fl, 0, fl.n_seq + MSS, ECNP_OPT_TS, 1, 9), 0);
	EXPECT_EQ(fl.f.e_ack, u + 3 * MSS);
	/* the next ACK at E's newest carries the signal */
	EXPECT_R(e_ack(&fl, 0, u + 4 * MSS, ECNP_OPT_TS, 1, 9),
		 ECNP_EV_CONG_SIGNAL);
	EXPECT(fl.f.dflags & ECNP_DF_HOLD);
	EXPECT_EQ(fl.f.saved_ack, u + 4 * MSS);
}

static void test_dupack_gso_rexmit_and_old_acks(void **state)
{
	struct ecnp_pkt p;
	struct flow fl;
	u32 u;
	int k;

	(void)state;
	CTX("dupack: a GSO retransmission starting at L is segmented");
	flow_open(&fl, false, ECNP_FB_DUPACK, 10, 20);
	for (k = 0; k < 10; k++)
		n_send(&fl, 0, MSS);
	u = fl.n_seq - 6 * MSS;
	e_ack(&fl, ECE, u, 0, 0, 9);
	p = mkp(n_dir(&fl), ACK, u, fl.e_seq, 3 * MSS, NOT_ECT);
	p.seg_len = MSS;
	EXPECT(ecnp_fsm_wants_drop(&fl.f, &p, ECNP_FB_DUPACK));
	EXPECT(ecnp_fsm_wants_drop(&fl.f, &p, ECNP_FB_DROP));
	p.seq = u + MSS;
	EXPECT(!ecnp_fsm_wants_drop(&fl.f, &p, ECNP_FB_DUPACK));
	/* the segments: only the first is dropped */
	EXPECT_R(n_retx(&fl, u, MSS), suppressed(&fl));
	EXPECT_R(n_retx(&fl, u + MSS, MSS), 0);
	EXPECT_R(n_retx(&fl, u + 2 * MSS, MSS), 0);
	/* the mode switched to drop while held: the hold still ends */
	fl.mode = ECNP_FB_DROP;
	EXPECT_R(e_ack(&fl, 0, u + 5 * MSS, 0, 0, 9), ECNP_ACT_HOLD_ACK);
	EXPECT_R(e_ack(&fl, 0, fl.n_seq, 0, 0, 9), 0);
	EXPECT(!(fl.f.dflags & ECNP_DF_HOLD));
}

/*
 * N's segment L reaches the proxy late, after later ones (two CPUs in N's
 * host), and E's ACK advances to L: E does not have L, nor does the proxy
 * (proxy_dupack, CUBIC without SACK: the original of L came 3.6 ms late).
 * A simulated loss there would suppress the first copy of L the proxy
 * sees, the original, and N's fast retransmit would end the hold; E got L
 * only from N's RTO.  The signal waits until E acks past the gap.
 */
static void test_dupack_gap_at_proxy(void **state)
{
	struct ecnp_pkt d;
	struct flow fl;
	u32 l, r;
	bool wd;
	int k, v;

	(void)state;
	/* v: 0 no SACK; 1 SACK, E has nothing above L; 2 SACK, a block */
	for (v = 0; v < 3; v++) {
		CTX("dupack variant %d: E's ACK at a segment the proxy lacks",
		    v);
		flow_open(&fl, false, ECNP_FB_DUPACK, 0xfffff000u, 77);
		if (v)
			flow_sack(&fl);
		for (k = 0; k < 3; k++)
			EXPECT_R(n_send(&fl, 0, MSS), SET_ECT0);
		EXPECT_R(e_ack(&fl, 0, fl.n_seq - MSS, 0, 0, 9), 0);
		/* L is late: N's next three segments pass it */
		d = n_next(&fl, 0, MSS);
		l = d.seq;
		fl.n_seq += MSS;
		for (k = 0; k < 3; k++)
			EXPECT_R(n_send(&fl, 0, MSS), SET_ECT0);
		EXPECT(fl.f.dflags & ECNP_DF_GAP);
		EXPECT_EQ(fl.f.n_gap, l);
		EXPECT_EQ(fl.f.n_gap_end, l + MSS);
		/*
		 * E acks up to L, with ECE (without SACK E's ACK for the
		 * segments above L advances to L and looks like any other):
		 * no signal on a segment never forwarded
		 */
		r = e_ack(&fl, ECE, l, v == 2 ? ECNP_OPT_SACK : 0, 0, 9);
		EXPECT_R(r, CLR_ECE);
		EXPECT(!(fl.f.dflags & ECNP_DF_HOLD));
		EXPECT_STATE(&fl.f, ECNP_S_DUPACK);
		/* the original of L goes through, fills the gap, gets ECT */
		wd = ecnp_fsm_wants_drop(&fl.f, &d, ECNP_FB_DUPACK);
		EXPECT(!wd);
		EXPECT_R(step(&fl, d), SET_ECT0);
		EXPECT(!(fl.f.dflags & ECNP_DF_GAP));
		/* the next suitable ACK gives the signal */
		for (k = 0; k < 4; k++)
			EXPECT_R(n_send(&fl, 0, MSS), SET_ECT0);
		l = fl.n_seq - 4 * MSS;
		EXPECT_R(e_ack(&fl, 0, l, 0, 0, 9),
			 DUPACK_SIG(v) | ECNP_EV_CONG_SIGNAL);
		EXPECT_EQ(fl.f.saved_ack, l);
		/* and N's retransmission of that L is suppressed */
		EXPECT_R(n_retx(&fl, l, MSS), suppressed(&fl));
	}

	CTX("dupack: a gap of two segments filled from its start");
	flow_open(&fl, false, ECNP_FB_DUPACK, 0x7fffff00u, 77);
	for (k = 0; k < 3; k++)
		n_send(&fl, 0, MSS);
	l = fl.n_seq;
	fl.n_seq += 2 * MSS;
	for (k = 0; k < 4; k++)
		n_send(&fl, 0, MSS);
	EXPECT_EQ(fl.f.n_gap, l);
	EXPECT_EQ(fl.f.n_gap_end, l + 2 * MSS);
	/* the first is filled (ECT: new to E's path); the second is missing */
	EXPECT_R(n_retx(&fl, l, MSS), SET_ECT0);
	EXPECT(fl.f.dflags & ECNP_DF_GAP);
	EXPECT_EQ(fl.f.n_gap, l + MSS);
	EXPECT_R(e_ack(&fl, ECE, l + MSS, 0, 0, 9), CLR_ECE);
	EXPECT_STATE(&fl.f, ECNP_S_DUPACK);
	EXPECT_R(n_retx(&fl, l + MSS, MSS), SET_ECT0);
	EXPECT(!(fl.f.dflags & ECNP_DF_GAP));
	EXPECT_R(e_ack(&fl, 0, l + 2 * MSS, 0, 0, 9),
		 ECNP_ACT_INJECT_DUPACKS | ECNP_EV_CONG_SIGNAL);

	/*
	 * A second segment is late while the first still is: the gaps are
	 * merged, and what the proxy saw between them counts as missing
	 * until E acks past it (with SACK, E's ACK at the second gap can
	 * come before any block: E has nothing above it yet)
	 */
	CTX("dupack: two gaps at once");
	flow_open(&fl, false, ECNP_FB_DUPACK, 0xffffff00u, 77);
	flow_sack(&fl);
	for (k = 0; k < 3; k++)
		n_send(&fl, 0, MSS);
	d = n_next(&fl, 0, MSS);	/* late: G1 */
	fl.n_seq += MSS;
	for (k = 0; k < 2; k++)
		n_send(&fl, 0, MSS);
	l = fl.n_seq;			/* late: G2 */
	fl.n_seq += MSS;
	for (k = 0; k < 3; k++)
		n_send(&fl, 0, MSS);
	EXPECT_EQ(fl.f.n_gap, d.seq);
	EXPECT_EQ(fl.f.n_gap_end, l + MSS);
	EXPECT_R(step(&fl, d), SET_ECT0);
	EXPECT(fl.f.dflags & ECNP_DF_GAP);
	/* E got G1 and what followed, and acks up to G2 */
	EXPECT_R(e_ack(&fl, ECE, d.seq + MSS, 0, 0, 9), CLR_ECE);
	EXPECT_R(e_ack(&fl, 0, l, 0, 0, 9), 0);
	EXPECT_STATE(&fl.f, ECNP_S_DUPACK);
	EXPECT_EQ(fl.f.n_gap, l);
	EXPECT_R(n_retx(&fl, l, MSS), SET_ECT0);
	EXPECT(!(fl.f.dflags & ECNP_DF_GAP));
	EXPECT_R(e_ack(&fl, 0, l + 2 * MSS, 0, 0, 9),
		 ECNP_EV_CONG_SIGNAL);

	/*
	 * However the hold started, a copy of L that fills a gap at the
	 * proxy may be the original: forwarded, and the next one dropped
	 * (state set by hand: ecnp_dupack_ready() no longer starts one there)
	 */
	CTX("dupack: the first copy of L is never suppressed");
	l = held_flow(&fl, false, 5, 6, false, 0);
	fl.f.dflags |= ECNP_DF_GAP;
	fl.f.n_gap = l;
	fl.f.n_gap_end = l + MSS;
	d = mkp(n_dir(&fl), ACK, l, fl.e_seq, MSS, NOT_ECT);
	EXPECT(!ecnp_fsm_wants_drop(&fl.f, &d, ECNP_FB_DUPACK));
	EXPECT_R(step(&fl, d), SET_ECT0);
	EXPECT(fl.f.dflags & ECNP_DF_HOLD);
	EXPECT_R(step(&fl, d), suppressed(&fl));
}

/*
 * Without SACK, after the hold is given up while E's ACK is still at L,
 * E's duplicates of L keep counting at N on top of the three injected
 * ones: more than segments in flight and Linux raises its dupthresh to a
 * window (TCPRenoReorder; proxy_dupack: tp->reordering 111, every later
 * simulated loss failed).  They are shown only while N has more segments
 * beyond L in flight than duplicates, until E's ACK passes L.
 */
static void test_dupack_no_sack_abort_absorbs(void **state)
{
	struct flow fl;
	u32 u;
	int k;

	(void)state;
	CTX("dupack without SACK: duplicates of L after N's second copy");
	/* 8 segments beyond U: L and 7 more; 3 duplicates shown */
	u = held_flow(&fl, false, 0xfffffc00u, 5, false, 0);
	EXPECT_R(n_retx(&fl, u, MSS), suppressed(&fl));
	EXPECT_R(n_retx(&fl, u, MSS), ECNP_EV_DUPACK_ABORT);
	EXPECT(!(fl.f.dflags & ECNP_DF_HOLD));
	/* E lacks L: its first three stand for what N was shown */
	for (k = 0; k < ECNP_DUPACKS; k++)
		EXPECT_R(e_ack(&fl, 0, u, 0, 0, 9),
			 DROP | ECNP_EV_ACK_ABSORBED);
	/* then one for each further segment E got above L */
	for (k = 0; k < 4; k++)
		EXPECT_R(e_ack(&fl, 0, u, 0, 0, 9), 0);
	EXPECT_EQ(fl.f.dup_shown, 7);
	/* (7 above L are all N had sent: never more than that) */
	EXPECT_R(e_ack(&fl, ECE, u, 0, 0, 9), DROP | ECNP_EV_ACK_ABSORBED);
	EXPECT_R(n_send(&fl, 0, MSS), SET_ECT0 | SET_CWR);
	EXPECT_R(e_ack(&fl, 0, u, 0, 0, 9), 0);
	EXPECT_EQ(fl.f.dup_shown, 8);
	/* data always goes through */
	EXPECT_R(e_send(&fl, 0, 100, NOT_ECT, u), 0);
	/* E acks past L: its ACKs are its own again */
	EXPECT_R(e_ack(&fl, 0, u + 2 * MSS, 0, 0, 9), 0);
	EXPECT_R(e_ack(&fl, 0, u + 2 * MSS, 0, 0, 9), 0);
	EXPECT_R(e_ack(&fl, 0, u, 0, 0, 9), 0);
	EXPECT(!(fl.f.dflags & ECNP_DF_ABORTED));

	CTX("dupack without SACK: duplicates of L after E's repeats");
	u = held_flow(&fl, false, 0xfffffc00u, 5, false, 0);
	EXPECT_R(n_retx(&fl, u, MSS), suppressed(&fl));
	/* in the hold, E's repeats are shown while N has more in flight */
	for (k = 1; k < ECNP_HOLE_ACKS; k++)
		EXPECT_R(e_ack(&fl, 0, u, 0, 0, 9), ECNP_ACT_HOLD_ACK);
	EXPECT_EQ(fl.f.dup_shown, 6);
	/* the fourth gives up: 4 segments above L, 6 shown, absorbed */
	EXPECT_R(e_ack(&fl, 0, u, 0, 0, 9),
		 DROP | ECNP_EV_ACK_ABSORBED | ECNP_EV_DUPACK_ABORT);
	EXPECT(!(fl.f.dflags & ECNP_DF_HOLD));
	EXPECT_R(e_ack(&fl, 0, u, 0, 0, 9), DROP | ECNP_EV_ACK_ABSORBED);
	EXPECT_R(e_ack(&fl, 0, u, 0, 0, 9), DROP | ECNP_EV_ACK_ABSORBED);
	EXPECT_R(e_ack(&fl, 0, u, 0, 0, 9), 0);
	EXPECT_EQ(fl.f.dup_shown, 7);

	CTX("dupack with SACK: nothing absorbed after an abort");
	u = held_flow(&fl, false, 0xfffffc00u, 5, true, 0);
	EXPECT_R(n_retx(&fl, u, MSS), suppressed(&fl));
	EXPECT_R(n_retx(&fl, u, MSS), ECNP_EV_DUPACK_ABORT);
	for (k = 0; k < 10; k++)
		EXPECT_R(e_ack(&fl, 0, u, 0, 0, 9), 0);
}

/*
 * With timestamps, E's ACK that ends a hold echoes a segment sent before
 * N's suppressed retransmission and gets its TSecr cleared to 0, or N
 * undoes the reduction (tcp_packet_delayed(), TCPFullUndo).  If that ACK carries
 * ECE for the next window, it must not start the next simulated loss (an
 * ACK that is copied goes out as E sent it): in proxy_dupack, 29 of 38
 * stale TSecrs N saw were such ACKs.  The next ACK, which echoes a later
 * segment, starts it.
 */
static void test_dupack_release_keeps_tsecr(void **state)
{
	struct ecnp_ack_edit e;
	struct flow fl;
	u32 u, end, r;
	bool wd;
	int k;

	(void)state;
	CTX("dupack, SACK and timestamps: the release carrying ECE");
	flow_open(&fl, true, ECNP_FB_DUPACK, 0x7ffffc00u, 5);
	flow_sack(&fl);
	for (k = 0; k < 6; k++)
		n_send(&fl, 0, MSS);
	u = fl.n_seq - 5 * MSS;
	EXPECT_R(e_ack(&fl, ECE, u, ECNP_OPT_TS, 10, 9), CLR_ECE |
		 ECNP_EV_CONG_SIGNAL);
	EXPECT_R(n_send(&fl, 0, MSS), SET_ECT0 | SET_CWR);
	EXPECT_R(n_retx_ts(&fl, u, 50, &wd), suppressed(&fl));
	end = fl.f.hold_end;
	for (k = 0; k < 4; k++)
		n_send(&fl, 0, MSS);
	EXPECT_R(e_ack(&fl, ECE, end - MSS, ECNP_OPT_TS, 40, 9),
		 CLR_ECE | ECNP_ACT_HOLD_ACK);
	/* past hold_end and recover, TSecr older than the retransmission */
	r = e_ack(&fl, ECE, end + MSS, ECNP_OPT_TS, 49, 9);
	EXPECT_R(r, CLR_ECE | ECNP_ACT_SET_TSECR);
	EXPECT(!(fl.f.dflags & ECNP_DF_HOLD));
	e = edit_of(&fl, r);
	EXPECT(e.set_tsecr);
	EXPECT_EQ(e.tsecr, 0);
	EXPECT_EQ(e.ack, end + MSS);
	EXPECT_STATE(&fl.f, ECNP_S_DUPACK);
	/* E's next ACK echoes a later segment: the next event, unedited */
	r = e_ack(&fl, ECE, end + 2 * MSS, ECNP_OPT_TS, 51, 9);
	EXPECT_R(r, CLR_ECE | ECNP_EV_CONG_SIGNAL);
	e = edit_of(&fl, r);
	EXPECT(!e.set_tsecr);
	EXPECT_EQ(e.tsecr, 51);
}

/*
 * An ECE that cannot be answered at once (here E acked all N had sent)
 * leaves the signal pending with recover at N's n_nxt then; E's next ACK
 * passes that, and the once-per-window guard was lost: the ECE on the ACK
 * that ended the simulated loss started the next one inside N's recovery
 * (proxy_dupack: 27 events at the previous hold_end).  The window now
 * starts with the signal.
 */
static void test_dupack_window_from_signal(void **state)
{
	struct flow fl;
	u32 b, r;
	int k;

	(void)state;
	CTX("dupack: once per window counted from the signal");
	flow_open(&fl, false, ECNP_FB_DUPACK, 0xfffffff0u, 5);
	flow_sack(&fl);
	b = fl.n_seq;
	for (k = 0; k < 6; k++)
		n_send(&fl, 0, MSS);
	/* nothing in flight beyond the ECE ACK: pending */
	EXPECT_R(e_ack(&fl, ECE, b + 6 * MSS, 0, 0, 9), CLR_ECE);
	EXPECT_STATE(&fl.f, ECNP_S_DUPACK);
	EXPECT_EQ(fl.f.recover, b + 6 * MSS);
	for (k = 0; k < 6; k++)
		n_send(&fl, 0, MSS);
	r = e_ack(&fl, ECE, b + 8 * MSS, 0, 0, 9);
	EXPECT_R(r, CLR_ECE | ECNP_EV_CONG_SIGNAL);
	EXPECT(fl.f.flags & ECNP_FL_IN_WINDOW);
	EXPECT_EQ(fl.f.recover, b + 12 * MSS);
	for (k = 0; k < 5; k++)
		n_send(&fl, 0, MSS);
	EXPECT_R(e_ack(&fl, ECE, b + 10 * MSS, 0, 0, 9),
		 CLR_ECE | ECNP_ACT_HOLD_ACK);
	EXPECT_R(n_retx(&fl, b + 8 * MSS, MSS), suppressed(&fl));
	EXPECT_EQ(fl.f.hold_end, b + 17 * MSS);
	EXPECT_EQ(fl.f.recover, b + 17 * MSS);
	EXPECT_R(e_ack(&fl, ECE, b + 14 * MSS, 0, 0, 9),
		 CLR_ECE | ECNP_ACT_HOLD_ACK);
	n_send(&fl, 0, MSS);
	n_send(&fl, 0, MSS);
	/* the release, still echoing: inside the window, no new event */
	EXPECT_R(e_ack(&fl, ECE, b + 17 * MSS, 0, 0, 9), CLR_ECE);
	EXPECT(!(fl.f.dflags & ECNP_DF_HOLD));
	EXPECT_STATE(&fl.f, ECNP_S_DEFAULT);
	for (k = 0; k < 4; k++)
		n_send(&fl, 0, MSS);
	/* past the recovery point: the next window's event */
	EXPECT_R(e_ack(&fl, ECE, b + 18 * MSS, 0, 0, 9),
		 CLR_ECE | ECNP_EV_CONG_SIGNAL);

	CTX("dupack without SACK: once per window from N's own recovery");
	b = n_flight(&fl, ECNP_FB_DUPACK, false, 10);
	EXPECT_R(e_ack(&fl, ECE, b + 10 * MSS, 0, 0, 9), CLR_ECE);
	for (k = 0; k < 3; k++)
		n_send(&fl, 0, MSS);
	/* past recover, too little in flight: still pending */
	EXPECT_R(e_ack(&fl, 0, b + 11 * MSS, 0, 0, 9), 0);
	EXPECT_STATE(&fl.f, ECNP_S_DUPACK);
	for (k = 0; k < 3; k++)
		n_send(&fl, 0, MSS);
	/* E repeats: N's own fast retransmit answers the event */
	EXPECT_R(e_ack(&fl, 0, b + 11 * MSS, 0, 0, 9), 0);
	EXPECT_R(e_ack(&fl, 0, b + 11 * MSS, 0, 0, 9), 0);
	EXPECT_R(e_ack(&fl, 0, b + 11 * MSS, 0, 0, 9),
		 ECNP_EV_CONG_ANSWERED);
	EXPECT(fl.f.flags & ECNP_FL_IN_WINDOW);
	EXPECT_EQ(fl.f.recover, b + 16 * MSS);
	EXPECT_R(n_send(&fl, 0, MSS), SET_ECT0 | SET_CWR);
	EXPECT_R(n_retx(&fl, b + 11 * MSS, MSS), 0);
	/* N's recovery point acked, a new ECE: the same window */
	EXPECT_R(e_ack(&fl, ECE, b + 16 * MSS, 0, 0, 9), CLR_ECE);
	EXPECT_STATE(&fl.f, ECNP_S_DEFAULT);
}

/*
 * A window-limited N, a path that marks CE, and an RFC 3168 receiver E
 * acking every segment.  N reacts to the duplicates by retransmitting L.
 * With @reorder, up to two of N's segments at a time reach the proxy up to
 * 24 steps late (two CPUs in N's host; longer than the path from the proxy
 * to E, so E can ack up to one before the proxy has it), so later ones pass
 * them; E then
 * receives out of order, reports the hole with SACK (or repeats its ACK)
 * and echoes the TSval of the segment that fills it.  Checked: one
 * injection and one suppression per event, never at a segment the proxy
 * has not forwarded, nor of a segment's first copy, CWR once per event,
 * E never receives a byte twice and gets every byte, the ACK number N
 * sees never goes back and stays at L while held, the SACK blocks N sees
 * never cover L and never exceed what N sent, N without SACK never sees
 * more duplicate ACKs than segments beyond its ACK, and the TSecr N sees
 * from its retransmission to the release is 0 or never older than the
 * retransmission, and never one E did not send.
 */
struct seg {
	u32 seq;
	u32 tsval;
	u8 ecn;
	bool cwr;
	bool stub;	/* the byte of N's retransmission of L that goes on */
};

/* a step that withdrew a signal (ecnp_hold_void()) */
static bool withdrawn_ev(u32 r)
{
	return (r & ECNP_EV_SIGNAL_WITHDRAWN) == ECNP_EV_SIGNAL_WITHDRAWN;
}

/* retransmissions of L trimmed to one byte (ecnp_rexmit_trim()), all runs */
static u32 sim_trimmed;
/* and answered with E's kept ACK (dupack-fast, ecnp_rexmit_release()) */
static u32 sim_released;
/* and signals withdrawn (ecnp_hold_void()) */
static u32 sim_withdrawn;

static void dupack_sim(bool e_is_a, bool sack, bool ts, bool reorder,
		       bool fast, u32 seed)
{
	struct seg q[64];
	unsigned int qh = 0, qt = 0;
	struct ecnp_ack_edit e;
	struct ecnp_pkt dl[2] = { 0 };	/* N's segments on their way late */
	struct flow fl;
	u32 rcv_nxt, ts_recent = 0, clock = 1000, n_ack, r, sent_tsecr;
	u32 events = 0, injected = 0, suppressed = 0, cwrs = 0, marks = 0;
	u32 rexmit_ts = 0, dups = 0, absorbed = 0, ooo = 0, n_dups = 0;
	u32 late = 0, dl_left[2] = { 0 }, answered = 0;
	u32 trimmed = 0, stub_acks = 0, withdrawn = 0;
	u32 released = 0, stash_ack = 0;
	bool stub, stashed = false;
	bool demand = false, retx_due = false, rexmit_seen = false, wd;
	bool sig_pending = false;
	bool dl_on[2] = { false }, have;
	int i, j;

	flow_open(&fl, e_is_a, fast ? ECNP_FB_DUPACK_FAST : ECNP_FB_DUPACK,
		  0xffffe000u + seed * 4099, seed * 7919);
	if (sack)
		flow_sack(&fl);
	rcv_nxt = n_ack = fl.n_seq;
	for (i = 0; i < 20000; i++) {
		struct ecnp_pkt p;

		clock++;
		have = false;
		if (retx_due) {
			/* dupack-fast: the plumbing's copy, E's newest ACK */
			p = mkp(n_dir(&fl), ACK, n_ack, fl.e_seq, MSS, NOT_ECT);
			p.opt = ts ? ECNP_OPT_TS : 0;
			p.tsval = clock;
			if (stashed && stash_ack == fl.f.e_ack)
				p.pflags = ECNP_PF_STASHED;
			wd = ecnp_fsm_wants_drop(&fl.f, &p, fl.mode);
			r = step(&fl, p);
			EXPECT(wd);
			if (r & STASH) {
				/*
				 * answered with E's kept ACK, TSecr cleared:
				 * past L, never back, never past what E has;
				 * the byte still goes to E, whose answer N
				 * gets as a duplicate without its D-SACK
				 */
				EXPECT(fast && sack);
				EXPECT_R(r, SUPPRESS | STASH);
				EXPECT(r & TRIM);
				EXPECT(!(fl.f.dflags & ECNP_DF_HOLD));
				EXPECT(after(stash_ack, n_ack));
				EXPECT(!after(stash_ack, rcv_nxt));
				q[qt % 64] = (struct seg){
					n_ack, clock, ECT0, false, true };
				qt++;
				trimmed++;
				n_ack = stash_ack;
				stashed = false;
				released++;
				suppressed++;
				rexmit_seen = true;
				rexmit_ts = clock;
				retx_due = false;
				continue;
			}
			/*
			 * trimmed with SACK, also when E had acked all N sent
			 * (E answers the byte), dropped without
			 */
			EXPECT(r & (sack ? TRIM : DROP));
			EXPECT_R(r, suppressed(&fl));
			/* behind all N sent before it (ECT, unmarked) */
			if (r & TRIM) {
				q[qt % 64] = (struct seg){
					n_ack, clock, ECT0, false, true };
				qt++;
				trimmed++;
			}
			/* never the first copy: that one is late */
			for (j = 0; j < 2; j++)
				EXPECT(!dl_on[j] || dl[j].seq != n_ack);
			suppressed++;
			rexmit_seen = true;
			rexmit_ts = clock;
			retx_due = false;
		} else if ((dl_on[0] && !dl_left[0]) ||
			   (dl_on[1] && !dl_left[1])) {
			j = dl_on[0] && !dl_left[0] ? 0 : 1;
			p = dl[j];
			dl_on[j] = false;
			have = true;
		} else if (fl.n_seq - rcv_nxt < 16 * MSS && i < 19000) {
			p = mkp(n_dir(&fl), ACK, fl.n_seq, fl.e_seq, MSS,
				NOT_ECT);
			p.opt = ts ? ECNP_OPT_TS : 0;
			p.tsval = clock;
			fl.n_seq += MSS;
			j = dl_on[0] ? 1 : 0;
			if (reorder && !dl_on[j] && rnd(&seed) % 100 < 8) {
				dl[j] = p;
				dl_on[j] = true;
				dl_left[j] = 1 + rnd(&seed) % 24;
				late++;
			} else {
				have = true;
			}
		}
		for (j = 0; j < 2; j++)
			if (dl_on[j] && dl_left[j])
				dl_left[j]--;
		if (have) {
			struct ecnp_pkt seen;

			EXPECT(!ecnp_fsm_wants_drop(&fl.f, &p, fl.mode));
			r = step(&fl, p);
			EXPECT_EQ(r & ~(u32)(SET_ECT0 | SET_CWR), 0);
			seen = apply(p, r);
			if (seen.flags & CWR)
				cwrs++;
			/* (a late segment is not new: not ECT, not marked) */
			if (rnd(&seed) % 100 < 3 && i < 18000 &&
			    seen.ecn == ECT0) {
				seen.ecn = CE;
				marks++;
			}
			q[qt % 64] = (struct seg){ p.seq, p.tsval, seen.ecn,
						   seen.flags & CWR, false };
			qt++;
		}
		if (qh == qt || rnd(&seed) % 3 == 0)
			continue;
		/*
		 * E receives the oldest segment forwarded; ooo has bit k set
		 * for a segment received k segments above rcv_nxt
		 */
		stub = q[qh % 64].stub;
		if (stub) {
			/*
			 * A byte E has: tcp_send_dupack() sends E's real ACK
			 * at once with a D-SACK, ts_recent unchanged
			 */
			EXPECT(before(q[qh % 64].seq, rcv_nxt));
			qh++;
			stub_acks++;
		} else {
			struct seg s = q[qh++ % 64];
			u32 k = (s.seq - rcv_nxt) / MSS;

			/* no byte twice, and nothing N did not send */
			EXPECT(!before(s.seq, rcv_nxt) && k < 32);
			EXPECT(!(ooo & (1u << k)));
			ooo |= 1u << k;
			if (!k)
				ts_recent = s.tsval;
			while (ooo & 1) {
				ooo >>= 1;
				rcv_nxt += MSS;
			}
			if (s.cwr)
				demand = false;
			if (s.ecn == CE)
				demand = true;
		}
		/* a window that covers the 16 segments N keeps in flight */
		{
			struct ecnp_pkt a = e_ack_pkt(&fl, demand ? ECE : 0,
						      rcv_nxt,
						      ts ? ECNP_OPT_TS : 0,
						      ts_recent, 0xffff);

			if (sack && ooo) {
				a.opt |= ECNP_OPT_SACK;
				a.sack_high = rcv_nxt +
					      (32 - __builtin_clz(ooo)) * MSS;
			}
			if (sack && stub)
				a.opt |= ECNP_OPT_DSACK;
			last_e = a;
			r = step(&fl, a);
			/* the plumbing keeps the copy, or drops one not wanted */
			if (r & STASH) {
				EXPECT(fast && !(r & (DROP | TRIM)));
				stashed = true;
				stash_ack = a.ack;
			}
			if (!ecnp_fsm_stash_wanted(&fl.f))
				stashed = false;
		}
		e = edit_of(&fl, r);
		/* the D-SACK for the byte never reaches N */
		if (sack && stub)
			EXPECT(e.no_dsack);
		EXPECT_EQ(r & (SET_ECE | SET_CWR | SET_ECT0), 0);
		/* a real connection's segments are all in the window */
		EXPECT(!(r & ECNP_EV_OUT_OF_WINDOW));
		/* E repeated its ACK 3 times: N's own recovery answers */
		if (r & ECNP_EV_CONG_ANSWERED) {
			EXPECT(!sack && reorder);
			answered++;
		}
		if (r & DROP) {
			/* absorbed: N sees nothing */
			EXPECT_EQ(r & ~(u32)ECNP_EV_DUPACK_ABORT,
				  DROP | ECNP_EV_ACK_ABSORBED);
			EXPECT(!sack);
			absorbed++;
			continue;
		}
		/* the TSecr of the ACK that ends the hold, too */
		sent_tsecr = e.tsecr;
		if (ts && rexmit_seen)
			EXPECT(!sent_tsecr || !before(sent_tsecr, rexmit_ts));
		/*
		 * N's TSecr RTT samples are real: the proxy never shows N a
		 * TSecr other than E's own or 0 (no echo)
		 */
		EXPECT(!e.set_tsecr || !e.tsecr);
		if (ts && rexmit_seen && !(fl.f.dflags & ECNP_DF_HOLD))
			rexmit_seen = false;	/* released */
		if ((r & ECNP_EV_CONG_SIGNAL) && sack && !withdrawn_ev(r)) {
			/* nothing injected: N reacts to E's next held ACK */
			events++;
			sig_pending = true;
			rexmit_seen = false;
		}
		if (sig_pending && (r & ECNP_ACT_HOLD_ACK) &&
		    (e.sack || (last_e.opt & ECNP_OPT_SACK))) {
			sig_pending = false;
			retx_due = true;
		}
		/*
		 * withdrawn before N saw anything (E acked all N sent, L
		 * alone): not an event, no CWR, and the ACK goes as it is
		 */
		if (withdrawn_ev(r)) {
			EXPECT(sig_pending && !(fl.f.dflags & ECNP_DF_HOLD));
			EXPECT(!(r & ECNP_ACT_HOLD_ACK));
			EXPECT_EQ(e.ack, rcv_nxt);
			sig_pending = false;
			events--;
			withdrawn++;
		}
		/* every event shows N a held ACK with SACK before it ends */
		EXPECT(!sig_pending || (fl.f.dflags & ECNP_DF_HOLD));
		if (r & ECNP_ACT_INJECT_DUPACKS) {
			EXPECT(!sack);
			events++;
			injected++;
			dups = ECNP_DUPACKS;
			EXPECT_EQ(e.ack, rcv_nxt);
			EXPECT(!before(fl.n_seq, e.ack + (sack ? 2 : 4) * MSS));
			/* L passed the proxy: E has it, only the rest */
			for (j = 0; j < 2; j++)
				EXPECT(!dl_on[j] || dl[j].seq != e.ack);
			if (sack)
				EXPECT(!after(e.sack_end, fl.n_seq));
			retx_due = true;	/* N reacts */
			rexmit_seen = false;
		}
		if ((r & ECNP_EV_CONG_SIGNAL) && !sack)
			EXPECT(r & ECNP_ACT_INJECT_DUPACKS);
		/* what N sees */
		EXPECT(!before(e.ack, n_ack));
		if ((fl.f.dflags & ECNP_DF_HOLD) && !sack) {
			/*
			 * tcp_add_reno_sack(): never more duplicates than
			 * segments beyond the hole (tcp_limit_reno_sacked()
			 * would call that reordering), nor, on an in-order
			 * path, than E has acked above it, the first three
			 * being the injected ones (E's repeats for a hole
			 * are shown while N has more in flight)
			 */
			if (r & ECNP_ACT_HOLD_ACK)
				dups += 1 + e.copies;
			EXPECT(dups + 1 <= (fl.n_seq - fl.f.saved_ack) / MSS);
			if (dups > ECNP_DUPACKS && !reorder)
				EXPECT(dups <= (rcv_nxt - fl.f.saved_ack) /
					       MSS - 1);
		}
		/* N's own count, held or not (Reno: every ACK at snd_una) */
		if (after(e.ack, n_ack))
			n_dups = 0;
		else
			n_dups += 1 + e.copies;
		if (r & ECNP_ACT_INJECT_DUPACKS)
			n_dups = ECNP_DUPACKS;
		if (!sack)
			EXPECT(n_dups + 1 <= (fl.n_seq - e.ack) / MSS ||
			       !n_dups);
		if (fl.f.dflags & ECNP_DF_HOLD) {
			EXPECT_EQ(e.ack, fl.f.saved_ack);
			if (e.sack) {
				EXPECT_EQ(e.sack_start, e.lost_end);
				EXPECT(!after(e.sack_end, fl.n_seq));
				/*
				 * only what E has: a block over data E has
				 * not received gives N a false RTT sample
				 */
				EXPECT(!after(e.sack_end, rcv_nxt));
			}
		}
		n_ack = e.ack;
	}
	/* everything arrived once, the last ACK released any hold */
	EXPECT(!dl_on[0] && !dl_on[1]);
	EXPECT_EQ(rcv_nxt, fl.n_seq);
	EXPECT_EQ(n_ack, fl.n_seq);
	EXPECT(!(fl.f.dflags & ECNP_DF_HOLD));
	EXPECT(events > 10);
	EXPECT(events + answered <= marks);
	EXPECT_EQ(suppressed, events);
	/*
	 * with SACK every suppressed copy went on as one byte and E answered
	 * it, (dupack-fast) after E's kept ACK had answered it to N
	 */
	EXPECT_EQ(trimmed, sack ? suppressed : 0);
	EXPECT(!released || (fast && sack));
	EXPECT(released <= trimmed);
	EXPECT_EQ(stub_acks, trimmed);
	sim_trimmed += trimmed;
	sim_released += released;
	sim_withdrawn += withdrawn;
	EXPECT_EQ(injected, sack ? 0 : events);
	EXPECT_EQ(cwrs, events + answered);
	EXPECT(!demand);
	EXPECT(!reorder || late > 100);
	/* E acks every segment: without SACK the first three are absorbed */
	if (!sack)
		EXPECT(absorbed >= ECNP_DUPACKS * events);
	else
		EXPECT_EQ(absorbed, 0);
}

static void test_dupack_simulation(void **state)
{
	u32 seed;
	int v;

	(void)state;
	for (v = 0; v < 32; v++) {
		for (seed = 1; seed < 4; seed++) {
			CTX("dupack%s simulation E=%c sack %d ts %d reorder %d seed %u",
			    v & 16 ? "-fast" : "", v & 1 ? 'A' : 'B',
			    !!(v & 2), !!(v & 4), !!(v & 8), seed);
			dupack_sim(v & 1, v & 2, v & 4, v & 8, v & 16, seed);
		}
	}
	/* the trimmed copy of L and dupack-fast's answer were exercised */
	CTX("dupack simulation: retransmissions trimmed and answered");
	EXPECT(sim_trimmed > 0);
	EXPECT(sim_released > 0);
	printf("dupack simulation: %u copies trimmed, %u answered (dupack-fast), %u signals withdrawn\n",
	       sim_trimmed, sim_released, sim_withdrawn);
}

/*
 * A Reno sender without SACK, as Linux's (tcp_add_reno_sack()): every
 * duplicate ACK counts as a segment delivered and lets it send one new
 * segment (its flight, packets_out minus duplicates, stays at cwnd); it
 * retransmits L and halves its window only at its dupthresh (@dupthresh,
 * tp->reordering: 3, more after reordering), and it takes more duplicates
 * than segments beyond its ACK for reordering (tcp_limit_reno_sacked()).
 * Its window grows to @wmax segments (a 10 Mbit/s path with a few ms of
 * RTT: a handful).  E acks every @delack-th segment (Linux's delayed
 * ACKs: 2), at once on CE, and the rest when nothing more is coming (its
 * delayed-ACK timer).
 * Checked: N is never shown more duplicates than it has segments beyond
 * its ACK, and it retransmits L at every simulated loss: with one
 * duplicate per ACK, E's delayed ACKs showed it half as many as segments
 * delivered, its flight ran out and a dupthresh above 3 was not reached
 * (proxy_dupack: CUBIC without SACK answered 291 of 530 events).
 */
static void reno_sim(u32 dupthresh, u32 delack, u32 wmax, u32 seed)
{
	u32 q[64], qh = 0, qt = 0, qecn[64];
	struct ecnp_ack_edit e;
	struct flow fl;
	u32 rcv_nxt, snd_una, recover = 0, cwnd = 4, cwnd_cnt = 0, dups = 0;
	u32 unacked = 0, events = 0, reductions = 0, marks = 0, copies = 0;
	u32 r, k, n;
	bool demand = false, in_rec = false, wd;
	int i;

	flow_open(&fl, false, ECNP_FB_DUPACK, 0xfffff000u + seed * 4099,
		  seed * 7919);
	rcv_nxt = snd_una = fl.n_seq;
	for (i = 0; i < 30000; i++) {
		bool ack_now = false;

		/* N: flight (packets_out - sacked_out) below cwnd */
		if ((fl.n_seq - snd_una) / MSS - dups < cwnd && i < 29000 &&
		    qt - qh < 60) {
			struct ecnp_pkt p = mkp(n_dir(&fl), ACK, fl.n_seq,
						fl.e_seq, MSS, NOT_ECT);
			struct ecnp_pkt seen;

			fl.n_seq += MSS;
			r = step(&fl, p);
			EXPECT_EQ(r & ~(u32)(SET_ECT0 | SET_CWR), 0);
			seen = apply(p, r);
			qecn[qt % 64] = seen.ecn | (seen.flags & CWR ? 0x100 : 0);
			if (seen.ecn == ECT0 && i < 27000 &&
			    rnd(&seed) % 100 < 3) {
				qecn[qt % 64] = CE | (qecn[qt % 64] & 0x100);
				marks++;
			}
			q[qt++ % 64] = p.seq;
		}
		/* E: one segment arrives (in order) now and then */
		if (qh != qt && rnd(&seed) % 2) {
			k = qh % 64;
			EXPECT_EQ(q[k], rcv_nxt);
			rcv_nxt += MSS;
			qh++;
			unacked++;
			if (qecn[k] & 0x100)
				demand = false;
			if ((qecn[k] & 0xff) == CE) {
				demand = true;
				ack_now = true;
			}
			if (unacked >= delack)
				ack_now = true;
		}
		if (qh == qt && unacked)
			ack_now = true;		/* the delayed-ACK timer */
		if (!ack_now)
			continue;
		unacked = 0;
		r = e_ack(&fl, demand ? ECE : 0, rcv_nxt, 0, 0, 0xffff);
		EXPECT(!(r & ECNP_EV_OUT_OF_WINDOW));
		if (r & DROP) {
			EXPECT_R(r, DROP | ECNP_EV_ACK_ABSORBED);
			continue;
		}
		e = edit_of(&fl, r);
		/* what N sees: the ACK, then its copies or the duplicates */
		n = 1 + e.copies;
		copies += e.copies;
		if (r & ECNP_ACT_INJECT_DUPACKS) {
			events++;
			n += ECNP_DUPACKS;
		}
		for (k = 0; k < n; k++) {
			if (after(e.ack, snd_una)) {
				u32 acked = (e.ack - snd_una) / MSS;

				snd_una = e.ack;
				dups = 0;
				if (in_rec && !before(snd_una, recover))
					in_rec = false;
				if (!in_rec) {
					cwnd_cnt += acked;
					if (cwnd_cnt >= cwnd && cwnd < wmax) {
						cwnd_cnt = 0;
						cwnd++;
					}
				}
				continue;
			}
			if (e.ack != snd_una || snd_una == fl.n_seq)
				continue;
			dups++;
			/* tcp_limit_reno_sacked(): never reordering */
			EXPECT(dups + 1 <= (fl.n_seq - snd_una) / MSS);
			if (in_rec || dups < dupthresh)
				continue;
			/* fast retransmit: suppressed, E has L */
			r = n_retx_ts(&fl, snd_una, 0, &wd);
			EXPECT(wd);
			EXPECT_R(r, suppressed(&fl));
			in_rec = true;
			recover = fl.n_seq;
			cwnd = cwnd / 2 > 2 ? cwnd / 2 : 2;
			reductions++;
		}
	}
	EXPECT_EQ(rcv_nxt, fl.n_seq);
	EXPECT_EQ(snd_una, fl.n_seq);
	EXPECT(!(fl.f.dflags & ECNP_DF_HOLD));
	EXPECT(events > 20);
	EXPECT(events <= marks);
	/* every simulated loss made N retransmit and halve */
	EXPECT_EQ(reductions, events);
	/* delayed ACKs: some ACKs stand for more than one duplicate */
	if (delack > 1 && dupthresh > ECNP_DUPACKS)
		EXPECT(copies > 0);
}

static void test_dupack_reno_dupthresh(void **state)
{
	static const u32 threshes[] = { 3, 5, 8 };
	static const u32 wmaxes[] = { 8, 30 };
	u32 seed, t, d, w;

	(void)state;
	for (t = 0; t < ARRAY_SIZE(threshes); t++)
		for (d = 1; d <= 2; d++)
			for (w = 0; w < ARRAY_SIZE(wmaxes); w++)
				for (seed = 1; seed < 4; seed++) {
					CTX("dupack, Reno without SACK: dupthresh %u, E acks every %u, window up to %u, seed %u",
					    threshes[t], d, wmaxes[w], seed);
					reno_sim(threshes[t], d, wmaxes[w],
						 seed);
				}
}

/*
 * A GSO packet that cannot be segmented (bridged, or the segmentation
 * failed) is stepped whole with ECNP_PF_NO_DROP (L7; the plumbing used to
 * skip the state machine for it): nothing of it is dropped, what was not
 * done is reported, and the state is kept right: n_nxt and smss follow,
 * the edits a whole packet can take (ECT, ECE, CWR) are made.
 */
static void test_gso_no_drop(void **state)
{
	struct ecnp_pkt p;
	struct flow fl;
	u32 u, old;
	int e_is_a, k;

	(void)state;
	for (e_is_a = 0; e_is_a < 2; e_is_a++) {
		CTX("drop mode, a GSO packet that cannot be segmented, E=%c",
		    e_is_a ? 'A' : 'B');
		flow_open(&fl, e_is_a, ECNP_FB_DROP, 0xfffffe00u, 0x1000);
		reach(&fl, ECNP_S_ECE_DUPACK);
		p = n_next(&fl, 0, 8 * MSS);
		p.seg_len = MSS;
		EXPECT(ecnp_fsm_wants_drop(&fl.f, &p, ECNP_FB_DROP));
		p.pflags = ECNP_PF_NO_DROP;
		EXPECT(!ecnp_fsm_wants_drop(&fl.f, &p, ECNP_FB_DROP));
		old = fl.f.n_nxt;
		EXPECT_R(step(&fl, p), SET_ECT0 | SET_ECE |
			 ECNP_EV_NOT_DROPPED);
		fl.n_seq += 8 * MSS;
		EXPECT_EQ(fl.f.n_nxt, old + 8 * MSS);
		/* the drop stays pending: the next new data */
		EXPECT_STATE(&fl.f, ECNP_S_ECE_DUPACK);
		EXPECT_R(n_send(&fl, 0, MSS), DROP | ECNP_EV_CONG_SIGNAL);
		EXPECT_R(n_send(&fl, 0, MSS), SET_ECT0 | SET_ECE | SET_CWR);
		/* a retransmission in one piece: no ECT, not new */
		p = n_next(&fl, 0, 4 * MSS);
		p.seq = old;
		p.pflags = ECNP_PF_NO_DROP;
		EXPECT_R(step(&fl, p), SET_ECE);

		CTX("dupack, N's retransmission of L in a GSO packet, E=%c",
		    e_is_a ? 'A' : 'B');
		flow_open(&fl, e_is_a, ECNP_FB_DUPACK, 0xfffffe00u, 0x1000);
		flow_sack(&fl);
		for (k = 0; k < 6; k++)
			n_send(&fl, 0, MSS);
		u = fl.n_seq - 5 * MSS;
		EXPECT_R(e_ack(&fl, ECE, u, 0, 0, 0xffff), CLR_ECE |
			 ECNP_EV_CONG_SIGNAL);
		p = n_next(&fl, 0, 3 * MSS);
		p.seq = u;
		p.seg_len = MSS;
		p.pflags = ECNP_PF_NO_DROP;
		EXPECT(!ecnp_fsm_wants_drop(&fl.f, &p, ECNP_FB_DUPACK));
		/* not suppressed: the simulated loss ends, later copies pass */
		EXPECT_R(step(&fl, p), ECNP_EV_DUPACK_ABORT |
			 ECNP_EV_NOT_DROPPED);
		EXPECT(!(fl.f.dflags & ECNP_DF_HOLD));
		EXPECT_R(n_retx(&fl, u, MSS), 0);
		EXPECT_R(e_ack(&fl, 0, u + 2 * MSS, 0, 0, 0xffff), 0);

		CTX("dupack, the late copy of L in a GSO packet, E=%c",
		    e_is_a ? 'A' : 'B');
		u = nosack_window_signal(&fl);
		EXPECT_R(e_ack(&fl, 0, fl.n_seq, 0, 0, 500), 0);
		EXPECT(fl.f.dflags & ECNP_DF_LATE);
		p = n_next(&fl, 0, 2 * MSS);
		p.seq = u;
		p.seg_len = MSS;
		p.pflags = ECNP_PF_NO_DROP;
		EXPECT_R(step(&fl, p), ECNP_EV_NOT_DROPPED);
		EXPECT(!(fl.f.dflags & ECNP_DF_LATE));
	}
}

/* ---- simulation: N sends, a router marks, E echoes as RFC 3168 says ---- */

struct sim_stats {
	int marks, events, drops, cwrs, retx;
};

static u32 rnd(u32 *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 17;
	*s ^= *s << 5;
	return *s;
}

static void simulate(struct flow *fl, u32 seed, int segs,
		     struct sim_stats *st)
{
	struct ecnp_pkt p, seen;
	bool demand_cwr = false;	/* E's TCP_ECN_DEMAND_CWR */
	bool hole = false, cwr_owed = false;
	u32 hole_seq = 0, last_recover = 0, r;
	bool acked_past_recover = true;
	int i, since_drop = 0;

	memset(st, 0, sizeof(*st));
	for (i = 0; i < segs; i++) {
		/* N: retransmit the lost segment three segments later */
		if (hole && ++since_drop == 3) {
			p = mkp(n_dir(fl), ACK, hole_seq, fl->e_seq, MSS,
				NOT_ECT);
			EXPECT(!ecnp_fsm_wants_drop(&fl->f, &p, fl->mode));
			r = step(fl, p);
			EXPECT_EQ(r & (DROP | SET_ECT0 | SET_CWR), 0);
			seen = apply(p, r);
			st->retx++;
			hole = false;
		} else {
			p = mkp(n_dir(fl), ACK, fl->n_seq, fl->e_seq, MSS,
				NOT_ECT);
			fl->n_seq += MSS;
			EXPECT_EQ(ecnp_fsm_wants_drop(&fl->f, &p, fl->mode),
				  !!(ecnp_st_signal(fl->f.state) &&
				     fl->mode != ECNP_FB_NONE));
			r = step(fl, p);
			if (r & DROP) {
				EXPECT_R(r, DROP | ECNP_EV_CONG_SIGNAL);
				EXPECT(!hole);
				EXPECT(!cwr_owed);
				st->drops++;
				st->events++;
				hole = true;
				hole_seq = p.seq;
				since_drop = 0;
				cwr_owed = true;
				/* one event per window */
				EXPECT(acked_past_recover);
				acked_past_recover = false;
				last_recover = fl->f.recover;
				goto e_acks;
			}
			EXPECT(!(r & ECNP_EV_MASK));
			seen = apply(p, r);
			if (fl->mode == ECNP_FB_NONE)
				EXPECT_EQ(seen.ecn, NOT_ECT);
			else
				EXPECT_EQ(seen.ecn, ECT0);
			if (r & SET_CWR) {
				EXPECT(cwr_owed);
				cwr_owed = false;
				st->cwrs++;
			}
			/* the router marks some ECT segments */
			if (seen.ecn == ECT0 && i < segs - 200 &&
			    rnd(&seed) % 100 < 4) {
				seen.ecn = CE;
				st->marks++;
			}
		}
		/* E receives seen (RFC 3168 6.1.3) */
		if (seen.flags & CWR)
			demand_cwr = false;
		if (seen.ecn == CE)
			demand_cwr = true;
e_acks:
		/* E acks: cumulative up to the hole */
		p = mkp(e_dir(fl), ACK | (demand_cwr ? ECE : 0), fl->e_seq,
			hole ? hole_seq : fl->n_seq, 0, NOT_ECT);
		if (!hole && after(p.ack, last_recover))
			acked_past_recover = true;
		r = step(fl, p);
		EXPECT(!(r & ECNP_EV_OUT_OF_WINDOW));
		seen = apply(p, r);
		EXPECT_EQ(seen.flags & (ECE | CWR), 0);
		EXPECT_EQ(seen.ecn, NOT_ECT);
	}
	/* E's echo has stopped: it was told CWR after the last event */
	EXPECT(!demand_cwr);
	EXPECT(!cwr_owed);
}

static void test_drop_mode_exactly_one_drop_per_event(void **state)
{
	static const enum ecnp_feedback modes[] = {
		ECNP_FB_DROP,
	};
	struct sim_stats st;
	struct flow fl;
	int e_is_a;
	size_t m;
	u32 seed;

	(void)state;
	for (m = 0; m < ARRAY_SIZE(modes); m++) {
		for (e_is_a = 0; e_is_a < 2; e_is_a++) {
			for (seed = 1; seed < 6; seed++) {
				CTX("simulation mode %d E=%c seed %u",
				    modes[m], e_is_a ? 'A' : 'B', seed);
				flow_open(&fl, e_is_a, modes[m],
					  0xffff0000u + seed * 977,
					  0x7ffffff0u);
				simulate(&fl, seed * 2654435761u, 5000, &st);
				EXPECT(st.marks > 20);
				EXPECT(st.events > 5);
				EXPECT_EQ(st.drops, st.events);
				EXPECT_EQ(st.cwrs, st.events);
				EXPECT_EQ(st.retx, st.drops);
				EXPECT(st.events <= st.marks);
			}
		}
	}
}

static void test_none_mode_simulation(void **state)
{
	struct sim_stats st;
	struct flow fl;

	(void)state;
	CTX("simulation, mode none");
	flow_open(&fl, false, ECNP_FB_NONE, 0xfffff000u, 5);
	simulate(&fl, 99, 3000, &st);
	EXPECT_EQ(st.marks, 0);
	EXPECT_EQ(st.drops, 0);
	EXPECT_EQ(st.events, 0);
}

/* ---- pickup: a connection met mid-stream (FSM.md, "Pickup") ------------- */

/*
 * A remembered connection (a tombstone names E): phase 2 at once, from a
 * segment of either side, liberal windows, the segment itself edited.
 */
static void test_pickup_known_roles(void **state)
{
	struct ecnp_fsm f;
	struct ecnp_pkt p;
	u32 r;

	(void)state;
	CTX("E = A, first segment E's data marked CE");
	ecnp_fsm_init(&f);
	p = mkp(A, ACK, 5000, 90000, MSS, CE);
	r = ecnp_fsm_pickup(&f, &p, A, true, ECNP_FB_DUPACK);
	EXPECT_R(r, CLR_ECN);
	EXPECT_STATE(&f, ECNP_S_ECE);
	EXPECT(ecnp_fsm_e_is_a(&f));
	EXPECT(f.flags & ECNP_FL_PICKED_UP);
	EXPECT(f.win[A].wflags & f.win[B].wflags & ECNP_WF_LIBERAL);
	EXPECT_EQ(f.dflags & (ECNP_DF_SACK_A | ECNP_DF_SACK_B),
		  ECNP_DF_SACK_A | ECNP_DF_SACK_B);
	/* N's ACK echoes it, N's new data is ECT toward E */
	p = mkp(B, ACK, 90000, 6000, 0, NOT_ECT);
	EXPECT_R(ecnp_fsm_step(&f, &p, ECNP_FB_DUPACK, false), SET_ECE);
	p = mkp(B, ACK, 90000, 6000, MSS, NOT_ECT);
	EXPECT_R(ecnp_fsm_step(&f, &p, ECNP_FB_DUPACK, false), SET_ECE | SET_ECT0);
	/* E's CWR ends the echo */
	p = mkp(A, ACK | CWR, 6000, 91000, MSS, ECT0);
	EXPECT_R(ecnp_fsm_step(&f, &p, ECNP_FB_DUPACK, false), CLR_CWR | CLR_ECN);
	EXPECT_STATE(&f, ECNP_S_DEFAULT);

	CTX("E = B, first segment N's data");
	ecnp_fsm_init(&f);
	p = mkp(A, ACK, 7000, 3000, MSS, NOT_ECT);
	r = ecnp_fsm_pickup(&f, &p, B, false, ECNP_FB_DROP);
	EXPECT_R(r, SET_ECT0);
	EXPECT_STATE(&f, ECNP_S_DEFAULT);
	EXPECT(!ecnp_fsm_e_is_a(&f));
	EXPECT_EQ(f.n_nxt, 7000 + MSS);
	EXPECT_EQ(f.dflags & (ECNP_DF_SACK_A | ECNP_DF_SACK_B), 0);
	/* a retransmission of it is not new data: no ECT */
	EXPECT_R(ecnp_fsm_step(&f, &p, ECNP_FB_DROP, false), 0);
	/* E's ECE starts a congestion event: drop mode drops N's next */
	p = mkp(B, ACK | ECE, 3000, 8000, 0, NOT_ECT);
	EXPECT_R(ecnp_fsm_step(&f, &p, ECNP_FB_DROP, false), CLR_ECE);
	p = mkp(A, ACK, 8000, 3000, MSS, NOT_ECT);
	EXPECT_R(ecnp_fsm_step(&f, &p, ECNP_FB_DROP, false),
		 DROP | ECNP_EV_CONG_SIGNAL);
	/* its retransmission is no new data, the next new data has CWR */
	EXPECT_R(ecnp_fsm_step(&f, &p, ECNP_FB_DROP, false), 0);
	p.seq += MSS;
	EXPECT_R(ecnp_fsm_step(&f, &p, ECNP_FB_DROP, false),
		 SET_CWR | SET_ECT0);

	CTX("a SYN, a RST or a segment from the flow's B cannot start one");
	ecnp_fsm_init(&f);
	p = mkp(A, SYN, 7000, 0, 0, NOT_ECT);
	EXPECT_R(ecnp_fsm_pickup(&f, &p, B, true, ECNP_FB_DROP),
		 ECNP_EV_OUT_PASS);
	EXPECT_STATE(&f, ECNP_S_PASS);
	ecnp_fsm_init(&f);
	p = mkp(A, RST | ACK, 7000, 1, 0, NOT_ECT);
	EXPECT_R(ecnp_fsm_pickup(&f, &p, A, true, ECNP_FB_DROP),
		 ECNP_EV_OUT_PASS);
	ecnp_fsm_init(&f);
	p = mkp(B, ACK, 7000, 1, MSS, CE);
	EXPECT_R(ecnp_fsm_pickup(&f, &p, -1, true, ECNP_FB_DROP),
		 ECNP_EV_OUT_PASS);
}

/* PICKUP on A's CE: B's answer decides, nothing edited until then. */
static void test_pickup_from_ce(void **state)
{
	struct ecnp_pkt ce = mkp(A, ACK | ECNP_TCP_PSH, 5000, 90000, MSS, CE);
	struct ecnp_pkt q;
	struct ecnp_fsm f;
	int k;

	(void)state;
	CTX("only data marked CE starts one");
	for (k = 0; k < 3; k++) {
		ecnp_fsm_init(&f);
		q = ce;
		if (k == 0)
			q.ecn = ECT0;
		else if (k == 1)
			q.len = 0;
		else
			q.ecn = NOT_ECT;
		EXPECT_R(ecnp_fsm_pickup(&f, &q, -1, true, ECNP_FB_DUPACK),
			 ECNP_EV_OUT_PASS);
		EXPECT_STATE(&f, ECNP_S_PASS);
	}

	CTX("B acks the marked data without ECE: B is N, the echo starts");
	ecnp_fsm_init(&f);
	EXPECT_R(ecnp_fsm_pickup(&f, &ce, -1, false, ECNP_FB_DUPACK), 0);
	EXPECT_STATE(&f, ECNP_S_PICKUP);
	/* waiting: nothing edited, whatever comes */
	EXPECT_R(ecnp_fsm_step(&f, &ce, ECNP_FB_DUPACK, false), 0);
	q = mkp(A, ACK, 6000, 90500, MSS, ECT0);
	EXPECT_R(ecnp_fsm_step(&f, &q, ECNP_FB_DUPACK, false), 0);
	q = mkp(B, ACK, 90500, 5999, 0, NOT_ECT);	/* short of its end */
	EXPECT_R(ecnp_fsm_step(&f, &q, ECNP_FB_DUPACK, false), 0);
	EXPECT_STATE(&f, ECNP_S_PICKUP);
	q = mkp(B, ACK, 90500, 6000, 0, NOT_ECT);
	EXPECT_R(ecnp_fsm_step(&f, &q, ECNP_FB_DUPACK, false), SET_ECE);
	EXPECT_STATE(&f, ECNP_S_ECE);
	EXPECT(ecnp_fsm_e_is_a(&f) && (f.flags & ECNP_FL_PICKED_UP));
	EXPECT_EQ(f.e_ack, 90500);
	EXPECT_EQ(f.n_nxt, 90500);
	/* SACK assumed (Linux's default) */
	EXPECT_EQ(f.dflags & (ECNP_DF_SACK_A | ECNP_DF_SACK_B),
		  ECNP_DF_SACK_A | ECNP_DF_SACK_B);
	/* from now on N sees plain TCP, its data goes ECT toward E */
	q = mkp(A, ACK, 7000, 90500, MSS, CE);
	EXPECT_R(ecnp_fsm_step(&f, &q, ECNP_FB_DUPACK, false), CLR_ECN);
	q = mkp(B, ACK, 90500, 8000, MSS, NOT_ECT);
	EXPECT_R(ecnp_fsm_step(&f, &q, ECNP_FB_DUPACK, false),
		 SET_ECE | SET_ECT0);

	CTX("A resends the marked data: B's ACK past it decides nothing");
	ecnp_fsm_init(&f);
	EXPECT_R(ecnp_fsm_pickup(&f, &ce, -1, true, ECNP_FB_DUPACK), 0);
	q = ce;
	q.ecn = NOT_ECT;	/* the retransmission: the CE copy may be lost */
	EXPECT_R(ecnp_fsm_step(&f, &q, ECNP_FB_DUPACK, false), 0);
	EXPECT_EQ(f.hold_end, 0);
	q = mkp(B, ACK, 90000, 6000, 0, NOT_ECT);
	EXPECT_R(ecnp_fsm_step(&f, &q, ECNP_FB_DUPACK, false), 0);
	EXPECT_STATE(&f, ECNP_S_PICKUP);
	/* an ACK "below" a zero hold_end (after 2^31) decides nothing either */
	q.ack = 0x90000000u;
	EXPECT_R(ecnp_fsm_step(&f, &q, ECNP_FB_DUPACK, false), 0);
	EXPECT_STATE(&f, ECNP_S_PICKUP);
	/* A's next marked data, acked without ECE: B is N */
	q = mkp(A, ACK, 6000, 90000, MSS, CE);
	EXPECT_R(ecnp_fsm_step(&f, &q, ECNP_FB_DUPACK, false), 0);
	EXPECT_EQ(f.hold_end, 6000 + MSS);
	q = mkp(B, ACK, 90000, 6000 + MSS, 0, NOT_ECT);
	EXPECT_R(ecnp_fsm_step(&f, &q, ECNP_FB_DUPACK, false), SET_ECE);
	EXPECT_STATE(&f, ECNP_S_ECE);

	CTX("B echoes: both negotiated ECN, SAME");
	ecnp_fsm_init(&f);
	ecnp_fsm_pickup(&f, &ce, -1, true, ECNP_FB_DUPACK);
	q = mkp(B, ACK | ECE, 90000, 6000, 0, NOT_ECT);
	EXPECT_R(ecnp_fsm_step(&f, &q, ECNP_FB_DUPACK, false), 0);
	EXPECT_STATE(&f, ECNP_S_SAME);

	CTX("B's data is ECT: B is ECN-capable, SAME");
	ecnp_fsm_init(&f);
	ecnp_fsm_pickup(&f, &ce, -1, true, ECNP_FB_DUPACK);
	q = mkp(B, ACK, 90000, 5000, MSS, ECT0);
	EXPECT_R(ecnp_fsm_step(&f, &q, ECNP_FB_DUPACK, false), 0);
	EXPECT_STATE(&f, ECNP_S_SAME);

	CTX("A's CWR: someone echoes A's marks, SAME");
	ecnp_fsm_init(&f);
	ecnp_fsm_pickup(&f, &ce, -1, true, ECNP_FB_DUPACK);
	q = mkp(A, ACK | CWR, 6000, 90000, MSS, ECT0);
	EXPECT_R(ecnp_fsm_step(&f, &q, ECNP_FB_DUPACK, false), 0);
	EXPECT_STATE(&f, ECNP_S_SAME);
	/* and stays untouched */
	q = mkp(B, ACK, 90000, 7000, 0, NOT_ECT);
	EXPECT_R(ecnp_fsm_step(&f, &q, ECNP_FB_DUPACK, false), 0);

	CTX("AccECN (AE, or CWR from B: the ACE counter): SAME, never edited");
	for (k = 0; k < 3; k++) {
		ecnp_fsm_init(&f);
		ecnp_fsm_pickup(&f, &ce, -1, true, ECNP_FB_DUPACK);
		if (k == 0)	/* A's ACE counter at 4 */
			q = mkp(A, ACK | ECNP_TCP_AE, 6000, 90000, MSS, ECT0);
		else if (k == 1)	/* B's ACE counter at 6 */
			q = mkp(B, ACK | ECNP_TCP_AE | CWR, 90000, 6000, 0,
				NOT_ECT);
		else	/* B's ACE counter at 2 */
			q = mkp(B, ACK | CWR, 90000, 6000, 0, NOT_ECT);
		EXPECT_R(ecnp_fsm_step(&f, &q, ECNP_FB_DUPACK, false), 0);
		EXPECT_STATE(&f, ECNP_S_SAME);
		q = mkp(B, ACK, 90000, 7000, 0, NOT_ECT);
		EXPECT_R(ecnp_fsm_step(&f, &q, ECNP_FB_DUPACK, false), 0);
	}
	CTX("CE-marked data with AE (an AccECN sender's ACE counter): PASS");
	ecnp_fsm_init(&f);
	q = ce;
	q.flags |= ECNP_TCP_AE;
	EXPECT_R(ecnp_fsm_pickup(&f, &q, -1, true, ECNP_FB_DUPACK),
		 ECNP_EV_OUT_PASS);
	EXPECT_STATE(&f, ECNP_S_PASS);

	CTX("RST and FINs while waiting");
	ecnp_fsm_init(&f);
	ecnp_fsm_pickup(&f, &ce, -1, true, ECNP_FB_DUPACK);
	q = mkp(B, ACK | RST, 90000, 6000, 0, NOT_ECT);
	EXPECT_R(ecnp_fsm_step(&f, &q, ECNP_FB_DUPACK, false),
		 ECNP_EV_CLOSED);
	EXPECT_STATE(&f, ECNP_S_CLOSED);
	ecnp_fsm_init(&f);
	ecnp_fsm_pickup(&f, &ce, -1, true, ECNP_FB_DUPACK);
	q = mkp(A, ACK | FIN, 6000, 90000, 0, NOT_ECT);
	EXPECT_R(ecnp_fsm_step(&f, &q, ECNP_FB_DUPACK, false), 0);
	q = mkp(B, ACK | FIN | ECE, 90000, 6001, 0, NOT_ECT);
	EXPECT_R(ecnp_fsm_step(&f, &q, ECNP_FB_DUPACK, false),
		 ECNP_EV_CLOSED);
}

/* ---- random segments: invariants must hold in every state --------------- */

static void fuzz_ctx(int flow, int i, const struct ecnp_fsm *prev,
		     const struct ecnp_fsm *f, const struct ecnp_pkt *p,
		     int mode, u32 r)
{
	CTX("fuzz %d/%d: %s->%s dir %c fl 0x%x seq 0x%x ack 0x%x len %u ecn %u mode %d: %s",
	    flow, i, ecnp_state_name(prev->state), ecnp_state_name(f->state),
	    p->dir ? 'B' : 'A', p->flags, p->seq, p->ack, p->len, p->ecn,
	    mode, act_str(r));
}

static void test_fuzz_invariants(void **state)
{
	static const u32 lens[] = { 0, 0, 1, 536, MSS, 1448, 64000 };
	unsigned int visits[ECNP_S_NR] = { 0 };
	struct ecnp_fsm f, prev;
	struct ecnp_pkt p;
	u32 seed = 0x9e3779b9u, nxt[2], isn[2], r, out, nxt0, oow = 0;
	bool had_outcome, wd, picked;
	enum ecnp_feedback mode;
	int flow, i, dir, ws;
	unsigned int s;

	(void)state;
	for (flow = 0; flow < 400; flow++) {
		ecnp_fsm_init(&f);
		isn[0] = rnd(&seed);
		isn[1] = rnd(&seed);
		nxt[0] = isn[0] + 1;
		nxt[1] = isn[1] + 1;
		/* the window scale both SYNs offer, or -1: none */
		ws = (int)(rnd(&seed) % 17) - 1;
		had_outcome = false;
		for (i = 0; i < 1000; i++) {
			u32 x = rnd(&seed), y = rnd(&seed);

			dir = x & 1;
			memset(&p, 0, sizeof(p));
			p.dir = dir;
			p.ecn = (x >> 1) & 3;
			p.flags = ACK | ((x >> 3) & (ECE | CWR | FIN | AE |
						     ECNP_TCP_PSH));
			switch ((x >> 12) % 20) {
			case 0:
				p.flags = SYN | ((x >> 3) & (ECE | CWR)) |
					  ((y & 0xf0) ? 0 : AE);
				p.seq = (y & 7) ? isn[dir] : y;
				break;
			case 1:
				p.flags |= SYN;
				p.seq = isn[dir];
				p.ack = isn[!dir] + 1;
				break;
			case 2:
				if ((y & 15) == 0)
					p.flags |= RST;
				p.seq = nxt[dir];
				break;
			case 3:
				p.seq = nxt[dir] - (y % 5000);	/* old */
				p.len = lens[(y >> 16) % ARRAY_SIZE(lens)];
				break;
			case 4:
				p.seq = y;			/* junk */
				p.ack = x;
				p.len = lens[(y >> 16) % ARRAY_SIZE(lens)];
				p.flags = (u16)(y & 0x1ff);
				break;
			default:
				p.seq = nxt[dir];
				p.len = lens[(y >> 16) % ARRAY_SIZE(lens)];
				break;
			}
			nxt0 = nxt[dir];
			if (p.seq == nxt[dir])
				nxt[dir] += p.len;
			if (!p.ack)
				p.ack = nxt[!dir] - ((y >> 8) & 3) * MSS;
			mode = (enum ecnp_feedback)((y >> 24) % 5);
			/* mostly a full window, sometimes any */
			p.win = (x >> 28) ? 0xffff : (u16)(y >> 4);
			p.opt = (u8)((x >> 24) & 7);
			if ((p.flags & SYN) && ws >= 0) {
				p.opt |= ECNP_OPT_WSCALE;
				p.wscale = (u8)ws;
			}
			p.sack_high = p.ack + (x & 0xffff);
			p.tsval = x;
			p.tsecr = y;
			p.seg_len = (u16)(p.len < MSS ? p.len : MSS);
			/* a GSO packet the plumbing cannot segment */
			if (p.len > MSS && !(x & 0x3c00))
				p.pflags = ECNP_PF_NO_DROP;
			/* dupack-fast: the plumbing may hold E's ACK or not */
			if (y & 0x4000)
				p.pflags |= ECNP_PF_STASHED;

			prev = f;
			wd = ecnp_fsm_wants_drop(&f, &p, mode);
			/* every 4th flow is picked up mid-stream (pickup) */
			picked = i == 0 && flow % 4 == 3;
			if (picked) {
				p.dir = A;
				p.flags &= (u16)~(SYN | RST);
				if (y & 3)
					p.ecn = CE;
				r = ecnp_fsm_pickup(&f, &p,
						    (int)((x >> 20) % 3) - 1,
						    (x >> 22) & 1, mode);
				wd = false;
			} else {
				r = ecnp_fsm_step(&f, &p, mode,
						  (y >> 28) == 0);
			}
			fuzz_ctx(flow, i, &prev, &f, &p, mode, r);
			/*
			 * out of the window: no state changes at all, and no
			 * edits (a handshake edit of a SYN or SYN-ACK aside)
			 */
			if (r & ECNP_EV_OUT_OF_WINDOW) {
				EXPECT(!memcmp(&prev, &f, sizeof(f)));
				EXPECT(!(r & ~ECNP_EV_OUT_OF_WINDOW &
					 ~(u32)ECNP_ACT_FLAG_EDITS));
				if (!(p.flags & SYN))
					EXPECT_EQ(r & ECNP_ACT_MASK, 0);
				/* the sender did not send it, as far as E/N go */
				nxt[dir] = nxt0;
				oow++;
			}
			/* a new incarnation (same ISNs): both sides start over */
			if ((f.state == ECNP_S_A_C || f.state == ECNP_S_A_NC) &&
			    prev.state != ECNP_S_A_C && prev.state != ECNP_S_A_NC) {
				nxt[0] = isn[0] + 1;
				nxt[1] = isn[1] + 1;
			}
			/* options not walked: nothing depends on them */
			if (!picked && !ecnp_fsm_wants_opts(&prev, p.flags, mode)) {
				struct ecnp_fsm g = prev;
				struct ecnp_pkt q = p;

				q.opt = 0;
				q.sack_high = 0;
				q.tsval = 0;
				q.tsecr = 0;
				EXPECT_EQ(ecnp_fsm_step(&g, &q, mode,
							(y >> 28) == 0), r);
				EXPECT(!memcmp(&g, &f, sizeof(g)));
			}
			visits[f.state < ECNP_S_NR ? f.state : 0]++;

			EXPECT(f.state < ECNP_S_NR && f.state != ECNP_S_INIT);
			/* no contradictory or no-op edits */
			EXPECT(!((r & SET_ECE) && (r & CLR_ECE)));
			EXPECT(!((r & SET_CWR) && (r & CLR_CWR)));
			EXPECT(!((r & SET_ECT0) && (r & CLR_ECN)));
			/* duplicates are copies of the ACK as it leaves */
			if (r & ECNP_ACT_INJECT_DUPACKS)
				EXPECT(!(r & (ECNP_ACT_HOLD_ACK |
					      ECNP_ACT_SET_TSECR)));
			if (r & SET_ECE)
				EXPECT(!(p.flags & ECE));
			if (r & CLR_ECE)
				EXPECT(p.flags & ECE);
			if (r & SET_CWR)
				EXPECT(!(p.flags & CWR));
			if (r & CLR_CWR)
				EXPECT(p.flags & CWR);
			if (r & SET_ECT0)
				EXPECT_EQ(p.ecn, NOT_ECT);
			if (r & CLR_ECN)
				EXPECT(p.ecn != NOT_ECT);
			EXPECT_EQ(r & ECNP_ACT_MASK &
				  ~(0x3ffu | ECNP_ACT_COPY_MASK |
				    ECNP_ACT_NO_DSACK | TRIM | CLAMP | STASH), 0);
			/*
			 * dupack-fast's copy of E's ACK: kept from a held pure
			 * ACK that is E's newest and acks L, sent to N on N's
			 * retransmission of L (trimmed, on to E), which ends
			 * the hold
			 */
			if (r & STASH)
				EXPECT(mode == ECNP_FB_DUPACK_FAST &&
				       ecnp_sack_ok(&f));
			if (ecnp_act_stash_answers(r))
				EXPECT(!ecnp_from_e(&prev, &p) && p.len &&
				       (p.pflags & ECNP_PF_STASHED) &&
				       (r & ECNP_EV_REXMIT_SUPPRESSED) &&
				       (prev.dflags & ECNP_DF_HOLD) &&
				       !(f.dflags & ECNP_DF_HOLD) &&
				       (f.dflags & ECNP_DF_REXMIT) &&
				       p.seq == prev.saved_ack &&
				       !before(f.e_ack, ecnp_fake_end(&prev)) &&
				       f.hold_end == f.n_nxt);
			else if (r & STASH)
				EXPECT(ecnp_from_e(&prev, &p) && !p.len &&
				       (r & ECNP_ACT_HOLD_ACK) &&
				       ecnp_fsm_stash_wanted(&f) &&
				       p.ack == f.e_ack &&
				       !before(p.ack, ecnp_fake_end(&f)) &&
				       !(p.opt & (ECNP_OPT_SACK |
						  ECNP_OPT_DSACK)));
			/* trimmed: N's suppressed retransmission, never dropped */
			if (r & TRIM)
				EXPECT((r & ECNP_EV_REXMIT_SUPPRESSED) &&
				       !(r & DROP) && p.len &&
				       !ecnp_from_e(&prev, &p));
			/*
			 * drop: exactly what wants_drop() predicted, but for
			 * dupack's absorbed ACKs (E->N, no data: never GSO)
			 */
			if (r & ECNP_EV_ACK_ABSORBED) {
				EXPECT_EQ(r & ~(u32)ECNP_EV_DUPACK_ABORT,
					  DROP | ECNP_EV_ACK_ABSORBED);
				EXPECT(ecnp_from_e(&prev, &p) && !p.len);
				EXPECT(!(p.flags & (FIN | SYN | RST)));
				/*
				 * held, or a duplicate of L after the hold
				 * was given up (in this step or before)
				 */
				if (f.dflags & ECNP_DF_HOLD)
					EXPECT(prev.dflags & ECNP_DF_HOLD);
				else
					EXPECT((f.dflags & ECNP_DF_ABORTED) &&
					       p.ack == f.saved_ack &&
					       f.e_ack == f.saved_ack);
				if (r & ECNP_EV_DUPACK_ABORT)
					EXPECT(!(f.dflags & ECNP_DF_HOLD));
				EXPECT((prev.dflags & (ECNP_DF_SACK_A |
						       ECNP_DF_SACK_B)) !=
				       (ECNP_DF_SACK_A | ECNP_DF_SACK_B));
				EXPECT(!wd);
			} else {
				EXPECT_EQ(!!(r & (DROP | TRIM)), wd);
			}
			if (p.pflags & ECNP_PF_NO_DROP)
				EXPECT(!(r & (DROP | TRIM)) && !wd);
			if (r & ECNP_EV_NOT_DROPPED)
				EXPECT(p.pflags & ECNP_PF_NO_DROP);
			if ((r & DROP) && !(r & ECNP_EV_ACK_ABSORBED)) {
				EXPECT_EQ(r & ECNP_ACT_MASK, DROP);
				/* a drop-mode signal, or dupack's suppression */
				EXPECT(!!(r & ECNP_EV_CONG_SIGNAL) ^
				       !!(r & ECNP_EV_REXMIT_SUPPRESSED));
				if (r & ECNP_EV_CONG_SIGNAL)
					EXPECT(mode == ECNP_FB_DROP);
			}
			/*
			 * a signal withdrawn: the hold (with SACK) ends before
			 * N's retransmission, and the signal is pending again
			 * (in whatever mode is set now: the hold began in a
			 * dupack mode)
			 */
			if (withdrawn_ev(r))
				EXPECT(ecnp_sack_ok(&f) &&
				       (prev.dflags & ECNP_DF_HOLD) &&
				       !(prev.dflags & ECNP_DF_REXMIT) &&
				       !(f.dflags & ECNP_DF_HOLD) &&
				       ecnp_st_signal(f.state) &&
				       !(r & ECNP_ACT_HOLD_ACK));
			/*
			 * with SACK the dupack signal is the hold alone, or
			 * (dupack-rwnd) the window clamp's start or reduction:
			 * the emulated sender in CWR until E acks all N sent
			 */
			else if (r & ECNP_EV_CONG_SIGNAL)
				EXPECT((r & (DROP | ECNP_ACT_INJECT_DUPACKS)) ||
				       (ecnp_fb_dupack(mode) &&
					(f.dflags & ECNP_DF_HOLD) &&
					ecnp_sack_ok(&f)) ||
				       (mode == ECNP_FB_DUPACK_RWND &&
					f.clamp_win && ecnp_sack_ok(&f) &&
					!(f.dflags & ECNP_DF_HOLD) &&
					(f.clamp_fl & ECNP_CF_ROUND) ==
					ECNP_CF_CWR &&
					f.clamp_end == f.n_nxt &&
					f.clamp_segs ==
					max_t(u32, (prev.clamp_win ?
						    prev.clamp_segs :
						    prev.clamp_fl >>
						    ECNP_CF_PEAK_SHIFT) *
					      717u >> 10, ECNP_FLOOR_SEGS)));
			/* the clamp's size: the emulated sender's window */
			if (f.clamp_win)
				EXPECT(f.clamp_segs >= ECNP_FLOOR_SEGS &&
				       f.clamp_segs <= ECNP_CLAMP_MAX_SEGS);
			else
				EXPECT(!f.clamp_segs &&
				       !(f.clamp_fl & ECNP_CF_ROUND));
			/*
			 * a clamp starts only after a simulated loss, from a
			 * peak within the ceiling
			 */
			if (f.clamp_win && !prev.clamp_win)
				EXPECT((prev.clamp_fl & ECNP_CF_CA) &&
				       (prev.clamp_fl >> ECNP_CF_PEAK_SHIFT) <=
				       ECNP_CLAMP_MAX_SEGS);
			/* a hold means N's ssthresh is set from now on */
			if (f.dflags & ECNP_DF_HOLD)
				EXPECT(f.clamp_fl & ECNP_CF_CA);
			/* without an event it grows by one segment at most */
			if (f.clamp_win && prev.clamp_win &&
			    !(r & ECNP_EV_CONG_SIGNAL))
				EXPECT(f.clamp_segs == prev.clamp_segs ||
				       f.clamp_segs == prev.clamp_segs + 1);
			/* the clamp: E's ACKs only, below its end, smaller */
			if (r & CLAMP)
				EXPECT(mode == ECNP_FB_DUPACK_RWND &&
				       ecnp_from_e(&f, &p) &&
				       (p.flags & ACK) &&
				       !(p.flags & (SYN | RST)) &&
				       f.clamp_win && p.win > f.clamp_win &&
				       before(p.ack, f.clamp_end) &&
				       !(f.dflags & ECNP_DF_HOLD));
			/* never a clamp and a hold, nor a clamp without SACK */
			EXPECT(!(f.clamp_win && (f.dflags & ECNP_DF_HOLD)));
			if (f.clamp_win && !prev.clamp_win)
				EXPECT(mode == ECNP_FB_DUPACK_RWND &&
				       ecnp_sack_ok(&f));
			/* dupack edits: only on E->N ACKs in phase 2 */
			if (r & ECNP_ACT_ACK_EDITS) {
				EXPECT(ecnp_fsm_in_phase2(&f));
				EXPECT(ecnp_from_e(&f, &p));
				EXPECT(p.flags & ACK);
			}
			if (r & ECNP_ACT_INJECT_DUPACKS) {
				EXPECT(ecnp_fb_dupack(mode) && !p.len &&
				       (f.dflags & ECNP_DF_HOLD));
				/* only on an ACK that advances E's newest */
				EXPECT(after(p.ack, prev.e_ack));
				EXPECT(!after(p.ack, prev.n_nxt));
				/* never inside a hole E reported */
				EXPECT(!prev.e_rep ||
				       !before(p.ack, prev.e_hole_end));
				/* never at a gap in N's stream at the proxy */
				EXPECT(!(f.dflags & ECNP_DF_GAP) ||
				       before(p.ack, f.n_gap));
				/* never with a TSecr that needs raising */
				EXPECT(!ecnp_tsecr_stale(&prev, &p));
				/* the once-per-window guard from here */
				EXPECT(f.flags & ECNP_FL_IN_WINDOW);
				EXPECT(!before(f.recover, prev.n_nxt));
			}
			if (r & ECNP_EV_CONG_ANSWERED) {
				/* N repairs a loss: only without SACK */
				EXPECT(ecnp_fb_dupack(mode) &&
				       (f.dflags & (ECNP_DF_SACK_A |
						    ECNP_DF_SACK_B)) !=
				       (ECNP_DF_SACK_A | ECNP_DF_SACK_B));
				EXPECT(f.e_rep >= ECNP_DUPACKS);
				EXPECT(!(r & ECNP_EV_CONG_SIGNAL));
				EXPECT(f.flags & ECNP_FL_CWR_PENDING);
			}
			/* a hole at E is tracked without SACK only */
			if (f.e_rep && !prev.e_rep)
				EXPECT(ecnp_fb_dupack(mode) &&
				       ecnp_from_e(&f, &p) &&
				       p.ack == prev.e_ack && !p.len);
			if (r & ECNP_EV_REXMIT_SUPPRESSED)
				EXPECT(p.seq == prev.saved_ack &&
				       before(p.seq, prev.n_nxt) &&
				       (prev.dflags & ECNP_DF_HOLD));
			/* a copy that may be N's first: never suppressed */
			if ((r & ECNP_EV_REXMIT_SUPPRESSED) &&
			    (prev.dflags & ECNP_DF_GAP))
				EXPECT(before(p.seq, prev.n_gap));
			/* a gap is in N's stream: below n_nxt, not empty */
			if (f.dflags & ECNP_DF_GAP)
				EXPECT(before(f.n_gap, f.n_gap_end) &&
				       !after(f.n_gap_end, f.n_nxt));
			/* ECT(0): new data from N in phase 2 only */
			if ((r & SET_ECT0) ||
			    ((r & DROP) && (r & ECNP_EV_CONG_SIGNAL))) {
				EXPECT(ecnp_fsm_in_phase2(&f));
				EXPECT(!ecnp_from_e(&f, &p));
				EXPECT(p.len > 0);
				EXPECT(!(p.flags & (SYN | RST)));
				EXPECT(mode != ECNP_FB_NONE);
				if (ecnp_fsm_in_phase2(&prev))
					EXPECT(!before(p.seq, prev.n_nxt));
				else if (f.flags & ECNP_FL_PICKED_UP)
					EXPECT(prev.state == ECNP_S_INIT ||
					       prev.state == ECNP_S_PICKUP);
				else
					EXPECT(prev.state == ECNP_S_WAIT_ACK ||
					       prev.state == ECNP_S_SIMOPEN);
			}
			/* untouched flows stay untouched */
			if ((prev.state == ECNP_S_SAME ||
			     prev.state == ECNP_S_PASS ||
			     prev.state == ECNP_S_CLOSED) &&
			    !(p.dir == A && (p.flags & (SYN | ACK)) == SYN))
				EXPECT_EQ(r & ECNP_ACT_MASK, 0);
			/* E->N in phase 2: plain TCP after the edits */
			if (ecnp_fsm_in_phase2(&prev) &&
			    ecnp_fsm_in_phase2(&f) &&
			    ecnp_from_e(&prev, &p) &&
			    !(p.flags & SYN) &&
			    !(r & (DROP | ECNP_EV_OUT_OF_WINDOW))) {
				struct ecnp_pkt seen = apply(p, r);

				EXPECT_EQ(seen.ecn, NOT_ECT);
				EXPECT_EQ(seen.flags & (ECE | CWR), 0);
			}
			/* ECE toward E only while an echo is pending */
			if ((r & SET_ECE) && !(p.flags & SYN))
				EXPECT(ecnp_st_echo(f.state));
			/* CWR toward E only on new data from N */
			if ((r & SET_CWR) && !(p.flags & SYN))
				EXPECT(ecnp_new_data(&prev, &p) &&
				       !ecnp_from_e(&prev, &p));
			/* one outcome per incarnation */
			out = r & ECNP_EV_OUT_MASK;
			EXPECT(!(out & (out - 1)));
			if (out) {
				EXPECT(!had_outcome ||
				       (p.dir == A &&
					(p.flags & (SYN | ACK)) == SYN));
				had_outcome = true;
			}
			if (f.state == ECNP_S_A_C || f.state == ECNP_S_A_NC)
				had_outcome = false;
		}
	}
	for (s = ECNP_S_A_C; s < ECNP_S_NR; s++) {
		CTX("fuzz coverage: state %s", ecnp_state_name(s));
		EXPECT(visits[s] > 0);
	}
	/* both kinds of segments, in numbers */
	CTX("fuzz coverage: %u of 400000 segments out of the window", oow);
	EXPECT(oow > 10000 && 400000 - oow > 50000);
}

/* ======================= window checks (M1) ============================= */

/*
 * A phase 2 flow past its first data: N has sent 5 segments, E acked them
 * and sent 2 of its own, which N acked; all windows 64 KB, no scaling.
 */
static void win_flow(struct flow *fl, bool e_is_a, enum ecnp_feedback mode)
{
	int k;

	flow_open(fl, e_is_a, mode, 0xfffff000u, 0x7fffff00u);
	for (k = 0; k < 5; k++)
		n_send(fl, 0, MSS);
	EXPECT_R(e_send(fl, 0, MSS, NOT_ECT, fl->n_seq), 0);
	EXPECT_R(e_send(fl, 0, MSS, NOT_ECT, fl->n_seq), 0);
	EXPECT_R(n_send(fl, 0, 0), 0);
}

/* Where a segment lands with respect to tcp_in_window()'s bounds. */
struct perturb {
	const char *name;
	s32 dseq;	/* added to the sequence number */
	s32 dack;	/* added to the ACK number */
};

/*
 * Ways a blind segment misses: far away in either number, or just outside
 * one of the bounds (I: a window and one more beyond what the receiver
 * allowed, II: a window and one more below what the sender sent, III:
 * beyond what the receiver may have sent, IV: older than 66000).  The
 * base segment is the sender's next one, acking all the receiver sent.
 */
static const struct perturb blind[] = {
	{ "seq + 2^30", 0x40000000, 0 },
	{ "seq - 2^30", -0x40000000, 0 },
	{ "seq + 2^31", (s32)0x80000000u, 0 },
	{ "ack + 2^30", 0, 0x40000000 },
	{ "ack - 2^30", 0, -0x40000000 },
	{ "seq beyond two windows (I)", 2 * 0xffff + 1, 0 },
	{ "seq a window behind (II)", -0xffff - (s32)MSS - 1, 0 },
	{ "ack beyond a window (III)", 0, 0xffff + 1 },
	{ "ack 66000 behind (IV)", 0, -66001 },
};

/*
 * Step @p perturbed by each of blind[] and check that nothing changed: no
 * state, and no edit of the segment (the proxy treats it as if it did not
 * know the flow: it sets nothing, clears nothing, drops and injects
 * nothing).
 */
static void expect_blind(struct flow *fl, struct ecnp_pkt p, const char *what)
{
	struct ecnp_fsm before = fl->f;
	struct ecnp_pkt q, seen;
	size_t i;
	u32 r;

	for (i = 0; i < ARRAY_SIZE(blind); i++) {
		CTX("%s, E=%c, %s: spoofed (%s)", what,
		    fl->e_is_a ? 'A' : 'B', ecnp_state_name(fl->f.state),
		    blind[i].name);
		q = p;
		q.seq += (u32)blind[i].dseq;
		q.ack += (u32)blind[i].dack;
		r = step(fl, q);
		EXPECT(r & ECNP_EV_OUT_OF_WINDOW);
		EXPECT(!memcmp(&before, &fl->f, sizeof(before)));
		EXPECT_EQ(r & ECNP_ACT_MASK, 0);
		EXPECT_EQ(r & ECNP_EV_MASK & ~ECNP_EV_OUT_OF_WINDOW, 0);
		seen = apply(q, r);
		EXPECT_EQ(seen.ecn, q.ecn);
		EXPECT_EQ(seen.flags, q.flags);
	}
}

/*
 * Every flag that changes the flow's state, for E = A and E = B: spoofed
 * copies (blind[]) change nothing, the real segment does what it should.
 */
static void test_window_each_flag(void **state)
{
	struct ecnp_pkt p;
	struct flow fl;
	int e_is_a;
	u32 old;

	(void)state;
	for (e_is_a = 0; e_is_a < 2; e_is_a++) {
		/* ECE from E opens a congestion event */
		win_flow(&fl, e_is_a, ECNP_FB_DROP);
		p = e_next(&fl, ECE, 0, NOT_ECT);
		expect_blind(&fl, p, "ECE");
		EXPECT_STATE(&fl.f, ECNP_S_DEFAULT);
		EXPECT_R(step(&fl, p), CLR_ECE);
		EXPECT_STATE(&fl.f, ECNP_S_DUPACK);

		/* CE on E's data starts the echo */
		win_flow(&fl, e_is_a, ECNP_FB_DROP);
		p = e_next(&fl, 0, MSS, CE);
		expect_blind(&fl, p, "CE");
		EXPECT_STATE(&fl.f, ECNP_S_DEFAULT);
		fl.e_seq += MSS;
		EXPECT_R(step(&fl, p), CLR_ECN);
		EXPECT_STATE(&fl.f, ECNP_S_ECE);

		/* CWR from E stops it */
		p = e_next(&fl, CWR, 0, NOT_ECT);
		expect_blind(&fl, p, "CWR");
		EXPECT_STATE(&fl.f, ECNP_S_ECE);
		EXPECT_R(n_send(&fl, 0, 0), SET_ECE);
		EXPECT_R(step(&fl, p), CLR_CWR);
		EXPECT_STATE(&fl.f, ECNP_S_DEFAULT);
		EXPECT_R(n_send(&fl, 0, 0), 0);

		/* N's data moves n_nxt (and gets ECT) */
		win_flow(&fl, e_is_a, ECNP_FB_DROP);
		old = fl.f.n_nxt;
		p = n_next(&fl, 0, MSS);
		expect_blind(&fl, p, "N's data");
		EXPECT_EQ(fl.f.n_nxt, old);
		fl.n_seq += MSS;
		EXPECT_R(step(&fl, p), SET_ECT0);
		EXPECT_EQ(fl.f.n_nxt, old + MSS);

		/* FIN from each side, then the closing event */
		win_flow(&fl, e_is_a, ECNP_FB_DROP);
		p = n_next(&fl, FIN, 0);
		expect_blind(&fl, p, "N's FIN");
		EXPECT_EQ(fl.f.flags & (ECNP_FL_FIN_A | ECNP_FL_FIN_B), 0);
		fl.n_seq++;
		EXPECT_R(step(&fl, p), 0);
		p = e_next(&fl, FIN, 0, NOT_ECT);
		expect_blind(&fl, p, "E's FIN");
		fl.e_seq++;
		EXPECT_R(step(&fl, p), ECNP_EV_CLOSED);

		/* the simulated loss: its start, the hold and the release */
		win_flow(&fl, e_is_a, ECNP_FB_DUPACK);
		flow_sack(&fl);
		EXPECT_R(n_send(&fl, 0, MSS), SET_ECT0);
		EXPECT_R(n_send(&fl, 0, MSS), SET_ECT0);
		EXPECT_R(n_send(&fl, 0, MSS), SET_ECT0);
		p = mkp(e_dir(&fl), ACK | ECE, fl.e_seq, fl.n_seq - 2 * MSS, 0,
			NOT_ECT);
		expect_blind(&fl, p, "dupack: the ECE ACK");
		EXPECT_R(step(&fl, p), CLR_ECE |
			 ECNP_EV_CONG_SIGNAL);
		EXPECT(fl.f.dflags & ECNP_DF_HOLD);
		/* N's retransmission of L: suppressed */
		EXPECT_R(n_retx(&fl, fl.n_seq - 2 * MSS, MSS),
			 SUPPRESS);
		p = mkp(e_dir(&fl), ACK, fl.e_seq, fl.n_seq - MSS, 0, NOT_ECT);
		expect_blind(&fl, p, "dupack: a held ACK");
		EXPECT_R(step(&fl, p), ECNP_ACT_HOLD_ACK);
		p = e_next(&fl, 0, 0, NOT_ECT);
		expect_blind(&fl, p, "dupack: the releasing ACK");
		EXPECT(fl.f.dflags & ECNP_DF_HOLD);
		EXPECT_R(step(&fl, p), 0);
		EXPECT(!(fl.f.dflags & ECNP_DF_HOLD));

		/* RSTs: see test_window_rst */
	}
}

/*
 * RST (RFC 5961 3.2): from either side, blind ones and ones in the window
 * that do not match exactly change nothing; the exact one closes.  The
 * exact values: the sender's next sequence number, the receiver's
 * highest ACK, and after a FIN the FIN's own.
 */
static void test_window_rst(void **state)
{
	static const s32 near[] = { 1, -1, 100, -100, 0xffff, -(s32)MSS };
	struct ecnp_pkt p, q;
	struct flow fl;
	int e_is_a, dir;
	size_t i;
	u32 r, nack;

	(void)state;
	for (e_is_a = 0; e_is_a < 2; e_is_a++) {
		for (dir = 0; dir < 2; dir++) {
			win_flow(&fl, e_is_a, ECNP_FB_DROP);
			p = mkp(dir, RST | ACK, dir == n_dir(&fl) ? fl.n_seq :
				fl.e_seq, dir == n_dir(&fl) ? fl.e_seq :
				fl.n_seq, 0, NOT_ECT);
			expect_blind(&fl, p, "RST");
			for (i = 0; i < ARRAY_SIZE(near); i++) {
				CTX("RST from %c, E=%c, seq off by %d",
				    dir == A ? 'A' : 'B', e_is_a ? 'A' : 'B',
				    near[i]);
				q = p;
				q.seq += (u32)near[i];
				r = step(&fl, q);
				EXPECT_EQ(r & ECNP_EV_MASK,
					  ECNP_EV_OUT_OF_WINDOW);
				EXPECT_STATE(&fl.f, ECNP_S_DEFAULT);
			}
			CTX("RST from %c, E=%c, exact", dir == A ? 'A' : 'B',
			    e_is_a ? 'A' : 'B');
			r = step(&fl, p);
			EXPECT_EQ(r & ECNP_EV_MASK, ECNP_EV_CLOSED);
			EXPECT_STATE(&fl.f, ECNP_S_CLOSED);
		}

		/* E's data not (yet) acked by N: N's ACK is exact too */
		CTX("RST from E at N's ACK, E=%c", e_is_a ? 'A' : 'B');
		win_flow(&fl, e_is_a, ECNP_FB_DROP);
		nack = fl.e_seq;
		e_send(&fl, 0, MSS, NOT_ECT, fl.n_seq);
		e_send(&fl, 0, MSS, NOT_ECT, fl.n_seq);
		p = mkp(e_dir(&fl), RST, nack + 1, 0, 0, NOT_ECT);
		EXPECT_R(step(&fl, p), ECNP_EV_OUT_OF_WINDOW);
		p.seq = nack;
		EXPECT_R(step(&fl, p), ECNP_EV_CLOSED);

		CTX("RST from N at E's ACK, E=%c", e_is_a ? 'A' : 'B');
		win_flow(&fl, e_is_a, ECNP_FB_DROP);
		nack = fl.n_seq;
		n_send(&fl, 0, MSS);
		p = mkp(n_dir(&fl), RST, nack, 0, 0, NOT_ECT);
		EXPECT_R(step(&fl, p), ECNP_EV_CLOSED);

		CTX("RST after the sender's FIN, at the FIN, E=%c",
		    e_is_a ? 'A' : 'B');
		win_flow(&fl, e_is_a, ECNP_FB_DROP);
		n_send(&fl, FIN, 0);
		p = mkp(n_dir(&fl), RST, fl.n_seq - 2, 0, 0, NOT_ECT);
		EXPECT_R(step(&fl, p), ECNP_EV_OUT_OF_WINDOW);
		p.seq = fl.n_seq - 1;
		EXPECT_R(step(&fl, p), ECNP_EV_CLOSED);
	}
}

/*
 * A new incarnation on the same 4-tuple (a SYN with another ISN) starts
 * only after a RST or both FINs that were in the window.
 */
static void test_window_syn_restart(void **state)
{
	struct ecnp_pkt syn = mkp(A, SYN, 0x12345678u, 0, 0, NOT_ECT);
	struct flow fl;
	int e_is_a;

	(void)state;
	for (e_is_a = 0; e_is_a < 2; e_is_a++) {
		CTX("SYN restart after spoofed FINs, E=%c", e_is_a ? 'A' : 'B');
		win_flow(&fl, e_is_a, ECNP_FB_DROP);
		expect_blind(&fl, n_next(&fl, FIN, 0), "N's FIN");
		expect_blind(&fl, e_next(&fl, FIN, 0, NOT_ECT), "E's FIN");
		EXPECT_R(step(&fl, syn), ECNP_EV_OUT_OF_WINDOW);
		EXPECT_STATE(&fl.f, ECNP_S_DEFAULT);

		CTX("SYN restart after spoofed RSTs, E=%c", e_is_a ? 'A' : 'B');
		expect_blind(&fl, n_next(&fl, RST, 0), "RST from N");
		expect_blind(&fl, e_next(&fl, RST, 0, NOT_ECT), "RST from E");
		EXPECT_R(step(&fl, syn), ECNP_EV_OUT_OF_WINDOW);
		EXPECT_STATE(&fl.f, ECNP_S_DEFAULT);

		CTX("SYN restart after both FINs, E=%c", e_is_a ? 'A' : 'B');
		EXPECT_R(n_send(&fl, FIN, 0), 0);
		EXPECT_R(e_send(&fl, FIN, 0, NOT_ECT, fl.n_seq),
			 ECNP_EV_CLOSED);
		EXPECT_R(step(&fl, syn), SET_ECE | SET_CWR);
		EXPECT_STATE(&fl.f, ECNP_S_A_NC);
		EXPECT_EQ(fl.f.a_isn, syn.seq);
	}
}

/*
 * The handshake: a SYN-ACK acks A's SYN, the first ACK B's SYN-ACK; other
 * ones decide nothing.  A SYN-ACK after the decision still gets its edit.
 */
static void test_window_handshake(void **state)
{
	static const u32 bad_acks[] = { 0, 100, 102, 0x80000065u };
	struct ecnp_pkt syn = mkp(A, SYN, 100, 0, 0, NOT_ECT);
	struct ecnp_pkt sa = mkp(B, SYN | ACK | ECE, 5000, 101, 0, NOT_ECT);
	struct ecnp_pkt ack = mkp(A, ACK, 101, 5001, 0, NOT_ECT);
	struct ecnp_fsm f, prev;
	struct ecnp_pkt p;
	size_t i;

	(void)state;
	for (i = 0; i < ARRAY_SIZE(bad_acks); i++) {
		CTX("SYN-ACK acking %u, A's ISN 100", bad_acks[i]);
		ecnp_fsm_init(&f);
		EXPECT_R(ecnp_fsm_step(&f, &syn, ECNP_FB_DROP, false),
			 SET_ECE | SET_CWR);
		p = sa;
		p.ack = bad_acks[i];
		prev = f;
		EXPECT_R(ecnp_fsm_step(&f, &p, ECNP_FB_DROP, true),
			 ECNP_EV_OUT_OF_WINDOW);
		EXPECT(!memcmp(&prev, &f, sizeof(f)));
		EXPECT_R(ecnp_fsm_step(&f, &sa, ECNP_FB_DROP, false),
			 CLR_ECE | ECNP_EV_OUT_E_RESP);

		CTX("handshake ACK acking %u, B's ISN 5000", bad_acks[i] + 4900);
		p = ack;
		p.ack = bad_acks[i] + 4900;
		prev = f;
		EXPECT_R(ecnp_fsm_step(&f, &p, ECNP_FB_DROP, false),
			 ECNP_EV_OUT_OF_WINDOW);
		EXPECT(!memcmp(&prev, &f, sizeof(f)));
		EXPECT_STATE(&f, ECNP_S_WAIT_ACK);
		/* a spoofed SYN-ACK: edited as the real one, changes nothing */
		p = sa;
		p.ack = bad_acks[i];
		p.seq = 7777;
		EXPECT_R(ecnp_fsm_step(&f, &p, ECNP_FB_DROP, false),
			 CLR_ECE | ECNP_EV_OUT_OF_WINDOW);
		EXPECT(!memcmp(&prev, &f, sizeof(f)));
		/* the real ACK */
		EXPECT_R(ecnp_fsm_step(&f, &ack, ECNP_FB_DROP, false), 0);
		EXPECT_STATE(&f, ECNP_S_DEFAULT);
	}

	CTX("handshake ACK from A with data, one byte beyond B's SYN");
	ecnp_fsm_init(&f);
	ecnp_fsm_step(&f, &syn, ECNP_FB_DROP, false);
	ecnp_fsm_step(&f, &sa, ECNP_FB_DROP, false);
	p = mkp(A, ACK, 101, 5002, MSS, NOT_ECT);
	EXPECT_R(ecnp_fsm_step(&f, &p, ECNP_FB_DROP, false),
		 ECNP_EV_OUT_OF_WINDOW);
	p.ack = 5001;
	EXPECT_R(ecnp_fsm_step(&f, &p, ECNP_FB_DROP, false), SET_ECT0);

	CTX("A's SYN with data (TFO): B's SYN-ACK may ack it, or not");
	for (i = 0; i < 3; i++) {
		ecnp_fsm_init(&f);
		p = syn;
		p.len = 50;
		ecnp_fsm_step(&f, &p, ECNP_FB_DROP, false);
		p = sa;
		p.ack = 101 + 25 * (u32)i;
		EXPECT_R(ecnp_fsm_step(&f, &p, ECNP_FB_DROP, false),
			 CLR_ECE | ECNP_EV_OUT_E_RESP);
	}
	p.ack = 152;
	ecnp_fsm_init(&f);
	p = syn;
	p.len = 50;
	ecnp_fsm_step(&f, &p, ECNP_FB_DROP, false);
	p = sa;
	p.ack = 152;
	EXPECT_R(ecnp_fsm_step(&f, &p, ECNP_FB_DROP, false),
		 ECNP_EV_OUT_OF_WINDOW);
}

/*
 * What a real sender and receiver legitimately send, all in the window:
 * retransmissions of old data, a window probe and a keepalive (the byte
 * before snd_una), a zero window, segments and ACKs two CPUs forwarded out
 * of order, a GSO packet passed whole, an ACK of data the proxy has not
 * seen, SACK blocks; and the exact bounds of tcp_in_window() (one byte
 * further is out: test_window_each_flag).
 */
static void test_window_tolerance(void **state)
{
	struct ecnp_pkt p;
	struct flow fl;
	int e_is_a;
	u32 una, k;

	(void)state;
	for (e_is_a = 0; e_is_a < 2; e_is_a++) {
		CTX("legitimate segments, E=%c", e_is_a ? 'A' : 'B');
		win_flow(&fl, e_is_a, ECNP_FB_DROP);
		una = fl.n_seq;
		/* 40 segments in flight (E's window is 64 KB) */
		for (k = 0; k < 40; k++)
			EXPECT_R(n_send(&fl, 0, MSS), SET_ECT0);
		/* retransmissions, a repacked one, old data */
		EXPECT_R(n_retx(&fl, una, MSS), 0);
		EXPECT_R(n_retx(&fl, una, 4 * MSS), 0);
		EXPECT_R(n_retx(&fl, una - 2 * MSS, MSS), 0);
		/* keepalive and window probe: the byte before snd_una */
		EXPECT_R(n_retx(&fl, una - 1, 0), 0);
		EXPECT_R(n_retx(&fl, una - 1, 1), 0);
		/* E's ACKs out of order, and with a zero window */
		EXPECT_R(e_send(&fl, 0, 0, NOT_ECT, una + 20 * MSS), 0);
		EXPECT_R(e_send(&fl, 0, 0, NOT_ECT, una + 10 * MSS), 0);
		p = e_next(&fl, 0, 0, NOT_ECT);
		p.ack = una + 15 * MSS;
		p.win = 0;
		EXPECT_R(step(&fl, p), 0);
		/* N's segments out of order: the later one first */
		p = n_next(&fl, 0, MSS);
		p.seq += MSS;
		EXPECT_R(step(&fl, p), SET_ECT0);
		p.seq -= MSS;
		EXPECT_R(step(&fl, p), SET_ECT0);	/* fills the gap */
		fl.n_seq += 2 * MSS;
		/* a GSO packet of 44 segments passed whole */
		p = n_next(&fl, 0, 44 * MSS);
		p.seg_len = MSS;
		EXPECT_R(step(&fl, p), SET_ECT0);
		fl.n_seq += 44 * MSS;
		/* E acks all of it, and data the proxy has not seen yet */
		EXPECT_R(e_send(&fl, 0, 0, NOT_ECT, fl.n_seq), 0);
		EXPECT_R(e_send(&fl, 0, 0, NOT_ECT, fl.n_seq + 3 * MSS), 0);
		EXPECT_EQ(fl.f.e_ack, fl.n_seq);
		/* SACK blocks (their options are not read here) */
		p = e_next(&fl, 0, 0, NOT_ECT);
		p.opt = ECNP_OPT_SACK;
		p.sack_high = fl.n_seq + 5 * MSS;
		EXPECT_R(step(&fl, p), 0);
		/* E's keepalive, and its data N acks out of order */
		p = e_next(&fl, 0, 0, NOT_ECT);
		p.seq--;
		EXPECT_R(step(&fl, p), 0);
		EXPECT_R(e_send(&fl, 0, MSS, CE, fl.n_seq), CLR_ECN);
		EXPECT_STATE(&fl.f, ECNP_S_ECE);
		p = n_next(&fl, 0, 0);
		p.ack -= MSS;
		EXPECT_R(step(&fl, p), SET_ECE);
		EXPECT_EQ(fl.f.n_ack, fl.e_seq - MSS);
		EXPECT_R(n_send(&fl, 0, 0), SET_ECE);
		EXPECT_EQ(fl.f.n_ack, fl.e_seq);

		/* the bounds, each one byte inside */
		CTX("bounds, E=%c", e_is_a ? 'A' : 'B');
		win_flow(&fl, e_is_a, ECNP_FB_DROP);
		/* I: a segment starting at E's ACK + window ... */
		p = n_next(&fl, 0, MSS);
		p.seq = fl.n_seq + 0xffff;
		EXPECT_R(step(&fl, p), SET_ECT0);
		/* ... or ending a window beyond that (overshoot) */
		win_flow(&fl, e_is_a, ECNP_FB_DROP);
		p.seq = fl.n_seq + 2 * 0xffff - MSS;
		EXPECT_R(step(&fl, p), SET_ECT0);
		/* II: ending a window below N's highest end */
		win_flow(&fl, e_is_a, ECNP_FB_DROP);
		p.seq = fl.n_seq - 0xffff - MSS;
		EXPECT_R(step(&fl, p), 0);
		/* III: acking up to N's ACK + window */
		p = e_next(&fl, 0, 0, NOT_ECT);
		p.ack = fl.n_seq + 0xffff;
		EXPECT_R(step(&fl, p), 0);
		/* IV: acking 66000 below N's highest end */
		p.ack = fl.n_seq - 66000;
		EXPECT_R(step(&fl, p), 0);
	}
}

/*
 * Window scaling (RFC 7323): on iff both SYNs offer it; then the window
 * fields count in units of 1 << wscale, the SYNs' own never do.
 */
static void test_window_scaling(void **state)
{
	struct ecnp_pkt syn = mkp(A, SYN, 100, 0, 0, NOT_ECT);
	struct ecnp_pkt sa = mkp(B, SYN | ACK | ECE, 5000, 101, 0, NOT_ECT);
	struct ecnp_pkt ack = mkp(A, ACK, 101, 5001, 0, NOT_ECT);
	struct ecnp_pkt p;
	struct ecnp_fsm f;
	int both;
	u32 r;

	(void)state;
	for (both = 0; both < 2; both++) {
		CTX("window scale 7 on %s", both ? "both SYNs" : "A's only");
		ecnp_fsm_init(&f);
		syn.opt = ECNP_OPT_WSCALE;
		syn.wscale = 7;
		sa.opt = both ? ECNP_OPT_WSCALE : 0;
		sa.wscale = 9;
		ecnp_fsm_step(&f, &syn, ECNP_FB_DROP, false);
		ecnp_fsm_step(&f, &sa, ECNP_FB_DROP, false);
		EXPECT_EQ(!!(f.win[A].wflags & ECNP_WF_SCALED), both);
		EXPECT_EQ(f.win[B].wscale, both ? 9 : 0);
		/* A (N) offers 1000 << 7 bytes, B (E) 1000 << 9 */
		ack.win = 1000;
		ecnp_fsm_step(&f, &ack, ECNP_FB_DROP, false);
		p = mkp(B, ACK, 5001, 101, 0, NOT_ECT);
		p.win = 1000;
		EXPECT_R(ecnp_fsm_step(&f, &p, ECNP_FB_DROP, false), 0);
		/* N's data at 300 KB: inside 512 KB of scaled window only */
		p = mkp(A, ACK, 101 + 300000, 5001, MSS, NOT_ECT);
		r = ecnp_fsm_step(&f, &p, ECNP_FB_DROP, false);
		EXPECT_R(r, both ? SET_ECT0 : ECNP_EV_OUT_OF_WINDOW);
	}
}

/*
 * The flow of a pickup is set up before another CPU can find it
 * (ecnp_fsm_pickup_init()): a segment from the other end that takes the
 * flow's lock before the one that created it finds the roles, and the
 * connection is proxied whichever is stepped first.
 */
static void test_pickup_other_end_first(void **state)
{
	struct ecnp_pkt n_data = mkp(A, ACK, 7000, 3000, MSS, NOT_ECT);
	struct ecnp_pkt e_data = mkp(B, ACK, 3000, 7000, MSS, CE);
	struct ecnp_pkt ce = mkp(A, ACK, 5000, 90000, MSS, CE);
	struct ecnp_pkt q;
	struct ecnp_fsm f;

	(void)state;
	CTX("tombstone, E = B: E's CE data locks the flow before N's data");
	ecnp_fsm_pickup_init(&f, &n_data, B, true);
	EXPECT_R(ecnp_fsm_step(&f, &e_data, ECNP_FB_DUPACK, false), CLR_ECN);
	EXPECT_STATE(&f, ECNP_S_ECE);
	EXPECT(!ecnp_fsm_e_is_a(&f));
	EXPECT(f.flags & ECNP_FL_PICKED_UP);
	/* then the creator's segment: ECT toward E, and the echo */
	EXPECT_R(ecnp_fsm_step(&f, &n_data, ECNP_FB_DUPACK, false),
		 SET_ECT0 | SET_ECE);

	CTX("tombstone, E = A: N's ACK locks the flow before E's data");
	q = mkp(B, ACK, 3000, 7000, 0, NOT_ECT);
	ecnp_fsm_pickup_init(&f, &ce, A, false);
	EXPECT_R(ecnp_fsm_step(&f, &q, ECNP_FB_DROP, false), 0);
	EXPECT_STATE(&f, ECNP_S_DEFAULT);
	EXPECT(ecnp_fsm_e_is_a(&f));
	EXPECT_R(ecnp_fsm_step(&f, &ce, ECNP_FB_DROP, false), CLR_ECN);
	EXPECT_STATE(&f, ECNP_S_ECE);

	CTX("CE pickup: B's ACK locks the flow before A's marked data");
	ecnp_fsm_pickup_init(&f, &ce, -1, true);
	q = mkp(B, ACK, 90000, 5000, 0, NOT_ECT);
	EXPECT_R(ecnp_fsm_step(&f, &q, ECNP_FB_DUPACK, false), 0);
	EXPECT_STATE(&f, ECNP_S_PICKUP);
	EXPECT_R(ecnp_fsm_step(&f, &ce, ECNP_FB_DUPACK, false), 0);
	EXPECT_STATE(&f, ECNP_S_PICKUP);
	/* B acks the marked data without ECE: B is N, the echo starts */
	q.ack = 5000 + MSS;
	EXPECT_R(ecnp_fsm_step(&f, &q, ECNP_FB_DUPACK, false), SET_ECE);
	EXPECT_STATE(&f, ECNP_S_ECE);

	CTX("a SYN, a RST or a segment from B cannot set one up");
	q = mkp(A, SYN, 7000, 0, 0, NOT_ECT);
	ecnp_fsm_pickup_init(&f, &q, B, true);
	EXPECT_STATE(&f, ECNP_S_PASS);
	q = mkp(B, ACK, 7000, 1, MSS, CE);
	ecnp_fsm_pickup_init(&f, &q, -1, true);
	EXPECT_STATE(&f, ECNP_S_PASS);
}

/*
 * A tombstone names its connection (ecnp_fsm_conn_id()): a segment of
 * that connection, resuming where it stopped, matches; one of a later
 * connection on the same 4-tuple (new ISNs) does not.
 */
static void test_conn_id(void **state)
{
	struct ecnp_conn_id id;
	struct ecnp_pkt p;
	struct flow fl;
	int k;

	(void)state;
	CTX("a handshake flow, E = B, E's sequence numbers wrap");
	flow_open(&fl, false, ECNP_FB_DUPACK, 0x80001000u, 0xfffff000u);
	flow_sack(&fl);
	for (k = 0; k < 4; k++) {
		n_send(&fl, 0, MSS);
		e_send(&fl, 0, 3 * MSS, NOT_ECT, fl.n_seq);
	}
	n_send(&fl, 0, 0);
	ecnp_fsm_conn_id(&fl.f, &id);
	EXPECT_EQ(id.n_nxt, fl.n_seq);
	EXPECT_EQ(id.e_nxt, fl.e_seq);
	EXPECT_EQ(id.win, 66000);
	EXPECT(id.sack);
	/* the connection wakes up: from either end, a retransmission too */
	EXPECT(ecnp_conn_id_match(&id, (p = n_next(&fl, 0, MSS), &p), false));
	EXPECT(ecnp_conn_id_match(&id, (p = e_next(&fl, 0, MSS, CE), &p), true));
	p = n_next(&fl, 0, MSS);
	p.seq -= 3 * MSS;
	EXPECT(ecnp_conn_id_match(&id, &p, false));
	/* the ends the wrong way round: not it */
	EXPECT(!ecnp_conn_id_match(&id, (p = n_next(&fl, 0, MSS), &p), true));
	/* a later connection on the 4-tuple: new ISNs */
	p = mkp(A, ACK, 0x40000001u, 0x90000001u, MSS, NOT_ECT);
	EXPECT(!ecnp_conn_id_match(&id, &p, false));
	/* near one end only is not enough */
	p = n_next(&fl, 0, MSS);
	p.ack += 0x10000000u;
	EXPECT(!ecnp_conn_id_match(&id, &p, false));
	p = n_next(&fl, 0, MSS);
	p.seq = id.n_nxt + id.win + 1;
	EXPECT(!ecnp_conn_id_match(&id, &p, false));
	p.seq = id.n_nxt - id.win;
	EXPECT(ecnp_conn_id_match(&id, &p, false));

	CTX("a picked-up flow: E's end from N's ACKs");
	p = mkp(A, ACK, 7000, 3000, MSS, NOT_ECT);
	ecnp_fsm_pickup(&fl.f, &p, B, false, ECNP_FB_DUPACK);
	p = mkp(B, ACK, 3000, 8000, 4 * MSS, NOT_ECT);
	ecnp_fsm_step(&fl.f, &p, ECNP_FB_DUPACK, false);
	p = mkp(A, ACK, 8000, 3000 + 4 * MSS, 0, NOT_ECT);
	ecnp_fsm_step(&fl.f, &p, ECNP_FB_DUPACK, false);
	ecnp_fsm_conn_id(&fl.f, &id);
	EXPECT_EQ(id.n_nxt, 8000);
	EXPECT_EQ(id.e_nxt, 3000 + 4 * MSS);
	EXPECT_EQ(id.win, 66000);
	EXPECT(!id.sack);
	p = mkp(B, ACK, 3000 + 4 * MSS, 8000, MSS, CE);
	EXPECT(ecnp_conn_id_match(&id, &p, true));
}

/* ---- what the plumbing could not do (ecnp_fsm_complete()) -------------- */

/*
 * Without SACK the signal is E's ACK and ECNP_DUPACKS injected copies,
 * counted as shown to N when the step returns.  If the plumbing sent only
 * one of them, N has seen one duplicate: E's next ACK above L must make
 * up for the rest, not be absorbed as one too many.
 */
static void test_complete_dupacks_not_sent(void **state)
{
	struct ecnp_ack_edit e;
	struct ecnp_pkt p;
	struct flow fl;
	u32 r, u;
	int k;

	(void)state;
	CTX("dupack without SACK: one of three duplicates sent");
	flow_open(&fl, false, ECNP_FB_DUPACK, 0x1000, 0x7000);
	for (k = 0; k < 10; k++)
		n_send(&fl, 0, MSS);
	u = fl.n_seq - 8 * MSS;
	r = e_ack(&fl, ECE, u, 0, 0, 500);
	EXPECT_R(r, CLR_ECE | ECNP_ACT_INJECT_DUPACKS | ECNP_EV_CONG_SIGNAL);
	e = edit_of(&fl, r);
	EXPECT_EQ(e.shown, ECNP_DUPACKS);
	EXPECT_EQ(fl.f.dup_shown, ECNP_DUPACKS);
	/* all sent: nothing to learn */
	EXPECT(!ecnp_fsm_complete(&fl.f, &last_e, r, &e, true, ECNP_DUPACKS));
	EXPECT_EQ(fl.f.dup_shown, ECNP_DUPACKS);
	/* one sent */
	EXPECT(ecnp_fsm_complete(&fl.f, &last_e, r, &e, true, 1));
	EXPECT_EQ(fl.f.dup_shown, 1);
	/* E acks two segments above L: one more duplicate is due, shown */
	r = e_ack(&fl, 0, u + 3 * MSS, 0, 0, 600);
	EXPECT_R(r, ECNP_ACT_HOLD_ACK);
	EXPECT_EQ(fl.f.dup_shown, 2);

	CTX("dupack without SACK: a held ACK's copies not sent");
	e = edit_of(&fl, r);
	EXPECT_EQ(e.shown, 1);
	/* the held ACK could not be rewritten: N saw no duplicate */
	EXPECT(ecnp_fsm_complete(&fl.f, &last_e, r, &e, true, 0));
	EXPECT_EQ(fl.f.dup_shown, 1);
	r = e_ack(&fl, 0, u + 6 * MSS, 0, 0, 600);
	EXPECT_R(r, ECNP_ACT_HOLD_ACK | ECNP_ACT_COPIES(3));
	e = edit_of(&fl, r);
	EXPECT_EQ(e.shown, 4);
	EXPECT_EQ(fl.f.dup_shown, 5);
	/* the ACK and one copy went out */
	EXPECT(ecnp_fsm_complete(&fl.f, &last_e, r, &e, true, 2));
	EXPECT_EQ(fl.f.dup_shown, 3);

	CTX("a completion for an earlier simulated loss changes nothing");
	p = last_e;
	e.ack = u - MSS;
	EXPECT(!ecnp_fsm_complete(&fl.f, &p, r, &e, true, 0));
	EXPECT_EQ(fl.f.dup_shown, 3);
}

/* A CWR that could not be set stays pending: E echoes until it sees one. */
static void test_complete_cwr_not_set(void **state)
{
	struct ecnp_pkt p;
	struct flow fl;
	u32 r;

	(void)state;
	CTX("drop mode: the CWR after the drop could not be set");
	flow_open(&fl, false, ECNP_FB_DROP, 0x1000, 0x7000);
	reach(&fl, ECNP_S_DUPACK);
	EXPECT_R(n_send(&fl, 0, MSS), DROP | ECNP_EV_CONG_SIGNAL);
	p = n_next(&fl, 0, MSS);
	r = n_send(&fl, 0, MSS);
	EXPECT_R(r, SET_ECT0 | SET_CWR);
	EXPECT(!(fl.f.flags & ECNP_FL_CWR_PENDING));
	EXPECT(!ecnp_fsm_complete(&fl.f, &p, r, NULL, true, 0));
	EXPECT(!(fl.f.flags & ECNP_FL_CWR_PENDING));
	EXPECT(ecnp_fsm_complete(&fl.f, &p, r, NULL, false, 0));
	EXPECT(fl.f.flags & ECNP_FL_CWR_PENDING);
	/* the next new data carries it */
	EXPECT_R(n_send(&fl, 0, MSS), SET_ECT0 | SET_CWR);
	EXPECT_R(n_send(&fl, 0, MSS), SET_ECT0);

	CTX("a failed edit without SET_CWR leaves nothing pending");
	p = n_next(&fl, 0, MSS);
	r = n_send(&fl, 0, MSS);
	EXPECT(!ecnp_fsm_complete(&fl.f, &p, r, NULL, false, 0));
	EXPECT(!(fl.f.flags & ECNP_FL_CWR_PENDING));
}

/*
 * dupack-rwnd: sack_flight_at() for a flow whose N has had a simulated
 * loss before (ECNP_CF_CA: it is past slow start).
 */
static u32 rwnd_flight(struct flow *fl, int flight, u32 isn)
{
	u32 u = sack_flight_at(fl, ECNP_FB_DUPACK_RWND, flight, isn);

	fl->f.clamp_fl |= ECNP_CF_CA;
	return u;
}

/*
 * dupack-rwnd: a flow (sequence numbers from @isn) whose event at the
 * floor started a clamp; N's next segment, with CWR, sent.
 * Return: E's ACK number at the event.
 */
static u32 clamp_open(struct flow *fl, u32 isn)
{
	u32 u = rwnd_flight(fl, 1, isn);

	EXPECT_R(e_ack(fl, ECE, u, 0, 0, 50000),
		 CLR_ECE | CLAMP | ECNP_EV_CONG_SIGNAL);
	EXPECT_R(n_send(fl, 0, MSS), SET_ECT0 | SET_CWR);
	return u;
}

/*
 * dupack-rwnd, clamped: N sends what the clamp lets it (N's own window
 * larger), one segment per ACK of E's, which acks one segment.
 * Return: the result of E's ACK.
 */
static u32 clamp_tick(struct flow *fl, u32 *ack)
{
	while (!after(fl->n_seq + MSS, *ack + fl->f.clamp_segs * MSS) &&
	       fl->f.clamp_win)
		n_send(fl, 0, MSS);
	*ack += MSS;
	return e_ack(fl, 0, *ack, 0, 0, 50000);
}

/*
 * dupack-rwnd: at the floor (at most one segment in flight beyond E's
 * ACK, with SACK) the event's answer is a window clamp, not a loss: E's
 * ACKs reach N with a window of two segments beyond their ACK number
 * (rounded up to E's units), and from then on the window an ECN sender
 * would have: CWR until E acks all N had sent at the event, then one
 * segment more per round of 15/8 windows acked in which N filled the
 * clamp, reduced by CUBIC's beta at each event; it ends when N does not
 * fill it or it would pass ECNP_CLAMP_MAX_SEGS.  More in flight at the
 * event: the simulated loss.  Without SACK, or in plain dupack mode: no
 * clamp.
 */
static void test_dupack_rwnd_floor_clamp(void **state)
{
	struct flow fl;
	struct ecnp_ack_edit e;
	int flight, k;
	u32 u, r, ack, top;

	(void)state;
	/* one beyond E's ACK: the floor; two or three: beyond it */
	for (flight = 1; flight <= 3; flight++) {
		CTX("dupack-rwnd, %d segments in flight beyond E's ACK",
		    flight);
		u = rwnd_flight(&fl, flight, 0x7ffff000u);
		r = e_ack(&fl, ECE, u, 0, 0, 50000);
		if (flight >= 2) {
			/* beyond the floor: the simulated loss, no clamp */
			EXPECT_R(r, CLR_ECE | ECNP_EV_CONG_SIGNAL);
			EXPECT(fl.f.dflags & ECNP_DF_HOLD);
			EXPECT_EQ(fl.f.clamp_win, 0);
			continue;
		}
		EXPECT_R(r, CLR_ECE | CLAMP | ECNP_EV_CONG_SIGNAL);
		EXPECT(!(fl.f.dflags & ECNP_DF_HOLD));
		EXPECT(fl.f.flags & ECNP_FL_CWR_PENDING);
		EXPECT(fl.f.flags & ECNP_FL_IN_WINDOW);
		/* CWR until E acks all N has sent */
		EXPECT_EQ(fl.f.clamp_segs, 2);
		EXPECT_EQ(fl.f.clamp_fl & ECNP_CF_ROUND, ECNP_CF_CWR);
		EXPECT_EQ(fl.f.clamp_end, u + MSS);
		e = edit_of(&fl, r);
		EXPECT_EQ(e.ack, u);
		EXPECT_EQ(e.win, 2 * MSS);
		EXPECT(!e.sack && !e.set_tsecr && !e.lost);
		/* N's next segment carries CWR and fills the clamp */
		EXPECT_R(n_send(&fl, 0, MSS), SET_ECT0 | SET_CWR);
		EXPECT(fl.f.clamp_fl & ECNP_CF_FILLED);
		/* an ECE within the event's window: no new event */
		r = e_ack(&fl, ECE, u, 0, 0, 50000);
		EXPECT_R(r, CLR_ECE | CLAMP);
		/* CWR over: the window stays, a round of growth begins */
		ack = u + MSS;
		r = e_ack(&fl, 0, ack, 0, 0, 50000);
		EXPECT_R(r, CLAMP);
		EXPECT_EQ(edit_of(&fl, r).win, 2 * MSS);
		EXPECT_EQ(fl.f.clamp_fl & ECNP_CF_ROUND, 0);
		EXPECT_EQ(fl.f.clamp_end, ack + 4 * MSS);	/* 2 * 15 / 8 */
		/* a window already as small is left alone */
		EXPECT_R(e_ack(&fl, 0, ack, 0, 0, 2 * MSS), 0);
		/* N fills it for the round: one segment more */
		for (k = 0; k < 3; k++)
			EXPECT_R(clamp_tick(&fl, &ack), CLAMP);
		EXPECT_EQ(fl.f.clamp_segs, 2);
		r = clamp_tick(&fl, &ack);
		EXPECT_R(r, CLAMP);
		EXPECT_EQ(fl.f.clamp_segs, 3);
		EXPECT_EQ(edit_of(&fl, r).win, 3 * MSS);
		EXPECT_EQ(fl.f.clamp_end, ack + 6 * MSS);	/* 3 * 15 / 8 */
		/* a new event: CUBIC's reduction, 3 * 0.7 -> 2, CWR again */
		n_send(&fl, 0, MSS);
		n_send(&fl, 0, MSS);
		ack += MSS;
		r = e_ack(&fl, ECE, ack, 0, 0, 50000);
		EXPECT_R(r, CLR_ECE | CLAMP | ECNP_EV_CONG_SIGNAL);
		EXPECT(!(fl.f.dflags & ECNP_DF_HOLD));
		EXPECT_EQ(fl.f.clamp_segs, 2);
		EXPECT_EQ(fl.f.clamp_fl & ECNP_CF_ROUND, ECNP_CF_CWR);
		EXPECT_EQ(fl.f.clamp_end, fl.n_seq);
		EXPECT_R(n_send(&fl, 0, MSS), SET_ECT0 | SET_CWR);
		/* ... and growth up to ECNP_CLAMP_MAX_SEGS, then the end */
		top = 0;
		for (k = 0; k < 200 && fl.f.clamp_win; k++) {
			r = clamp_tick(&fl, &ack);
			EXPECT(fl.f.clamp_segs <= ECNP_CLAMP_MAX_SEGS);
			if (fl.f.clamp_win)
				EXPECT_EQ(edit_of(&fl, r).win,
					  fl.f.clamp_segs * MSS);
			if (fl.f.clamp_segs > top)
				top = fl.f.clamp_segs;
		}
		EXPECT_EQ(top, ECNP_CLAMP_MAX_SEGS);
		EXPECT_EQ(fl.f.clamp_win, 0);
		EXPECT_R(r, 0);
		EXPECT_EQ(fl.f.clamp_segs, 0);
		EXPECT_R(e_ack(&fl, 0, fl.n_seq, 0, 0, 50000), 0);
	}

	CTX("dupack-rwnd: before N's first simulated loss, no clamp");
	u = sack_flight(&fl, ECNP_FB_DUPACK_RWND, 1);
	EXPECT(!(fl.f.clamp_fl & ECNP_CF_CA));
	EXPECT_R(e_ack(&fl, ECE, u, 0, 0, 50000),
		 CLR_ECE | ECNP_EV_CONG_SIGNAL);
	EXPECT(fl.f.dflags & ECNP_DF_HOLD);
	EXPECT_EQ(fl.f.clamp_win, 0);
	/* from then on N's ssthresh is set */
	EXPECT(fl.f.clamp_fl & ECNP_CF_CA);

	/*
	 * N's peak flight since the last event: more than the ceiling, the
	 * simulated loss; within it, the clamp starts from its reduction
	 */
	for (k = 10; k >= 4; k -= 6) {
		CTX("dupack-rwnd: one in flight, N's peak %d segments", k);
		u = rwnd_flight(&fl, k - 1, 0x7ffff000u);
		EXPECT_EQ(fl.f.clamp_fl >> ECNP_CF_PEAK_SHIFT, (u32)k);
		/* E acks all but one */
		EXPECT_R(e_ack(&fl, 0, fl.n_seq - 2 * MSS, 0, 0, 50000), 0);
		r = e_ack(&fl, ECE, fl.n_seq - MSS, 0, 0, 50000);
		if (k > ECNP_CLAMP_MAX_SEGS) {
			EXPECT_R(r, CLR_ECE | ECNP_EV_CONG_SIGNAL);
			EXPECT(fl.f.dflags & ECNP_DF_HOLD);
			continue;
		}
		EXPECT_R(r, CLR_ECE | CLAMP | ECNP_EV_CONG_SIGNAL);
		EXPECT_EQ(fl.f.clamp_segs, 2);	/* 4 * 0.7 */
		/* the peak is counted anew from the event */
		EXPECT_EQ(fl.f.clamp_fl >> ECNP_CF_PEAK_SHIFT, 0);
		EXPECT_R(n_send(&fl, 0, MSS), SET_ECT0 | SET_CWR);
		EXPECT_EQ(fl.f.clamp_fl >> ECNP_CF_PEAK_SHIFT, 2);
	}
	CTX("dupack-rwnd: one in flight, N's peak 6 segments");
	u = rwnd_flight(&fl, 5, 0x7ffff000u);
	EXPECT_R(e_ack(&fl, 0, fl.n_seq - 2 * MSS, 0, 0, 50000), 0);
	r = e_ack(&fl, ECE, fl.n_seq - MSS, 0, 0, 50000);
	EXPECT_R(r, CLR_ECE | CLAMP | ECNP_EV_CONG_SIGNAL);
	EXPECT_EQ(fl.f.clamp_segs, 4);	/* 6 * 0.7 */
	EXPECT_EQ(edit_of(&fl, r).win, 4 * MSS);

	CTX("dupack-rwnd: N does not fill the clamp in a round: it ends");
	u = clamp_open(&fl, 0x7ffff000u);
	ack = u + MSS;
	EXPECT_R(e_ack(&fl, 0, ack, 0, 0, 50000), CLAMP);
	for (k = 0; k < 4; k++)
		clamp_tick(&fl, &ack);
	EXPECT_EQ(fl.f.clamp_segs, 3);
	/* N's own window is two: two in flight beyond E's ACK, never 3 */
	for (k = 0; k < 6; k++) {
		EXPECT(fl.f.clamp_win);
		while (fl.n_seq - ack < 2 * MSS)
			n_send(&fl, 0, MSS);
		EXPECT(!(fl.f.clamp_fl & ECNP_CF_FILLED));
		ack += MSS;
		r = e_ack(&fl, 0, ack, 0, 0, 50000);
	}
	EXPECT_R(r, 0);
	EXPECT_EQ(fl.f.clamp_win, 0);

	CTX("dupack-rwnd: an event while clamped at N's larger window");
	u = clamp_open(&fl, 0x7ffff000u);
	/* N sends four beyond the clamp's room: no simulated loss */
	for (k = 0; k < 4; k++)
		EXPECT_R(n_send(&fl, 0, MSS), SET_ECT0);
	r = e_ack(&fl, ECE, fl.n_seq - 3 * MSS, 0, 0, 50000);
	EXPECT_R(r, CLR_ECE | CLAMP | ECNP_EV_CONG_SIGNAL);
	EXPECT(!(fl.f.dflags & ECNP_DF_HOLD));
	EXPECT_EQ(fl.f.clamp_segs, 2);
	EXPECT_EQ(fl.f.clamp_end, fl.n_seq);

	CTX("dupack-rwnd: E's window scale");
	flow_open(&fl, false, ECNP_FB_DUPACK_RWND, 0x7ffff000u, 5);
	fl.f.clamp_fl |= ECNP_CF_CA;
	flow_sack(&fl);
	fl.f.win[B].wflags |= ECNP_WF_SCALED;
	fl.f.win[B].wscale = 7;
	EXPECT_R(n_send(&fl, 0, MSS), SET_ECT0);
	EXPECT_R(n_send(&fl, 0, MSS), SET_ECT0);
	r = e_ack(&fl, ECE, fl.n_seq - MSS, 0, 0, 500);
	EXPECT_R(r, CLR_ECE | CLAMP | ECNP_EV_CONG_SIGNAL);
	/* 2000 bytes in units of 128, rounded up: 16 (2048 bytes) */
	EXPECT_EQ(edit_of(&fl, r).win, 16);

	/*
	 * E acks all N sent, and the clamp's room is less than a full
	 * segment of a 1500-byte path: N may want to send a segment larger
	 * than what it sent so far, which the room would not let out with
	 * nothing in flight (a window probe's wait): the clamp ends, with
	 * ECE or without
	 */
	for (k = 0; k < 2; k++) {
		CTX("dupack-rwnd: E acks all N sent (%s), a small room: the end",
		    k ? "ECE" : "no ECE");
		flow_open(&fl, false, ECNP_FB_DUPACK_RWND, 0x7ffff000u, 5);
		fl.f.clamp_fl |= ECNP_CF_CA;
		flow_sack(&fl);
		EXPECT_R(n_send(&fl, 0, MSS / 2), SET_ECT0);
		EXPECT_R(n_send(&fl, 0, MSS / 2), SET_ECT0);
		u = fl.n_seq - MSS / 2;
		r = e_ack(&fl, ECE, u, 0, 0, 50000);
		EXPECT_R(r, CLR_ECE | CLAMP | ECNP_EV_CONG_SIGNAL);
		EXPECT_EQ(edit_of(&fl, r).win, MSS);	/* < 1460 */
		EXPECT_R(e_ack(&fl, k ? ECE : 0, fl.n_seq, 0, 0, 50000),
			 k ? CLR_ECE : 0);
		EXPECT_EQ(fl.f.clamp_win, 0);
	}
	/* and nothing in flight beyond E's ACK: no clamp, still pending */
	EXPECT_R(n_send(&fl, 0, MSS), SET_ECT0 | SET_CWR);
	EXPECT_R(e_ack(&fl, 0, fl.n_seq, 0, 0, 50000), 0);
	EXPECT_R(e_ack(&fl, ECE, fl.n_seq, 0, 0, 50000), CLR_ECE);
	EXPECT_STATE(&fl.f, ECNP_S_DUPACK);
	EXPECT_EQ(fl.f.clamp_win, 0);

	/*
	 * ... with a room of two full segments (2000 bytes) it stays: at two
	 * segments E's delayed ACK acks all N sent every other ACK
	 */
	CTX("dupack-rwnd: E acks all N sent, a full segment's room: it stays");
	u = clamp_open(&fl, 0x7ffff000u);
	r = e_ack(&fl, ECE, fl.n_seq, 0, 0, 50000);
	EXPECT_R(r, CLR_ECE | CLAMP);
	EXPECT_EQ(edit_of(&fl, r).win, 2 * MSS);
	EXPECT(fl.f.clamp_win);
	/* N sends two into it, E acks them: still clamped, no stall */
	EXPECT_R(n_send(&fl, 0, MSS), SET_ECT0);
	EXPECT_R(n_send(&fl, 0, MSS), SET_ECT0);
	EXPECT_R(e_ack(&fl, 0, fl.n_seq, 0, 0, 50000), CLAMP);

	/*
	 * N's FIN: while E has not acked it the clamp stays; once E has,
	 * N sends nothing more and the clamp ends (E's data would else carry
	 * it to the connection's end)
	 */
	CTX("dupack-rwnd: E acks N's FIN: the end");
	u = clamp_open(&fl, 0x7ffff000u);
	EXPECT_R(e_ack(&fl, 0, fl.n_seq, 0, 0, 50000), CLAMP);
	EXPECT_R(n_send(&fl, FIN, MSS), SET_ECT0);
	EXPECT_R(e_ack(&fl, 0, fl.n_seq - 1, 0, 0, 50000), CLAMP);
	EXPECT(fl.f.clamp_win);
	EXPECT_R(e_ack(&fl, 0, fl.n_seq, 0, 0, 50000), 0);
	EXPECT_EQ(fl.f.clamp_win, 0);
	EXPECT_R(e_send(&fl, 0, MSS, ECT0, fl.n_seq), CLR_ECN);

	CTX("dupack-rwnd: the rounds across the sequence wrap");
	u = clamp_open(&fl, 0xfffff800u);
	ack = u + MSS;
	EXPECT_R(e_ack(&fl, 0, ack, 0, 0, 50000), CLAMP);
	EXPECT_EQ(fl.f.clamp_end, ack + 4 * MSS);
	EXPECT(fl.f.clamp_end < u);	/* wrapped */
	for (k = 0; k < 3; k++)
		EXPECT_R(clamp_tick(&fl, &ack), CLAMP);
	EXPECT_EQ(fl.f.clamp_segs, 2);
	EXPECT_R(clamp_tick(&fl, &ack), CLAMP);
	EXPECT_EQ(fl.f.clamp_segs, 3);

	CTX("dupack-rwnd: a mode switch ends the clamp");
	u = clamp_open(&fl, 0x7ffff000u);
	fl.mode = ECNP_FB_DUPACK;
	EXPECT_R(e_ack(&fl, 0, u + MSS, 0, 0, 50000), 0);
	EXPECT_EQ(fl.f.clamp_win, 0);

	/*
	 * E's window scale unknown (a flow picked up mid-stream: liberal
	 * windows), or one that makes the clamp three segments or more
	 * (14: units of 16 KiB): the simulated loss
	 */
	for (k = 0; k < 2; k++) {
		CTX("dupack-rwnd: %s: the simulated loss",
		    k ? "window scale 14" : "liberal windows");
		u = rwnd_flight(&fl, 1, 0x7ffff000u);
		if (k) {
			fl.f.win[B].wflags |= ECNP_WF_SCALED;
			fl.f.win[B].wscale = 14;
		} else {
			fl.f.win[B].wflags |= ECNP_WF_LIBERAL;
		}
		EXPECT_R(e_ack(&fl, ECE, u, 0, 0, 50000),
			 CLR_ECE | ECNP_EV_CONG_SIGNAL);
		EXPECT(fl.f.dflags & ECNP_DF_HOLD);
		EXPECT_EQ(fl.f.clamp_win, 0);
	}

	/*
	 * the step that withdraws a dupack signal (mode switched to
	 * dupack-rwnd during its hold) starts no clamp
	 */
	CTX("dupack-rwnd: no clamp on the step that withdraws a signal");
	u = sack_flight(&fl, ECNP_FB_DUPACK, 1);
	EXPECT_R(e_ack(&fl, ECE, u, 0, 0, 500), CLR_ECE | ECNP_EV_CONG_SIGNAL);
	EXPECT(fl.f.dflags & ECNP_DF_HOLD);
	fl.mode = ECNP_FB_DUPACK_RWND;
	r = e_ack(&fl, ECE, fl.n_seq, 0, 0, 500);
	EXPECT_R(r, CLR_ECE | ECNP_EV_SIGNAL_WITHDRAWN);
	EXPECT_EQ(fl.f.clamp_win, 0);
	EXPECT_STATE(&fl.f, ECNP_S_DUPACK);

	CTX("no clamp without SACK, nor in dupack mode");
	flow_open(&fl, false, ECNP_FB_DUPACK_RWND, 0x7ffff000u, 5);
	fl.f.clamp_fl |= ECNP_CF_CA;
	EXPECT_R(n_send(&fl, 0, MSS), SET_ECT0);
	EXPECT_R(n_send(&fl, 0, MSS), SET_ECT0);
	EXPECT_R(e_ack(&fl, ECE, fl.n_seq - MSS, 0, 0, 50000), CLR_ECE);
	EXPECT_EQ(fl.f.clamp_win, 0);
	EXPECT_STATE(&fl.f, ECNP_S_DUPACK);
	flow_open(&fl, false, ECNP_FB_DUPACK, 0x7ffff000u, 5);
	flow_sack(&fl);
	EXPECT_R(n_send(&fl, 0, MSS), SET_ECT0);
	EXPECT_R(n_send(&fl, 0, MSS), SET_ECT0);
	EXPECT_R(e_ack(&fl, ECE, fl.n_seq - MSS, 0, 0, 50000),
		 CLR_ECE | ECNP_EV_CONG_SIGNAL);
	EXPECT(fl.f.dflags & ECNP_DF_HOLD);
	EXPECT_EQ(fl.f.clamp_win, 0);
}

/*
 * dupack-rwnd at the floor, simulated: N (SACK) sends with a window of
 * @wmax segments (Linux's floor: 2), and never beyond the window E's
 * ACKs show it as they leave the proxy; a router marks N's ECT segments;
 * E receives them in order, acks each at once and echoes CE as RFC 3168
 * says (ECE until CWR).  At the floor every event finds one segment in
 * flight beyond E's ACK, so every signal is a clamp.  Checked: every byte reaches E once and in
 * order (no loss is shown, nothing is dropped), N is never without room
 * to send once E has acked all it sent (never a stall), while clamped
 * the window N sees ends the emulated sender's window past E's ACK and
 * N's flight stays within it, that window grows past two in rounds
 * without marks, E's echo ends (CWR after each event), and the clamps
 * end.
 */
static void rwnd_sim(bool e_is_a, u32 wmax, u32 seed)
{
	u32 q[8], qecn[8], qh = 0, qt = 0, r, una, wnd_end, rcv_nxt;
	u32 events = 0, clamped = 0, marks = 0, grown = 0;
	bool demand = false, cwr_seen;
	struct ecnp_pkt p, seen;
	struct flow fl;
	int i;

	flow_open(&fl, e_is_a, ECNP_FB_DUPACK_RWND, 0xfffff000u + seed * 97,
		  seed * 7919);
	flow_sack(&fl);
	/* N has had a simulated loss before: past slow start */
	fl.f.clamp_fl |= ECNP_CF_CA;
	una = rcv_nxt = fl.n_seq;
	wnd_end = una + 0xffff;
	for (i = 0; i < 6000; i++) {
		/* N sends what its window and E's allow */
		if (i < 5800 && fl.n_seq - una < wmax * MSS &&
		    !after(fl.n_seq + MSS, wnd_end)) {
			p = mkp(n_dir(&fl), ACK, fl.n_seq, fl.e_seq, MSS,
				NOT_ECT);
			fl.n_seq += MSS;
			r = step(&fl, p);
			EXPECT_EQ(r & ~(u32)(SET_ECT0 | SET_CWR), 0);
			seen = apply(p, r);
			EXPECT_EQ(seen.ecn, ECT0);
			if (rnd(&seed) % 100 < 30) {
				seen.ecn = CE;
				marks++;
			}
			q[qt % 8] = p.seq;
			qecn[qt % 8] = seen.ecn | (seen.flags & CWR ? 0x100 : 0);
			qt++;
		}
		/* never a stall: with all acked, N can send */
		if (qh == qt && i < 5800)
			EXPECT(fl.n_seq - una < wmax * MSS &&
			       !after(fl.n_seq + MSS, wnd_end));
		if (qh == qt || rnd(&seed) % 2)
			continue;
		/* E gets the oldest: in order, once */
		EXPECT_EQ(q[qh % 8], rcv_nxt);
		cwr_seen = qecn[qh % 8] & 0x100;
		if (cwr_seen)
			demand = false;
		if ((qecn[qh % 8] & 0xff) == CE)
			demand = true;
		qh++;
		rcv_nxt += MSS;
		r = e_ack(&fl, demand ? ECE : 0, rcv_nxt, 0, 0, 0xffff);
		EXPECT(!(r & (DROP | ECNP_ACT_HOLD_ACK |
			      ECNP_ACT_INJECT_DUPACKS | ECNP_EV_OUT_OF_WINDOW)));
		EXPECT(!(fl.f.dflags & ECNP_DF_HOLD));
		if (r & ECNP_EV_CONG_SIGNAL) {
			events++;
			EXPECT(r & CLAMP);
		}
		una = rcv_nxt;
		wnd_end = una + 0xffff;
		if (r & CLAMP) {
			clamped++;
			wnd_end = una + edit_of(&fl, r).win;
			EXPECT_EQ(wnd_end, una + fl.f.clamp_segs * MSS);
			if (fl.f.clamp_segs > ECNP_FLOOR_SEGS)
				grown++;
		}
		/* while clamped, N's flight is within the clamp */
		if (fl.f.clamp_win)
			EXPECT(!after(fl.n_seq,
				      una + (fl.f.clamp_segs + 1) * MSS));
	}
	/* drain: E acks everything, the clamp and the echo end */
	while (qh != qt) {
		if ((qecn[qh % 8] & 0xff) == CE)
			demand = true;
		if (qecn[qh % 8] & 0x100)
			demand = false;
		qh++;
		rcv_nxt += MSS;
		e_ack(&fl, demand ? ECE : 0, rcv_nxt, 0, 0, 0xffff);
	}
	EXPECT_EQ(rcv_nxt, fl.n_seq);
	EXPECT(marks > 100 && events > 20 && clamped >= events);
	/* rounds without marks grow the emulated window past N's two */
	EXPECT(grown > 0);
	printf("dupack-rwnd simulation E=%c wmax %u: %u marks, %u events, %u ACKs clamped (%u above %u segments)\n",
	       e_is_a ? 'A' : 'B', wmax, marks, events, clamped, grown,
	       ECNP_FLOOR_SEGS);
}

static void test_dupack_rwnd_simulation(void **state)
{
	u32 seed;
	int e_is_a;

	(void)state;
	for (e_is_a = 0; e_is_a < 2; e_is_a++)
		for (seed = 1; seed < 6; seed++) {
			CTX("dupack-rwnd simulation E=%c seed %u",
			    e_is_a ? 'A' : 'B', seed);
			rwnd_sim(e_is_a, 2, seed);
		}
}

/* ======================= small things =================================== */

static void test_struct_layout(void **state)
{
	(void)state;
	CTX("struct sizes");
	EXPECT_EQ(sizeof(struct ecnp_win), 12);
	EXPECT_EQ(sizeof(struct ecnp_fsm), 96);
	EXPECT_EQ(sizeof(struct ecnp_pkt), 36);
	/* all zero is INIT */
	EXPECT_EQ(ECNP_S_INIT, 0);
	/* flag values match include/net/tcp.h TCPHDR_* */
	EXPECT_EQ(ECNP_TCP_FIN, 0x01);
	EXPECT_EQ(ECNP_TCP_SYN, 0x02);
	EXPECT_EQ(ECNP_TCP_RST, 0x04);
	EXPECT_EQ(ECNP_TCP_ACK, 0x10);
	EXPECT_EQ(ECNP_TCP_ECE, 0x40);
	EXPECT_EQ(ECNP_TCP_CWR, 0x80);
	/* actions and events do not overlap */
	EXPECT_EQ(ECNP_ACT_MASK & ECNP_EV_MASK, 0);
	EXPECT_EQ((SET_ECE | CLR_ECE | SET_CWR | CLR_CWR | SET_ECT0 |
		   CLR_ECN | DROP) & ~ECNP_ACT_MASK, 0);
	EXPECT_EQ((ECNP_EV_OUT_MASK | ECNP_EV_CONG_SIGNAL |
		   ECNP_EV_SYN_FALLBACK | ECNP_EV_CLOSED) & ~ECNP_EV_MASK, 0);
}

static void test_state_names(void **state)
{
	unsigned int s, t;

	(void)state;
	CTX("state names");
	for (s = 0; s < ECNP_S_NR; s++) {
		EXPECT(ecnp_state_name(s));
		EXPECT(strcmp(ecnp_state_name(s), "?") != 0);
		for (t = 0; t < s; t++)
			EXPECT(strcmp(ecnp_state_name(s),
				      ecnp_state_name(t)) != 0);
	}
	EXPECT(!strcmp(ecnp_state_name(ECNP_S_NR), "?"));
	EXPECT(!strcmp(ecnp_state_name(ECNP_S_ECE_DUPACK), "ECE_DUPACK"));
}

/*
 * Runs last: the steps of all tests before it went through checked_step();
 * the quick step must have taken a fair share of them (the simulations'
 * steady state), or its comparison with the full step says little.
 */
static void test_quick_step_coverage(void **state)
{
	(void)state;
	print_message("quick step: %lu of %lu steps\n", steps_quick,
		      steps_all);
	assert_true(steps_all > 100000);
	assert_true(steps_quick > steps_all / 4);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_p1_row1_init_ecn_syn_to_a_c),
		cmocka_unit_test(test_p1_row2_init_plain_syn_upgraded_to_a_nc),
		cmocka_unit_test(test_p1_row3_a_c_ecn_synack_same_both),
		cmocka_unit_test(test_p1_row4_a_c_plain_synack_upgraded_wait_ack),
		cmocka_unit_test(test_p1_row5_a_nc_ecn_synack_downgraded_wait_ack),
		cmocka_unit_test(test_p1_row6_a_nc_plain_synack_same_neither),
		cmocka_unit_test(test_p1_row7_wait_ack_handshake_ack_to_phase2),
		cmocka_unit_test(test_p1_row7_handshake_ack_with_data),
		cmocka_unit_test(test_p1_row8_same_anything_untouched),
		cmocka_unit_test(test_p2_row01_default_from_n),
		cmocka_unit_test(test_p2_row02_default_e_ce_to_ece),
		cmocka_unit_test(test_p2_row03_default_e_ce_ece_to_ece_dupack),
		cmocka_unit_test(test_p2_row04_default_e_ece_to_dupack),
		cmocka_unit_test(test_p2_row05_dupack_from_n),
		cmocka_unit_test(test_p2_row06_dupack_from_e_pending),
		cmocka_unit_test(test_p2_row07_dupack_signal_done_to_default),
		cmocka_unit_test(test_p2_row07_dupack_signal_done_ce_to_ece),
		cmocka_unit_test(test_p2_row08_ece_dupack_from_n_sets_ece),
		cmocka_unit_test(test_p2_row09_ece_dupack_from_e_pending),
		cmocka_unit_test(test_p2_row10_ece_dupack_signal_done_to_ece),
		cmocka_unit_test(test_p2_row10_ece_dupack_cwr_signal_done_to_default),
		cmocka_unit_test(test_p2_row11_ece_from_n_sets_ece),
		cmocka_unit_test(test_p2_row12_ece_e_cwr_to_default),
		cmocka_unit_test(test_p2_row13_ece_e_cwr_ece_to_dupack),
		cmocka_unit_test(test_p2_row14_ece_e_ece_to_ece_dupack),
		cmocka_unit_test(test_symmetric_case_e_is_initiator),
		cmocka_unit_test(test_syn_retx_fallback),
		cmocka_unit_test(test_syn_retx_fallback_then_ecn_synack),
		cmocka_unit_test(test_syn_retx_after_synack_reapplies_upgrade),
		cmocka_unit_test(test_a_c_own_syn_fallback),
		cmocka_unit_test(test_verify_a_uses_ecn),
		cmocka_unit_test(test_verify_a_is_n),
		cmocka_unit_test(test_verify_undecided),
		cmocka_unit_test(test_rst_to_upgraded_syn_fallback),
		cmocka_unit_test(test_dst_no_upgrade_plain_syn),
		cmocka_unit_test(test_dst_no_upgrade_symmetric_latched),
		cmocka_unit_test(test_accecn_passthrough),
		cmocka_unit_test(test_signed_syn_passthrough),
		cmocka_unit_test(test_first_packet_not_syn_passthrough),
		cmocka_unit_test(test_simultaneous_open),
		cmocka_unit_test(test_rst_in_each_state),
		cmocka_unit_test(test_rst_from_e_stripped),
		cmocka_unit_test(test_closed_new_syn_restarts),
		cmocka_unit_test(test_fin_closes_once_and_processing_continues),
		cmocka_unit_test(test_port_reuse_after_fins),
		cmocka_unit_test(test_new_isn_syn_midflow_ignored),
		cmocka_unit_test(test_synack_retx_idempotent),
		cmocka_unit_test(test_synack_new_isn_ack_picks_it),
		cmocka_unit_test(test_ect_never_on_syn_pure_ack_rst_retx),
		cmocka_unit_test(test_e_to_n_always_plain),
		cmocka_unit_test(test_n_to_e_own_ece_cwr_cleared),
		cmocka_unit_test(test_ece_echo_until_cwr),
		cmocka_unit_test(test_once_per_window),
		cmocka_unit_test(test_once_per_window_wraparound),
		cmocka_unit_test(test_stale_ece_while_cwr_pending),
		cmocka_unit_test(test_cwr_set_once_after_response),
		cmocka_unit_test(test_none_mode_never_ect),
		cmocka_unit_test(test_mode_switch_while_pending),
		cmocka_unit_test(test_dupack_handshake_sack),
		cmocka_unit_test(test_dupack_sack_ts),
		cmocka_unit_test(test_dupack_no_sack_no_ts),
		cmocka_unit_test(test_dupack_waits_for_flight),
		cmocka_unit_test(test_dupack_sack_small_window),
		cmocka_unit_test(test_dupack_fast_release),
		cmocka_unit_test(test_dupack_rwnd_floor_clamp),
		cmocka_unit_test(test_dupack_rwnd_simulation),
		cmocka_unit_test(test_dupack_late_rexmit),
		cmocka_unit_test(test_dupack_no_sack_hole_at_e),
		cmocka_unit_test(test_dupack_not_on_a_hole),
		cmocka_unit_test(test_dupack_sack_beyond_hold_end),
		cmocka_unit_test(test_dupack_rexmit_above_l),
		cmocka_unit_test(test_dupack_hole_above_claimed),
		cmocka_unit_test(test_dupack_hold_until_rexmit),
		cmocka_unit_test(test_dupack_real_hole_aborts),
		cmocka_unit_test(test_dupack_no_sack_absorbs),
		cmocka_unit_test(test_dupack_not_on_an_old_ack),
		cmocka_unit_test(test_dupack_gso_rexmit_and_old_acks),
		cmocka_unit_test(test_dupack_gap_at_proxy),
		cmocka_unit_test(test_dupack_no_sack_abort_absorbs),
		cmocka_unit_test(test_dupack_release_keeps_tsecr),
		cmocka_unit_test(test_dupack_window_from_signal),
		cmocka_unit_test(test_dupack_simulation),
		cmocka_unit_test(test_dupack_reno_dupthresh),
		cmocka_unit_test(test_gso_no_drop),
		cmocka_unit_test(test_drop_mode_exactly_one_drop_per_event),
		cmocka_unit_test(test_none_mode_simulation),
		cmocka_unit_test(test_ect_on_data_overtaken_by_pure_ack),
		cmocka_unit_test(test_ect_on_gap_fill),
		cmocka_unit_test(test_pickup_known_roles),
		cmocka_unit_test(test_pickup_from_ce),
		cmocka_unit_test(test_pickup_other_end_first),
		cmocka_unit_test(test_conn_id),
		cmocka_unit_test(test_fuzz_invariants),
		cmocka_unit_test(test_window_each_flag),
		cmocka_unit_test(test_window_rst),
		cmocka_unit_test(test_window_syn_restart),
		cmocka_unit_test(test_window_handshake),
		cmocka_unit_test(test_window_tolerance),
		cmocka_unit_test(test_window_scaling),
		cmocka_unit_test(test_complete_dupacks_not_sent),
		cmocka_unit_test(test_complete_cwr_not_set),
		cmocka_unit_test(test_struct_layout),
		cmocka_unit_test(test_untrack_decided_flow),
		cmocka_unit_test(test_fast_exit_rules),
		cmocka_unit_test(test_ct_bypass_rules),
		cmocka_unit_test(test_state_names),
		cmocka_unit_test(test_quick_step_coverage),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
