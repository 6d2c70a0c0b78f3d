// SPDX-License-Identifier: GPL-2.0
/*
 * ecn_proxy: an ECN proxy for the forward path of a router.
 *
 * Most hosts never ask for ECN, so AQM routers on their paths must drop where
 * they could mark.  When only one endpoint of a TCP connection negotiates ECN
 * (E), this module negotiates ECN with it on behalf of the other one (N) and
 * then plays N's ECN part for the rest of the connection:
 *
 *   phase 1: upgrade the SYN (or SYN-ACK) toward E to ECN-setup and
 *            downgrade the answer toward N, so that only E sees ECN;
 *   phase 2: ECT(0) on N->E new data, Not-ECT and no ECE/CWR toward N;
 *            CE on E->N data is echoed to E as ECE until E's CWR; ECE from
 *            E (congestion on N's data) is turned into a signal N
 *            understands, selected by net.ecn_proxy.feedback:
 *              none   no ECT on N->E, so routers drop there;
 *              drop   drop one N->E new-data segment per window;
 *              dupack a simulated loss that loses nothing: from E's
 *                     next pure ACK with 4 segments in flight above it (2
 *                     with SACK) and no hole reported, E's ACKs reach N
 *                     with the ACK number held at the "lost" segment L
 *                     and, with SACK, E's real progress as SACK blocks
 *                     (without SACK, three injected duplicates follow the
 *                     first), so N's own fast recovery reduces its window
 *                     once; N's retransmission of L is dropped (E has
 *                     L), or let through when E has acked all N sent
 *                     (with SACK); the hold lasts until E has acked
 *                     everything N had sent by that retransmission (with
 *                     SACK, never ends before it), and a TSecr older than the
 *                     retransmission reaches N as 0 (no echo), so nothing
 *                     reveals the trick (no D-SACK, Eifel or partial-ACK
 *                     undo, no reneging) and N takes no RTT sample from
 *                     it; see DUPACK.md;
 *            then CWR toward E.
 *
 * The decisions are made by the pure state machine in ecnp_fsm.c (its header
 * comment has the state diagrams); this file is the plumbing around it,
 * on top of tcpfwd.ko (kmod/core/tcpfwd.h), which keeps the table, the
 * counters, the hooks and procfs for it:
 *
 *   - a netfilter hook at the end of FORWARD, IPv4 and IPv6, registered per
 *     network namespace while net.ecn_proxy.enabled = 1 (the initial
 *     namespace is enabled at load unless enable_init_net=0);
 *   - per-flow state in tcpfwd's bounded RCU table (an rhashtable), created
 *     by a SYN, per-flow spinlock, collected in the background with
 *     separate handshake, established and closed idle timeouts (a proxied
 *     flow lives at least as long as conntrack's entry for it, ecnp_ct.c);
 *     when the table is full (net.ecn_proxy.max_flows) or an atomic
 *     allocation fails, the flow passes untouched and is counted;
 *   - pickup (FSM.md): a still-open connection whose proxied flow expired
 *     leaves a tombstone (which end was E, and its sequence numbers:
 *     ecnp_tomb.c, net.ecn_proxy.max_tombstones slots, evictions
 *     counted) and is proxied again from its next segment near them; a
 *     SYN on the 4-tuple forgets it; one met without a tombstone (the
 *     module was reloaded) is picked up when its E's data arrives marked
 *     CE and the other end acks it without echoing: both bounded by
 *     max_flows like SYNs, the flow set up before it is in the table
 *     (tcpfwd_flow_add()), the tombstone forgotten only once it is;
 *   - flow offloading: a flow the proxy proxies is kept off nftables'
 *     flowtable fast path (IPS_NAT_CLASH on its conntrack entry, ecnp_ct.c),
 *     which would otherwise carry it past this hook half-ECN;
 *   - a segment outside the flow's window (what someone who knows only
 *     the 4-tuple can send: a spoofed RST, FIN, ECE, CE or CWR) changes
 *     nothing, does not keep the flow alive and is counted
 *     (out_of_window; the state machine checks it, FSM.md);
 *   - a per-destination cache of failed SYN upgrades (RFC 3168 6.1.1.1
 *     fallback), direct-mapped, bounded and expiring;
 *   - header edits with skb_ensure_writable() and incremental checksums
 *     (correct under CHECKSUM_PARTIAL); a GSO packet that would be dropped
 *     whole is segmented first and only one segment is dropped; one that
 *     cannot be (bridged, or the segmentation failed) goes through the
 *     state machine whole, nothing of it dropped (gso_drop_skipped);
 *   - packets it sends itself (the segments of such a GSO packet, an ACK
 *     and its injected duplicates or, without SACK, a held ACK and its
 *     copies) are stolen and handed to the hook's
 *     okfn (tcpfwd_pass_on()), as nf_reinject() does after the last hook:
 *     they go on exactly as an accepted packet would, through routing's
 *     output, POSTROUTING (conntrack confirmation, NAT) and the egress
 *     qdisc, carrying the original's conntrack entry.  The in-tree
 *     alternatives send through ip_local_out(): nf_dup_ipv4 untracks its
 *     copies, so on a masquerading router a duplicate ACK toward a WAN
 *     host would leave with the LAN source address; synproxy_send_tcp()
 *     passes LOCAL_OUT and the OUTPUT rules, which a forwarded ACK should
 *     not.  The cost: a FORWARD hook at our own priority (LAST) that was
 *     registered before ours runs after it (netfilter puts a later hook in
 *     front of earlier ones of equal priority) and does not see stolen
 *     packets; VM test proxy_inject_path measures all of this;
 *   - per-CPU counters in /proc/net/ecn_proxy/stats, one line per flow in
 *     /proc/net/ecn_proxy/flows, the fallback cache in
 *     /proc/net/ecn_proxy/fallback ("flush" empties it), per-netns sysctls
 *     under net.ecn_proxy (outside init_net the limits only below
 *     init_net's: the owner of a user namespace can write them).
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/math64.h>
#include <linux/module.h>
#include <linux/netfilter.h>
#include <linux/netfilter_bridge.h>
#include <linux/netfilter_ipv4.h>
#include <linux/netfilter_ipv6.h>
#include <linux/proc_fs.h>
#include <linux/seq_file.h>
#include <linux/slab.h>
#include <linux/sysctl.h>
#include <net/inet_ecn.h>
#include <net/net_namespace.h>
#include <net/netns/generic.h>

#include "../core/tcpfwd.h"
#include "../core/tcpfwd_compat.h"
#include "../core/tcpfwd_opt.h"
#include "ecnp_ct.h"
#include "ecnp_fsm.h"
#include "ecnp_opt.h"
#include "ecnp_tomb.h"

static bool enable_init_net = true;
module_param(enable_init_net, bool, 0444);
MODULE_PARM_DESC(enable_init_net,
		 "enable the proxy in the initial network namespace at load (default: 1)");

#define ECNP_FB_SLOTS		256
#define ECNP_FB_NAME_MAX	16
/* dupack-fast: ACK copies per netns at most, and their headroom */
#define ECNP_STASH_MAX		1024
#define ECNP_STASH_HEADROOM	128
/* proxied connections whose flow expired, remembered for pickup */
#define ECNP_TOMB_SECS		432000	/* conntrack's established timeout */

enum ecnp_stat {
	ECNP_STAT_FLOWS_SEEN,
	ECNP_STAT_FLOWS_BOTH_ECN,
	ECNP_STAT_FLOWS_NEITHER,
	ECNP_STAT_FLOWS_PROXIED_E_RESPONDER,
	ECNP_STAT_FLOWS_PROXIED_E_INITIATOR,
	ECNP_STAT_FLOWS_FALLBACK,
	ECNP_STAT_FLOWS_PASSTHROUGH,
	ECNP_STAT_FLOWS_EXPIRED,
	ECNP_STAT_SYN_FALLBACKS,
	ECNP_STAT_FALLBACK_HITS,
	ECNP_STAT_SEGS_ECT_SET,
	ECNP_STAT_SEGS_CE_CLEARED,
	ECNP_STAT_SEGS_ECT_CLEARED,
	ECNP_STAT_SEGS_ECE_SET,
	ECNP_STAT_SEGS_ECE_CLEARED,
	ECNP_STAT_SEGS_CWR_SET,
	ECNP_STAT_SEGS_CWR_CLEARED,
	ECNP_STAT_CONGESTION_EVENTS,
	ECNP_STAT_SEGS_DROPPED,
	ECNP_STAT_GSO_SEGMENTED,
	ECNP_STAT_DUPACKS_INJECTED,
	ECNP_STAT_ACKS_HELD,
	ECNP_STAT_TSECR_REWRITTEN,
	ECNP_STAT_REXMIT_SUPPRESSED,
	ECNP_STAT_DUPACK_ABORTS,
	ECNP_STAT_ACKS_ABSORBED,
	ECNP_STAT_ACKS_COPIED,
	ECNP_STAT_EVENTS_ANSWERED,
	ECNP_STAT_TABLE_FULL,
	ECNP_STAT_ALLOC_FAILED,
	ECNP_STAT_MALFORMED,
	ECNP_STAT_EDIT_FAILED,
	ECNP_STAT_OUT_OF_WINDOW,
	ECNP_STAT_FLOWS_SIGNED,
	ECNP_STAT_GSO_DROP_SKIPPED,
	ECNP_STAT_FLOWS_PICKED_UP,
	ECNP_STAT_FLOWS_EXPIRED_PROXIED,
	ECNP_STAT_FLOWS_OFFLOAD_BLOCKED,
	ECNP_STAT_FLOWS_OFFLOADED_PROXIED,
	ECNP_STAT_PICKUPS_OFFLOADED,
	ECNP_STAT_FLOWS_VERIFY,
	ECNP_STAT_TOMBSTONES_EVICTED,
	ECNP_STAT_FLOWS_CT_MARKED,
	ECNP_STAT_SIGNALS_WITHDRAWN,
	ECNP_STAT_ACKS_CLAMPED,
	ECNP_STAT_REXMIT_ANSWERED,
	ECNP_STAT_NR,
};

static const char * const ecnp_stat_names[ECNP_STAT_NR] = {
	[ECNP_STAT_FLOWS_SEEN]			= "flows_seen",
	[ECNP_STAT_FLOWS_BOTH_ECN]		= "flows_both_ecn",
	[ECNP_STAT_FLOWS_NEITHER]		= "flows_neither_ecn",
	[ECNP_STAT_FLOWS_PROXIED_E_RESPONDER]	= "flows_proxied_ecn_responder",
	[ECNP_STAT_FLOWS_PROXIED_E_INITIATOR]	= "flows_proxied_ecn_initiator",
	[ECNP_STAT_FLOWS_FALLBACK]		= "flows_fallback",
	[ECNP_STAT_FLOWS_PASSTHROUGH]		= "flows_passthrough",
	[ECNP_STAT_FLOWS_EXPIRED]		= "flows_expired",
	[ECNP_STAT_SYN_FALLBACKS]		= "syn_fallbacks",
	[ECNP_STAT_FALLBACK_HITS]		= "fallback_cache_hits",
	[ECNP_STAT_SEGS_ECT_SET]		= "segs_ect_set",
	[ECNP_STAT_SEGS_CE_CLEARED]		= "segs_ce_cleared",
	[ECNP_STAT_SEGS_ECT_CLEARED]		= "segs_ect_cleared",
	[ECNP_STAT_SEGS_ECE_SET]		= "segs_ece_set",
	[ECNP_STAT_SEGS_ECE_CLEARED]		= "segs_ece_cleared",
	[ECNP_STAT_SEGS_CWR_SET]		= "segs_cwr_set",
	[ECNP_STAT_SEGS_CWR_CLEARED]		= "segs_cwr_cleared",
	[ECNP_STAT_CONGESTION_EVENTS]		= "congestion_events",
	[ECNP_STAT_SEGS_DROPPED]		= "segs_dropped",
	[ECNP_STAT_GSO_SEGMENTED]		= "gso_segmented",
	[ECNP_STAT_DUPACKS_INJECTED]		= "dupacks_injected",
	[ECNP_STAT_ACKS_HELD]			= "acks_held",
	[ECNP_STAT_TSECR_REWRITTEN]		= "tsecr_rewritten",
	[ECNP_STAT_REXMIT_SUPPRESSED]		= "rexmit_suppressed",
	[ECNP_STAT_DUPACK_ABORTS]		= "dupack_aborts",
	[ECNP_STAT_ACKS_ABSORBED]		= "acks_absorbed",
	[ECNP_STAT_ACKS_COPIED]			= "acks_copied",
	[ECNP_STAT_EVENTS_ANSWERED]		= "events_answered",
	[ECNP_STAT_TABLE_FULL]			= "table_full",
	[ECNP_STAT_ALLOC_FAILED]		= "alloc_failed",
	[ECNP_STAT_MALFORMED]			= "malformed",
	[ECNP_STAT_EDIT_FAILED]			= "edit_failed",
	[ECNP_STAT_OUT_OF_WINDOW]		= "out_of_window",
	[ECNP_STAT_FLOWS_SIGNED]		= "flows_signed",
	[ECNP_STAT_GSO_DROP_SKIPPED]		= "gso_drop_skipped",
	[ECNP_STAT_FLOWS_PICKED_UP]		= "flows_picked_up",
	[ECNP_STAT_FLOWS_EXPIRED_PROXIED]	= "flows_expired_proxied",
	[ECNP_STAT_FLOWS_OFFLOAD_BLOCKED]	= "flows_offload_blocked",
	[ECNP_STAT_FLOWS_OFFLOADED_PROXIED]	= "flows_offloaded_proxied",
	[ECNP_STAT_PICKUPS_OFFLOADED]		= "pickups_offloaded",
	[ECNP_STAT_FLOWS_VERIFY]		= "flows_verify",
	[ECNP_STAT_TOMBSTONES_EVICTED]		= "tombstones_evicted",
	[ECNP_STAT_FLOWS_CT_MARKED]		= "flows_ct_marked",
	[ECNP_STAT_SIGNALS_WITHDRAWN]		= "signals_withdrawn",
	[ECNP_STAT_ACKS_CLAMPED]		= "acks_clamped",
	[ECNP_STAT_REXMIT_ANSWERED]		= "rexmit_answered",
};

static const char * const ecnp_fb_names[] = {
	[ECNP_FB_NONE]		= "none",
	[ECNP_FB_DROP]		= "drop",
	[ECNP_FB_DUPACK]	= "dupack",
	[ECNP_FB_DUPACK_RWND]	= "dupack-rwnd",
	[ECNP_FB_DUPACK_FAST]	= "dupack-fast",
};

/*
 * A destination to which an upgraded SYN had to fall back.  A slot may sit
 * unused for months, longer than 32-bit jiffies can be compared across
 * (2^31 ticks: 25 days at HZ=1000), so its expiry is in 64-bit jiffies.
 */
struct ecnp_fb_slot {
	struct in6_addr addr;
	u8 family;
	u64 expires;		/* get_jiffies_64() */
};

/*
 * The tombstones (ecnp_tomb.h): proxied connections whose flow expired
 * while they were idle, which end was E and which connection it was, so
 * that the connection is proxied again at once when it wakes up
 * (ecnp_pickup_wanted()).  Expiry in get_jiffies_64(), as ecnp_fb_slot.
 * Replaced whole when max_tombstones changes (ecnp_proc_tombs()): the
 * packet path reads it under RCU.
 */
struct ecnp_tomb_tab {
	struct rcu_head rcu;
	struct ecnp_tombs t;	/* last: its slots follow */
};

struct ecnp_net {
	struct tcpfwd_net tn;		/* flows, counters, hooks, procfs */
	struct ctl_table_header *sysctl_hdr;
	struct ecnp_net *init_en;	/* init_net's: bounds the limits */

	/* sysctls */
	int enabled;
	int feedback;			/* enum ecnp_feedback */
	/* the limits: in another netns never above init_net's (M3) */
	int max_flows;
	int timeout_handshake;		/* seconds */
	int timeout_established;
	int timeout_closed;
	int fallback_timeout;
	int max_tombstones;		/* slots of *tombs */

	spinlock_t fb_lock;		/* protects fb[] */
	u32 fb_seed;
	struct ecnp_fb_slot fb[ECNP_FB_SLOTS];

	atomic_t stashed;		/* dupack-fast: flows' ACK copies */

	spinlock_t tomb_lock;		/* protects *tombs (hints read without) */
	struct mutex tomb_mutex;	/* serialises replacing it */
	struct ecnp_tomb_tab __rcu *tombs;
};

struct ecnp_flow_counters {
	u32 segs;
	u32 ect_set;
	u32 ce_cleared;
	u32 ece_set;
	u32 cwr_set;
	u32 cong_events;
	u32 dropped;
};

/*
 * Per-flow state: the shared flow header, the FSM, counters and
 * dupack-fast's ACK copy; 216 bytes on x86-64, from the module's own slab
 * cache (see struct ecnp_fsm).
 */
struct ecnp_flow {
	struct tcpfwd_flow base;	/* base.fast: decided and not closed */
	struct ecnp_fsm fsm;
	bool closed;		/* RST or both FINs: closed timeout */
	bool decided;		/* SAME/PASS: its segments without SYN, FIN
				 * or RST take the fast exit (ecnp_process())
				 */
	bool offloaded;		/* seen offloaded in phase 2 (counted once) */
	bool stepped;		/* its first segment was stepped */
	struct ecnp_flow_counters cnt;
	struct sk_buff *stash;	/* dupack-fast: a copy of E's newest ACK
				 * in a hold, or NULL (ecnp_stash_keep())
				 */
};

/*
 * docs/design.md: 216 bytes on x86-64 and arm64, 192-196 on 32-bit arm,
 * without lock debugging (which grows the header's spinlock); a flow and
 * its share of the table's buckets (27 bytes at the most) within 256.
 */
#if !defined(CONFIG_DEBUG_SPINLOCK) && !defined(CONFIG_DEBUG_LOCK_ALLOC)
static_assert(sizeof(struct ecnp_flow) <= (BITS_PER_LONG == 64 ? 216 : 196),
	      "struct ecnp_flow: the size docs/design.md gives");
static_assert(sizeof(struct ecnp_flow) + 27 <= 256,
	      "struct ecnp_flow: a flow within 256 bytes");
#endif

/* A consistent snapshot of a flow for /proc/net/ecn_proxy/flows. */
struct ecnp_flow_view {
	struct ecnp_fsm fsm;
	struct ecnp_flow_counters cnt;
	unsigned long expires;
};

static unsigned int ecnp_net_id __read_mostly;
/* 192-216 B: kmalloc-256 where 6.1 has no kmalloc-192 (arm64, ath79) */
static struct kmem_cache *ecnp_flow_cache __read_mostly;

static struct ecnp_net *ecnp_pernet(const struct net *net)
{
	return net_generic(net, ecnp_net_id);
}

/*
 * A limit as it applies: the namespace's own value @own, capped by
 * init_net's current one @init (which may have been lowered since the
 * namespace set its own); in init_net both are the same.
 */
static int ecnp_limit(const int *own, const int *init)
{
	return min(READ_ONCE(*own), READ_ONCE(*init));
}

/* timeout_closed as it applies, in jiffies */
static unsigned long ecnp_closed_timeout(const struct ecnp_net *en)
{
	return (unsigned long)ecnp_limit(&en->timeout_closed,
					 &en->init_en->timeout_closed) * HZ;
}

static void ecnp_count(struct ecnp_net *en, enum ecnp_stat s)
{
	tcpfwd_count(&en->tn, s);
}

/* --- SYN fallback cache ------------------------------------------------ */

static struct ecnp_fb_slot *ecnp_fb_slot(struct ecnp_net *en,
					 const struct in6_addr *addr)
{
	u32 h = jhash2((const u32 *)addr, 4, en->fb_seed);

	return &en->fb[h % ECNP_FB_SLOTS];
}

static bool ecnp_fb_lookup(struct ecnp_net *en, const struct in6_addr *addr,
			   u8 family)
{
	struct ecnp_fb_slot *s = ecnp_fb_slot(en, addr);
	bool hit;

	spin_lock_bh(&en->fb_lock);
	hit = s->family == family && ipv6_addr_equal(&s->addr, addr) &&
	      time_before64(get_jiffies_64(), s->expires);
	spin_unlock_bh(&en->fb_lock);
	return hit;
}

static void ecnp_fb_insert(struct ecnp_net *en, const struct in6_addr *addr,
			   u8 family)
{
	struct ecnp_fb_slot *s = ecnp_fb_slot(en, addr);

	spin_lock_bh(&en->fb_lock);
	s->addr = *addr;
	s->family = family;
	s->expires = get_jiffies_64() +
		     (u64)ecnp_limit(&en->fallback_timeout,
				     &en->init_en->fallback_timeout) * HZ;
	spin_unlock_bh(&en->fb_lock);
}

/* --- proxied connections whose flow expired (pickup) ------------------- */

static u32 ecnp_tomb_hash(const struct ecnp_net *en,
			  const struct tcpfwd_flow_key *key)
{
	BUILD_BUG_ON(sizeof(*key) != ECNP_TOMB_KEY_WORDS * sizeof(u32));
	return jhash2((const u32 *)key, ECNP_TOMB_KEY_WORDS, en->fb_seed) | 1;
}

static struct ecnp_tomb_tab *ecnp_tomb_tab_alloc(u32 n)
{
	struct ecnp_tomb_tab *tab;

	tab = kvzalloc(struct_size(tab, t.slot, n), GFP_KERNEL_ACCOUNT);
	if (tab)
		ecnp_tombs_init(&tab->t, n);
	return tab;
}

/* The collector expired a flow in phase 2: remember the connection. */
static void ecnp_tomb_insert(struct ecnp_net *en,
			     const struct tcpfwd_flow_key *key, bool e_is_lo,
			     const struct ecnp_conn_id *id)
{
	struct ecnp_tomb_tab *tab;
	struct ecnp_tomb tomb = {
		.hash = ecnp_tomb_hash(en, key),
		.e_is_lo = e_is_lo,
		.id = *id,
	};
	u64 now = get_jiffies_64();
	bool evicted;

	memcpy(tomb.key, key, sizeof(tomb.key));
	tomb.expires = now + (u64)ECNP_TOMB_SECS * HZ;
	spin_lock_bh(&en->tomb_lock);
	tab = rcu_dereference_protected(en->tombs,
					lockdep_is_held(&en->tomb_lock));
	evicted = tab && ecnp_tombs_put(&tab->t, &tomb, now);
	spin_unlock_bh(&en->tomb_lock);
	if (evicted)
		ecnp_count(en, ECNP_STAT_TOMBSTONES_EVICTED);
}

/* The table @tab may hold a tombstone that has not expired at @now. */
static bool ecnp_tombs_live(const struct ecnp_tomb_tab *tab, u64 now)
{
	return tab && READ_ONCE(tab->t.live) &&
	       time_before64(now, READ_ONCE(tab->t.last));
}

/*
 * The tombstone of @key, left in place (ecnp_tomb_forget() takes it once
 * the connection has its flow again).  On the packet path for every
 * segment of a connection without a flow, under RCU, so the common case
 * (no tombstone, or another connection's) costs a hash and unlocked reads
 * of the table's count and of the slot's hash.
 */
static bool ecnp_tomb_find(struct ecnp_net *en,
			   const struct tcpfwd_flow_key *key,
			   struct ecnp_tomb *out)
{
	struct ecnp_tomb_tab *tab = rcu_dereference(en->tombs);
	u64 now = get_jiffies_64();
	struct ecnp_tomb *slot;
	bool hit;
	u32 h;

	if (!ecnp_tombs_live(tab, now))
		return false;
	h = ecnp_tomb_hash(en, key);
	slot = ecnp_tombs_slot(&tab->t, h);
	if (!slot || READ_ONCE(slot->hash) != h)
		return false;
	spin_lock_bh(&en->tomb_lock);
	/* the table in place now (a resize may have replaced @tab) */
	tab = rcu_dereference_protected(en->tombs,
					lockdep_is_held(&en->tomb_lock));
	hit = ecnp_tombs_find(&tab->t, h, (const u32 *)key, now, out);
	spin_unlock_bh(&en->tomb_lock);
	return hit;
}

/* Forget @key's tombstone: taken by a pickup, or a new connection. */
static void ecnp_tomb_forget(struct ecnp_net *en,
			     const struct tcpfwd_flow_key *key)
{
	struct ecnp_tomb_tab *tab = rcu_dereference(en->tombs);
	struct ecnp_tomb *slot;
	u32 h;

	if (!tab || !READ_ONCE(tab->t.live))
		return;
	h = ecnp_tomb_hash(en, key);
	slot = ecnp_tombs_slot(&tab->t, h);
	if (!slot || READ_ONCE(slot->hash) != h)
		return;
	spin_lock_bh(&en->tomb_lock);
	tab = rcu_dereference_protected(en->tombs,
					lockdep_is_held(&en->tomb_lock));
	ecnp_tombs_forget(&tab->t, h, (const u32 *)key);
	spin_unlock_bh(&en->tomb_lock);
}

/* An ACK copy of dupack-fast that is not sent: freed and uncounted. */
static void ecnp_stash_free(struct ecnp_net *en, struct sk_buff *skb)
{
	if (!skb)
		return;
	atomic_dec(&en->stashed);
	consume_skb(skb);
}

/*
 * @f is freed without the collector (the table is destroyed, or @f lost
 * the race to be added): no packet path reaches it.  Its ACK copy is
 * uncounted too, so that ecnp_net_exit() can check that none is left.
 */
static void ecnp_flow_free(struct tcpfwd_net *tn, struct tcpfwd_flow *f)
{
	struct ecnp_net *en = container_of(tn, struct ecnp_net, tn);
	struct ecnp_flow *ef = container_of(f, struct ecnp_flow, base);

	ecnp_stash_free(en, ef->stash);
}

/* the collector unlinked @f (under f->lock) */
static void ecnp_flow_gone(struct tcpfwd_net *tn, struct tcpfwd_flow *f)
{
	struct ecnp_net *en = container_of(tn, struct ecnp_net, tn);
	struct ecnp_flow *ef = container_of(f, struct ecnp_flow, base);
	struct ecnp_conn_id id;

	ecnp_stash_free(en, ef->stash);
	ef->stash = NULL;
	if (!ecnp_fsm_in_phase2(&ef->fsm) || ef->closed)
		return;
	/* a connection still open: half-ECN if it wakes up unrecognised */
	ecnp_count(en, ECNP_STAT_FLOWS_EXPIRED_PROXIED);
	ecnp_fsm_conn_id(&ef->fsm, &id);
	ecnp_tomb_insert(en, &f->key, ecnp_fsm_e_is_a(&ef->fsm) == f->a_is_lo,
			 &id);
}

/* --- packet path --------------------------------------------------------- */

static const struct in6_addr *ecnp_b_addr(const struct tcpfwd_flow *f)
{
	return f->a_is_lo ? &f->key.hi_addr : &f->key.lo_addr;
}

/*
 * The options the state machine needs: timestamps, SACK(-permitted).  Out
 * of line: its buffers (and their stack canary) are for the segments
 * whose options are read, not for every segment ecnp_fill_pkt() fills.
 */
static noinline void ecnp_fill_opts(const struct sk_buff *skb,
				    const struct tcpfwd_pkt *p,
				    struct ecnp_pkt *ep)
{
	unsigned int olen = p->thlen - sizeof(struct tcphdr);
	struct tcpfwd_sack_block blk[TCPFWD_SACK_MAX_BLOCKS];
	u8 buf[TCPFWD_OPT_MAX_LEN];
	unsigned int i, n;
	const u8 *opts = tcpfwd_opts(skb, p, buf);

	if (!opts)
		return;
	if (tcpfwd_opt_get_ts(opts, olen, &ep->tsval, &ep->tsecr) == 1)
		ep->opt |= ECNP_OPT_TS;
	if (p->th.syn) {
		ecnp_syn_opts(opts, olen, ep);
		return;
	}
	if (!p->th.ack ||
	    tcpfwd_opt_get_sack(opts, olen, blk, ARRAY_SIZE(blk), &n) != 1)
		return;
	for (i = 0; i < min_t(unsigned int, n, ARRAY_SIZE(blk)); i++) {
		/* an inverted block is never valid */
		if (!before(blk[i].start, blk[i].end))
			continue;
		/* below the ACK: a D-SACK (RFC 2883) */
		if (before(blk[i].start, ep->ack))
			ep->opt |= ECNP_OPT_DSACK;
		if (!after(blk[i].start, ep->ack))
			continue;
		if (!(ep->opt & ECNP_OPT_SACK) ||
		    after(blk[i].end, ep->sack_high))
			ep->sack_high = blk[i].end;
		ep->opt |= ECNP_OPT_SACK;
	}
}

/*
 * Options are walked only when the state machine reads them.  Inline: on
 * every segment that is stepped.
 */
static __always_inline void ecnp_fill_pkt(const struct ecnp_flow *ef,
					  const struct sk_buff *skb,
					  const struct tcpfwd_pkt *p,
					  enum ecnp_feedback mode,
					  struct ecnp_pkt *ep)
{
	const struct tcpfwd_flow *f = &ef->base;

	memset(ep, 0, sizeof(*ep));
	ep->seq = ntohl(p->th.seq);
	ep->ack = ntohl(p->th.ack_seq);
	ep->len = p->payload;
	ep->flags = tcp_flag_byte(&p->th) | ((p->th.res1 & 1) << 8);
	ep->dir = tcpfwd_from_a(f, p) ? ECNP_DIR_A : ECNP_DIR_B;
	ep->ecn = p->ecn;
	ep->win = ntohs(p->th.window);
	ep->seg_len = min_t(u32, skb_is_gso(skb) ? skb_shinfo(skb)->gso_size :
			    p->payload, U16_MAX);
	if (ecnp_fsm_wants_opts(&ef->fsm, ep->flags, mode))
		ecnp_fill_opts(skb, p, ep);
}

/*
 * The counters of a step's events (ECNP_EV_*) and of a drop.  Return:
 * true if the segment's edits are not counted (dropped, absorbed, or N's
 * suppressed retransmission).
 */
static bool ecnp_account_events(struct ecnp_net *en, struct ecnp_flow *ef,
				u32 ret)
{
	static const struct {
		u32 ev;
		enum ecnp_stat stat;
	} outcomes[] = {
		{ ECNP_EV_OUT_BOTH, ECNP_STAT_FLOWS_BOTH_ECN },
		{ ECNP_EV_OUT_NEITHER, ECNP_STAT_FLOWS_NEITHER },
		{ ECNP_EV_OUT_E_RESP, ECNP_STAT_FLOWS_PROXIED_E_RESPONDER },
		{ ECNP_EV_OUT_E_INIT, ECNP_STAT_FLOWS_PROXIED_E_INITIATOR },
		{ ECNP_EV_OUT_FALLBACK, ECNP_STAT_FLOWS_FALLBACK },
		{ ECNP_EV_OUT_PASS, ECNP_STAT_FLOWS_PASSTHROUGH },
	};
	unsigned int i;

	if (ret & ECNP_EV_OUT_MASK)
		for (i = 0; i < ARRAY_SIZE(outcomes); i++)
			if (ret & outcomes[i].ev)
				ecnp_count(en, outcomes[i].stat);
	if (ret & ECNP_EV_SYN_FALLBACK)
		ecnp_count(en, ECNP_STAT_SYN_FALLBACKS);
	if (ret & ECNP_EV_SIGNED)
		ecnp_count(en, ECNP_STAT_FLOWS_SIGNED);
	if ((ret & ECNP_EV_SIGNAL_WITHDRAWN) == ECNP_EV_SIGNAL_WITHDRAWN) {
		/* counted in congestion_events when it was given */
		ecnp_count(en, ECNP_STAT_SIGNALS_WITHDRAWN);
		ef->cnt.cong_events--;
	} else if (ret & ECNP_EV_CONG_SIGNAL) {
		ecnp_count(en, ECNP_STAT_CONGESTION_EVENTS);
		ef->cnt.cong_events++;
	} else if (ret & ECNP_EV_DUPACK_ABORT) {
		ecnp_count(en, ECNP_STAT_DUPACK_ABORTS);
	}
	if (ret & ECNP_EV_CONG_ANSWERED)
		ecnp_count(en, ECNP_STAT_EVENTS_ANSWERED);
	if (ret & ECNP_EV_OUT_OF_WINDOW)
		ecnp_count(en, ECNP_STAT_OUT_OF_WINDOW);
	if (ret & ECNP_EV_REXMIT_SUPPRESSED) {
		ecnp_count(en, ECNP_STAT_REXMIT_SUPPRESSED);
		return true;
	} else if (ret & ECNP_EV_NOT_DROPPED) {
		ecnp_count(en, ECNP_STAT_GSO_DROP_SKIPPED);
	}
	if (ret & ECNP_EV_ACK_ABSORBED) {
		ecnp_count(en, ECNP_STAT_ACKS_ABSORBED);
		return true;
	}
	if (ret & ECNP_ACT_DROP) {
		ecnp_count(en, ECNP_STAT_SEGS_DROPPED);
		ef->cnt.dropped++;
		return true;
	}
	return false;
}

/* The counters of a step's header edits (FLAG_EDITS, HOLD_ACK, CLAMP_WIN). */
static void ecnp_account_edits(struct ecnp_net *en, struct ecnp_flow *ef,
			       const struct tcpfwd_pkt *p, u32 ret)
{
	/* N's new data in the steady state: the one test */
	if (ret == ECNP_ACT_SET_ECT0) {
		ecnp_count(en, ECNP_STAT_SEGS_ECT_SET);
		ef->cnt.ect_set++;
		return;
	}
	if (ret & ECNP_ACT_HOLD_ACK)
		ecnp_count(en, ECNP_STAT_ACKS_HELD);
	if (ret & ECNP_ACT_CLAMP_WIN)
		ecnp_count(en, ECNP_STAT_ACKS_CLAMPED);
	if (ret & ECNP_ACT_SET_ECT0) {
		ecnp_count(en, ECNP_STAT_SEGS_ECT_SET);
		ef->cnt.ect_set++;
	}
	if (ret & ECNP_ACT_CLEAR_ECN) {
		if (p->ecn == INET_ECN_CE) {
			ecnp_count(en, ECNP_STAT_SEGS_CE_CLEARED);
			ef->cnt.ce_cleared++;
		} else {
			ecnp_count(en, ECNP_STAT_SEGS_ECT_CLEARED);
		}
	}
	if (ret & ECNP_ACT_SET_ECE) {
		ecnp_count(en, ECNP_STAT_SEGS_ECE_SET);
		ef->cnt.ece_set++;
	}
	if (ret & ECNP_ACT_CLEAR_ECE)
		ecnp_count(en, ECNP_STAT_SEGS_ECE_CLEARED);
	if (ret & ECNP_ACT_SET_CWR) {
		ecnp_count(en, ECNP_STAT_SEGS_CWR_SET);
		ef->cnt.cwr_set++;
	}
	if (ret & ECNP_ACT_CLEAR_CWR)
		ecnp_count(en, ECNP_STAT_SEGS_CWR_CLEARED);
}

/*
 * A step's counters.  Most steps have no event and one edit or none: the
 * events' tests are skipped as a whole (ECNP_EV_MASK, and the drop).
 */
static void ecnp_account(struct ecnp_net *en, struct ecnp_flow *ef,
			 const struct tcpfwd_pkt *p, u32 ret)
{
	if ((ret & (ECNP_EV_MASK | ECNP_ACT_DROP)) &&
	    ecnp_account_events(en, ef, ret))
		return;
	if (ret & (ECNP_ACT_FLAG_EDITS | ECNP_ACT_HOLD_ACK |
		   ECNP_ACT_CLAMP_WIN))
		ecnp_account_edits(en, ef, p, ret);
}

/*
 * An open connection in phase 2: timeout_established, and at least as
 * long as conntrack keeps it.
 */
static void ecnp_expire_open(struct ecnp_net *en, struct ecnp_flow *ef,
			     const struct sk_buff *skb)
{
	unsigned long t;

	t = (unsigned long)ecnp_limit(&en->timeout_established,
				      &en->init_en->timeout_established) * HZ;
	tcpfwd_flow_expire_in(&ef->base, max(t, ecnp_ct_expires(skb)));
}

/* Under ef->base.lock: when the flow may be forgotten. */
static void ecnp_set_expiry(struct ecnp_net *en, struct ecnp_flow *ef,
			    const struct sk_buff *skb, u32 ret)
{
	const struct ecnp_net *bound = en->init_en;
	u8 st = ef->fsm.state;
	int secs;

	/*
	 * Most segments: a proxied flow, open, in phase 2 before and after
	 * (never decided: needs nothing is not phase 2), which the tests
	 * below would also lead to ecnp_expire_open().
	 */
	if (ecnp_fsm_in_phase2(&ef->fsm) && !ef->closed && !ef->decided &&
	    !(ret & ECNP_EV_CLOSED)) {
		ecnp_expire_open(en, ef, skb);
		return;
	}
	/*
	 * conntrack's copy of the decision (ecnp_hook()) follows ef->decided,
	 * here under the lock: set when a flow is decided or a decided flow
	 * is stepped, cleared when it is not any more.  Other flows never
	 * have it, and pay nothing for it.
	 */
	if (st < ECNP_S_SAME) {
		/* (re)started handshake: a new connection on this tuple */
		ef->closed = false;
		ef->decided = false;
		WRITE_ONCE(ef->base.fast, false);
		ecnp_ct_mark(skb, false);
	}
	if (ret & ECNP_EV_CLOSED)
		ef->closed = true;
	if (ef->decided) {
		/* closed: its last segments take the slow path */
		WRITE_ONCE(ef->base.fast, !ef->closed);
		if (ecnp_ct_mark(skb, true))
			ecnp_count(en, ECNP_STAT_FLOWS_CT_MARKED);
		return;
	}
	if (ecnp_fsm_needs_nothing(&ef->fsm)) {
		/*
		 * nothing more to do for this flow: from now on its segments
		 * without SYN, FIN or RST take the fast exit, which keeps it
		 * timeout_closed after the latest (ecnp_process())
		 */
		ef->decided = true;
		ecnp_fsm_untrack(&ef->fsm);
		WRITE_ONCE(ef->base.fast, !ef->closed);
		if (ecnp_ct_mark(skb, true))
			ecnp_count(en, ECNP_STAT_FLOWS_CT_MARKED);
		secs = ecnp_limit(&en->timeout_closed, &bound->timeout_closed);
	} else if (ef->closed || st == ECNP_S_CLOSED) {
		secs = ecnp_limit(&en->timeout_closed, &bound->timeout_closed);
	} else if (ecnp_fsm_in_phase2(&ef->fsm)) {
		ecnp_expire_open(en, ef, skb);
		return;
	} else if (st == ECNP_S_VERIFY) {
		/* an open connection that may yet be proxied */
		secs = ecnp_limit(&en->timeout_established,
				  &bound->timeout_established);
	} else {
		secs = ecnp_limit(&en->timeout_handshake,
				  &bound->timeout_handshake);
	}
	tcpfwd_flow_expire_in(&ef->base, (unsigned long)secs * HZ);
}

static int ecnp_apply(struct sk_buff *skb, const struct tcpfwd_pkt *p,
		      u32 ret)
{
	u8 set = 0, clear = 0;
	int err = 0;

	/* N's new data in the steady state: ECT(0), nothing else */
	if ((ret & ECNP_ACT_FLAG_EDITS) == ECNP_ACT_SET_ECT0)
		return tcpfwd_set_ecn(skb, p, INET_ECN_ECT_0);
	if (ret & ECNP_ACT_SET_ECE)
		set |= TCPHDR_ECE;
	if (ret & ECNP_ACT_CLEAR_ECE)
		clear |= TCPHDR_ECE;
	if (ret & ECNP_ACT_SET_CWR)
		set |= TCPHDR_CWR;
	if (ret & ECNP_ACT_CLEAR_CWR)
		clear |= TCPHDR_CWR;
	if (set | clear)
		err = tcpfwd_set_tcp_flags(skb, p, set, clear);
	if (!err && (ret & ECNP_ACT_SET_ECT0))
		err = tcpfwd_set_ecn(skb, p, INET_ECN_ECT_0);
	else if (!err && (ret & ECNP_ACT_CLEAR_ECN))
		err = tcpfwd_set_ecn(skb, p, INET_ECN_NOT_ECT);
	return err;
}

/* --- dupack: rewriting and injecting E->N ACKs ---------------------------- */

/*
 * A pure ACK rebuilt: new ACK number, window and options; the packet grows
 * or shrinks with the TCP header, the IP length follows.  Both checksums
 * are updated incrementally (ecnp_ack_rebuild()): a wrong one stays wrong,
 * and under CHECKSUM_PARTIAL the pseudo-header's seed follows the length.
 */
static int ecnp_rebuild_ack(struct sk_buff *skb, const struct tcpfwd_pkt *p,
			    const struct ecnp_ack_edit *e)
{
	u8 hdr[TCPFWD_TCPHDR_MAX];
	unsigned int nlen;
	struct tcphdr *th;
	u32 diff;
	int delta;

	/* a pure ACK: all of it linear and ours, the tail room too */
	if (skb_linearize(skb) || skb_ensure_writable(skb, skb->len))
		return -ENOMEM;
	memcpy(hdr, skb->data + p->thoff, p->thlen);
	nlen = ecnp_ack_rebuild(hdr, p->thlen, e, &diff);
	delta = (int)nlen - (int)p->thlen;
	if (delta > 0 && skb_tailroom(skb) < delta &&
	    pskb_expand_head(skb, 0, delta - skb_tailroom(skb), GFP_ATOMIC))
		return -ENOMEM;
	/* the IP length: refused (a length of 0) before anything changed */
	if (delta && tcpfwd_skb_ip_resize(skb, delta))
		return -EINVAL;
	if (delta > 0)
		skb_put(skb, delta);
	else if (delta < 0)
		skb_trim(skb, skb->len + delta);
	/* skb->csum no longer covers the packet; th->check is still right */
	if (skb->ip_summed == CHECKSUM_COMPLETE)
		skb->ip_summed = CHECKSUM_NONE;
	th = (struct tcphdr *)(skb->data + p->thoff);
	memcpy(th, hdr, nlen);
	tcpfwd_th_csum_diff(skb, th, diff);
	/* a pure ACK: its TCP length is its header's */
	tcpfwd_th_csum_tcplen(skb, th, p->thlen, nlen);
	return 0;
}

/*
 * ECNP_ACT_TRIM: keep the TCP payload's first byte, drop the rest.  The
 * TCP checksum follows incrementally (the bytes removed, at their odd
 * offset, and the pseudo-header's length), so a wrong one stays wrong;
 * under CHECKSUM_PARTIAL only the pseudo-header's seed changes.
 */
static int ecnp_trim_payload(struct sk_buff *skb, const struct tcpfwd_pkt *p)
{
	unsigned int keep = p->thoff + p->thlen + 1;
	unsigned int tcplen = skb->len - p->thoff;
	unsigned int cut = skb->len - keep;
	struct tcphdr *th;
	__wsum gone;

	if (p->payload < 2 || skb->len != p->thoff + p->thlen + p->payload)
		return -EINVAL;
	if (tcpfwd_ensure_writable(skb, keep))
		return -ENOMEM;
	gone = skb_checksum(skb, keep, cut, 0);
	/* the IP length and header checksum; a BIG TCP packet has none */
	if (tcpfwd_skb_ip_resize(skb, -(int)cut))
		return -EINVAL;
	if (pskb_trim(skb, keep))
		return -ENOMEM;
	if (skb_is_gso(skb))
		skb_gso_reset(skb);
	if (skb->ip_summed == CHECKSUM_COMPLETE)
		skb->ip_summed = CHECKSUM_NONE;
	th = (struct tcphdr *)(skb->data + p->thoff);
	inet_proto_csum_replace_by_diff(&th->check, skb,
					csum_block_sub(0, gone, keep - p->thoff),
					false, false);
	tcpfwd_th_csum_tcplen(skb, th, tcplen, tcplen - cut);
	return 0;
}

/*
 * Apply an ecnp_ack_edit to an E->N segment (after ecnp_apply()).  Pure
 * ACKs with only timestamp/SACK options are rebuilt (SACK block added);
 * anything else (data, GSO, other options) gets ACK number, window and
 * TSecr edited in place with incremental checksums.
 */
static int ecnp_ack_rewrite(struct sk_buff *skb, const struct tcpfwd_pkt *p,
			    const struct ecnp_ack_edit *e)
{
	unsigned int olen = p->thlen - sizeof(struct tcphdr);
	struct tcphdr *th = tcpfwd_th_writable(skb, p);
	u32 tsval, tsecr, diff = 0;

	if (!th)
		return -ENOMEM;
	if (!p->payload && !skb_is_gso(skb) &&
	    ecnp_opts_rebuildable((u8 *)(th + 1), olen))
		return ecnp_rebuild_ack(skb, p, e);

	inet_proto_csum_replace4(&th->check, skb, th->ack_seq, htonl(e->ack),
				 false);
	th->ack_seq = htonl(e->ack);
	tcpfwd_th_set_window(skb, th, e->win);
	if (e->set_tsecr &&
	    tcpfwd_opt_get_ts((u8 *)(th + 1), olen, &tsval, &tsecr) == 1 &&
	    tcpfwd_opt_set_ts((u8 *)(th + 1), olen, tsval, e->tsecr, &diff) == 1)
		tcpfwd_th_csum_diff(skb, th, diff);
	return 0;
}

/*
 * Send @skb on, then @n copies of it: the simulated loss's duplicate ACKs
 * (ECNP_DUPACKS, each rewritten with @e: with SACK, claiming the segments
 * above the "lost" one; counted in dupacks_injected) or, without SACK,
 * exact copies of a held ACK that stands for more than one duplicate
 * (@e NULL, ecnp_dupacks_due(); acks_copied).  Like ecnp_gso_drop(), the
 * packets continue with okfn (see the file comment for why, and for the
 * one hook they skip).
 */
static unsigned int ecnp_send_dups(struct ecnp_net *en, struct sk_buff *skb,
				   const struct nf_hook_state *state,
				   const struct tcpfwd_pkt *p,
				   const struct ecnp_ack_edit *e,
				   unsigned int n, enum ecnp_stat stat,
				   unsigned int *sent)
{
	struct sk_buff *dup[ECNP_DUPACKS];
	unsigned int i, k = 0;

	BUILD_BUG_ON(ECNP_ACT_COPIES_MAX > ECNP_DUPACKS);
	n = min_t(unsigned int, n, ECNP_DUPACKS);
	for (i = 0; i < n; i++) {
		dup[k] = skb_copy(skb, GFP_ATOMIC);
		if (!dup[k])
			break;
		if (e && ecnp_ack_rewrite(dup[k], p, e)) {
			kfree_skb(dup[k]);
			break;
		}
		k++;
	}
	if (k < n)
		ecnp_count(en, ECNP_STAT_EDIT_FAILED);
	*sent = k;
	tcpfwd_add(&en->tn, stat, k);
	tcpfwd_pass_on(skb, state);
	for (i = 0; i < k; i++)
		tcpfwd_pass_on(dup[i], state);
	return NF_STOLEN;
}

static unsigned int ecnp_gso_drop(struct ecnp_net *en, struct sk_buff *skb,
				  const struct nf_hook_state *state);

/*
 * How a flow created for a segment of a connection without one starts:
 * ecnp_pickup_wanted() sets every field on each of its paths.
 */
struct ecnp_pickup {
	int e;			/* its E (enum ecnp_dir), -1 if unknown */
	bool sack;
	bool tomb;		/* from a tombstone: forget it once added */
	const struct sk_buff *skb;
	const struct tcpfwd_pkt *p;
};

/* A tombstone names @p's connection: its E and whether it had SACK. */
static bool ecnp_pickup_tomb(struct ecnp_net *en, const struct tcpfwd_pkt *p,
			     struct ecnp_pickup *pk)
{
	struct ecnp_pkt ep = {
		.seq = ntohl(p->th.seq),
		.ack = ntohl(p->th.ack_seq),
		.flags = tcp_flag_byte(&p->th),
	};
	struct ecnp_tomb tomb;

	if (!ecnp_tomb_find(en, &p->key, &tomb) ||
	    !ecnp_conn_id_match(&tomb.id, &ep, tomb.e_is_lo == p->src_is_lo))
		return false;
	pk->e = tomb.e_is_lo == p->src_is_lo ? ECNP_DIR_A : ECNP_DIR_B;
	pk->sack = tomb.id.sack;
	return true;
}

/* Out of line: its buffer is for the few segments picked up. */
static noinline bool ecnp_seg_signed(const struct sk_buff *skb,
				     const struct tcpfwd_pkt *p)
{
	unsigned int olen = p->thlen - sizeof(struct tcphdr);
	u8 buf[TCPFWD_OPT_MAX_LEN];
	const u8 *opts = tcpfwd_opts(skb, p, buf);

	return opts && ecnp_opts_signed(opts, olen);
}

/*
 * A segment (no SYN, no RST) of a connection without a flow: pick the
 * connection up (FSM.md, "Pickup") if the proxy proxied it before and its
 * flow expired (a tombstone names E, and the segment lies in that
 * connection's sequence space, ecnp_conn_id_match()), or if the segment
 * is data marked CE, without AccECN's AE (its sender negotiated ECN and
 * may be a proxied connection's E that lost its proxy: the state machine
 * asks the other side).  Never a connection conntrack has put into a
 * flowtable: the proxy would see only the packets that leave the fast
 * path; never a signed segment (TCP-MD5, TCP-AO: ecnp_opts_signed()),
 * whose header the proxy must not edit, as for a signed SYN.  The
 * tombstone stays until the flow is in the table.
 */
static bool ecnp_pickup_wanted(struct ecnp_net *en, const struct sk_buff *skb,
			       const struct tcpfwd_pkt *p,
			       struct ecnp_pickup *pk)
{
	/*
	 * conntrack remembers that the proxy decided this connection needs
	 * nothing (its FIN or RST after its flow expired): not one to pick up
	 */
	if (ecnp_ct_nothing(ecnp_ct_get(skb)))
		return false;
	/* the common case, no tombstone at all, before any stack is zeroed */
	if (ecnp_tombs_live(rcu_dereference(en->tombs), get_jiffies_64()) &&
	    ecnp_pickup_tomb(en, p, pk)) {
		pk->tomb = true;
	} else if (p->ecn == INET_ECN_CE && p->payload && !(p->th.res1 & 1)) {
		pk->e = -1;
		pk->sack = false;
		pk->tomb = false;
	} else {
		return false;
	}
	if (ecnp_seg_signed(skb, p))
		return false;
	if (ecnp_ct_offloaded(skb)) {
		ecnp_count(en, ECNP_STAT_PICKUPS_OFFLOADED);
		return false;
	}
	pk->skb = skb;
	pk->p = p;
	return true;
}

/*
 * tcpfwd_flow_add()'s init: a flow for a pickup has its roles set up
 * before another CPU can find it, so that whichever end's segment locks
 * it first is stepped as one of the connection's (ecnp_fsm_pickup_init()).
 */
static void ecnp_flow_init_pickup(struct tcpfwd_flow *f, void *arg)
{
	struct ecnp_flow *ef = container_of(f, struct ecnp_flow, base);
	const struct ecnp_pickup *pk = arg;
	struct ecnp_pkt ep;

	ecnp_fill_pkt(ef, pk->skb, pk->p, ECNP_FB_NONE, &ep);
	ecnp_fsm_pickup_init(&ef->fsm, &ep, pk->e, pk->sack);
}

/*
 * A packet without a flow.  A SYN (no ACK, no RST) creates one, and
 * forgets any tombstone of the 4-tuple (a new connection); so does a
 * segment of a connection the proxy picks up (ecnp_pickup_wanted()),
 * whose tombstone is forgotten once its flow is added.  The segment's
 * sender is then the flow's A.  Another CPU may have added the flow
 * meanwhile: then that flow.
 */
static struct ecnp_flow *ecnp_flow_new(struct ecnp_net *en,
				       const struct sk_buff *skb,
				       const struct tcpfwd_pkt *p)
{
	enum ecnp_tomb_use use = ecnp_tomb_use(tcp_flag_byte(&p->th));
	bool syn = use == ECNP_TOMB_FORGET;
	/*
	 * Not zeroed on every segment without a flow: ecnp_pickup_wanted()
	 * fills pk, a SYN reads only pk.tomb, tcpfwd_flow_add() sets err
	 */
	struct ecnp_pickup pk __uninitialized;
	enum tcpfwd_insert_err err __uninitialized;
	struct tcpfwd_flow *f;

	if (syn) {
		ecnp_tomb_forget(en, &p->key);
		pk.tomb = false;
	} else if (use != ECNP_TOMB_LOOKUP ||
		   !ecnp_pickup_wanted(en, skb, p, &pk)) {
		return NULL;
	}
	f = tcpfwd_flow_add(&en->tn, &p->key, p->src_is_lo,
			    ecnp_limit(&en->max_flows, &en->init_en->max_flows),
			    syn ? NULL : ecnp_flow_init_pickup, &pk, &err);
	if (!f)		/* counted: table_full or alloc_failed */
		return NULL;
	if (err == TCPFWD_INSERT_OK) {
		ecnp_count(en, ECNP_STAT_FLOWS_SEEN);
		if (pk.tomb)
			ecnp_tomb_forget(en, &p->key);
	}
	/* TCPFWD_INSERT_EXISTS: another CPU created it first */
	return container_of(f, struct ecnp_flow, base);
}

/*
 * Under the flow's lock, after a step: a flow that has just become
 * proxied (roles decided on B's SYN-ACK, or picked up), or may become so
 * (VERIFY), is kept off a flowtable's fast path (ecnp_ct.c); a proxied
 * flow seen offloaded anyway is half-ECN, and is counted once.
 */
static void ecnp_offload_check(struct ecnp_net *en, struct ecnp_flow *ef,
			       const struct sk_buff *skb, u32 ret, bool was_p2,
			       u8 was_state)
{
	bool p2 = ecnp_fsm_in_phase2(&ef->fsm);
	bool verify, now;

	/* phase 2 before and after, no new roles: only the offload check */
	if (p2 && was_p2 && !(ret & (ECNP_EV_OUT_E_RESP | ECNP_EV_OUT_E_INIT)))
		goto offloaded;
	verify = ef->fsm.state == ECNP_S_VERIFY && was_state != ECNP_S_VERIFY;
	now = (ret & (ECNP_EV_OUT_E_RESP | ECNP_EV_OUT_E_INIT)) ||
	      (p2 && !was_p2 && (ef->fsm.flags & ECNP_FL_PICKED_UP)) || verify;
	if (p2 && !was_p2 && (ef->fsm.flags & ECNP_FL_PICKED_UP))
		ecnp_count(en, ECNP_STAT_FLOWS_PICKED_UP);
	if (verify)
		ecnp_count(en, ECNP_STAT_FLOWS_VERIFY);
	if (now && ecnp_ct_keep_slow(skb))
		ecnp_count(en, ECNP_STAT_FLOWS_OFFLOAD_BLOCKED);
offloaded:
	if (p2 && !ef->offloaded && ecnp_ct_offloaded(skb)) {
		ef->offloaded = true;
		ecnp_count(en, ECNP_STAT_FLOWS_OFFLOADED_PROXIED);
	}
}

/* The outcome of one state machine step, applied after the flow's lock. */
struct ecnp_step {
	u32 ret;			/* ECNP_ACT_* | ECNP_EV_* */
	struct ecnp_ack_edit edit;	/* with ECNP_ACT_ACK_EDITS */
	struct ecnp_pkt ep;		/* the segment as stepped */
	struct sk_buff *stash;		/* the flow's ACK copy, taken out
					 * once no longer wanted (or NULL)
					 */
};

/*
 * Under the flow's lock, after a step: dupack-fast's copy of E's ACK once
 * the simulated loss no longer waits for N's retransmission goes to @st,
 * to be sent to N when that retransmission comes
 * (ecnp_act_stash_answers()) or freed (ecnp_stash_send()).
 */
static inline void ecnp_stash_detach(struct ecnp_flow *ef,
				     struct ecnp_step *st)
{
	if (unlikely(ef->stash) && !ecnp_fsm_stash_wanted(&ef->fsm)) {
		st->stash = ef->stash;
		ef->stash = NULL;
	}
}

/*
 * Under the flow's lock, after a step: the ACK edits, the counters, the
 * offload check and the expiry.  @was_p2, @was_state: the flow's phase
 * and state before the step.
 */
static void ecnp_step_tail(struct ecnp_net *en, struct ecnp_flow *ef,
			   const struct sk_buff *skb,
			   const struct tcpfwd_pkt *p, struct ecnp_step *st,
			   bool was_p2, u8 was_state)
{
	if (st->ret & ECNP_ACT_ACK_EDITS)
		ecnp_fsm_ack_edit(&ef->fsm, &st->ep, st->ret, &st->edit);
	ef->cnt.segs++;
	ecnp_account(en, ef, p, st->ret);
	ecnp_offload_check(en, ef, skb, st->ret, was_p2, was_state);
	/* a segment outside the window keeps nothing alive either */
	if (!(st->ret & ECNP_EV_OUT_OF_WINDOW))
		ecnp_set_expiry(en, ef, skb, st->ret);
}

/*
 * Most segments of a proxied flow: in phase 2 before (stepped before, not
 * a SYN) and after the step, open, and a step with header edits only (no
 * event, no drop, no ACK edit).  ecnp_step_tail() would then do exactly
 * this: its other tests are false, or fixed, for such a step.  Return:
 * false if the step was not one of them (the tail is to be run).
 */
static bool ecnp_step_steady(struct ecnp_net *en, struct ecnp_flow *ef,
			     const struct sk_buff *skb,
			     const struct tcpfwd_pkt *p, u32 ret)
{
	if (unlikely((ret & ~ECNP_ACT_FLAG_EDITS) ||
		     !ecnp_fsm_in_phase2(&ef->fsm) || ef->closed ||
		     ef->decided))
		return false;
	ef->cnt.segs++;
	if (ret)
		ecnp_account_edits(en, ef, p, ret);
	/* ecnp_offload_check(), phase 2 before and after, no new roles */
	if (!ef->offloaded && ecnp_ct_offloaded(skb)) {
		ef->offloaded = true;
		ecnp_count(en, ECNP_STAT_FLOWS_OFFLOADED_PROXIED);
	}
	/* ecnp_set_expiry()'s first case */
	ecnp_expire_open(en, ef, skb);
	return true;
}

/*
 * Under the flow's lock: feed the packet to the state machine and update
 * the flow's counters and expiry.  Returns false if the flow is dead or if
 * a GSO packet must be segmented first (*segment set) because one of its
 * segments is to be dropped.  A GSO packet that cannot be segmented
 * (@may_segment false: the segmentation failed; or bridged: okfn would
 * need the MAC header carried over to each segment) is stepped whole with
 * ECNP_PF_NO_DROP: nothing is dropped, the state stays right, and what
 * was not done is counted (gso_drop_skipped).
 */
static bool ecnp_step(struct ecnp_net *en, struct ecnp_flow *ef,
		      const struct sk_buff *skb, const struct tcpfwd_pkt *p,
		      bool may_segment, struct ecnp_step *st, bool *segment)
{
	int mode = READ_ONCE(en->feedback);
	bool no_upgrade = false, syn_from_a, was_p2, first, bh;
	struct ecnp_pkt *ep = &st->ep;
	u8 was_state;

	/*
	 * _bh only after an NFQUEUE verdict, when nf_reinject() runs the rest
	 * of the FORWARD hooks in process context (tcpfwd_flow_lock()).
	 */
	st->stash = NULL;
	if (!tcpfwd_flow_lock_live(&ef->base, &bh))
		return false;
	ecnp_fill_pkt(ef, skb, p, mode, ep);
	/* dupack-fast: the copy kept is E's newest ACK */
	if (unlikely(ef->stash) &&
	    ntohl(tcp_hdr(ef->stash)->ack_seq) == ef->fsm.e_ack)
		ep->pflags |= ECNP_PF_STASHED;
	if (skb_is_gso(skb) && ecnp_fsm_wants_drop(&ef->fsm, ep, mode)) {
		if (may_segment && !tcpfwd_bridged(skb)) {
			*segment = true;
			tcpfwd_flow_unlock(&ef->base, bh);
			return false;
		}
		ep->pflags |= ECNP_PF_NO_DROP;
	}
	/*
	 * A flow stepped before, in phase 2, and a segment without SYN: the
	 * fallback cache is not read (only for a SYN from A, in A_C and in
	 * A_NC), and this is not a pickup's first step.
	 */
	if (likely(ef->stepped && ecnp_fsm_in_phase2(&ef->fsm) &&
		   !(ep->flags & ECNP_TCP_SYN))) {
		was_state = ef->fsm.state;
		st->ret = ecnp_fsm_step(&ef->fsm, ep, mode, false);
		if (!ecnp_step_steady(en, ef, skb, p, st->ret))
			ecnp_step_tail(en, ef, skb, p, st, true, was_state);
		ecnp_stash_detach(ef, st);
		tcpfwd_flow_unlock(&ef->base, bh);
		return true;
	}
	/* the FSM reads the fallback cache for SYNs from A and until B answers */
	syn_from_a = ep->dir == ECNP_DIR_A &&
		     (ep->flags & (ECNP_TCP_SYN | ECNP_TCP_ACK | ECNP_TCP_RST)) ==
		     ECNP_TCP_SYN;
	if (syn_from_a || ef->fsm.state == ECNP_S_A_C ||
	    ef->fsm.state == ECNP_S_A_NC) {
		no_upgrade = ecnp_fb_lookup(en, ecnp_b_addr(&ef->base),
					    p->key.family);
		if (no_upgrade && syn_from_a)
			ecnp_count(en, ECNP_STAT_FALLBACK_HITS);
	}
	/* a pickup's first step: the state was set up, not stepped into */
	first = !ef->stepped;
	ef->stepped = true;
	was_p2 = !first && ecnp_fsm_in_phase2(&ef->fsm);
	was_state = first ? ECNP_S_INIT : ef->fsm.state;
	st->ret = ecnp_fsm_step(&ef->fsm, ep, mode, no_upgrade);
	ecnp_step_tail(en, ef, skb, p, st, was_p2, was_state);
	ecnp_stash_detach(ef, st);
	tcpfwd_flow_unlock(&ef->base, bh);
	return true;
}

/*
 * Tell the state machine what of a step's actions could not be done
 * (ecnp_fsm_complete()); the flow's lock is taken again only then.
 */
static void ecnp_complete(struct ecnp_flow *ef, const struct ecnp_step *st,
			  bool flags_done, unsigned int shown)
{
	const struct ecnp_ack_edit *e = st->ret & ECNP_ACT_ACK_EDITS ?
					&st->edit : NULL;
	bool bh;

	if (flags_done && (!e || shown >= e->shown))
		return;
	if (!tcpfwd_flow_lock_live(&ef->base, &bh))
		return;
	ecnp_fsm_complete(&ef->fsm, &st->ep, st->ret, e, flags_done, shown);
	tcpfwd_flow_unlock(&ef->base, bh);
}

/*
 * The dupack ACK edits: rewrite the ACK, send its copies or the injected
 * duplicates.  *@shown: the duplicate ACKs that reached N (see
 * ecnp_fsm_complete()).  Return: NF_STOLEN if sent on here, else the
 * verdict for @skb.
 */
static unsigned int ecnp_act_acks(struct ecnp_net *en, struct sk_buff *skb,
				  const struct nf_hook_state *state,
				  const struct tcpfwd_pkt *p,
				  const struct ecnp_step *st, unsigned int *shown)
{
	unsigned int sent = 0, verdict;
	u32 ret = st->ret;

	*shown = st->edit.shown;
	/* dupack-rwnd's clamp alone: the window field, in place */
	if ((ret & ECNP_ACT_ACK_EDITS) == ECNP_ACT_CLAMP_WIN) {
		struct tcphdr *th = tcpfwd_th_writable(skb, p);

		if (!th) {
			ecnp_count(en, ECNP_STAT_EDIT_FAILED);
			return NF_ACCEPT;
		}
		tcpfwd_th_set_window(skb, th, st->edit.win);
		return NF_ACCEPT;
	}
	/* never both: the copies are made from this skb, as parsed in p */
	if ((ret & (ECNP_ACT_HOLD_ACK | ECNP_ACT_SET_TSECR |
		    ECNP_ACT_CLAMP_WIN)) &&
	    !WARN_ON_ONCE(ret & ECNP_ACT_INJECT_DUPACKS)) {
		if (ecnp_ack_rewrite(skb, p, &st->edit)) {
			ecnp_count(en, ECNP_STAT_EDIT_FAILED);
			*shown = 0;
			return NF_ACCEPT;
		}
		if (st->edit.set_tsecr)
			ecnp_count(en, ECNP_STAT_TSECR_REWRITTEN);
		if (st->edit.copies) {
			*shown = min_t(unsigned int, *shown, 1);
			if (tcpfwd_bridged(skb)) {
				ecnp_count(en, ECNP_STAT_EDIT_FAILED);
				return NF_ACCEPT;
			}
			verdict = ecnp_send_dups(en, skb, state, p, NULL,
						 st->edit.copies,
						 ECNP_STAT_ACKS_COPIED, &sent);
			*shown += sent;
			return verdict;
		}
	}
	if (ret & ECNP_ACT_INJECT_DUPACKS) {
		*shown = 0;
		if (tcpfwd_bridged(skb)) {
			ecnp_count(en, ECNP_STAT_EDIT_FAILED);
			return NF_ACCEPT;
		}
		return ecnp_send_dups(en, skb, state, p, &st->edit,
				      ECNP_DUPACKS, ECNP_STAT_DUPACKS_INJECTED,
				      shown);
	}
	return NF_ACCEPT;
}

/*
 * dupack-fast, ECNP_ACT_STASH on an E->N ACK held in a simulated loss (E's
 * newest, past L): keep a copy of it, ECE already cleared, before
 * the hold's edits, in place of the flow's last one.  Its route is not
 * kept (a route holds its device: a flow gone quiet in a hold would keep
 * an interface from going away); ecnp_stash_send() looks it up again.  At
 * most ECNP_STASH_MAX per netns; not for a bridged or GSO packet.  What
 * could not be kept is counted in edit_failed, and N's retransmission is
 * then trimmed as in dupack.
 */
static void ecnp_stash_keep(struct ecnp_net *en, struct ecnp_flow *ef,
			    const struct sk_buff *skb,
			    const struct tcpfwd_pkt *p)
{
	struct sk_buff *copy, *old = NULL;
	bool bh;

	if (tcpfwd_bridged(skb) || skb_is_gso(skb))
		return;
	if (atomic_inc_return(&en->stashed) > ECNP_STASH_MAX) {
		atomic_dec(&en->stashed);
		ecnp_count(en, ECNP_STAT_EDIT_FAILED);
		return;
	}
	copy = skb_copy_expand(skb, min_t(int, skb_headroom(skb),
					  ECNP_STASH_HEADROOM), 0, GFP_ATOMIC);
	if (!copy) {
		atomic_dec(&en->stashed);
		ecnp_count(en, ECNP_STAT_EDIT_FAILED);
		return;
	}
	skb_dst_drop(copy);
	skb_set_transport_header(copy, p->thoff);
	if (tcpfwd_flow_lock_live(&ef->base, &bh)) {
		/* N's retransmission may have come on another CPU since */
		if (ecnp_fsm_stash_wanted(&ef->fsm) &&
		    ntohl(p->th.ack_seq) == ef->fsm.e_ack) {
			old = ef->stash;
			ef->stash = copy;
			copy = NULL;
		}
		tcpfwd_flow_unlock(&ef->base, bh);
	}
	ecnp_stash_free(en, old);
	ecnp_stash_free(en, copy);
}

/*
 * Make dupack-fast's copy of E's ACK ready to go to N from the hook of N's
 * retransmission (@state): its TSecr cleared (ecnp_rexmit_release() in
 * ecnp_fsm.c), a route to N looked up as for a locally sent packet
 * (nf_route(): by destination and mark), and E's side as the device it
 * came in on, as POSTROUTING would see it.
 */
static int ecnp_stash_ready(struct sk_buff *ack,
			    const struct nf_hook_state *state)
{
	struct tcphdr *th = tcp_hdr(ack);
	unsigned int olen = th->doff * 4 - sizeof(*th);
	struct dst_entry *dst = NULL;
	u32 tsval, tsecr, diff = 0;
	struct flowi fl;

	/* a private, linear copy (skb_copy_expand()) */
	if (tcpfwd_opt_get_ts((u8 *)(th + 1), olen, &tsval, &tsecr) == 1 &&
	    tsecr &&
	    tcpfwd_opt_set_ts((u8 *)(th + 1), olen, tsval, 0, &diff) == 1) {
		tcpfwd_th_csum_diff(ack, th, diff);
		if (ack->ip_summed == CHECKSUM_COMPLETE)
			ack->ip_summed = CHECKSUM_NONE;
	}
	memset(&fl, 0, sizeof(fl));
	if (state->pf == NFPROTO_IPV4) {
		fl.u.ip4.daddr = ip_hdr(ack)->daddr;
		fl.u.ip4.flowi4_mark = ack->mark;
	} else {
		fl.u.ip6.daddr = ipv6_hdr(ack)->daddr;
		fl.u.ip6.flowi6_mark = ack->mark;
	}
	if (nf_route(state->net, &dst, &fl, false, state->pf) || !dst)
		return -EHOSTUNREACH;
	skb_dst_set(ack, dst);
	ack->dev = state->out;
	return 0;
}

/*
 * dupack-fast: the flow's copy of E's ACK, taken out by the step
 * (ecnp_stash_detach()).  With ECNP_ACT_STASH and ECNP_ACT_TRIM (@answer,
 * on N's retransmission of L) it goes to N at once (the state machine
 * ended the hold); the retransmission still goes on to E trimmed to one
 * byte, whose answer E sends at once as it would in dupack (a duplicate
 * puts E in quick-ACK mode), and which N then sees as an ordinary ACK
 * without its D-SACK (ecnp_fixup()).  Otherwise the copy is freed; if it
 * was to answer (no route, or a bridged packet), that is counted in
 * edit_failed, and E's answer to the byte acks the retransmission a
 * round trip later, as in dupack.
 */
static void ecnp_stash_send(struct ecnp_net *en, struct sk_buff *skb,
			    const struct nf_hook_state *state,
			    struct sk_buff *ack, bool answer)
{
	if (answer && !tcpfwd_bridged(skb) && !ecnp_stash_ready(ack, state)) {
		atomic_dec(&en->stashed);
		ecnp_count(en, ECNP_STAT_REXMIT_ANSWERED);
		tcpfwd_pass_on(ack, state);
		return;
	}
	if (answer)
		ecnp_count(en, ECNP_STAT_EDIT_FAILED);
	ecnp_stash_free(en, ack);
}

/* Apply a step to the packet: drop, edit, or send it on with duplicates. */
static unsigned int ecnp_act(struct ecnp_net *en, struct ecnp_flow *ef,
			     struct sk_buff *skb,
			     const struct nf_hook_state *state,
			     const struct tcpfwd_pkt *p,
			     const struct ecnp_step *st)
{
	u32 ret = st->ret;
	bool flags_done = true;
	unsigned int verdict = NF_ACCEPT, shown = 0;

	/* dupack-fast: the ACK copy answers N's retransmission, trimmed below */
	if (unlikely(st->stash))
		ecnp_stash_send(en, skb, state, st->stash,
				ecnp_act_stash_answers(ret));
	/* most steps: nothing to do, or N's new data's ECT(0) alone */
	switch (ret & (ECNP_ACT_MASK | ECNP_EV_SYN_FALLBACK)) {
	case 0:
		return NF_ACCEPT;
	case ECNP_ACT_SET_ECT0:
		if (tcpfwd_set_ecn(skb, p, INET_ECN_ECT_0)) {
			ecnp_count(en, ECNP_STAT_EDIT_FAILED);
			ecnp_complete(ef, st, false, 0);
		}
		return NF_ACCEPT;
	}
	if (ret & ECNP_EV_SYN_FALLBACK)
		ecnp_fb_insert(en, ecnp_b_addr(&ef->base), p->key.family);
	if (ret & ECNP_ACT_DROP)
		return NF_DROP;
	/* a copy E does not need: if it cannot be trimmed, none of it */
	if ((ret & ECNP_ACT_TRIM) && ecnp_trim_payload(skb, p)) {
		ecnp_count(en, ECNP_STAT_EDIT_FAILED);
		return NF_DROP;
	}
	if ((ret & ECNP_ACT_FLAG_EDITS) && ecnp_apply(skb, p, ret)) {
		ecnp_count(en, ECNP_STAT_EDIT_FAILED);
		flags_done = false;
	}
	/* E's ACK as N is to see it after the hold: before the hold's edits */
	if ((ret & ECNP_ACT_STASH) && !ecnp_act_stash_answers(ret) &&
	    flags_done)
		ecnp_stash_keep(en, ef, skb, p);
	if (ret & ECNP_ACT_ACK_EDITS)
		verdict = ecnp_act_acks(en, skb, state, p, st, &shown);
	ecnp_complete(ef, st, flags_done, shown);
	return verdict;
}

/* The slow path: step the flow's state machine, act on the packet. */
static unsigned int ecnp_step_act(struct ecnp_net *en, struct ecnp_flow *ef,
				  struct sk_buff *skb,
				  const struct nf_hook_state *state,
				  const struct tcpfwd_pkt *p, bool may_segment)
{
	/* ecnp_step() writes ret and ep, ecnp_fsm_ack_edit() all of edit */
	struct ecnp_step st __uninitialized;
	bool segment = false;

	if (!ecnp_step(en, ef, skb, p, may_segment, &st, &segment)) {
		if (segment)
			return ecnp_gso_drop(en, skb, state);
		return NF_ACCEPT;
	}
	return ecnp_act(en, ef, skb, state, p, &st);
}

/*
 * A fast exit's segment whose conntrack entry (confirmed now) does not say
 * yet that the connection needs nothing: say it, under the flow's lock
 * (ecnp_ct_mark()), so that the connection's next segments pass in
 * ecnp_hook().
 */
static void ecnp_ct_mark_decided(struct ecnp_net *en, struct tcpfwd_flow *f,
				 const struct sk_buff *skb)
{
	struct ecnp_flow *ef = container_of(f, struct ecnp_flow, base);
	bool bh, marked = false;

	if (!tcpfwd_flow_lock_live(f, &bh))
		return;
	if (ef->decided)
		marked = ecnp_ct_mark(skb, true);
	tcpfwd_flow_unlock(f, bh);
	if (marked)
		ecnp_count(en, ECNP_STAT_FLOWS_CT_MARKED);
}

/*
 * One packet (or GSO packet) of a TCP flow.  A flow that needs nothing
 * (decided SAME or PASS, not closed: tcpfwd_flow.fast) passes its segments
 * without SYN, FIN or RST at once, under RCU alone: no lock, no step, no
 * write to the flow but its expiry, moved on at most four times per
 * timeout_closed (tcpfwd_flow_refresh()), so that it stays while it is in
 * use.  Every other packet finds or creates its flow, steps the state
 * machine and is acted on.  @may_segment is false for the segments of a
 * GSO packet that ecnp_gso_drop() feeds back in, and for a GSO packet it
 * could not segment.
 */
static unsigned int ecnp_process(struct ecnp_net *en, struct sk_buff *skb,
				 const struct nf_hook_state *state,
				 bool may_segment)
{
	/* tcpfwd_parse() writes every field: not zeroed on every packet */
	struct tcpfwd_pkt p __uninitialized;
	struct tcpfwd_flow *f;
	struct ecnp_flow *ef;

	/* not TCP, or malformed (counted) */
	if (tcpfwd_parse(&en->tn, skb, state->pf, &p))
		return NF_ACCEPT;
	f = tcpfwd_flow_lookup(&en->tn.ft, &p.key);
	if (f && tcpfwd_fast_pass(f, &p)) {
		tcpfwd_flow_refresh(f, ecnp_closed_timeout(en));
		/* once per connection beside conntrack: see ecnp_hook() */
		if (ecnp_ct_want_mark(skb))
			ecnp_ct_mark_decided(en, f, skb);
		return NF_ACCEPT;
	}
	ef = f ? container_of(f, struct ecnp_flow, base) :
		 ecnp_flow_new(en, skb, &p);
	if (!ef)
		return NF_ACCEPT;
	return ecnp_step_act(en, ef, skb, state, &p, may_segment);
}

/*
 * A GSO packet of which one segment must be dropped: segment it in software
 * and pass each segment through the state machine.  Our hook is the last
 * one in FORWARD, so the survivors continue with state->okfn.
 */
static unsigned int ecnp_seg_verdict(struct sk_buff *seg,
				     const struct nf_hook_state *state,
				     void *en)
{
	return ecnp_process(en, seg, state, false);
}

/* not segmented (skb untouched): through the state machine whole */
static unsigned int ecnp_gso_drop(struct ecnp_net *en, struct sk_buff *skb,
				  const struct nf_hook_state *state)
{
	return tcpfwd_gso_split(&en->tn, skb, state, ecnp_seg_verdict, en);
}

/*
 * The conntrack-assisted bypass: a segment whose conntrack entry carries
 * the proxy's "needs nothing" bit (ecnp_ct.c) belongs to a connection
 * whose flow was decided SAME or PASS.  It passes here, before it is
 * parsed and hashed (the work is skb->_nfct, the entry's status word and
 * the TCP flags byte, behind IPv6 extension headers if there are any),
 * unless it is a FIN or RST without SYN: that takes the full path (its
 * flow, if it still has one, closes; none is created for it:
 * ecnp_pickup_wanted()).  A SYN passes too: ecnp_ct_path().  Return: the
 * segment passes (false for a connection without the bit).
 */
static bool ecnp_ct_bypass(const struct sk_buff *skb, u8 pf)
{
	int off;
	const u8 *flags;
	u8 buf;

	if (!ecnp_ct_nothing(ecnp_ct_get(skb)))
		return false;
	off = tcpfwd_tcp_off(skb, pf);
	/* not TCP (an ICMP error of the connection): never the proxy's */
	if (off < 0)
		return true;
	/* tcp_flag_byte(): byte 13 of the TCP header */
	flags = skb_header_pointer(skb, off + 13, 1, &buf);
	if (!flags)
		return false;
	return ecnp_ct_path(*flags) == ECNP_CT_PASS;
}

/* A packet with a conntrack entry: the bypass, else the full path. */
static noinline unsigned int ecnp_hook_ct(void *priv, struct sk_buff *skb,
					  const struct nf_hook_state *state)
{
	if (ecnp_ct_bypass(skb, state->pf))
		return NF_ACCEPT;
	return ecnp_process(container_of(priv, struct ecnp_net, tn), skb,
			    state, true);
}

/* Two tail calls, so that the hook keeps no frame of its own. */
static unsigned int ecnp_hook(void *priv, struct sk_buff *skb,
			      const struct nf_hook_state *state)
{
	if (ecnp_ct_get(skb))
		return ecnp_hook_ct(priv, skb, state);
	return ecnp_process(container_of(priv, struct ecnp_net, tn), skb,
			    state, true);
}

static int ecnp_set_hooks(struct ecnp_net *en, bool on)
{
	int err = tcpfwd_set_hooks(&en->tn, on);

	if (!err)
		WRITE_ONCE(en->enabled, on);
	return err;
}

/* --- sysctl -------------------------------------------------------------- */

static int ecnp_timeout_max = 86400;
static int ecnp_flows_max = 1 << 20;

/* proc_dointvec_minmax that says why it rejected a write. */
static int ecnp_proc_minmax(tcpfwd_ctl_table_const struct ctl_table *table,
			    int write, void *buffer, size_t *lenp, loff_t *ppos)
{
	struct ctl_table tmp = *table;	/* non-const before 6.11 */
	int ret = proc_dointvec_minmax(&tmp, write, buffer, lenp, ppos);

	if (write && ret == -EINVAL)
		pr_info_ratelimited("net.ecn_proxy.%s: rejected: not an integer in [%d, %d]\n",
				    table->procname, *(int *)table->extra1,
				    *(int *)table->extra2);
	return ret;
}

/*
 * A limit in a namespace other than init_net: at most init_net's current
 * value (table->extra2 points to it; nf_conntrack_standalone.c makes its
 * global limits read-only there instead, see README), so that the owner
 * of a user namespace cannot raise what a namespace's flow table may cost.
 */
static int ecnp_proc_below_init(tcpfwd_ctl_table_const struct ctl_table *table,
				int write, void *buffer, size_t *lenp,
				loff_t *ppos)
{
	int bound = READ_ONCE(*(int *)table->extra2);
	int val = READ_ONCE(*(int *)table->data);
	struct ctl_table tmp = *table;
	int ret;

	tmp.data = &val;
	tmp.extra2 = &bound;
	ret = proc_dointvec_minmax(&tmp, write, buffer, lenp, ppos);
	if (write && ret == -EINVAL)
		pr_info_ratelimited("net.ecn_proxy.%s: rejected: not an integer in [%d, %d] (this network namespace may set at most init_net's %d)\n",
				    table->procname, *(int *)table->extra1,
				    bound, bound);
	if (write && !ret)
		WRITE_ONCE(*(int *)table->data, val);
	return ret;
}

static int ecnp_proc_enabled(tcpfwd_ctl_table_const struct ctl_table *table,
			     int write, void *buffer, size_t *lenp,
			     loff_t *ppos)
{
	struct ecnp_net *en = container_of(table->data, struct ecnp_net,
					   enabled);
	struct ctl_table tmp = *table;
	int val = READ_ONCE(en->enabled);
	int ret;

	tmp.data = &val;
	ret = ecnp_proc_minmax(&tmp, write, buffer, lenp, ppos);
	if (write && !ret) {
		ret = ecnp_set_hooks(en, val);
		if (ret)
			pr_warn_ratelimited("net.ecn_proxy.enabled: cannot register hooks: %d\n",
					    ret);
	}
	return ret;
}

static int ecnp_proc_feedback(tcpfwd_ctl_table_const struct ctl_table *table,
			      int write, void *buffer, size_t *lenp,
			      loff_t *ppos)
{
	struct ecnp_net *en = container_of(table->data, struct ecnp_net,
					   feedback);
	char val[ECNP_FB_NAME_MAX];
	struct ctl_table tmp = {
		.data = val,
		.maxlen = sizeof(val),
	};
	int ret, mode;

	strscpy(val, ecnp_fb_names[READ_ONCE(en->feedback)], sizeof(val));
	ret = proc_dostring(&tmp, write, buffer, lenp, ppos);
	if (!write || ret)
		return ret;
	mode = match_string(ecnp_fb_names, ARRAY_SIZE(ecnp_fb_names),
			    strim(val));
	if (mode < 0) {
		pr_info_ratelimited("net.ecn_proxy.feedback: rejected '%s': must be none, drop, dupack, dupack-rwnd or dupack-fast\n",
				    val);
		return -EINVAL;
	}
	WRITE_ONCE(en->feedback, mode);
	return 0;
}

/*
 * Replace the tombstone table by one of en->max_tombstones slots, with
 * the live tombstones moved over (those that collide in a smaller table
 * count as evicted).  Process context, under tomb_mutex.
 */
static int ecnp_tombs_resize(struct ecnp_net *en)
{
	struct ecnp_tomb_tab *old, *tab;
	u32 lost = 0;

	tab = ecnp_tomb_tab_alloc(READ_ONCE(en->max_tombstones));
	if (!tab)
		return -ENOMEM;
	spin_lock_bh(&en->tomb_lock);
	old = rcu_dereference_protected(en->tombs,
					lockdep_is_held(&en->tomb_lock));
	if (old)
		lost = ecnp_tombs_move(&tab->t, &old->t, get_jiffies_64());
	rcu_assign_pointer(en->tombs, tab);
	spin_unlock_bh(&en->tomb_lock);
	if (lost)
		tcpfwd_add(&en->tn, ECNP_STAT_TOMBSTONES_EVICTED, lost);
	/* the packet path reads the old one under RCU */
	synchronize_net();
	kvfree(old);
	return 0;
}

/* max_tombstones: a limit like the others, and the table follows it. */
static int ecnp_proc_tombs(tcpfwd_ctl_table_const struct ctl_table *table,
			   int write, void *buffer, size_t *lenp, loff_t *ppos)
{
	struct ecnp_net *en = container_of(table->data, struct ecnp_net,
					   max_tombstones);
	int old, ret;

	mutex_lock(&en->tomb_mutex);
	old = READ_ONCE(en->max_tombstones);
	if (en == en->init_en)
		ret = ecnp_proc_minmax(table, write, buffer, lenp, ppos);
	else
		ret = ecnp_proc_below_init(table, write, buffer, lenp, ppos);
	if (write && !ret && READ_ONCE(en->max_tombstones) != old) {
		ret = ecnp_tombs_resize(en);
		if (ret)
			WRITE_ONCE(en->max_tombstones, old);
	}
	mutex_unlock(&en->tomb_mutex);
	return ret;
}

/* .data holds the field's offset in struct ecnp_net until ecnp_sysctl_init() */
#define ECNP_SYSCTL_OFF(name) ((void *)offsetof(struct ecnp_net, name))

#define ECNP_SYSCTL_INT(name, min, max) {		\
	.procname	= #name,			\
	.data		= ECNP_SYSCTL_OFF(name),	\
	.maxlen		= sizeof(int),			\
	.mode		= 0644,				\
	.proc_handler	= ecnp_proc_minmax,		\
	.extra1		= min,				\
	.extra2		= max,				\
}

static struct ctl_table ecnp_sysctl_table[] = {
	{
		.procname	= "enabled",
		.data		= ECNP_SYSCTL_OFF(enabled),
		.maxlen		= sizeof(int),
		.mode		= 0644,
		.proc_handler	= ecnp_proc_enabled,
		.extra1		= SYSCTL_ZERO,
		.extra2		= SYSCTL_ONE,
	},
	{
		.procname	= "feedback",
		.data		= ECNP_SYSCTL_OFF(feedback),
		.maxlen		= sizeof(int),
		.mode		= 0644,
		.proc_handler	= ecnp_proc_feedback,
	},
	ECNP_SYSCTL_INT(max_flows, SYSCTL_ONE, &ecnp_flows_max),
	ECNP_SYSCTL_INT(timeout_handshake, SYSCTL_ONE, &ecnp_timeout_max),
	ECNP_SYSCTL_INT(timeout_established, SYSCTL_ONE, &ecnp_timeout_max),
	ECNP_SYSCTL_INT(timeout_closed, SYSCTL_ONE, &ecnp_timeout_max),
	ECNP_SYSCTL_INT(fallback_timeout, SYSCTL_ONE, &ecnp_timeout_max),
	{
		.procname	= "max_tombstones",
		.data		= ECNP_SYSCTL_OFF(max_tombstones),
		.maxlen		= sizeof(int),
		.mode		= 0644,
		.proc_handler	= ecnp_proc_tombs,
		.extra1		= SYSCTL_ZERO,
		.extra2		= &ecnp_flows_max,
	},
	{ }	/* the end before 6.6 (tcpfwd_compat.h), not registered since */
};

/* the entries, without the empty one at the end */
#define ECNP_SYSCTL_N (ARRAY_SIZE(ecnp_sysctl_table) - 1)

static int ecnp_sysctl_init(struct ecnp_net *en)
{
	struct ctl_table *table;
	unsigned int i;

	table = kmemdup(ecnp_sysctl_table, sizeof(ecnp_sysctl_table),
			GFP_KERNEL);
	if (!table)
		return -ENOMEM;
	/*
	 * Turn the template's offsets into this netns's fields; outside
	 * init_net the limits are bounded by init_net's fields (M3).
	 */
	for (i = 0; i < ECNP_SYSCTL_N; i++) {
		uintptr_t off = (uintptr_t)table[i].data;

		table[i].data = (char *)en + off;
		if (en == en->init_en)
			continue;
		if (table[i].proc_handler == ecnp_proc_minmax)
			table[i].proc_handler = ecnp_proc_below_init;
		if (table[i].proc_handler == ecnp_proc_below_init ||
		    table[i].proc_handler == ecnp_proc_tombs)
			table[i].extra2 = (char *)en->init_en + off;
	}
	en->sysctl_hdr = register_net_sysctl_sz(en->tn.net, "net/ecn_proxy",
						table, ECNP_SYSCTL_N);
	if (!en->sysctl_hdr) {
		kfree(table);
		return -ENOMEM;
	}
	return 0;
}

static void ecnp_sysctl_exit(struct ecnp_net *en)
{
	const struct ctl_table *table = en->sysctl_hdr->ctl_table_arg;

	unregister_net_sysctl_table(en->sysctl_hdr);
	kfree(table);
}

/* --- procfs -------------------------------------------------------------- */

static void ecnp_show_ep(struct seq_file *seq, const struct tcpfwd_flow *f,
			 bool lo)
{
	const struct in6_addr *a = lo ? &f->key.lo_addr : &f->key.hi_addr;
	u16 port = ntohs(lo ? f->key.lo_port : f->key.hi_port);

	if (f->key.family == NFPROTO_IPV4)
		seq_printf(seq, "%pI4:%u", &a->s6_addr32[0], port);
	else
		seq_printf(seq, "[%pI6c]:%u", a, port);
}

/*
 * One line per flow:
 *   ipv4|ipv6 A B e=A|B|- phase=1|2 state=NAME expires=SECONDS
 *   segs=N ect_set=N ce_cleared=N ece_set=N cwr_set=N cong_events=N dropped=N
 * A is the initiator (first SYN), B the responder, e the ECN endpoint of a
 * proxied flow.
 */
static void ecnp_flow_show(struct seq_file *seq, struct tcpfwd_net *tn,
			   struct tcpfwd_flow *f)
{
	struct ecnp_flow *ef = container_of(f, struct ecnp_flow, base);
	struct ecnp_flow_view c;
	bool dead;

	spin_lock_bh(&f->lock);
	dead = f->dead;
	c.fsm = ef->fsm;
	c.cnt = ef->cnt;
	c.expires = f->expires;
	spin_unlock_bh(&f->lock);
	if (dead)
		return;
	seq_printf(seq, "%s ", f->key.family == NFPROTO_IPV4 ? "ipv4" : "ipv6");
	ecnp_show_ep(seq, f, f->a_is_lo);
	seq_putc(seq, ' ');
	ecnp_show_ep(seq, f, !f->a_is_lo);
	seq_printf(seq, " e=%s phase=%d state=%s%s expires=%ld",
		   !ecnp_fsm_proxied(&c.fsm) ? "-" :
		   ecnp_fsm_e_is_a(&c.fsm) ? "A" : "B",
		   ecnp_fsm_in_phase2(&c.fsm) ? 2 : 1,
		   ecnp_state_name(c.fsm.state),
		   (c.fsm.flags & ECNP_FL_PICKED_UP) ? " picked_up" : "",
		   (long)(c.expires - jiffies) / HZ);
	seq_printf(seq, " segs=%u ect_set=%u ce_cleared=%u ece_set=%u cwr_set=%u cong_events=%u dropped=%u\n",
		   c.cnt.segs, c.cnt.ect_set, c.cnt.ce_cleared, c.cnt.ece_set,
		   c.cnt.cwr_set, c.cnt.cong_events, c.cnt.dropped);
}

/*
 * The SYN fallback cache, one line per live entry:
 *   ipv4|ipv6 ADDRESS expires=SECONDS
 * Writing "flush" empties it (e.g. after fixing an ECN-blocking path).
 */
static int ecnp_fallback_show(struct seq_file *seq, void *v)
{
	struct ecnp_net *en = ecnp_pernet(seq_file_single_net(seq));
	u64 now = get_jiffies_64();
	struct ecnp_fb_slot *snap;
	unsigned int i;

	snap = kmalloc_array(ECNP_FB_SLOTS, sizeof(*snap), GFP_KERNEL);
	if (!snap)
		return -ENOMEM;
	spin_lock_bh(&en->fb_lock);
	memcpy(snap, en->fb, sizeof(en->fb));
	spin_unlock_bh(&en->fb_lock);
	for (i = 0; i < ECNP_FB_SLOTS; i++) {
		const struct ecnp_fb_slot *s = &snap[i];

		if (!s->family || !time_before64(now, s->expires))
			continue;
		if (s->family == NFPROTO_IPV4)
			seq_printf(seq, "ipv4 %pI4", &s->addr.s6_addr32[0]);
		else
			seq_printf(seq, "ipv6 %pI6c", &s->addr);
		seq_printf(seq, " expires=%llu\n", div_u64(s->expires - now, HZ));
	}
	kfree(snap);
	return 0;
}

static int ecnp_fallback_write(struct file *file, char *buf, size_t size)
{
	struct ecnp_net *en = ecnp_pernet(seq_file_single_net(file->private_data));

	if (strcmp(strim(buf), "flush")) {
		pr_info_ratelimited("fallback: invalid write \"%.32s\": the only command is \"flush\"\n",
				    strim(buf));
		return -EINVAL;
	}
	spin_lock_bh(&en->fb_lock);
	memset(en->fb, 0, sizeof(en->fb));
	spin_unlock_bh(&en->fb_lock);
	return 0;
}

/* The file next to tcpfwd's "stats" and "flows"; removed with the dir. */
static int ecnp_proc_init(struct ecnp_net *en)
{
	if (!proc_create_net_single_write("fallback", 0640, en->tn.proc_dir,
					  ecnp_fallback_show,
					  ecnp_fallback_write, NULL))
		return -ENOMEM;
	return 0;
}

/* --- per-netns setup ------------------------------------------------------- */

/* A limit's default @def: outside init_net at most init_net's value @init. */
static int ecnp_limit_default(const struct ecnp_net *en, const int *init,
			      int def)
{
	return en == en->init_en ? def : min(def, READ_ONCE(*init));
}

static const struct tcpfwd_ops ecnp_tcpfwd_ops = {
	.name		= "ecn_proxy",
	.hook		= ecnp_hook,
	.stat_names	= ecnp_stat_names,
	.nr_stats	= ECNP_STAT_NR,
	.stat_expired	= ECNP_STAT_FLOWS_EXPIRED,
	.stat_malformed	= ECNP_STAT_MALFORMED,
	.stat_table_full = ECNP_STAT_TABLE_FULL,
	.stat_alloc_failed = ECNP_STAT_ALLOC_FAILED,
	.stat_gso_segmented = ECNP_STAT_GSO_SEGMENTED,
	/* the state machine counts what it could not drop (gso_drop_skipped) */
	.stat_gso_unsegmented = TCPFWD_NO_STAT,
	.flow_size	= sizeof(struct ecnp_flow),
	.flow_cache	= &ecnp_flow_cache,
	.flow_show	= ecnp_flow_show,
	.flows_mode	= 0440,
	.flow_gone	= ecnp_flow_gone,
	.flow_free	= ecnp_flow_free,
};

/*
 * The sysctls' defaults; outside init_net the limits at most init_net's
 * (en->init_en set).
 */
static void ecnp_net_defaults(struct ecnp_net *en)
{
	const struct ecnp_net *init_en = en->init_en;

	/*
	 * dupack: as fast as end-to-end ECN and as fair to an ECN sender;
	 * a real drop per window costs a non-ECN sender RTOs behind a short
	 * queue (DUPACK.md, "Which mode")
	 */
	en->feedback = ECNP_FB_DUPACK;
	atomic_set(&en->stashed, 0);
	en->max_flows = ecnp_limit_default(en, &init_en->max_flows,
					   tcpfwd_default_max_flows());
	/*
	 * Longer than Linux's SYN retries (tcp_syn_retries = 6: the last of
	 * them 63 s after the SYN; conntrack keeps SYN_SENT 120 s too): a
	 * flow that expired before would see a retransmitted SYN as a new
	 * first SYN and upgrade it again, defeating the RFC 3168 6.1.1.1
	 * fallback.
	 */
	en->timeout_handshake = ecnp_limit_default(en,
						   &init_en->timeout_handshake,
						   120);
	en->timeout_established =
		ecnp_limit_default(en, &init_en->timeout_established, 600);
	en->timeout_closed = ecnp_limit_default(en, &init_en->timeout_closed,
						TCPFWD_CLOSED_SECS);
	en->fallback_timeout = ecnp_limit_default(en,
						  &init_en->fallback_timeout,
						  600);
	/* a sixteenth of the flows (4096 above 1 GiB of RAM), at least 256 */
	en->max_tombstones = ecnp_limit_default(en, &init_en->max_tombstones,
						max(en->max_flows / 16, 256));
}

static int __net_init ecnp_net_init(struct net *net)
{
	struct ecnp_net *en = ecnp_pernet(net);
	int err;

	/* (init_net's comes first: register_pernet_subsys() walks in order) */
	en->init_en = net_eq(net, &init_net) ? en : ecnp_pernet(&init_net);
	ecnp_net_defaults(en);
	spin_lock_init(&en->fb_lock);
	en->fb_seed = get_random_u32();
	spin_lock_init(&en->tomb_lock);
	mutex_init(&en->tomb_mutex);
	RCU_INIT_POINTER(en->tombs, ecnp_tomb_tab_alloc(en->max_tombstones));
	if (!rcu_access_pointer(en->tombs))
		return -ENOMEM;

	err = tcpfwd_net_init(&en->tn, net, &ecnp_tcpfwd_ops);
	if (err)
		goto err_tombs;
	err = ecnp_proc_init(en);
	if (err)
		goto err_tn;
	if (net_eq(net, &init_net) && enable_init_net) {
		err = ecnp_set_hooks(en, true);
		if (err)
			goto err_tn;
	}
	/* last: no sysctl write reaches a half set-up namespace */
	err = ecnp_sysctl_init(en);
	if (err)
		goto err_hooks;
	return 0;

err_hooks:
	ecnp_set_hooks(en, false);
	synchronize_net();	/* packets in the hooks hold flows */
err_tn:
	tcpfwd_net_exit(&en->tn);
err_tombs:
	kvfree(rcu_dereference_protected(en->tombs, true));
	return err;
}

/*
 * nf_unregister_net_hooks() does not wait for packets already in the hook:
 * stop new packets here, the netns core then runs synchronize_rcu() before
 * ecnp_net_exit() frees what those packets use.
 */
static void __net_exit ecnp_net_pre_exit(struct net *net)
{
	struct ecnp_net *en = ecnp_pernet(net);

	/* no more sysctl writes, then no more packets */
	ecnp_sysctl_exit(en);
	ecnp_set_hooks(en, false);
}

static void __net_exit ecnp_net_exit(struct net *net)
{
	struct ecnp_net *en = ecnp_pernet(net);

	/* after the collector, whose flow_gone() fills the tombstones */
	tcpfwd_net_exit(&en->tn);
	/* every dupack-fast ACK copy was sent or freed with its flow */
	WARN_ON_ONCE(atomic_read(&en->stashed));
	kvfree(rcu_dereference_protected(en->tombs, true));
}

static struct pernet_operations ecnp_net_ops = {
	.init		= ecnp_net_init,
	.pre_exit	= ecnp_net_pre_exit,
	.exit		= ecnp_net_exit,
	.id		= &ecnp_net_id,
	.size		= sizeof(struct ecnp_net),
};

/* The flow size is in /proc/net/ecn_proxy/stats (flow_struct_bytes). */
static int __init ecnp_init(void)
{
	int err;

	ecnp_flow_cache = KMEM_CACHE(ecnp_flow, 0);
	if (!ecnp_flow_cache)
		return -ENOMEM;
	err = register_pernet_subsys(&ecnp_net_ops);
	if (err)
		kmem_cache_destroy(ecnp_flow_cache);
	return err;
}

static void __exit ecnp_exit(void)
{
	unregister_pernet_subsys(&ecnp_net_ops);
	/* flows freed by call_rcu(), before the cache and the module text go */
	rcu_barrier();
	kmem_cache_destroy(ecnp_flow_cache);
}

module_init(ecnp_init);
module_exit(ecnp_exit);
MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("ECN proxy: negotiate ECN on behalf of non-ECN TCP endpoints");
