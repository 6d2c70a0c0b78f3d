// SPDX-License-Identifier: GPL-2.0
/*
 * impair: rule-driven TCP middlebox behaviours on the forward path.
 *
 * Reproduces in a lab what broken middleboxes do to TCP in the wild (option
 * stripping, sequence-number randomising with or without SACK fix-up,
 * window-scale / MSS / window rewriting, ECN blocking, clearing, marking and
 * bleaching, random loss).  The rule grammar, parser and matcher are the pure
 * code in kmod/impair/impair_rule.c (unit-tested in userspace); this file is
 * the plumbing:
 *
 *   - a netfilter hook at the end of FORWARD, IPv4 and IPv6, in every
 *     network namespace; with no rules it returns at once;
 *   - the rules of a namespace in /proc/net/impair/rules: an RCU-protected
 *     array replaced as a whole by each write(2), which is one transaction
 *     ("flush" lines and rule lines, all or nothing: an invalid line fails
 *     the write with EINVAL, changes nothing and is logged, ratelimited,
 *     with its line number and its token, non-printable bytes escaped);
 *     reading lists "flush" and the rules in canonical
 *     syntax with "# hits N", which can be written back as is;
 *   - per-flow state (segment count, initiator, random ISN offsets) in the
 *     bounded, expiring RCU flow table of tcpfwd.ko (kmod/core/tcpfwd.h),
 *     which also keeps the counters, the hooks and procfs for it; looked
 *     up only while a rule needs it (impair_rule_needs_flow()), so a plain
 *     strip rule costs a parse, a match and one read-only option walk, and
 *     the packet is made writable only when something changes; a rule set
 *     of unconditional strip rules only (impair_rule_strip_fast()) is not
 *     matched at all, and a segment without their options is counted and
 *     passed after the parse and that walk (impair_strip_none());
 *   - header edits after skb_ensure_writable(), with incremental checksums
 *     that are correct under CHECKSUM_PARTIAL, and skb->csum kept right
 *     under CHECKSUM_COMPLETE; option compaction works in place on GSO
 *     packets too (the IP header, and the link-layer header in front of
 *     it, which a bridged frame keeps, move; the payload stays), and skips
 *     BIG TCP packets (no IP length to change); a GSO packet is segmented
 *     first only when a rule would drop one of its segments or an "after
 *     N" boundary falls inside it;
 *   - split (a data segment cut in two: the first piece a copy sent on
 *     first, the second the packet itself) and coalesce (a data segment
 *     held, one per flow, until its in-order successor arrives, then both
 *     sent as one; released unchanged after coalesce_timeout_ms, when the
 *     rules are replaced, and freed when the flow expires or the
 *     namespace goes), with the arithmetic in impair_seg.c;
 *   - per-CPU counters in /proc/net/impair/stats, per-CPU hit counters per
 *     rule.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/bitmap.h>
#include <linux/module.h>
#include <linux/netfilter.h>
#include <linux/netfilter_bridge.h>
#include <linux/netfilter_ipv4.h>
#include <linux/netfilter_ipv6.h>
#include <linux/proc_fs.h>
#include <linux/random.h>
#include <linux/refcount.h>
#include <linux/seq_file.h>
#include <linux/slab.h>
#include <linux/uaccess.h>
#include <linux/workqueue.h>
#include <net/dsfield.h>
#include <net/dst.h>
#include <net/inet_ecn.h>
#include <net/ip.h>
#include <net/ipv6.h>
#include <net/net_namespace.h>
#include <net/netns/generic.h>

#include "../core/tcpfwd.h"
#include "../core/tcpfwd_compat.h"
#include "../core/tcpfwd_opt.h"
#include "../core/tcpfwd_iph.h"
#include "impair_seqadj.h"
#include "impair_rule.h"

/*
 * The module parameters are global (root writes them in
 * /sys/module/impair/parameters/) and bounded like the proxy's sysctls:
 * max_flows up to 2^20 per namespace, flow_timeout up to a day, so that
 * flow_timeout * HZ cannot overflow.  An out-of-range value (at insmod
 * time too) is rejected whole with EINVAL and a ratelimited log line.
 */
struct impair_param {
	unsigned int val;
	unsigned int min;
	unsigned int max;
};

static int impair_param_set(const char *buf, const struct kernel_param *kp)
{
	struct impair_param *p = kp->arg;
	unsigned int v;

	if (kstrtouint(buf, 0, &v) || v < p->min || v > p->max) {
		pr_warn_ratelimited("parameter %s rejected: must be %u..%u\n",
				    kp->name, p->min, p->max);
		return -EINVAL;
	}
	WRITE_ONCE(p->val, v);
	return 0;
}

static int impair_param_get(char *buf, const struct kernel_param *kp)
{
	const struct impair_param *p = kp->arg;

	return sysfs_emit(buf, "%u\n", READ_ONCE(p->val));
}

static const struct kernel_param_ops impair_param_ops = {
	.set	= impair_param_set,
	.get	= impair_param_get,
};

/* 0 until impair_init() (unless given at insmod): tcpfwd_default_max_flows() */
static struct impair_param max_flows = { 0, 1, 1U << 20 };
module_param_cb(max_flows, &impair_param_ops, &max_flows, 0644);
MODULE_PARM_DESC(max_flows, "flow table bound per namespace, 1..1048576 (default from RAM, as nf_conntrack_max)");

static struct impair_param flow_timeout = { 300, 1, 86400 };
module_param_cb(flow_timeout, &impair_param_ops, &flow_timeout, 0644);
MODULE_PARM_DESC(flow_timeout, "idle seconds before a flow is forgotten, 1..86400 (default 300)");

static struct impair_param coalesce_timeout = { 50, 1, 10000 };
module_param_cb(coalesce_timeout_ms, &impair_param_ops, &coalesce_timeout,
		0644);
MODULE_PARM_DESC(coalesce_timeout_ms, "how long coalesce holds a segment for its successor, 1..10000 ms (default 50)");

#define IMPAIR_WRITE_MAX	65536	/* bytes in one write to rules */

enum impair_stat {
	IMPAIR_STAT_SEGS,
	IMPAIR_STAT_MATCHED,
	IMPAIR_STAT_DROP_RANDOM,
	IMPAIR_STAT_DROP_ECN_BLOCK,
	IMPAIR_STAT_OPTS_NOPPED,
	IMPAIR_STAT_SEGS_COMPACTED,
	IMPAIR_STAT_BYTES_COMPACTED,
	IMPAIR_STAT_COMPACT_JUMBO,
	IMPAIR_STAT_COMPACT_BRIDGED,
	IMPAIR_STAT_MSS_SET,
	IMPAIR_STAT_WSCALE_SET,
	IMPAIR_STAT_WINDOW_SET,
	IMPAIR_STAT_SEQ_REWRITTEN,
	IMPAIR_STAT_SACK_MAPPED,
	IMPAIR_STAT_ECN_SYN_CLEARED,
	IMPAIR_STAT_ECN_SET,
	IMPAIR_STAT_ECN_BLEACHED,
	IMPAIR_STAT_GSO_PACKETS,
	IMPAIR_STAT_GSO_SEGMENTED,
	IMPAIR_STAT_FLOWS_SEEN,
	IMPAIR_STAT_FLOWS_PICKED_UP,
	IMPAIR_STAT_FLOWS_SEQRAND,
	IMPAIR_STAT_FLOWS_EXPIRED,
	IMPAIR_STAT_TABLE_FULL,
	IMPAIR_STAT_ALLOC_FAILED,
	IMPAIR_STAT_MALFORMED,
	IMPAIR_STAT_EDIT_FAILED,
	IMPAIR_STAT_SPLIT_DONE,
	IMPAIR_STAT_SPLIT_SKIPPED,
	IMPAIR_STAT_COAL_HELD,
	IMPAIR_STAT_COALESCED,
	IMPAIR_STAT_COAL_RELEASED,
	IMPAIR_STAT_COAL_TIMEOUT,
	IMPAIR_STAT_COAL_FLUSHED,
	IMPAIR_STAT_COAL_FREED,
	IMPAIR_STAT_COAL_SKIPPED,
	IMPAIR_STAT_COAL_NO_ROUTE,
	IMPAIR_STAT_NR,
};

static const char * const impair_stat_names[IMPAIR_STAT_NR] = {
	[IMPAIR_STAT_SEGS]		= "segs",
	[IMPAIR_STAT_MATCHED]		= "segs_matched",
	[IMPAIR_STAT_DROP_RANDOM]	= "segs_dropped_random",
	[IMPAIR_STAT_DROP_ECN_BLOCK]	= "segs_dropped_ecn_block",
	[IMPAIR_STAT_OPTS_NOPPED]	= "opts_nopped",
	[IMPAIR_STAT_SEGS_COMPACTED]	= "segs_compacted",
	[IMPAIR_STAT_BYTES_COMPACTED]	= "bytes_compacted",
	[IMPAIR_STAT_COMPACT_JUMBO]	= "compact_jumbo_skipped",
	[IMPAIR_STAT_COMPACT_BRIDGED]	= "compact_bridged_skipped",
	[IMPAIR_STAT_MSS_SET]		= "mss_set",
	[IMPAIR_STAT_WSCALE_SET]	= "wscale_set",
	[IMPAIR_STAT_WINDOW_SET]	= "window_set",
	[IMPAIR_STAT_SEQ_REWRITTEN]	= "seq_rewritten",
	[IMPAIR_STAT_SACK_MAPPED]	= "sack_blocks_mapped",
	[IMPAIR_STAT_ECN_SYN_CLEARED]	= "ecn_syn_cleared",
	[IMPAIR_STAT_ECN_SET]		= "ecn_set",
	[IMPAIR_STAT_ECN_BLEACHED]	= "ecn_bleached",
	[IMPAIR_STAT_GSO_PACKETS]	= "gso_packets",
	[IMPAIR_STAT_GSO_SEGMENTED]	= "gso_segmented",
	[IMPAIR_STAT_FLOWS_SEEN]	= "flows_seen",
	[IMPAIR_STAT_FLOWS_PICKED_UP]	= "flows_picked_up",
	[IMPAIR_STAT_FLOWS_SEQRAND]	= "flows_seqrand",
	[IMPAIR_STAT_FLOWS_EXPIRED]	= "flows_expired",
	[IMPAIR_STAT_TABLE_FULL]	= "table_full",
	[IMPAIR_STAT_ALLOC_FAILED]	= "alloc_failed",
	[IMPAIR_STAT_MALFORMED]		= "malformed",
	[IMPAIR_STAT_EDIT_FAILED]	= "edit_failed",
	[IMPAIR_STAT_SPLIT_DONE]	= "split_done",
	[IMPAIR_STAT_SPLIT_SKIPPED]	= "split_skipped",
	[IMPAIR_STAT_COAL_HELD]		= "coalesce_held",
	[IMPAIR_STAT_COALESCED]		= "coalesced",
	[IMPAIR_STAT_COAL_RELEASED]	= "coalesce_released",
	[IMPAIR_STAT_COAL_TIMEOUT]	= "coalesce_timeout_released",
	[IMPAIR_STAT_COAL_FLUSHED]	= "coalesce_flushed",
	[IMPAIR_STAT_COAL_FREED]	= "coalesce_freed",
	[IMPAIR_STAT_COAL_SKIPPED]	= "coalesce_skipped",
	[IMPAIR_STAT_COAL_NO_ROUTE]	= "coalesce_no_route",
};

/* A rule and its hit counter; shared by consecutive rule sets. */
struct impair_krule {
	struct impair_rule r;
	struct tcpfwd_stats __percpu *hits;	/* one counter */
	refcount_t ref;
};

/*
 * A rule set, replaced whole under RCU, with what its rules need: the
 * packet path looks a flow up (and creates it) only if needs_flow, and
 * checks whether a GSO packet must be segmented only if may_split.
 */
struct impair_ruleset {
	struct rcu_head rcu;
	unsigned int n;
	bool needs_flow;	/* some impair_rule_needs_flow() */
	bool may_split;		/* some impair_rule_may_split() */
	bool may_hold;		/* some rule coalesces */
	/*
	 * every rule impair_rule_strip_fast(): strip_kinds, the options any
	 * of them strips, tells a segment none of them changes
	 */
	bool strip_fast;
	struct impair_kindmask strip_kinds;
	struct impair_krule *rules[];
};

struct impair_net {
	struct tcpfwd_net tn;			/* flows, counters, hooks, procfs */
	struct impair_ruleset __rcu *rules;	/* NULL: no rules */
	struct mutex lock;			/* serialises rule writers */
	atomic_t seq_flows;	/* flows with seqrand state (seq.on) */
	/* coalesce: the held segments (struct impair_hold) */
	spinlock_t hold_lock;		/* the list and every flow's hold */
	struct list_head held;		/* oldest first */
	unsigned int nheld;		/* written under hold_lock */
	bool hold_closing;		/* the namespace goes: hold no more */
	struct delayed_work hold_work;	/* releases them after the timeout */
};

/*
 * A flow's seqrand state, copied out under its lock for the rewrite
 * (only @on is read when it is false).
 */
struct impair_seqstate {
	bool on;
	bool sack_fix;
	bool both;
	struct impair_seqadj adj[2];
};

/*
 * At most this many segments held in a namespace: one per flow, and each
 * keeps its whole buffer (skb->truesize, a few KiB), so the flow table's
 * bound alone would let a flood of small segments on new flows pin
 * hundreds of MiB.  Beyond it, coalesce_skipped.
 */
#define IMPAIR_HOLD_MAX		1024

/*
 * coalesce's held segment, in its flow, under impair_net.hold_lock (not
 * the flow's lock: the release work takes only that one).  Listed in
 * impair_net.held while @skb is set.  The skb keeps its route
 * (skb_dst_force()) and its input device (dev_hold()).
 */
struct impair_hold {
	struct list_head node;
	struct sk_buff *skb;
	int (*okfn)(struct net *net, struct sock *sk, struct sk_buff *skb);
	unsigned long since;		/* jiffies */
	struct impair_coal_seg seg;
	u16 thoff, thlen;
	u8 dir;				/* 0: sent by A */
	u8 pf;
	bool gone;			/* the flow is unlinked */
};

/* Per-flow state.  Direction 0 is A (initiator) -> B, 1 is B -> A. */
struct impair_flow {
	struct tcpfwd_flow base;
	u32 segs;		/* segments seen, both directions */
	u32 isn;		/* A's SYN sequence number */
	bool syn_seen;		/* created (or restarted) by A's SYN */
	bool picked_up;		/* first seen mid-stream */
	bool rst;
	u8 fin;			/* 1: FIN from A, 2: FIN from B */
	struct impair_seqstate seq;
	u32 dsegs[2];		/* data segments sent, per direction */
	/* the windows each end advertised, for coalesce (flow lock) */
	u16 win[2];
	s8 wscale[2];		/* from its SYN, -1: none */
	bool win_seen[2];
	bool win_scaled[2];	/* win[] is from a segment other than SYN */
	struct impair_hold hold;
};

static unsigned int impair_net_id __read_mostly;
/*
 * 168-216 B with the coalesce hold: kmalloc-256 on 64-bit ABIs and on
 * ath79 (KMALLOC_MIN_SIZE 128 leaves no kmalloc-192); a cache of its own
 * keeps a flow and its hash bucket within 256 B.
 */
static struct kmem_cache *impair_flow_cache __read_mostly;

static struct impair_net *impair_pernet(const struct net *net)
{
	return net_generic(net, impair_net_id);
}

static void impair_count(struct impair_net *in, enum impair_stat s)
{
	tcpfwd_count(&in->tn, s);
}

static void impair_add(struct impair_net *in, enum impair_stat s,
		       unsigned long n)
{
	tcpfwd_add(&in->tn, s, n);
}

/* --- rule sets -------------------------------------------------------------- */

static void impair_krule_put(struct impair_krule *kr)
{
	if (refcount_dec_and_test(&kr->ref)) {
		tcpfwd_stats_free(kr->hits);
		kfree(kr);
	}
}

static void impair_ruleset_free(struct impair_ruleset *rs)
{
	unsigned int i;

	if (!rs)
		return;
	for (i = 0; i < rs->n; i++)
		impair_krule_put(rs->rules[i]);
	kfree(rs);
}

/* tcpfwd_stats_free() may run in atomic context: in RCU callbacks too. */
static void impair_ruleset_free_rcu(struct rcu_head *head)
{
	impair_ruleset_free(container_of(head, struct impair_ruleset, rcu));
}

/*
 * The new set: the first @nkeep rules of @old (shared, counters kept) and
 * the @n parsed rules.  NULL with *err = 0 when the set is empty.
 */
static struct impair_ruleset *
impair_ruleset_build(const struct impair_ruleset *old, unsigned int nkeep,
		     const struct impair_rule *parsed, unsigned int n, int *err)
{
	struct impair_ruleset *rs;
	unsigned int i;

	*err = 0;
	if (!nkeep && !n)
		return NULL;
	rs = kzalloc(struct_size(rs, rules, nkeep + n), GFP_KERNEL);
	if (!rs)
		goto nomem;
	for (i = 0; i < n; i++) {
		struct impair_krule *kr = kzalloc(sizeof(*kr), GFP_KERNEL);

		if (!kr)
			goto nomem;
		kr->hits = tcpfwd_stats_alloc(1);
		if (!kr->hits) {
			kfree(kr);
			goto nomem;
		}
		kr->r = parsed[i];
		refcount_set(&kr->ref, 1);
		rs->rules[nkeep + i] = kr;
		rs->n++;	/* counts the new rules until complete */
	}
	/* only now take references: the error path frees new rules only */
	for (i = 0; i < nkeep; i++) {
		refcount_inc(&old->rules[i]->ref);
		rs->rules[i] = old->rules[i];
	}
	rs->n = nkeep + n;
	rs->strip_fast = true;
	for (i = 0; i < rs->n; i++) {
		const struct impair_rule *r = &rs->rules[i]->r;
		unsigned int w;

		rs->needs_flow |= impair_rule_needs_flow(r);
		rs->may_split |= impair_rule_may_split(r);
		rs->may_hold |= !!(r->act & IMPAIR_A_COALESCE);
		rs->strip_fast &= impair_rule_strip_fast(r);
		for (w = 0; w < ARRAY_SIZE(r->strip.w); w++)
			rs->strip_kinds.w[w] |= r->strip.w[w];
	}
	return rs;

nomem:
	if (rs) {
		for (i = 0; i < rs->n; i++)
			impair_krule_put(rs->rules[nkeep + i]);
		kfree(rs);
	}
	*err = -ENOMEM;
	return NULL;
}

static void impair_hold_drain(struct impair_net *in, bool send);

static int impair_rules_apply(struct impair_net *in, const char *buf,
			      size_t len, struct impair_rule *parsed)
{
	struct impair_ruleset *old, *rs;
	struct impair_perr perr = { };
	unsigned int nkeep;
	int n, err;

	mutex_lock(&in->lock);
	old = rcu_dereference_protected(in->rules,
					lockdep_is_held(&in->lock));
	nkeep = old ? old->n : 0;
	n = impair_batch_parse(buf, len, parsed, IMPAIR_MAX_RULES, &nkeep,
			       &perr);
	if (n < 0) {
		mutex_unlock(&in->lock);
		/* ratelimited, and the user's bytes escaped (%pE) */
		pr_warn_ratelimited("rules: line %u rejected: %s: '%*pE'\n",
				    perr.line, perr.msg,
				    (int)min(perr.toklen, 64U),
				    perr.tok ? perr.tok : "");
		return -EINVAL;
	}
	if (old && nkeep == old->n && !n) {
		/* nothing but comments and blank lines */
		mutex_unlock(&in->lock);
		return 0;
	}
	rs = impair_ruleset_build(old, nkeep, parsed, n, &err);
	if (err) {
		mutex_unlock(&in->lock);
		return err;
	}
	rcu_assign_pointer(in->rules, rs);
	mutex_unlock(&in->lock);
	if (old)
		call_rcu(&old->rcu, impair_ruleset_free_rcu);
	/* the held segments go on unchanged (a segment held from now on
	 * waits for its timeout)
	 */
	impair_hold_drain(in, true);
	return 0;
}

/* --- packet path -------------------------------------------------------------- */

/* Per-segment context. */
struct impair_seg {
	struct tcpfwd_pkt p;
	u8 family;		/* NFPROTO_* */
	unsigned int nsegs;	/* segments in this (GSO) packet */
	bool malformed;		/* counted once */
	bool edit_failed;
	s8 syn_wscale;		/* a SYN's window scale, -1: none */
	u32 peer_win;		/* the receiver's window, for coalesce */
	/*
	 * planned: plan is what impair_strip_find() would find for the one
	 * rule of a strip_fast set (impair_strip_none() scanned the header
	 * with its mask); nothing else edits the header before that rule
	 */
	bool planned;
	struct impair_strip_plan plan;
};

static void impair_seg_malformed(struct impair_net *in, struct impair_seg *s)
{
	if (!s->malformed)
		impair_count(in, IMPAIR_STAT_MALFORMED);
	s->malformed = true;
}

static void impair_seg_edit_failed(struct impair_net *in,
				   struct impair_seg *s)
{
	if (!s->edit_failed)
		impair_count(in, IMPAIR_STAT_EDIT_FAILED);
	s->edit_failed = true;
}

/*
 * The options of @mask in the segment's TCP header, found by one
 * read-only walk (impair_strip_scan()) of the header where it lies (in
 * the linear area as a rule: no copy).  Returns their number, or a
 * negative code for a malformed block.
 */
static int impair_strip_read(const struct sk_buff *skb,
			     const struct impair_seg *s,
			     const struct impair_kindmask *mask,
			     struct impair_strip_plan *plan)
{
	/* written by skb_header_pointer() before it is read, if at all */
	u8 buf[TCPFWD_TCPHDR_MAX] __uninitialized;
	const u8 *th;

	th = skb_header_pointer(skb, s->p.thoff, s->p.thlen, buf);
	if (!th)
		return TCPFWD_OPT_EHDR;
	return impair_strip_scan(th, s->p.thlen, mask, plan);
}

/*
 * impair_strip_read() for a rule: the packet is made writable only if
 * there is something to strip; a malformed block is counted.
 */
static int impair_strip_find(struct impair_net *in, const struct sk_buff *skb,
			     struct impair_seg *s,
			     const struct impair_kindmask *mask,
			     struct impair_strip_plan *plan)
{
	int ret = impair_strip_read(skb, s, mask, plan);

	if (ret < 0)
		impair_seg_malformed(in, s);
	return ret;
}

/*
 * How many bytes in front of skb->data compaction moves too: the
 * link-layer header, if there is one in front of the data.  A bridged
 * packet (br_netfilter) gets its Ethernet header (and a VLAN or PPPoE
 * header) back by the skb_push() of br_dev_queue_push_xmit() after the IP
 * hooks, so those bytes must move with the IP header or the frame leaves
 * with stale bytes in its Ethernet header; skb->mac_header says where they
 * are.  A routed packet's is rebuilt by the neighbour layer, but moving it
 * keeps skb_mac_header() right for later hooks (NFLOG, NFQUEUE).  -1 if a
 * bridged packet has no usable mac header: then it is not compacted.
 */
static int impair_l2_len(const struct sk_buff *skb)
{
	if (skb_mac_header_was_set(skb) && skb_mac_offset(skb) < 0)
		return -skb_mac_offset(skb);
	return tcpfwd_bridged(skb) ? -1 : 0;
}

/*
 * Remove @by bytes in front of the TCP header at @thoff: move the headers
 * before it (and @l2len bytes of link-layer header, impair_l2_len())
 * forward by @by and pull; the caller has made the bytes writable.
 */
static void impair_pull_front(struct sk_buff *skb, int l2len,
			      unsigned int thoff, unsigned int by)
{
	unsigned int noff = skb_network_offset(skb);
	u8 *src = skb->data - l2len;

	/* move everything in front of the TCP header and pull */
	memmove(src + by, src, l2len + thoff);
	__skb_pull(skb, by);
	if (l2len)
		skb_set_mac_header(skb, -l2len);
	skb_set_network_header(skb, noff);
	skb_set_transport_header(skb, thoff);
	if (skb->ip_summed == CHECKSUM_PARTIAL)
		skb->csum_start = skb_transport_header(skb) - skb->head;
}

/*
 * Remove options and compact the header in place: the rebuilt header ends
 * where the old one ended; the headers in front of it (link layer, see
 * impair_l2_len(), IP and IPv6 extension headers) move forward by the
 * bytes removed and are pulled.  The payload never moves, so this works on
 * paged and GSO packets (gso_size is payload only; the pseudo-header length
 * in a CHECKSUM_PARTIAL check field is the total TCP length, adjusted
 * here).  skb_ensure_writable() has made the head private or its clone
 * writable from skb->head on, so the headroom is writable too.  A BIG TCP
 * packet (no IP length field) is skipped and counted.
 */
static bool impair_compact(struct impair_net *in, struct sk_buff *skb,
			   struct impair_seg *s,
			   const struct impair_kindmask *mask)
{
	unsigned int noff = skb_network_offset(skb), thoff = s->p.thoff;
	unsigned int old_tcplen = skb->len - thoff, removed;
	struct impair_strip_plan plan;
	struct impair_strip_res res;
	int l2len = impair_l2_len(skb);
	struct tcphdr *th;
	int ret;

	if (noff > thoff || impair_strip_find(in, skb, s, mask, &plan) <= 0)
		return false;
	/* the most compaction can remove is every option byte */
	if (tcpfwd_ip_len(skb_network_header(skb)) <=
	    s->p.thlen - sizeof(struct tcphdr)) {
		impair_count(in, IMPAIR_STAT_COMPACT_JUMBO);
		return false;
	}
	if (l2len < 0) {
		impair_count(in, IMPAIR_STAT_COMPACT_BRIDGED);
		return false;
	}
	th = tcpfwd_th_writable(skb, &s->p);
	if (!th) {
		impair_seg_edit_failed(in, s);
		return false;
	}
	ret = impair_strip_opts_compact((u8 *)th, s->p.thlen, mask, &res);
	if (ret < 0)
		impair_seg_malformed(in, s);
	if (ret <= 0)
		return false;
	removed = res.removed;
	th = (struct tcphdr *)((u8 *)th + removed);
	tcpfwd_th_csum_diff(skb, th, res.csum_diff);
	if (!removed)
		return true;

	/* pseudo-header TCP length (16 bits for IPv4, 32 for IPv6) */
	tcpfwd_th_csum_tcplen(skb, th, old_tcplen, old_tcplen - removed);
	impair_pull_front(skb, l2len, thoff, removed);

	/* cannot fail: the length was checked above */
	tcpfwd_skb_ip_resize(skb, -(int)removed);
	s->p.thlen = res.new_hdrlen;
	impair_count(in, IMPAIR_STAT_SEGS_COMPACTED);
	impair_add(in, IMPAIR_STAT_BYTES_COMPACTED, removed);
	return true;
}

static bool impair_strip_nop(struct impair_net *in, struct sk_buff *skb,
			     struct impair_seg *s,
			     const struct impair_kindmask *mask)
{
	/* written before read: by impair_strip_scan(), _apply_nop() */
	struct impair_strip_plan plan __uninitialized;
	struct impair_strip_res res __uninitialized;
	struct tcphdr *th;
	int ret;

	if (s->planned) {
		/* the header was scanned with this mask already */
		s->planned = false;
		plan = s->plan;
		ret = plan.n;
	} else {
		ret = impair_strip_find(in, skb, s, mask, &plan);
	}
	if (ret <= 0)
		return false;
	th = tcpfwd_th_writable(skb, &s->p);
	if (!th) {
		impair_seg_edit_failed(in, s);
		return false;
	}
	impair_strip_apply_nop((u8 *)th, &plan, &res);
	tcpfwd_th_csum_diff(skb, th, res.csum_diff);
	impair_add(in, IMPAIR_STAT_OPTS_NOPPED, ret);
	return true;
}

/* mss / mss-clamp / wscale: true if the option was there. */
static bool impair_set_opt(struct impair_net *in, struct sk_buff *skb,
			   struct impair_seg *s, u32 act,
			   const struct impair_rule *r)
{
	unsigned int optlen = s->p.thlen - sizeof(struct tcphdr);
	struct tcphdr *th;
	u32 diff = 0;
	u8 *opts;
	int ret;

	if (!optlen)
		return false;
	th = tcpfwd_th_writable(skb, &s->p);
	if (!th) {
		impair_seg_edit_failed(in, s);
		return false;
	}
	opts = (u8 *)(th + 1);
	if (act == IMPAIR_A_WSCALE)
		ret = tcpfwd_opt_set_wscale(opts, optlen, r->wscale, &diff);
	else
		ret = tcpfwd_opt_set_mss(opts, optlen, r->mss,
					 act == IMPAIR_A_MSS_CLAMP, &diff);
	if (ret < 0 && ret != TCPFWD_OPT_ESIZE)
		impair_seg_malformed(in, s);
	if (ret != 1)
		return false;
	if (diff)
		tcpfwd_th_csum_diff(skb, th, diff);
	impair_count(in, act == IMPAIR_A_WSCALE ? IMPAIR_STAT_WSCALE_SET :
						  IMPAIR_STAT_MSS_SET);
	return true;
}

static bool impair_set_window(struct impair_net *in, struct sk_buff *skb,
			      struct impair_seg *s, u16 win)
{
	struct tcphdr *th = tcpfwd_th_writable(skb, &s->p);

	if (!th) {
		impair_seg_edit_failed(in, s);
		return false;
	}
	tcpfwd_th_set_window(skb, th, win);
	impair_count(in, IMPAIR_STAT_WINDOW_SET);
	return true;
}

static bool impair_set_ecn(struct impair_net *in, struct sk_buff *skb,
			   struct impair_seg *s, u8 ecn, enum impair_stat st)
{
	if (tcpfwd_set_ecn(skb, &s->p, ecn)) {
		impair_seg_edit_failed(in, s);
		return false;
	}
	s->p.ecn = ecn;
	impair_count(in, st);
	return true;
}

/* The edits of one matching rule; true if any applied. */
static bool impair_edit(struct impair_net *in, struct sk_buff *skb,
			struct impair_seg *s, const struct impair_rule *r,
			bool seq_on)
{
	u8 flags = tcp_flag_byte(&s->p.th);
	bool hit = false;

	if (r->act & IMPAIR_A_STRIP)
		hit |= r->strip_mode == IMPAIR_STRIP_COMPACT ?
		       impair_compact(in, skb, s, &r->strip) :
		       impair_strip_nop(in, skb, s, &r->strip);
	if (r->act & (IMPAIR_A_MSS | IMPAIR_A_MSS_CLAMP))
		hit |= impair_set_opt(in, skb, s, r->act & (IMPAIR_A_MSS |
							     IMPAIR_A_MSS_CLAMP),
				      r);
	if (r->act & IMPAIR_A_WSCALE)
		hit |= impair_set_opt(in, skb, s, IMPAIR_A_WSCALE, r);
	if (r->act & IMPAIR_A_WINDOW)
		hit |= impair_set_window(in, skb, s, r->window);
	if ((r->act & IMPAIR_A_ECN_CLEAR_SYN) && (flags & TCPHDR_SYN) &&
	    (flags & (TCPHDR_ECE | TCPHDR_CWR))) {
		if (tcpfwd_set_tcp_flags(skb, &s->p, 0,
					 TCPHDR_ECE | TCPHDR_CWR)) {
			impair_seg_edit_failed(in, s);
		} else {
			s->p.th = *(struct tcphdr *)(skb->data + s->p.thoff);
			impair_count(in, IMPAIR_STAT_ECN_SYN_CLEARED);
			hit = true;
		}
	}
	if ((r->act & IMPAIR_A_ECN_SET) &&
	    (!r->ecn_only_ect || s->p.ecn != INET_ECN_NOT_ECT))
		hit |= impair_set_ecn(in, skb, s, r->ecn, IMPAIR_STAT_ECN_SET);
	if ((r->act & IMPAIR_A_ECN_BLEACH) && s->p.ecn != INET_ECN_NOT_ECT)
		hit |= impair_set_ecn(in, skb, s, INET_ECN_NOT_ECT,
				      IMPAIR_STAT_ECN_BLEACHED);
	if (r->act & IMPAIR_A_SEQRAND)
		hit |= seq_on;
	return hit;
}

/* Drop decision of one matching rule. */
static bool impair_wants_drop(const struct impair_rule *r, u8 flags)
{
	if ((r->act & IMPAIR_A_ECN_BLOCK) &&
	    (flags & (TCPHDR_SYN | TCPHDR_ACK | TCPHDR_ECE | TCPHDR_CWR)) ==
	    (TCPHDR_SYN | TCPHDR_ECE | TCPHDR_CWR))
		return true;
	return (r->act & IMPAIR_A_DROP) && r->drop_ppm &&
	       get_random_u32_below(IMPAIR_PPM) < r->drop_ppm;
}

static void impair_seq_rewrite(struct impair_net *in, struct sk_buff *skb,
			       struct impair_seg *s, bool from_a,
			       const struct impair_seqstate *snap)
{
	const struct impair_seqadj *a = &snap->adj[0];
	const struct impair_seqadj *b = snap->both ? &snap->adj[1] : NULL;
	struct tcphdr *th = tcpfwd_th_writable(skb, &s->p);
	u32 diff = 0;
	int ret;

	if (!th) {
		impair_seg_edit_failed(in, s);
		return;
	}
	ret = impair_seqadj_rewrite((u8 *)th, s->p.thlen, from_a ? a : b,
				    from_a ? b : a, snap->sack_fix, &diff);
	if (ret < 0 && snap->sack_fix) {
		/* malformed options: map seq/ack anyway, SACK cannot be */
		impair_seg_malformed(in, s);
		diff = 0;
		ret = impair_seqadj_rewrite((u8 *)th, s->p.thlen,
					    from_a ? a : b, from_a ? b : a,
					   false, &diff);
	}
	if (ret < 0) {
		impair_seg_malformed(in, s);
		return;
	}
	tcpfwd_th_csum_diff(skb, th, diff);
	impair_count(in, IMPAIR_STAT_SEQ_REWRITTEN);
	impair_add(in, IMPAIR_STAT_SACK_MAPPED, ret);
}

/* --- split and coalesce ----------------------------------------------------- */

/*
 * The IP length field follows skb->len: tcpfwd_skb_ip_resize(), so that
 * an IPv4 header checksum that was wrong stays wrong, as the TCP one does
 * (impair_seg.h).  Return: 0, or -EINVAL with nothing changed for a
 * length that does not fit the field (a join beyond 65535 bytes, on a
 * link whose MTU allows it) or a packet without one (BIG TCP).
 */
static int impair_ip_len_set(struct sk_buff *skb, u8 family)
{
	int len = skb->len - skb_network_offset(skb);

	if (family == NFPROTO_IPV6)
		len -= sizeof(struct ipv6hdr);
	return tcpfwd_skb_ip_resize(skb, len -
				    (int)tcpfwd_ip_len(skb_network_header(skb)));
}

/* The checksum seed of a segment (impair_seg.h); its check field readable. */
static u32 impair_seed(const struct sk_buff *skb, unsigned int thoff)
{
	unsigned int len = skb->len - thoff;
	bool partial = skb->ip_summed == CHECKSUM_PARTIAL;
	__sum16 check, *c;

	c = skb_header_pointer(skb, thoff + offsetof(struct tcphdr, check),
			       sizeof(check), &check);
	if (!c)
		return 0;
	return impair_csum_seed(partial, (__force u16)*c, len,
				partial ? 0 :
				(__force u32)skb_checksum(skb, thoff, len, 0));
}

/*
 * A new segment's full checksum from @seed; its TCP header at @thoff is
 * writable.  The receiver verifies it: no CHECKSUM_PARTIAL afterwards.
 */
static void impair_csum_set(struct sk_buff *skb, unsigned int thoff, u32 seed)
{
	struct tcphdr *th = (struct tcphdr *)(skb->data + thoff);
	unsigned int len = skb->len - thoff;
	u16 c;

	th->check = 0;
	c = impair_csum_finish(seed, len,
			       (__force u32)skb_checksum(skb, thoff, len, 0));
	th->check = (__force __sum16)c;
	skb->ip_summed = CHECKSUM_NONE;
}

/* seq, data offset and flags of a new segment's writable TCP header. */
static void impair_th_set(struct sk_buff *skb, unsigned int thoff, u32 seq,
			  unsigned int hdrlen, u8 flags)
{
	u8 *th = skb->data + thoff;

	put_unaligned_be32(seq, th + offsetof(struct tcphdr, seq));
	th[12] = (u8)((th[12] & 0x0f) | ((hdrlen / 4) << 4));
	th[13] = flags;
}

/*
 * Piece @i of @plan from @skb, whose first @thoff + @thlen + plan->len[0]
 * bytes are linear and writable: the TCP header (the fixed part only if
 * the piece gets no options) moves to end where the piece's payload
 * starts, and the headers in front of it follow (impair_pull_front()).
 * The first piece is also cut after its payload.
 */
static void impair_piece(struct sk_buff *skb, int l2len, unsigned int thoff,
			 unsigned int thlen,
			 const struct impair_split_plan *plan, int i, u8 family,
			 u32 seed)
{
	unsigned int h = plan->hdrlen[i];
	unsigned int end = thoff + thlen + (i ? plan->len[0] : 0);

	if (!i)
		__skb_trim(skb, thoff + thlen + plan->len[0]);
	if (end - h != thoff) {
		memmove(skb->data + end - h, skb->data + thoff, h);
		impair_pull_front(skb, l2len, thoff, end - h - thoff);
	}
	impair_th_set(skb, thoff, plan->seq[i], h, plan->flags[i]);
	/* cannot fail: a piece is shorter than the packet, which had a length */
	impair_ip_len_set(skb, family);
	impair_csum_set(skb, thoff, seed);
}

/*
 * split: send the first piece (a linear copy, cut) on at once, and make
 * @skb the second.  True if the segment was split.  Segments without
 * payload are not for split (not counted); one too short for the cut, a
 * GSO packet that could not be segmented, a bridged packet (its okfn
 * needs the bridge's state) or a BIG TCP one is skipped and counted.
 */
static bool impair_split(struct impair_net *in, struct sk_buff *skb,
			 struct impair_seg *s, const struct impair_rule *r,
			 const struct nf_hook_state *state)
{
	unsigned int thoff = s->p.thoff, thlen = s->p.thlen;
	u8 buf[TCPFWD_TCPHDR_MAX] __uninitialized;
	int l2len = impair_l2_len(skb);
	struct impair_split_plan plan;
	struct sk_buff *first;
	const u8 *th;
	u32 seed;
	int why;

	if (!s->p.payload)
		return false;
	th = skb_header_pointer(skb, thoff, thlen, buf);
	if (!th)
		return false;
	why = impair_split_plan(get_unaligned_be32(th + 4), th[13], thlen,
				s->p.payload, r->split_at, r->split_opts, &plan);
	if (why || skb_is_gso(skb) || l2len < 0 || tcpfwd_bridged(skb) ||
	    skb_network_offset(skb) > thoff ||
	    !tcpfwd_ip_len(skb_network_header(skb))) {
		impair_count(in, IMPAIR_STAT_SPLIT_SKIPPED);
		return false;
	}
	seed = impair_seed(skb, thoff);
	first = skb_copy(skb, GFP_ATOMIC);
	if (!first || skb_ensure_writable(skb, thoff + thlen + plan.len[0])) {
		kfree_skb(first);
		impair_seg_edit_failed(in, s);
		return false;
	}
	impair_piece(first, l2len, thoff, thlen, &plan, 0, s->family, seed);
	impair_piece(skb, l2len, thoff, thlen, &plan, 1, s->family, seed);
	s->p.thlen = plan.hdrlen[1];
	s->p.payload = plan.len[1];
	tcpfwd_pass_on(first, state);
	impair_count(in, IMPAIR_STAT_SPLIT_DONE);
	return true;
}

/* A held segment taken out of its flow, to send or to free. */
struct impair_rel {
	struct sk_buff *skb;
	int (*okfn)(struct net *net, struct sock *sk, struct sk_buff *skb);
	u8 pf;
	struct impair_hold h;	/* what was known of it */
};

/* Under in->hold_lock: take @h's segment out. */
static void impair_hold_take(struct impair_net *in, struct impair_hold *h,
			     struct impair_rel *rel)
{
	rel->skb = h->skb;
	rel->okfn = h->okfn;
	rel->pf = h->pf;
	rel->h = *h;
	list_del(&h->node);
	h->skb = NULL;
	WRITE_ONCE(in->nheld, in->nheld - 1);
}

/* Send a released segment on, unchanged, as its hook would have. */
static void impair_rel_send(struct impair_net *in, struct impair_rel *rel,
			    enum impair_stat st)
{
	struct nf_hook_state state = {
		.hook	= NF_INET_FORWARD,
		.pf	= rel->pf,
		.net	= in->tn.net,
		.okfn	= rel->okfn,
	};
	struct net_device *dev = rel->skb->dev;

	tcpfwd_pass_on(rel->skb, &state);
	dev_put(dev);
	impair_count(in, st);
}

static void impair_rel_free(struct impair_net *in, struct impair_rel *rel)
{
	dev_put(rel->skb->dev);
	kfree_skb(rel->skb);
	impair_count(in, IMPAIR_STAT_COAL_FREED);
}

/*
 * Under in->hold_lock: the release work due when the oldest held segment
 * has been held @tmo jiffies; brought forward if it is pending for later
 * (impair_hold_rearm()), as it is when a segment held since was put while
 * the work ran.
 */
static void impair_hold_arm(struct impair_net *in, unsigned long tmo)
{
	struct impair_hold *h;
	unsigned long now = jiffies, delay = 0;

	h = list_first_entry_or_null(&in->held, struct impair_hold, node);
	if (!h || in->hold_closing)
		return;
	if (time_before(now, h->since + tmo))
		delay = h->since + tmo - now;
	if (impair_hold_rearm(delayed_work_pending(&in->hold_work),
			      READ_ONCE(in->hold_work.timer.expires), now,
			      delay))
		mod_delayed_work(system_wq, &in->hold_work, delay);
}

/*
 * Take the oldest held segment out into *@rel, if there is one and, with
 * @tmo (jiffies, not 0), it has been held that long; else arm the work
 * for when it will have been.  True if *@rel got one.
 */
static bool impair_hold_next(struct impair_net *in, unsigned long tmo,
			     struct impair_rel *rel)
{
	struct impair_hold *h;

	spin_lock_bh(&in->hold_lock);
	h = list_first_entry_or_null(&in->held, struct impair_hold, node);
	if (h && tmo && time_before(jiffies, h->since + tmo)) {
		impair_hold_arm(in, tmo);
		h = NULL;
	}
	if (h)
		impair_hold_take(in, h, rel);
	spin_unlock_bh(&in->hold_lock);
	return h;
}

/*
 * Release every held segment: sent on when the rules are replaced, freed
 * when the namespace goes.
 */
static void impair_hold_drain(struct impair_net *in, bool send)
{
	struct impair_rel rel;

	while (impair_hold_next(in, 0, &rel)) {
		if (send)
			impair_rel_send(in, &rel, IMPAIR_STAT_COAL_FLUSHED);
		else
			impair_rel_free(in, &rel);
	}
}

/* The timeout: release the segments held for coalesce_timeout_ms. */
static void impair_hold_work(struct work_struct *work)
{
	struct impair_net *in = container_of(to_delayed_work(work),
					     struct impair_net, hold_work);
	unsigned long tmo = msecs_to_jiffies(READ_ONCE(coalesce_timeout.val));
	struct impair_rel rel;

	while (impair_hold_next(in, tmo, &rel))
		impair_rel_send(in, &rel, IMPAIR_STAT_COAL_TIMEOUT);
}

/*
 * The held segment @a and its successor @b as one new segment, with the
 * headers of the one @opts names; NULL if there is no memory or the IP
 * length field cannot hold the sum (impair_ip_len_set()).
 */
static struct sk_buff *impair_join(const struct impair_rel *a,
				   struct sk_buff *b,
				   const struct impair_seg *sb,
				   const struct impair_coal_seg *cb, u8 opts)
{
	bool second = opts == IMPAIR_OPTS_SECOND;
	const struct impair_coal_seg *ca = &a->h.seg;
	unsigned int thoff = second ? sb->p.thoff : a->h.thoff;
	unsigned int thlen = second ? sb->p.thlen : a->h.thlen;
	unsigned int add = second ? ca->len : cb->len;
	struct sk_buff *n, *base = second ? b : a->skb;
	u8 *pay;

	n = skb_copy_expand(base, skb_headroom(base), add, GFP_ATOMIC);
	if (!n)
		return NULL;
	pay = n->data + thoff + thlen;
	__skb_put(n, add);
	if (second) {
		memmove(pay + add, pay, cb->len);
		skb_copy_bits(a->skb, a->h.thoff + a->h.thlen, pay, add);
	} else {
		skb_copy_bits(b, sb->p.thoff + sb->p.thlen, pay + ca->len, add);
	}
	impair_th_set(n, thoff, ca->seq, thlen,
		      impair_coalesce_flags(ca->flags, cb->flags, opts));
	if (impair_ip_len_set(n, sb->family)) {
		kfree_skb(n);
		return NULL;
	}
	impair_csum_set(n, thoff, second ? cb->seed : ca->seed);
	return n;
}

/*
 * Under in->hold_lock: hold @skb (segment @cs, direction @dir) in the
 * flow's slot @h until its successor comes, or the timeout; the release
 * work armed for the oldest held segment (impair_hold_arm()).
 */
static void impair_hold_put(struct impair_net *in, struct impair_hold *h,
			    struct sk_buff *skb, const struct impair_seg *s,
			    const struct impair_coal_seg *cs, u8 dir,
			    const struct nf_hook_state *state)
{
	unsigned long tmo = msecs_to_jiffies(READ_ONCE(coalesce_timeout.val));

	h->skb = skb;
	h->okfn = state->okfn;
	h->pf = state->pf;
	h->since = jiffies;
	h->seg = *cs;
	h->thoff = s->p.thoff;
	h->thlen = s->p.thlen;
	h->dir = dir;
	dev_hold(skb->dev);
	list_add_tail(&h->node, &in->held);
	WRITE_ONCE(in->nheld, in->nheld + 1);
	impair_hold_arm(in, tmo);
}

/*
 * The held segment @rel and @skb, its successor, sent on as one (rule
 * @kr).  Return: true if done (both consumed); false if they could not be
 * joined (counted), @rel still to send.
 */
static bool impair_coalesce_join(struct impair_net *in,
				 const struct impair_krule *kr,
				 struct impair_rel *rel, struct sk_buff *skb,
				 struct impair_seg *s,
				 const struct impair_coal_seg *cs, u8 opts,
				 const struct nf_hook_state *state)
{
	struct sk_buff *n = impair_join(rel, skb, s, cs, opts);

	if (!n) {
		impair_seg_edit_failed(in, s);
		return false;
	}
	tcpfwd_pass_on(n, state);
	dev_put(rel->skb->dev);
	consume_skb(rel->skb);
	consume_skb(skb);
	impair_count(in, IMPAIR_STAT_COALESCED);
	tcpfwd_stats_add(kr->hits, 0, 2);
	return true;
}

/*
 * The segment of @skb as coalesce sees it, into @cs (zeroed); with @kr (a
 * coalesce rule matched) also its checksum seed and, into *@mtu, the
 * route's MTU: 0 for a segment that is neither held nor joined (GSO,
 * bridged, or its headers not in the usual order).  Return: false if the
 * TCP header cannot be read.
 */
static bool impair_coal_seg_init(const struct sk_buff *skb,
				 const struct impair_seg *s,
				 const struct impair_krule *kr,
				 struct impair_coal_seg *cs, unsigned int *mtu)
{
	bool gso = skb_is_gso(skb) || tcpfwd_bridged(skb) ||
		   skb_network_offset(skb) > s->p.thoff;
	u8 buf[TCPFWD_TCPHDR_MAX] __uninitialized;
	const u8 *th = skb_header_pointer(skb, s->p.thoff, s->p.thlen, buf);

	if (!th)
		return false;
	cs->seq = get_unaligned_be32(th + 4);
	cs->flags = th[13];
	cs->len = s->p.payload;
	cs->hdrlen = s->p.thoff - skb_network_offset(skb) + s->p.thlen;
	*mtu = 0;
	if (!kr || gso)
		return true;
	/* what a join compares: both segments matched a coalesce rule */
	cs->dsfield = s->p.key.family == NFPROTO_IPV4 ?
		      ipv4_get_dsfield(ip_hdr(skb)) :
		      ipv6_get_dsfield(ipv6_hdr(skb));
	if (skb_dst(skb))
		*mtu = dst_mtu(skb_dst(skb));
	if (cs->len)
		cs->seed = impair_seed(skb, s->p.thoff);
	return true;
}

/*
 * The coalesce part of a segment of a tracked flow, after the other rules:
 * a segment in the direction of the held one, or any SYN, FIN or RST,
 * releases it, joined to this one if @kr (a coalesce rule matched) and
 * this one is its successor (impair_coalesce_check()), else sent on
 * first; a segment that matched @kr is held if the flow's slot is free
 * (impair_coalesce_can_hold()).  Returns NF_ACCEPT, NF_STOLEN for a
 * segment held or joined, or NF_DROP for one that cannot keep its route.
 */
static unsigned int impair_coalesce(struct impair_net *in,
				    struct impair_flow *ef,
				    struct sk_buff *skb, struct impair_seg *s,
				    const struct impair_krule *kr, bool from_a,
				    const struct nf_hook_state *state)
{
	u8 opts = kr ? kr->r.coalesce_opts : 0;
	struct impair_hold *h = &ef->hold;
	struct impair_coal_seg cs = { };
	int why = IMPAIR_SEG_NODATA;
	struct impair_rel rel = { };
	bool hold = false, noroute = false;
	u8 dir = !from_a;
	unsigned int mtu;

	if (!kr && !READ_ONCE(h->skb))
		return NF_ACCEPT;
	if (!impair_coal_seg_init(skb, s, kr, &cs, &mtu))
		return NF_ACCEPT;

	spin_lock_bh(&in->hold_lock);
	if (h->skb && (h->dir == dir ||
		       (cs.flags & (IMPAIR_TCP_SYN | IMPAIR_TCP_FIN |
				    IMPAIR_TCP_RST)))) {
		if (kr && h->dir == dir)
			why = impair_coalesce_check(&h->seg, &cs, opts, mtu,
						    s->peer_win);
		impair_hold_take(in, h, &rel);
	}
	if (kr && cs.len && why != IMPAIR_SEG_OK && !h->skb && !h->gone &&
	    !in->hold_closing && in->nheld < IMPAIR_HOLD_MAX &&
	    !impair_coalesce_can_hold(&cs, mtu) && skb->dev) {
		/*
		 * A segment held keeps its route.  skb_dst_force() fails on a
		 * route being freed, and leaves the segment without one: it
		 * cannot be forwarded either, so it is dropped (as nf_queue
		 * does).
		 */
		if (skb_dst_force(skb)) {
			impair_hold_put(in, h, skb, s, &cs, dir, state);
			hold = true;
		} else {
			noroute = true;
		}
	}
	spin_unlock_bh(&in->hold_lock);

	if (rel.skb && why == IMPAIR_SEG_OK &&
	    impair_coalesce_join(in, kr, &rel, skb, s, &cs, opts, state))
		return NF_STOLEN;
	if (rel.skb)
		impair_rel_send(in, &rel, IMPAIR_STAT_COAL_RELEASED);
	if (hold) {
		impair_count(in, IMPAIR_STAT_COAL_HELD);
		return NF_STOLEN;
	}
	if (noroute) {
		impair_count(in, IMPAIR_STAT_COAL_NO_ROUTE);
		return NF_DROP;
	}
	if (kr && cs.len)
		impair_count(in, IMPAIR_STAT_COAL_SKIPPED);
	return NF_ACCEPT;
}

/* A SYN's window scale option (capped at 14), or -1. */
static s8 impair_syn_wscale(const struct sk_buff *skb,
			    const struct impair_seg *s)
{
	u8 buf[TCPFWD_TCPHDR_MAX] __uninitialized;
	struct tcpfwd_opt o;
	const u8 *th;

	th = skb_header_pointer(skb, s->p.thoff, s->p.thlen, buf);
	if (!th || tcpfwd_opt_find(th + sizeof(struct tcphdr),
				   s->p.thlen - sizeof(struct tcphdr),
				   TCPFWD_OPT_WSCALE, &o) != 1 ||
	    o.len != TCPFWD_OPTLEN_WSCALE)
		return -1;
	return (s8)min_t(u8, th[sizeof(struct tcphdr) + o.off + 2], 14);
}

/*
 * Under the flow's lock: note the window of a segment in direction @d,
 * and return the window of the other end (the receiver of its data):
 * scaled once both SYNs carried a window scale, 65535 until seen.
 */
static u32 impair_flow_window(struct impair_flow *ef, u8 d,
			      const struct impair_seg *s)
{
	unsigned int shift = 0;
	u8 e = !d;

	if (tcp_flag_byte(&s->p.th) & TCPHDR_SYN)
		ef->wscale[d] = s->syn_wscale;
	ef->win[d] = ntohs(s->p.th.window);
	ef->win_seen[d] = true;
	ef->win_scaled[d] = !(tcp_flag_byte(&s->p.th) & TCPHDR_SYN);
	if (!ef->win_seen[e])
		return 65535;
	if (ef->win_scaled[e] && ef->wscale[0] >= 0 && ef->wscale[1] >= 0)
		shift = ef->wscale[e];
	return (u32)ef->win[e] << shift;
}

/* Under f->lock: a SYN from either end (re)starts the flow's state. */
static void impair_flow_syn(struct impair_net *in, struct impair_flow *ef,
			    const struct tcpfwd_pkt *p)
{
	u32 seq = ntohl(p->th.seq);

	if (ef->syn_seen && tcpfwd_from_a(&ef->base, p) && seq == ef->isn)
		return;		/* retransmitted SYN */
	if (ef->syn_seen || ef->picked_up)
		impair_count(in, IMPAIR_STAT_FLOWS_SEEN); /* reused tuple */
	ef->base.a_is_lo = p->src_is_lo;
	ef->isn = seq;
	ef->syn_seen = true;
	ef->picked_up = false;
	ef->segs = 0;
	if (ef->seq.on)
		atomic_dec(&in->seq_flows);
	ef->seq.on = false;
	ef->rst = false;
	ef->fin = 0;
	ef->dsegs[0] = 0;
	ef->dsegs[1] = 0;
	ef->win_seen[0] = false;
	ef->win_seen[1] = false;
	ef->wscale[0] = -1;
	ef->wscale[1] = -1;
}

/* Without flow state: the initiator is key.lo_* (impair_sender_is_a()). */
static bool impair_guess_a_is_lo(const struct tcpfwd_pkt *p)
{
	return impair_sender_is_a(tcp_flag_byte(&p->th)) == p->src_is_lo;
}

static struct impair_flow *impair_flow_get(struct impair_net *in,
					   const struct tcpfwd_pkt *p, bool create)
{
	u8 fl = tcp_flag_byte(&p->th) & (TCPHDR_SYN | TCPHDR_ACK | TCPHDR_RST);
	enum tcpfwd_insert_err err;
	struct tcpfwd_flow *f;

	f = tcpfwd_flow_lookup(&in->tn.ft, &p->key);
	if (f)
		return container_of(f, struct impair_flow, base);
	if ((fl & TCPHDR_RST) || !create)
		return NULL;
	f = tcpfwd_flow_insert(&in->tn, &p->key, impair_guess_a_is_lo(p),
			       READ_ONCE(max_flows.val), &err);
	if (!f)		/* counted: table_full or alloc_failed */
		return NULL;
	if (err == TCPFWD_INSERT_OK)
		impair_count(in, fl == TCPHDR_SYN ? IMPAIR_STAT_FLOWS_SEEN :
						   IMPAIR_STAT_FLOWS_PICKED_UP);
	return container_of(f, struct impair_flow, base);
}

static void impair_fill_pkt(struct impair_pkt *ip, const struct tcpfwd_pkt *p,
			    bool a_is_lo, const struct nf_hook_state *state)
{
	const struct tcpfwd_flow_key *k = &p->key;

	ip->family = k->family == NFPROTO_IPV4 ? 4 : 6;
	ip->from_a = a_is_lo == p->src_is_lo;
	ip->tcp_flags = tcp_flag_byte(&p->th);
	ip->a_addr = (a_is_lo ? &k->lo_addr : &k->hi_addr)->s6_addr;
	ip->b_addr = (a_is_lo ? &k->hi_addr : &k->lo_addr)->s6_addr;
	ip->a_port = ntohs(a_is_lo ? k->lo_port : k->hi_port);
	ip->b_port = ntohs(a_is_lo ? k->hi_port : k->lo_port);
	ip->in = state->in ? state->in->name : NULL;
	ip->out = state->out ? state->out->name : NULL;
	ip->seg_known = false;
	ip->seg = 0;
	ip->dseg = 0;
}

/*
 * Which rules a segment matched.  Bits from rs->n on are never read, and
 * impair_match_all() writes every bit below it, so nothing is zeroed.
 * Rule sets are short: the loops over them test each bit in turn rather
 * than call find_next_bit().
 */
struct impair_hits {
	unsigned int n;				/* rules matched */
	DECLARE_BITMAP(bits, IMPAIR_MAX_RULES);
};

/*
 * Match every rule against @ip into @hit.  With @last_seg and @last_dseg
 * (a GSO packet spanning segments seg..last_seg, data segments
 * dseg..last_dseg) returns true if some rule would match differently on
 * its last segment, would drop one of them, or split each.
 */
static bool impair_match_all(const struct impair_ruleset *rs,
			     struct impair_pkt *ip, struct impair_hits *hit,
			     u32 last_seg, u32 last_dseg, bool gso)
{
	u32 first = ip->seg, dfirst = ip->dseg;
	bool split = false;
	unsigned int i;

	hit->n = 0;
	for (i = 0; i < rs->n; i++) {
		const struct impair_rule *r = &rs->rules[i]->r;
		bool m;

		ip->seg = first;
		ip->dseg = dfirst;
		m = impair_rule_match(r, ip);
		__assign_bit(i, hit->bits, m);
		hit->n += m;
		if (!gso)
			continue;
		if (m && (r->act & (IMPAIR_A_DROP | IMPAIR_A_ECN_BLOCK |
				    IMPAIR_A_SPLIT)))
			split = true;
		if (!m && impair_rule_match_inside(r, ip, last_dseg))
			split = true;
		ip->seg = last_seg;
		ip->dseg = last_dseg;
		if (ip->seg_known && m != impair_rule_match(r, ip))
			split = true;
	}
	ip->seg = first;
	ip->dseg = dfirst;
	return split;
}

/*
 * Under the flow's lock, on the initiator's SYN: the first matching
 * seqrand rule (@hit) gives a flow that has none its random offsets.
 */
static void impair_flow_seqrand(struct impair_net *in,
				const struct impair_ruleset *rs,
				struct impair_flow *ef,
				const struct impair_hits *hit)
{
	const struct impair_rule *seqrule = NULL;
	unsigned int i;

	for (i = 0; hit->n && i < rs->n; i++) {
		if (test_bit(i, hit->bits) &&
		    (rs->rules[i]->r.act & IMPAIR_A_SEQRAND)) {
			seqrule = &rs->rules[i]->r;
			break;
		}
	}
	if (!seqrule || ef->seq.on || !ef->syn_seen)
		return;
	ef->seq.on = true;
	ef->seq.sack_fix = seqrule->seq_sack_fix;
	ef->seq.both = seqrule->seq_both;
	impair_seqadj_init(&ef->seq.adj[0], get_random_u32() | 1);
	impair_seqadj_init(&ef->seq.adj[1], get_random_u32() | 1);
	impair_count(in, IMPAIR_STAT_FLOWS_SEQRAND);
	atomic_inc(&in->seq_flows);
}

/*
 * Under the flow's lock: note a segment's RST or FIN (with TCP flags
 * @flags, from A if @from_a) and keep the flow flow_timeout after it, or
 * only TCPFWD_CLOSED_SECS once it is closed (RST, or both FINs).
 */
static void impair_flow_expiry(struct impair_flow *ef, u8 flags, bool from_a)
{
	if (flags & TCPHDR_RST)
		ef->rst = true;
	if (flags & TCPHDR_FIN)
		ef->fin |= from_a ? 1 : 2;
	tcpfwd_flow_expire_in(&ef->base,
			      (ef->rst || ef->fin == 3 ? TCPFWD_CLOSED_SECS :
			       READ_ONCE(flow_timeout.val)) * HZ);
}

enum impair_step {
	IMPAIR_STEP_OK,
	IMPAIR_STEP_DEAD,	/* the flow is being freed: treat as untracked */
	IMPAIR_STEP_SPLIT,	/* segment the GSO packet first; nothing done */
};

/*
 * The flow's part of a segment, under its lock: restart on a new SYN, the
 * roles and segment index for matching, the segment count, seqrand set-up
 * on the initiator's SYN, expiry; *snap gets the seq state to apply.
 */
static enum impair_step impair_flow_step(struct impair_net *in,
					 const struct impair_ruleset *rs,
					 struct impair_flow *ef,
					 struct impair_seg *s,
					 const struct nf_hook_state *state,
					 struct impair_pkt *ip,
					 struct impair_hits *hit, bool gso,
					 struct impair_seqstate *snap)
{
	u8 flags = tcp_flag_byte(&s->p.th);
	u32 last_dseg = 0;
	bool bh;
	u8 d;

	if (!tcpfwd_flow_lock_live(&ef->base, &bh))
		return IMPAIR_STEP_DEAD;
	if ((flags & (TCPHDR_SYN | TCPHDR_ACK | TCPHDR_RST)) == TCPHDR_SYN)
		impair_flow_syn(in, ef, &s->p);
	else if (!ef->syn_seen)
		ef->picked_up = true;
	impair_fill_pkt(ip, &s->p, ef->base.a_is_lo, state);
	ip->seg_known = true;
	ip->seg = ef->segs;
	d = !ip->from_a;
	if (s->p.payload) {
		ip->dseg = ef->dsegs[d] + 1;
		last_dseg = ef->dsegs[d] + s->nsegs;
	}
	if (impair_match_all(rs, ip, hit, ef->segs + s->nsegs - 1, last_dseg,
			     gso) && gso) {
		tcpfwd_flow_unlock(&ef->base, bh);
		return IMPAIR_STEP_SPLIT;
	}
	ef->segs += s->nsegs;
	if (s->p.payload)
		ef->dsegs[d] += s->nsegs;
	if (rs->may_hold)
		s->peer_win = impair_flow_window(ef, d, s);
	if (ip->from_a && (flags & (TCPHDR_SYN | TCPHDR_ACK)) == TCPHDR_SYN)
		impair_flow_seqrand(in, rs, ef, hit);
	impair_flow_expiry(ef, flags, ip->from_a);
	*snap = ef->seq;
	tcpfwd_flow_unlock(&ef->base, bh);
	return IMPAIR_STEP_OK;
}

static unsigned int impair_gso_split(struct impair_net *in,
				     const struct impair_ruleset *rs,
				     struct sk_buff *skb,
				     const struct nf_hook_state *state);

/*
 * A rule set of unconditional strip rules only (rs->strip_fast): if the
 * segment carries none of the options they strip (no options at all, or
 * a valid block without those kinds: impair_strip_scan() on the union of
 * their masks), every rule matches it and changes nothing.  Counted as the
 * full path would (segs, gso_packets, segs_matched; no rule hit), without
 * matching each rule, scanning once per rule or making the packet
 * writable.  A malformed option block takes the full path, which counts
 * it.  Return: true if the segment is done with.
 */
static bool impair_strip_none(struct impair_net *in,
			      const struct impair_ruleset *rs,
			      const struct sk_buff *skb, struct impair_seg *s)
{
	int ret;

	if (s->p.thlen > sizeof(struct tcphdr)) {
		ret = impair_strip_read(skb, s, &rs->strip_kinds, &s->plan);
		/* one rule: its mask is the union, its nop strip needs no scan */
		s->planned = ret > 0 && rs->n == 1 &&
			     rs->rules[0]->r.strip_mode != IMPAIR_STRIP_COMPACT;
		if (ret)
			return false;
	}
	impair_add(in, IMPAIR_STAT_SEGS, s->nsegs);
	if (s->nsegs > 1)
		impair_count(in, IMPAIR_STAT_GSO_PACKETS);
	impair_add(in, IMPAIR_STAT_MATCHED, s->nsegs);
	return true;
}

/*
 * Without a flow: which rules match (impair_match_all(), the roles guessed
 * from the flags); every rule of a strip_fast set, without looking.
 * Return: true if a GSO packet must be segmented first.
 */
static bool impair_match_noflow(const struct impair_ruleset *rs,
				const struct impair_seg *s,
				const struct nf_hook_state *state,
				struct impair_pkt *ip, struct impair_hits *hit,
				bool gso)
{
	if (rs->strip_fast) {
		/* ip is read only with a flow (coalesce, seqrand) */
		ip->from_a = false;
		bitmap_fill(hit->bits, rs->n);
		hit->n = rs->n;
		return false;
	}
	impair_fill_pkt(ip, &s->p, impair_guess_a_is_lo(&s->p), state);
	return impair_match_all(rs, ip, hit, 0, 0, gso);
}

/*
 * The segment of @skb into @s: parsed (tcpfwd_parse(); a malformed one is
 * counted), its segment count, a SYN's window scale for coalesce; *@gso:
 * a GSO packet that may be segmented if a rule needs it.  Return: false
 * if it is not a TCP segment the rules can look at.
 */
static bool impair_seg_init(struct impair_net *in,
			    const struct impair_ruleset *rs,
			    struct sk_buff *skb,
			    const struct nf_hook_state *state, bool may_segment,
			    struct impair_seg *s, bool *gso)
{
	/* not TCP, or malformed (counted) */
	if (tcpfwd_parse(&in->tn, skb, state->pf, &s->p))
		return false;
	s->family = state->pf;
	s->malformed = false;
	s->edit_failed = false;
	s->peer_win = 0;
	s->syn_wscale = -1;
	s->planned = false;
	*gso = skb_is_gso(skb);
	s->nsegs = *gso ? impair_gso_nsegs(skb_shinfo(skb)->gso_segs,
					   skb_shinfo(skb)->gso_size,
					   s->p.payload) : 1;
	*gso = *gso && rs->may_split && may_segment && !tcpfwd_bridged(skb);
	if (rs->may_hold && (tcp_flag_byte(&s->p.th) & TCPHDR_SYN))
		s->syn_wscale = impair_syn_wscale(skb, s);
	return true;
}

/*
 * Lookup-or-insert, and decide: the segment's flow (*@efp; NULL without
 * one), which rules match it (@hit, the roles in @ip), the flow's seqrand
 * state (@snap).  The flow table only when a rule needs per-flow state,
 * or a flow may have seqrand offsets to apply (kept after their rule
 * went).  Return: IMPAIR_STEP_SPLIT if a GSO packet must be segmented
 * first (nothing done).
 */
static enum impair_step impair_decide(struct impair_net *in,
				      const struct impair_ruleset *rs,
				      const struct nf_hook_state *state,
				      struct impair_seg *s, bool gso,
				      struct impair_flow **efp,
				      struct impair_pkt *ip,
				      struct impair_hits *hit,
				      struct impair_seqstate *snap)
{
	struct impair_flow *ef = NULL;
	enum impair_step step;

	if (rs->needs_flow || atomic_read(&in->seq_flows))
		ef = impair_flow_get(in, &s->p, rs->needs_flow);
	step = ef ? impair_flow_step(in, rs, ef, s, state, ip, hit, gso,
				     snap) : IMPAIR_STEP_DEAD;
	if (step == IMPAIR_STEP_DEAD) {
		/* untracked: roles from the flags (impair_sender_is_a()) */
		ef = NULL;
		if (impair_match_noflow(rs, s, state, ip, hit, gso) && gso)
			step = IMPAIR_STEP_SPLIT;
	}
	*efp = ef;
	return step;
}

/*
 * Drops first: a dropped segment is no hit for the edit rules.  Return:
 * true if a matching rule drops it (counted).
 */
static bool impair_drops(struct impair_net *in,
			 const struct impair_ruleset *rs,
			 const struct impair_hits *hit,
			 const struct impair_seg *s)
{
	u8 flags = tcp_flag_byte(&s->p.th);
	unsigned int i;

	for (i = 0; i < rs->n; i++) {
		const struct impair_rule *r = &rs->rules[i]->r;

		if (!test_bit(i, hit->bits) || !impair_wants_drop(r, flags))
			continue;
		tcpfwd_stats_add(rs->rules[i]->hits, 0, s->nsegs);
		impair_add(in, r->act & IMPAIR_A_DROP ?
			   IMPAIR_STAT_DROP_RANDOM : IMPAIR_STAT_DROP_ECN_BLOCK,
			   s->nsegs);
		return true;
	}
	return false;
}

/* The first matching rule that splits or coalesces, or NULL. */
static const struct impair_krule *
impair_last_rule(const struct impair_ruleset *rs, const struct impair_hits *hit)
{
	unsigned int i;

	for (i = 0; i < rs->n; i++)
		if (test_bit(i, hit->bits) &&
		    (rs->rules[i]->r.act & (IMPAIR_A_SPLIT | IMPAIR_A_COALESCE)))
			return rs->rules[i];
	return NULL;
}

/*
 * Split or coalesce last, by @kr (impair_last_rule()); a segment held for
 * coalescing goes before this one otherwise.
 */
static unsigned int impair_finish(struct impair_net *in,
				  const struct impair_krule *kr,
				  struct impair_flow *ef, bool from_a,
				  struct sk_buff *skb, struct impair_seg *s,
				  const struct nf_hook_state *state)
{
	if (kr && (kr->r.act & IMPAIR_A_COALESCE))
		return ef ? impair_coalesce(in, ef, skb, s, kr, from_a,
					    state) : NF_ACCEPT;
	if (ef && READ_ONCE(in->nheld))
		impair_coalesce(in, ef, skb, s, NULL, from_a, state);
	if (kr && impair_split(in, skb, s, &kr->r, state))
		tcpfwd_stats_add(kr->hits, 0, 1);
	return NF_ACCEPT;
}

/* Apply what matched (@hit) to the segment: drop, edits, seq, split. */
static unsigned int impair_apply(struct impair_net *in,
				 const struct impair_ruleset *rs,
				 struct sk_buff *skb,
				 const struct nf_hook_state *state,
				 struct impair_seg *s, struct impair_flow *ef,
				 bool from_a, const struct impair_hits *hit,
				 const struct impair_seqstate *snap)
{
	unsigned int i;

	if (!hit->n) {
		if (snap->on)
			impair_seq_rewrite(in, skb, s, from_a, snap);
		if (ef && READ_ONCE(in->nheld))
			return impair_coalesce(in, ef, skb, s, NULL, from_a,
					       state);
		return NF_ACCEPT;
	}
	impair_add(in, IMPAIR_STAT_MATCHED, s->nsegs);
	if (impair_drops(in, rs, hit, s))
		return NF_DROP;
	for (i = 0; i < rs->n; i++)
		if (test_bit(i, hit->bits) &&
		    impair_edit(in, skb, s, &rs->rules[i]->r, snap->on))
			tcpfwd_stats_add(rs->rules[i]->hits, 0, s->nsegs);
	/* seq/ack/SACK, on the header as the other rules left it */
	if (snap->on)
		impair_seq_rewrite(in, skb, s, from_a, snap);
	return impair_finish(in, impair_last_rule(rs, hit), ef, from_a, skb, s,
			     state);
}

/*
 * One segment (or GSO packet): impair_seg_init(), the early exit of a
 * strip-only rule set, impair_decide() (lookup-or-insert, match),
 * impair_apply().
 */
static unsigned int impair_process(struct impair_net *in,
				   const struct impair_ruleset *rs,
				   struct sk_buff *skb,
				   const struct nf_hook_state *state,
				   bool may_segment)
{
	/*
	 * On every packet, so not zeroed by CONFIG_INIT_STACK_ALL_ZERO: every
	 * field read below is written first (impair_seg_init() writes s,
	 * impair_decide() all of ip or, for a strip_fast set without a flow,
	 * ip.from_a, and the bits of hit below rs->n; snap is read only when
	 * snap.on).
	 */
	struct impair_seqstate snap __uninitialized;
	struct impair_hits hit __uninitialized;
	struct impair_pkt ip __uninitialized;
	struct impair_seg s __uninitialized;
	struct impair_flow *ef;
	bool gso;

	if (!impair_seg_init(in, rs, skb, state, may_segment, &s, &gso))
		return NF_ACCEPT;
	snap.on = false;
	/* strip rules only, nothing of theirs in the segment, no seqrand */
	if (rs->strip_fast && !atomic_read(&in->seq_flows) &&
	    impair_strip_none(in, rs, skb, &s))
		return NF_ACCEPT;
	if (impair_decide(in, rs, state, &s, gso, &ef, &ip, &hit, &snap) ==
	    IMPAIR_STEP_SPLIT)
		return impair_gso_split(in, rs, skb, state);
	impair_add(in, IMPAIR_STAT_SEGS, s.nsegs);
	if (s.nsegs > 1)
		impair_count(in, IMPAIR_STAT_GSO_PACKETS);
	return impair_apply(in, rs, skb, state, &s, ef, ip.from_a, &hit,
			    &snap);
}

/*
 * A GSO packet of which a segment may be dropped, or only some segments
 * match: segment it in software and pass each segment through the rules.
 * The hook is the last one in FORWARD, so the survivors continue with
 * state->okfn.
 */
struct impair_seg_ctx {
	struct impair_net *in;
	const struct impair_ruleset *rs;
};

static unsigned int impair_seg_verdict(struct sk_buff *seg,
				       const struct nf_hook_state *state,
				       void *ctx)
{
	struct impair_seg_ctx *c = ctx;

	return impair_process(c->in, c->rs, seg, state, false);
}

static unsigned int impair_gso_split(struct impair_net *in,
				     const struct impair_ruleset *rs,
				     struct sk_buff *skb,
				     const struct nf_hook_state *state)
{
	struct impair_seg_ctx c = { .in = in, .rs = rs };

	/* not segmented: edit_failed, and through the rules whole */
	return tcpfwd_gso_split(&in->tn, skb, state, impair_seg_verdict, &c);
}

/* No rules, but flows with seqrand state: keep rewriting them. */
static const struct impair_ruleset impair_no_rules;

static unsigned int impair_hook(void *priv, struct sk_buff *skb,
				const struct nf_hook_state *state)
{
	struct impair_net *in = container_of(priv, struct impair_net, tn);
	const struct impair_ruleset *rs = rcu_dereference(in->rules);

	if (!rs) {
		if (likely(!atomic_read(&in->seq_flows)))
			return NF_ACCEPT;
		rs = &impair_no_rules;
	}
	return impair_process(in, rs, skb, state, true);
}

/* The collector unlinked @f (under its lock): one seqrand flow fewer? */
static void impair_flow_gone(struct tcpfwd_net *tn, struct tcpfwd_flow *f)
{
	struct impair_net *in = container_of(tn, struct impair_net, tn);
	struct impair_flow *ef = container_of(f, struct impair_flow, base);
	struct impair_rel rel = { };

	if (ef->seq.on)
		atomic_dec(&in->seq_flows);
	/* its held segment is freed: nothing is sent from the collector */
	spin_lock_bh(&in->hold_lock);
	ef->hold.gone = true;
	if (ef->hold.skb)
		impair_hold_take(in, &ef->hold, &rel);
	spin_unlock_bh(&in->hold_lock);
	if (rel.skb)
		impair_rel_free(in, &rel);
}

/* --- procfs ------------------------------------------------------------------------ */

static void impair_stats_show(struct seq_file *seq, struct tcpfwd_net *tn)
{
	struct impair_net *in = container_of(tn, struct impair_net, tn);
	const struct impair_ruleset *rs;

	rcu_read_lock();
	rs = rcu_dereference(in->rules);
	seq_printf(seq, "rules %u\n", rs ? rs->n : 0);
	rcu_read_unlock();
	seq_printf(seq, "held %u\n", READ_ONCE(in->nheld));
}

/*
 * "flush", then one line per rule: its canonical text and "# hits N" (the
 * segments it changed or dropped).  Written back, this replaces the set.
 */
static int impair_rules_show(struct seq_file *seq, void *v)
{
	struct impair_net *in = seq->private;
	const struct impair_ruleset *rs;
	char line[IMPAIR_FMT_MAX];
	unsigned int i;

	seq_puts(seq, "flush\n");
	mutex_lock(&in->lock);
	rs = rcu_dereference_protected(in->rules, lockdep_is_held(&in->lock));
	for (i = 0; rs && i < rs->n; i++) {
		impair_rule_format(&rs->rules[i]->r, line, sizeof(line));
		seq_printf(seq, "%s # hits %llu\n", line,
			   tcpfwd_stats_sum(rs->rules[i]->hits, 0));
	}
	mutex_unlock(&in->lock);
	return 0;
}

static int impair_rules_open(struct inode *inode, struct file *file)
{
	return single_open(file, impair_rules_show, pde_data(inode));
}

/*
 * One write(2) is one transaction (see the file comment); it must hold
 * whole lines.  cat(1) writes a regular file of up to 128 KiB in one call.
 */
static ssize_t impair_rules_write(struct file *file, const char __user *ubuf,
				  size_t size, loff_t *ppos)
{
	struct impair_net *in = ((struct seq_file *)file->private_data)->private;
	struct impair_rule *parsed;
	char *buf;
	int err;

	if (size > IMPAIR_WRITE_MAX) {
		pr_warn_ratelimited("rules: write of %zu bytes rejected: at most %d bytes per write\n",
				    size, IMPAIR_WRITE_MAX);
		return -EFBIG;
	}
	buf = vmemdup_user(ubuf, size);
	if (IS_ERR(buf))
		return PTR_ERR(buf);
	parsed = kvmalloc_array(IMPAIR_MAX_RULES, sizeof(*parsed), GFP_KERNEL);
	if (!parsed) {
		kvfree(buf);
		return -ENOMEM;
	}
	err = impair_rules_apply(in, buf, size, parsed);
	kvfree(parsed);
	kvfree(buf);
	return err ? err : size;
}

static const struct proc_ops impair_rules_ops = {
	.proc_open	= impair_rules_open,
	.proc_read	= seq_read,
	.proc_write	= impair_rules_write,
	.proc_lseek	= seq_lseek,
	.proc_release	= single_release,
};

static const struct tcpfwd_ops impair_tcpfwd_ops = {
	.name		= "impair",
	.hook		= impair_hook,
	.stat_names	= impair_stat_names,
	.nr_stats	= IMPAIR_STAT_NR,
	.stat_expired	= IMPAIR_STAT_FLOWS_EXPIRED,
	.stat_malformed	= IMPAIR_STAT_MALFORMED,
	.stat_table_full = IMPAIR_STAT_TABLE_FULL,
	.stat_alloc_failed = IMPAIR_STAT_ALLOC_FAILED,
	.stat_gso_segmented = IMPAIR_STAT_GSO_SEGMENTED,
	.stat_gso_unsegmented = IMPAIR_STAT_EDIT_FAILED,
	.flow_size	= sizeof(struct impair_flow),
	.flow_cache	= &impair_flow_cache,
	.stats_show	= impair_stats_show,
	.flow_gone	= impair_flow_gone,
};

static int __net_init impair_net_init(struct net *net)
{
	struct impair_net *in = impair_pernet(net);
	int err;

	mutex_init(&in->lock);
	RCU_INIT_POINTER(in->rules, NULL);
	spin_lock_init(&in->hold_lock);
	INIT_LIST_HEAD(&in->held);
	in->nheld = 0;
	in->hold_closing = false;
	INIT_DELAYED_WORK(&in->hold_work, impair_hold_work);
	err = tcpfwd_net_init(&in->tn, net, &impair_tcpfwd_ops);
	if (err)
		return err;
	err = -ENOMEM;
	if (!proc_create_data("rules", 0644, in->tn.proc_dir,
			      &impair_rules_ops, in))
		goto err_tn;
	err = tcpfwd_set_hooks(&in->tn, true);
	if (err)
		goto err_tn;
	return 0;

err_tn:
	tcpfwd_net_exit(&in->tn);
	return err;
}

/*
 * nf_unregister_net_hooks() does not wait for packets already in the hook:
 * stop new packets here; the netns core then runs synchronize_rcu() before
 * impair_net_exit() frees what those packets use.
 */
static void __net_exit impair_net_pre_exit(struct net *net)
{
	struct impair_net *in = impair_pernet(net);

	tcpfwd_set_hooks(&in->tn, false);
	spin_lock_bh(&in->hold_lock);
	in->hold_closing = true;
	spin_unlock_bh(&in->hold_lock);
	/*
	 * No segment is held from here on, and the work requeues no more.
	 * Free the held ones now, not in impair_net_exit(): each pins its
	 * input device, and a namespace's devices are unregistered (which
	 * waits for every reference) before its subsystems' exit runs.
	 */
	cancel_delayed_work_sync(&in->hold_work);
	impair_hold_drain(in, false);
}

static void __net_exit impair_net_exit(struct net *net)
{
	struct impair_net *in = impair_pernet(net);

	/* no more writers: remove_proc_subtree() waits for running ones */
	tcpfwd_net_exit(&in->tn);
	impair_ruleset_free(rcu_dereference_protected(in->rules, 1));
	RCU_INIT_POINTER(in->rules, NULL);
}

static struct pernet_operations impair_net_ops = {
	.init		= impair_net_init,
	.pre_exit	= impair_net_pre_exit,
	.exit		= impair_net_exit,
	.id		= &impair_net_id,
	.size		= sizeof(struct impair_net),
};

/* The flow size is in /proc/net/impair/stats (flow_struct_bytes). */
static int __init impair_init(void)
{
	int err;

	/* not given at insmod time: from RAM, as the proxy's default */
	if (!max_flows.val)
		max_flows.val = tcpfwd_default_max_flows();
	impair_flow_cache = KMEM_CACHE(impair_flow, 0);
	if (!impair_flow_cache)
		return -ENOMEM;
	err = register_pernet_subsys(&impair_net_ops);
	if (err)
		kmem_cache_destroy(impair_flow_cache);
	return err;
}

static void __exit impair_exit(void)
{
	unregister_pernet_subsys(&impair_net_ops);
	/* flows and old rule sets (call_rcu), before the cache goes */
	rcu_barrier();
	kmem_cache_destroy(impair_flow_cache);
}

module_init(impair_init);
module_exit(impair_exit);
MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("Rule-driven TCP middlebox impairments for the forward path");
