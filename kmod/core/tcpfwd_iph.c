// SPDX-License-Identifier: GPL-2.0
/*
 * Pure IP header edits of tcpfwd.ko; see tcpfwd_iph.h.  Compiled into
 * tcpfwd.ko and into the unit tests (kmod/tests/unit/test_tcpfwd_iph.c).
 */
#include "tcpfwd_pure.h"
#include "tcpfwd_opt.h"
#include "tcpfwd_iph.h"

#define TCPFWD_IP4_TOT_LEN	2	/* offsets in the headers */
#define TCPFWD_IP4_CHECK	10
#define TCPFWD_IP6_PLEN		4

static unsigned int tcpfwd_ip_version(const u8 *nh)
{
	return nh[0] >> 4;
}

u32 tcpfwd_ip6_change_dsfield(u8 *nh, u8 mask, u8 value)
{
	u32 old_sum = tcpfwd_csum_bytes(nh, 0, 2), diff = 0;
	/* version(4) | traffic class(8) | flow label(20) */
	u8 tc = (u8)((nh[0] & 0x0f) << 4 | nh[1] >> 4);

	tc = (tc & mask) | value;
	nh[0] = (u8)((nh[0] & 0xf0) | tc >> 4);
	nh[1] = (u8)((nh[1] & 0x0f) | (tc & 0x0f) << 4);
	tcpfwd_csum_acc(&diff, old_sum, tcpfwd_csum_bytes(nh, 0, 2));
	return diff;
}

unsigned int tcpfwd_ip_len(const u8 *nh)
{
	switch (tcpfwd_ip_version(nh)) {
	case 4:
		return tcpfwd_get_be16(nh + TCPFWD_IP4_TOT_LEN);
	case 6:
		return tcpfwd_get_be16(nh + TCPFWD_IP6_PLEN);
	default:
		return 0;
	}
}
EXPORT_SYMBOL_GPL(tcpfwd_ip_len);

/* csum_replace_by_diff(): the checksum field at @check absorbs @diff. */
static void tcpfwd_check_replace(u8 *check, u32 diff)
{
	u32 sum;
	u16 c;

	memcpy(&c, check, sizeof(c));
	sum = tcpfwd_csum_add(diff, ~(u32)c);
	sum = (sum & 0xffff) + (sum >> 16);
	sum = (sum & 0xffff) + (sum >> 16);
	c = (u16)~sum;
	memcpy(check, &c, sizeof(c));
}

int tcpfwd_ip_resize(u8 *nh, int delta, u32 *csum_diff)
{
	long len = tcpfwd_ip_len(nh);
	unsigned int off = tcpfwd_ip_version(nh) == 4 ? TCPFWD_IP4_TOT_LEN :
							TCPFWD_IP6_PLEN;
	u32 old_sum, diff = 0;

	*csum_diff = 0;
	if (!len || len + delta < 1 || len + delta > 0xffff)
		return TCPFWD_OPT_EINVAL;
	old_sum = tcpfwd_csum_bytes(nh, off, 2);
	tcpfwd_put_be16(nh + off, (u16)(len + delta));
	tcpfwd_csum_acc(&diff, old_sum, tcpfwd_csum_bytes(nh, off, 2));
	if (off == TCPFWD_IP4_TOT_LEN)
		tcpfwd_check_replace(nh + TCPFWD_IP4_CHECK, diff);
	else
		*csum_diff = diff;
	return 0;
}
