/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What differs between the kernels the modules build on, in one place.
 *
 * The modules are written against the newest API (Linux 6.12); this header
 * maps it onto older kernels, as WireGuard's out-of-tree compat/ did.
 * Include it after every other kernel header: it may give a kernel
 * function's name to a macro.  Supported: 6.1 (mainline 6.1.y, Debian
 * 12's linux-image-6.1.0-*), 6.6 (OpenWrt; not built here) and 6.12
 * (Debian 12's linux-image-6.12.*+deb12, Debian 13).
 *
 * Each difference is detected by what the kernel's headers offer, never by
 * LINUX_VERSION_CODE: stable trees backport API changes (6.1.141 lacks
 * what 6.1.142 has) and distributions carry their own, so a version says
 * little, and the 6.6 answers need no 6.6 here.  Either
 *   - the preprocessor sees it (#ifdef of a function that became a
 *     macro), or
 *   - a test compile at build time, as Kbuild compiles a module file
 *     (Kbuild.compat, next to this file): TCPFWD_HAVE_<name>.
 * A wrong answer does not build (W=1 or not): each old-API path calls
 * or includes what the new kernels no longer have, and the other way
 * round.  The versions below are where mainline and the stable trees
 * changed, for the reader.
 *
 * Checked against 6.1 and 6.12 and unchanged, so not here: the conntrack
 * fields and bits ecnp_ct.c reads (IPS_NAT_CLASH_BIT, IPS_OFFLOAD_BIT,
 * nf_ct_get(), nf_ct_is_confirmed(), nf_ct_expires(); in both,
 * nft_flow_offload_eval() leaves an entry with IPS_NAT_CLASH out of the
 * flowtable), pde_data(), proc_create_net_single_write(), the rhashtable
 * walker, prandom_u32_state().  The modules use no timer_list (their only
 * timer is a delayed_work), so from_timer()/timer_container_of() and
 * del_timer_sync()/timer_delete_sync() need nothing.
 */
#ifndef _TCPFWD_COMPAT_H
#define _TCPFWD_COMPAT_H

#include <linux/random.h>
#include <linux/skbuff.h>
#include <linux/sysctl.h>
#include <net/checksum.h>
#include <net/net_namespace.h>

/* skb_gso_segment() and friends: <net/gso.h> since 6.5, <linux/netdevice.h> before */
#ifdef TCPFWD_HAVE_NET_GSO_H
#include <net/gso.h>
#endif

/* get_unaligned_be16() and friends: <linux/unaligned.h> since 6.12 */
#ifdef TCPFWD_HAVE_LINUX_UNALIGNED_H
#include <linux/unaligned.h>
#else
#include <asm/unaligned.h>
#endif

/*
 * inet_proto_csum_replace_by_diff() takes a fifth argument, ipv6, since
 * "bpf: Fix L4 csum update on IPv6 in CHECKSUM_COMPLETE" (mainline 6.16
 * cycle; stable 6.1.142, in Debian's 6.1.147-1 and later, and 6.12.35;
 * whether and from when 6.6.y has it is not checked here, and the test
 * need not know).  With ipv6 set, a pseudo-header change no longer
 * updates skb->csum of a CHECKSUM_COMPLETE skb (IPv6's addresses and the
 * L4 checksum cancel out in it).  On a kernel without it, this gives the
 * five-argument call the same meaning.
 */
#ifndef TCPFWD_HAVE_CSUM_BY_DIFF_IPV6
static inline void tcpfwd_csum_replace_by_diff(__sum16 *sum,
					       struct sk_buff *skb,
					       __wsum diff, bool pseudohdr,
					       bool ipv6)
{
	if (ipv6 && skb->ip_summed != CHECKSUM_PARTIAL)
		csum_replace_by_diff(sum, diff);
	else
		inet_proto_csum_replace_by_diff(sum, skb, diff, pseudohdr);
}

#define inet_proto_csum_replace_by_diff tcpfwd_csum_replace_by_diff
#endif

/*
 * sysctl proc handlers take a const struct ctl_table since 6.11
 * ("sysctl: treewide: constify the ctl_table argument of proc_handlers").
 * Write a handler's first parameter as
 * "tcpfwd_ctl_table_const struct ctl_table *" and treat it as const.
 */
#ifdef TCPFWD_HAVE_CONST_CTL_TABLE
#define tcpfwd_ctl_table_const const
#else
#define tcpfwd_ctl_table_const
#endif

/*
 * register_net_sysctl_sz(net, path, table, size) since 6.6: the size says
 * where the table ends, and register_net_sysctl() became a macro that
 * passes ARRAY_SIZE(table), so it no longer takes a pointer.  Before, the
 * table had to end with an empty entry: keep one in every table, beyond
 * the size.  Detected: register_net_sysctl is a macro.
 */
#ifndef register_net_sysctl
static inline struct ctl_table_header *
register_net_sysctl_sz(struct net *net, const char *path,
		       struct ctl_table *table, size_t table_size)
{
	return register_net_sysctl(net, path, table);
}
#endif

/* get_random_u32_below() since mainline 6.2 and stable 6.1.4 */
#ifndef TCPFWD_HAVE_GET_RANDOM_U32_BELOW
static inline u32 get_random_u32_below(u32 ceil)
{
	return prandom_u32_max(ceil);
}
#endif

#endif /* _TCPFWD_COMPAT_H */
