/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Reference Internet checksum (RFC 1071, computed big-endian byte by byte,
 * independently of the code under test) over a TCP segment with an IPv4
 * pseudo-header, and the kernel's csum_replace_by_diff() on the result.
 * Shared by the unit tests; needs tcpfwd_opt.h (tcpfwd_put_be16, tcpfwd_csum_*).
 */
#ifndef _CSUM_REF_H
#define _CSUM_REF_H

static inline u32 ref_sum(const u8 *p, unsigned int len, u32 acc)
{
	unsigned int i;

	for (i = 0; i + 1 < len; i += 2)
		acc += ((u32)p[i] << 8) | p[i + 1];
	if (len & 1)
		acc += (u32)p[len - 1] << 8;
	return acc;
}

static inline u16 ref_fold(u32 acc)
{
	while (acc >> 16)
		acc = (acc & 0xffff) + (acc >> 16);
	return (u16)acc;
}

static inline u32 pseudo_sum(unsigned int seglen)
{
	static const u8 addrs[8] = { 198, 18, 0, 2, 198, 18, 2, 2 };

	return ref_sum(addrs, sizeof(addrs), 0) + 6 + seglen;
}

static inline void seg_csum_set(u8 *seg, unsigned int len)
{
	seg[16] = 0;
	seg[17] = 0;
	tcpfwd_put_be16(seg + 16,
		       (u16)~ref_fold(ref_sum(seg, len, pseudo_sum(len))));
}

static inline bool seg_csum_ok(const u8 *seg, unsigned int len)
{
	return ref_fold(ref_sum(seg, len, pseudo_sum(len))) == 0xffff;
}

/* csum_fold(): the complemented folded sum. */
static inline u16 tcpfwd_csum_fold(u32 sum)
{
	sum = (sum & 0xffff) + (sum >> 16);
	sum = (sum & 0xffff) + (sum >> 16);
	return (u16)~sum;
}

/* csum_replace_by_diff(&th->check, diff) */
static inline void kern_replace_by_diff(u8 *seg, u32 diff)
{
	u16 sum;

	memcpy(&sum, seg + 16, 2);
	sum = tcpfwd_csum_fold(tcpfwd_csum_add(diff, ~(u32)sum));
	memcpy(seg + 16, &sum, 2);
}

#endif /* _CSUM_REF_H */
