/* SPDX-License-Identifier: GPL-2.0 */
/*
 * ecn_proxy beside conntrack on the same box (ecnp_ct.c): what the proxy
 * reads from, and the one bit it sets in, the conntrack entry a forwarded
 * packet already carries.  Without conntrack (not built, not loaded, or
 * not used in the packet's netns) every function is a no-op.
 */
#ifndef _ECNP_CT_H
#define _ECNP_CT_H

#include <linux/skbuff.h>

bool ecnp_ct_offloaded(const struct sk_buff *skb);
bool ecnp_ct_keep_slow(const struct sk_buff *skb);
unsigned long ecnp_ct_expires(const struct sk_buff *skb);

#endif /* _ECNP_CT_H */
