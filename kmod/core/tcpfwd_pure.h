/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The one kernel header of the pure (skb-free) code: FSM transitions,
 * option walking, seq/SACK mapping, the rule grammar.  Files that include
 * only this header (and each other) compile both into the kernel modules
 * and, unchanged, into the userspace unit tests under kmod/tests/unit/.
 */
#ifndef _TCPFWD_PURE_H
#define _TCPFWD_PURE_H

#ifdef __KERNEL__
#include <linux/export.h>
#include <linux/types.h>
#include <linux/kernel.h>
#include <linux/string.h>
#include <net/tcp.h>		/* before(), after() */
#else
#include "tcpfwd_user.h"	/* kmod/tests/unit/: the userspace shim */
#endif /* __KERNEL__ */

/*
 * The rules of the fast exit (tcpfwd.h, tcpfwd_fast_pass() and
 * tcpfwd_flow_refresh()), pure so that the unit tests check them.
 */

/* The TCP flags (tcp_flag_byte()) that always take the slow path. */
#define TCPFWD_SLOW_FLAGS	0x07	/* FIN, SYN, RST */

/* A segment with TCP flags @flags may take the fast exit of a fast flow. */
static inline bool tcpfwd_fast_flags_ok(u8 flags)
{
	return !(flags & TCPFWD_SLOW_FLAGS);
}

/*
 * A flow that lives @timeout jiffies after its latest segment, whose
 * stored expiry is @expires, must have it moved on at @now: the expiry
 * was set more than a quarter of @timeout ago (or has passed).  Jiffies
 * wrap: compared as time_before() does.
 */
static inline bool tcpfwd_refresh_due(unsigned long expires, unsigned long now,
				      unsigned long timeout)
{
	return (long)(expires - (now + timeout - timeout / 4)) < 0;
}

#endif /* _TCPFWD_PURE_H */
