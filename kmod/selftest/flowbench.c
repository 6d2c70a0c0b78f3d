// SPDX-License-Identifier: GPL-2.0
/*
 * flowbench: the cost of one flow-table lookup as the table grows.
 *
 * A benchmark, not a test (test-only, never installed; in the manner of
 * lib/test_rhashtable.c).  At load time it fills one tcpfwd flow table
 * (the table ecn_proxy.ko and impair.ko use, through tcpfwd.ko's own
 * insert and lookup) per size in @sizes with flows of 200 bytes from
 * their own slab cache, as the proxy's are.  Then, @rounds times, it
 * measures each table in turn (interleaved, so that a change in the
 * machine's speed during the run falls on every size alike), each time
 * with @lookups lookups of keys drawn at random among the table's flows
 * (hit), as many drawn among a fixed active set of @hot of them spread
 * evenly over the table (hot: a router's packets come from the flows
 * that are active, not from every flow it holds; this isolates what the
 * table's size itself costs a lookup from what the caches cost when
 * every flow is active), as many of keys not in it (miss), as many turns
 * of the same loop
 * with the key made but not looked up (base: the loop's own cost), and
 * as many reads of one word at a random place in a buffer as large as the
 * table's flows (mem: what a memory access costs at that size, the floor
 * under a lookup that must read a bucket and a flow).  Each is timed with
 * ktime_get_ns() around chunks of 1000 under rcu_read_lock() with bottom
 * halves off, as on the packet path.  One line per table and round goes
 * to the kernel log:
 *
 *   flowbench: size=N round=R hit_ns=H miss_ns=M base_ns=B mem_ns=X buckets=K hot_ns=T
 *
 * (nanoseconds per lookup or read; K: the table's rhashtable buckets,
 * after any resize finished), and a last line "flowbench: done".
 * Everything is freed before the module finishes loading; unload it with
 * rmmod.  scripts/bench-lookup runs it in a guest and makes the table.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/delay.h>
#include <linux/ktime.h>
#include <linux/module.h>
#include <linux/prandom.h>
#include <linux/sched.h>
#include <linux/slab.h>
#include <linux/vmalloc.h>
#include <net/net_namespace.h>

#include "../core/tcpfwd.h"

#define FLOWBENCH_FLOW_BYTES	200	/* sizeof(struct ecnp_flow), x86-64 */
#define FLOWBENCH_CHUNK		1000
#define FLOWBENCH_MAX_SIZE	BIT(21)
#define FLOWBENCH_TABLES	4

static unsigned int sizes[FLOWBENCH_TABLES] = { 1000, 100000, 1000000 };
static int nr_sizes = 3;
module_param_array(sizes, uint, &nr_sizes, 0444);
MODULE_PARM_DESC(sizes, "table sizes, 1-1048576 each (at most 4 tables)");

static unsigned int lookups = 100000;
module_param(lookups, uint, 0444);
MODULE_PARM_DESC(lookups, "lookups per table and round (1000-10000000)");

static unsigned int hot = 1000;
module_param(hot, uint, 0444);
MODULE_PARM_DESC(hot, "flows in the active set of the hot lookups (1-1048576)");

static unsigned int rounds = 7;
module_param(rounds, uint, 0444);
MODULE_PARM_DESC(rounds, "rounds (1-100)");

static struct kmem_cache *flowbench_cache;

static const char * const flowbench_stat_names[] = { "flows_expired" };

#define FLOWBENCH_OPS(n) {					\
	.name		= "flowbench" #n,			\
	.stat_names	= flowbench_stat_names,			\
	.nr_stats	= ARRAY_SIZE(flowbench_stat_names),	\
	.stat_expired	= 0,					\
	.stat_malformed	= TCPFWD_NO_STAT,			\
	.stat_table_full = TCPFWD_NO_STAT,			\
	.stat_alloc_failed = TCPFWD_NO_STAT,			\
	.stat_gso_segmented = TCPFWD_NO_STAT,			\
	.stat_gso_unsegmented = TCPFWD_NO_STAT,			\
	.flow_size	= FLOWBENCH_FLOW_BYTES,			\
	.flow_cache	= &flowbench_cache,			\
}

/* one per table: each has its own /proc/net/flowbenchN/ */
static const struct tcpfwd_ops flowbench_ops[FLOWBENCH_TABLES] = {
	FLOWBENCH_OPS(0), FLOWBENCH_OPS(1), FLOWBENCH_OPS(2), FLOWBENCH_OPS(3),
};

struct flowbench_table {
	struct tcpfwd_net tn;
	u32 size;
	unsigned int buckets;
	u64 *mem;		/* size * FLOWBENCH_FLOW_BYTES bytes */
	bool init;
};

/* Flow @i's key: 198.18.0.0/15 addresses, distinct for every @i < 2^21. */
static void flowbench_key(struct tcpfwd_flow_key *key, u32 i)
{
	memset(key, 0, sizeof(*key));
	key->family = AF_INET;
	key->lo_addr.s6_addr32[0] = htonl(0xc6120000 | (i >> 16));
	key->hi_addr.s6_addr32[0] = htonl(0xc6130001);
	key->lo_port = htons(i & 0xffff);
	key->hi_port = htons(80);
}

static int flowbench_fill(struct tcpfwd_net *tn, u32 n)
{
	struct tcpfwd_flow_key key;
	enum tcpfwd_insert_err err;
	struct tcpfwd_flow *f;
	u32 i;

	for (i = 0; i < n; i++) {
		flowbench_key(&key, i);
		rcu_read_lock();
		f = tcpfwd_flow_insert(tn, &key, true, FLOWBENCH_MAX_SIZE,
				       &err);
		if (f) {
			/* never collected while the benchmark runs */
			spin_lock_bh(&f->lock);
			f->expires = jiffies + 24 * 3600 * HZ;
			spin_unlock_bh(&f->lock);
		}
		rcu_read_unlock();
		if (!f || err != TCPFWD_INSERT_OK) {
			pr_err("insert %u of %u failed (%d)\n", i, n, err);
			return -ENOMEM;
		}
		if (!(i % 4096))
			cond_resched();
	}
	return 0;
}

/* Wait until the rhashtable has finished growing; return its buckets. */
static unsigned int flowbench_settle(struct tcpfwd_net *tn)
{
	struct bucket_table *tbl;
	unsigned int size = 0;
	int i;

	for (i = 0; i < 600; i++) {
		bool busy;

		rcu_read_lock();
		tbl = rcu_dereference(tn->ft.ht.tbl);
		busy = rcu_access_pointer(tbl->future_tbl) ||
		       rht_grow_above_75(&tn->ft.ht, tbl);
		size = tbl->size;
		rcu_read_unlock();
		if (!busy)
			break;
		msleep(100);
	}
	return size;
}

enum flowbench_kind {
	FLOWBENCH_HIT,
	FLOWBENCH_MISS,
	FLOWBENCH_BASE,
	FLOWBENCH_MEM,
	FLOWBENCH_HOT,
	FLOWBENCH_KINDS
};

/* Nanoseconds per operation of one kind, over @lookups of them. */
static u64 flowbench_time(struct flowbench_table *t, enum flowbench_kind kind,
			  struct rnd_state *rs)
{
	u32 n = t->size, words = FLOWBENCH_FLOW_BYTES / sizeof(u64);
	u32 h = min(hot, n), stride = n / h;
	struct tcpfwd_flow_key key;
	unsigned long found = 0;
	u64 ns = 0, t0;
	u32 done, j, i;

	for (done = 0; done < lookups; done += FLOWBENCH_CHUNK) {
		local_bh_disable();
		rcu_read_lock();
		t0 = ktime_get_ns();
		for (j = 0; j < FLOWBENCH_CHUNK; j++) {
			i = prandom_u32_state(rs) % n;
			switch (kind) {
			case FLOWBENCH_HIT:
				flowbench_key(&key, i);
				found += !!tcpfwd_flow_lookup(&t->tn.ft, &key);
				break;
			case FLOWBENCH_MISS:
				flowbench_key(&key, i + FLOWBENCH_MAX_SIZE - n);
				found += !!tcpfwd_flow_lookup(&t->tn.ft, &key);
				break;
			case FLOWBENCH_HOT:
				flowbench_key(&key, (i % h) * stride);
				found += !!tcpfwd_flow_lookup(&t->tn.ft, &key);
				break;
			case FLOWBENCH_BASE:
				flowbench_key(&key, i);
				found += READ_ONCE(key.lo_port) != 0;
				break;
			default:
				/* the first word of "flow" i in the buffer */
				found += READ_ONCE(t->mem[i * words]) != 0;
				break;
			}
		}
		ns += ktime_get_ns() - t0;
		rcu_read_unlock();
		local_bh_enable();
		cond_resched();
	}
	/* every hit found, no miss found */
	if ((kind == FLOWBENCH_HIT || kind == FLOWBENCH_HOT) && found != done)
		pr_err("size %u: %lu of %u lookups found their flow\n", n,
		       found, done);
	if (kind == FLOWBENCH_MISS && found)
		pr_err("size %u: %lu misses found a flow\n", n, found);
	return div_u64(ns, done);
}

static void flowbench_free(struct flowbench_table *t)
{
	if (t->init)
		tcpfwd_net_exit(&t->tn);
	vfree(t->mem);
}

static int flowbench_setup(struct flowbench_table *t, unsigned int idx,
			   u32 size)
{
	size_t bytes = (size_t)size * FLOWBENCH_FLOW_BYTES;
	int err;

	t->size = size;
	t->mem = vmalloc(bytes);
	if (!t->mem)
		return -ENOMEM;
	/* every page present: the reads measure memory, not page faults */
	memset(t->mem, 1, bytes);
	err = tcpfwd_net_init(&t->tn, &init_net, &flowbench_ops[idx]);
	if (err)
		return err;
	t->init = true;
	err = flowbench_fill(&t->tn, size);
	if (err)
		return err;
	/* the collector stays away from the timed loops */
	cancel_delayed_work_sync(&t->tn.gc_work);
	t->buckets = flowbench_settle(&t->tn);
	return 0;
}

static int flowbench_run(void)
{
	struct flowbench_table *t;
	u64 ns[FLOWBENCH_KINDS];
	struct rnd_state rs;
	unsigned int s, r, k;
	int err = 0;

	t = kcalloc(nr_sizes, sizeof(*t), GFP_KERNEL);
	if (!t)
		return -ENOMEM;
	prandom_seed_state(&rs, 42);
	for (s = 0; s < nr_sizes && !err; s++)
		err = flowbench_setup(&t[s], s, sizes[s]);
	for (r = 1; r <= rounds && !err; r++) {
		for (s = 0; s < nr_sizes; s++) {
			for (k = 0; k < FLOWBENCH_KINDS; k++)
				ns[k] = flowbench_time(&t[s], k, &rs);
			pr_info("size=%u round=%u hit_ns=%llu miss_ns=%llu base_ns=%llu mem_ns=%llu buckets=%u hot_ns=%llu\n",
				t[s].size, r, ns[FLOWBENCH_HIT],
				ns[FLOWBENCH_MISS], ns[FLOWBENCH_BASE],
				ns[FLOWBENCH_MEM], t[s].buckets,
				ns[FLOWBENCH_HOT]);
		}
	}
	for (s = 0; s < nr_sizes; s++)
		flowbench_free(&t[s]);
	rcu_barrier();
	kfree(t);
	if (!err)
		pr_info("done\n");
	return err;
}

static int __init flowbench_init(void)
{
	int i, err;

	if (lookups < FLOWBENCH_CHUNK || lookups > 10000000 || !rounds ||
	    rounds > 100 || !hot || hot > FLOWBENCH_MAX_SIZE / 2) {
		pr_err("lookups must be 1000-10000000, rounds 1-100 and hot 1-%lu\n",
		       FLOWBENCH_MAX_SIZE / 2);
		return -EINVAL;
	}
	for (i = 0; i < nr_sizes; i++) {
		if (!sizes[i] || sizes[i] > FLOWBENCH_MAX_SIZE / 2) {
			pr_err("sizes must be 1-%lu\n", FLOWBENCH_MAX_SIZE / 2);
			return -EINVAL;
		}
	}
	flowbench_cache = kmem_cache_create("flowbench_flow",
					    FLOWBENCH_FLOW_BYTES, 0, 0, NULL);
	if (!flowbench_cache)
		return -ENOMEM;
	err = flowbench_run();
	if (err)
		kmem_cache_destroy(flowbench_cache);
	return err;
}

static void __exit flowbench_exit(void)
{
	kmem_cache_destroy(flowbench_cache);
}

module_init(flowbench_init);
module_exit(flowbench_exit);
MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("ecnproxy benchmark: flow-table lookup cost by table size");
