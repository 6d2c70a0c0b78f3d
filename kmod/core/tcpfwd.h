/* SPDX-License-Identifier: GPL-2.0 */
/*
 * tcpfwd.ko: the plumbing that ecn_proxy.ko and impair.ko share, for a
 * module that watches and edits TCP segments at the end of the FORWARD
 * hook.  Its interface, in the order a packet meets it:
 *
 *   per netns   tcpfwd_net_init()/_exit() set up, for one user module in
 *               one network namespace, what struct tcpfwd_ops describes:
 *               per-CPU counters shown in /proc/net/<name>/stats, the flow
 *               table and its garbage collector, and the FORWARD hooks
 *               (IPv4 and IPv6, priority LAST), switched by
 *               tcpfwd_set_hooks();
 *   packets     tcpfwd_parse() finds the TCP header and the flow key
 *               (a malformed packet counted in ops->stat_malformed);
 *               header edits with incremental checksums (skb->csum too
 *               under CHECKSUM_COMPLETE), in one argument style: the
 *               packet first, then its parse result: tcpfwd_set_tcp_flags(),
 *               tcpfwd_set_ecn() make what they edit writable
 *               themselves; tcpfwd_skb_ip_resize() wants the IP header
 *               writable already; the tcpfwd_th_*() helpers edit a TCP
 *               header that tcpfwd_th_writable() returned;
 *   flows       tcpfwd_flow_lookup() under RCU, tcpfwd_flow_add() (the
 *               user's state set up before the flow is visible) or
 *               tcpfwd_flow_insert() bounded by the caller's limit (a
 *               flow not added counted in ops->stat_table_full or
 *               stat_alloc_failed), tcpfwd_flow_count(); the
 *               table is an rhashtable, sized by its number of flows, and
 *               /proc/net/<name>/flows lists them with ops->flow_show;
 *               tcpfwd_flow_lock_live() from the packet path, and
 *               tcpfwd_flow_expire_in() (TCPFWD_CLOSED_SECS once closed);
 *   sending on  tcpfwd_gso_split() segments a GSO packet
 *               (tcpfwd_gso_each()) and decides on each segment,
 *               tcpfwd_pass_on() sends a packet (a segment, an injected
 *               copy) on as if the hook had accepted it.
 *
 * The pure option helpers (tcpfwd_opt.h) and IP header edits
 * (tcpfwd_iph.h) are part of the same module.  What every packet of a
 * hook runs is inline here, compiled into each user: tcpfwd_parse() with
 * the key, tcpfwd_flow_lookup() with the table's hash and comparison
 * (one struct rhashtable_params for the lookup and the core's inserts),
 * and tcpfwd_set_ecn() of an IPv4 packet.
 *
 * Why a module of its own, not a copy compiled into each user: the code is
 * loaded once (but for the inline packet-path helpers above); each
 * exported symbol has one definition, so both users can also be
 * built into one kernel image (kernel-patches/); and, like nf_conntrack or
 * nf_synproxy_core, it carries no state of its own: everything lives in
 * the users' per-netns structs, so it is loaded first (modprobe does that)
 * and can be unloaded once no user is loaded.
 *
 * Locking: lookups run under rcu_read_lock(); inserts and removals are
 * rhashtable's (per-bucket locks); each flow's private state and its dead
 * flag are protected by flow->lock (from the packet path
 * tcpfwd_flow_lock(), which disables BHs only where they are not yet).
 * Flows (the user's struct begins with struct tcpfwd_flow) come from the
 * user's kmem_cache if ops->flow_cache is set, else from kmalloc(), and
 * are freed after an RCU grace period by call_rcu(), so the user's module
 * exit must rcu_barrier() before it destroys its cache.  They are charged
 * to the memory cgroup of the task that created the namespace
 * (tcpfwd_net_init(), tcpfwd_flow.c), and bounded by the user's limit.
 */
#ifndef _TCPFWD_H
#define _TCPFWD_H

#include <linux/in6.h>
#include <linux/ip.h>
#include <linux/jhash.h>
#include <linux/mutex.h>
#include <linux/netfilter.h>
#include <linux/netfilter_bridge.h>
#include <linux/percpu.h>
#include <linux/rhashtable.h>
#include <linux/skbuff.h>
#include <linux/spinlock.h>
#include <linux/tcp.h>
#include <linux/u64_stats_sync.h>
#include <linux/workqueue.h>
#include <net/dsfield.h>
#include <net/inet_ecn.h>
#include <net/ip.h>
#include <net/ipv6.h>
#include <net/tcp.h>

#include "tcpfwd_pure.h"

struct mem_cgroup;
struct seq_file;

/*
 * Both endpoints, the lower (address, port) first; IPv4 in the first word
 * of each address, the other three zero.  The table hashes and compares
 * only the words a family uses: an IPv4 key's ports and two address words
 * (12 bytes), an IPv6 key's 36 bytes, and the family (tcpfwd_flow.c).
 */
struct tcpfwd_flow_key {
	struct in6_addr lo_addr;
	struct in6_addr hi_addr;
	__be16 lo_port;
	__be16 hi_port;
	union {
		struct {
			u8 family;
			u8 pad[3];
		};
		/* the family, then three zero bytes: one store */
		__le32 family_word;
	};
};

/* What tcpfwd_parse() found in a TCP/IP packet. */
struct tcpfwd_pkt {
	struct tcpfwd_flow_key key;
	bool src_is_lo;		/* the sender is key.lo_* */
	u8 ecn;			/* IP ECN field */
	unsigned int thoff;	/* offset of the TCP header */
	unsigned int thlen;	/* TCP header length incl. options */
	unsigned int payload;	/* TCP payload bytes (all GSO segments) */
	struct tcphdr th;	/* copy of the fixed TCP header */
};

/*
 * The flow header.  What a lookup reads (the chain link, the key, the
 * fast flag and the expiry) comes first, in one 64-byte cache line on
 * 64-bit machines without lock debugging (asserted below).
 */
struct tcpfwd_flow {
	struct rhash_head node;
	struct tcpfwd_flow_key key;
	spinlock_t lock;	/* protects the user's private state */
	bool a_is_lo;		/* the initiator (first SYN) is key.lo_* */
	bool dead;		/* unlinked; the user must not use it */
	/*
	 * the user's word on the flow's segments without SYN, FIN or RST:
	 * they need nothing (tcpfwd_fast_pass()); written under lock,
	 * read without it (READ_ONCE)
	 */
	bool fast;
	/*
	 * jiffies; set under lock by the user, or without it by a segment
	 * that takes the fast exit (tcpfwd_flow_refresh()): READ_ONCE
	 */
	unsigned long expires;
	struct rcu_head rcu;
};

#if BITS_PER_LONG == 64 && !defined(CONFIG_DEBUG_SPINLOCK) && \
	!defined(CONFIG_DEBUG_LOCK_ALLOC)
static_assert(offsetof(struct tcpfwd_flow, expires) + sizeof(unsigned long) <=
	      64, "a lookup's fields in one cache line");
#endif

struct tcpfwd_flowtab {
	struct rhashtable ht;
	atomic_t count;		/* flows in the table, or about to be */
	size_t flow_size;	/* the user's struct, tcpfwd_flow first */
	struct kmem_cache *cache;	/* or NULL: kmalloc() */
	struct rhashtable_iter gc_iter;	/* the collector's place */
	bool gc_walking;	/* gc_iter is entered */
};

/*
 * The key's words: lo_addr 0-3, hi_addr 4-7, the ports 8, the family and
 * padding 9.  An IPv4 key uses words 0, 4, 8 and 9 (its other address
 * words are zero), so it is hashed by one jhash_3words() over 12 bytes
 * (the family need not be hashed: the comparison tells an IPv4 key from an
 * IPv6 one that hashes the same) and compared in four words, both inline
 * in the lookup; an IPv6 key is hashed over 36 bytes and compared whole.
 */
#define TCPFWD_KEY_WORDS	(sizeof(struct tcpfwd_flow_key) / sizeof(u32))

static_assert(sizeof(struct tcpfwd_flow_key) == 40 &&
	      offsetof(struct tcpfwd_flow_key, hi_addr) == 16 &&
	      offsetof(struct tcpfwd_flow_key, lo_port) == 32 &&
	      offsetof(struct tcpfwd_flow_key, family) == 36,
	      "the key's word layout of tcpfwd_key_hash()");

static __always_inline u32 tcpfwd_key_hash(const void *data, u32 len, u32 seed)
{
	const struct tcpfwd_flow_key *k = data;
	const u32 *w = data;

	if (k->family == NFPROTO_IPV4)
		return jhash_3words(w[0], w[4], w[8], seed);
	return jhash2(w, TCPFWD_KEY_WORDS - 1, seed);
}

/* 0 if the flow @obj has the key @arg->key (rhashtable's convention). */
static __always_inline int
tcpfwd_key_cmp(struct rhashtable_compare_arg *arg, const void *obj)
{
	const u32 *a = arg->key;
	const u32 *b = (const u32 *)&((const struct tcpfwd_flow *)obj)->key;
	unsigned int i;
	u32 d;

	d = (a[0] ^ b[0]) | (a[4] ^ b[4]) | (a[8] ^ b[8]) | (a[9] ^ b[9]);
	if (d || ((const struct tcpfwd_flow_key *)a)->family == NFPROTO_IPV4)
		return d != 0;
	for (i = 1; i < 8; i++)
		d |= a[i] ^ b[i];
	return d != 0;
}

static const struct rhashtable_params tcpfwd_ht_params = {
	.head_offset		= offsetof(struct tcpfwd_flow, node),
	.key_offset		= offsetof(struct tcpfwd_flow, key),
	.key_len		= sizeof(struct tcpfwd_flow_key),
	/*
	 * No obj_hashfn: rhashtable hashes an object by its key at key_offset
	 * with hashfn, and rhashtable_lookup_get_insert_fast() BUG()s on one.
	 */
	.hashfn			= tcpfwd_key_hash,
	.obj_cmpfn		= tcpfwd_key_cmp,
	.automatic_shrinking	= true,
};

/*
 * Under rcu_read_lock(); the flow may be dead (check under its lock).
 * Inline, with the hash and the comparison: on every packet of the hooks.
 * The walk of __rhashtable_lookup() (include/linux/rhashtable.h, the same
 * in 6.1 and 6.12), but for the entry's flow: container_of(), where
 * rhashtable's rht_obj() reads the table's head_offset at run time,
 * although it is the constant offsetof(struct tcpfwd_flow, node).
 */
static __always_inline struct tcpfwd_flow *
tcpfwd_flow_lookup(struct tcpfwd_flowtab *t, const struct tcpfwd_flow_key *key)
{
	struct rhashtable_compare_arg arg = { .ht = &t->ht, .key = key };
	struct rhash_lock_head __rcu *const *bkt;
	struct bucket_table *tbl;
	struct rhash_head *he;
	unsigned int hash;

	tbl = rht_dereference_rcu(t->ht.tbl, &t->ht);
restart:
	hash = rht_key_hashfn(&t->ht, tbl, key, tcpfwd_ht_params);
	bkt = rht_bucket(tbl, hash);
	do {
		rht_for_each_rcu_from(he, rht_ptr_rcu(bkt), tbl, hash) {
			struct tcpfwd_flow *f =
				container_of(he, struct tcpfwd_flow, node);

			if (!tcpfwd_key_cmp(&arg, f))
				return f;
		}
		/* moved to another chain while we walked it: again */
	} while (he != RHT_NULLS_MARKER(bkt));
	/* as __rhashtable_lookup(): see a table being resized into */
	smp_rmb();
	tbl = rht_dereference_rcu(tbl->future_tbl, &t->ht);
	if (unlikely(tbl))
		goto restart;
	return NULL;
}

enum tcpfwd_insert_err {
	TCPFWD_INSERT_OK = 0,
	TCPFWD_INSERT_FULL,	/* count reached max */
	TCPFWD_INSERT_NOMEM,	/* atomic allocation failed */
	TCPFWD_INSERT_EXISTS,	/* another CPU inserted the key first */
};

/*
 * A set of per-CPU 64-bit counters (u64_stats_sync, so that a 32-bit
 * reader never sees a torn value).  Writers run in softirq context (the
 * hooks) and in process context (the hooks after an NFQUEUE verdict, the
 * collector, configuration writes): tcpfwd_stats_add() pins the CPU and
 * takes the _irqsave update section, which on 32-bit machines disables
 * interrupts so that a softirq writer cannot nest inside a process-context
 * writer on the same CPU (usage rules 1-3 of u64_stats_sync.h); on 64-bit
 * machines the section is empty and the update one local64_add().
 */
struct tcpfwd_stats {
	struct u64_stats_sync syncp;
	u64_stats_t v[];
};

struct tcpfwd_stats __percpu *tcpfwd_stats_alloc(unsigned int n);
void tcpfwd_stats_free(struct tcpfwd_stats __percpu *stats);
u64 tcpfwd_stats_sum(struct tcpfwd_stats __percpu *stats, unsigned int i);

/* Add @n to counter @i; any context (see struct tcpfwd_stats). */
static inline void tcpfwd_stats_add(struct tcpfwd_stats __percpu *stats,
				    unsigned int i, unsigned long n)
{
	struct tcpfwd_stats *s = get_cpu_ptr(stats);
	unsigned long flags;

	flags = u64_stats_update_begin_irqsave(&s->syncp);
	u64_stats_add(&s->v[i], n);
	u64_stats_update_end_irqrestore(&s->syncp, flags);
	put_cpu_ptr(stats);
}

struct tcpfwd_net;

/*
 * A counter of struct tcpfwd_ops that the user does not keep: the core
 * does not count that event (tcpfwd_add()).
 */
#define TCPFWD_NO_STAT		UINT_MAX

/* What a user module is, for tcpfwd_net_init(). */
struct tcpfwd_ops {
	const char *name;		/* /proc/net/<name>/ */
	nf_hookfn *hook;		/* called with priv = the tcpfwd_net */
	const char * const *stat_names;	/* per-CPU counters, nr_stats */
	unsigned int nr_stats;
	/*
	 * the user's counters that the core bumps: each one below nr_stats
	 * or TCPFWD_NO_STAT, every one set (0 is a counter), checked by
	 * tcpfwd_net_init()
	 */
	unsigned int stat_expired;	/* the flows the GC removes */
	unsigned int stat_malformed;	/* tcpfwd_parse(): malformed */
	unsigned int stat_table_full;	/* tcpfwd_flow_add(): at the limit */
	unsigned int stat_alloc_failed;	/* tcpfwd_flow_add(): no memory */
	unsigned int stat_gso_segmented;	/* tcpfwd_gso_split() */
	unsigned int stat_gso_unsegmented;	/* ...: could not segment */
	size_t flow_size;		/* struct tcpfwd_flow first */
	/*
	 * optional: the user's cache of flow_size objects, for a flow that
	 * would waste much of a kmalloc bucket (KMEM_CACHE(); a pointer to
	 * it, as it is made at module init)
	 */
	struct kmem_cache **flow_cache;
	/* optional: one flow's line in /proc/net/<name>/flows (if set) */
	void (*flow_show)(struct seq_file *seq, struct tcpfwd_net *tn,
			  struct tcpfwd_flow *f);
	umode_t flows_mode;		/* of that file */
	/* optional: lines after the counters in /proc/net/<name>/stats */
	void (*stats_show)(struct seq_file *seq, struct tcpfwd_net *tn);
	/* optional: the collector unlinked @f (under f->lock, f->dead set) */
	void (*flow_gone)(struct tcpfwd_net *tn, struct tcpfwd_flow *f);
	/*
	 * optional: @f is freed without passing the collector (the table is
	 * destroyed, or a flow lost the race to be added): free what it
	 * holds.  No packet path can reach it.
	 */
	void (*flow_free)(struct tcpfwd_net *tn, struct tcpfwd_flow *f);
};

/* One user module in one network namespace; embedded in its pernet data. */
struct tcpfwd_net {
	struct net *net;
	const struct tcpfwd_ops *ops;
	struct tcpfwd_flowtab ft;
	struct tcpfwd_stats __percpu *stats;	/* ops->nr_stats counters */
	struct mem_cgroup *memcg;	/* charged for the flows, or NULL */
	struct proc_dir_entry *proc_dir;
	struct delayed_work gc_work;
	struct mutex hook_mutex;	/* serialises hook (un)registration */
	bool hooks_on;
	struct nf_hook_ops hook_ops[2];
};

int tcpfwd_net_init(struct tcpfwd_net *tn, struct net *net,
		    const struct tcpfwd_ops *ops);
void tcpfwd_net_exit(struct tcpfwd_net *tn);
int tcpfwd_set_hooks(struct tcpfwd_net *tn, bool on);

static inline unsigned int tcpfwd_flow_count(const struct tcpfwd_net *tn)
{
	return atomic_read(&tn->ft.count);
}

/* Bump one of the user's counters (none: TCPFWD_NO_STAT); any context. */
static inline void tcpfwd_add(struct tcpfwd_net *tn, unsigned int stat,
			      unsigned long n)
{
	if (stat != TCPFWD_NO_STAT)
		tcpfwd_stats_add(tn->stats, stat, n);
}

static inline void tcpfwd_count(struct tcpfwd_net *tn, unsigned int stat)
{
	tcpfwd_add(tn, stat, 1);
}

/*
 * skb_ensure_writable(), its common case inline: the bytes are in the
 * head and the head is the skb's own (not shared with a clone), where
 * skb_ensure_writable() returns 0 without changing anything; a packet
 * whose head holds less, or is a clone's, takes the call.
 */
static inline int tcpfwd_ensure_writable(struct sk_buff *skb,
					 unsigned int len)
{
	if (likely(len <= skb_headlen(skb) && !skb_cloned(skb)))
		return 0;
	return skb_ensure_writable(skb, len);
}

int tcpfwd_set_ecn6(struct sk_buff *skb, u8 ecn);

/**
 * tcpfwd_set_ecn - set the IP ECN field
 * @skb: the packet
 * @p: its parse result (the family)
 * @ecn: INET_ECN_* codepoint
 *
 * The ECN field is not covered by the TCP checksum.  IPv4: the header
 * checksum is updated with it, so the header's sum (and skb->csum under
 * CHECKSUM_COMPLETE) does not change; IPv6 (tcpfwd_set_ecn6()): skb->csum
 * is updated as IP6_ECN_set_ce() does.  IPv4 inline: every data segment
 * of a proxied flow takes it.
 *
 * Return: 0 or -ENOMEM.
 */
static inline int tcpfwd_set_ecn(struct sk_buff *skb,
				 const struct tcpfwd_pkt *p, u8 ecn)
{
	if (p->key.family != NFPROTO_IPV4)
		return tcpfwd_set_ecn6(skb, ecn);
	if (tcpfwd_ensure_writable(skb, skb_network_offset(skb) +
				   sizeof(struct iphdr)))
		return -ENOMEM;
	ipv4_change_dsfield(ip_hdr(skb), (u8)~INET_ECN_MASK, ecn);
	return 0;
}

int tcpfwd_tcp_off6_ext(const struct sk_buff *skb);

/**
 * tcpfwd_tcp_off - where the TCP header of an IPv4/IPv6 packet starts
 * @skb: the packet, network header set
 * @family: NFPROTO_IPV4 or NFPROTO_IPV6
 *
 * IPv6 extension headers are walked (ipv6_find_hdr(), out of line in
 * tcpfwd_tcp_off6_ext()); the common case, TCP right after the fixed
 * header, is found without the walk.
 *
 * Return: the offset from skb->data, or -EPROTONOSUPPORT for a fragment,
 * a packet that is not TCP, an IPv6 extension header chain cut short
 * (not counted as malformed: it is not known to be TCP) or another
 * family.
 */
static inline int tcpfwd_tcp_off(const struct sk_buff *skb, u8 family)
{
	if (family == NFPROTO_IPV4) {
		const struct iphdr *iph = ip_hdr(skb);

		if (iph->protocol != IPPROTO_TCP || ip_is_fragment(iph))
			return -EPROTONOSUPPORT;
		return skb_network_offset(skb) + iph->ihl * 4;
	}
	if (family != NFPROTO_IPV6)
		return -EPROTONOSUPPORT;
	if (ipv6_hdr(skb)->nexthdr == IPPROTO_TCP)
		return skb_network_offset(skb) + sizeof(struct ipv6hdr);
	/* out of line: its locals would cost every IPv4 packet two stores */
	return tcpfwd_tcp_off6_ext(skb);
}

/*
 * Which endpoint is lo: addresses compared as big-endian numbers (what
 * memcmp() said before), then ports; 0 if both are the same.
 */
static __always_inline int tcpfwd_addr_cmp(const __be32 *a,
					   const __be32 *b,
					   unsigned int words)
{
	unsigned int i;

	for (i = 0; i < words; i++)
		if (a[i] != b[i])
			return ntohl(a[i]) < ntohl(b[i]) ? -1 : 1;
	return 0;
}

/*
 * The canonical key of an IPv4 (@words 1) or IPv6 (4) packet from @saddr
 * to @daddr, ports from p->th.  Every word of the key is written (an IPv4
 * key's unused address words zero), so @p need not be cleared first.
 */
static __always_inline void tcpfwd_key_fill(struct tcpfwd_pkt *p,
					    const __be32 *saddr,
					    const __be32 *daddr,
					    unsigned int words, u8 family)
{
	struct tcpfwd_flow_key *k = &p->key;
	int cmp = tcpfwd_addr_cmp(saddr, daddr, words);
	const __be32 *lo, *hi;
	unsigned int i;

	if (!cmp)
		cmp = (int)ntohs(p->th.source) - (int)ntohs(p->th.dest);
	p->src_is_lo = cmp <= 0;
	lo = p->src_is_lo ? saddr : daddr;
	hi = p->src_is_lo ? daddr : saddr;
	for (i = 0; i < 4; i++) {
		k->lo_addr.s6_addr32[i] = i < words ? lo[i] : 0;
		k->hi_addr.s6_addr32[i] = i < words ? hi[i] : 0;
	}
	k->lo_port = p->src_is_lo ? p->th.source : p->th.dest;
	k->hi_port = p->src_is_lo ? p->th.dest : p->th.source;
	k->family_word = cpu_to_le32(family);
}

/**
 * tcpfwd_parse - find the TCP header of an IPv4/IPv6 packet
 * @tn: the user's netns state (its counters)
 * @skb: the packet, network header set
 * @family: NFPROTO_IPV4 or NFPROTO_IPV6
 * @p: filled on success
 *
 * Fragments, non-TCP packets and malformed headers (bad data offset,
 * truncated header) are refused; the caller must leave them untouched.
 * A malformed one is counted in the user's ops->stat_malformed.
 *
 * Inline, as the key fill: on every packet of the hooks (IPv4's key is
 * built from constant word counts, unrolled).
 *
 * Return: 0, -EPROTONOSUPPORT for packets that are not ours, -EINVAL for
 * malformed ones.
 */
static __always_inline int tcpfwd_parse(struct tcpfwd_net *tn,
					struct sk_buff *skb, u8 family,
					struct tcpfwd_pkt *p)
{
	int thoff = tcpfwd_tcp_off(skb, family);

	/* every field of @p is written below: no memset() first */
	if (thoff < 0)
		return thoff;
	if (family == NFPROTO_IPV4)
		p->ecn = ip_hdr(skb)->tos & INET_ECN_MASK;
	else
		p->ecn = ipv6_get_dsfield(ipv6_hdr(skb)) & INET_ECN_MASK;

	/* in the head (the common case) one copy, else skb_copy_bits() */
	if (likely(skb_headlen(skb) >= thoff + sizeof(p->th)))
		memcpy(&p->th, skb->data + thoff, sizeof(p->th));
	else if (skb_copy_bits(skb, thoff, &p->th, sizeof(p->th)))
		goto malformed;
	p->thoff = thoff;
	p->thlen = p->th.doff * 4;
	if (p->thlen < sizeof(struct tcphdr) || thoff + p->thlen > skb->len)
		goto malformed;
	p->payload = skb->len - thoff - p->thlen;

	if (family == NFPROTO_IPV4)
		tcpfwd_key_fill(p, &ip_hdr(skb)->saddr, &ip_hdr(skb)->daddr, 1,
				family);
	else
		tcpfwd_key_fill(p, ipv6_hdr(skb)->saddr.s6_addr32,
				ipv6_hdr(skb)->daddr.s6_addr32, 4, family);
	return 0;

malformed:
	tcpfwd_count(tn, tn->ops->stat_malformed);
	return -EINVAL;
}

int tcpfwd_set_tcp_flags(struct sk_buff *skb, const struct tcpfwd_pkt *p,
			 u8 set, u8 clear);
int tcpfwd_skb_ip_resize(struct sk_buff *skb, int delta);

/*
 * @p's TCP option block, p->thlen - 20 bytes (tcpfwd_parse() checked that
 * they are in the packet), copied into @buf (TCPFWD_OPT_MAX_LEN bytes) if
 * they are not linear; NULL if there is none.
 */
static inline const u8 *tcpfwd_opts(const struct sk_buff *skb,
				    const struct tcpfwd_pkt *p, u8 *buf)
{
	unsigned int olen = p->thlen - sizeof(struct tcphdr);

	if (!olen)
		return NULL;
	return skb_header_pointer(skb, p->thoff + sizeof(struct tcphdr), olen,
				  buf);
}

/* @p's TCP header, options included, made writable; NULL if it cannot be. */
static inline struct tcphdr *tcpfwd_th_writable(struct sk_buff *skb,
						const struct tcpfwd_pkt *p)
{
	if (tcpfwd_ensure_writable(skb, p->thoff + p->thlen))
		return NULL;
	return (struct tcphdr *)(skb->data + p->thoff);
}

/*
 * The TCP checksum of @th (tcpfwd_th_writable()) absorbs the sum
 * difference @diff of an edit of its bytes (tcpfwd_opt.h's wsum).
 */
static inline void tcpfwd_th_csum_diff(struct sk_buff *skb, struct tcphdr *th,
				       u32 diff)
{
	inet_proto_csum_replace_by_diff(&th->check, skb, (__force __wsum)diff,
					false, false);
}

/*
 * The TCP length in the pseudo-header changes from @old to @new bytes:
 * the checksum follows (under CHECKSUM_PARTIAL, the pseudo-header's seed).
 */
static inline void tcpfwd_th_csum_tcplen(struct sk_buff *skb,
					 struct tcphdr *th, unsigned int old,
					 unsigned int new)
{
	inet_proto_csum_replace4(&th->check, skb, htonl(old), htonl(new), true);
}

/* The window field of @th := @win, the checksum following. */
static inline void tcpfwd_th_set_window(struct sk_buff *skb,
					struct tcphdr *th, u16 win)
{
	__be16 old = th->window;

	th->window = htons(win);
	inet_proto_csum_replace2(&th->check, skb, old, th->window, false);
}

unsigned int tcpfwd_default_max_flows(void);
struct tcpfwd_flow *tcpfwd_flow_add(struct tcpfwd_net *tn,
				    const struct tcpfwd_flow_key *key,
				    bool a_is_lo, unsigned int max,
				    void (*init)(struct tcpfwd_flow *f, void *arg),
				    void *arg, enum tcpfwd_insert_err *err);

/*
 * A flow whose user state starts all zero: another CPU may lock it
 * before the caller, so the user's zero state must be one any packet may
 * find (else tcpfwd_flow_add() with an init function).
 */
static inline struct tcpfwd_flow *
tcpfwd_flow_insert(struct tcpfwd_net *tn, const struct tcpfwd_flow_key *key,
		   bool a_is_lo, unsigned int max, enum tcpfwd_insert_err *err)
{
	return tcpfwd_flow_add(tn, key, a_is_lo, max, NULL, NULL, err);
}

/*
 * The fast exit: a segment of a flow its user marked fast that has none of
 * SYN, FIN and RST needs nothing, and is passed on at once, without the
 * flow's lock and without writes to the flow but a lazy refresh of its
 * expiry (tcpfwd_flow_refresh()).
 */
static inline bool tcpfwd_fast_pass(const struct tcpfwd_flow *f,
				    const struct tcpfwd_pkt *p)
{
	return READ_ONCE(f->fast) &&
	       tcpfwd_fast_flags_ok(tcp_flag_byte(&p->th));
}

/*
 * Keep a fast flow alive for @timeout jiffies after its latest segment,
 * without writing on every segment: only when the expiry stored is older
 * than a quarter of @timeout (tcpfwd_refresh_due()).  Without the lock: it
 * may race with the collector (a flow idle for its whole timeout may be
 * reaped anyway, as it would without the write) and with its user under
 * the lock, who then cleared f->fast after this segment read it (the
 * flow's expiry may then be @timeout from now once).
 */
static inline void tcpfwd_flow_refresh(struct tcpfwd_flow *f,
				       unsigned long timeout)
{
	unsigned long now = jiffies;

	if (tcpfwd_refresh_due(READ_ONCE(f->expires), now, timeout))
		WRITE_ONCE(f->expires, now + timeout);
}

/*
 * A flow's lock from the packet path.  Hooks run with BHs disabled (in
 * NET_RX, or in a task under local_bh_disable()) except after an NFQUEUE
 * verdict, when nf_reinject() runs the rest of them in process context
 * with BHs on: only then is the lock taken with spin_lock_bh(), which
 * costs a local_bh_enable() on unlock.  With BHs already off, no softirq
 * on this CPU can take the lock while it is held: spin_lock() is enough
 * (the collector takes it with spin_lock_bh()).  Return: whether BHs were
 * disabled here, for tcpfwd_flow_unlock().
 */
static inline bool tcpfwd_flow_lock(struct tcpfwd_flow *f)
{
	if (softirq_count()) {
		spin_lock(&f->lock);
		return false;
	}
	spin_lock_bh(&f->lock);
	return true;
}

static inline void tcpfwd_flow_unlock(struct tcpfwd_flow *f, bool bh)
{
	if (bh)
		spin_unlock_bh(&f->lock);
	else
		spin_unlock(&f->lock);
}

/*
 * tcpfwd_flow_lock() a flow that is still in the table: false, and not
 * locked, if the collector has unlinked it (the packet then goes on as
 * one without a flow).  *@bh is for tcpfwd_flow_unlock().
 */
static inline bool tcpfwd_flow_lock_live(struct tcpfwd_flow *f, bool *bh)
{
	*bh = tcpfwd_flow_lock(f);
	if (likely(!f->dead))
		return true;
	tcpfwd_flow_unlock(f, *bh);
	return false;
}

/*
 * Seconds a flow is kept after its connection closed (RST, or both FINs),
 * as conntrack's CLOSE state: the users' timeout then (ecn_proxy's
 * timeout_closed by default).
 */
#define TCPFWD_CLOSED_SECS	10

/* Under f->lock: the flow expires @timeout jiffies from now. */
static inline void tcpfwd_flow_expire_in(struct tcpfwd_flow *f,
					 unsigned long timeout)
{
	/* read without the lock: the collector, tcpfwd_flow_refresh() */
	WRITE_ONCE(f->expires, jiffies + timeout);
}

/* The packet's sender is the flow's initiator A. */
static inline bool tcpfwd_from_a(const struct tcpfwd_flow *f,
				 const struct tcpfwd_pkt *p)
{
	return f->a_is_lo == p->src_is_lo;
}

/*
 * The packet is being bridged (br_netfilter): okfn of a bridged packet
 * expects bridge state that segments and copies do not carry, so such
 * packets must not be segmented or injected.
 */
static inline bool tcpfwd_bridged(const struct sk_buff *skb)
{
#if IS_ENABLED(CONFIG_BRIDGE_NETFILTER)
	return nf_bridge_info_exists(skb);
#else
	return false;
#endif
}

void tcpfwd_pass_on(struct sk_buff *skb, const struct nf_hook_state *state);
int tcpfwd_gso_each(struct sk_buff *skb, const struct nf_hook_state *state,
		    unsigned int (*verdict)(struct sk_buff *seg,
					    const struct nf_hook_state *state,
					    void *ctx),
		    void *ctx);

/**
 * tcpfwd_gso_split - a GSO packet through the user's verdict, by segment
 * @tn: the user's netns state (its counters)
 * @skb: the GSO packet
 * @state: the hook state
 * @verdict: the user's decision on one packet, as for tcpfwd_gso_each()
 * @ctx: passed to @verdict
 *
 * Segments @skb and decides on each segment (tcpfwd_gso_each(); counted in
 * ops->stat_gso_segmented).  A packet that cannot be segmented (bridged
 * packets are not given here) goes to @verdict whole, counted in
 * ops->stat_gso_unsegmented.
 *
 * Return: the hook's verdict for @skb (NF_STOLEN once segmented).
 */
static inline unsigned int
tcpfwd_gso_split(struct tcpfwd_net *tn, struct sk_buff *skb,
		 const struct nf_hook_state *state,
		 unsigned int (*verdict)(struct sk_buff *seg,
					 const struct nf_hook_state *state,
					 void *ctx),
		 void *ctx)
{
	int ret = tcpfwd_gso_each(skb, state, verdict, ctx);

	if (ret < 0) {
		tcpfwd_count(tn, tn->ops->stat_gso_unsegmented);
		return verdict(skb, state, ctx);
	}
	tcpfwd_count(tn, tn->ops->stat_gso_segmented);
	return ret;
}

#endif /* _TCPFWD_H */
