/* SPDX-License-Identifier: GPL-2.0 */
/*
 * ecn_proxy beside conntrack on the same box (ecnp_ct.c): what the proxy
 * reads from, and the bits it sets in, the conntrack entry a forwarded
 * packet already carries.  Without conntrack (not built, not loaded, or
 * not used in the packet's netns) every function is a no-op.
 *
 * The packet path's reads are inline: the hook's first test
 * (ecnp_ct_get()) costs a load of skb->_nfct; with an entry, the out-of-line
 * ecnp_hook_ct() (ecnp_main.c) reads its status word (ecnp_ct_nothing()).
 */
#ifndef _ECNP_CT_H
#define _ECNP_CT_H

#include <linux/skbuff.h>

#if IS_ENABLED(CONFIG_NF_CONNTRACK)
#include <net/netfilter/nf_conntrack.h>

/*
 * The proxy's own bit of ct->status: "the proxy decided that this
 * connection needs nothing" (ecnp_ct.c says why it is safe).  The top bit
 * of the word, far above every IPS_* bit (__IPS_MAX_BIT, 16 in 6.1 and
 * 6.12; ecnp_ct.c asserts it at build time).
 */
#define ECNP_CT_NOTHING_BIT	(BITS_PER_LONG - 1)

/* The packet's conntrack entry, or NULL (none, or untracked). */
static inline struct nf_conn *ecnp_ct_get(const struct sk_buff *skb)
{
	return (struct nf_conn *)skb_nfct(skb);
}

/* @ct (may be NULL) carries the proxy's "needs nothing" bit. */
static inline bool ecnp_ct_nothing(const struct nf_conn *ct)
{
	return ct && test_bit(ECNP_CT_NOTHING_BIT, &ct->status);
}

/*
 * The packet's connection is in a flowtable (ecnp_ct.c).  Its other
 * packets take the flowtable's fast path and never reach the proxy's
 * hook; this one came back to the slow path (FIN, RST, a route or MTU
 * change).
 */
static inline bool ecnp_ct_offloaded(const struct sk_buff *skb)
{
	const struct nf_conn *ct = ecnp_ct_get(skb);

	return ct && test_bit(IPS_OFFLOAD_BIT, &ct->status);
}

/* Jiffies until the packet's entry times out, 0 without one. */
static inline unsigned long ecnp_ct_expires(const struct sk_buff *skb)
{
	const struct nf_conn *ct = ecnp_ct_get(skb);

	return ct ? nf_ct_expires(ct) : 0;
}

/*
 * From the fast exit, without the flow's lock: the packet has a confirmed
 * entry without the bit, which ecnp_ct_mark() may set.
 */
static inline bool ecnp_ct_want_mark(const struct sk_buff *skb)
{
	const struct nf_conn *ct = ecnp_ct_get(skb);

	return ct && nf_ct_is_confirmed(ct) && !ecnp_ct_nothing(ct);
}

#else

struct nf_conn;

static inline struct nf_conn *ecnp_ct_get(const struct sk_buff *skb)
{
	return NULL;
}

static inline bool ecnp_ct_nothing(const struct nf_conn *ct)
{
	return false;
}

static inline bool ecnp_ct_offloaded(const struct sk_buff *skb)
{
	return false;
}

static inline unsigned long ecnp_ct_expires(const struct sk_buff *skb)
{
	return 0;
}

static inline bool ecnp_ct_want_mark(const struct sk_buff *skb)
{
	return false;
}

#endif

bool ecnp_ct_keep_slow(const struct sk_buff *skb);
bool ecnp_ct_mark(const struct sk_buff *skb, bool nothing);

#endif /* _ECNP_CT_H */
