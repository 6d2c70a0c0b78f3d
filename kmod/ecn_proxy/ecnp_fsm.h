/* SPDX-License-Identifier: GPL-2.0 */
/*
 * ECN proxy: the pure, skb-free per-flow state machine.
 *
 * The netfilter plumbing parses a TCP segment into a struct ecnp_pkt, calls
 * ecnp_fsm_step() under the flow's lock and applies the header edits named by
 * the ECNP_ACT_* bits of the result; the ECNP_EV_* bits are for counters and
 * for the flow table.  The algorithm is described at the top of ecnp_fsm.c
 * and in FSM.md.  This header and ecnp_fsm.c build both into the kernel
 * module and into the userspace unit test (kmod/tests/unit/test_ecnp_fsm.c).
 */
#ifndef _ECNP_FSM_H
#define _ECNP_FSM_H

#include "../core/tcpfwd_pure.h"

/* Direction of a segment: from the host that sent the first SYN, or not. */
enum ecnp_dir {
	ECNP_DIR_A = 0,		/* from the initiator A */
	ECNP_DIR_B = 1,		/* from the responder B */
};

/*
 * TCP flags of struct ecnp_pkt: the same values as TCPHDR_* in
 * include/net/tcp.h (so tcp_flag_byte() can be used as is), plus the AccECN
 * AE bit (RFC 9768, formerly NS) as bit 8, i.e. (doff/res byte & 1) << 8.
 */
#define ECNP_TCP_FIN	0x001
#define ECNP_TCP_SYN	0x002
#define ECNP_TCP_RST	0x004
#define ECNP_TCP_PSH	0x008
#define ECNP_TCP_ACK	0x010
#define ECNP_TCP_URG	0x020
#define ECNP_TCP_ECE	0x040
#define ECNP_TCP_CWR	0x080
#define ECNP_TCP_AE	0x100

/* IP ECN codepoints: the same values as INET_ECN_* in net/inet_ecn.h. */
#define ECNP_ECN_NOT_ECT	0
#define ECNP_ECN_ECT_1		1
#define ECNP_ECN_ECT_0		2
#define ECNP_ECN_CE		3

/* struct ecnp_pkt.opt: TCP options seen on the segment */
#define ECNP_OPT_TS		0x01	/* timestamps: tsval, tsecr valid */
#define ECNP_OPT_SACK_PERM	0x02	/* SACK-permitted (SYN, SYN-ACK) */
#define ECNP_OPT_SACK		0x04	/* a SACK block above the ACK number */
#define ECNP_OPT_WSCALE		0x08	/* window scale (SYN, SYN-ACK): wscale */
#define ECNP_OPT_SIGNED		0x10	/* TCP-MD5 (kind 19) or TCP-AO (kind
					 * 29) on a SYN or SYN-ACK
					 */
#define ECNP_OPT_DSACK		0x20	/* a SACK block below the ACK number
					 * (a D-SACK, RFC 2883)
					 */

/* struct ecnp_pkt.pflags: what the plumbing can do with this packet */
#define ECNP_PF_NO_DROP		0x01	/* a GSO packet that cannot be
					 * segmented (bridged, or the
					 * segmentation failed): it must not
					 * be dropped whole
					 */
#define ECNP_PF_STASHED		0x02	/* dupack-fast: the plumbing holds a
					 * copy of E's newest ACK (f->e_ack):
					 * see ECNP_ACT_STASH
					 */

/* What the plumbing observed on one segment (or one GSO/GRO packet). */
struct ecnp_pkt {
	u32 seq;	/* TCP sequence number */
	u32 ack;	/* TCP acknowledgment number (valid if ECNP_TCP_ACK) */
	u32 len;	/* TCP payload length in bytes (SYN/FIN not counted) */
	u16 flags;	/* ECNP_TCP_* */
	u8 dir;		/* enum ecnp_dir */
	u8 ecn;		/* IP ECN field, ECNP_ECN_* */
	u32 tsval;	/* timestamp option (if opt & ECNP_OPT_TS) */
	u32 tsecr;
	u16 win;	/* TCP window field, unscaled */
	u16 seg_len;	/* payload per segment: gso_size of a GSO packet */
	u8 opt;		/* ECNP_OPT_* */
	u8 wscale;	/* window scale option (if ECNP_OPT_WSCALE) */
	u8 pflags;	/* ECNP_PF_* */
	u32 sack_high;	/* highest right edge of those SACK blocks (if
			 * ECNP_OPT_SACK)
			 */
};

/* How congestion that E reports for N's data is signalled to N. */
enum ecnp_feedback {
	ECNP_FB_NONE = 0,	/* never ECT on N->E: routers drop, no signal */
	ECNP_FB_DROP = 1,	/* drop one N->E new-data segment per event */
	ECNP_FB_DUPACK = 2,	/* simulated loss: injected duplicate ACKs */
	ECNP_FB_DUPACK_RWND = 3, /* dupack, but at Linux's floor of two
				  * segments a window clamp instead of a
				  * loss (ecnp_floor_ready())
				  */
	ECNP_FB_DUPACK_FAST = 4, /* dupack, but N's retransmission of L is
				  * answered at once with E's newest ACK,
				  * kept from the hold
				  * (ecnp_rexmit_release())
				  */
};

/* The dupack modes: a simulated loss (with a window clamp at the floor). */
static inline bool ecnp_fb_dupack(enum ecnp_feedback mode)
{
	return mode == ECNP_FB_DUPACK || mode == ECNP_FB_DUPACK_RWND ||
	       mode == ECNP_FB_DUPACK_FAST;
}

/*
 * States.  Phase 1 (negotiation) is named after the reference table, phase 2
 * (operation, only for proxied flows) too.  DEFAULT..ECE_DUPACK are the
 * product of two bits: "ECE echo pending toward E" (ECE) and "congestion
 * signal toward N pending" (DUPACK).
 */
enum ecnp_state {
	ECNP_S_INIT = 0,	/* nothing seen yet */
	ECNP_S_A_C,		/* ECN-setup SYN from A seen */
	ECNP_S_A_NC,		/* plain SYN from A seen (upgraded unless NOUPG) */
	ECNP_S_SIMOPEN,		/* SYN from B too: simultaneous open */
	ECNP_S_WAIT_ACK,	/* roles decided, proxied; waiting for the ACK */
	ECNP_S_SAME,		/* both or neither ECN: forward untouched */
	ECNP_S_PASS,		/* not ours (AccECN, no SYN): forward untouched */
	ECNP_S_CLOSED,		/* RST seen: forward untouched, a new SYN restarts */
	ECNP_S_PICKUP,		/* picked up mid-stream on CE from A: is B ECN? */
	ECNP_S_VERIFY,		/* B took ECN after A's plain SYN retransmission:
				 * does A use it?
				 */
	ECNP_S_DEFAULT,		/* phase 2: nothing pending */
	ECNP_S_ECE,		/* phase 2: echo ECE toward E until E sends CWR */
	ECNP_S_DUPACK,		/* phase 2: congestion signal toward N pending */
	ECNP_S_ECE_DUPACK,	/* phase 2: both of the above */
	ECNP_S_NR,
};

/* f->flags */
#define ECNP_FL_E_IS_A		0x01	/* the ECN endpoint E is A (else B) */
#define ECNP_FL_NOUPG		0x02	/* never upgrade (dst_no_upgrade/fallback) */
#define ECNP_FL_FELLBACK	0x04	/* our upgraded SYN was retransmitted */
#define ECNP_FL_CWR_PENDING	0x08	/* set CWR on the next N->E new data */
#define ECNP_FL_IN_WINDOW	0x10	/* E's ACKs have not yet passed recover */
#define ECNP_FL_FIN_A		0x20	/* FIN seen from A */
#define ECNP_FL_FIN_B		0x40	/* FIN seen from B */
#define ECNP_FL_PICKED_UP	0x80	/* proxied from mid-stream, not from its
					 * handshake (ecnp_fsm_pickup())
					 */

/* f->hflags (handshake) */
#define ECNP_HF_SYN_UP		0x01	/* A's SYN upgraded, no fallback (yet) */
#define ECNP_HF_SA_UP		0x02	/* upgrade B's SYN-ACKs (E is A) */
#define ECNP_HF_SA_DOWN		0x04	/* downgrade B's SYN-ACKs (E is B) */
#define ECNP_HF_A_SA		0x08	/* simultaneous open: SYN-ACK from A seen */
#define ECNP_HF_A_SA_ECN	0x10	/* ... and it was ECN-setup */
#define ECNP_HF_B_SA		0x20	/* simultaneous open: SYN-ACK from B seen */
#define ECNP_HF_B_SA_ECN	0x40	/* ... and it was ECN-setup */
#define ECNP_HF_A_PLAIN_RTX	0x80	/* A's ECN-setup SYN was retransmitted
					 * without ECE and CWR (RFC 3168
					 * 6.1.1.1, tcp_ecn_clear_syn())
					 */

/* f->dflags (dupack feedback and the options it depends on) */
#define ECNP_DF_HOLD		0x01	/* simulated loss in progress */
#define ECNP_DF_REXMIT		0x02	/* N's retransmission suppressed */
#define ECNP_DF_TS		0x04	/* rexmit_tsval is valid */
#define ECNP_DF_SACK_A		0x08	/* A's SYN offered SACK */
#define ECNP_DF_SACK_B		0x10	/* B's SYN-ACK accepted SACK */
#define ECNP_DF_LATE		0x20	/* the hold ended before N's
					 * retransmission of L: a copy of L
					 * that still comes is dropped
					 */
#define ECNP_DF_GAP		0x40	/* N's data in [n_gap, n_gap_end)
					 * may not have passed the proxy yet
					 * (seen out of order): both valid
					 */
#define ECNP_DF_ABORTED		0x80	/* the hold was given up while E's
					 * ACK was at L (saved_ack)
					 */

/* Duplicate ACKs injected per simulated loss (Linux: tp->reordering = 3). */
#define ECNP_DUPACKS		3
/*
 * Segments N must have in flight beyond E's ACK for a simulated loss:
 * without SACK, L and ECNP_DUPACKS segments the duplicates stand for (a
 * Reno sender believes no more duplicates than segments in flight); with
 * SACK, L and one segment the held ACKs SACK, or L alone when it is all
 * N has sent beyond the ACK (ecnp_dupack_flight()).
 */
#define ECNP_DUPACK_MIN_FLIGHT	(ECNP_DUPACKS + 1)
#define ECNP_DUPACK_MIN_FLIGHT_SACK	2
/*
 * dupack-rwnd: the segments in flight beyond E's ACK the window clamp
 * lets N have when it starts (ecnp_start_clamp()), and its least
 */
#define ECNP_FLOOR_SEGS		2
/*
 * dupack-rwnd: the clamp follows the window an ECN sender would have,
 * up to this many segments; a clamp that would grow beyond it ends
 * (ecnp_clamp_step())
 */
#define ECNP_CLAMP_MAX_SEGS	8
/*
 * dupack-rwnd: a clamp whose room is at least this many bytes lets any
 * segment of a path with a 1500-byte MTU out with nothing in flight (the
 * largest MSS there), so it stays when E acks all N has sent
 */
#define ECNP_CLAMP_MIN_ROOM	1460

/* f->clamp_fl (dupack-rwnd) */
#define ECNP_CF_CWR		0x01	/* the emulated sender is in CWR:
					 * no growth until E acks clamp_end
					 */
#define ECNP_CF_FILLED		0x02	/* N used all of the clamp's room
					 * in the current round
					 */
#define ECNP_CF_ROUND		(ECNP_CF_CWR | ECNP_CF_FILLED)
#define ECNP_CF_CA		0x04	/* N has had a simulated loss: its
					 * ssthresh is set, so it grows in
					 * congestion avoidance, only when
					 * it fills its window
					 */
/*
 * The high nibble of clamp_fl: the most segments N had in flight beyond
 * E's ACK since the last congestion event (saturating), in dupack-rwnd
 */
#define ECNP_CF_PEAK_SHIFT	4
#define ECNP_CF_PEAK_MAX	15
#define ECNP_CF_PEAK		(ECNP_CF_PEAK_MAX << ECNP_CF_PEAK_SHIFT)
/*
 * E's ACKs reporting a hole (SACK above the ACK) inside the range the
 * duplicates claimed, before the simulated loss is abandoned: a real loss
 * there keeps producing them, reordering (two CPUs forwarding one flow)
 * stops after a packet or two.
 */
#define ECNP_HOLE_ACKS		4

/*
 * The window model of one direction (one side as sender), after
 * nf_conntrack_proto_tcp.c's struct ip_ct_tcp_state: what lets the state
 * machine tell a segment of the connection from a blind guess by someone
 * who knows only the 4-tuple (ecnp_fsm_step(), FSM.md "Window checks").
 */
struct ecnp_win {
	u32 end;	/* highest seq + len (+ SYN, FIN) this side sent
			 * (conntrack's td_end)
			 */
	u32 maxend;	/* highest ack + window the other side offered it:
			 * how far it may send (td_maxend)
			 */
	u16 maxwin;	/* largest window this side offered, in units of
			 * 1 << wscale once ECNP_WF_SCALED, else bytes
			 * (td_maxwin)
			 */
	u8 wscale;	/* window scale this side announced (at most 14) */
	u8 wflags;	/* ECNP_WF_* */
};

/* struct ecnp_win.wflags */
#define ECNP_WF_SEEN		0x01	/* this side's SYN or SYN-ACK seen */
#define ECNP_WF_WSCALE		0x02	/* ... with a window scale option */
#define ECNP_WF_SCALED		0x04	/* both offered it: scaling is on */
#define ECNP_WF_LIBERAL		0x08	/* window unknown (a flow picked up
					 * without its handshake): every
					 * segment counts as in the window
					 */

/*
 * Per-flow state: 14 * u32 + 2 * struct ecnp_win (12 bytes each) + 3 * u16
 * + 10 * u8 = 96 bytes, no padding (asserted below; clamp_segs and
 * clamp_fl took the last 2 bytes).  With
 * the plumbing's struct ecnp_flow around it (tcpfwd's 80-byte flow header,
 * four bools, 28 bytes of counters and dupack-fast's pointer to a kept
 * ACK) that is 216 bytes on x86-64 (208 before that pointer, 200 before
 * clamp_end and clamp_win), from the module's own slab cache
 * (flow_struct_bytes, flow_alloc_bytes in /proc/net/ecn_proxy/stats;
 * without lock debugging, which grows the spinlock in the flow header);
 * with the rhashtable's bucket array (11 to 27 bytes per flow at its load
 * factors of 0.3-0.75) a flow costs at most 243 bytes.  All-zero is
 * ECNP_S_INIT.
 */
struct ecnp_fsm {
	u32 a_isn;	/* sequence number of A's SYN */
	u32 b_isn;	/* sequence number of B's latest SYN-ACK (or SYN) */
	u32 n_nxt;	/* phase 2: highest end of N's data or FIN seen */
	u32 recover;	/* phase 2: n_nxt when the last congestion event fired */
	u32 saved_ack;	/* phase 2: E's ACK number at the last event; in
			 * dupack mode the start of the segment N is made to
			 * believe lost, and the ACK number N sees meanwhile
			 */
	u32 hold_end;	/* dupack: E's ACKs are held below this sequence */
	u32 rexmit_tsval; /* dupack: TSval of N's suppressed retransmission */
	u32 hold_ack;	/* dupack: E's latest real ACK number while held;
			 * with ECNP_DF_LATE, the start of the last L
			 */
	u32 e_ack;	/* phase 2: highest ACK number E sent (up to n_nxt) */
	u32 e_hole_end;	/* dupack: n_nxt when E last repeated its ACK */
	u32 n_ack;	/* phase 2: highest ACK number N sent */
	u32 n_gap;	/* phase 2, with ECNP_DF_GAP: N's data from here
			 * to n_gap_end may not have passed the proxy (its
			 * segments seen out of order); none below it
			 */
	u32 n_gap_end;	/* ... the start of N's latest segment seen beyond
			 * what it had sent before
			 */
	u32 clamp_end;	/* dupack-rwnd, with clamp_win: the end of the
			 * emulated sender's current round (its CWR, or
			 * the ACKs that grow its window by a segment)
			 */
	struct ecnp_win win[2];	/* window model, by enum ecnp_dir */
	u16 hold_win;	/* dupack: window field of E's ACK at the event */
	u16 smss;	/* N's largest segment payload seen */
	u16 clamp_win;	/* dupack-rwnd: the window field (E's units) E's
			 * ACKs carry toward N at most: clamp_segs of N's
			 * segments (0: no clamp)
			 */
	u8 state;	/* enum ecnp_state */
	u8 flags;	/* ECNP_FL_* */
	u8 hflags;	/* ECNP_HF_* */
	u8 dup_cnt;	/* dupack: E's ACKs reporting a hole in the claimed
			 * range during the current simulated loss (without
			 * SACK: E's repeats of its ACK; at L, also after
			 * an abort, ECNP_DF_ABORTED)
			 */
	u8 dflags;	/* ECNP_DF_* */
	u8 dup_shown;	/* dupack without SACK: duplicate ACKs N has been
			 * shown during the current simulated loss (0 with
			 * SACK)
			 */
	u8 e_rep;	/* dupack without SACK: E's repeated ACKs in the
			 * current hole at E (0: none, see e_hole_end)
			 */
	u8 claimed;	/* dupack without SACK: segments above L the
			 * injected duplicates stand for (0 with SACK)
			 */
	u8 clamp_segs;	/* dupack-rwnd: the emulated ECN sender's window
			 * in segments, the clamp's size
			 */
	u8 clamp_fl;	/* dupack-rwnd: the ECNP_CF_ flags, and N's
			 * peak flight (ECNP_CF_PEAK_SHIFT)
			 */
};

/* The sizes the comments above and docs/design.md give, on every ABI. */
static_assert(sizeof(struct ecnp_win) == 12, "struct ecnp_win: 12 bytes");
static_assert(sizeof(struct ecnp_fsm) == 96, "struct ecnp_fsm: 96 bytes");
static_assert(sizeof(struct ecnp_pkt) == 36, "struct ecnp_pkt: 36 bytes");

/*
 * dupack mode: how to rewrite one E->N ACK (ECNP_ACT_HOLD_ACK,
 * ECNP_ACT_SET_TSECR) or build the injected duplicates
 * (ECNP_ACT_INJECT_DUPACKS); see ecnp_fsm_ack_edit().  Every part is
 * named by a flag, never by a sentinel value (any u32 is a sequence
 * number).  E's own SACK blocks are kept, in E's order, except those the
 * flags leave out; inverted or empty blocks (never valid, RFC 2018) are
 * always left out.  E's D-SACK block (RFC 2883: its first block, when it
 * lies below E's ACK number or inside its second block) stays first.
 */
struct ecnp_ack_edit {
	u32 ack;		/* ACK number */
	u32 tsecr;		/* if set_tsecr */
	u32 sack_start;		/* if sack: a SACK block to add, first after */
	u32 sack_end;		/* E's D-SACK block */
	u32 lost_start;		/* if lost: E's blocks overlapping */
	u32 lost_end;		/* [lost_start, lost_end) are left out */
	u32 sack_limit;		/* if limit: as are those ending after this */
	u16 win;		/* window field */
	bool set_tsecr;
	bool sack;
	bool lost;
	bool limit;
	bool no_dsack;		/* E's D-SACK block is left out */
	u8 copies;		/* HOLD_ACK: exact copies to send after it */
	u8 shown;		/* without SACK: duplicate ACKs the step
				 * counted as shown to N (dup_shown): the
				 * injected copies, or the held ACK and its
				 * copies; see ecnp_fsm_complete()
				 */
};

/*
 * Which connection a proxied flow was (ecnp_fsm_conn_id()), kept when
 * its flow expires: a segment picks the connection up only if it lies
 * near where each end's sequence numbers stood (ecnp_conn_id_match()),
 * not one of a later connection on the same 4-tuple.
 */
struct ecnp_conn_id {
	u32 e_nxt;	/* E's next sequence number, as far as seen */
	u32 n_nxt;	/* N's (f->n_nxt) */
	u32 win;	/* how far from them a segment may lie */
	bool sack;	/* the connection negotiated SACK */
};

/*
 * Result of ecnp_fsm_step(): header edits (low 16 bits) and events (high 16
 * bits).  An edit bit is returned only when it changes the segment, so the
 * bits can be counted directly.  ACT_DROP means: drop this segment, apply
 * nothing else.
 */
#define ECNP_ACT_SET_ECE	0x00000001	/* TCP ECE := 1 */
#define ECNP_ACT_CLEAR_ECE	0x00000002	/* TCP ECE := 0 */
#define ECNP_ACT_SET_CWR	0x00000004	/* TCP CWR := 1 */
#define ECNP_ACT_CLEAR_CWR	0x00000008	/* TCP CWR := 0 */
#define ECNP_ACT_SET_ECT0	0x00000010	/* IP ECN := ECT(0) */
#define ECNP_ACT_CLEAR_ECN	0x00000020	/* IP ECN := Not-ECT */
#define ECNP_ACT_DROP		0x00000040	/* drop this segment */
/* dupack mode, E->N ACKs (see struct ecnp_ack_edit) */
#define ECNP_ACT_HOLD_ACK	0x00000080	/* ack, window (+SACK, TSecr) */
#define ECNP_ACT_SET_TSECR	0x00000100	/* TSecr only */
#define ECNP_ACT_INJECT_DUPACKS	0x00000200	/* forward, then ECNP_DUPACKS
						 * copies as duplicate ACKs
						 */
/*
 * dupack without SACK: a held ACK (ECNP_ACT_HOLD_ACK) that E sent for
 * more than one segment above L stands for one duplicate per segment, so
 * this many exact copies of it follow it (0-3; ecnp_dupacks_due())
 */
#define ECNP_ACT_COPY_SHIFT	10
#define ECNP_ACT_COPY_MASK	0x00000c00
#define ECNP_ACT_COPIES(n)	((u32)(n) << ECNP_ACT_COPY_SHIFT)
#define ECNP_ACT_COPIES_MAX	(ECNP_ACT_COPY_MASK >> ECNP_ACT_COPY_SHIFT)
/*
 * dupack with SACK, with ECNP_ACT_HOLD_ACK or ECNP_ACT_SET_TSECR: E's
 * D-SACK block is left out (it may report a copy of L let through, or
 * one N's own recovery sent, and would undo N's reduction)
 */
#define ECNP_ACT_NO_DSACK	0x00001000
/*
 * dupack: N's retransmission of L goes on as its first byte alone (the
 * rest of the payload trimmed).  E has that byte, so it answers at once
 * with its real ACK (and a D-SACK, left out toward N): the simulated
 * loss ends one round trip after the retransmission, as a real one does,
 * whether or not E's delayed-ACK timer was running.  Not with ACT_DROP.
 */
#define ECNP_ACT_TRIM		0x00002000
/*
 * dupack-rwnd: E's ACK toward N carries a smaller window, the clamp's
 * (f->clamp_win, ecnp_floor_ready()): the window field alone is edited.
 */
#define ECNP_ACT_CLAMP_WIN	0x00004000
/*
 * dupack-fast.  On an E->N ACK held in a simulated loss: keep a copy of it
 * as E sent it (after the flag edits, before the hold's edits; E's newest
 * ACK, past L), and tell the state machine so with ECNP_PF_STASHED on
 * N's segments while it is still E's newest.  On N's retransmission of
 * L, with ECNP_ACT_TRIM: send that copy to N, its TSecr cleared
 * (ecnp_rexmit_release()), and apply the rest of the step (the trim) as
 * well, whether or not the copy could be sent.
 */
#define ECNP_ACT_STASH		0x00008000
#define ECNP_ACT_MASK		0x0000ffff
/* the header flag / ECN field edits, and the dupack ACK edits */
#define ECNP_ACT_FLAG_EDITS	0x0000003f
#define ECNP_ACT_ACK_EDITS	(ECNP_ACT_HOLD_ACK | ECNP_ACT_SET_TSECR | \
				 ECNP_ACT_INJECT_DUPACKS | ECNP_ACT_CLAMP_WIN)

/*
 * Handshake edits use the same bits: the SYN upgrade is this (minus a bit the
 * SYN already has), the SYN-ACK upgrade SET_ECE (+ CLEAR_CWR), the SYN-ACK
 * downgrade CLEAR_ECE.
 */
#define ECNP_ACT_SYN_ECN_SETUP	(ECNP_ACT_SET_ECE | ECNP_ACT_SET_CWR)

/* Flow outcome, returned once, on the packet that decides it. */
#define ECNP_EV_OUT_BOTH	0x00010000	/* both ends negotiated ECN */
#define ECNP_EV_OUT_NEITHER	0x00020000	/* neither end uses ECN */
#define ECNP_EV_OUT_E_RESP	0x00040000	/* proxied, E is the responder */
#define ECNP_EV_OUT_E_INIT	0x00080000	/* proxied, E is the initiator */
#define ECNP_EV_OUT_FALLBACK	0x00100000	/* no ECN: upgrade not possible */
#define ECNP_EV_OUT_PASS	0x00200000	/* passed through (AccECN, ...) */
#define ECNP_EV_OUT_MASK	0x003f0000
/* A congestion event was signalled to N (with ACT_DROP in drop mode). */
#define ECNP_EV_CONG_SIGNAL	0x00400000
/* Remember this destination (B's address): do not upgrade SYNs to it. */
#define ECNP_EV_SYN_FALLBACK	0x00800000
/* RST, or FINs from both sides: the flow may be expired early. */
#define ECNP_EV_CLOSED		0x01000000
/* dupack: N's retransmission of the "lost" segment suppressed (E has the
 * original, nothing is lost): with ACT_TRIM, its first byte alone goes on;
 * with ACT_DROP (a retransmission after the simulated loss ended, or
 * without SACK), none of it.
 */
#define ECNP_EV_REXMIT_SUPPRESSED 0x02000000
/* dupack: E reported a real hole where the duplicates claimed data; the
 * simulated loss is abandoned (N repairs the real loss itself).  Also
 * when N sends L again or a copy of L cannot be dropped.
 */
#define ECNP_EV_DUPACK_ABORT	0x04000000
/* dupack without SACK: a held ACK not shown to N (with ACT_DROP; a pure
 * ACK whose only news would be one duplicate too many, see ecnp_hold()).
 */
#define ECNP_EV_ACK_ABSORBED	0x08000000
/* dupack: a congestion event N's own loss recovery answers (E repeated its
 * ACK ECNP_DUPACKS times in this window): no simulated loss, CWR follows.
 */
#define ECNP_EV_CONG_ANSWERED	0x10000000
/* The segment is outside the window model of the flow (or a RST that does
 * not match exactly, RFC 5961 3.2): it changed no state, only the edits that
 * need none were returned (see ecnp_fsm_step()).
 */
#define ECNP_EV_OUT_OF_WINDOW	0x20000000
/* A SYN carries TCP-MD5 or TCP-AO (RFC 2385, 5925): they sign the header,
 * so the flow passes untouched (with ECNP_EV_OUT_PASS).
 */
#define ECNP_EV_SIGNED		0x40000000
/* ECNP_PF_NO_DROP: a drop or suppression this packet would have got was
 * not done (drop mode: it stays pending for the next new data; dupack: the
 * simulated loss ends, E gets L twice).
 */
#define ECNP_EV_NOT_DROPPED	0x80000000
#define ECNP_EV_MASK		0xffff0000
/*
 * dupack with SACK: the signal given on an earlier step is withdrawn
 * before N could be shown a loss, and pending again (ecnp_hold_void()).
 * Both bits: no other step reports a signal and an abort together (a
 * signal is given only outside a hold, an abort only ends one).
 */
#define ECNP_EV_SIGNAL_WITHDRAWN (ECNP_EV_CONG_SIGNAL | ECNP_EV_DUPACK_ABORT)

void ecnp_fsm_init(struct ecnp_fsm *f);
u32 ecnp_fsm_step(struct ecnp_fsm *f, const struct ecnp_pkt *p,
		  enum ecnp_feedback mode, bool dst_no_upgrade);
u32 ecnp_fsm_pickup(struct ecnp_fsm *f, const struct ecnp_pkt *p, int e,
		    bool sack, enum ecnp_feedback mode);
void ecnp_fsm_pickup_init(struct ecnp_fsm *f, const struct ecnp_pkt *p, int e,
			  bool sack);
void ecnp_fsm_conn_id(const struct ecnp_fsm *f, struct ecnp_conn_id *id);
bool ecnp_conn_id_match(const struct ecnp_conn_id *id,
			const struct ecnp_pkt *p, bool from_e);
bool ecnp_fsm_wants_drop(const struct ecnp_fsm *f, const struct ecnp_pkt *p,
			 enum ecnp_feedback mode);
void ecnp_fsm_untrack(struct ecnp_fsm *f);
void ecnp_fsm_ack_edit(const struct ecnp_fsm *f, const struct ecnp_pkt *p,
		       u32 ret, struct ecnp_ack_edit *e);
bool ecnp_fsm_complete(struct ecnp_fsm *f, const struct ecnp_pkt *p, u32 ret,
		       const struct ecnp_ack_edit *e, bool flags_done,
		       unsigned int shown);
const char *ecnp_state_name(unsigned int state);

static inline bool ecnp_fsm_in_phase2(const struct ecnp_fsm *f)
{
	return f->state >= ECNP_S_DEFAULT && f->state <= ECNP_S_ECE_DUPACK;
}

/*
 * Decided, and nothing to do: SAME (both or neither end ECN) or PASS
 * (AccECN, signed, not ours).  Only a SYN from A (a new connection on the
 * 4-tuple, after RST or both FINs) changes such a flow's segments again.
 */
static inline bool ecnp_fsm_needs_nothing(const struct ecnp_fsm *f)
{
	return f->state == ECNP_S_SAME || f->state == ECNP_S_PASS;
}

/*
 * What the proxy does with a segment whose conntrack entry says that its
 * connection needs nothing (ecnp_ct.c, ECNP_CT_NOTHING_BIT), from its TCP
 * flags (tcp_flag_byte()): a FIN or RST without SYN takes the full path,
 * so that a flow that is still there closes; every other segment passes
 * at once, a SYN too.  Conntrack gives a new connection its own entry,
 * or replaces the old one for a SYN after a FIN or after an RST in the
 * SYN's own direction; a SYN on a marked entry is one it ignored
 * (TCP_CONNTRACK_IGNORE): a retransmission, a spoof, or a client's new
 * connection after a server's RST, whose connection, if the server
 * answers it, conntrack resyncs onto the same entry and which then passes
 * end to end, untouched, as the decided one did.  Stepped, it would start
 * the machine over and let one spoofed SYN undo the decision, and with
 * it the bit.
 */
enum ecnp_ct_path {
	ECNP_CT_SLOW = 0,	/* FIN or RST without SYN: stepped */
	ECNP_CT_PASS,		/* anything else: passed */
};

static inline enum ecnp_ct_path ecnp_ct_path(u8 flags)
{
	if (!(flags & ECNP_TCP_SYN) &&
	    (flags & (ECNP_TCP_FIN | ECNP_TCP_RST)))
		return ECNP_CT_SLOW;
	return ECNP_CT_PASS;
}

/**
 * ecnp_fsm_wants_opts - does ecnp_fsm_step() need the TCP options?
 * @f: the flow's state
 * @flags: the segment's ECNP_TCP_* flags
 * @mode: the feedback mode the segment will be stepped with
 *
 * Options (ECNP_OPT_*) are read on SYNs and SYN-ACKs, while a simulated
 * loss or its TSecr fix-up lasts (whatever the mode is now), and in dupack
 * mode on ACKs echoing ECE and while the signal is pending (a hole
 * reported by SACK defers the simulated loss).  Other segments need not
 * be walked.
 *
 * Inline: the plumbing asks on every segment it steps.
 *
 * Return: true iff the caller must fill in the ecnp_pkt's option fields.
 */
static inline bool ecnp_fsm_wants_opts(const struct ecnp_fsm *f,
				       u16 flags, enum ecnp_feedback mode)
{
	if (flags & ECNP_TCP_SYN)
		return true;
	if (!ecnp_fsm_in_phase2(f))
		return false;
	if (f->dflags & (ECNP_DF_HOLD | ECNP_DF_TS | ECNP_DF_LATE |
			 ECNP_DF_REXMIT))
		return true;
	return ecnp_fb_dupack(mode) &&
	       ((flags & ECNP_TCP_ECE) || f->state == ECNP_S_DUPACK ||
		f->state == ECNP_S_ECE_DUPACK);
}

/*
 * dupack-fast: a copy of E's ACK is of use while a simulated loss waits for
 * N's retransmission of L; the plumbing frees one kept past that.
 */
static inline bool ecnp_fsm_stash_wanted(const struct ecnp_fsm *f)
{
	return (f->dflags & (ECNP_DF_HOLD | ECNP_DF_REXMIT)) == ECNP_DF_HOLD;
}

/*
 * dupack-fast: a step's ECNP_ACT_STASH means "send the kept copy to N" on
 * N's retransmission of L (with ECNP_ACT_TRIM), "keep a copy of this
 * ACK" otherwise.
 */
static inline bool ecnp_act_stash_answers(u32 ret)
{
	return (ret & (ECNP_ACT_STASH | ECNP_ACT_TRIM)) ==
	       (ECNP_ACT_STASH | ECNP_ACT_TRIM);
}

/* Roles are decided and the proxy plays N's part toward E. */
static inline bool ecnp_fsm_proxied(const struct ecnp_fsm *f)
{
	return f->state == ECNP_S_WAIT_ACK || ecnp_fsm_in_phase2(f);
}

/* Only meaningful when ecnp_fsm_proxied(). */
static inline bool ecnp_fsm_e_is_a(const struct ecnp_fsm *f)
{
	return f->flags & ECNP_FL_E_IS_A;
}

#endif /* _ECNP_FSM_H */
