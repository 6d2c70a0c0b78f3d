/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Pure (skb-free) edits of IPv4/IPv6 header fields that tcpfwd.ko's users
 * change, with the checksum bookkeeping each needs (the wsum convention of
 * tcpfwd_opt.h).  @nh is the first byte of the IP header; the version is
 * read from it.
 *
 * Under CHECKSUM_COMPLETE skb->csum covers the IP header (at the FORWARD
 * hook skb->data is the network header).  An IPv4 edit also updates the
 * header checksum, so the header's sum, and skb->csum, stay the same; an
 * IPv6 header has no checksum, so the caller adds the returned difference
 * to skb->csum, as IP6_ECN_set_ce() (include/net/inet_ecn.h) does.
 */
#ifndef _TCPFWD_IPH_H
#define _TCPFWD_IPH_H

#include "tcpfwd_pure.h"

/*
 * IPv6: change the traffic class (DS field and ECN) as ipv6_change_dsfield()
 * does: keep the bits of @mask, or in @value.  Returns the sum difference of
 * the header bytes, for skb->csum.
 */
u32 tcpfwd_ip6_change_dsfield(u8 *nh, u8 mask, u8 value);

/*
 * The length field: IPv4 total length, IPv6 payload length; 0 for a
 * packet longer than 64 KiB, which has none (BIG TCP: an IPv6 jumbogram,
 * RFC 2675, or an IPv4 packet with total length 0), or for an unknown
 * version.
 */
unsigned int tcpfwd_ip_len(const u8 *nh);

/*
 * The packet grew by @delta bytes (shrank if @delta < 0): the length
 * field, and for IPv4 the header checksum, incrementally (a wrong one
 * stays wrong).  *csum_diff (not NULL) gets the sum difference for
 * skb->csum (0 for IPv4).  Returns 0, or TCPFWD_OPT_EINVAL with nothing
 * changed if tcpfwd_ip_len() is 0 (a BIG TCP packet has no length to
 * change) or the new length would not be in 1..65535.
 */
int tcpfwd_ip_resize(u8 *nh, int delta, u32 *csum_diff);

#endif /* _TCPFWD_IPH_H */
