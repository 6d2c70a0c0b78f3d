// SPDX-License-Identifier: GPL-2.0
/*
 * tcpfwd.ko: per-netns set-up for its user modules (see tcpfwd.h) and the
 * module itself, which has no state of its own.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/memcontrol.h>
#include <linux/module.h>
#include <linux/netfilter_ipv4.h>
#include <linux/netfilter_ipv6.h>
#include <linux/proc_fs.h>
#include <linux/seq_file.h>
#include <linux/slab.h>
#include <net/net_namespace.h>

#include "tcpfwd.h"
#include "tcpfwd_internal.h"

/**
 * tcpfwd_stats_alloc - allocate a set of per-CPU counters
 * @n: how many
 *
 * Return: the zeroed set (see struct tcpfwd_stats), or NULL.
 */
struct tcpfwd_stats __percpu *tcpfwd_stats_alloc(unsigned int n)
{
	struct tcpfwd_stats __percpu *stats;
	struct tcpfwd_stats *s;
	int cpu;

	stats = __alloc_percpu(struct_size(s, v, n),
			       __alignof__(struct tcpfwd_stats));
	if (!stats)
		return NULL;
	for_each_possible_cpu(cpu)
		u64_stats_init(&per_cpu_ptr(stats, cpu)->syncp);
	return stats;
}
EXPORT_SYMBOL_GPL(tcpfwd_stats_alloc);

/* free_percpu() may be called from atomic context (RCU callbacks). */
void tcpfwd_stats_free(struct tcpfwd_stats __percpu *stats)
{
	free_percpu(stats);
}
EXPORT_SYMBOL_GPL(tcpfwd_stats_free);

/**
 * tcpfwd_stats_sum - one counter summed over the CPUs
 * @stats: the set
 * @i: the counter
 *
 * Each CPU's value is read whole (u64_stats_fetch_begin/retry); the sum is
 * not a snapshot of all CPUs at one instant.  Any context.
 *
 * Return: the sum.
 */
u64 tcpfwd_stats_sum(struct tcpfwd_stats __percpu *stats, unsigned int i)
{
	u64 sum = 0;
	int cpu;

	for_each_possible_cpu(cpu) {
		const struct tcpfwd_stats *s = per_cpu_ptr(stats, cpu);
		unsigned int start;
		u64 v;

		do {
			start = u64_stats_fetch_begin(&s->syncp);
			v = u64_stats_read(&s->v[i]);
		} while (u64_stats_fetch_retry(&s->syncp, start));
		sum += v;
	}
	return sum;
}
EXPORT_SYMBOL_GPL(tcpfwd_stats_sum);

/* /proc/net/<name>/stats: the counters summed over CPUs, then the table. */
static int tcpfwd_stats_show(struct seq_file *seq, void *v)
{
	/* single_open_net() leaves the netns in seq->private, ours in the PDE */
	struct tcpfwd_net *tn = pde_data(file_inode(seq->file));
	const struct tcpfwd_ops *ops = tn->ops;
	unsigned int i;

	for (i = 0; i < ops->nr_stats; i++)
		seq_printf(seq, "%s %llu\n", ops->stat_names[i],
			   tcpfwd_stats_sum(tn->stats, i));
	seq_printf(seq, "flows_active %u\n", tcpfwd_flow_count(tn));
	/* memory per flow: the struct and the kmalloc bucket it lands in */
	seq_printf(seq, "flow_struct_bytes %zu\n", ops->flow_size);
	seq_printf(seq, "flow_alloc_bytes %u\n", tn->ft.cache ?
		   kmem_cache_size(tn->ft.cache) :
		   (unsigned int)kmalloc_size_roundup(ops->flow_size));
	if (ops->stats_show)
		ops->stats_show(seq, tn);
	return 0;
}

/*
 * /proc/net/<name>/flows: a seq_file iterator over the table, one
 * ops->flow_show line per flow.  The rhashtable walker lives as long as the
 * open file, so each read(2) resumes where the last one stopped instead of
 * walking from the start; only a seek elsewhere restarts the walk.  A
 * resize during a read restarts it too (rhashtable_walk_next() says
 * -EAGAIN), so a flow may be listed twice then.
 */
struct tcpfwd_flows_iter {
	struct tcpfwd_net *tn;
	struct rhashtable_iter hti;
	loff_t pos;		/* the position of the walker's current flow */
};

static struct tcpfwd_flow *tcpfwd_walk(struct rhashtable_iter *hti,
				       bool peek)
{
	struct tcpfwd_flow *f;

	do {
		f = peek ? rhashtable_walk_peek(hti) : rhashtable_walk_next(hti);
	} while (IS_ERR(f) && PTR_ERR(f) == -EAGAIN);
	return IS_ERR(f) ? NULL : f;
}

static void *tcpfwd_flows_start(struct seq_file *seq, loff_t *pos)
	__acquires(RCU)
{
	struct tcpfwd_flows_iter *it = seq->private;
	struct tcpfwd_flow *f;

	if (*pos && *pos == it->pos) {
		rhashtable_walk_start(&it->hti);
		return tcpfwd_walk(&it->hti, true);
	}
	/* from the start: the first read, or a seek */
	rhashtable_walk_exit(&it->hti);
	rhashtable_walk_enter(&it->tn->ft.ht, &it->hti);
	rhashtable_walk_start(&it->hti);
	f = tcpfwd_walk(&it->hti, false);
	for (it->pos = 0; f && it->pos < *pos; it->pos++)
		f = tcpfwd_walk(&it->hti, false);
	return f;
}

static void *tcpfwd_flows_next(struct seq_file *seq, void *v, loff_t *pos)
{
	struct tcpfwd_flows_iter *it = seq->private;

	it->pos = ++*pos;
	return tcpfwd_walk(&it->hti, false);
}

static void tcpfwd_flows_stop(struct seq_file *seq, void *v)
	__releases(RCU)
{
	struct tcpfwd_flows_iter *it = seq->private;

	rhashtable_walk_stop(&it->hti);
}

static int tcpfwd_flows_show(struct seq_file *seq, void *v)
{
	struct tcpfwd_flows_iter *it = seq->private;

	it->tn->ops->flow_show(seq, it->tn, v);
	return 0;
}

static const struct seq_operations tcpfwd_flows_seq_ops = {
	.start	= tcpfwd_flows_start,
	.next	= tcpfwd_flows_next,
	.stop	= tcpfwd_flows_stop,
	.show	= tcpfwd_flows_show,
};

static int tcpfwd_flows_open(struct inode *inode, struct file *file)
{
	struct tcpfwd_flows_iter *it;

	it = __seq_open_private(file, &tcpfwd_flows_seq_ops, sizeof(*it));
	if (!it)
		return -ENOMEM;
	it->tn = pde_data(inode);
	rhashtable_walk_enter(&it->tn->ft.ht, &it->hti);
	return 0;
}

/* Also run by remove_proc_subtree() for files still open at netns exit. */
static int tcpfwd_flows_release(struct inode *inode, struct file *file)
{
	struct tcpfwd_flows_iter *it = ((struct seq_file *)file->private_data)->private;

	rhashtable_walk_exit(&it->hti);
	return seq_release_private(inode, file);
}

static const struct proc_ops tcpfwd_flows_ops = {
	.proc_open	= tcpfwd_flows_open,
	.proc_read	= seq_read,
	.proc_lseek	= seq_lseek,
	.proc_release	= tcpfwd_flows_release,
};

static void tcpfwd_gc_work(struct work_struct *work)
{
	struct tcpfwd_net *tn = container_of(to_delayed_work(work),
					     struct tcpfwd_net, gc_work);
	unsigned int n, budget;

	budget = clamp(tcpfwd_flow_count(tn) / TCPFWD_GC_SLICES + 1,
		       TCPFWD_GC_BATCH, TCPFWD_GC_MAX_RUN);
	n = tcpfwd_flowtab_gc(tn, budget);
	if (n)
		tcpfwd_add(tn, tn->ops->stat_expired, n);
	/* idle while empty: tcpfwd_flow_add() queues us again */
	if (tcpfwd_flow_count(tn))
		queue_delayed_work(system_power_efficient_wq, &tn->gc_work,
				   TCPFWD_GC_INTERVAL);
}

/**
 * tcpfwd_set_hooks - register or unregister the user's FORWARD hooks
 * @tn: the user's netns state
 * @on: register (IPv4 and IPv6) or unregister
 *
 * The hooks run last in FORWARD (NF_IP_PRI_LAST): after filtering, and a
 * packet the user steals and hands to tcpfwd_pass_on() skips no later
 * FORWARD hook, except one at the same priority registered before ours
 * (at equal priority, netfilter runs the later registration first).
 * nf_unregister_net_hooks() does not wait for packets already in the hook:
 * callers free what the hook uses only after an RCU grace period.
 *
 * Return: 0 or the error of nf_register_net_hooks().
 */
int tcpfwd_set_hooks(struct tcpfwd_net *tn, bool on)
{
	int err = 0;

	mutex_lock(&tn->hook_mutex);
	if (on && !tn->hooks_on) {
		err = nf_register_net_hooks(tn->net, tn->hook_ops,
					    ARRAY_SIZE(tn->hook_ops));
		if (!err)
			tn->hooks_on = true;
	} else if (!on && tn->hooks_on) {
		nf_unregister_net_hooks(tn->net, tn->hook_ops,
					ARRAY_SIZE(tn->hook_ops));
		tn->hooks_on = false;
	}
	mutex_unlock(&tn->hook_mutex);
	return err;
}
EXPORT_SYMBOL_GPL(tcpfwd_set_hooks);

/*
 * Each counter the core bumps is one of the user's, or none: one out of
 * range would be written past the per-CPU array.
 */
static bool tcpfwd_ops_stats_ok(const struct tcpfwd_ops *ops)
{
	const unsigned int stats[] = {
		ops->stat_expired, ops->stat_malformed, ops->stat_table_full,
		ops->stat_alloc_failed, ops->stat_gso_segmented,
		ops->stat_gso_unsegmented,
	};
	static const char * const field[] = {
		"stat_expired", "stat_malformed", "stat_table_full",
		"stat_alloc_failed", "stat_gso_segmented",
		"stat_gso_unsegmented",
	};
	unsigned int i;

	static_assert(ARRAY_SIZE(field) == ARRAY_SIZE(stats));
	for (i = 0; i < ARRAY_SIZE(stats); i++) {
		if (stats[i] < ops->nr_stats || stats[i] == TCPFWD_NO_STAT)
			continue;
		pr_err("%s: ops->%s is %u: neither below nr_stats (%u) nor TCPFWD_NO_STAT\n",
		       ops->name, field[i], stats[i], ops->nr_stats);
		return false;
	}
	return true;
}

/**
 * tcpfwd_net_init - set up one user module in one network namespace
 * @tn: the user's netns state (zeroed by the netns core)
 * @net: the namespace
 * @ops: the user
 *
 * Allocates the counters and the flow table and creates /proc/net/<name>/
 * with its "stats" file; the user adds its own files to tn->proc_dir.  The
 * hooks stay off until tcpfwd_set_hooks().  The flows will be charged to
 * the memory cgroup of the current task: the one that creates the
 * namespace, or for the namespaces that exist when the user module is
 * loaded, the one that loads it.
 *
 * Return: 0, -ENOMEM, or -EINVAL for a counter of @ops out of range (a
 * bug of the user: logged), with nothing left allocated.
 */
int tcpfwd_net_init(struct tcpfwd_net *tn, struct net *net,
		    const struct tcpfwd_ops *ops)
{
	unsigned int i;
	int err;

	if (!tcpfwd_ops_stats_ok(ops))
		return -EINVAL;
	tn->net = net;
	tn->ops = ops;
	mutex_init(&tn->hook_mutex);
	INIT_DELAYED_WORK(&tn->gc_work, tcpfwd_gc_work);
	for (i = 0; i < ARRAY_SIZE(tn->hook_ops); i++) {
		tn->hook_ops[i] = (struct nf_hook_ops) {
			.hook		= ops->hook,
			.priv		= tn,
			.pf		= i ? NFPROTO_IPV6 : NFPROTO_IPV4,
			.hooknum	= NF_INET_FORWARD,
			.priority	= i ? NF_IP6_PRI_LAST : NF_IP_PRI_LAST,
		};
	}

	tn->stats = tcpfwd_stats_alloc(ops->nr_stats);
	if (!tn->stats)
		return -ENOMEM;
	tn->memcg = get_mem_cgroup_from_mm(current->mm);
	err = tcpfwd_flowtab_init(&tn->ft, ops->flow_size,
				  ops->flow_cache ? *ops->flow_cache : NULL);
	if (err)
		goto err_stats;
	err = -ENOMEM;
	tn->proc_dir = proc_net_mkdir(net, ops->name, net->proc_net);
	if (!tn->proc_dir)
		goto err_ft;
	if (!proc_create_net_single("stats", 0444, tn->proc_dir,
				    tcpfwd_stats_show, tn))
		goto err_proc;
	if (ops->flow_show &&
	    !proc_create_data("flows", ops->flows_mode, tn->proc_dir,
			      &tcpfwd_flows_ops, tn))
		goto err_proc;
	return 0;

err_proc:
	remove_proc_subtree(ops->name, net->proc_net);
err_ft:
	tcpfwd_flowtab_destroy(&tn->ft);
err_stats:
	mem_cgroup_put(tn->memcg);
	tcpfwd_stats_free(tn->stats);
	return err;
}
EXPORT_SYMBOL_GPL(tcpfwd_net_init);

/**
 * tcpfwd_net_exit - undo tcpfwd_net_init()
 * @tn: the user's netns state
 *
 * The hooks must be off and an RCU grace period must have passed (the
 * netns core runs synchronize_rcu() between pre_exit and exit), so that no
 * packet holds a flow.  Removes /proc/net/<name>/ with the user's files.
 */
void tcpfwd_net_exit(struct tcpfwd_net *tn)
{
	WARN_ON_ONCE(tn->hooks_on);
	remove_proc_subtree(tn->ops->name, tn->net->proc_net);
	cancel_delayed_work_sync(&tn->gc_work);
	tcpfwd_flowtab_destroy(&tn->ft);
	mem_cgroup_put(tn->memcg);
	tcpfwd_stats_free(tn->stats);
}
EXPORT_SYMBOL_GPL(tcpfwd_net_exit);

/*
 * No module_init()/module_exit(): tcpfwd.ko has no state of its own, and a
 * module with neither can still be unloaded (delete_module() refuses only
 * one that has an init function but no exit function).
 */
MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("TCP forward-path plumbing shared by ecn_proxy and impair");
