// SPDX-License-Identifier: GPL-2.0
/*
 * The flow table of tcpfwd.ko (see tcpfwd.h): an rhashtable, so its size
 * follows the number of flows (grown and shrunk by rhashtable's worker,
 * lookups stay RCU and O(1) at any size), bounded by the user's limit with
 * an exact count, and a collector that walks it in slices.
 */
#include <linux/jhash.h>
#include <linux/memcontrol.h>
#include <linux/mm.h>
#include <linux/netfilter.h>
#include <linux/rhashtable.h>
#include <linux/sched.h>
#include <linux/sched/mm.h>
#include <linux/slab.h>

#include "tcpfwd.h"
#include "tcpfwd_internal.h"

int tcpfwd_flowtab_init(struct tcpfwd_flowtab *t, size_t flow_size,
			struct kmem_cache *cache)
{
	atomic_set(&t->count, 0);
	t->flow_size = flow_size;
	t->cache = cache;
	t->gc_walking = false;
	return rhashtable_init(&t->ht, &tcpfwd_ht_params);
}

static void tcpfwd_flow_free(void *ptr, void *arg)
{
	struct tcpfwd_flowtab *t = arg;
	/* every table is a tcpfwd_net's */
	struct tcpfwd_net *tn = container_of(t, struct tcpfwd_net, ft);

	if (tn->ops->flow_free)
		tn->ops->flow_free(tn, ptr);
	if (t->cache)
		kmem_cache_free(t->cache, ptr);
	else
		kfree(ptr);
}

/*
 * kfree() frees an object of any slab cache (mm/slab_common.c; documented
 * so since 6.4).  Not kfree_rcu(): in 6.1 rcu_barrier() does not wait for
 * its batches, and the user destroys its cache after rcu_barrier().
 */
static void tcpfwd_flow_free_rcu(struct rcu_head *head)
{
	kfree(container_of(head, struct tcpfwd_flow, rcu));
}

/* Call only when no packet path can reach @t and an RCU grace period has
 * passed since the last one did: flows are freed at once.
 */
void tcpfwd_flowtab_destroy(struct tcpfwd_flowtab *t)
{
	if (t->gc_walking)
		rhashtable_walk_exit(&t->gc_iter);
	t->gc_walking = false;
	rhashtable_free_and_destroy(&t->ht, tcpfwd_flow_free, t);
}

/**
 * tcpfwd_default_max_flows - a flow table bound that suits this machine
 *
 * Sized from RAM as nf_conntrack_init_start() sizes nf_conntrack_max
 * (6.1, net/netfilter/nf_conntrack_core.c): one flow per 16 KiB of RAM per
 * pointer width (2048 on a 128 MiB 32-bit router, about 0.5 MiB of
 * flows), at least 1024, and 65536 above 1 GiB.  The 1 GiB test comes
 * first: the shift would overflow a 32-bit unsigned long at 4 GiB.
 *
 * Return: the default max_flows.
 */
unsigned int tcpfwd_default_max_flows(void)
{
	unsigned long nr_pages = totalram_pages();

	if (nr_pages > (1024 * 1024 * 1024 / PAGE_SIZE))
		return 65536;
	return max_t(unsigned long, 1024,
		     (nr_pages << PAGE_SHIFT) / 16384 / sizeof(void *));
}
EXPORT_SYMBOL_GPL(tcpfwd_default_max_flows);

/*
 * Memory cgroup charging of the flows.  What mm/memcontrol.c of 6.1 does
 * with a __GFP_ACCOUNT slab allocation: memcg_slab_pre_alloc_hook() asks
 * get_obj_cgroup_from_current(), which charges nobody when
 * memcg_kmem_bypass() says so: no remote memcg is active (active_memcg():
 * the per-CPU int_active_memcg when !in_task(), current->active_memcg in a
 * task) and either !in_task() or the task is a kernel thread or has no mm.
 * Our hooks run mostly in softirq context (NET_RX, also when softirqs run
 * from local_bh_enable() in a task or in ksoftirqd: __do_softirq() adds
 * SOFTIRQ_OFFSET, so in_task() is false), where a plain __GFP_ACCOUNT
 * charges nothing; sometimes in a task, for which in_task() is true even
 * with BHs disabled (after an NFQUEUE verdict; a packet that a tun
 * writer's write(2) delivers inline, tun_rx_batched()), where it would
 * charge whichever task that is.  So the allocation runs in the remote
 * charging scope of set_active_memcg() (as drivers/block/loop.c and the
 * BPF map allocators of kernel/bpf/syscall.c do), which sets
 * int_active_memcg in softirq and current->active_memcg in a task: the
 * flows are charged to the namespace creator's memcg (tcpfwd_net_init())
 * in every context.  try_charge_memcg() does not fail
 * a charge that cannot block but has __GFP_HIGH (GFP_ATOMIC): it is forced
 * over memory.max with a MEMCG_MAX event, so the flows show in that
 * cgroup's memory.current and its own tasks pay by reclaim (or OOM), while
 * the user's limit (max_flows) stays the hard bound per namespace.
 */
static struct tcpfwd_flow *tcpfwd_flow_alloc(struct tcpfwd_net *tn)
{
	struct mem_cgroup *old = set_active_memcg(tn->memcg);
	struct tcpfwd_flow *f;

	f = tn->ft.cache ?
	    kmem_cache_zalloc(tn->ft.cache,
			      GFP_ATOMIC | __GFP_NOWARN | __GFP_ACCOUNT) :
	    kzalloc(tn->ft.flow_size,
		    GFP_ATOMIC | __GFP_NOWARN | __GFP_ACCOUNT);
	set_active_memcg(old);
	return f;
}

/**
 * tcpfwd_flow_add - add a flow, unless the table is full
 * @tn: the user's netns state (its table, and its collector, which is
 *	idle while the table is empty)
 * @key: canonical key
 * @a_is_lo: the initiator is @key's lo endpoint
 * @max: the table's limit
 * @init: optional: sets up the user's state of the new flow (zeroed
 *	beyond struct tcpfwd_flow, key and a_is_lo set) before any other
 *	CPU can find it; not called for a flow that is not added
 * @arg: passed to @init
 * @err: why NULL was returned
 *
 * Under rcu_read_lock(), from the packet path.  The new flow expires now
 * + 1 s unless the user sets a timeout, and may be returned to a
 * concurrent lookup as soon as it is in the table: another CPU may lock
 * it before the caller does, and finds it as @init left it.  If another
 * CPU inserted the same key first, that flow is returned with @err =
 * TCPFWD_INSERT_EXISTS.
 *
 * Return: the flow, or NULL with @err set, counted in the user's
 * ops->stat_table_full (TCPFWD_INSERT_FULL) or ops->stat_alloc_failed
 * (TCPFWD_INSERT_NOMEM).
 */
struct tcpfwd_flow *tcpfwd_flow_add(struct tcpfwd_net *tn,
				    const struct tcpfwd_flow_key *key,
				    bool a_is_lo, unsigned int max,
				    void (*init)(struct tcpfwd_flow *f, void *arg),
				    void *arg, enum tcpfwd_insert_err *err)
{
	struct tcpfwd_flowtab *t = &tn->ft;
	struct tcpfwd_flow *f, *old;

	/* reserve a place first: the count never exceeds @max */
	if (atomic_inc_return(&t->count) > max) {
		atomic_dec(&t->count);
		*err = TCPFWD_INSERT_FULL;
		tcpfwd_count(tn, tn->ops->stat_table_full);
		return NULL;
	}
	f = tcpfwd_flow_alloc(tn);
	if (!f)
		goto nomem;
	f->key = *key;
	f->a_is_lo = a_is_lo;
	f->expires = jiffies + HZ;
	spin_lock_init(&f->lock);
	if (init)
		init(f, arg);

	old = rhashtable_lookup_get_insert_fast(&t->ht, &f->node,
						tcpfwd_ht_params);
	if (old) {
		tcpfwd_flow_free(f, t);
		if (IS_ERR(old))
			goto nomem;	/* -ENOMEM, or -EBUSY while resizing */
		atomic_dec(&t->count);
		*err = TCPFWD_INSERT_EXISTS;
		return old;
	}
	if (!delayed_work_pending(&tn->gc_work))
		queue_delayed_work(system_power_efficient_wq, &tn->gc_work,
				   TCPFWD_GC_INTERVAL);
	*err = TCPFWD_INSERT_OK;
	return f;

nomem:
	atomic_dec(&t->count);
	*err = TCPFWD_INSERT_NOMEM;
	tcpfwd_count(tn, tn->ops->stat_alloc_failed);
	return NULL;
}
EXPORT_SYMBOL_GPL(tcpfwd_flow_add);

/* Remove @f if it has expired; the walk holds rcu_read_lock(). */
static bool tcpfwd_flow_reap(struct tcpfwd_net *tn, struct tcpfwd_flow *f,
			     unsigned long now)
{
	struct tcpfwd_flowtab *t = &tn->ft;
	bool gone = false;

	spin_lock_bh(&f->lock);
	if (!f->dead && time_after_eq(now, READ_ONCE(f->expires)) &&
	    !rhashtable_remove_fast(&t->ht, &f->node, tcpfwd_ht_params)) {
		f->dead = true;
		gone = true;
		if (tn->ops->flow_gone)
			tn->ops->flow_gone(tn, f);
	}
	spin_unlock_bh(&f->lock);
	if (gone) {
		atomic_dec(&t->count);
		call_rcu(&f->rcu, tcpfwd_flow_free_rcu);
	}
	return gone;
}

/**
 * tcpfwd_flowtab_gc - unlink and free expired flows, a slice at a time
 * @tn: the user's netns state, whose table it is
 * @budget: how many flows to look at, from where the last call stopped
 *
 * A flow expires when jiffies passes flow->expires.  Freeing waits for an
 * RCU grace period (kfree_rcu), and flow->dead tells a packet that already
 * holds the flow not to touch it.  The walk leaves RCU every
 * TCPFWD_GC_BATCH flows to reschedule; a resize of the table restarts the
 * pass (rhashtable_walk_next() says -EAGAIN), which only delays expiry.
 * Process context.
 *
 * Return: the number of flows removed.
 */
unsigned int tcpfwd_flowtab_gc(struct tcpfwd_net *tn, unsigned int budget)
{
	struct tcpfwd_flowtab *t = &tn->ft;
	unsigned long now = jiffies;
	unsigned int n = 0, batch = 0;
	struct tcpfwd_flow *f;

	if (!t->gc_walking) {
		rhashtable_walk_enter(&t->ht, &t->gc_iter);
		t->gc_walking = true;
	}
	rhashtable_walk_start(&t->gc_iter);
	while (budget) {
		f = rhashtable_walk_next(&t->gc_iter);
		if (IS_ERR(f)) {
			if (PTR_ERR(f) == -EAGAIN)
				continue;
			break;
		}
		if (!f) {
			/* end of a pass: the next call starts a new one */
			rhashtable_walk_stop(&t->gc_iter);
			rhashtable_walk_exit(&t->gc_iter);
			t->gc_walking = false;
			return n;
		}
		budget--;
		n += tcpfwd_flow_reap(tn, f, now);
		if (++batch == TCPFWD_GC_BATCH) {
			batch = 0;
			rhashtable_walk_stop(&t->gc_iter);
			cond_resched();
			rhashtable_walk_start(&t->gc_iter);
		}
	}
	rhashtable_walk_stop(&t->gc_iter);
	return n;
}
