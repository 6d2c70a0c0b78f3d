/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Types and helpers shared by the pure (skb-free) parts of the ecnproxy
 * modules.  Files that include only this header compile both into the
 * kernel modules and into the userspace unit tests under kmod/tests/unit/.
 */
#ifndef _TCPMB_TYPES_H
#define _TCPMB_TYPES_H

#ifdef __KERNEL__
#include <linux/types.h>
#include <linux/kernel.h>
#include <linux/string.h>
#include <net/tcp.h>		/* before(), after() */
#else
#include "tcpmb_user.h"	/* kmod/tests/unit/: the userspace shim */
#endif /* __KERNEL__ */

#endif /* _TCPMB_TYPES_H */
