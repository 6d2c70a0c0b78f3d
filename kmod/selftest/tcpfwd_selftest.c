// SPDX-License-Identifier: GPL-2.0
/*
 * tcpfwd_selftest: in-kernel tests of tcpfwd.ko's skb plumbing that the
 * userspace unit tests cannot reach (test-only, never installed).
 *
 * It runs at load time and fails the load (-EINVAL, with the failing
 * check in the kernel log) unless every check passes; the VM test
 * core_selftest loads it, and the debug kernel (make debugtest) runs it
 * under KASAN.
 *
 * tcpfwd_gso_each() (issue 11, L6): a GSO packet is segmented and each
 * segment given to a verdict function.  The segments of a verdict that
 * returns NF_ACCEPT go on through okfn, those of NF_STOLEN belong to the
 * verdict, any other verdict's are freed; the GSO packet is consumed.
 * Before the fix every non-NF_ACCEPT segment was freed, so a verdict that
 * stole one had it freed under it.  Each check holds one reference of its
 * own to every segment and to the GSO packet, so a free too many or too
 * few shows as a reference count, deterministically and without a
 * use-after-free, on any kernel.  A packet that cannot be segmented (not
 * GSO) is left untouched with an error.
 *
 * tcpfwd_net_init(): a user module one of whose counters for the core
 * (struct tcpfwd_ops, stat_*) is out of range is refused with -EINVAL
 * and a message, and nothing is made for it; in range, it is taken.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/ip.h>
#include <linux/module.h>
#include <linux/netfilter.h>
#include <linux/skbuff.h>
#include <linux/slab.h>
#include <linux/tcp.h>
#include <net/ip.h>
#include <net/net_namespace.h>

#include "../core/tcpfwd.h"

#define TCPFWD_ST_MSS		500
#define TCPFWD_ST_MAX_SEGS	8

struct tcpfwd_st_ctx {
	const unsigned int *verdicts;	/* per segment, in order */
	struct sk_buff *seg[TCPFWD_ST_MAX_SEGS];
	unsigned int n;			/* segments seen by the verdict */
};

static unsigned int tcpfwd_st_sent;	/* segments okfn was given */

static int tcpfwd_st_okfn(struct net *net, struct sock *sk,
			  struct sk_buff *skb)
{
	tcpfwd_st_sent++;
	kfree_skb(skb);
	return 0;
}

/* A TCP/IPv4 GSO packet of @segs segments of TCPFWD_ST_MSS bytes. */
static struct sk_buff *tcpfwd_st_gso_skb(unsigned int segs)
{
	unsigned int len = segs * TCPFWD_ST_MSS;
	struct sk_buff *skb;
	struct tcphdr *th;
	struct iphdr *iph;

	skb = alloc_skb(LL_MAX_HEADER + sizeof(*iph) + sizeof(*th) + len,
			GFP_KERNEL);
	if (!skb)
		return NULL;
	skb_reserve(skb, LL_MAX_HEADER);
	skb_reset_network_header(skb);
	iph = skb_put_zero(skb, sizeof(*iph));
	iph->version = 4;
	iph->ihl = 5;
	iph->ttl = 64;
	iph->protocol = IPPROTO_TCP;
	iph->saddr = htonl(0xc6120001);
	iph->daddr = htonl(0xc6130001);
	iph->tot_len = htons(sizeof(*iph) + sizeof(*th) + len);
	ip_send_check(iph);
	skb_set_transport_header(skb, sizeof(*iph));
	th = skb_put_zero(skb, sizeof(*th));
	th->source = htons(40000);
	th->dest = htons(80);
	th->seq = htonl(1);
	th->ack_seq = htonl(1);
	th->doff = sizeof(*th) / 4;
	th->ack = 1;
	th->window = htons(1000);
	skb_put_zero(skb, len);
	skb->protocol = htons(ETH_P_IP);
	skb->ip_summed = CHECKSUM_PARTIAL;
	skb->csum_start = skb_transport_header(skb) - skb->head;
	skb->csum_offset = offsetof(struct tcphdr, check);
	if (segs > 1) {
		skb_shinfo(skb)->gso_size = TCPFWD_ST_MSS;
		skb_shinfo(skb)->gso_type = SKB_GSO_TCPV4;
		skb_shinfo(skb)->gso_segs = segs;
	}
	return skb;
}

/* The verdict: keep a reference of the test's own, answer as told. */
static unsigned int tcpfwd_st_verdict(struct sk_buff *seg,
				      const struct nf_hook_state *state,
				      void *arg)
{
	struct tcpfwd_st_ctx *c = arg;

	if (c->n >= TCPFWD_ST_MAX_SEGS)
		return NF_DROP;
	c->seg[c->n] = skb_get(seg);
	return c->verdicts[c->n++];
}

/*
 * One GSO packet of @segs segments through tcpfwd_gso_each() with these
 * verdicts; checks what became of each.  Return: 0 if all is right.
 */
static int tcpfwd_st_gso_each(const char *name, unsigned int segs,
			      const unsigned int *verdicts)
{
	struct nf_hook_state state = {
		.net = &init_net,
		.okfn = tcpfwd_st_okfn,
	};
	struct tcpfwd_st_ctx c = { .verdicts = verdicts };
	unsigned int i, accepted = 0, users, want;
	struct sk_buff *skb;
	int ret, err = 0;

	skb = tcpfwd_st_gso_skb(segs);
	if (!skb)
		return -ENOMEM;
	skb_get(skb);
	tcpfwd_st_sent = 0;
	ret = tcpfwd_gso_each(skb, &state, tcpfwd_st_verdict, &c);
	if (segs < 2) {
		/* not GSO: untouched, an error, no verdict asked */
		if (ret >= 0 || c.n || refcount_read(&skb->users) != 2) {
			pr_err("%s: a packet that cannot be segmented: ret %d, %u verdicts, %u users (want < 0, 0, 2)\n",
			       name, ret, c.n, refcount_read(&skb->users));
			err = -EINVAL;
		}
		kfree_skb(skb);
		kfree_skb(skb);
		return err;
	}
	if (ret != NF_STOLEN || c.n != segs) {
		pr_err("%s: ret %d, %u segments (want NF_STOLEN, %u)\n", name,
		       ret, c.n, segs);
		err = -EINVAL;
	}
	/* the GSO packet consumed: only the test's reference is left */
	if (refcount_read(&skb->users) != 1) {
		pr_err("%s: the GSO packet has %u users after (want 1)\n",
		       name, refcount_read(&skb->users));
		err = -EINVAL;
	}
	kfree_skb(skb);
	for (i = 0; i < c.n; i++) {
		/* stolen: the verdict's and the test's; else the test's */
		want = c.verdicts[i] == NF_STOLEN ? 2 : 1;
		users = refcount_read(&c.seg[i]->users);
		if (users != want) {
			pr_err("%s: segment %u (verdict %u) has %u users after (want %u)\n",
			       name, i, c.verdicts[i], users, want);
			err = -EINVAL;
		}
		accepted += c.verdicts[i] == NF_ACCEPT;
		while (users--)
			kfree_skb(c.seg[i]);
	}
	if (tcpfwd_st_sent != accepted) {
		pr_err("%s: okfn got %u segments (want %u)\n", name,
		       tcpfwd_st_sent, accepted);
		err = -EINVAL;
	}
	return err;
}

/*
 * tcpfwd_net_init() refuses a user one of whose counters the core would
 * bump past the per-CPU array (-EINVAL, nothing made: no /proc/net entry)
 * and takes the same user with the counter in range.
 */
static int tcpfwd_st_net_init(void)
{
	static const char * const names[] = { "expired", "malformed" };
	struct tcpfwd_ops ops = {
		.name = "tcpfwd_selftest",
		.stat_names = names,
		.nr_stats = ARRAY_SIZE(names),
		.stat_expired = 0,
		.stat_malformed = 1,
		.stat_table_full = TCPFWD_NO_STAT,
		.stat_alloc_failed = TCPFWD_NO_STAT,
		.stat_gso_segmented = TCPFWD_NO_STAT,
		/* one past the last: out of range */
		.stat_gso_unsegmented = ARRAY_SIZE(names),
		.flow_size = sizeof(struct tcpfwd_flow),
	};
	struct tcpfwd_net *tn;
	int ret, err = 0;

	tn = kzalloc(sizeof(*tn), GFP_KERNEL);
	if (!tn)
		return -ENOMEM;
	ret = tcpfwd_net_init(tn, &init_net, &ops);
	if (ret != -EINVAL || tn->stats || tn->proc_dir) {
		pr_err("net_init, a counter out of range: ret %d (want %d), stats %s, proc %s\n",
		       ret, -EINVAL, tn->stats ? "made" : "none",
		       tn->proc_dir ? "made" : "none");
		err = -EINVAL;
		if (!ret)
			tcpfwd_net_exit(tn);
		goto out;
	}
	memset(tn, 0, sizeof(*tn));
	ops.stat_gso_unsegmented = TCPFWD_NO_STAT;
	ret = tcpfwd_net_init(tn, &init_net, &ops);
	if (ret) {
		pr_err("net_init, every counter in range: ret %d (want 0)\n",
		       ret);
		err = -EINVAL;
		goto out;
	}
	tcpfwd_net_exit(tn);
out:
	kfree(tn);
	return err;
}

static int __init tcpfwd_st_init(void)
{
	static const unsigned int mixed[] = { NF_ACCEPT, NF_STOLEN, NF_DROP,
					      NF_STOLEN };
	static const unsigned int stolen[] = { NF_STOLEN, NF_STOLEN,
					       NF_STOLEN };
	static const unsigned int accepted[] = { NF_ACCEPT, NF_ACCEPT };
	int failed = 0;

	failed += !!tcpfwd_st_gso_each("gso_each accept/stolen/drop", 4, mixed);
	failed += !!tcpfwd_st_gso_each("gso_each all stolen", 3, stolen);
	failed += !!tcpfwd_st_gso_each("gso_each all accepted", 2, accepted);
	failed += !!tcpfwd_st_gso_each("gso_each not GSO", 1, accepted);
	failed += !!tcpfwd_st_net_init();
	if (failed) {
		pr_err("%d of 5 checks FAILED\n", failed);
		return -EINVAL;
	}
	pr_info("all checks passed\n");
	return 0;
}

static void __exit tcpfwd_st_exit(void)
{
}

module_init(tcpfwd_st_init);
module_exit(tcpfwd_st_exit);
MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("ecnproxy self-test: tcpfwd's skb plumbing (gso_each verdicts) and net_init's refusal");
