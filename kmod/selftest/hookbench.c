// SPDX-License-Identifier: GPL-2.0
/*
 * hookbench: what forwarding one packet costs the node it crosses, timed
 * in the kernel, so that the cost of a netfilter hook (ecn_proxy, impair,
 * the in-tree targets that do the same jobs) can be read as a share of
 * the forwarding cost.
 *
 * A benchmark, not a test (test-only, never installed).  A TCG guest's
 * forwarding rate drifts by tens of percent between minutes
 * (results/bench-hook-20261126), far more than the 1 % the hook goals
 * are about; timing the packet path itself removes the senders, the
 * receivers and the scheduler from the measurement.
 *
 * At load time, in the network namespace of the process that loads it
 * (ip netns exec NODE insmod ...), the module plays one TCP connection
 * through the node's receive path, as pktgen's "netif_receive" mode does
 * for UDP: every packet is built as the Ethernet frame a neighbour would
 * send, handed to netif_receive_skb() on the device it would arrive on
 * (@cdev from the client @caddr, @sdev from the server @saddr, to
 * @naddr if the node masquerades the client as @naddr), and so
 * crosses PREROUTING, the route lookup, FORWARD, POSTROUTING and the
 * neighbour output up to the egress device's queue, where the caller's
 * tc filter drops it (so nothing leaves the node, and the caller counts
 * there that every packet was forwarded).  The connection is a handshake
 * (SYN with ECE and CWR if @cecn, SYN-ACK with ECE if @secn, ACK; left out
 * if !@handshake, so that the hooks meet a connection they never saw
 * open), 100
 * data segments of @payload bytes from the client (ECT(0) if @cecn) with
 * one ACK from the server per two, untimed, and then @packets more of the
 * same, timed in chunks of 1000: a chunk forwarded, then a chunk of the
 * same packets built and freed without being forwarded (base: what
 * building a packet costs), alternately.  The checksums are right and the
 * packets are marked CHECKSUM_UNNECESSARY, as from a NIC that checked
 * them.  One line goes to the kernel log:
 *
 *   hookbench: payload=P packets=N fwd_ns=F base_ns=B c2s=X s2c=Y rx_drop=D
 *
 * F - B: nanoseconds to forward one packet (data and ACKs mixed, 2 to 1);
 * X and Y: packets handed in from each side in all (handshake included),
 * which the caller's drop counters on the egress devices must match; D:
 * packets netif_receive_skb() reported dropped (the egress filter's drops
 * are among them).  The module then refuses to stay loaded (-EAGAIN), so
 * each measurement is one insmod.  vm-testbed/bench/hook-kernel-guest.sh runs
 * it under each configuration; scripts/bench-hook-kernel makes the table.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/etherdevice.h>
#include <linux/if_arp.h>
#include <linux/inet.h>
#include <linux/ip.h>
#include <linux/ktime.h>
#include <linux/module.h>
#include <linux/netdevice.h>
#include <linux/skbuff.h>
#include <linux/tcp.h>
#include <net/checksum.h>
#include <net/inet_ecn.h>
#include <net/ip.h>
#include <net/net_namespace.h>
#include <net/tcp.h>

#include "../core/tcpfwd_compat.h"

#define HOOKBENCH_CHUNK		1000
#define HOOKBENCH_WARMUP	100
#define HOOKBENCH_CLIENT_ISN	1000000u
#define HOOKBENCH_SERVER_ISN	5000000u
#define HOOKBENCH_SYN_OPTLEN	20	/* MSS, SACK_PERM, TS, NOP, WS */
#define HOOKBENCH_OPTLEN	12	/* NOP, NOP, TS */

static char *cdev = "eth0";
module_param(cdev, charp, 0444);
MODULE_PARM_DESC(cdev, "device the client's packets arrive on");

static char *sdev = "eth1";
module_param(sdev, charp, 0444);
MODULE_PARM_DESC(sdev, "device the server's packets arrive on");

static char *caddr;
module_param(caddr, charp, 0444);
MODULE_PARM_DESC(caddr, "client IPv4 address");

static char *saddr;
module_param(saddr, charp, 0444);
MODULE_PARM_DESC(saddr, "server IPv4 address");

static char *naddr;
module_param(naddr, charp, 0444);
MODULE_PARM_DESC(naddr, "the client's address as the server sees it, where the node masquerades (default: caddr)");

static unsigned int cport = 40000;
module_param(cport, uint, 0444);
MODULE_PARM_DESC(cport, "client port (1-65535; a new one per run)");

static unsigned int sport = 5201;
module_param(sport, uint, 0444);
MODULE_PARM_DESC(sport, "server port (1-65535)");

static unsigned int payload = 1448;
module_param(payload, uint, 0444);
MODULE_PARM_DESC(payload, "data bytes per segment (1-1448)");

static unsigned int packets = 20000;
module_param(packets, uint, 0444);
MODULE_PARM_DESC(packets, "timed packets (1000-10000000)");

static bool cecn;
module_param(cecn, bool, 0444);
MODULE_PARM_DESC(cecn, "the client asks for ECN and sends ECT(0) data");

static bool secn;
module_param(secn, bool, 0444);
MODULE_PARM_DESC(secn, "the server's SYN-ACK accepts ECN");

static bool handshake = true;
module_param(handshake, bool, 0444);
MODULE_PARM_DESC(handshake, "open with SYN, SYN-ACK, ACK (0: data only, a connection the hooks never saw open)");

static const u8 hookbench_mac[ETH_ALEN] = { 0x02, 0, 0, 0, 0, 0x01 };

struct hookbench_conn {
	struct net_device *dev[2];	/* arrival device: client, server */
	__be32 addr[2];
	__be32 nat_addr;		/* the client's, seen from the server */
	__be16 port[2];
	u32 seq[2];			/* next sequence number to send */
	u32 tsval;
	unsigned int sent[2];
	unsigned int rx_drop;
};

enum { HOOKBENCH_C2S, HOOKBENCH_S2C };

/*
 * One frame from side @from (HOOKBENCH_C2S: the client) with TCP @flags
 * and @len data bytes (zeros), as its neighbour would put it on the wire.
 */
static struct sk_buff *hookbench_build(struct hookbench_conn *c, int from,
				       u8 flags, unsigned int len)
{
	unsigned int optlen = (flags & TCPHDR_SYN) ? HOOKBENCH_SYN_OPTLEN :
						     HOOKBENCH_OPTLEN;
	unsigned int thlen = sizeof(struct tcphdr) + optlen;
	unsigned int iplen = sizeof(struct iphdr) + thlen + len;
	struct net_device *dev = c->dev[from];
	int to = !from;
	struct sk_buff *skb;
	struct tcphdr *th;
	struct iphdr *iph;
	struct ethhdr *eth;
	u8 *opt;

	skb = alloc_skb(NET_SKB_PAD + NET_IP_ALIGN + ETH_HLEN + iplen,
			GFP_KERNEL);
	if (!skb)
		return NULL;
	skb_reserve(skb, NET_SKB_PAD + NET_IP_ALIGN);
	eth = skb_put(skb, ETH_HLEN);
	ether_addr_copy(eth->h_dest, dev->dev_addr);
	ether_addr_copy(eth->h_source, hookbench_mac);
	eth->h_proto = htons(ETH_P_IP);

	iph = skb_put(skb, sizeof(*iph));
	iph->version = 4;
	iph->ihl = sizeof(*iph) / 4;
	iph->tos = (from == HOOKBENCH_C2S && cecn && len) ? INET_ECN_ECT_0 : 0;
	iph->tot_len = htons(iplen);
	iph->id = htons(c->sent[from]);
	iph->frag_off = htons(IP_DF);
	iph->ttl = 64;
	iph->protocol = IPPROTO_TCP;
	iph->saddr = c->addr[from];
	iph->daddr = from == HOOKBENCH_S2C ? c->nat_addr : c->addr[to];
	iph->check = 0;
	iph->check = ip_fast_csum(iph, iph->ihl);

	th = skb_put_zero(skb, thlen + len);
	th->source = c->port[from];
	th->dest = c->port[to];
	th->seq = htonl(c->seq[from]);
	th->ack_seq = (flags & TCPHDR_ACK) ? htonl(c->seq[to]) : 0;
	th->doff = thlen / 4;
	tcp_flag_byte(th) = flags;
	th->window = htons(65535);
	opt = (u8 *)(th + 1);
	if (flags & TCPHDR_SYN) {
		*opt++ = TCPOPT_MSS;
		*opt++ = TCPOLEN_MSS;
		put_unaligned_be16(1460, opt);
		opt += 2;
		*opt++ = TCPOPT_SACK_PERM;
		*opt++ = TCPOLEN_SACK_PERM;
	} else {
		*opt++ = TCPOPT_NOP;
		*opt++ = TCPOPT_NOP;
	}
	*opt++ = TCPOPT_TIMESTAMP;
	*opt++ = TCPOLEN_TIMESTAMP;
	put_unaligned_be32(c->tsval, opt);
	put_unaligned_be32((flags & TCPHDR_ACK) ? c->tsval : 0, opt + 4);
	opt += 8;
	if (flags & TCPHDR_SYN) {
		*opt++ = TCPOPT_NOP;
		*opt++ = TCPOPT_WINDOW;
		*opt++ = TCPOLEN_WINDOW;
		*opt = 7;
	}
	/* the data are zeros: they add nothing to the checksum */
	th->check = csum_tcpudp_magic(iph->saddr, iph->daddr, thlen + len,
				      IPPROTO_TCP, csum_partial(th, thlen, 0));
	return skb;
}

/* Hand @skb in on the device of side @from; count what was sent. */
static void hookbench_receive(struct hookbench_conn *c, int from,
			      struct sk_buff *skb, u32 seqlen)
{
	skb->protocol = eth_type_trans(skb, c->dev[from]);
	skb->ip_summed = CHECKSUM_UNNECESSARY;
	local_bh_disable();
	if (netif_receive_skb(skb) != NET_RX_SUCCESS)
		c->rx_drop++;
	local_bh_enable();
	c->seq[from] += seqlen;
	c->sent[from]++;
	c->tsval++;
}

/*
 * Packet @i of the data phase: a data segment from the client, or after
 * every second one an ACK from the server.  Forwarded if @fwd, else built
 * and freed (the connection does not advance).  Returns 0 or -ENOMEM.
 */
static int hookbench_step(struct hookbench_conn *c, unsigned int i, bool fwd)
{
	bool ack = i % 3 == 2;
	int from = ack ? HOOKBENCH_S2C : HOOKBENCH_C2S;
	unsigned int len = ack ? 0 : payload;
	struct sk_buff *skb;

	skb = hookbench_build(c, from, TCPHDR_ACK | (ack ? 0 : TCPHDR_PSH),
			      len);
	if (!skb)
		return -ENOMEM;
	if (fwd)
		hookbench_receive(c, from, skb, len);
	else
		kfree_skb(skb);
	return 0;
}

static int hookbench_handshake(struct hookbench_conn *c)
{
	static const u8 flags[3] = {
		TCPHDR_SYN, TCPHDR_SYN | TCPHDR_ACK, TCPHDR_ACK,
	};
	struct sk_buff *skb;
	int i, from;
	u8 f;

	if (!handshake) {
		/* as if the SYNs had gone by out of sight */
		c->seq[HOOKBENCH_C2S]++;
		c->seq[HOOKBENCH_S2C]++;
	}
	for (i = 0; i < 3 && handshake; i++) {
		from = i == 1 ? HOOKBENCH_S2C : HOOKBENCH_C2S;
		f = flags[i];
		if (i == 0 && cecn)
			f |= TCPHDR_ECE | TCPHDR_CWR;
		if (i == 1 && secn)
			f |= TCPHDR_ECE;
		skb = hookbench_build(c, from, f, 0);
		if (!skb)
			return -ENOMEM;
		hookbench_receive(c, from, skb, i < 2);
	}
	for (i = 0; i < HOOKBENCH_WARMUP * 3 / 2; i++)
		if (hookbench_step(c, i, true))
			return -ENOMEM;
	return 0;
}

/* Time @packets packets forwarded and as many built only, in chunks. */
static int hookbench_time(struct hookbench_conn *c, u64 *fwd_ns, u64 *base_ns)
{
	unsigned int done, j, i = 0;
	u64 t0;
	int pass;

	*fwd_ns = 0;
	*base_ns = 0;
	for (done = 0; done < packets; done += HOOKBENCH_CHUNK) {
		for (pass = 0; pass < 2; pass++) {
			t0 = ktime_get_ns();
			for (j = 0; j < HOOKBENCH_CHUNK; j++)
				if (hookbench_step(c, i + j, !pass))
					return -ENOMEM;
			if (pass)
				*base_ns += ktime_get_ns() - t0;
			else
				*fwd_ns += ktime_get_ns() - t0;
		}
		i += HOOKBENCH_CHUNK;
		cond_resched();
	}
	*fwd_ns = div_u64(*fwd_ns, done);
	*base_ns = div_u64(*base_ns, done);
	return 0;
}

static int hookbench_parse(struct hookbench_conn *c, struct net *net)
{
	const char *names[2] = { cdev, sdev };
	const char *addrs[2] = { caddr, saddr };
	int i;

	if (!caddr || !saddr || !cport || cport > 65535 || !sport ||
	    sport > 65535 || !payload || payload > 1448 ||
	    packets < HOOKBENCH_CHUNK || packets > 10000000) {
		pr_err("caddr and saddr are required; cport and sport must be 1-65535, payload 1-1448, packets 1000-10000000\n");
		return -EINVAL;
	}
	for (i = 0; i < 2; i++) {
		if (!in4_pton(addrs[i], -1, (u8 *)&c->addr[i], -1, NULL)) {
			pr_err("not an IPv4 address: %s\n", addrs[i]);
			return -EINVAL;
		}
		c->dev[i] = dev_get_by_name(net, names[i]);
		if (!c->dev[i]) {
			pr_err("no device %s in this network namespace\n",
			       names[i]);
			return -ENODEV;
		}
		if (c->dev[i]->type != ARPHRD_ETHER) {
			pr_err("%s is not an Ethernet device\n", names[i]);
			return -EINVAL;
		}
	}
	c->nat_addr = c->addr[HOOKBENCH_C2S];
	if (naddr && !in4_pton(naddr, -1, (u8 *)&c->nat_addr, -1, NULL)) {
		pr_err("not an IPv4 address: %s\n", naddr);
		return -EINVAL;
	}
	c->port[HOOKBENCH_C2S] = htons(cport);
	c->port[HOOKBENCH_S2C] = htons(sport);
	c->seq[HOOKBENCH_C2S] = HOOKBENCH_CLIENT_ISN;
	c->seq[HOOKBENCH_S2C] = HOOKBENCH_SERVER_ISN;
	c->tsval = 1;
	return 0;
}

static int __init hookbench_init(void)
{
	struct hookbench_conn c = {};
	u64 fwd_ns, base_ns;
	int err;

	err = hookbench_parse(&c, current->nsproxy->net_ns);
	if (!err)
		err = hookbench_handshake(&c);
	if (!err)
		err = hookbench_time(&c, &fwd_ns, &base_ns);
	if (!err) {
		pr_info("payload=%u packets=%u fwd_ns=%llu base_ns=%llu c2s=%u s2c=%u rx_drop=%u\n",
			payload, packets, fwd_ns, base_ns,
			c.sent[HOOKBENCH_C2S], c.sent[HOOKBENCH_S2C],
			c.rx_drop);
		/* measured: nothing to keep loaded */
		err = -EAGAIN;
	}
	dev_put(c.dev[0]);
	dev_put(c.dev[1]);
	return err;
}

module_init(hookbench_init);
MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("ecnproxy benchmark: forwarding cost per packet, timed in the kernel");
