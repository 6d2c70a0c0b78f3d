/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Shared kernel-side plumbing of the ecnproxy modules: TCP segment parsing
 * (IPv4 and IPv6), a bounded RCU hash table of flows keyed by the
 * canonical 5-tuple, and sending packets on from the last FORWARD hook
 * (segments of a GSO packet, injected copies).  Each module compiles its
 * own copy (nothing exported).
 *
 * Locking: lookups run under rcu_read_lock(); inserts, removals and the
 * garbage collector take the table's spinlock (BH-safe); each flow's
 * private state is protected by flow->lock.  Flows are kmalloc()ed (the
 * owner's struct begins with struct tcpmb_flow) and freed with kfree_rcu(),
 * so the owner's module exit must rcu_barrier().
 */
#ifndef _TCPMB_FLOW_H
#define _TCPMB_FLOW_H

#include <linux/in6.h>
#include <linux/rculist.h>
#include <linux/skbuff.h>
#include <linux/spinlock.h>
#include <linux/tcp.h>

/* Both endpoints, the lower (address, port) first; IPv4 in the first word. */
struct tcpmb_flow_key {
	struct in6_addr lo_addr;
	struct in6_addr hi_addr;
	__be16 lo_port;
	__be16 hi_port;
	u8 family;
	u8 pad[3];
};

/* What tcpmb_parse() found in a TCP/IP packet. */
struct tcpmb_pkt {
	struct tcpmb_flow_key key;
	bool src_is_lo;		/* the sender is key.lo_* */
	u8 ecn;			/* IP ECN field */
	unsigned int thoff;	/* offset of the TCP header */
	unsigned int thlen;	/* TCP header length incl. options */
	unsigned int payload;	/* TCP payload bytes (all GSO segments) */
	struct tcphdr th;	/* copy of the fixed TCP header */
};

struct tcpmb_flow {
	struct hlist_node node;
	struct tcpmb_flow_key key;
	spinlock_t lock;	/* protects the owner's private state */
	bool a_is_lo;		/* the initiator (first SYN) is key.lo_* */
	bool dead;		/* unlinked; the owner must not use it */
	unsigned long expires;	/* jiffies; set under lock by the owner */
	struct rcu_head rcu;
};

struct tcpmb_flowtab {
	struct hlist_head *buckets;
	unsigned int hmask;
	unsigned int count;	/* under lock; read locklessly with READ_ONCE */
	u32 seed;
	spinlock_t lock;	/* protects buckets (writers) and count */
	size_t flow_size;	/* the owner's struct, tcpmb_flow first */
};

enum tcpmb_insert_err {
	TCPMB_INSERT_OK = 0,
	TCPMB_INSERT_FULL,	/* count reached max */
	TCPMB_INSERT_NOMEM,	/* atomic allocation failed */
	TCPMB_INSERT_EXISTS,	/* another CPU inserted the key first */
};

int tcpmb_parse(struct sk_buff *skb, u8 family, struct tcpmb_pkt *p);

int tcpmb_flowtab_init(struct tcpmb_flowtab *t, unsigned int buckets,
		       size_t flow_size);
void tcpmb_flowtab_destroy(struct tcpmb_flowtab *t);
struct tcpmb_flow *tcpmb_flow_lookup(struct tcpmb_flowtab *t,
				     const struct tcpmb_flow_key *key);
struct tcpmb_flow *tcpmb_flow_insert(struct tcpmb_flowtab *t,
				     const struct tcpmb_flow_key *key,
				     bool a_is_lo, unsigned int max,
				     enum tcpmb_insert_err *err);
unsigned int tcpmb_flowtab_gc(struct tcpmb_flowtab *t, bool all);

/* The packet's sender is the flow's initiator A. */
static inline bool tcpmb_from_a(const struct tcpmb_flow *f,
				const struct tcpmb_pkt *p)
{
	return f->a_is_lo == p->src_is_lo;
}

struct nf_hook_state;
bool tcpmb_bridged(const struct sk_buff *skb);
void tcpmb_okfn(const struct nf_hook_state *state, struct sk_buff *skb);
int tcpmb_gso_each(struct sk_buff *skb, const struct nf_hook_state *state,
		   unsigned int (*verdict)(struct sk_buff *seg,
					   const struct nf_hook_state *state,
					   void *ctx),
		   void *ctx);

int tcpmb_set_tcp_flags(struct sk_buff *skb, const struct tcpmb_pkt *p,
			u8 set, u8 clear);
int tcpmb_set_ecn(struct sk_buff *skb, u8 family, u8 ecn);

#endif /* _TCPMB_FLOW_H */
