// SPDX-License-Identifier: GPL-2.0
/* ECN proxy: negotiation and operation state machine (pure, skb-free)
 *
 * A router-resident proxy that lets a TCP connection use ECN on the long
 * path even when only one endpoint is ECN-capable.  The proxy negotiates ECN
 * on behalf of the non-ECN endpoint and then plays its part:
 *
 *   A = the host that sent the first SYN, B = the other one.
 *   E = the endpoint that negotiated ECN, N = the one that did not.
 *
 * Phase 1, negotiation (RFC 3168 6.1.1; Linux: tcp_ecn_rcv_syn() wants ECE
 * and CWR on the SYN, tcp_ecn_rcv_synack() wants ECE set, CWR clear):
 *
 *   - A plain SYN from A is upgraded to an ECN-setup SYN.  If B accepts
 *     (ECN-setup SYN-ACK), the SYN-ACK is downgraded so A sees plain TCP:
 *     E = B.
 *   - An ECN-setup SYN from A is left alone.  If B answers with a plain
 *     SYN-ACK, the SYN-ACK is upgraded so A gets ECN: E = A.
 *   - Both or neither capable: forward everything untouched (SAME).
 *   - AccECN (AE on the SYN): untouched (PASS).  The proxy never sets AE.
 *   - TCP-MD5 or TCP-AO on the SYN (the signature covers the header):
 *     untouched (PASS, ECNP_EV_SIGNED).
 *
 *                 ECN SYN from A                 ECN SYN-ACK
 *      INIT -----------------------> A_C ------------------------> SAME
 *       | |                           | |  plain SYN-ACK, upgrade    (both)
 *       | | AccECN SYN                | +------------------------> WAIT_ACK
 *       | | or no SYN                 | plain SYN retransmitted     (E = A)
 *       | +------------> PASS         | (A's own fallback;
 *       |                             v  A_PLAIN_RTX)
 *       | plain SYN, upgrade                     ECN SYN-ACK, downgrade
 *       +--------------------------> A_NC -----------------------> WAIT_ACK
 *                                    |  ^ |      plain SYN-ACK      (E = B)
 *         SYN retransmitted: forward |  | +----------------------> SAME
 *         unmodified                 +--+                    (neither or
 *                                                             fallback:
 *                                                             remember dst)
 *      A_NC with A_PLAIN_RTX --ECN SYN-ACK, untouched--> VERIFY
 *      VERIFY --A's new data ECT, or A echoes B's CE--> SAME (both)
 *             --A's new data Not-ECT, or A acks B's CE without ECE--> phase 2
 *                                                             (E = B)
 *      A_C, A_NC --SYN from B--> SIMOPEN --SYN-ACKs, or first ACK--> SAME
 *                                                                or phase 2
 *      WAIT_ACK --first non-SYN ACK--> DEFAULT (phase 2)
 *      any --RST--> CLOSED --SYN from A--> INIT (new incarnation)
 *      (no flow) --segment of a remembered connection--> DEFAULT (pickup)
 *      (no flow) --CE data from A--> PICKUP --B acks it without ECE--> ECE
 *                                           --B echoes, or CWR from A--> SAME
 *
 * Every segment is checked against a window model first, as conntrack's
 * tcp_in_window() does (FSM.md "Window checks"): one that someone who
 * knows only the 4-tuple could have sent (out of the window, a RST that
 * does not match exactly, a SYN-ACK or handshake ACK that does not ack
 * the SYN) changes no state and gets only the edits that need none
 * (ECNP_EV_OUT_OF_WINDOW).  The RST, FIN, SYN, ECE, CE, CWR, data and ACK
 * rules below apply to segments in the window only.
 *
 * Handshake robustness:
 *   - A's own fallback: an ECN-setup SYN from A retransmitted without ECE
 *     and CWR (Linux: tcp_ecn_clear_syn()) is forwarded as it is and never
 *     upgraded.  If B's SYN-ACK is then ECN-setup, whether A uses ECN
 *     depends on its stack: Linux does (tcp_ecn_rcv_synack() keeps
 *     TCP_ECN_OK), RFC 3168 6.1.1 forbids ECT on A's data.  The SYN-ACK
 *     passes untouched and the flow waits in VERIFY until A shows which
 *     (ecnp_verify()), so two ECN hosts keep end-to-end ECN.
 *   - SYN retransmission fallback (RFC 3168 6.1.1.1): if our upgraded SYN is
 *     retransmitted (same ISN) before any SYN-ACK, the retransmission is
 *     forwarded unmodified.  If B's SYN-ACK then is plain, the path may
 *     drop ECN-setup SYNs: ECNP_EV_SYN_FALLBACK asks the plumbing to
 *     remember B's address.  If it is ECN-setup, B did get our upgraded SYN
 *     (only its SYN-ACK was lost or late): the flow is proxied and nothing
 *     is remembered.  With dst_no_upgrade the proxy never upgrades (neither
 *     SYN nor SYN-ACK).  A RST answering our upgraded SYN also raises
 *     ECNP_EV_SYN_FALLBACK (some stacks reset ECN-setup SYNs).
 *   - Once roles are decided, every retransmitted handshake segment gets
 *     the same edit again (idempotent): B's SYN-ACKs are upgraded or
 *     downgraded as the first one was, and if B accepted our upgraded SYN,
 *     A's retransmitted SYN is upgraded again, so each side keeps the view
 *     it was given.  Flows are classified exactly once.
 *   - Simultaneous open: nothing is upgraded.  Each side's SYN-ACK shows
 *     its view (Linux: tcp_ecn_send_synack() keeps ECE iff TCP_ECN_OK); if
 *     exactly one side thinks ECN is on, the flow is proxied with that side
 *     as E, else it is SAME.
 *   - A SYN with a new ISN restarts the machine only after RST or after
 *     FINs from both sides (port reuse); otherwise it is left alone.
 *
 * Phase 2, operation (proxied flows only, RFC 3168 6.1):
 *
 *   - E->N: IP ECN := Not-ECT, TCP ECE and CWR cleared, so N sees plain TCP.
 *   - N->E: ECT(0) on segments that carry new data (seq at or beyond N's
 *     highest end sequence seen so far, n_nxt); never on SYN, pure ACK, RST
 *     or retransmissions.  ECE/CWR on N->E are owned by the proxy: ECE is
 *     set iff an echo is pending, CWR iff a CWR is due (N's own bits, which a
 *     non-ECN sender should not set, are cleared).
 *   - CE on an E->N data segment: echo ECE on every N->E segment until E
 *     sends CWR (CWR and CE on one segment: the echo continues).
 *   - ECE from E (E saw CE on N's data) starts a congestion event, at most
 *     once per window: recover := n_nxt, and no new event fires until E's
 *     ACK passes recover and the previous event's CWR has been sent (E
 *     keeps echoing until it sees CWR; those ECEs are not new congestion).
 *     In dupack mode the window starts again when the signal is given.
 *     The signal toward N depends on the feedback mode:
 *       none:   nothing (N->E is never ECT, so routers drop instead).
 *       drop:   the next N->E new-data segment is dropped: one real loss,
 *               one window reduction by N's own loss recovery.
 *       dupack: a simulated loss (DUPACK.md).  On the first pure ACK
 *               from E that advances E's ACK number, carries no SACK
 *               block and has at least four of N's segments in flight
 *               beyond it (two with SACK), is not at a gap in N's stream
 *               at the proxy and has no TSecr older than the previous
 *               suppressed retransmission; without SACK, not inside a
 *               hole E reported by repeating its ACK (until E acks all
 *               N had sent by then), and after three such repeats not at
 *               all: N's own loss recovery answers the event
 *               (ECNP_EV_CONG_ANSWERED, CWR follows).  The signal:
 *               the hold starts, L = [ack, ack + smss) being the "lost"
 *               segment; without SACK also ACT_INJECT_DUPACKS (forward
 *               it, then three duplicates); with SACK nothing is
 *               injected (claimed blocks gave N false RTT samples): E's
 *               next ACKs, held, show N its progress above L as SACK.
 *               N's first retransmission of L is dropped (E has it,
 *               never a copy that fills a gap at the proxy), or let
 *               through when E has acked all N sent (with SACK, where
 *               the hold never ends before it), and fixes
 *               hold_end; until E's ACK reaches hold_end its ACKs are
 *               ACT_HOLD_ACK (ACK number L, the event's window, E's
 *               progress as SACK, a TSecr older than the
 *               retransmission cleared to 0), the releasing one
 *               ACT_SET_TSECR.
 *               Without SACK, a held ACK that would show N more
 *               duplicates than E has acked segments above L is dropped
 *               (ECNP_EV_ACK_ABSORBED), and after an abort a duplicate
 *               of L beyond N's segments in flight.  A hole E reports
 *               inside the claimed range aborts the hold.
 *     After the signal, CWR is set on the next N->E new-data segment, so E
 *     stops echoing.
 *
 * The four phase 2 states are two independent bits, echo (toward E) and
 * signal (toward N):
 *
 *                      CE from E
 *          DEFAULT ----------------------> ECE
 *           ^   |  <----------------------  ^ |
 *           |   |       CWR from E          | |
 *   signal  |   | ECE from E        signal  | | ECE from E
 *   done    |   | (new window)      done    | | (new window)
 *           |   v       CE from E           | v
 *          DUPACK ----------------------> ECE_DUPACK
 *                  <----------------------
 *                       CWR from E
 *
 * "Signal done" is the drop of the next N->E new-data segment (drop mode),
 * or the injection of the three duplicate ACKs (dupack mode); in the
 * reference design it was the third rewritten duplicate ACK.  The
 * thesis rewrote the ACK number of E's real segments, which does not work
 * against a modern Linux sender (SACK, RACK, D-SACK and timestamp undo), so
 * that rewrite is deliberately not implemented; see FSM.md.
 *
 * Everything here is a pure function of the flow state and the observed
 * header fields: no skb, no locking, no allocation, no time.  The caller
 * serialises calls per flow.  A GSO packet may be passed as one segment
 * (len = total payload) unless ecnp_fsm_wants_drop() says it would be
 * dropped; then it must be segmented first and each segment stepped, or,
 * if it cannot be, stepped whole with ECNP_PF_NO_DROP: nothing is dropped
 * (ECNP_EV_NOT_DROPPED says what was not done) and the state stays right.
 */
#include "ecnp_fsm.h"

#define ECNP_ECN_FLAGS	(ECNP_TCP_ECE | ECNP_TCP_CWR)

static const char * const ecnp_state_names[ECNP_S_NR] = {
	[ECNP_S_INIT]		= "INIT",
	[ECNP_S_A_C]		= "A_C",
	[ECNP_S_A_NC]		= "A_NC",
	[ECNP_S_SIMOPEN]	= "SIMOPEN",
	[ECNP_S_WAIT_ACK]	= "WAIT_ACK",
	[ECNP_S_SAME]		= "SAME",
	[ECNP_S_PASS]		= "PASS",
	[ECNP_S_CLOSED]		= "CLOSED",
	[ECNP_S_PICKUP]		= "PICKUP",
	[ECNP_S_VERIFY]		= "VERIFY",
	[ECNP_S_DEFAULT]	= "DEFAULT",
	[ECNP_S_ECE]		= "ECE",
	[ECNP_S_DUPACK]		= "DUPACK",
	[ECNP_S_ECE_DUPACK]	= "ECE_DUPACK",
};

const char *ecnp_state_name(unsigned int state)
{
	return state < ECNP_S_NR ? ecnp_state_names[state] : "?";
}

void ecnp_fsm_init(struct ecnp_fsm *f)
{
	memset(f, 0, sizeof(*f));
	f->state = ECNP_S_INIT;
}

static bool ecnp_is_syn(const struct ecnp_pkt *p)
{
	return (p->flags & (ECNP_TCP_SYN | ECNP_TCP_ACK)) == ECNP_TCP_SYN;
}

static bool ecnp_is_synack(const struct ecnp_pkt *p)
{
	return (p->flags & (ECNP_TCP_SYN | ECNP_TCP_ACK)) ==
	       (ECNP_TCP_SYN | ECNP_TCP_ACK);
}

/* tcp_ecn_rcv_syn(): ECN-setup SYN = ECE and CWR both set */
static bool ecnp_syn_ecn_setup(const struct ecnp_pkt *p)
{
	return (p->flags & ECNP_ECN_FLAGS) == ECNP_ECN_FLAGS;
}

/* tcp_ecn_rcv_synack(): ECN-setup SYN-ACK = ECE set and CWR clear */
static bool ecnp_synack_ecn_setup(const struct ecnp_pkt *p)
{
	return (p->flags & ECNP_ECN_FLAGS) == ECNP_TCP_ECE;
}

/* Edits that make the segment's ECE equal @ece and its CWR equal @cwr. */
static u32 ecnp_edit_flags(const struct ecnp_pkt *p, bool ece, bool cwr)
{
	bool has_ece = p->flags & ECNP_TCP_ECE;
	bool has_cwr = p->flags & ECNP_TCP_CWR;
	u32 act = 0;

	if (ece && !has_ece)
		act |= ECNP_ACT_SET_ECE;
	else if (!ece && has_ece)
		act |= ECNP_ACT_CLEAR_ECE;
	if (cwr && !has_cwr)
		act |= ECNP_ACT_SET_CWR;
	else if (!cwr && has_cwr)
		act |= ECNP_ACT_CLEAR_CWR;
	return act;
}

/* E->N: N must see plain TCP. */
static u32 ecnp_strip(const struct ecnp_pkt *p)
{
	u32 act = ecnp_edit_flags(p, false, false);

	if (p->ecn != ECNP_ECN_NOT_ECT)
		act |= ECNP_ACT_CLEAR_ECN;
	return act;
}

static bool ecnp_from_e(const struct ecnp_fsm *f, const struct ecnp_pkt *p)
{
	return (p->dir == ECNP_DIR_A) == ecnp_fsm_e_is_a(f);
}

static bool ecnp_fins_done(const struct ecnp_fsm *f)
{
	return (f->flags & (ECNP_FL_FIN_A | ECNP_FL_FIN_B)) ==
	       (ECNP_FL_FIN_A | ECNP_FL_FIN_B);
}

static bool ecnp_st_echo(u8 state)
{
	return state == ECNP_S_ECE || state == ECNP_S_ECE_DUPACK;
}

static bool ecnp_st_signal(u8 state)
{
	return state == ECNP_S_DUPACK || state == ECNP_S_ECE_DUPACK;
}

static u8 ecnp_p2_state(bool echo, bool signal)
{
	if (signal)
		return echo ? ECNP_S_ECE_DUPACK : ECNP_S_DUPACK;
	return echo ? ECNP_S_ECE : ECNP_S_DEFAULT;
}

/* N->E segment with payload that N sends for the first time. */
static bool ecnp_new_data(const struct ecnp_fsm *f, const struct ecnp_pkt *p)
{
	return p->len && !before(p->seq, f->n_nxt);
}

/* --- the window model (FSM.md "Window checks") ------------------------- */

/* The window scale option's maximum (RFC 7323 2.3; Linux clamps to it). */
#define ECNP_WSCALE_MAX		14
/* Lowest ACK number accepted: this far below the receiver's highest end,
 * or the sender's largest window if larger (conntrack's MAXACKWINCONST,
 * RFC 5961 5.2's MAX.SND.WND).
 */
#define ECNP_MAXACKWIN		66000u

static u8 ecnp_fin_bit(u8 dir)
{
	return dir == ECNP_DIR_A ? ECNP_FL_FIN_A : ECNP_FL_FIN_B;
}

/* Sequence space the segment occupies ends here (SYN and FIN count). */
static u32 ecnp_seg_end(const struct ecnp_pkt *p)
{
	return p->seq + p->len + !!(p->flags & ECNP_TCP_SYN) +
	       !!(p->flags & ECNP_TCP_FIN);
}

/* A window field of @w's side in bytes (not for SYNs: never scaled). */
static u32 ecnp_win_shift(const struct ecnp_win *w, u16 win)
{
	return (u32)win << (w->wflags & ECNP_WF_SCALED ? w->wscale : 0);
}

/* The largest window @w's side offered, in bytes, at least 1. */
static u32 ecnp_win_bytes(const struct ecnp_win *w)
{
	u32 b = ecnp_win_shift(w, w->maxwin);

	return b ? b : 1;
}

/* Bytes (a SYN's window, a clamp) in @w's units, rounded up. */
static u16 ecnp_win_units(const struct ecnp_win *w, u32 bytes)
{
	u32 sh = w->wflags & ECNP_WF_SCALED ? w->wscale : 0;

	return (u16)min_t(u32, (bytes + (1u << sh) - 1) >> sh, U16_MAX);
}

/* dupack-rwnd: no window clamp (N's peak and ECNP_CF_CA stay). */
static void ecnp_clamp_off(struct ecnp_fsm *f)
{
	f->clamp_win = 0;
	f->clamp_segs = 0;
	f->clamp_fl &= ~ECNP_CF_ROUND;
}

/* dupack-rwnd: N's peak flight since the last event, in segments. */
static u32 ecnp_n_peak(const struct ecnp_fsm *f)
{
	return f->clamp_fl >> ECNP_CF_PEAK_SHIFT;
}

/*
 * dupack-rwnd, N's data (n_nxt and smss updated): the segments it has in
 * flight beyond E's ACK, kept if more than its peak so far.
 */
static void ecnp_note_peak(struct ecnp_fsm *f)
{
	u32 flight = f->n_nxt - f->e_ack, peak = ecnp_n_peak(f), segs;

	/* the division only when the peak grows, a few times per event */
	if (!f->smss || peak >= ECNP_CF_PEAK_MAX || flight <= peak * f->smss)
		return;
	segs = min_t(u32, DIV_ROUND_UP(flight, f->smss), ECNP_CF_PEAK_MAX);
	f->clamp_fl = (f->clamp_fl & ~ECNP_CF_PEAK) | segs << ECNP_CF_PEAK_SHIFT;
}

/* Both SYNs seen: scaling is on iff both offered it (RFC 7323 2.2). */
static void ecnp_win_scaling(struct ecnp_fsm *f)
{
	bool on = f->win[ECNP_DIR_A].wflags & f->win[ECNP_DIR_B].wflags &
		  ECNP_WF_WSCALE;
	unsigned int d;

	for (d = 0; d < ARRAY_SIZE(f->win); d++) {
		struct ecnp_win *w = &f->win[d];

		if (!on) {
			w->wscale = 0;
			continue;
		}
		w->wflags |= ECNP_WF_SCALED;
		w->maxwin = (u16)(((u32)w->maxwin + (1u << w->wscale) - 1) >>
				  w->wscale);
	}
}

/*
 * A SYN or SYN-ACK the state machine accepted (conntrack's
 * tcp_init_sender()): @fresh starts its side over (a new ISN), else it is
 * a retransmission.  The side may send up to its end until the other side
 * acks it with a window; a SYN-ACK's ACK and window open the other side's.
 */
static void ecnp_win_syn(struct ecnp_fsm *f, const struct ecnp_pkt *p,
			 bool fresh)
{
	struct ecnp_win *s = &f->win[p->dir], *r = &f->win[!p->dir];
	bool first = !(s->wflags & ECNP_WF_SEEN);
	u32 end = ecnp_seg_end(p), edge;
	u16 units;

	if (first) {
		s->wflags = ECNP_WF_SEEN;
		s->wscale = 0;
		if (p->opt & ECNP_OPT_WSCALE) {
			s->wflags |= ECNP_WF_WSCALE;
			s->wscale = min_t(u8, p->wscale, ECNP_WSCALE_MAX);
		}
	}
	units = ecnp_win_units(s, p->win);
	if (first || fresh) {
		s->end = end;
		s->maxend = end;
		s->maxwin = units;
	} else {
		if (after(end, s->end))
			s->end = end;
		if (units > s->maxwin)
			s->maxwin = units;
	}
	if (!(r->wflags & ECNP_WF_SEEN))
		return;
	if (first)
		ecnp_win_scaling(f);
	if (p->flags & ECNP_TCP_ACK) {
		edge = p->ack + p->win + !p->win;
		if (after(edge, r->maxend))
			r->maxend = edge;
	}
}

/*
 * The segment acks the other side's SYN, and no more than that side has
 * sent since (RFC 793: a SYN-ACK, a reset in SYN-SENT, the handshake's
 * ACK).
 */
static bool ecnp_acks_syn(const struct ecnp_fsm *f, const struct ecnp_pkt *p)
{
	const struct ecnp_win *r = &f->win[!p->dir];
	u32 isn = p->dir == ECNP_DIR_A ? f->b_isn : f->a_isn;

	return (p->flags & ECNP_TCP_ACK) && (r->wflags & ECNP_WF_SEEN) &&
	       !before(p->ack, isn + 1) && !after(p->ack, r->end);
}

/*
 * tcp_in_window()'s four bounds, for a segment without SYN or RST from a
 * side S to a side R, each on the tolerant side:
 *   I   it starts no later than S may send (R's ACK + window), or ends
 *       within one of R's windows beyond that (conntrack's allowance for
 *       senders that overshoot): a GSO packet passed whole is checked by
 *       its start;
 *   II  it ends no earlier than one of R's largest windows below S's
 *       highest end: retransmissions, window probes and keepalives
 *       (snd_una - 1) pass, so do segments two CPUs forwarded out of
 *       order;
 *   III its ACK acks nothing R could not have sent yet (R's ACK + window
 *       from S, or R's highest end if R overshot that): an ACK of data
 *       the proxy has not seen passes;
 *   IV  its ACK is no older than S's largest window (at least 66000)
 *       below R's highest end (RFC 5961 5.2).
 * A side whose SYN was not seen makes every segment out of the window,
 * unless the flow was picked up without its handshake (ECNP_WF_LIBERAL).
 *
 * The window checks and updates are inline: the quick step (ecnp_quick())
 * runs them on most segments, with the segment's end known.
 */
static __always_inline bool ecnp_ack_check(const struct ecnp_fsm *f,
					   const struct ecnp_pkt *p)
{
	const struct ecnp_win *s = &f->win[p->dir], *r = &f->win[!p->dir];
	u32 ackwin = ecnp_win_bytes(s);

	if (after(p->ack, r->maxend) && after(p->ack, r->end))
		return false;
	if (ackwin < ECNP_MAXACKWIN)
		ackwin = ECNP_MAXACKWIN;
	return !before(p->ack, r->end - ackwin);
}

/* ecnp_win_check() of a segment whose end (ecnp_seg_end()) is @end. */
static __always_inline bool ecnp_win_check_end(const struct ecnp_fsm *f,
					       const struct ecnp_pkt *p,
					       u32 end)
{
	const struct ecnp_win *s = &f->win[p->dir], *r = &f->win[!p->dir];
	u32 rwin;

	if ((s->wflags | r->wflags) & ECNP_WF_LIBERAL)
		return true;
	if (!(s->wflags & r->wflags & ECNP_WF_SEEN))
		return false;
	rwin = ecnp_win_bytes(r);
	if (after(p->seq, s->maxend) && after(end, s->maxend + rwin))
		return false;
	if (before(end, s->end - rwin))
		return false;
	return !(p->flags & ECNP_TCP_ACK) || ecnp_ack_check(f, p);
}

static bool ecnp_win_check(const struct ecnp_fsm *f, const struct ecnp_pkt *p)
{
	return ecnp_win_check_end(f, p, ecnp_seg_end(p));
}

/* A segment without SYN or RST may change the flow's state. */
static bool ecnp_seg_ok(const struct ecnp_fsm *f, const struct ecnp_pkt *p)
{
	/* the handshake's first ACK names the other side's SYN exactly */
	if ((f->state == ECNP_S_WAIT_ACK || f->state == ECNP_S_SIMOPEN) &&
	    (p->flags & ECNP_TCP_ACK) && !ecnp_acks_syn(f, p))
		return false;
	return ecnp_win_check(f, p);
}

/* ecnp_win_update() of a segment whose end (ecnp_seg_end()) is @end. */
static __always_inline void ecnp_win_update_end(struct ecnp_fsm *f,
						const struct ecnp_pkt *p,
						u32 end)
{
	struct ecnp_win *s = &f->win[p->dir], *r = &f->win[!p->dir];
	u32 edge;

	/* (a picked-up flow's too: which connection it is, ecnp_conn_id) */
	if ((p->flags & ECNP_TCP_ACK) && ecnp_fsm_in_phase2(f) &&
	    !ecnp_from_e(f, p) && after(p->ack, f->n_ack))
		f->n_ack = p->ack;
	if (!(s->wflags & r->wflags & ECNP_WF_SEEN))
		return;
	if (after(end, s->end))
		s->end = end;
	if (p->win > s->maxwin)
		s->maxwin = p->win;
	if (!(p->flags & ECNP_TCP_ACK))
		return;
	edge = p->ack + ecnp_win_shift(s, p->win) + !p->win;
	if (after(edge, r->maxend))
		r->maxend = edge;
}

/* An accepted segment without SYN or RST: conntrack's "update" part. */
static void ecnp_win_update(struct ecnp_fsm *f, const struct ecnp_pkt *p)
{
	ecnp_win_update_end(f, p, ecnp_seg_end(p));
}

/*
 * Whether a RST may close the flow.  While B's SYN-ACK is outstanding, A
 * is in SYN-SENT: a RST from B must ack A's SYN (RFC 793 3.9), one from A
 * must carry A's next sequence number.  Then RFC 5961 3.2: only a RST at
 * the sequence number its receiver expects next closes, i.e. the sender's
 * highest end (its snd_nxt, the receiver's rcv_nxt once everything
 * arrived), or the receiver's highest ACK (known in phase 2), or, after
 * the sender's FIN, the FIN's own (tcp_reset_check()).  One anywhere else
 * in the window only draws a challenge ACK from a Linux receiver.  Its
 * ACK number, if any (0 from broken stacks counts as none), must pass
 * bounds III and IV, as in conntrack.
 */
static bool ecnp_rst_ok(const struct ecnp_fsm *f, const struct ecnp_pkt *p)
{
	const struct ecnp_win *s = &f->win[p->dir], *r = &f->win[!p->dir];
	u32 rcv_nxt = s->end;

	if (f->state == ECNP_S_INIT ||
	    ((s->wflags | r->wflags) & ECNP_WF_LIBERAL))
		return true;
	if (!(f->win[ECNP_DIR_B].wflags & ECNP_WF_SEEN)) {
		if (p->dir == ECNP_DIR_B)
			return ecnp_acks_syn(f, p);
		return p->seq == s->end;
	}
	if ((p->flags & ECNP_TCP_ACK) && p->ack && !ecnp_ack_check(f, p))
		return false;
	if (ecnp_fsm_in_phase2(f))
		rcv_nxt = ecnp_from_e(f, p) ? f->n_ack : f->e_ack;
	if (p->seq == s->end || p->seq == rcv_nxt)
		return true;
	return (f->flags & ecnp_fin_bit(p->dir)) && p->seq == s->end - 1;
}

/*
 * A segment outside the window: no state changes and no edits, as if the
 * flow did not exist (FSM.md says why).
 */
static u32 ecnp_out_of_window(void)
{
	return ECNP_EV_OUT_OF_WINDOW;
}

static void ecnp_enter_phase2(struct ecnp_fsm *f)
{
	u32 n_isn = ecnp_fsm_e_is_a(f) ? f->b_isn : f->a_isn;

	f->state = ECNP_S_DEFAULT;
	f->n_nxt = n_isn + 1;
	f->recover = f->n_nxt;
	f->saved_ack = 0;
	f->dup_cnt = 0;
	f->hold_end = 0;
	f->rexmit_tsval = 0;
	f->hold_ack = 0;
	f->hold_win = 0;
	f->e_ack = f->n_nxt;	/* E's ACK of N's SYN */
	f->n_ack = (ecnp_fsm_e_is_a(f) ? f->a_isn : f->b_isn) + 1;
	f->e_hole_end = 0;
	f->e_rep = 0;
	f->clamp_end = 0;
	ecnp_clamp_off(f);
	f->clamp_fl = 0;
	f->flags &= ~(ECNP_FL_CWR_PENDING | ECNP_FL_IN_WINDOW);
	f->dflags &= ECNP_DF_SACK_A | ECNP_DF_SACK_B;
}

/*
 * A SYN the proxy must not touch: AccECN (AE set), or signed with TCP-MD5
 * or TCP-AO (the signature covers the header).  The flow passes (PASS).
 *
 * Return: the outcome events, or 0 if the SYN is ours.
 */
static u32 ecnp_syn_not_ours(struct ecnp_fsm *f, const struct ecnp_pkt *p)
{
	u32 ev = 0;

	if (p->flags & ECNP_TCP_AE)
		ev = ECNP_EV_OUT_PASS;
	else if (p->opt & ECNP_OPT_SIGNED)
		ev = ECNP_EV_OUT_PASS | ECNP_EV_SIGNED;
	if (ev)
		f->state = ECNP_S_PASS;
	return ev;
}

/* INIT: the first segment must be a SYN from A. */
static u32 ecnp_first(struct ecnp_fsm *f, const struct ecnp_pkt *p,
		      bool dst_no_upgrade)
{
	u32 ev;

	if (p->dir != ECNP_DIR_A || !ecnp_is_syn(p)) {
		/* no handshake seen: its windows are unknown */
		f->win[ECNP_DIR_A].wflags = ECNP_WF_LIBERAL;
		f->win[ECNP_DIR_B].wflags = ECNP_WF_LIBERAL;
		f->state = ECNP_S_PASS;
		return ECNP_EV_OUT_PASS;
	}
	f->a_isn = p->seq;
	ecnp_win_syn(f, p, true);
	ev = ecnp_syn_not_ours(f, p);
	if (ev)
		return ev;
	if (p->opt & ECNP_OPT_SACK_PERM)
		f->dflags |= ECNP_DF_SACK_A;
	if (dst_no_upgrade)
		f->flags |= ECNP_FL_NOUPG;
	if (ecnp_syn_ecn_setup(p)) {
		f->state = ECNP_S_A_C;
		return 0;
	}
	f->state = ECNP_S_A_NC;
	if (f->flags & ECNP_FL_NOUPG)
		return 0;
	f->hflags |= ECNP_HF_SYN_UP;
	return ecnp_edit_flags(p, true, true);
}

/* A SYN (no ACK) from A in any state but INIT. */
static u32 ecnp_syn_from_a(struct ecnp_fsm *f, const struct ecnp_pkt *p,
			   bool dst_no_upgrade)
{
	if (f->state == ECNP_S_CLOSED ||
	    (p->seq != f->a_isn && ecnp_fins_done(f))) {
		ecnp_fsm_init(f);
		return ecnp_first(f, p, dst_no_upgrade);
	}
	/* RFC 5961 4: no new SYN in a live connection */
	if (p->seq != f->a_isn)
		return ECNP_EV_OUT_OF_WINDOW;
	ecnp_win_syn(f, p, false);

	switch (f->state) {
	case ECNP_S_A_NC:
		if (!(f->hflags & ECNP_HF_SYN_UP))
			return 0;
		/*
		 * RFC 3168 6.1.1.1: let the retransmission through as is.
		 * Whether the path blocks ECN-setup SYNs is known only from
		 * B's SYN-ACK (ecnp_decide()): a lost SYN-ACK looks the same
		 * from here.
		 */
		f->hflags &= ~ECNP_HF_SYN_UP;
		f->flags |= ECNP_FL_NOUPG | ECNP_FL_FELLBACK;
		return 0;
	case ECNP_S_A_C:
		/*
		 * A fell back on its own (tcp_ecn_clear_syn()): no upgrade;
		 * B's answer decides (ecnp_decide()).
		 */
		if (!ecnp_syn_ecn_setup(p)) {
			f->state = ECNP_S_A_NC;
			f->flags |= ECNP_FL_NOUPG;
			f->hflags |= ECNP_HF_A_PLAIN_RTX;
		}
		return 0;
	default:
		/* Proxied, E = B: B accepted our upgraded SYN, keep its view. */
		if ((f->hflags & ECNP_HF_SYN_UP) && ecnp_fsm_proxied(f))
			return ecnp_edit_flags(p, true, true);
		return 0;
	}
}

/* Any SYN-ACK once roles are decided: re-apply the handshake edit. */
static u32 ecnp_synack_edit(const struct ecnp_fsm *f,
			    const struct ecnp_pkt *p)
{
	u32 act = 0;

	if (p->dir == ECNP_DIR_B) {
		if (f->hflags & ECNP_HF_SA_UP)
			act = ecnp_edit_flags(p, true, false);
		else if (f->hflags & ECNP_HF_SA_DOWN)
			act = ecnp_edit_flags(p, false, false);
	}
	if (ecnp_fsm_proxied(f) && ecnp_from_e(f, p) &&
	    p->ecn != ECNP_ECN_NOT_ECT)
		act |= ECNP_ACT_CLEAR_ECN;
	return act;
}

/*
 * A SYN-ACK once roles are decided: the same edit again, whatever its
 * ACK (it changes no state).  In WAIT_ACK a valid one from B with a new
 * ISN (SYN cookies) is the one A's ACK will name.
 */
static u32 ecnp_synack_again(struct ecnp_fsm *f, const struct ecnp_pkt *p)
{
	u32 act = ecnp_synack_edit(f, p);

	if (!ecnp_acks_syn(f, p))
		return act | ECNP_EV_OUT_OF_WINDOW;
	if (f->state == ECNP_S_WAIT_ACK && p->dir == ECNP_DIR_B &&
	    p->seq != f->b_isn) {
		f->b_isn = p->seq;
		ecnp_win_syn(f, p, true);
	}
	return act;
}

/* A_C or A_NC, first SYN-ACK from B: decide the roles. */
static u32 ecnp_decide(struct ecnp_fsm *f, const struct ecnp_pkt *p)
{
	bool a_c = f->state == ECNP_S_A_C;
	bool b_c = ecnp_synack_ecn_setup(p);

	f->b_isn = p->seq;
	ecnp_win_syn(f, p, true);
	if (p->opt & ECNP_OPT_SACK_PERM)
		f->dflags |= ECNP_DF_SACK_B;
	if (a_c && b_c) {
		f->state = ECNP_S_SAME;
		return ECNP_EV_OUT_BOTH;
	}
	if (!a_c && !b_c) {
		f->state = ECNP_S_SAME;
		/*
		 * Our upgraded SYN got no answer, the plain retransmission a
		 * plain one: the path may drop ECN-setup SYNs, remember B.
		 */
		if (f->flags & ECNP_FL_FELLBACK)
			return ECNP_EV_OUT_FALLBACK | ECNP_EV_SYN_FALLBACK;
		/* we did not or could not upgrade the SYN */
		if (!(f->hflags & ECNP_HF_SYN_UP))
			return ECNP_EV_OUT_FALLBACK;
		return ECNP_EV_OUT_NEITHER;
	}
	if (a_c) {
		if (f->flags & ECNP_FL_NOUPG) {
			f->state = ECNP_S_SAME;
			return ECNP_EV_OUT_FALLBACK;
		}
		f->flags |= ECNP_FL_E_IS_A;
		f->hflags |= ECNP_HF_SA_UP;
		f->state = ECNP_S_WAIT_ACK;
		return ecnp_synack_edit(f, p) | ECNP_EV_OUT_E_INIT;
	}
	if (f->hflags & ECNP_HF_A_PLAIN_RTX) {
		/* A asked for ECN, then fell back: let A see B's answer */
		f->state = ECNP_S_VERIFY;
		f->hold_end = 0;
		f->hold_ack = p->ack;
		return 0;
	}
	f->hflags |= ECNP_HF_SA_DOWN;
	f->state = ECNP_S_WAIT_ACK;
	return ecnp_synack_edit(f, p) | ECNP_EV_OUT_E_RESP;
}

/* A_C, A_NC: waiting for B's SYN-ACK. */
static u32 ecnp_wait_synack(struct ecnp_fsm *f, const struct ecnp_pkt *p,
			    bool dst_no_upgrade)
{
	/* (the cache's answer is latched from segments that count only) */
	if (ecnp_is_syn(p) && p->dir == ECNP_DIR_A) {
		if (dst_no_upgrade && p->seq == f->a_isn)
			f->flags |= ECNP_FL_NOUPG;
		return ecnp_syn_from_a(f, p, dst_no_upgrade);
	}
	if (ecnp_is_syn(p)) {
		/* simultaneous open: nothing to check a SYN against */
		if (dst_no_upgrade)
			f->flags |= ECNP_FL_NOUPG;
		f->b_isn = p->seq;
		ecnp_win_syn(f, p, true);
		f->state = ECNP_S_SIMOPEN;
		return ecnp_syn_not_ours(f, p);
	}
	if (!ecnp_is_synack(p) || p->dir != ECNP_DIR_B)
		return 0;
	if (!ecnp_acks_syn(f, p))
		return ECNP_EV_OUT_OF_WINDOW;
	if (dst_no_upgrade)
		f->flags |= ECNP_FL_NOUPG;
	return ecnp_decide(f, p);
}

static u32 ecnp_simopen_decide(struct ecnp_fsm *f)
{
	bool a = f->hflags & ECNP_HF_A_SA_ECN;
	bool b = f->hflags & ECNP_HF_B_SA_ECN;

	if (a == b) {
		f->state = ECNP_S_SAME;
		return a ? ECNP_EV_OUT_BOTH : ECNP_EV_OUT_NEITHER;
	}
	if (a)
		f->flags |= ECNP_FL_E_IS_A;
	ecnp_enter_phase2(f);
	return a ? ECNP_EV_OUT_E_INIT : ECNP_EV_OUT_E_RESP;
}

static u32 ecnp_phase2(struct ecnp_fsm *f, const struct ecnp_pkt *p,
		       enum ecnp_feedback mode, bool dst_no_upgrade);

/* SIMOPEN: collect each side's view from its SYN-ACK. */
static u32 ecnp_simopen(struct ecnp_fsm *f, const struct ecnp_pkt *p,
			enum ecnp_feedback mode, bool dst_no_upgrade)
{
	u8 seen, ecn;
	u32 ret;

	if (ecnp_is_syn(p)) {
		if (p->dir == ECNP_DIR_A)
			return ecnp_syn_from_a(f, p, dst_no_upgrade);
		return 0;
	}
	if (ecnp_is_synack(p)) {
		if (!ecnp_acks_syn(f, p))
			return ECNP_EV_OUT_OF_WINDOW;
		ecnp_win_syn(f, p, false);
		seen = p->dir == ECNP_DIR_A ? ECNP_HF_A_SA : ECNP_HF_B_SA;
		ecn = p->dir == ECNP_DIR_A ? ECNP_HF_A_SA_ECN : ECNP_HF_B_SA_ECN;
		if (f->hflags & seen)
			return 0;
		f->hflags |= seen;
		if (ecnp_synack_ecn_setup(p))
			f->hflags |= ecn;
		if (!(f->hflags & ECNP_HF_A_SA) || !(f->hflags & ECNP_HF_B_SA))
			return 0;
		ret = ecnp_simopen_decide(f);
		return ret | ecnp_synack_edit(f, p);
	}
	if (!(p->flags & ECNP_TCP_ACK))
		return 0;
	/* handshake over: a side whose SYN-ACK we missed counts as non-ECN */
	ret = ecnp_simopen_decide(f);
	if (ecnp_fsm_in_phase2(f))
		ret |= ecnp_phase2(f, p, mode, dst_no_upgrade);
	return ret;
}

/* --- dupack: the simulated loss ------------------------------------------ */

/* N negotiated SACK (both SYN and SYN-ACK offered it). */
static bool ecnp_sack_ok(const struct ecnp_fsm *f)
{
	return (f->dflags & (ECNP_DF_SACK_A | ECNP_DF_SACK_B)) ==
	       (ECNP_DF_SACK_A | ECNP_DF_SACK_B);
}

/*
 * End of the range the injected duplicates SACK: f->claimed segments
 * above L (ECNP_DUPACKS, or fewer when N had fewer in flight).
 */
static u32 ecnp_fake_end(const struct ecnp_fsm *f)
{
	return f->saved_ack + (1 + f->claimed) * (u32)f->smss;
}

/* N's full segments in flight beyond @ack. */
static u32 ecnp_flight_segs(const struct ecnp_fsm *f, u32 ack)
{
	return f->smss ? (f->n_nxt - ack) / f->smss : 0;
}

/*
 * N has enough in flight beyond @ack for a simulated loss there.  With
 * SACK also L alone, when it is exactly all N has sent beyond the ACK:
 * E's ACK of the segment N sends next, held, shows that segment SACKed
 * above L and RACK marks L lost (that segment left N about a round trip
 * after L).  A sender at Linux's floor of two segments has only L in
 * flight when E's ACK arrives (it sends the next on that ACK), and an
 * ECN sender there reduces, and stops growing, at each ECE.  Not when
 * part of a segment lies beyond L: a SACK block over part of a
 * single-segment packet is ignored (tcp_match_skb_to_sack()), RACK would
 * never fire, and N would wait for its RTO.  If N sends nothing more,
 * ecnp_hold_void() withdraws the signal.
 */
static bool ecnp_dupack_flight(const struct ecnp_fsm *f, u32 ack)
{
	if (!ecnp_sack_ok(f))
		return ecnp_flight_segs(f, ack) >= ECNP_DUPACK_MIN_FLIGHT;
	return f->n_nxt - ack == f->smss ||
	       ecnp_flight_segs(f, ack) >= ECNP_DUPACK_MIN_FLIGHT_SACK;
}

/* The ACK's TSecr predates N's retransmission: it would reveal the trick. */
static bool ecnp_tsecr_stale(const struct ecnp_fsm *f,
			     const struct ecnp_pkt *p)
{
	return (f->dflags & ECNP_DF_TS) && (p->opt & ECNP_OPT_TS) &&
	       before(p->tsecr, f->rexmit_tsval);
}

/* N's segment carries a TSval older than its retransmission of L. */
static bool ecnp_sent_before_rexmit(const struct ecnp_fsm *f,
				    const struct ecnp_pkt *p)
{
	return (f->dflags & ECNP_DF_TS) && (p->opt & ECNP_OPT_TS) &&
	       before(p->tsval, f->rexmit_tsval);
}

/*
 * N's data at @seq may not have passed the proxy yet: @seq is inside a
 * gap in N's stream (ecnp_n_track_gap()).
 */
static bool ecnp_n_gap_at(const struct ecnp_fsm *f, u32 seq)
{
	return (f->dflags & ECNP_DF_GAP) && !before(seq, f->n_gap) &&
	       before(seq, f->n_gap_end);
}

/*
 * A pure ACK from E on which the simulated loss can start: N has enough
 * segments in flight beyond it (ecnp_dupack_flight()), so the segment L
 * at the ACK number can be shown lost with the segments (S)ACKed above it.
 *
 * With SACK one segment SACKed above L is enough: RACK marks L lost when
 * a segment sent after it is delivered (tcp_rack_detect_loss(), after a
 * quarter of min_rtt while fewer than three are SACKed), and that segment
 * may be the one N sends on this very ACK.  Asking for more in flight
 * left a sender at a small window (10 Mbit/s, a few ms of RTT: 2-4
 * segments) without a signal for most marked round trips, and at Linux's
 * floor of two segments (one in flight when E's ACK arrives) without
 * any, while an ECN sender beside it reduced, and stopped growing, at
 * every one: the proxied sender took more than its share (DUPACK.md,
 * "Findings behind the rules", 1).  Without SACK the
 * duplicates themselves must reach the dupthresh, and a Reno sender
 * believes no more of them than it has segments beyond L
 * (tcp_add_reno_sack()).
 */
static bool ecnp_dupack_ready(const struct ecnp_fsm *f,
			      const struct ecnp_pkt *p, bool advanced)
{
	/*
	 * Only on an ACK that advances E's ACK number (@advanced: after the
	 * newest one E sent, not beyond what N sent):
	 *  - an older one (two CPUs can forward E's ACKs out of order) N
	 *    would ignore, the duplicates and every ACK held at its number
	 *    with it: a freeze (seen in the 200 MB run, N in RTO back-off);
	 *  - a repeated one is a duplicate ACK N has already counted (without
	 *    SACK the only sign of a hole at E): three more would show N more
	 *    duplicates than segments delivered.
	 * Nor on one that reports a hole with SACK (a block above its ACK
	 * number): N reads the hole from it and may retransmit more than L,
	 * data E may still receive (reordering) or that was lost (N's own
	 * recovery repairs it).  The signal waits for the next suitable ACK.
	 *
	 * Nor on an ACK at a gap in N's stream at the proxy: L was delayed
	 * on its way to the proxy (two CPUs in N's host), later segments
	 * passed it and E acked up to it.  E does not have L, and the first
	 * copy of L the proxy would see, and suppress, is the original
	 * (proxy_dupack: N's fast retransmit then ended the hold, went out
	 * Not-ECT into RED and was dropped; N waited for its RTO).  Without
	 * SACK nothing else shows it: E's ACK advanced to L.
	 *
	 * Nor on an ACK whose TSecr predates N's retransmission in the
	 * previous event (typically the ACK that ends its hold): its TSecr
	 * must be raised or N undoes that reduction (Eifel,
	 * tcp_try_undo_recovery()), and an ACK that is copied goes out as E
	 * sent it, so that its copies are exact duplicates.  E's next ACKs
	 * echo segments sent after that retransmission.
	 */
	return advanced && !p->len && f->smss &&
	       !(p->opt & (ECNP_OPT_SACK | ECNP_OPT_DSACK)) &&
	       !(f->dflags & ECNP_DF_HOLD) && !f->e_rep &&
	       !ecnp_n_gap_at(f, p->ack) && !ecnp_tsecr_stale(f, p) &&
	       ecnp_dupack_flight(f, p->ack);
}

/*
 * E's window field that lets N have @segs segments in flight beyond E's
 * ACK number: rounded up to E's units (a window that ends inside a
 * segment would hold N's last segment back); at least 1, as smss is.
 * Neither rounding is exact with a scaled window: Linux fills a window to
 * its edge (tcp_mss_split_point()), so rounded up N sends a segment of
 * less than a unit after its full ones in many rounds, and rounded down
 * its round's last segment is short and Nagle holds the next short one
 * until it is acked: N sends less still (DUPACK.md, "Partial segments").
 */
static u16 ecnp_clamp_units(const struct ecnp_fsm *f,
			    const struct ecnp_win *w, u32 segs)
{
	return ecnp_win_units(w, segs * (u32)f->smss);
}

/*
 * dupack-rwnd: the floor.  An ACK from E on which N has at most one
 * segment in flight beyond it: N's window is Linux's floor of two (it
 * sends the next segment on this ACK).  An ECN sender there reduces
 * nothing, keeps two segments in flight and does not grow for about a
 * round trip (CWR, tcp_cong_control()).  A simulated loss costs N more:
 * a round trip with a retransmission outstanding and PRR's window at one
 * (DUPACK.md, "The floor of two segments").  With two beyond the ACK
 * (a window of three) N gets the simulated loss, as in dupack.  Only
 *  - with SACK (the rule is measured only there);
 *  - with E's window scale known from the handshake (not a flow picked
 *    up mid-stream, whose windows are liberal): else the clamp's units
 *    would be wrong;
 *  - when the clamp is below three segments, which a window scale of 13
 *    or 14 does not allow (units of 8-16 KiB): there the simulated loss
 *    (so that E's units are less than a segment, and a clamp of k
 *    segments is less than k + 1);
 *  - on an ACK that advances E's ACK number (an older one N ignores) and
 *    leaves some of N's data in flight: N is sending, not idle (see
 *    ecnp_clamp_step() for why the clamp ends when E has acked all);
 *  - after N's first simulated loss (ECNP_CF_CA): before it, N may still
 *    be in slow start, whose cwnd grows whenever it is less than twice
 *    the flight (tcp_is_cwnd_limited()), clamped or not, and the clamp's
 *    end would release all of it;
 *  - when N had at most ECNP_CLAMP_MAX_SEGS in flight since the last
 *    event (its peak: an N with little in flight now but more before,
 *    app-limited or after a burst, has a larger window, which the clamp
 *    starts from, ecnp_start_clamp()).
 */
static bool ecnp_floor_ready(const struct ecnp_fsm *f,
			     const struct ecnp_pkt *p, bool advanced)
{
	const struct ecnp_win *w = &f->win[p->dir];

	return advanced && f->smss && ecnp_sack_ok(f) &&
	       (f->clamp_fl & ECNP_CF_CA) &&
	       ecnp_n_peak(f) <= ECNP_CLAMP_MAX_SEGS &&
	       !(f->dflags & ECNP_DF_HOLD) &&
	       !(w->wflags & ECNP_WF_LIBERAL) && after(f->n_nxt, p->ack) &&
	       f->n_nxt - p->ack <= f->smss &&
	       ecnp_win_shift(w, ecnp_clamp_units(f, w, ECNP_FLOOR_SEGS)) <
	       (ECNP_FLOOR_SEGS + 1) * (u32)f->smss;
}

/* The clamp at @segs segments (E's window side is @w). */
static void ecnp_clamp_set(struct ecnp_fsm *f, const struct ecnp_win *w,
			   u32 segs)
{
	f->clamp_segs = segs;
	f->clamp_win = ecnp_clamp_units(f, w, segs);
}

/*
 * The emulated sender enters CWR (RFC 3168 6.1.2, tcp_enter_cwr()): its
 * window is set now and does not grow until E acks all N has sent so far
 * (Linux's high_seq).
 */
static void ecnp_clamp_cwr(struct ecnp_fsm *f, const struct ecnp_pkt *p,
			   u32 segs)
{
	ecnp_clamp_set(f, &f->win[p->dir], segs);
	f->clamp_fl = (f->clamp_fl & ~ECNP_CF_ROUND) | ECNP_CF_CWR;
	f->clamp_end = f->n_nxt;
}

/*
 * An ECN sender's window after ECE at a window of @segs: CUBIC's, Linux's
 * default (beta 717/1024, bictcp_recalc_ssthresh()), ECNP_FLOOR_SEGS at
 * least (tcp_cwnd_min()).
 */
static u32 ecnp_ecn_reduced(u32 segs)
{
	return max_t(u32, segs * 717u >> 10, ECNP_FLOOR_SEGS);
}

/*
 * dupack-rwnd: the event's answer at the floor.  Instead of a loss, E's
 * window toward N is clamped to the window an ECN sender would have:
 * the reduction of N's peak flight since the last event (at the floor,
 * ECNP_FLOOR_SEGS), then what ecnp_clamp_step() and ecnp_clamp_reduce()
 * make of it.  N's own cwnd may grow while it is clamped (at a cwnd
 * equal to the clamp it is cwnd-limited), but that window is never used:
 * the clamp holds N's flight to the emulated sender's until N's own
 * window is the smaller one (DUPACK.md, "dupack-rwnd").
 */
static void ecnp_start_clamp(struct ecnp_fsm *f, const struct ecnp_pkt *p)
{
	ecnp_clamp_cwr(f, p, ecnp_ecn_reduced(ecnp_n_peak(f)));
}

/*
 * dupack-rwnd: a congestion event while clamped.  The emulated sender
 * reduces (ecnp_ecn_reduced()) and enters CWR.  No loss is simulated:
 * N's flight is already the emulated sender's.
 */
static void ecnp_clamp_reduce(struct ecnp_fsm *f, const struct ecnp_pkt *p)
{
	ecnp_clamp_cwr(f, p, ecnp_ecn_reduced(f->clamp_segs));
}

/*
 * The ACKs, in segments, that grow the emulated sender's window of @segs
 * by one outside CWR: CUBIC at these windows and round trips of a few ms
 * is in its Reno-friendly region (bictcp_update(), tcp_friendliness),
 * where it grows by one segment per @segs * 15 / 8 segments acked
 * (beta_scale: 8 * (1024 + 3 * 717) / 3 / (1024 - 717) = 15), rounded up.
 */
static u32 ecnp_clamp_round(u32 segs)
{
	return (segs * 15 + 7) / 8;
}

/*
 * N->E: N's data reached the clamp's edge (no room for another segment
 * of its size beyond E's latest ACK): N's own window is at least the
 * clamp's in this round.
 */
static void ecnp_clamp_note_n(struct ecnp_fsm *f, const struct ecnp_pkt *p)
{
	const struct ecnp_win *w = &f->win[!p->dir];

	if (f->clamp_win &&
	    after(f->n_nxt + f->smss, f->e_ack + ecnp_win_shift(w, f->clamp_win)))
		f->clamp_fl |= ECNP_CF_FILLED;
}

/*
 * E->N: the clamp's edit of this ACK, its next round, or its end.  When E
 * acks clamp_end, a round of the emulated sender is over: after CWR its
 * window stays; after a round of growth it has one segment more if N
 * filled the clamp in that round, and the clamp ends if N did not (N's
 * own window is then the smaller one and governs) or if it would pass
 * ECNP_CLAMP_MAX_SEGS (there a loss costs N no more than CWR costs an
 * ECN sender: dupack's simulated loss takes over).  The clamp also ends
 * when a simulated loss starts (its hold sets the window N sees), when
 * the mode is switched, with phase 2, when E acks N's FIN (N sends
 * nothing more, and E's data would carry the clamp to the end), and when
 * E acks all N has sent while the clamp's room is less than
 * ECNP_CLAMP_MIN_ROOM.  Only a
 * window larger than the clamp is edited, and never a SYN's or RST's.
 *
 * That last end keeps N from waiting for a window probe: smss is the
 * largest segment N has sent so far, and a segment larger than the
 * clamp's room (tcp_snd_wnd_test() wants a whole one) would not go out
 * while nothing of N's is in flight.  With something in flight, E's ACK
 * of it comes and N sends within the room; with a room of a full
 * segment of any 1500-byte path nothing waits either.  At two segments
 * E's delayed ACK acks all N sent every other ACK: were the clamp to end
 * there, it would hardly last (measured: about one clamped ACK per
 * event, fairness-rtt0-rwnd-20261204-4).
 */
static u32 ecnp_clamp_step(struct ecnp_fsm *f, const struct ecnp_pkt *p,
			   enum ecnp_feedback mode)
{
	const struct ecnp_win *w = &f->win[p->dir];
	u32 segs = f->clamp_segs;

	if (!f->clamp_win || !(p->flags & ECNP_TCP_ACK) ||
	    (p->flags & (ECNP_TCP_SYN | ECNP_TCP_RST)))
		return 0;
	if (mode != ECNP_FB_DUPACK_RWND || (f->dflags & ECNP_DF_HOLD) ||
	    (!before(p->ack, f->n_nxt) &&
	     ((f->flags & ecnp_fin_bit(!p->dir)) ||
	      ecnp_win_shift(w, f->clamp_win) < ECNP_CLAMP_MIN_ROOM))) {
		ecnp_clamp_off(f);
		return 0;
	}
	if (!before(p->ack, f->clamp_end)) {
		if (!(f->clamp_fl & ECNP_CF_CWR)) {
			if (!(f->clamp_fl & ECNP_CF_FILLED) ||
			    segs >= ECNP_CLAMP_MAX_SEGS) {
				ecnp_clamp_off(f);
				return 0;
			}
			segs++;
		}
		ecnp_clamp_set(f, w, segs);
		f->clamp_fl &= ~ECNP_CF_ROUND;
		f->clamp_end = p->ack + ecnp_clamp_round(segs) * (u32)f->smss;
	}
	return p->win > f->clamp_win ? ECNP_ACT_CLAMP_WIN : 0;
}

/*
 * A hole at E, without SACK (with SACK, E's blocks show it, and
 * ecnp_dupack_ready() refuses ACKs that carry them).  A pure ACK from E
 * that repeats its newest ACK number while N has data beyond it says that
 * a later segment reached E first: reordering, or a real loss that N
 * repairs itself (after ECNP_DUPACKS of them, its fast retransmit).  Until
 * E acks all N had sent by its last repeat, an ACK that advances E's ACK
 * number may be a partial ACK whose next segment E lacks too: lost in the
 * same burst, or delayed and then discarded by PAWS behind a
 * retransmission with a newer TSval (seen in proxy_dupack, CUBIC without
 * SACK).  A simulated loss at such an ACK suppresses the one
 * retransmission E needs, and N waits for its RTO.
 * So no simulated loss starts inside the hole (ecnp_dupack_ready()).
 */
static void ecnp_e_track_hole(struct ecnp_fsm *f, const struct ecnp_pkt *p,
			      bool advanced)
{
	if (!(p->flags & ECNP_TCP_ACK))
		return;
	if (advanced) {
		if (f->e_rep && !before(p->ack, f->e_hole_end))
			f->e_rep = 0;
		return;
	}
	if (p->ack != f->e_ack || p->len || !before(p->ack, f->n_nxt) ||
	    (p->flags & (ECNP_TCP_SYN | ECNP_TCP_FIN | ECNP_TCP_RST)))
		return;
	f->e_hole_end = f->n_nxt;
	if (f->e_rep != 0xff)
		f->e_rep++;
}

/*
 * A gap in N's stream at the proxy: N's segment [@p->seq, @end) starts
 * beyond n_nxt, so [n_nxt, @p->seq) has not been seen (yet): it was
 * delayed before the proxy (two CPUs in N's host can send one flow's
 * segments out of order) or lost there.  The gap is [n_gap, n_gap_end):
 * a segment that covers its start fills it up to the segment's end, and
 * E acking into it shows that it has that much (E got it through the
 * proxy); it is closed when its end is reached.  One delayed segment, or
 * one GSO packet, is tracked exactly.  A gap that opens while one is open
 * is merged with it, up to the new one's end: the data seen between them
 * then counts as missing too, until E acks past it (a signal deferred,
 * never one at a segment the proxy lacks).
 */
static void ecnp_n_track_gap(struct ecnp_fsm *f, const struct ecnp_pkt *p,
			     u32 end)
{
	if (after(p->seq, f->n_nxt)) {
		if (!(f->dflags & ECNP_DF_GAP)) {
			f->n_gap = f->n_nxt;
			f->dflags |= ECNP_DF_GAP;
		}
		f->n_gap_end = p->seq;
		return;
	}
	if (!(f->dflags & ECNP_DF_GAP) || after(p->seq, f->n_gap) ||
	    !after(end, f->n_gap))
		return;
	f->n_gap = end;
	if (!before(f->n_gap, f->n_gap_end))
		f->dflags &= ~ECNP_DF_GAP;
}

/* E acked up to @ack: it got all below through the proxy. */
static void ecnp_e_track_gap(struct ecnp_fsm *f, u32 ack)
{
	if (!(f->dflags & ECNP_DF_GAP) || !after(ack, f->n_gap) ||
	    after(ack, f->n_nxt))
		return;
	f->n_gap = ack;
	if (!before(f->n_gap, f->n_gap_end))
		f->dflags &= ~ECNP_DF_GAP;
}

/*
 * The once-per-window guard from the signal on (RFC 3168 6.1.2): N reduces
 * its window when it is given the signal, not when E's ECE arrived, and a
 * signal may stay pending (ecnp_dupack_ready()) until E's ACK has passed
 * the recover point the ECE set, which would then let the ECE on the ACK
 * that ends this event's hold start the next one inside N's recovery.
 */
static void ecnp_window_from_signal(struct ecnp_fsm *f)
{
	/* dupack-rwnd: N's peak flight is counted anew from each event */
	f->clamp_fl &= ~ECNP_CF_PEAK;
	f->flags |= ECNP_FL_IN_WINDOW;
	if (after(f->n_nxt, f->recover))
		f->recover = f->n_nxt;
}

static void ecnp_start_hold(struct ecnp_fsm *f, const struct ecnp_pkt *p)
{
	f->clamp_fl |= ECNP_CF_CA;
	f->saved_ack = p->ack;
	f->hold_win = p->win;
	f->hold_end = f->n_nxt;
	f->rexmit_tsval = 0;
	f->hold_ack = p->ack;
	f->dup_cnt = 0;
	if (ecnp_sack_ok(f)) {
		/*
		 * With SACK nothing is injected: E's own next ACKs, held at
		 * L, show N E's real progress as SACK.  Claimed blocks would
		 * cover segments N sent just before this ACK, and Linux takes
		 * an RTT sample from every newly SACKed segment: N's min_rtt,
		 * and RACK's reordering window with it, would collapse
		 * (DUPACK.md, "Defects found on 2026-11-27").
		 */
		f->dup_shown = 0;
		f->claimed = 0;
	} else {
		f->dup_shown = ECNP_DUPACKS;
		f->claimed = min_t(u32, ecnp_flight_segs(f, p->ack) - 1,
				   ECNP_DUPACKS);
	}
	f->dflags = (f->dflags & (ECNP_DF_SACK_A | ECNP_DF_SACK_B |
				  ECNP_DF_GAP)) | ECNP_DF_HOLD;
	ecnp_window_from_signal(f);
}

/*
 * Without SACK every duplicate ACK counts as one more segment delivered
 * (tcp_add_reno_sack()).  The injected duplicates already claimed three
 * segments above L, and E's ACKs for those same segments would claim them
 * again.  A sender shown more duplicates than it has segments in flight
 * beyond the hole takes it for reordering (tcp_check_reno_reordering():
 * tp->reordering := packets_out): its dupthresh is then a whole window for
 * the rest of the connection, and the next simulated losses need more
 * duplicates than it ever gets (RTOs).  So N is shown exactly one
 * duplicate per segment E has acked above L: a held ACK that advances E's
 * ACK is shown, followed by copies of itself, until N has been shown as
 * many duplicates as E has acked segments above L (at most
 * 1 + ECNP_ACT_COPIES_MAX per ACK, the rest with E's next ACK); one that
 * brings nothing new carries nothing N needs (its ACK number and window
 * are held) and is absorbed.
 *
 * One duplicate per segment, not one per ACK: E acks every other segment
 * (delayed ACKs), and a sender whose dupthresh grew with reordering in
 * its own host (tp->reordering 5-8 in proxy_dupack, CUBIC without SACK)
 * was shown half as many duplicates as segments delivered.  Each lets a
 * Reno sender send one segment, so its flight ran out before it reached
 * its dupthresh: it never retransmitted L nor reduced its window, for
 * nearly half the events (DUPACK.md, "Findings behind the rules", 2),
 * while an ECN sender reduces at every one.  One per segment keeps its
 * flight, and PRR sees what was delivered, as with SACK.
 *
 * An ACK that E repeats is different: a segment reached E above a hole
 * (reordering, or a real loss that only N can repair).  It is shown while
 * N still has more segments in flight beyond L than duplicates, so that N
 * keeps sending and E keeps repeating until the hold gives up
 * (ECNP_HOLE_ACKS); absorbed, it could leave N with nothing to send on and
 * nothing to hear until its RTO.
 *
 * Return: the duplicates this ACK stands for (itself and its copies), 0
 * if it is to be absorbed.
 */
static u32 ecnp_dupacks_due(struct ecnp_fsm *f, const struct ecnp_pkt *p)
{
	u32 above = 0, n;

	if (f->dup_cnt) {
		if ((u32)f->dup_shown + 2 >
		    ecnp_flight_segs(f, f->saved_ack))
			return 0;
		n = 1;
	} else {
		if (after(p->ack, f->saved_ack + f->smss))
			above = (p->ack - f->saved_ack) / f->smss - 1;
		if (above <= f->dup_shown)
			return 0;
		n = min_t(u32, above - f->dup_shown, 1 + ECNP_ACT_COPIES_MAX);
	}
	f->dup_shown = min_t(u32, (u32)f->dup_shown + n, 0xff);
	return n;
}

/*
 * Without SACK, after the hold was given up (ecnp_give_up(), N's second
 * copy of L, a GSO copy that could not be dropped) while E's ACK is still
 * at L: each pure ACK of E at L is one more duplicate to N, on top of the
 * ones it has been shown, and E sends one for every segment above its
 * hole, the first of which the injected duplicates already stood for.
 * Shown all, N counts more duplicates than segments in flight and raises
 * its dupthresh to a window (tcp_check_reno_reordering(), TCPRenoReorder
 * and tp->reordering 111 in proxy_dupack), after which no simulated loss
 * works.  So one is shown only when E has sent more duplicates of L
 * (dup_cnt, counted in the hold too: segments delivered above L) than N
 * has been shown, and N has more segments in flight beyond L than that
 * (as for E's repeats in the hold, ecnp_dupacks_due()); a partial ACK
 * then finds no more duplicates than segments delivered above it either
 * (tcp_remove_reno_sacks()).  Until E's ACK passes L.  @count: the hold
 * did not count this ACK already.
 *
 * Return: true if the ACK is to be absorbed.
 */
static bool ecnp_absorb_after_abort(struct ecnp_fsm *f,
				    const struct ecnp_pkt *p, bool count)
{
	if (!(f->dflags & ECNP_DF_ABORTED))
		return false;
	if (after(f->e_ack, f->saved_ack)) {
		f->dflags &= ~ECNP_DF_ABORTED;
		return false;
	}
	if (ecnp_sack_ok(f) || !f->smss || !(p->flags & ECNP_TCP_ACK) ||
	    p->len || p->ack != f->saved_ack ||
	    (p->flags & (ECNP_TCP_FIN | ECNP_TCP_SYN | ECNP_TCP_RST)))
		return false;
	if (count && f->dup_cnt != 0xff)
		f->dup_cnt++;
	if (f->dup_shown >= f->dup_cnt ||
	    (u32)f->dup_shown + 2 > ecnp_flight_segs(f, f->saved_ack))
		return true;
	f->dup_shown++;
	return false;
}

/*
 * The edit of an ACK that ends a hold, or comes after it: a TSecr older
 * than N's suppressed retransmission, and with SACK a D-SACK once N's
 * retransmission of L was seen (E's D-SACK for the byte of it that went
 * on, ecnp_rexmit_trim(), is left out: ecnp_fsm_ack_edit()), until the
 * next event.  Either would undo N's reduction.  Called before the hold
 * is cleared: the options count only where they are read
 * (ecnp_fsm_wants_opts()).
 */
static u32 ecnp_fixup(const struct ecnp_fsm *f, const struct ecnp_pkt *p)
{
	bool dsack = ecnp_sack_ok(f) &&
		     (f->dflags & (ECNP_DF_HOLD | ECNP_DF_TS |
				   ECNP_DF_REXMIT)) &&
		     (p->opt & ECNP_OPT_DSACK);

	if (dsack)
		return ECNP_ACT_SET_TSECR | ECNP_ACT_NO_DSACK;
	return ecnp_tsecr_stale(f, p) ? ECNP_ACT_SET_TSECR : 0;
}

/* A real loss the hold would hide: stop holding and suppressing. */
static u32 ecnp_give_up(struct ecnp_fsm *f, const struct ecnp_pkt *p)
{
	f->dflags &= ~ECNP_DF_HOLD;
	f->dflags |= ECNP_DF_REXMIT | ECNP_DF_ABORTED;
	return ECNP_EV_DUPACK_ABORT |
	       (ecnp_tsecr_stale(f, p) ? ECNP_ACT_SET_TSECR : 0);
}

/*
 * Without SACK, a held pure ACK (no FIN, SYN or RST) is counted in
 * dup_shown with its copies (ecnp_dupacks_due()); other held ACKs are not.
 */
static bool ecnp_hold_counts(const struct ecnp_fsm *f,
			     const struct ecnp_pkt *p)
{
	return !ecnp_sack_ok(f) && !p->len &&
	       !(p->flags & (ECNP_TCP_FIN | ECNP_TCP_SYN | ECNP_TCP_RST));
}

/*
 * E acked all N had sent when it retransmitted: N's recovery ends.
 * Not before that retransmission was seen (N may need more duplicates
 * than three, its dupthresh grows with reordering): released, it
 * would reach E as a duplicate.
 *
 * Without SACK, unless E acked everything N sent: holding that would
 * only stall N until its RTO (its dupthresh may exceed the duplicates
 * it was shown).  With SACK, never before the retransmission: the
 * held ACK shows everything above L SACKed, so RACK retransmits L
 * once its reordering window (a quarter of min_rtt, rounded up to
 * jiffies) has passed, and that copy (its first byte, ecnp_rexmit_trim())
 * ends the hold.  Released first, N
 * either took no loss at all (its RACK timer had not fired) or took
 * one and undid it at once: this ACK's TSecr predates N's
 * retransmission, and the proxy has not seen it yet to clear that
 * TSecr (DUPACK.md, "Findings behind the rules", 3).
 */
static bool ecnp_hold_over(const struct ecnp_fsm *f, const struct ecnp_pkt *p)
{
	return !before(p->ack, f->hold_end) &&
	       ((f->dflags & ECNP_DF_REXMIT) ||
		(!before(p->ack, f->n_nxt) && !ecnp_sack_ok(f)));
}

/*
 * E SACKs data N sent after its suppressed retransmission (beyond
 * hold_end; a hole below it is reordering or a real loss).  Shown to
 * N, RACK would take the retransmission of L for lost (a later
 * transmission was delivered) and send L again, a duplicate at E.
 * If E has L and the retransmission was suppressed, end the hold: N
 * sees its retransmission acked and the hole as it is.  If not, the
 * held ACK leaves those blocks out.
 *
 * So does any hole at E above the claimed range once L's copy was
 * suppressed, blocks below hold_end too: shown in a held ACK, RACK
 * marks the hole's segments lost and N retransmits them after L;
 * E's next ACK SACKs the hole (the originals were only reordered
 * behind the proxy), RACK takes that for the delivery of those
 * retransmissions, sent after L's, and sends L again
 * (DUPACK.md, "Findings behind the rules", 4).
 * That ACK can pass the proxy before N's retransmission of the hole
 * does (ecnp_rexmit_above_l() is too late then).  Released, N sees
 * L acked first.  Not while E's ACK lies inside the claimed range:
 * N would read it as reneging (ecnp_give_up() counts those).
 */
static bool ecnp_hold_sack_ends(const struct ecnp_fsm *f,
				const struct ecnp_pkt *p)
{
	return ecnp_sack_ok(f) && (f->dflags & ECNP_DF_REXMIT) &&
	       (p->opt & ECNP_OPT_SACK) && after(p->ack, f->saved_ack) &&
	       (after(p->sack_high, f->hold_end) ||
		!before(p->ack, ecnp_fake_end(f)));
}

/*
 * Without SACK, N learns of a real loss below hold_end only from E's
 * duplicate ACKs, which the hold hides: when E repeats its ACK, give
 * up (N then sees a partial ACK and retransmits the real hole).
 */
static u32 ecnp_hold_no_sack(struct ecnp_fsm *f, const struct ecnp_pkt *p)
{
	u32 n;

	if (p->ack != f->hold_ack) {
		f->hold_ack = p->ack;
		f->dup_cnt = 0;
	} else if (++f->dup_cnt >= ECNP_HOLE_ACKS) {
		return ecnp_give_up(f, p);
	}
	if (!ecnp_hold_counts(f, p))
		return ECNP_ACT_HOLD_ACK;
	n = ecnp_dupacks_due(f, p);
	if (!n)
		return ECNP_ACT_DROP | ECNP_EV_ACK_ABSORBED;
	return ECNP_ACT_HOLD_ACK | ECNP_ACT_COPIES(n - 1);
}

/*
 * With SACK, before N's retransmission: E acks all N has sent, and that is
 * no more than L (the simulated loss started with L alone in flight and N
 * has sent nothing since).  Nothing above L can be shown SACKed, so RACK
 * would never mark L lost: held, this ACK would leave N waiting for its
 * loss probe (with one segment out two RTTs plus 200 ms, TCP_RTO_MIN).
 * The signal is withdrawn before N was shown a loss: this ACK goes on
 * with E's ACK number (the post-hold edits of ecnp_fixup(), ECE cleared
 * as on every ACK toward N) and the signal is pending again.  N has sent
 * no new data since the signal, so the CWR toward E is still pending: it
 * is taken back with it.
 */
static bool ecnp_hold_void(const struct ecnp_fsm *f, const struct ecnp_pkt *p)
{
	return ecnp_sack_ok(f) && !(f->dflags & ECNP_DF_REXMIT) &&
	       !before(p->ack, f->n_nxt) &&
	       !after(p->ack, f->saved_ack + f->smss);
}

/*
 * An E->N ACK while the simulated loss is in progress.  *@signal: a
 * signal is pending (set again when the hold is withdrawn).
 */
static u32 ecnp_hold(struct ecnp_fsm *f, const struct ecnp_pkt *p,
		     bool *signal)
{
	u32 n;

	if (ecnp_hold_void(f, p)) {
		n = ecnp_fixup(f, p);
		f->dflags &= ~ECNP_DF_HOLD;
		f->flags &= ~(ECNP_FL_IN_WINDOW | ECNP_FL_CWR_PENDING);
		*signal = true;
		return n | ECNP_EV_SIGNAL_WITHDRAWN;
	}
	if (ecnp_hold_over(f, p)) {
		/*
		 * Released before N's retransmission (without SACK): N may
		 * still send that copy, already on its way or decided on
		 * before this ACK reaches it; E has L, so it is dropped
		 * (ecnp_late_rexmit()), not delivered as a duplicate.
		 */
		if (!(f->dflags & ECNP_DF_REXMIT)) {
			/* this ACK may start the next event: keep L */
			f->dflags |= ECNP_DF_LATE;
			f->hold_ack = f->saved_ack;
		}
		n = ecnp_fixup(f, p);
		f->dflags &= ~ECNP_DF_HOLD;
		return n;
	}
	/* older than what N has seen: leave it alone */
	if (before(p->ack, f->saved_ack))
		return 0;
	if (ecnp_hold_sack_ends(f, p)) {
		n = ecnp_fixup(f, p);
		f->dflags &= ~ECNP_DF_HOLD;
		return n;
	}
	if (!ecnp_sack_ok(f) && !p->len)
		return ecnp_hold_no_sack(f, p);
	/*
	 * E keeps reporting a hole (SACK blocks above its ACK) inside the
	 * range the duplicates claimed: a real loss there, which N must
	 * repair itself but never will, as it believes that data SACKed.
	 * Give up: E's ACKs go through as they are (N reads the SACKed data
	 * as reneged and retransmits) and N's retransmissions are no longer
	 * suppressed.  One or two such ACKs are reordering.
	 */
	if (ecnp_sack_ok(f) && (p->opt & ECNP_OPT_SACK) &&
	    before(p->ack, ecnp_fake_end(f)) &&
	    ++f->dup_cnt >= ECNP_HOLE_ACKS)
		return ecnp_give_up(f, p);
	return ECNP_ACT_HOLD_ACK;
}

/*
 * N's clock at its retransmission of L: E's ACKs echoing older segments
 * get their TSecr cleared (ecnp_tsecr_stale()).
 */
static void ecnp_note_rexmit_ts(struct ecnp_fsm *f, const struct ecnp_pkt *p)
{
	if (p->opt & ECNP_OPT_TS) {
		f->rexmit_tsval = p->tsval;
		f->dflags |= ECNP_DF_TS;
	}
}

/* N's retransmission of L after a release that came first (E acked L). */
static bool ecnp_late_rexmit(const struct ecnp_fsm *f,
			     const struct ecnp_pkt *p)
{
	return (f->dflags & ECNP_DF_LATE) && p->len &&
	       p->seq == f->hold_ack && !after(p->seq + p->len, f->e_ack) &&
	       !(p->flags & (ECNP_TCP_SYN | ECNP_TCP_RST | ECNP_TCP_FIN));
}

/*
 * N's first retransmission of L during the simulated loss (E got L).
 * Never a copy that fills a gap in N's stream at the proxy: that may be
 * the original of L, which E does not have (ecnp_dupack_ready() does not
 * start a simulated loss there; this holds whatever started it).
 */
static bool ecnp_rexmit_to_suppress(const struct ecnp_fsm *f,
				    const struct ecnp_pkt *p)
{
	return (f->dflags & (ECNP_DF_HOLD | ECNP_DF_REXMIT)) == ECNP_DF_HOLD &&
	       p->len && p->seq == f->saved_ack && before(p->seq, f->n_nxt) &&
	       !(p->flags & (ECNP_TCP_SYN | ECNP_TCP_RST)) &&
	       !ecnp_n_gap_at(f, p->seq);
}

/*
 * What goes on of N's suppressed retransmission of L: its first byte, ECT
 * (ECNP_ACT_TRIM).  Dropping it whole left E nothing to answer: E had
 * received everything in order, so it acked every second segment as
 * usual, and N, whose pipe still counted the dropped copy, could be left
 * with one segment in flight.  E then held its ACK for its delayed-ACK
 * timer (40 ms or more, Linux's TCP_DELACK_MIN) while N sent nothing
 * (DUPACK.md, step 3).  A byte E
 * already has is a duplicate: Linux answers it at once with its
 * cumulative ACK and a D-SACK and enters quick-ACK mode
 * (tcp_send_dupack()); it reaches E behind everything N sent before the
 * retransmission, so that ACK ends the hold one round trip after it, as
 * for a real loss, at the cost of one small segment.  So also when E has
 * acked all N had sent (the held ACK N reacted to acked everything, as at
 * a window of two segments): no other ACK of E's would end the hold
 * unless N sent more, and E's answer to the byte does, as its answer to
 * a whole copy would, without a segment's worth of the bottleneck spent
 * on data E has.  ECT(0), as any copy
 * let through: E ignores CE on a duplicate.  With SACK only (below).
 */
static u32 ecnp_rexmit_trim(const struct ecnp_fsm *f,
			    const struct ecnp_pkt *p, enum ecnp_feedback mode)
{
	u32 act = ECNP_ACT_TRIM | ECNP_EV_REXMIT_SUPPRESSED;

	/*
	 * Without SACK, E's answer is a plain duplicate ACK that nothing
	 * tells from one for a real hole, and shown to N it would count
	 * one duplicate more than E has segments (tcp_limit_reno_sacked()):
	 * the copy is dropped whole there.
	 */
	if (!ecnp_sack_ok(f))
		return ECNP_ACT_DROP | ECNP_EV_REXMIT_SUPPRESSED;
	if (p->ecn == ECNP_ECN_NOT_ECT && mode != ECNP_FB_NONE)
		act |= ECNP_ACT_SET_ECT0;
	return act;
}

/*
 * dupack-fast: N's retransmission of L when the plumbing holds a copy of
 * E's newest ACK (ECNP_PF_STASHED), which acks L.  Trimmed
 * (ecnp_rexmit_trim()), the copy's byte reaches E behind N's later
 * segments and E's answer ends the hold a round trip later: at Linux's
 * floor of two segments N spends that round trip with the retransmission
 * taking one of its two segments of window, where an ECN sender keeps two
 * segments of new data in flight (DUPACK.md, "dupack-fast").  E's ACK is
 * already at the proxy, so it answers the retransmission itself: E's ACK
 * goes to N at once with its TSecr cleared (an echo older than the
 * retransmission would undo N's reduction, and a TSecr of 0 gives N no
 * RTT sample from it), and the hold ends.  Where E had acked all N had
 * sent, N leaves recovery with cwnd = ssthresh; where
 * N sent more after E's ACK, that ACK is partial: N stays in recovery,
 * PRR goes on with what it acks, and E's ACKs of the rest end it (their
 * stale TSecrs cleared, ecnp_fixup()).  It ends at the last range N was
 * shown SACKed, never inside it: E's newest ACK without SACK blocks means
 * E holds nothing above it.  Linux's RACK does not take an ACK of a
 * retransmission within min_rtt of sending it for that retransmission's
 * delivery (tcp_rack_advance()), so the segments N sent before it are not
 * marked lost.  The copy still goes to E trimmed to one byte, as in
 * dupack: E answers a duplicate at once and enters quick-ACK mode, so
 * its ACK clock (and so its next ECE) is the one it has under dupack;
 * without that byte E delays its ACKs of N's single segments (DUPACK.md,
 * "dupack-fast").  Its answer reaches N as a duplicate ACK without its
 * D-SACK (ecnp_fixup()).  With SACK only: without it the copy is dropped
 * whole (ecnp_rexmit_trim()).
 */
static bool ecnp_rexmit_release(const struct ecnp_fsm *f,
				const struct ecnp_pkt *p,
				enum ecnp_feedback mode)
{
	return mode == ECNP_FB_DUPACK_FAST && ecnp_sack_ok(f) &&
	       (p->pflags & ECNP_PF_STASHED) &&
	       !before(f->e_ack, ecnp_fake_end(f));
}

/*
 * dupack-fast: an E->N ACK held in a simulated loss before N's
 * retransmission that is E's newest and acks L, and nothing else: a pure
 * ACK without SACK blocks (E holds nothing above it; a D-SACK would undo
 * N's reduction) and no gap in N's stream at the proxy.  The plumbing
 * keeps a copy of it (ECNP_ACT_STASH) for ecnp_rexmit_release().
 */
static bool ecnp_stash_ok(const struct ecnp_fsm *f, const struct ecnp_pkt *p,
			  enum ecnp_feedback mode)
{
	return mode == ECNP_FB_DUPACK_FAST && ecnp_sack_ok(f) &&
	       ecnp_fsm_stash_wanted(f) && !p->len &&
	       (p->flags & (ECNP_TCP_ACK | ECNP_TCP_FIN | ECNP_TCP_SYN |
			    ECNP_TCP_RST)) == ECNP_TCP_ACK &&
	       !(p->opt & (ECNP_OPT_SACK | ECNP_OPT_DSACK)) &&
	       p->ack == f->e_ack && !before(p->ack, ecnp_fake_end(f)) &&
	       !(f->dflags & ECNP_DF_GAP);
}

/*
 * With SACK, N retransmits a segment X above L after its suppressed
 * retransmission of L (RACK took X for lost: reordering behind the
 * proxy).  A held ACK that shows X SACKed while L is not acked makes RACK
 * take X's retransmission, sent after L's, for delivered and L's for
 * lost: N sends L a second time, which reaches E as a duplicate
 * (DUPACK.md, "Findings behind the rules", 4).
 * So the hold ends below X (hold_end := X): E's first ACK at or past X
 * is released, N sees L acked, and one with a block beyond X ends the
 * hold too (ecnp_hold()).  X >= the claimed range's end (N does not
 * resend what it believes SACKed), so the released ACK number never
 * lies inside it.  Not a copy that fills a gap at the proxy, nor one
 * sent before L's retransmission (an older TSval): originals.
 */
static bool ecnp_rexmit_above_l(const struct ecnp_fsm *f,
				const struct ecnp_pkt *p)
{
	return (f->dflags & (ECNP_DF_HOLD | ECNP_DF_REXMIT)) ==
	       (ECNP_DF_HOLD | ECNP_DF_REXMIT) && ecnp_sack_ok(f) &&
	       p->len && !(p->flags & (ECNP_TCP_SYN | ECNP_TCP_RST)) &&
	       after(p->seq, f->saved_ack) && before(p->seq, f->hold_end) &&
	       !ecnp_n_gap_at(f, p->seq) && !ecnp_sent_before_rexmit(f, p);
}

/* The "lost" segment L: E's blocks that touch it are left out. */
static void ecnp_ack_edit_lost(const struct ecnp_fsm *f,
			       struct ecnp_ack_edit *e)
{
	e->lost = true;
	e->lost_start = f->saved_ack;
	e->lost_end = f->saved_ack + f->smss;
}

/*
 * HOLD_ACK and INJECT_DUPACKS (ecnp_fsm_ack_edit()): a duplicate of the
 * ACK N saw at the event, and how many duplicates reach N.
 */
static void ecnp_ack_edit_dup(const struct ecnp_fsm *f,
			      const struct ecnp_pkt *p, u32 ret,
			      struct ecnp_ack_edit *e)
{
	e->ack = f->saved_ack;
	e->win = f->hold_win;
	ecnp_ack_edit_lost(f, e);
	if (ret & ECNP_ACT_HOLD_ACK) {
		e->limit = true;
		e->sack_limit = f->hold_end;
		e->copies = (ret & ECNP_ACT_COPY_MASK) >> ECNP_ACT_COPY_SHIFT;
		if (ecnp_hold_counts(f, p))
			e->shown = 1 + e->copies;
	}
	/* the forwarded original reports E's D-SACK once, not its copies */
	if (ret & ECNP_ACT_INJECT_DUPACKS) {
		e->no_dsack = true;
		e->shown = ECNP_DUPACKS;
	}
}

/**
 * ecnp_fsm_ack_edit - the rewrite named by ECNP_ACT_HOLD_ACK,
 *	ECNP_ACT_SET_TSECR or ECNP_ACT_INJECT_DUPACKS
 * @f: the flow's state after ecnp_fsm_step()
 * @p: the same segment (an E->N ACK)
 * @ret: what ecnp_fsm_step() returned for it
 * @e: filled in; fields not to change keep the segment's values
 *
 * HOLD_ACK: ACK number := the start of L (what N saw at the event), window
 * := the window of that ACK (so each is a duplicate ACK to N), TSecr :=
 * 0 (no echo) if older than N's suppressed retransmission, and with SACK a
 * block [end of L, E's real ACK): E's progress shown as SACK, so N's
 * recovery (PRR) sees data delivered; E's own blocks that touch L or end
 * beyond hold_end are left out; E's D-SACK block, if kept, goes first
 * (before the added block: RFC 2883 reads only the first); without SACK,
 * @e->copies exact copies follow it when it stands for more than one
 * duplicate (ECNP_ACT_COPIES()).  SET_TSECR: TSecr := 0 if older than
 * N's suppressed retransmission, E's blocks kept but any touching L (E's
 * D-SACK for a copy of L let through).  INJECT_DUPACKS (without SACK
 * only): the duplicates; E's D-SACK block is not repeated in them.
 */
void ecnp_fsm_ack_edit(const struct ecnp_fsm *f, const struct ecnp_pkt *p,
		       u32 ret, struct ecnp_ack_edit *e)
{
	memset(e, 0, sizeof(*e));
	e->ack = p->ack;
	e->win = p->win;
	e->tsecr = p->tsecr;
	if (ret & (ECNP_ACT_HOLD_ACK | ECNP_ACT_INJECT_DUPACKS))
		ecnp_ack_edit_dup(f, p, ret, e);
	/* dupack-rwnd: the clamp (never with a hold: it ends the clamp) */
	if (ret & ECNP_ACT_CLAMP_WIN)
		e->win = min_t(u16, e->win, f->clamp_win);
	/*
	 * A stale TSecr goes out as 0, "no echo" (tcp_parse_options(): N
	 * then has neither an RTT sample nor an undo from it).  Raised to
	 * the suppressed retransmission's TSval it would stop the undo too,
	 * but an ACK that then advances over L alone (Karn leaves Linux the
	 * TSecr, tcp_ack_update_rtt()) gave N an RTT of now minus the
	 * retransmission, down to 1 ms: N's min_rtt, and through it RACK's
	 * reordering window, collapsed (DUPACK.md, "Defects found on
	 * 2026-11-27").
	 */
	if ((ret & (ECNP_ACT_HOLD_ACK | ECNP_ACT_SET_TSECR)) &&
	    ecnp_tsecr_stale(f, p)) {
		e->set_tsecr = true;
		e->tsecr = 0;
	}
	/* after the hold: E's blocks touching L are left out */
	if ((ret & ECNP_ACT_SET_TSECR) && !e->lost)
		ecnp_ack_edit_lost(f, e);
	/*
	 * and any D-SACK block (ecnp_fixup()): ECE on this ACK may already
	 * have moved saved_ack to the next window, and a new event may have
	 * started before E's D-SACK for a copy of L let through arrives
	 * (DUPACK.md, "Findings behind the rules", 5)
	 */
	if (ret & ECNP_ACT_NO_DSACK)
		e->no_dsack = true;
	if (!ecnp_sack_ok(f))
		return;
	/* with SACK nothing is injected (ecnp_start_hold()) */
	if ((ret & ECNP_ACT_HOLD_ACK) && after(p->ack, e->lost_end)) {
		e->sack = true;
		e->sack_start = e->lost_end;
		e->sack_end = p->ack;
	}
}

/**
 * ecnp_fsm_complete - what the plumbing could not do of a step's actions
 * @f: the flow's state (locked again: other segments may have been
 *	stepped since)
 * @p: the segment as it was stepped
 * @ret: what ecnp_fsm_step() returned for it
 * @e: its ecnp_fsm_ack_edit() (with ECNP_ACT_ACK_EDITS), else NULL
 * @flags_done: the ECNP_ACT_FLAG_EDITS were applied
 * @shown: without SACK, the duplicate ACKs that reached N: the injected
 *	copies sent (ECNP_ACT_INJECT_DUPACKS), or the held ACK rewritten
 *	(1) and its copies sent (ECNP_ACT_HOLD_ACK); @e->shown if all were
 *
 * The step records its actions as done; this takes back what was not:
 * a CWR that could not be set is pending again (E echoes ECE until it
 * sees one), and duplicates counted as shown to N (dup_shown) but never
 * sent are not, as long as the same simulated loss lasts, so that E's
 * next ACKs above L stand for them (ecnp_dupacks_due()).  Nothing is
 * changed when everything was done: the plumbing calls it only then.
 *
 * Return: true if the state changed.
 */
bool ecnp_fsm_complete(struct ecnp_fsm *f, const struct ecnp_pkt *p, u32 ret,
		       const struct ecnp_ack_edit *e, bool flags_done,
		       unsigned int shown)
{
	bool changed = false;
	u32 missing;

	if (!ecnp_fsm_in_phase2(f))
		return false;
	/* a phase 2 SET_CWR is the pending CWR, except on A's SYN again */
	if (!flags_done && (ret & ECNP_ACT_SET_CWR) &&
	    !(p->flags & ECNP_TCP_SYN)) {
		f->flags |= ECNP_FL_CWR_PENDING;
		changed = true;
	}
	if (!e || shown >= e->shown || !(f->dflags & ECNP_DF_HOLD) ||
	    f->saved_ack != e->ack || ecnp_sack_ok(f))
		return changed;
	missing = e->shown - shown;
	f->dup_shown = f->dup_shown > missing ? f->dup_shown - missing : 0;
	return true;
}

/* E->N segment in phase 2. */
/*
 * E's ACK: E's ACK number, a hole at E (without SACK, in dupack mode:
 * ecnp_e_track_hole()), the gap in N's stream it closes, the end of an
 * event's window.  @advanced: it advances E's ACK number.
 */
static void ecnp_e_track(struct ecnp_fsm *f, const struct ecnp_pkt *p,
			 enum ecnp_feedback mode, bool advanced)
{
	if (ecnp_fb_dupack(mode) && !ecnp_sack_ok(f))
		ecnp_e_track_hole(f, p, advanced);
	if (advanced)
		f->e_ack = p->ack;
	if (p->flags & ECNP_TCP_ACK)
		ecnp_e_track_gap(f, p->ack);
	if ((p->flags & ECNP_TCP_ACK) && (f->flags & ECNP_FL_IN_WINDOW) &&
	    after(p->ack, f->recover))
		f->flags &= ~ECNP_FL_IN_WINDOW;
}

/*
 * E's ECE starts a congestion event, and the signal toward N is given
 * (dupack: on an ACK it can start on, ecnp_dupack_ready()) or found
 * answered by N's own recovery.  *@signal: a signal is pending, before
 * and after.  Return: @act with the event's bits (a signal given keeps
 * only @act's events).
 */
static u32 ecnp_e_signal(struct ecnp_fsm *f, const struct ecnp_pkt *p,
			 enum ecnp_feedback mode, bool advanced, bool *signal,
			 u32 act)
{
	if ((p->flags & ECNP_TCP_ECE) && !*signal &&
	    !(f->dflags & ECNP_DF_HOLD) &&
	    !(f->flags & (ECNP_FL_IN_WINDOW | ECNP_FL_CWR_PENDING))) {
		f->flags |= ECNP_FL_IN_WINDOW;
		f->recover = f->n_nxt;
		f->saved_ack = p->ack;
		f->dup_cnt = 0;
		f->dflags &= ~ECNP_DF_ABORTED;	/* L is forgotten */
		if (mode == ECNP_FB_NONE)
			f->flags |= ECNP_FL_CWR_PENDING;
		else
			*signal = true;
	}
	/*
	 * dupack: E repeated its ACK ECNP_DUPACKS times or more within this
	 * hole, so N is repairing a loss of this window and has already
	 * reduced its window once for it: that answers the event.
	 */
	if (*signal && ecnp_fb_dupack(mode) && f->e_rep >= ECNP_DUPACKS) {
		*signal = false;
		f->flags |= ECNP_FL_CWR_PENDING;
		ecnp_window_from_signal(f);
		act |= ECNP_EV_CONG_ANSWERED;
	}
	/*
	 * dupack-rwnd: at the floor, a window clamp instead of a loss, and
	 * while clamped its reduction (not on the step that withdrew a
	 * signal: one result, one meaning)
	 */
	if (*signal && mode == ECNP_FB_DUPACK_RWND &&
	    !(act & ECNP_EV_DUPACK_ABORT) &&
	    (f->clamp_win ? advanced && after(f->n_nxt, p->ack) :
	     ecnp_floor_ready(f, p, advanced))) {
		if (f->clamp_win)
			ecnp_clamp_reduce(f, p);
		else
			ecnp_start_clamp(f, p);
		*signal = false;
		f->flags |= ECNP_FL_CWR_PENDING;
		ecnp_window_from_signal(f);
		act |= ECNP_EV_CONG_SIGNAL;
	}
	/* dupack: the signal is this ACK plus injected duplicates of it */
	if (*signal && ecnp_fb_dupack(mode) &&
	    ecnp_dupack_ready(f, p, advanced)) {
		ecnp_start_hold(f, p);
		*signal = false;
		f->flags |= ECNP_FL_CWR_PENDING;
		/*
		 * The ACK that ends one hold may start the next, if its
		 * TSecr needs no fix (ecnp_dupack_ready()): it goes out as
		 * E sent it and its copies duplicate it exactly.
		 */
		act &= ECNP_EV_MASK;
		act |= ECNP_EV_CONG_SIGNAL;
		if (!ecnp_sack_ok(f))
			act |= ECNP_ACT_INJECT_DUPACKS;
	}
	return act;
}

/*
 * E->N in phase 2: track E's ACKs (ecnp_e_track()), the hold of a
 * simulated loss or its TSecr fix-up after it, the absorbed ACKs after an
 * abort, then the echo state (E's CWR ends it, CE on E's data starts it)
 * and the congestion signal toward N (ecnp_e_signal()); unless absorbed,
 * the segment then goes to N as plain TCP (ecnp_strip()).
 */
static u32 ecnp_e_step(struct ecnp_fsm *f, const struct ecnp_pkt *p,
		       enum ecnp_feedback mode)
{
	bool echo = ecnp_st_echo(f->state);
	bool signal = ecnp_st_signal(f->state);
	bool advanced = (p->flags & ECNP_TCP_ACK) &&
			after(p->ack, f->e_ack) && !after(p->ack, f->n_nxt);
	bool held = (p->flags & ECNP_TCP_ACK) && (f->dflags & ECNP_DF_HOLD);
	u32 act, clamp;

	ecnp_e_track(f, p, mode, advanced);
	if (held)
		act = ecnp_hold(f, p, &signal);
	else
		/*
		 * After the hold, N may still be in recovery (its recovery
		 * point can lie beyond hold_end when the proxy saw its
		 * segments out of order): an echo of a transmission older
		 * than the suppressed retransmission would still undo it,
		 * and so would a D-SACK.
		 */
		act = ecnp_fixup(f, p);
	if ((act & ECNP_ACT_HOLD_ACK) && ecnp_sack_ok(f) &&
	    (p->opt & ECNP_OPT_DSACK))
		act |= ECNP_ACT_NO_DSACK;
	if (ecnp_absorb_after_abort(f, p, !held))
		act = ECNP_ACT_DROP | ECNP_EV_ACK_ABSORBED | (act & ECNP_EV_MASK);

	if (p->flags & ECNP_TCP_CWR)
		echo = false;
	/* like tcp_ecn_check_ce(): only data segments are echoed */
	if (p->ecn == ECNP_ECN_CE && p->len)
		echo = true;
	act = ecnp_e_signal(f, p, mode, advanced, &signal, act);
	if ((act & ECNP_ACT_HOLD_ACK) && ecnp_stash_ok(f, p, mode))
		act |= ECNP_ACT_STASH;
	f->state = ecnp_p2_state(echo, signal);
	clamp = ecnp_clamp_step(f, p, mode);
	if (act & ECNP_ACT_DROP)
		return act;	/* absorbed: nothing to edit */
	return ecnp_strip(p) | clamp | act;
}

/*
 * N->E in phase 2, first: N's copies of L while the simulated loss lasts
 * or after it (dupack).  Return: true if the segment is dealt with here
 * (dropped or trimmed: *@ret is the step's result), else false with the
 * events so far or-ed into *@ev.
 */
static bool ecnp_n_rexmit(struct ecnp_fsm *f, const struct ecnp_pkt *p,
			  enum ecnp_feedback mode, u32 *ret, u32 *ev)
{
	/*
	 * N retransmits L again while held: its RTO fired (a real loss the
	 * hold hides, e.g. at the tail) or RACK gave up on the first copy.
	 * Stop holding and let this copy through, so that E answers with
	 * its real ACK at once: never a stall.
	 */
	if ((f->dflags & (ECNP_DF_HOLD | ECNP_DF_REXMIT)) ==
	    (ECNP_DF_HOLD | ECNP_DF_REXMIT) && p->len &&
	    p->seq == f->saved_ack && before(p->seq, f->n_nxt)) {
		f->dflags &= ~ECNP_DF_HOLD;
		f->dflags |= ECNP_DF_ABORTED;
		*ev |= ECNP_EV_DUPACK_ABORT;
	}
	if (ecnp_late_rexmit(f, p)) {
		f->dflags &= ~ECNP_DF_LATE;
		/* E's next ACKs may still echo older segments: cleared */
		ecnp_note_rexmit_ts(f, p);
		if (!(p->pflags & ECNP_PF_NO_DROP)) {
			*ret = ECNP_ACT_DROP | ECNP_EV_REXMIT_SUPPRESSED;
			return true;
		}
		*ev |= ECNP_EV_NOT_DROPPED;
	}
	if (ecnp_rexmit_to_suppress(f, p) && (p->pflags & ECNP_PF_NO_DROP)) {
		/*
		 * A GSO packet that starts with L and cannot be segmented:
		 * E gets L twice.  The hold ends as when N's RTO resends L
		 * (N may undo its reduction once E reports the duplicate),
		 * and later copies are N's own.
		 */
		f->dflags &= ~ECNP_DF_HOLD;
		f->dflags |= ECNP_DF_REXMIT | ECNP_DF_ABORTED;
		*ev |= ECNP_EV_DUPACK_ABORT | ECNP_EV_NOT_DROPPED;
	} else if (ecnp_rexmit_to_suppress(f, p)) {
		/* E has L: trim the copy, remember what N's clock said */
		f->dflags |= ECNP_DF_REXMIT;
		ecnp_note_rexmit_ts(f, p);
		/* N's recovery point: all it had sent before this */
		if (after(f->n_nxt, f->hold_end))
			f->hold_end = f->n_nxt;
		if (after(f->hold_end, f->recover))
			f->recover = f->hold_end;
		*ret = ecnp_rexmit_trim(f, p, mode);
		/*
		 * E's newest ACK goes to N at once and the hold ends; the
		 * trimmed byte still goes to E
		 */
		if (ecnp_rexmit_release(f, p, mode)) {
			f->dflags &= ~ECNP_DF_HOLD;
			*ret |= ECNP_ACT_STASH;
		}
		return true;
	}
	return false;
}

/*
 * N->E in phase 2: what N has sent, ending at @end (its data and FIN):
 * the hold's end, N's segment size, n_nxt and the gaps in N's stream.
 */
static void ecnp_n_track(struct ecnp_fsm *f, const struct ecnp_pkt *p,
			 u32 end)
{
	/*
	 * Sent before the retransmission (an older TSval), seen after it
	 * (two CPUs may forward N's packets out of order): N's recovery
	 * point lies beyond it.  Not one of the same tick: SACKing data sent
	 * after the retransmission would make RACK retransmit L again.
	 */
	if ((f->dflags & ECNP_DF_HOLD) && ecnp_sent_before_rexmit(f, p) &&
	    after(end, f->hold_end)) {
		f->hold_end = end;
		if (after(f->hold_end, f->recover))
			f->recover = f->hold_end;
	}
	if (ecnp_rexmit_above_l(f, p))
		f->hold_end = p->seq;
	if (p->len && !(p->flags & ECNP_TCP_SYN) && p->seg_len > f->smss)
		f->smss = p->seg_len;
	/*
	 * Only data and FIN move n_nxt (and open or fill a gap): a pure ACK's
	 * sequence number is N's snd_nxt, ahead of data it sent before if
	 * that data is late (a duplicate ACK N sent on the other CPU overtook
	 * it); that data is still new, and must get ECT (proxy_idle,
	 * proxy_modes: one segment in 2000 went out Not-ECT).
	 */
	if (p->len || (p->flags & ECNP_TCP_FIN)) {
		ecnp_n_track_gap(f, p, end);
		if (after(end, f->n_nxt))
			f->n_nxt = end;
	}
}

/* N->E segment in phase 2. */
static u32 ecnp_n_step(struct ecnp_fsm *f, const struct ecnp_pkt *p,
		       enum ecnp_feedback mode)
{
	bool echo = ecnp_st_echo(f->state);
	bool new_data = ecnp_new_data(f, p);
	/* data in a gap at the proxy: reordered before it, new to E's path */
	bool gap_fill = p->len && ecnp_n_gap_at(f, p->seq);
	u32 end = p->seq + p->len + !!(p->flags & ECNP_TCP_FIN);
	u32 ev = 0;	/* events besides the edits */
	bool cwr = false;
	u32 act;

	if (ecnp_n_rexmit(f, p, mode, &act, &ev))
		return act;
	ecnp_n_track(f, p, end);
	if (mode == ECNP_FB_DUPACK_RWND && p->len) {
		ecnp_note_peak(f);
		ecnp_clamp_note_n(f, p);
	}

	/*
	 * drop (or none, switched at run time); dupack signals in e_step.
	 * A GSO packet that cannot be segmented leaves the drop pending for
	 * the next new data.
	 */
	if (new_data && ecnp_st_signal(f->state) && mode == ECNP_FB_DROP &&
	    (p->pflags & ECNP_PF_NO_DROP)) {
		ev |= ECNP_EV_NOT_DROPPED;
	} else if (new_data && ecnp_st_signal(f->state) &&
		   !ecnp_fb_dupack(mode)) {
		/* DUPACK is left once the signal is given; CWR follows. */
		f->state = ecnp_p2_state(echo, false);
		f->flags |= ECNP_FL_CWR_PENDING;
		if (mode != ECNP_FB_NONE)
			return ECNP_ACT_DROP | ECNP_EV_CONG_SIGNAL;
	}
	if (new_data && (f->flags & ECNP_FL_CWR_PENDING)) {
		f->flags &= ~ECNP_FL_CWR_PENDING;
		cwr = true;
	}
	act = ecnp_edit_flags(p, echo, cwr);
	/*
	 * ECT on new data, and on data that fills a gap in N's stream at the
	 * proxy: an original that N's host reordered behind a later segment
	 * (or a retransmission of one lost before the proxy).  Not-ECT, RED
	 * would drop it early, a real loss inside a range the dupack signal
	 * claims SACKed: N sees the ACK stop at data it believes SACKed
	 * (reneging) and recovers by timeout (DUPACK.md, "Findings behind
	 * the rules", 6).
	 */
	if ((new_data || gap_fill) && mode != ECNP_FB_NONE &&
	    p->ecn == ECNP_ECN_NOT_ECT)
		act |= ECNP_ACT_SET_ECT0;
	return act | ev;
}

/*
 * A SYN or SYN-ACK once the roles are known (WAIT_ACK and phase 2): a SYN
 * from A may restart the machine, a SYN-ACK is B's again.
 *
 * Return: true if @p was one; *@ret is then its outcome.
 */
static bool ecnp_syn_again(struct ecnp_fsm *f, const struct ecnp_pkt *p,
			   bool dst_no_upgrade, u32 *ret)
{
	if (ecnp_is_syn(p))
		*ret = p->dir == ECNP_DIR_A ?
		       ecnp_syn_from_a(f, p, dst_no_upgrade) : 0;
	else if (ecnp_is_synack(p))
		*ret = ecnp_synack_again(f, p);
	else
		return false;
	return true;
}

/* DEFAULT, ECE, DUPACK, ECE_DUPACK */
static u32 ecnp_phase2(struct ecnp_fsm *f, const struct ecnp_pkt *p,
		       enum ecnp_feedback mode, bool dst_no_upgrade)
{
	u32 ret;

	if (ecnp_syn_again(f, p, dst_no_upgrade, &ret))
		return ret;
	if (ecnp_from_e(f, p))
		return ecnp_e_step(f, p, mode);
	return ecnp_n_step(f, p, mode);
}

/* WAIT_ACK: roles known, B's SYN-ACK passed. */
static u32 ecnp_wait_ack(struct ecnp_fsm *f, const struct ecnp_pkt *p,
			 enum ecnp_feedback mode, bool dst_no_upgrade)
{
	u32 ret;

	if (ecnp_syn_again(f, p, dst_no_upgrade, &ret))
		return ret;
	/* (an ACK names the other side's SYN: ecnp_seg_ok()) */
	if (!(p->flags & ECNP_TCP_ACK))
		return 0;
	ecnp_enter_phase2(f);
	return ecnp_phase2(f, p, mode, dst_no_upgrade);
}

static u32 ecnp_rst(struct ecnp_fsm *f, const struct ecnp_pkt *p)
{
	u32 ret = 0;

	if (f->state == ECNP_S_CLOSED)
		return 0;
	if (!ecnp_rst_ok(f, p))
		return ecnp_out_of_window();
	if (ecnp_fsm_proxied(f) && ecnp_from_e(f, p))
		ret = ecnp_strip(p);
	ret |= ECNP_EV_CLOSED;
	/*
	 * RFC 3168 6.1.1.1: some hosts answer an ECN-setup SYN with RST.  A
	 * reset of our upgraded SYN acks its ISN + 1 (+ any SYN payload):
	 * ecnp_rst_ok() checked that.
	 */
	if (f->state == ECNP_S_A_NC && (f->hflags & ECNP_HF_SYN_UP) &&
	    p->dir == ECNP_DIR_B)
		ret |= ECNP_EV_SYN_FALLBACK;
	f->state = ECNP_S_CLOSED;
	return ret;
}

static u32 ecnp_track_fin(struct ecnp_fsm *f, const struct ecnp_pkt *p)
{
	u8 bit = ecnp_fin_bit(p->dir);

	if (!(p->flags & ECNP_TCP_FIN) || (p->flags & ECNP_TCP_SYN) ||
	    f->state == ECNP_S_CLOSED || (f->flags & bit))
		return 0;
	f->flags |= bit;
	return ecnp_fins_done(f) ? ECNP_EV_CLOSED : 0;
}

/*
 * Pickup: a connection the proxy has no state for, met mid-stream (its
 * flow expired while the connection was idle, or the module was loaded
 * again), is proxied again from its packets (FSM.md, "Pickup").  Its
 * windows are unknown: liberal on both sides, for the rest of the flow,
 * as conntrack does for a connection it picks up (tcp_new() with
 * nf_conntrack_tcp_loose).  A flow picked up is always labelled from the
 * segment that started it: that segment's sender is A.
 */
static void ecnp_midstream_phase2(struct ecnp_fsm *f, u32 n_nxt, u32 e_ack,
				  u32 n_ack, bool echo)
{
	f->state = ecnp_p2_state(echo, false);
	f->n_nxt = n_nxt;
	f->recover = n_nxt;
	f->e_ack = e_ack;
	f->n_ack = n_ack;
	f->hold_end = 0;
	f->hold_ack = 0;
}

static void ecnp_pickup_phase2(struct ecnp_fsm *f, u32 n_nxt, u32 e_ack,
			       u32 n_ack, bool echo)
{
	ecnp_midstream_phase2(f, n_nxt, e_ack, n_ack, echo);
	f->flags |= ECNP_FL_PICKED_UP;
}

/*
 * PICKUP and VERIFY: data from the side S whose CE marks the other side's
 * ACK must echo.  hold_end is the end of S's marked segment that the
 * other side's ACK must cover (0: none).  S sending data below it again
 * means the marked copy may not have reached the receiver (lost after
 * the proxy): an ACK past it would then say nothing about the echo, so
 * the mark is forgotten until S's next marked segment.
 */
static void ecnp_track_mark(struct ecnp_fsm *f, const struct ecnp_pkt *p)
{
	if (!p->len)
		return;
	if (f->hold_end && before(p->seq, f->hold_end))
		f->hold_end = 0;
	if (!f->hold_end && p->ecn == ECNP_ECN_CE)
		f->hold_end = p->seq + p->len;
}

/*
 * PICKUP: A sent data marked CE, so A negotiated ECN; B's answer tells
 * whether B did.  An ECN receiver echoes CE on every segment until A's
 * CWR (tcp_ecn_send(): ECE while TCP_ECN_DEMAND_CWR), so B's first ACK of
 * the marked data carries ECE, unless A's CWR already ended the echo; a
 * CWR from A shows that someone echoes.  B echoing, CWR from A, or ECT on
 * B's data: B is ECN-capable, SAME.  AE from either side, or CWR from B
 * (which a classic ECN receiver only sends as a data sender): AccECN,
 * whose ACE counter (AE, CWR, ECE) the proxy must not touch, SAME.  B
 * acking the marked data without ECE: B is N, the connection was proxied
 * (its E is A), and the echo the proxy owes A starts with that ACK.  Until
 * then nothing is edited.
 * hold_end is the end of A's marked segment (ecnp_track_mark()), hold_ack
 * A's latest ACK (what E acked of N's data).
 */
static u32 ecnp_pickup_step(struct ecnp_fsm *f, const struct ecnp_pkt *p,
			    enum ecnp_feedback mode)
{
	u32 n_nxt, e_ack;

	if (p->dir == ECNP_DIR_A) {
		if (p->flags & (ECNP_TCP_CWR | ECNP_TCP_AE)) {
			f->state = ECNP_S_SAME;
			return 0;
		}
		if (p->flags & ECNP_TCP_ACK)
			f->hold_ack = p->ack;
		ecnp_track_mark(f, p);
		return 0;
	}
	if ((p->flags & (ECNP_TCP_ECE | ECNP_TCP_CWR | ECNP_TCP_AE)) ||
	    (p->len && p->ecn != ECNP_ECN_NOT_ECT)) {
		f->state = ECNP_S_SAME;
		return 0;
	}
	if (!(p->flags & ECNP_TCP_ACK) || !f->hold_end ||
	    before(p->ack, f->hold_end))
		return 0;
	/* B's data from here on is new to E; E acked at most that much */
	n_nxt = p->seq;
	e_ack = before(f->hold_ack, n_nxt) ? f->hold_ack : n_nxt;
	ecnp_pickup_phase2(f, n_nxt, e_ack, p->ack, true);
	return ecnp_phase2(f, p, mode, false);
}

/*
 * VERIFY: A asked for ECN, retransmitted its SYN without (ECNP_HF_A_PLAIN_RTX)
 * and B answered ECN-setup, untouched.  B uses ECN; whether A does depends
 * on its stack (Linux: yes).  Nothing is edited until A shows which, on
 * the same rules as PICKUP with the roles the other way round:
 *   - A's new data ECT, ECE or AE from A, CWR or AE from B (someone
 *     echoed, or AccECN): A uses ECN, SAME (both);
 *   - A's new data Not-ECT, or A acking B's CE-marked data without
 *     ECE: A is N, the flow is proxied from this segment on with E = B,
 *     and the echo the proxy owes B starts with it.
 * hold_end is the end of B's CE-marked segment (0: none yet;
 * ecnp_track_mark()), hold_ack B's latest ACK (what E acked of N's data).
 */
static u32 ecnp_verify(struct ecnp_fsm *f, const struct ecnp_pkt *p,
		       enum ecnp_feedback mode)
{
	bool acked_ce;
	u32 n_nxt;

	if (p->dir == ECNP_DIR_B) {
		if (p->flags & (ECNP_TCP_CWR | ECNP_TCP_AE)) {
			f->state = ECNP_S_SAME;
			return ECNP_EV_OUT_BOTH;
		}
		if (p->flags & ECNP_TCP_ACK)
			f->hold_ack = p->ack;
		ecnp_track_mark(f, p);
		return 0;
	}
	if ((p->flags & (ECNP_TCP_ECE | ECNP_TCP_AE)) ||
	    (p->len && p->ecn != ECNP_ECN_NOT_ECT)) {
		f->state = ECNP_S_SAME;
		return ECNP_EV_OUT_BOTH;
	}
	/* A's retransmissions are Not-ECT on an ECN connection too */
	if (p->len && before(p->seq, f->win[ECNP_DIR_A].end))
		return 0;
	acked_ce = f->hold_end && (p->flags & ECNP_TCP_ACK) &&
		   !before(p->ack, f->hold_end);
	if (!p->len && !acked_ce)
		return 0;
	/* A's data from here on is new to E; E acked at most that much */
	n_nxt = p->seq;
	ecnp_midstream_phase2(f, n_nxt,
			      before(f->hold_ack, n_nxt) ? f->hold_ack : n_nxt,
			      p->ack, f->hold_end != 0);
	return ecnp_phase2(f, p, mode, false) | ECNP_EV_OUT_E_RESP;
}

/**
 * ecnp_fsm_pickup_init - set up a flow for a segment of a connection the
 *	proxy has no state for (pickup, FSM.md), before the flow is visible
 * @f: the new flow's state
 * @p: the segment that creates it (no SYN, no RST); its sender is the
 *	flow's A
 * @e: ECNP_DIR_A or ECNP_DIR_B if the proxy knows the connection's E (it
 *	proxied it before and remembered it when the flow expired), else -1
 * @sack: with @e, whether the connection negotiated SACK
 *
 * With @e the flow is in phase 2 at once (its sequence numbers from @p);
 * without, @p must be data marked CE (its sender negotiated ECN): the
 * flow waits in ECNP_S_PICKUP for B's answer, and SACK is assumed
 * (Linux's default).  Any other segment makes the flow PASS.  Nothing is
 * stepped: whichever segment of the connection takes the flow's lock
 * first, @p or one from the other end, is the flow's first
 * ecnp_fsm_step(), and finds the roles set up.
 */
void ecnp_fsm_pickup_init(struct ecnp_fsm *f, const struct ecnp_pkt *p, int e,
			  bool sack)
{
	ecnp_fsm_init(f);
	f->win[ECNP_DIR_A].wflags = ECNP_WF_LIBERAL;
	f->win[ECNP_DIR_B].wflags = ECNP_WF_LIBERAL;
	if (p->dir != ECNP_DIR_A ||
	    (p->flags & (ECNP_TCP_SYN | ECNP_TCP_RST))) {
		f->state = ECNP_S_PASS;
		return;
	}
	if (e == ECNP_DIR_A || e == ECNP_DIR_B) {
		if (e == ECNP_DIR_A)
			f->flags |= ECNP_FL_E_IS_A;
		if (sack)
			f->dflags |= ECNP_DF_SACK_A | ECNP_DF_SACK_B;
		/* from E: N has sent what E acked; from N: its data is new */
		if (e == ECNP_DIR_A)
			ecnp_pickup_phase2(f, p->ack, p->ack, p->seq, false);
		else
			ecnp_pickup_phase2(f, p->seq, p->seq, p->ack, false);
		return;
	}
	/* AE: an AccECN connection's ACE counter, never edited */
	if (p->ecn != ECNP_ECN_CE || !p->len || (p->flags & ECNP_TCP_AE)) {
		f->state = ECNP_S_PASS;
		return;
	}
	f->state = ECNP_S_PICKUP;
	f->flags |= ECNP_FL_E_IS_A;
	f->dflags |= ECNP_DF_SACK_A | ECNP_DF_SACK_B;
	f->hold_end = p->seq + p->len;
	f->hold_ack = p->ack;
}

/**
 * ecnp_fsm_pickup - ecnp_fsm_pickup_init(), then @p's step
 * @f: the new flow's state
 * @p: the segment (no SYN, no RST); its sender is the flow's A
 * @e: as for ecnp_fsm_pickup_init()
 * @sack: as for ecnp_fsm_pickup_init()
 * @mode: congestion feedback mode toward N
 *
 * Return: as ecnp_fsm_step(); ECNP_EV_OUT_PASS if @p cannot start one.
 */
u32 ecnp_fsm_pickup(struct ecnp_fsm *f, const struct ecnp_pkt *p, int e,
		    bool sack, enum ecnp_feedback mode)
{
	ecnp_fsm_pickup_init(f, p, e, sack);
	if (f->state == ECNP_S_PASS)
		return ECNP_EV_OUT_PASS;
	if (f->state == ECNP_S_PICKUP)
		return 0;
	return ecnp_fsm_step(f, p, mode, false);
}

/*
 * @x lies within @win of @ref, either way.
 */
static bool ecnp_near(u32 x, u32 ref, u32 win)
{
	return !before(x, ref - win) && !after(x, ref + win);
}

/**
 * ecnp_fsm_conn_id - which connection a proxied flow is
 * @f: the flow's state, in phase 2
 * @id: filled in
 *
 * E's next sequence number is its highest end seen, or, without its
 * handshake (a flow picked up), N's highest ACK.  A segment of the same
 * connection lies within one of the larger window either side offered
 * (at least ECNP_MAXACKWIN, and that alone when the windows are
 * unknown): a connection idle until its flow expired resumes exactly
 * where it stopped, or with a retransmission of its last flight.
 */
void ecnp_fsm_conn_id(const struct ecnp_fsm *f, struct ecnp_conn_id *id)
{
	u8 e = ecnp_fsm_e_is_a(f) ? ECNP_DIR_A : ECNP_DIR_B;
	const struct ecnp_win *we = &f->win[e], *wn = &f->win[!e];
	bool known = we->wflags & wn->wflags & ECNP_WF_SEEN;
	u32 w;

	id->n_nxt = f->n_nxt;
	id->e_nxt = known && after(we->end, f->n_ack) ? we->end : f->n_ack;
	id->win = ECNP_MAXACKWIN;
	id->sack = ecnp_sack_ok(f);
	if (!known)
		return;
	w = ecnp_win_bytes(we);
	if (ecnp_win_bytes(wn) > w)
		w = ecnp_win_bytes(wn);
	if (w > id->win)
		id->win = w;
}

/**
 * ecnp_conn_id_match - a segment belongs to the connection @id names
 * @id: from ecnp_fsm_conn_id()
 * @p: the segment (seq, ack, flags)
 * @from_e: its sender was the connection's E
 *
 * Its sequence number lies near its sender's, its ACK (if any) near the
 * other end's.  A later connection on the same 4-tuple has new ISNs: it
 * matches by chance with a probability of about (2 * win / 2^32)^2.
 *
 * Return: true if it may be one of the connection's segments.
 */
bool ecnp_conn_id_match(const struct ecnp_conn_id *id,
			const struct ecnp_pkt *p, bool from_e)
{
	u32 snd = from_e ? id->e_nxt : id->n_nxt;
	u32 rcv = from_e ? id->n_nxt : id->e_nxt;

	return ecnp_near(p->seq, snd, id->win) &&
	       (!(p->flags & ECNP_TCP_ACK) || ecnp_near(p->ack, rcv, id->win));
}

/*
 * SAME, PASS, CLOSED (and VERIFY's SYNs): untouched, but a SYN from A may
 * restart the machine.
 */
static u32 ecnp_syn_state(struct ecnp_fsm *f, const struct ecnp_pkt *p,
			  bool dst_no_upgrade)
{
	if (ecnp_is_syn(p) && p->dir == ECNP_DIR_A)
		return ecnp_syn_from_a(f, p, dst_no_upgrade);
	if (f->state == ECNP_S_PASS && ecnp_is_synack(p) &&
	    p->dir == ECNP_DIR_B &&
	    !(f->win[ECNP_DIR_B].wflags & ECNP_WF_SEEN) &&
	    ecnp_acks_syn(f, p))
		ecnp_win_syn(f, p, true);	/* B's side, for RSTs */
	return 0;
}

/*
 * The quick step (ecnp_quick()): a phase 2 segment in the steady state,
 * which the full step (ecnp_step_full()) would handle with every one of
 * its special cases ruled out.  What rules them out, first about the
 * flow: DEFAULT or ECE (no congestion signal pending toward N), no
 * simulated loss going on and none given up (ECNP_DF_QUICK_OFF: no hold,
 * no late retransmission of L to expect, no gap in N's stream, no aborted
 * hold; a suppressed retransmission's TSval, ECNP_DF_REXMIT and
 * ECNP_DF_TS, stays until the next event and is dealt with:
 * ecnp_fixup()), no window clamp (dupack-rwnd); and about the segment:
 * an ACK, with PSH or not, without SYN, FIN, RST, URG, ECE, CWR or AE.
 * N's data while CWR is pending is the full step's too.
 */
#define ECNP_DF_QUICK_OFF	(ECNP_DF_HOLD | ECNP_DF_LATE | ECNP_DF_GAP | \
				 ECNP_DF_ABORTED)

static bool ecnp_quick_ok(const struct ecnp_fsm *f, const struct ecnp_pkt *p)
{
	return (f->state == ECNP_S_DEFAULT || f->state == ECNP_S_ECE) &&
	       (p->flags & ~ECNP_TCP_PSH) == ECNP_TCP_ACK &&
	       !(f->dflags & ECNP_DF_QUICK_OFF) && !f->clamp_win;
}

/*
 * N->E, ecnp_n_step() without what ecnp_quick_ok() rules out: no copy of
 * L to suppress or pass (ecnp_n_rexmit(): no hold, none late), no hold
 * to track, no signal to give.  Data beyond n_nxt (a gap opens) and new
 * data that is to carry CWR are left to the full step: false, nothing
 * changed.
 */
static bool ecnp_quick_n(struct ecnp_fsm *f, const struct ecnp_pkt *p,
			 enum ecnp_feedback mode, u32 *ret)
{
	bool new_data = false;
	u32 end;

	if (p->len) {
		if (after(p->seq, f->n_nxt) ||
		    (f->flags & ECNP_FL_CWR_PENDING))
			return false;
		new_data = !before(p->seq, f->n_nxt);
		if (p->seg_len > f->smss)
			f->smss = p->seg_len;
		end = p->seq + p->len;
		if (after(end, f->n_nxt))
			f->n_nxt = end;
		if (mode == ECNP_FB_DUPACK_RWND)
			ecnp_note_peak(f);
	}
	*ret = f->state == ECNP_S_ECE ? ECNP_ACT_SET_ECE : 0;
	if (new_data && mode != ECNP_FB_NONE && p->ecn == ECNP_ECN_NOT_ECT)
		*ret |= ECNP_ACT_SET_ECT0;
	return true;
}

/*
 * E->N, ecnp_e_step() without what ecnp_quick_ok() rules out: no hold,
 * nothing to absorb, no ECE to answer, no signal to give; what is left is
 * E's ACK (ecnp_e_track() without the gap, the segment being an ACK),
 * the TSecr or D-SACK of an earlier event's suppressed retransmission
 * (ecnp_fixup()), CE on its data, and the ECN it must not show N.
 */
static void ecnp_quick_e(struct ecnp_fsm *f, const struct ecnp_pkt *p,
			 enum ecnp_feedback mode, u32 *ret)
{
	bool advanced = after(p->ack, f->e_ack) && !after(p->ack, f->n_nxt);
	bool echo = f->state == ECNP_S_ECE;

	if (ecnp_fb_dupack(mode) && !ecnp_sack_ok(f))
		ecnp_e_track_hole(f, p, advanced);
	if (advanced)
		f->e_ack = p->ack;
	if ((f->flags & ECNP_FL_IN_WINDOW) && after(p->ack, f->recover))
		f->flags &= ~ECNP_FL_IN_WINDOW;
	/* 0 without a hold, a suppressed retransmission or its TSval */
	*ret = f->dflags & (ECNP_DF_HOLD | ECNP_DF_TS | ECNP_DF_REXMIT) ?
	       ecnp_fixup(f, p) : 0;
	/* like tcp_ecn_check_ce(): only data segments are echoed */
	if (p->ecn == ECNP_ECN_CE && p->len)
		echo = true;
	f->state = echo ? ECNP_S_ECE : ECNP_S_DEFAULT;
	if (p->ecn != ECNP_ECN_NOT_ECT)
		*ret |= ECNP_ACT_CLEAR_ECN;
}

/*
 * The steady state of a proxied flow, most of its segments: the same
 * result and the same state as ecnp_step_full(), from a fraction of its
 * tests (the unit tests compare both on every segment they step, and on
 * random flows).  Return: true if done (*@ret set), false if the full
 * step must take the segment (nothing changed).
 */
static __always_inline bool ecnp_quick(struct ecnp_fsm *f,
				       const struct ecnp_pkt *p,
				       enum ecnp_feedback mode, u32 *ret)
{
	/* ecnp_seg_end(): no SYN, no FIN */
	u32 end = p->seq + p->len;

	if (!ecnp_quick_ok(f, p))
		return false;
	/* ecnp_seg_ok() of a phase 2 flow */
	if (!ecnp_win_check_end(f, p, end)) {
		*ret = ecnp_out_of_window();
		return true;
	}
	if (ecnp_from_e(f, p))
		ecnp_quick_e(f, p, mode, ret);
	else if (!ecnp_quick_n(f, p, mode, ret))
		return false;
	ecnp_win_update_end(f, p, end);
	return true;
}

/*
 * ecnp_fsm_step() for every segment: each state's own step.  Out of line,
 * so that the quick step does not pay for its registers.
 */
static noinline u32 ecnp_step_full(struct ecnp_fsm *f,
				   const struct ecnp_pkt *p,
				   enum ecnp_feedback mode, bool dst_no_upgrade)
{
	bool syn = p->flags & ECNP_TCP_SYN;
	u32 ret;

	if (p->flags & ECNP_TCP_RST)
		return ecnp_rst(f, p);
	/* SYNs are checked where they are handled */
	if (!syn && f->state != ECNP_S_INIT && f->state != ECNP_S_CLOSED &&
	    !ecnp_seg_ok(f, p))
		return ecnp_out_of_window();

	switch (f->state) {
	case ECNP_S_INIT:
		ret = ecnp_first(f, p, dst_no_upgrade);
		break;
	case ECNP_S_A_C:
	case ECNP_S_A_NC:
		ret = ecnp_wait_synack(f, p, dst_no_upgrade);
		break;
	case ECNP_S_SIMOPEN:
		ret = ecnp_simopen(f, p, mode, dst_no_upgrade);
		break;
	case ECNP_S_WAIT_ACK:
		ret = ecnp_wait_ack(f, p, mode, dst_no_upgrade);
		break;
	case ECNP_S_DEFAULT:
	case ECNP_S_ECE:
	case ECNP_S_DUPACK:
	case ECNP_S_ECE_DUPACK:
		ret = ecnp_phase2(f, p, mode, dst_no_upgrade);
		break;
	case ECNP_S_PICKUP:
		ret = ecnp_pickup_step(f, p, mode);
		break;
	case ECNP_S_VERIFY:
		if (!syn) {
			ret = ecnp_verify(f, p, mode);
			break;
		}
		/* its SYNs as SAME's */
		ret = ecnp_syn_state(f, p, dst_no_upgrade);
		break;
	default:
		ret = ecnp_syn_state(f, p, dst_no_upgrade);
		break;
	}
	if (!syn && f->state != ECNP_S_CLOSED) {
		ret |= ecnp_track_fin(f, p);
		ecnp_win_update(f, p);
	}
	return ret;
}

/**
 * ecnp_fsm_step - advance a flow's state machine by one segment
 * @f: the flow's state, ECNP_S_INIT (all zero) before its first segment
 * @p: what the plumbing observed on the segment
 * @mode: congestion feedback mode toward N (sysctl)
 * @dst_no_upgrade: B's address is in the SYN fallback cache; only looked at
 *	before B's SYN-ACK, and latched
 *
 * Return: ECNP_ACT_* header edits to apply to this segment, or
 * ECNP_ACT_DROP, ored with ECNP_EV_* events.
 */
u32 ecnp_fsm_step(struct ecnp_fsm *f, const struct ecnp_pkt *p,
		  enum ecnp_feedback mode, bool dst_no_upgrade)
{
	u32 ret;

	if (ecnp_quick(f, p, mode, &ret))
		return ret;
	return ecnp_step_full(f, p, mode, dst_no_upgrade);
}

/**
 * ecnp_fsm_untrack - stop following a decided flow's windows
 * @f: a flow that needs nothing (ecnp_fsm_needs_nothing())
 *
 * The plumbing no longer steps such a flow's segments without SYN, FIN or
 * RST (its fast exit), so its window model would fall behind the
 * connection: both sides become liberal (ECNP_WF_LIBERAL), as a picked-up
 * flow's, and a FIN or RST counts wherever it lies.  The flow edits
 * nothing either way; its windows only guarded whether a SYN from A may
 * start a new connection on the 4-tuple (after RST or both FINs).  A new
 * connection starts the machine over (ecnp_fsm_init()), windows too.
 */
void ecnp_fsm_untrack(struct ecnp_fsm *f)
{
	f->win[ECNP_DIR_A].wflags |= ECNP_WF_LIBERAL;
	f->win[ECNP_DIR_B].wflags |= ECNP_WF_LIBERAL;
}

/**
 * ecnp_fsm_wants_drop - would ecnp_fsm_step() drop or trim this segment?
 * @f: the flow's state
 * @p: the segment (or a whole GSO packet)
 * @mode: congestion feedback mode
 *
 * Pure predicate, no state change.  When it is true for a GSO packet, the
 * plumbing segments it first and steps each segment, so that only one
 * segment is dropped or trimmed; if it cannot, it steps the packet whole
 * with ECNP_PF_NO_DROP, for which this is false.
 *
 * Return: true iff ecnp_fsm_step(@f, @p, @mode, ...) returns ECNP_ACT_DROP
 * or ECNP_ACT_TRIM.
 */
bool ecnp_fsm_wants_drop(const struct ecnp_fsm *f, const struct ecnp_pkt *p,
			 enum ecnp_feedback mode)
{
	if (!ecnp_fsm_in_phase2(f) || ecnp_from_e(f, p) ||
	    (p->flags & (ECNP_TCP_SYN | ECNP_TCP_RST)) ||
	    (p->pflags & ECNP_PF_NO_DROP) || !ecnp_seg_ok(f, p))
		return false;
	if (ecnp_rexmit_to_suppress(f, p))
		return true;
	if (ecnp_late_rexmit(f, p))
		return true;
	return mode == ECNP_FB_DROP && ecnp_st_signal(f->state) &&
	       ecnp_new_data(f, p);
}
