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
 *     the packet is made writable only when something changes;
 *   - header edits after skb_ensure_writable(), with incremental checksums
 *     that are correct under CHECKSUM_PARTIAL, and skb->csum kept right
 *     under CHECKSUM_COMPLETE; option compaction works in place on GSO
 *     packets too (the IP header, and the link-layer header in front of
 *     it, which a bridged frame keeps, move; the payload stays), and skips
 *     BIG TCP packets (no IP length to change); a GSO packet is segmented
 *     first only when a rule would drop one of its segments or an "after
 *     N" boundary falls inside it;
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

#define IMPAIR_CLOSED_TIMEOUT	10	/* seconds after RST or both FINs */
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
	struct impair_krule *rules[];
};

struct impair_net {
	struct tcpfwd_net tn;			/* flows, counters, hooks, procfs */
	struct impair_ruleset __rcu *rules;	/* NULL: no rules */
	struct mutex lock;			/* serialises rule writers */
	atomic_t seq_flows;	/* flows with seqrand state (seq.on) */
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
};

static unsigned int impair_net_id __read_mostly;

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
	for (i = 0; i < rs->n; i++) {
		rs->needs_flow |= impair_rule_needs_flow(&rs->rules[i]->r);
		rs->may_split |= impair_rule_may_split(&rs->rules[i]->r);
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
	return 0;
}

/* --- packet path -------------------------------------------------------------- */

/* The TCP header, writable; NULL if it cannot be made so. */
static struct tcphdr *impair_th(struct sk_buff *skb, const struct tcpfwd_pkt *p)
{
	if (skb_ensure_writable(skb, p->thoff + p->thlen))
		return NULL;
	return (struct tcphdr *)(skb->data + p->thoff);
}

static void impair_csum_diff(struct sk_buff *skb, struct tcphdr *th, u32 diff)
{
	inet_proto_csum_replace_by_diff(&th->check, skb, (__force __wsum)diff,
					false, false);
}

/* Per-segment context. */
struct impair_seg {
	struct tcpfwd_pkt p;
	u8 family;		/* NFPROTO_* */
	unsigned int nsegs;	/* segments in this (GSO) packet */
	bool malformed;		/* counted once */
	bool edit_failed;
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
 * read-only walk (impair_strip_scan()): the packet is made writable only
 * if there is something to strip.  Returns their number, or a negative
 * code for a malformed block (counted).
 */
static int impair_strip_find(struct impair_net *in, const struct sk_buff *skb,
			     struct impair_seg *s,
			     const struct impair_kindmask *mask,
			     struct impair_strip_plan *plan)
{
	/* written by skb_header_pointer() before it is read, if at all */
	u8 buf[TCPFWD_TCPHDR_MAX] __uninitialized;
	const u8 *th;
	int ret;

	/* in the linear area as a rule: no copy */
	th = skb_header_pointer(skb, s->p.thoff, s->p.thlen, buf);
	if (!th)
		return TCPFWD_OPT_EHDR;
	ret = impair_strip_scan(th, s->p.thlen, mask, plan);
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
	u32 diff;
	u8 *src;
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
	th = impair_th(skb, &s->p);
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
	impair_csum_diff(skb, th, res.csum_diff);
	if (!removed)
		return true;

	/* pseudo-header TCP length (16 bits for IPv4, 32 for IPv6) */
	inet_proto_csum_replace4(&th->check, skb, htonl(old_tcplen),
				 htonl(old_tcplen - removed), true);
	/* move everything in front of the TCP header and pull */
	src = skb->data - l2len;
	memmove(src + removed, src, l2len + thoff);
	__skb_pull(skb, removed);
	if (l2len)
		skb_set_mac_header(skb, -l2len);
	skb_set_network_header(skb, noff);
	skb_set_transport_header(skb, thoff);
	if (skb->ip_summed == CHECKSUM_PARTIAL)
		skb->csum_start = skb_transport_header(skb) - skb->head;

	/* cannot fail: the length was checked above */
	tcpfwd_ip_shrink(skb_network_header(skb), removed, &diff);
	tcpfwd_csum_complete_add(skb, diff);
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

	ret = impair_strip_find(in, skb, s, mask, &plan);
	if (ret <= 0)
		return false;
	th = impair_th(skb, &s->p);
	if (!th) {
		impair_seg_edit_failed(in, s);
		return false;
	}
	impair_strip_apply_nop((u8 *)th, &plan, &res);
	impair_csum_diff(skb, th, res.csum_diff);
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
	th = impair_th(skb, &s->p);
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
		impair_csum_diff(skb, th, diff);
	impair_count(in, act == IMPAIR_A_WSCALE ? IMPAIR_STAT_WSCALE_SET :
						  IMPAIR_STAT_MSS_SET);
	return true;
}

static bool impair_set_window(struct impair_net *in, struct sk_buff *skb,
			      struct impair_seg *s, u16 win)
{
	struct tcphdr *th = impair_th(skb, &s->p);
	__be16 old;

	if (!th) {
		impair_seg_edit_failed(in, s);
		return false;
	}
	old = th->window;
	th->window = htons(win);
	inet_proto_csum_replace2(&th->check, skb, old, th->window, false);
	impair_count(in, IMPAIR_STAT_WINDOW_SET);
	return true;
}

static bool impair_set_ecn(struct impair_net *in, struct sk_buff *skb,
			   struct impair_seg *s, u8 ecn, enum impair_stat st)
{
	if (tcpfwd_set_ecn(skb, s->family, ecn)) {
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
	struct tcphdr *th = impair_th(skb, &s->p);
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
	impair_csum_diff(skb, th, diff);
	impair_count(in, IMPAIR_STAT_SEQ_REWRITTEN);
	impair_add(in, IMPAIR_STAT_SACK_MAPPED, ret);
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
	if (!f) {
		impair_count(in, err == TCPFWD_INSERT_FULL ?
			     IMPAIR_STAT_TABLE_FULL : IMPAIR_STAT_ALLOC_FAILED);
		return NULL;
	}
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
 * Match every rule against @ip into @hit.  With @last_seg (a GSO packet
 * spanning segments seg..last_seg) returns true if some rule would match
 * differently on its last segment, or would drop one of them.
 */
static bool impair_match_all(const struct impair_ruleset *rs,
			     struct impair_pkt *ip, struct impair_hits *hit,
			     u32 last_seg, bool gso)
{
	bool split = false;
	unsigned int i;
	u32 first = ip->seg;

	hit->n = 0;
	for (i = 0; i < rs->n; i++) {
		const struct impair_rule *r = &rs->rules[i]->r;
		bool m;

		ip->seg = first;
		m = impair_rule_match(r, ip);
		__assign_bit(i, hit->bits, m);
		hit->n += m;
		if (!gso)
			continue;
		if (m && (r->act & (IMPAIR_A_DROP | IMPAIR_A_ECN_BLOCK)))
			split = true;
		ip->seg = last_seg;
		if (ip->seg_known && m != impair_rule_match(r, ip))
			split = true;
	}
	ip->seg = first;
	return split;
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
	const struct impair_rule *seqrule = NULL;
	u8 flags = tcp_flag_byte(&s->p.th);
	unsigned int i;

	spin_lock_bh(&ef->base.lock);
	if (ef->base.dead) {
		spin_unlock_bh(&ef->base.lock);
		return IMPAIR_STEP_DEAD;
	}
	if ((flags & (TCPHDR_SYN | TCPHDR_ACK | TCPHDR_RST)) == TCPHDR_SYN)
		impair_flow_syn(in, ef, &s->p);
	else if (!ef->syn_seen)
		ef->picked_up = true;
	impair_fill_pkt(ip, &s->p, ef->base.a_is_lo, state);
	ip->seg_known = true;
	ip->seg = ef->segs;
	if (impair_match_all(rs, ip, hit, ef->segs + s->nsegs - 1, gso) &&
	    gso) {
		spin_unlock_bh(&ef->base.lock);
		return IMPAIR_STEP_SPLIT;
	}
	ef->segs += s->nsegs;
	for (i = 0; hit->n && i < rs->n; i++) {
		if (test_bit(i, hit->bits) &&
		    (rs->rules[i]->r.act & IMPAIR_A_SEQRAND)) {
			seqrule = &rs->rules[i]->r;
			break;
		}
	}
	if (seqrule && !ef->seq.on && ef->syn_seen && ip->from_a &&
	    (flags & (TCPHDR_SYN | TCPHDR_ACK)) == TCPHDR_SYN) {
		ef->seq.on = true;
		ef->seq.sack_fix = seqrule->seq_sack_fix;
		ef->seq.both = seqrule->seq_both;
		impair_seqadj_init(&ef->seq.adj[0], get_random_u32() | 1);
		impair_seqadj_init(&ef->seq.adj[1], get_random_u32() | 1);
		impair_count(in, IMPAIR_STAT_FLOWS_SEQRAND);
		atomic_inc(&in->seq_flows);
	}
	if (flags & TCPHDR_RST)
		ef->rst = true;
	if (flags & TCPHDR_FIN)
		ef->fin |= ip->from_a ? 1 : 2;
	ef->base.expires = jiffies +
		(ef->rst || ef->fin == 3 ? IMPAIR_CLOSED_TIMEOUT :
		 READ_ONCE(flow_timeout.val)) * HZ;
	*snap = ef->seq;
	spin_unlock_bh(&ef->base.lock);
	return IMPAIR_STEP_OK;
}

static unsigned int impair_gso_split(struct impair_net *in,
				     const struct impair_ruleset *rs,
				     struct sk_buff *skb,
				     const struct nf_hook_state *state);

static unsigned int impair_process(struct impair_net *in,
				   const struct impair_ruleset *rs,
				   struct sk_buff *skb,
				   const struct nf_hook_state *state,
				   bool may_segment)
{
	/*
	 * On every packet, so not zeroed by CONFIG_INIT_STACK_ALL_ZERO: every
	 * field read below is written first (tcpfwd_parse() clears s.p,
	 * impair_fill_pkt() sets all of ip, impair_match_all() the bits of
	 * hit below rs->n; snap is read only when snap.on).
	 */
	struct impair_seqstate snap __uninitialized;
	struct impair_hits hit __uninitialized;
	struct impair_pkt ip __uninitialized;
	struct impair_seg s __uninitialized;
	struct impair_flow *ef;
	enum impair_step step;
	unsigned int i;
	u8 flags;
	bool gso;

	switch (tcpfwd_parse(skb, state->pf, &s.p)) {
	case 0:
		break;
	case -EINVAL:
		impair_count(in, IMPAIR_STAT_MALFORMED);
		return NF_ACCEPT;
	default:
		return NF_ACCEPT;
	}
	s.family = state->pf;
	s.malformed = false;
	s.edit_failed = false;
	gso = skb_is_gso(skb);
	s.nsegs = gso ? max_t(unsigned int, skb_shinfo(skb)->gso_segs, 1) : 1;
	flags = tcp_flag_byte(&s.p.th);
	gso = gso && rs->may_split && may_segment && !tcpfwd_bridged(skb);
	snap.on = false;

	/*
	 * The flow table only when a rule needs per-flow state, or a flow
	 * may have seqrand offsets to apply (kept after their rule went).
	 */
	ef = NULL;
	if (rs->needs_flow || atomic_read(&in->seq_flows))
		ef = impair_flow_get(in, &s.p, rs->needs_flow);
	step = ef ? impair_flow_step(in, rs, ef, &s, state, &ip, &hit, gso,
				     &snap) : IMPAIR_STEP_DEAD;
	if (step == IMPAIR_STEP_DEAD) {
		/* untracked: roles from the flags (impair_sender_is_a()) */
		impair_fill_pkt(&ip, &s.p, impair_guess_a_is_lo(&s.p), state);
		if (impair_match_all(rs, &ip, &hit, 0, gso) && gso)
			step = IMPAIR_STEP_SPLIT;
	}
	if (step == IMPAIR_STEP_SPLIT)
		return impair_gso_split(in, rs, skb, state);

	impair_add(in, IMPAIR_STAT_SEGS, s.nsegs);
	if (s.nsegs > 1)
		impair_count(in, IMPAIR_STAT_GSO_PACKETS);
	if (!hit.n) {
		if (snap.on)
			impair_seq_rewrite(in, skb, &s, ip.from_a, &snap);
		return NF_ACCEPT;
	}
	impair_add(in, IMPAIR_STAT_MATCHED, s.nsegs);

	/* drops first: a dropped segment is no hit for the edit rules */
	for (i = 0; i < rs->n; i++) {
		const struct impair_rule *r = &rs->rules[i]->r;

		if (!test_bit(i, hit.bits) || !impair_wants_drop(r, flags))
			continue;
		tcpfwd_stats_add(rs->rules[i]->hits, 0, s.nsegs);
		impair_add(in, r->act & IMPAIR_A_DROP ?
			   IMPAIR_STAT_DROP_RANDOM : IMPAIR_STAT_DROP_ECN_BLOCK,
			   s.nsegs);
		return NF_DROP;
	}
	for (i = 0; i < rs->n; i++)
		if (test_bit(i, hit.bits) &&
		    impair_edit(in, skb, &s, &rs->rules[i]->r, snap.on))
			tcpfwd_stats_add(rs->rules[i]->hits, 0, s.nsegs);
	/* seq/ack/SACK last, on the header as the other rules left it */
	if (snap.on)
		impair_seq_rewrite(in, skb, &s, ip.from_a, &snap);
	return NF_ACCEPT;
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
	int ret = tcpfwd_gso_each(skb, state, impair_seg_verdict, &c);

	if (ret < 0) {
		impair_count(in, IMPAIR_STAT_EDIT_FAILED);
		return impair_process(in, rs, skb, state, false);
	}
	impair_count(in, IMPAIR_STAT_GSO_SEGMENTED);
	return ret;
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

	if (container_of(f, struct impair_flow, base)->seq.on)
		atomic_dec(&in->seq_flows);
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
	.flow_size	= sizeof(struct impair_flow),
	.stats_show	= impair_stats_show,
	.flow_gone	= impair_flow_gone,
};

static int __net_init impair_net_init(struct net *net)
{
	struct impair_net *in = impair_pernet(net);
	int err;

	mutex_init(&in->lock);
	RCU_INIT_POINTER(in->rules, NULL);
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
	tcpfwd_set_hooks(&impair_pernet(net)->tn, false);
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
	/* not given at insmod time: from RAM, as the proxy's default */
	if (!max_flows.val)
		max_flows.val = tcpfwd_default_max_flows();
	return register_pernet_subsys(&impair_net_ops);
}

static void __exit impair_exit(void)
{
	unregister_pernet_subsys(&impair_net_ops);
	/* flows and old rule sets (call_rcu) */
	rcu_barrier();
}

module_init(impair_init);
module_exit(impair_exit);
MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("Rule-driven TCP middlebox impairments for the forward path");
