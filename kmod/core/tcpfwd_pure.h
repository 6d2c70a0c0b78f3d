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

#endif /* _TCPFWD_PURE_H */
