// SPDX-License-Identifier: GPL-2.0
/*
 * The bounded RCU flow table of tcpfwd.ko (see tcpfwd.h).
 */
#include <linux/jhash.h>
#include <linux/random.h>
#include <linux/slab.h>

#include "tcpfwd.h"
#include "tcpfwd_internal.h"

static u32 tcpfwd_hash(const struct tcpfwd_flowtab *t,
		       const struct tcpfwd_flow_key *key)
{
	return jhash2((const u32 *)key, sizeof(*key) / sizeof(u32), t->seed) &
	       t->hmask;
}

int tcpfwd_flowtab_init(struct tcpfwd_flowtab *t, unsigned int buckets,
			size_t flow_size)
{
	unsigned int i;

	buckets = roundup_pow_of_two(buckets);
	t->buckets = kvmalloc_array(buckets, sizeof(*t->buckets), GFP_KERNEL);
	if (!t->buckets)
		return -ENOMEM;
	for (i = 0; i < buckets; i++)
		INIT_HLIST_HEAD(&t->buckets[i]);
	t->hmask = buckets - 1;
	t->count = 0;
	t->gc_next = 0;
	t->seed = get_random_u32();
	t->flow_size = flow_size;
	spin_lock_init(&t->lock);
	return 0;
}

static unsigned int tcpfwd_bucket_gc(struct tcpfwd_flowtab *t,
				     unsigned int i, bool all);

/* Call only when no packet path can reach @t any more. */
void tcpfwd_flowtab_destroy(struct tcpfwd_flowtab *t)
{
	unsigned int i;

	for (i = 0; i <= t->hmask; i++)
		tcpfwd_bucket_gc(t, i, true);
	kvfree(t->buckets);
	t->buckets = NULL;
}

/* Under rcu_read_lock(); the flow may be dead (check under its lock). */
struct tcpfwd_flow *tcpfwd_flow_lookup(struct tcpfwd_flowtab *t,
				       const struct tcpfwd_flow_key *key)
{
	struct tcpfwd_flow *f;

	hlist_for_each_entry_rcu(f, &t->buckets[tcpfwd_hash(t, key)], node)
		if (!memcmp(&f->key, key, sizeof(*key)))
			return f;
	return NULL;
}
EXPORT_SYMBOL_GPL(tcpfwd_flow_lookup);

/**
 * tcpfwd_flow_insert - add a flow, unless the table is full
 * @tn: the user's netns state (its table, and its collector, which is
 *	idle while the table is empty)
 * @key: canonical key
 * @a_is_lo: the initiator is @key's lo endpoint
 * @max: the table's limit
 * @err: why NULL was returned
 *
 * Under rcu_read_lock(), from the packet path.  The new flow is zeroed
 * beyond struct tcpfwd_flow, expires now + 1 s unless the owner sets a
 * timeout, and may be returned to a concurrent lookup at once, so the owner
 * initialises its state under flow->lock.  If another CPU inserted the same
 * key first, that flow is returned with @err = TCPFWD_INSERT_EXISTS.
 *
 * Return: the flow, or NULL with @err set.
 */
struct tcpfwd_flow *tcpfwd_flow_insert(struct tcpfwd_net *tn,
				       const struct tcpfwd_flow_key *key,
				       bool a_is_lo, unsigned int max,
				       enum tcpfwd_insert_err *err)
{
	struct tcpfwd_flowtab *t = &tn->ft;
	struct tcpfwd_flow *f, *old;

	if (READ_ONCE(t->count) >= max) {
		*err = TCPFWD_INSERT_FULL;
		return NULL;
	}
	f = kzalloc(t->flow_size, GFP_ATOMIC | __GFP_NOWARN);
	if (!f) {
		*err = TCPFWD_INSERT_NOMEM;
		return NULL;
	}
	f->key = *key;
	f->a_is_lo = a_is_lo;
	f->expires = jiffies + HZ;
	spin_lock_init(&f->lock);

	spin_lock_bh(&t->lock);
	old = tcpfwd_flow_lookup(t, key);
	if (old || t->count >= max) {
		spin_unlock_bh(&t->lock);
		kfree(f);
		*err = old ? TCPFWD_INSERT_EXISTS : TCPFWD_INSERT_FULL;
		return old;
	}
	hlist_add_head_rcu(&f->node, &t->buckets[tcpfwd_hash(t, key)]);
	WRITE_ONCE(t->count, t->count + 1);
	spin_unlock_bh(&t->lock);
	if (!delayed_work_pending(&tn->gc_work))
		queue_delayed_work(system_power_efficient_wq, &tn->gc_work,
				   TCPFWD_GC_INTERVAL);
	*err = TCPFWD_INSERT_OK;
	return f;
}
EXPORT_SYMBOL_GPL(tcpfwd_flow_insert);

/* Unlink and free the expired flows of bucket @i (all of them with @all). */
static unsigned int tcpfwd_bucket_gc(struct tcpfwd_flowtab *t,
				     unsigned int i, bool all)
{
	unsigned long now = jiffies;
	struct hlist_node *tmp;
	struct tcpfwd_flow *f;
	unsigned int n = 0;

	if (hlist_empty(&t->buckets[i]))
		return 0;
	spin_lock_bh(&t->lock);
	hlist_for_each_entry_safe(f, tmp, &t->buckets[i], node) {
		spin_lock(&f->lock);
		if (all || time_after_eq(now, f->expires)) {
			f->dead = true;
			hlist_del_rcu(&f->node);
			WRITE_ONCE(t->count, t->count - 1);
			n++;
			spin_unlock(&f->lock);
			kfree_rcu(f, rcu);
			continue;
		}
		spin_unlock(&f->lock);
	}
	spin_unlock_bh(&t->lock);
	return n;
}

/**
 * tcpfwd_flowtab_gc - unlink and free expired flows, a few buckets at a time
 * @t: the table
 * @budget: how many buckets to look at, from where the last call stopped
 *
 * A flow expires when jiffies passes flow->expires.  Freeing waits for an
 * RCU grace period (kfree_rcu), and flow->dead tells a packet that already
 * holds the flow not to touch it.  The table lock is taken per bucket.
 *
 * Return: the number of flows removed.
 */
unsigned int tcpfwd_flowtab_gc(struct tcpfwd_flowtab *t, unsigned int budget)
{
	unsigned int n = 0;

	budget = min(budget, t->hmask + 1);
	while (budget--) {
		n += tcpfwd_bucket_gc(t, t->gc_next, false);
		t->gc_next = (t->gc_next + 1) & t->hmask;
	}
	return n;
}
